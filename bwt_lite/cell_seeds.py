"""The seed table of the primitives table: chosen cells trained from seeds 0-4 at one and at two threads.

``experiments/cell_seeds.py`` writes ``bwt_lite/data/cell_seeds.json``; chapter 6 renders it. A cell
realises its primitive across seeds when at least 4 of 5 seeds do (:data:`bwt_lite.reproduce.SEED_SHARE`),
each seed judged by the primitives table's rule (:func:`bwt_lite.reproduce.realises`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .paths import data_file
from .runtime.device import threads_label
from .verdicts import median_seed, realises, seed_verdict

CELL_SEEDS_FILE = data_file("cell_seeds.json")
RULE_THREADS = (1, 2)  # a verdict holds when it holds at each of these CPU thread counts


def load_cell_seeds(path: Path | str = CELL_SEEDS_FILE) -> dict[str, Any]:
    """The shipped seed table: ``{"episodes", "commands", "cells": [{"tunnel", "arch", "name", "threads", "steps",
    "batch_size", "train_episodes", "realises", "realised_seeds", "median_seed", "seeds": [{"seed",
    "entropy_mae_bits", "kl_bits", "accuracy", "realises", "train_time_s", "threads"}]}]}``
    (``episodes``: the held-out episodes each seed is scored on; ``name``: the recipe's preset name, which
    says the model's position scheme, e.g. ``recall-transformer-lite-alibi``)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run experiments/cell_seeds.py to create it")
    table = json.loads(path.read_text())
    return {**table, "cells": [judged(c) for c in table["cells"]]}


def judged(cell: dict[str, Any]) -> dict[str, Any]:
    """``cell`` with every seed judged again by the rule as it is now (:func:`bwt_lite.verdicts.realises`)
    against the exact baselines stored with it (``baselines``: scored on the same held-out episodes), so
    that a stricter rule never leaves a stale verdict in the file; unchanged when none are stored."""
    bases = cell.get("baselines")
    if not bases:
        return cell
    seeds = [dict(s, realises=bool(realises(cell["tunnel"], s, bases))) for s in cell["seeds"]]
    return {**cell, "seeds": seeds, "realised_seeds": sum(s["realises"] for s in seeds),
            "realises": bool(seed_verdict(s["realises"] for s in seeds)),
            "median_seed": median_seed(cell["tunnel"], seeds)["seed"]}


def merge_cells(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``old`` with each cell of ``new`` added, replacing the cell of the same preset name, threads,
    training episodes (a recipe's budget) and recipe change (``cell_seeds.py --change``)."""
    key = lambda c: (c["name"], c["threads"], c["train_episodes"], c.get("change", ""))  # noqa: E731
    merged = {key(c): c for c in old}
    merged.update({key(c): c for c in new})
    return list(merged.values())


def recipe_cells(name: str, train_episodes: int, path: Path | str = CELL_SEEDS_FILE) -> list[dict[str, Any]]:
    """The seed table's cells of one recipe (its preset ``name`` and training budget), one per thread count
    in increasing order; [] when that recipe's seeds were not trained (or the table is missing)."""
    if not Path(path).exists():
        return []
    cells = [c for c in load_cell_seeds(path)["cells"]
             if c["name"] == name and c["train_episodes"] == train_episodes and not c.get("change")]
    return sorted(cells, key=lambda c: c["threads"])


def seed_counts(cells: list[dict[str, Any]]) -> str:
    """"4 of 5 at 1 thread, 5 of 5 at 2 threads" for :func:`recipe_cells`, naming the thread counts of
    :data:`RULE_THREADS` not trained."""
    counts = ", ".join(f"{c['realised_seeds']} of {len(c['seeds'])} at {threads_label(c['threads'])}" for c in cells)
    missing = sorted(set(RULE_THREADS) - {c["threads"] for c in cells})
    return counts + "".join(f", not trained at {threads_label(n)}" for n in missing)


def adds_alibi(name: str) -> bool:
    """Does the preset named ``name`` add ALiBi's recency bias to its learned position table? (Its name
    carries ``-alibi`` after the scale, e.g. ``recall-transformer-lite-alibi``; ``-pos-alibi`` is the bias
    alone, without the table.)"""
    return re.search(r"(?<!-pos)-alibi(-|$)", name) is not None


def cell_label(cell: dict[str, Any], short: bool = False) -> str:
    """"recall transformer", with " + ALiBi" where the recipe adds ALiBi's recency bias to the position table,
    and the change from the recipe (``cell_seeds.py --change``, or an earlier recipe) in brackets; ``short``:
    only its kind ("[earlier recipe]" or "[candidate]", with the cell's short ``tag`` where it has one, e.g.
    "[earlier recipe: no curriculum]", so that two earlier recipes of one cell are told apart), for a
    table column."""
    label = f"{cell['tunnel']} {cell['arch']}" + (" + ALiBi" if adds_alibi(cell["name"]) else "")
    change = cell.get("change")
    if change and short:
        change = "earlier recipe" if change.startswith("earlier recipe") else "candidate"
        change += f": {cell['tag']}" if cell.get("tag") else ""
    return label + (f" [{change}]" if change else "")


def seed_grid(table: dict[str, Any], metric: str = "entropy_mae_bits") -> list[list[Any]]:
    """One row per cell, recipe and thread count: the cell and its thread count ("bijection lstm (2
    threads)"), its training episodes, each seed's ``metric`` marked ``*`` where that seed realises the
    primitive, and how many seeds realise it ("4 of 5"; the cell realises it at 4 of 5)."""
    rows = []
    order = lambda c: (c["tunnel"], c["arch"], c["train_episodes"], c["name"], c["threads"])  # noqa: E731
    for c in sorted(table["cells"], key=order):
        by_seed = {s["seed"]: s for s in c["seeds"]}
        marks = [f"{by_seed[s][metric]:.4f}{'*' if by_seed[s]['realises'] else ''}" if s in by_seed else "-"
                 for s in range(5)]
        threads = threads_label(c["threads"])
        rows.append([f"{cell_label(c, short=True)} ({threads})", c["train_episodes"], *marks,
                     f"{c['realised_seeds']} of {len(c['seeds'])}"])
    return rows


__all__ = ["CELL_SEEDS_FILE", "RULE_THREADS", "adds_alibi", "cell_label", "judged", "load_cell_seeds", "merge_cells", "recipe_cells",
           "seed_counts", "seed_grid", "threads_label"]
