"""`bwt bench` and the training progress lines, at toy sizes (speed itself is never asserted)."""
import json

import pytest

from bwt_lite import bench
from bwt_lite.cli import main
from bwt_lite.presets import get_preset


def tiny(*args, **kw):
    return get_preset("bijection", "transformer", "lite", steps=8, batch_size=8, eval_every=4, eval_episodes=16,
                      warmup_steps=2)


def test_every_architecture_is_benchmarked_or_reported_skipped(monkeypatch):
    presets, skipped = bench.benchmark_presets(["bijection"], None, ["lite", "paper"])
    names = {p.name for p in presets}
    assert {"bijection-transformer-lite", "bijection-mlp-lite", "bijection-transformer-paper",
            "bijection-mlp-paper"} <= names
    for arch in bench.ARCHS:  # picked up from models.ARCHS: one row per scale, or a note that it has no preset
        for scale in ("lite", "paper"):
            assert (f"bijection-{arch}-{scale}" in names) != (f"bijection-{arch}-{scale}" in skipped)
    monkeypatch.setattr(bench, "ARCHS", bench.ARCHS + ("newarch",))  # an architecture without presets yet
    presets, skipped = bench.benchmark_presets(["bijection"], None, ["lite"])
    assert "bijection-newarch-lite" in skipped and "bijection-transformer-lite" in {p.name for p in presets}


def test_steps_per_second_row():
    row = bench.steps_per_second(tiny(), repeat=1, warmup=0)
    assert row["preset"] == "bijection-transformer-lite" and row["params"] == 405_120
    assert row["steps_per_s"] > 0 and row["ms_per_step"] == pytest.approx(1000 / row["steps_per_s"])
    assert row["full_run_s"] == pytest.approx(8 * row["ms_per_step"] / 1000)
    assert 0.5 < row["gflop_per_step"] / (6 * 405_120 * 8 * 37 / 1e9) < 1.5  # about 6 x params x tokens


def test_time_to_target_stops_at_the_first_evaluation_below_it(monkeypatch):
    monkeypatch.setattr(bench, "get_preset", tiny)
    reached = bench.train_to_target("lite", target_bits=100.0)
    assert reached["reached"] and reached["steps"] == 4 and reached["time_to_target_s"] > 0
    never = bench.train_to_target("lite", target_bits=0.0)
    assert not never["reached"] and never["steps"] == 8 and never["time_to_target_s"] is None
    assert bench.time_to_target([{"entropy_mae_bits": 0.5, "elapsed_s": 1.0},
                                 {"entropy_mae_bits": 0.1, "elapsed_s": 2.0}], 0.2) == 2.0


def test_bench_cli_json_and_table(capsys, monkeypatch):
    monkeypatch.setattr(bench, "hmm_naive_episodes_per_second", lambda: 1.0)
    assert main(["bench", "--scale", "lite", "--tunnels", "bijection", "--archs", "transformer", "mlp",
                 "--repeat", "1", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["device"] == "cpu" and out["precision"] == "fp32" and out["compile"] is False
    assert [r["preset"] for r in out["train_steps"]] == ["bijection-transformer-lite", "bijection-mlp-lite"]
    assert "bijection-mlp-lite: " in captured.err and "steps/s" in captured.err  # a line per preset as it is timed
    table = bench.format_table(out)
    assert "bijection-transformer-lite" in table and "steps/s" in table and "GFLOP/step" in table


def test_train_cli_prints_steps_per_second_and_time_left(capsys, isolated_cache):
    argv = ["train", "bijection", "transformer", "--steps", "4", "--no-progress", "--log-every", "0", "--amp", "off"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("bijection-transformer-lite: step")]
    assert lines and all("steps/s" in line and "left" in line for line in lines[1:])
    assert "steps/s)" in captured.out and "4 steps in" in captured.out


def test_uncountable_operations_give_no_flop_figure():
    if "lstm" not in bench.ARCHS:
        pytest.skip("no LSTM architecture")
    row = bench.steps_per_second(get_preset("bijection", "lstm", "lite", batch_size=8), repeat=1, warmup=0)
    assert row["gflop_per_step"] is None and row["tflop_per_s"] is None  # torch's fused LSTM has no FLOP count
    assert "n/a" in bench.format_table({"device_name": "cpu", "precision": "fp32", "compile": False, "torch": "x",
                                        "episodes_per_s": {}, "hmm_naive_python_filter_episodes_per_s": 1.0,
                                        "train_steps": [row], "skipped": []})
