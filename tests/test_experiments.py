"""Every script in experiments/ runs: a smoke run of each (2 training steps, few held-out episodes)
into a temporary folder, and the README lists each script with its claim, time and output."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"
SCRIPTS = sorted(p.stem for p in EXPERIMENTS.glob("*.py") if not p.name.startswith("_"))


@pytest.fixture
def experiments(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    yield lambda name: importlib.import_module(name)
    for name in [*SCRIPTS, "_common"]:
        sys.modules.pop(name, None)


SMOKE = {
    "hmm_window_ladder": ["--episodes", "32"],
    "hmm_lr_sweep": ["--steps", "2", "--episodes", "16", "--lrs", "2e-3"],
    "seeds_table": ["--steps", "2", "--episodes", "16", "--seeds", "0", "1", "--tunnel", "bijection", "--arch", "mlp"],
    "capacity_sweep": [],
}


def test_every_script_has_a_smoke_run_and_a_readme_line():
    assert set(SCRIPTS) == set(SMOKE)
    readme = (EXPERIMENTS / "README.md").read_text()
    for name in SCRIPTS:
        assert f"`{name}.py`" in readme and f"results/{name}.json" in readme


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_smoke_run(name, experiments, tmp_path):
    out = tmp_path / f"{name}.json"
    assert experiments(name).main([*SMOKE[name], "--out", str(out), "--root", str(tmp_path / "checkpoints")]) == 0
    result = json.loads(out.read_text())
    assert result
    if name == "seeds_table":
        assert [r["seed"] for r in result["rows"]] == [0, 1] and all(r["train_steps"] == 2 for r in result["rows"])
