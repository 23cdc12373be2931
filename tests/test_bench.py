"""`bwt bench` and the training progress lines, at toy sizes (speed itself is never asserted)."""
import json

import pytest
import torch

from bwt_lite.orchestration import bench
from bwt_lite.cli import main
from bwt_lite.recipes import get_preset


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
    row = bench.steps_per_second(tiny(), repeat=3, warmup=0, threads=1)
    assert row["preset"] == "bijection-transformer-lite" and row["params"] == 405_120 and row["threads"] == 1
    assert row["steps_per_s"] > 0 and row["ms_per_step"] == pytest.approx(1000 / row["steps_per_s"])
    assert row["ms"]["min"] <= row["ms"]["median"] == row["ms_per_step"] <= row["ms"]["max"]
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


FAKE_RATIOS = {name: {"ratio": 1.0, "goal": 1.0, "met": True, "ours_episodes_per_s": 2.0, "reference_episodes_per_s": 2.0,
                      "rows": []} for name in ("hmm_vs_per_instance", "bijection_vs_plain", "mamba_vs_transformer")}


def test_bench_cli_json_and_table(capsys, monkeypatch):
    monkeypatch.setattr(bench, "hmm_naive_episodes_per_second", lambda: 1.0)
    monkeypatch.setattr(bench, "cpu_ratios", lambda: FAKE_RATIOS)
    assert main(["bench", "--scale", "lite", "--tunnels", "bijection", "--archs", "transformer", "mlp",
                 "--repeat", "1", "--threads", "1", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["device"] == "cpu" and out["precision"] == "fp32" and out["compile"] is False and out["threads"] == [1]
    assert [r["preset"] for r in out["train_steps"]] == ["bijection-transformer-lite", "bijection-mlp-lite"]
    assert "bijection-mlp-lite, 1 thread(s): " in captured.err and "ms/step" in captured.err  # a line per preset
    table = bench.format_table(out)
    assert "bijection-transformer-lite" in table and "ms/step" in table and "GFLOP/step" in table
    assert "attention, bijection" in table and "last make book: " in table
    assert "HMM episodes vs a per-instance generator" in table and out["cpu_ratios"] == FAKE_RATIOS


def test_speed_goals_on_the_cpu_are_ratios_with_their_goals():
    from bwt_lite.orchestration.goals import GOALS, cpu_ratios, format_goals

    r = cpu_ratios(repeats=1, per_instance=2)
    assert r["threads"] == 1 and set(GOALS) <= set(r)
    for name, goal in GOALS.items():
        assert r[name]["goal"] == goal and r[name]["ratio"] > 0 and isinstance(r[name]["met"], bool)
    rows = r["mamba_vs_transformer"]["rows"]
    assert [row["tunnel"] for row in rows] == ["bijection", "hmm"]
    assert all(abs(row["mamba_params"] / row["transformer_params"] - 1) < 0.05 for row in rows)  # the same size
    lines = format_goals({"cpu_ratios": r})
    assert any("goal >= 300x" in line for line in lines) and any("goal <= 2x" in line for line in lines)


def test_the_per_instance_reference_makes_exact_hmm_episodes():
    from bwt_lite.orchestration.reference_samplers import hmm_per_instance
    from bwt_lite.tunnels.hmm import forward_filter

    (T, E, obs, post), = hmm_per_instance(1, seed=3)
    assert (abs(T.sum(1) - 1) < 1e-12).all() and (T >= 0.05 - 1e-12).all() and (E >= 0.05 - 1e-12).all()
    assert ((T * 100).round(9) % 1 == 0).all()  # hundredths
    exact = forward_filter(torch.tensor(T)[None], torch.tensor(E)[None], torch.tensor([obs]))[0]
    assert torch.allclose(torch.tensor(post), exact, atol=1e-12)


def test_last_build_times_look_in_the_checkout_by_default():
    from pathlib import Path

    root = Path(bench.__file__).resolve().parents[2]
    assert (root / "bwt_lite").is_dir()  # the checkout, not the package folder


def test_bench_json_shape(monkeypatch, tmp_path):
    """Every figure is min / median / max; thread counts, the variants and the last build times are
    there (at toy sizes: speed itself is never asserted)."""
    real = bench.benchmark_scan
    monkeypatch.setattr(bench, "benchmark_scan", lambda lengths, batch, d_inner, repeat: real(
        lengths, batch=2, d_inner=4, d_state=2, repeat=1))
    monkeypatch.setattr(bench, "hmm_naive_episodes_per_second", lambda: 1.0)
    monkeypatch.setattr(bench, "get_preset", lambda tunnel, arch, scale="lite": get_preset(
        tunnel, arch, scale, batch_size=4))
    real_times = bench.last_build_times
    monkeypatch.setattr(bench, "last_build_times", lambda: real_times([tmp_path]))
    monkeypatch.setattr(bench, "cpu_ratios", lambda: FAKE_RATIOS)
    (tmp_path / "_build" / "timings").mkdir(parents=True)
    (tmp_path / "_build" / "timings" / "test.json").write_text('{"seconds": 61, "exit_code": 0, "finished": "x"}')
    out = json.loads(json.dumps(bench.run(["lite"], ["bijection"], ["transformer", "mamba"], device="cpu",
                                          repeat=2, threads=[1, 2])))
    assert [(r["arch"], r["threads"]) for r in out["train_steps"]] == [
        ("transformer", 1), ("mamba", 1), ("transformer", 2), ("mamba", 2)]
    for r in out["train_steps"]:
        assert r["ms"]["min"] <= r["ms"]["median"] <= r["ms"]["max"] and r["batch_size"] == 4
    rate = out["episodes_per_s"]["bijection"]
    assert set(rate) >= {"min", "median", "max"} and rate["min"] <= rate["median"] <= rate["max"]
    (scan,) = out["scan_variants"]  # the lite Mamba's and the lite transformer's batch: both 4 here
    assert scan["tunnel"] == "bijection" and scan["length"] == 37 and scan["batch"] == 4
    assert all(f"{m}_ms_min" in scan for m in ("sequential", "parallel", "stepwise", "stepwise_states"))
    (attention,) = out["attention_variants"]
    assert attention["head_dim"] == 16 and set(attention["sdpa_ms"]) == {"min", "median", "max"}
    assert out["last_build"]["test"]["seconds"] == 61 and out["last_build"]["book"] == "unknown"
    assert "last make test: 1 min 01 s" in bench.format_table(out)


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
