"""The HMM window ladder beside the models (chapters 3, 6 and 10; its figure:
:func:`bwt_lite.plotting.plot_window_ladder`).

A window filter of w symbols (:func:`bwt_lite.baselines.window_filter`) is the exact belief from
the last w observations only: it reads locally and carries nothing forward. Its error falls as w
grows; where a model's error sits on that ladder says how far back it effectively reads. A model
that carries its belief across the episode (transport) beats every short window.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Sequence

from .paths import data_file
from .verdicts import MAX_WINDOW, equivalent_window, look_back_text, realises

# Seeds x peak learning rates of the lite transformer on the slow-mixing HMM, scored beside the ladder
# (written by experiments/hmm_lr_sweep.py --variant slow; rendered in chapter 6)
SLOW_SEEDS_FILE = data_file("hmm_slow_seeds.json")
# The lite default-HMM Mamba's recipe with one change per run (learning rate, warm-up, seed, width), scored
# beside the ladder (written by experiments/hmm_mamba_sweep.py; rendered in chapter 10)
MAMBA_SWEEP_FILE = data_file("hmm_mamba_sweep.json")
# The lite HMM transformer's recipe with each position scheme, trained at K = 20 and scored per position
# to K = 50 beside the windows past the training length (written by experiments/hmm_positions.py; chapter 3)
POSITIONS_FILE = data_file("hmm_positions.json")
METRIC_LABELS = {"entropy_mae_bits": "entropy MAE (bits)", "kl_bits": "KL (bits)"}


def ladder(rows: Sequence[dict[str, Any]], tunnel: str) -> tuple[list[int], dict[str, list[float]]]:
    """The windows of ``tunnel`` among :func:`bwt_lite.reproduce.reproduce` rows: (w values, metric -> values)."""
    windows = sorted((int(r["arch"].removeprefix("window-")), r) for r in rows
                     if r["tunnel"] == tunnel and r.get("kind") == "baseline" and r["arch"].startswith("window-"))
    if not windows:
        raise ValueError(f"no window baselines for tunnel {tunnel!r} among the rows")
    return [w for w, _ in windows], {m: [r[m] for _, r in windows] for m in METRIC_LABELS}


def window_equivalent(value: float, ws: Sequence[int], values: Sequence[float]) -> str:
    """Where ``value`` sits on the ladder: ``"between window-3 and window-4"``, ``"below window-8"``..."""
    if value >= values[0]:
        return f"above window-{ws[0]}"
    for (w0, v0), (w1, v1) in zip(zip(ws, values), zip(ws[1:], values[1:])):
        if v1 <= value < v0:
            return f"between window-{w0} and window-{w1}"
    return f"below window-{ws[-1]}"


def load_slow_seeds(path: Path | str = SLOW_SEEDS_FILE) -> dict[str, Any]:
    """The shipped seed sweep on the slow-mixing HMM: ``{"variant", "recipe", "episodes", "commands",
    "windows": {"window-w": {metric: value}}, "runs": [{"lr", "seed", "entropy_mae_bits", "kl_bits",
    "realises", "history": [{"step", "entropy_mae_bits"}], ...}]}``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run experiments/hmm_lr_sweep.py --variant slow to create it")
    sweep = json.loads(path.read_text())
    cell = "hmm-slow" if sweep.get("variant") == "slow" else "hmm"
    # each run judged by the rule as it is now, against the windows stored beside the runs
    sweep["runs"] = [dict(r, realises=bool(realises(cell, r, sweep["windows"]))) for r in sweep["runs"]]
    return sweep


def load_mamba_sweep(path: Path | str = MAMBA_SWEEP_FILE) -> dict[str, Any]:
    """The shipped sweep of the lite default-HMM Mamba: ``{"recipe", "model", "episodes", "commands",
    "windows": {"window-w": {metric: value}}, "runs": [{"change", "d_model", "n_layers", "params", "lr", "warmup_steps",
    "seed", "batch_size", "state_numbers", "entropy_mae_bits", "kl_bits", "train_time_s",
    "history": [{"step", "entropy_mae_bits"}], ...}]}`` (``change``: what differs from the recipe, or
    ``"recipe"``)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run experiments/hmm_mamba_sweep.py to create it")
    return json.loads(path.read_text())


def load_position_runs(path: Path | str = POSITIONS_FILE) -> dict[str, Any]:
    """The shipped runs of the lite HMM transformer by position scheme: ``{"recipe", "trained_length",
    "lengths", "episodes", "margin", "commands", "windows_past": {K: {"window-w": {metric: value}}},
    "runs": [{"scheme", "alibi", "seed", "warmup_steps", "shipped", "train_time_s", "per_length": {K: {"in_range",
    "past", "all": {metric: value}, "past_over_in_range", "transports", "per_position"}}}, ...]}``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run experiments/hmm_positions.py to create it")
    return json.loads(path.read_text())


def position_rows(runs: dict[str, Any], K: int) -> list[dict[str, Any]]:
    """One row per run of :func:`load_position_runs` at length ``K``: ``positions`` (the scheme, "+ ALiBi"
    when the learned table has the bias), ``seed``, ``warmup_steps``, entropy MAE ``before`` and ``past``
    the training length, their ``ratio``, ``kl_past``, ``transports`` (within the margin of the best
    window past it, entropy MAE and KL) and the ``per_position`` entropy MAE; ordered by scheme (the learned
    table first), then warm-up and seed."""
    if str(K) not in runs["windows_past"]:
        raise ValueError(f"K = {K} is not past the training length among the scored lengths {runs['lengths']}")
    rows = []
    for r in runs["runs"]:
        at = r["per_length"][str(K)]
        rows.append({"positions": r["scheme"] + (" + ALiBi" if r["alibi"] else ""), "seed": r["seed"],
                     "warmup_steps": r["warmup_steps"], "shipped": r["shipped"],
                     "before": at["in_range"]["entropy_mae_bits"], "past": at["past"]["entropy_mae_bits"],
                     "ratio": at["past_over_in_range"], "kl_past": at["past"]["kl_bits"],
                     "transports": at["transports"], "per_position": at["per_position"]["entropy_mae"]})
    order = ["learned", "learned + ALiBi", "sinusoidal", "rotary", "alibi", "none"]
    return sorted(rows, key=lambda r: (order.index(r["positions"]) if r["positions"] in order else len(order),
                                       r["warmup_steps"], r["seed"]))


def windows_of(sweep: dict[str, Any], metric: str = "entropy_mae_bits") -> tuple[list[int], list[float]]:
    """The window ladder stored in a seed sweep: (w values, ``metric`` values)."""
    ws = sorted(int(name.removeprefix("window-")) for name in sweep["windows"])
    return ws, [sweep["windows"][f"window-{w}"][metric] for w in ws]


LADDER_METRICS = ("entropy_mae_bits", "kl_bits", "accuracy")


@functools.lru_cache(maxsize=8)
def _ladder(cell: str, tunnel_args: tuple[tuple[str, Any], ...], episodes: int) -> tuple[tuple[str, tuple[float, ...]], ...]:
    from .baselines import evaluate_baselines
    from .tunnels import make_tunnel

    results = evaluate_baselines(make_tunnel(**dict(tunnel_args)), episodes=episodes, seed=0, max_window=MAX_WINDOW[cell])
    return tuple((name, tuple(getattr(r, m) for m in LADDER_METRICS)) for name, r in results.items())


def extended_ladder(cell: str, tunnel_args: dict[str, Any], stored: dict[str, Any], episodes: int) -> dict[str, Any]:
    """``stored`` (a record's windows, name -> metrics) with the windows of ``cell``'s card it lacks, computed on
    the record's held-out episodes (seed 0, ``episodes`` of the tunnel ``tunnel_args``; windows need no model),
    each with the metrics the record keeps. The windows it stores must come out the same to 1e-9 bits, else the
    record was scored on other episodes and a ValueError says so."""
    ladder = {name: dict(zip(LADDER_METRICS, v)) for name, v in _ladder(cell, tuple(sorted(tunnel_args.items())), episodes)}
    for name, metrics in stored.items():
        if name in ladder and abs(ladder[name]["entropy_mae_bits"] - metrics["entropy_mae_bits"]) > 1e-9:
            raise ValueError(f"the recorded {cell} {name} ({metrics['entropy_mae_bits']:.9g} bits) is not what "
                             f"{episodes} held-out episodes of seed 0 give ({ladder[name]['entropy_mae_bits']:.9g}): "
                             "the record was scored on other episodes, so its ladder cannot be extended")
    keys = next(iter(stored.values())).keys() if stored else LADDER_METRICS
    return {**{name: {k: m[k] for k in keys} for name, m in ladder.items() if name.startswith("window-")}, **stored}


def missing_windows(cell: str, stored: dict[str, Any]) -> list[str]:
    """The windows of ``cell``'s card ladder that ``stored`` lacks."""
    return [f"window-{w}" for w in range(MAX_WINDOW[cell] + 1) if f"window-{w}" not in stored]


# equivalent_window and look_back_text are the rule's (bwt_lite.verdicts), importable from here with the ladder
__all__ = ["LADDER_METRICS", "METRIC_LABELS", "equivalent_window", "extended_ladder", "missing_windows", "ladder", "load_mamba_sweep", "load_position_runs", "load_slow_seeds",
           "look_back_text", "position_rows", "window_equivalent", "windows_of"]
