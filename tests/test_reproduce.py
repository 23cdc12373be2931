"""The primitives table (`bwt reproduce`) and the capacity table, on tiny stand-in presets."""
import json
from dataclasses import replace

import pytest

from bwt_lite import checkpoints, reproduce
from bwt_lite.baselines import baseline_names
from bwt_lite.checkpoints import CheckpointError, load_checkpoint, train_and_save
from bwt_lite.cli import main
from bwt_lite.models import ARCHS
from bwt_lite.recipes import get_preset
from bwt_lite.tunnels import make_tunnel

KEYS = {"arch", "tunnel", "scale", "entropy_mae_bits", "kl_bits", "accuracy", "paper_value", "params"}


def tiny_preset(tunnel, arch, scale="lite", **overrides):
    """The real preset shrunk to 2 steps of a width-16, one-block model (wiring, not learning)."""
    p = get_preset(tunnel, arch, scale, **{"steps": 2, "batch_size": 4, "eval_every": 2, "eval_episodes": 8,
                                           "warmup_steps": 1, **overrides})
    return replace(p, model=replace(p.model, d_model=16, n_heads=2, n_layers=1))


@pytest.fixture
def tiny(monkeypatch):
    trained = []
    real = checkpoints.train_and_save

    def counting(preset, **kw):
        trained.append(preset.name)
        return real(preset, **kw)
    monkeypatch.setattr(reproduce, "get_preset", tiny_preset)
    monkeypatch.setattr(checkpoints, "train_and_save", counting)
    return trained


def test_capacity_table_counts_and_matching(capsys):
    rows = reproduce.capacity_table()
    assert len(rows) == len(ARCHS) * len(reproduce.PRIMITIVE_TUNNELS) * 2
    by = {(r["arch"], r["tunnel"], r["scale"]): r for r in rows}
    for tunnel in reproduce.PRIMITIVE_TUNNELS:
        for arch in ("lstm", "mamba"):  # lite sizes matched to the same tunnel's lite transformer
            assert abs(by[(arch, tunnel, "lite")]["ratio"] - 1) <= 0.10, (arch, tunnel)
        assert by[("transformer", tunnel, "lite")]["ratio"] == 1.0
    assert by[("lstm", "bijection", "paper")]["params"] == 1_793_856
    assert (by[("lstm", "bijection", "paper")]["d_model"], by[("lstm", "bijection", "paper")]["n_layers"]) == (192, 6)
    assert by[("mamba", "bijection", "paper")]["params"] == 2_784_000
    assert abs(by[("mamba", "bijection", "paper")]["ratio"] - 1) < 0.05
    assert all(r["matched"] for r in rows)
    text = reproduce.format_capacity_table(rows)
    assert "2,784,000" in text and "how matched" in text
    assert main(["reproduce", "--capacity", "--scale", "paper", "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [json.loads(line) for line in lines] == [r for r in rows if r["scale"] == "paper"]


def test_thresholds_and_the_papers_pattern():
    assert reproduce.realises("bijection", {"entropy_mae_bits": 0.05}) is True
    assert reproduce.realises("bijection", {"entropy_mae_bits": 1.107}) is False
    assert reproduce.realises("recall", {"accuracy": 0.95}) is True
    assert reproduce.realises("recall", {"accuracy": 0.5}) is False
    assert reproduce.realises("recall", {"accuracy": None}) is None
    assert reproduce.realises("bijection", {"entropy_mae_bits": 0.1}) is True  # the threshold itself passes
    with pytest.raises(ValueError, match="unknown tunnel 'sticky'"):
        reproduce.realises("sticky", {})
    assert reproduce.threshold_text("recall") == "accuracy >= 90%"
    assert reproduce.threshold_text("hmm") == "entropy MAE <= 0.2 bits"
    # the same thresholds on the published numbers give the paper's qualitative pattern
    paper = {(t, a): reproduce.realises(t, reproduce._paper_metrics(t, a))
             for t in ("bijection", "hmm", "recall") for a in ARCHS}
    assert [paper[(t, "transformer")] for t in ("bijection", "hmm", "recall")] == [True, True, True]
    assert [paper[(t, "lstm")] for t in ("bijection", "hmm", "recall")] == [True, False, False]
    assert [paper[(t, "mamba")] for t in ("bijection", "hmm", "recall")] == [True, True, True]
    assert [paper[(t, "mlp")] for t in ("bijection", "hmm")] == [False, False]
    assert paper[("recall", "mlp")] is None  # no published number


def test_reproduce_rows_train_missing_then_load(tiny):
    everything = reproduce.reproduce("lite", episodes=16, download=False, log=lambda _: None)
    rows = [r for r in everything if r["kind"] == "model"]
    assert len(rows) == len(ARCHS) * len(reproduce.PRIMITIVE_TUNNELS) and len(tiny) == len(rows)  # every cell trained once (nothing cached)
    assert {(r["arch"], r["tunnel"]) for r in rows} == {(a, t) for a in ARCHS for t in reproduce.PRIMITIVE_TUNNELS}
    bases = {t: {r["arch"]: r for r in everything if r["kind"] == "baseline" and r["tunnel"] == t}
             for t in reproduce.PRIMITIVE_TUNNELS}
    for t in reproduce.PRIMITIVE_TUNNELS:  # each tunnel's models, then its baselines
        names = baseline_names(make_tunnel(**reproduce.cell_preset(t, "mlp").tunnel), reproduce.MAX_WINDOW.get(t, 4))
        assert [r["arch"] for r in everything if r["tunnel"] == t] == list(ARCHS) + names
    assert list(bases["hmm"]) == [f"window-{w}" for w in range(reproduce.MAX_WINDOW["hmm"] + 1)]
    assert list(bases["hmm-slow"]) == [f"window-{w}" for w in range(reproduce.MAX_WINDOW["hmm-slow"] + 1)]
    assert reproduce.cell_preset("hmm-slow", "mlp").tunnel["variant"] == "slow"
    assert make_tunnel(**reproduce.cell_preset("hmm-slow", "mlp").tunnel).K == 30
    for r in rows:
        assert KEYS <= set(r) and r["scale"] == "lite" and r["train_steps"] == 2
        assert r["episodes"] == 2 * 4 and r["train_time_s"] > 0  # steps x batch of the tiny preset
        assert r["realises"] == reproduce.realises(r["tunnel"], r, bases[r["tunnel"]])
        assert r["realises"] == (r["passes_threshold"] and r["beats_baselines"])
        assert r["compared_with"] and set(r["compared_with"]) <= set(bases[r["tunnel"]])
        assert r["primitive"] == reproduce.PRIMITIVES[r["tunnel"]]
        assert (r["accuracy"] is None) == (r["tunnel"] == "regression")
        assert r["params"] == reproduce._count(reproduce.cell_preset(r["tunnel"], r["arch"]))
        n = len(make_tunnel(**reproduce.cell_preset(r["tunnel"], r["arch"]).tunnel).positions)
        assert {"h_model", "h_bayes", "entropy_mae"} <= set(r["per_position"])
        assert len(r["per_position"]["entropy_mae"]) == n
        assert abs(sum(r["per_position"]["entropy_mae"]) / n - r["entropy_mae_bits"]) < 1e-6
    paper = {(r["tunnel"], r["arch"]): r["paper_value"] for r in rows}
    assert paper[("bijection", "mlp")] == 1.85 and paper[("recall", "mamba")] == 97.8 and paper[("recall", "mlp")] is None
    again = reproduce.reproduce("lite", episodes=16, download=False, archs=["mamba"], tunnels=["hmm"],
                                log=lambda _: None)
    assert len(tiny) == len(rows) and again[0]["entropy_mae_bits"] == next(
        r["entropy_mae_bits"] for r in rows if (r["arch"], r["tunnel"]) == ("mamba", "hmm"))  # loaded, same model
    reproduce.reproduce("lite", retrain=True, episodes=16, download=False, archs=["lstm"], tunnels=["recall"],
                        log=lambda _: None)
    assert tiny[-1] == "recall-lstm-lite" and len(tiny) == len(rows) + 1
    table = reproduce.format_primitives_table(everything)
    assert "realised when: bijection entropy MAE <= 0.1 bits" in table and "recall accuracy >= 90%" in table
    assert "each <= the cell's margin x the strongest exact baseline" in table and "bijection: 0.5 x " in table
    ladder = ", ".join(f"window-{w}" for w in range(reproduce.MAX_WINDOW["hmm"] + 1))
    assert f"hmm: 1 x best of {ladder}" in table and "equivalent window" in table
    hmm_rows = [r for r in everything if r["tunnel"].startswith("hmm")]
    assert all("equivalent_window" in r for r in hmm_rows)  # models and windows alike
    assert all(r["equivalent_window"] == float(r["arch"].removeprefix("window-")) for r in hmm_rows
               if r["kind"] == "baseline")
    for arch in ARCHS:
        assert f"  {arch:<12} ours:" in table
    assert table.count("  exact baseline") == sum(len(b) for b in bases.values())
    assert reproduce.format_primitives_table(rows).count("exact baseline") == 1  # the legend only
    only = reproduce.reproduce("lite", episodes=16, download=False, archs=["mlp"], tunnels=["bijection"],
                               baseline_rows=False, log=lambda _: None)
    assert [r["arch"] for r in only] == ["mlp"] and only[0]["compared_with"] == ["prior"]


def test_cli_reproduce_json_and_table(tiny, capsys):
    assert main(["reproduce", "--json", "--episodes", "8", "--no-download", "--no-progress", "--device", "cpu"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rows = [json.loads(line) for line in lines]
    assert all(KEYS <= set(r) for r in rows)
    models = [r for r in rows if r["kind"] == "model"]
    base = {(r["tunnel"], r["arch"]): r for r in rows if r["kind"] == "baseline"}
    assert len(models) == len(ARCHS) * len(reproduce.PRIMITIVE_TUNNELS)
    assert {a for _, a in base} == {"reader-no-binding", "prior", "one-pair", "right-entropy"} | {
        f"window-{w}" for w in range(reproduce.MAX_WINDOW["hmm-slow"] + 1)}
    # bijection, hmm (windows 0-8), hmm-slow (0-18), recall, regression, recurrence (prior, windows 1-4)
    assert len(base) == 2 + (reproduce.MAX_WINDOW["hmm"] + 1) + (reproduce.MAX_WINDOW["hmm-slow"] + 1) + 2 + 2 + 5
    for r in base.values():
        assert r["params"] == 0 and r["episodes"] == 0 and r["realises"] is None and r["paper_value"] is None
        assert len(r["per_position"]["entropy_mae"]) == len(next(
            m for m in models if m["tunnel"] == r["tunnel"])["per_position"]["entropy_mae"])
    assert base[("bijection", "right-entropy")]["entropy_mae_bits"] < 1e-9
    for m in models:
        assert m["episodes"] == 8 and m["baseline_bars"]
    assert main(["reproduce", "--episodes", "8", "--no-download", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "transport" in out and "binding" in out and "realised when" in out
    assert "exact baseline" in out and "reader-no-binding" in out and "window-2" in out


def test_loading_into_the_wrong_architecture_or_scale_is_refused():
    lstm = tiny_preset("bijection", "lstm")
    _, meta = train_and_save(lstm, progress=False, log=lambda _: None)
    folder = checkpoints.checkpoint_dir(lstm)
    for other in (tiny_preset("bijection", "mamba"), replace(lstm, scale="paper")):
        with pytest.raises(CheckpointError, match="belongs to another configuration") as e:
            load_checkpoint(folder, other)
        assert "arch 'lstm'" in str(e.value) and other.name in str(e.value)


def test_seeds_median_and_the_four_of_five_rule(tiny):
    assert reproduce.seed_verdict([True, True, True, True, False]) is True
    assert reproduce.seed_verdict([True, True, True, False, False]) is False
    assert reproduce.seed_verdict([None, None]) is None and reproduce.seed_verdict([True]) is True
    rows = [{"seed": s, "entropy_mae_bits": v} for s, v in enumerate([0.3, 0.1, 0.5, 0.2, 0.4])]
    assert reproduce.median_seed("hmm", rows)["seed"] == 0  # 0.3 is the middle of five
    acc = [{"seed": s, "accuracy": v, "entropy_mae_bits": 0.1} for s, v in enumerate([0.9, 0.99, 0.5])]
    assert reproduce.median_seed("recall", acc)["seed"] == 0
    ties = [{"seed": s, "accuracy": 1.0, "entropy_mae_bits": v} for s, v in enumerate([0.3, 0.1, 0.5, 0.2, 0.4])]
    assert reproduce.median_seed("recall", ties)["seed"] == 0  # five at 100 %: the middle one by entropy MAE
    assert reproduce.cell_preset("bijection", "mlp", seed=3).train.seed == 3
    recipe = reproduce.cell_preset("bijection", "mlp")  # None: the recipe's seed; an explicit 0 is seed 0
    assert reproduce.cell_preset("bijection", "mlp", seed=0).train.seed == 0
    assert reproduce.cell_preset("bijection", "mlp", seed=recipe.train.seed).key() == recipe.key()
    out = reproduce.reproduce("lite", episodes=8, download=False, archs=["mlp"], tunnels=["regression"],
                              train_seeds=[0, 1, 2], baseline_rows=False, log=lambda _: None)
    (row,) = out
    assert [s["seed"] for s in row["seeds"]] == [0, 1, 2] and len(tiny) == 3  # one training per seed
    assert row["seed"] == reproduce.median_seed("regression", row["seeds"])["seed"]
    assert row["entropy_mae_bits"] == next(s["entropy_mae_bits"] for s in row["seeds"] if s["seed"] == row["seed"])
    assert row["realised_seeds"] == sum(bool(s["realises"]) for s in row["seeds"])
    assert "seeds; median seed" in reproduce.format_primitives_table(out)
    with pytest.raises(ValueError, match="train_seeds"):
        reproduce.reproduce("lite", train_seeds=[], log=lambda _: None)


def test_a_shipped_run_is_judged_by_its_recipes_seeds(tmp_path, monkeypatch):
    from functools import partial

    from bwt_lite.cell_seeds import recipe_cells, seed_counts

    preset = reproduce.cell_preset("hmm-slow", "transformer")
    budget = preset.train.steps * preset.train.batch_size

    def cell(threads, realised, episodes=budget):
        seeds = [{"seed": s, "realises": s < realised} for s in range(5)]
        return {"name": preset.name, "threads": threads, "train_episodes": episodes, "realised_seeds": realised,
                "realises": realised >= 4, "seeds": seeds}

    path = tmp_path / "cell_seeds.json"
    path.write_text(json.dumps({"cells": [cell(2, 4), cell(1, 3), cell(1, 0, episodes=budget // 2)]}))
    cells = recipe_cells(preset.name, budget, path)
    assert [c["threads"] for c in cells] == [1, 2]  # this budget only, by thread count
    assert seed_counts(cells) == "3 of 5 at 1 thread, 4 of 5 at 2 threads"
    assert seed_counts(cells[1:]) == "4 of 5 at 2 threads, not trained at 1 thread"
    assert recipe_cells(preset.name, budget, tmp_path / "missing.json") == []
    monkeypatch.setattr(reproduce, "recipe_cells", partial(recipe_cells, path=path))
    row = {"realises": True, "why_not": ""}
    judged = reproduce._with_seed_record(row, preset)
    assert judged["realises"] is False and row["realises"] is True  # a copy: the run's own verdict is kept
    assert "3 of 5 at 1 thread, 4 of 5 at 2 threads, short of 4 of 5" in judged["why_not"]
    path.write_text(json.dumps({"cells": [cell(1, 4), cell(2, 5)]}))
    held = reproduce._with_seed_record(row, preset)
    assert held["realises"] is True and held["seed_record"] == "4 of 5 at 1 thread, 5 of 5 at 2 threads"
    assert reproduce._with_seed_record(row, preset.with_train(steps=10)) is row  # no seeds of that recipe
