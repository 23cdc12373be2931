"""The binding-capacity sweep (chapter 6): its presets, a tiny run end to end, the data file and the plot."""
import json
from dataclasses import replace

import matplotlib
import pytest

from bwt_lite import capacity
from bwt_lite.plotting import plot_capacity
from bwt_lite.tunnels import make_tunnel

matplotlib.use("Agg")


def test_sweep_presets_share_one_budget_and_differ_in_pairs_and_width():
    presets = capacity.sweep_presets()
    assert len(presets) == len(capacity.PAIRS) * len(capacity.ARCHS) * len(capacity.WIDTHS) >= 18
    assert len({p.key() for p in presets}) == len(presets)
    assert {(p.train.steps, p.train.batch_size, p.train.lr) for p in presets} == {
        (capacity.STEPS, capacity.BATCH, capacity.LR)}
    for p in presets:
        t = make_tunnel(**p.tunnel)
        assert t.variant == "mqar" and t.n_pairs in capacity.PAIRS and p.model.n_positions == t.seq_len + 1
    lstm, mamba = capacity.sweep_preset("lstm", 8, 32), capacity.sweep_preset("mamba", 8, 32)
    assert capacity.state_numbers(lstm) == 2 * 32 * 2 and capacity.state_numbers(mamba) == 2 * 32 * (16 + 3) * 2
    tr = capacity.sweep_preset("transformer", 8, 32)
    assert capacity.state_numbers(tr) == 2 * 32 * 2 * make_tunnel(**tr.tunnel).seq_len  # its key-value cache
    assert not tr.model.alibi and capacity.sweep_arch(tr) == "transformer"  # the learned table alone
    with_bias = capacity.sweep_preset("transformer+alibi", 8, 32)
    assert with_bias.model.alibi and capacity.sweep_arch(with_bias) == "transformer+alibi"
    assert replace(with_bias, model=replace(with_bias.model, alibi=False)) == tr  # ALiBi is the only difference
    with pytest.raises(ValueError, match="multiple of 16"):
        capacity.sweep_preset("lstm", 8, 40)
    with pytest.raises(ValueError, match="arch"):
        capacity.sweep_preset("mlp", 8, 32)


# Numbers carried from token to token by the lite bijection presets (37 tokens per episode): the
# transformer's key-value cache (2 x 128 x 2 layers x 37), the LSTM's states (2 x 128 x 3 layers),
# Mamba's state and convolution window (2 x 168 x 19 x 2 layers); the MLP mixes no positions, so none.
LITE_BIJECTION_STATE = {"transformer": 18_944, "mlp": 0, "lstm": 768, "mamba": 12_768}


def test_state_numbers_of_the_lite_bijection_presets():
    from bwt_lite.recipes import get_preset

    got = {a: capacity.state_numbers(get_preset("bijection", a, "lite")) for a in LITE_BIJECTION_STATE}
    assert got == LITE_BIJECTION_STATE


def test_every_architecture_counts_its_state_and_a_missing_count_fails_loudly(monkeypatch):
    from bwt_lite import models
    from bwt_lite.recipes import get_preset

    for arch, backbone in models.BACKBONES.items():
        assert callable(getattr(backbone, "state_numbers", None)), f"{arch}: add state_numbers(cfg, seq_len)"
    cfg = get_preset("bijection", "lstm", "lite").model
    monkeypatch.setitem(models.BACKBONES, "lstm", type("NoCount", (), {}))
    with pytest.raises(NotImplementedError, match="'lstm'.*state_numbers"):
        models.state_numbers(cfg, 37)


def test_a_tiny_sweep_runs_saves_loads_and_plots(tmp_path, monkeypatch):
    monkeypatch.setenv("BWT_CACHE_DIR", str(tmp_path / "cache"))
    rows = capacity.run_sweep(pairs=(2, 4), archs=("lstm",), widths=(16,), steps=2, episodes=8, log=lambda _: None)
    assert [(r["arch"], r["n_pairs"], r["d_model"]) for r in rows] == [("lstm", 2, 16), ("lstm", 4, 16)]
    assert all(0 <= r["accuracy"] <= 1 and r["episodes"] == 2 * capacity.BATCH for r in rows)
    assert all(r["curve"][-1][0] == r["episodes"] for r in rows)  # [episodes, accuracy] at each evaluation
    path = capacity.save_sweep(rows, tmp_path / "sweep.json", command="test")
    assert capacity.load_sweep(path)["rows"] == json.loads(json.dumps(rows))
    fig = plot_capacity(rows)
    assert fig.axes[0].get_xlabel() == "stored pairs"
    with pytest.raises(FileNotFoundError, match="capacity_sweep.py"):
        capacity.load_sweep(tmp_path / "missing.json")


def test_the_experiment_script_smoke_runs(tmp_path, monkeypatch):
    import importlib.util
    from pathlib import Path

    monkeypatch.setenv("BWT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(capacity, "PAIRS", (2,))
    monkeypatch.setattr(capacity, "ARCHS", ("lstm",))
    monkeypatch.setattr(capacity, "WIDTHS", (16,))
    monkeypatch.setattr(capacity.run_sweep, "__defaults__", ((2,), ("lstm",), (16,)))
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "experiments"))  # the scripts' _common
    spec = importlib.util.spec_from_file_location("capacity_sweep", Path(__file__).parents[1] / "experiments" / "capacity_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "out.json"
    assert mod.main(["--steps", "2", "--episodes", "8", "--out", str(out)]) == 0
    assert len(capacity.load_sweep(out)["rows"]) == 1
    assert mod.main(["--steps", "2", "--episodes", "8", "--out", str(out), "--archs", "lstm", "--append"]) == 0
    again = capacity.load_sweep(out)  # the same cell again: replaced, not added; both commands kept
    assert len(again["rows"]) == 1 and again["command"].count("capacity_sweep.py") == 2


def test_verdicts_and_summary_lines_follow_the_reader_without_binding():
    nb = {4: 0.34, 16: 0.2}
    rows = [{"arch": "lstm", "d_model": 64, "n_pairs": 4, "accuracy": 0.95, "episodes": 64_000},
            {"arch": "lstm", "d_model": 64, "n_pairs": 16, "accuracy": 0.22, "episodes": 256_000},
            {"arch": "mamba", "d_model": 64, "n_pairs": 16, "accuracy": 0.5, "episodes": 256_000}]
    assert [capacity.verdict(r, nb[r["n_pairs"]]) for r in rows] == ["binds", "no", "partly"]
    lines = capacity.summary_lines(rows, nb)
    assert lines[0] == ("lstm d=64: 4 pairs 95.0 %, 16 pairs 22.0 %; binds at 4 pairs; at or below the reader without "
                        "binding at 16 (episodes used: 64,000, 256,000)")
    assert lines[1].startswith("mamba d=64: 16 pairs 50.0 %; binds at no pair count")


def test_the_reader_without_binding_guesses_the_most_common_stored_value():
    acc = {n: capacity.no_binding_accuracy(n, episodes=512) for n in (1, 4, 16)}
    assert acc[1] == 1.0  # one stored pair: its value is the answer
    assert 1 / 16 < acc[16] < acc[4] < 1.0
