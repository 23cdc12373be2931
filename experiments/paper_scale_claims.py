"""The scorecard's paper-scale rows: the claims measured on the paper-size transformers trained by
``experiments/paper_scale.py`` (on a GPU), written to ``bwt_lite/data/paper_scale.json``.

    python experiments/paper_scale_claims.py --checkpoints DIR --runs bwt_lite/data/paper_scale_runs.json \\
        --train-command "..."

Runs on a CPU (one thread: about 3 min for four models). ``DIR`` holds one checkpoint folder per tunnel
(the median seed that ``paper_scale.py --pack`` chose). ``--runs`` (the windows' records) adds every
seed's score and the GPU figures of each model's run; rows whose tunnels have no checkpoint in ``DIR``
are carried over from the record being replaced (``--earlier``, default: the shipped one), marked so.
``--train-command`` records how the checkpoints were trained.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from bwt_lite.claims import FAST, FULL
from bwt_lite.claims.paper_scale import PAPER_SCALE_FILE, load_paper_scale, measure

from _common import write


def attach_runs(result: dict[str, Any], windows: dict[str, Any]) -> None:
    """Each model (measured now, or earlier for carried rows) gets the scores of every seed of its preset
    trained as far on the same schedule, and the GPU figures of its own run (steps/s, TFLOP/s, MFU, wall
    time, the runs beside it)."""
    runs = [r for w in windows["windows"] for r in w.get("runs", []) if r.get("complete") and "entropy_mae_bits" in r]
    together = {r["key"]: sum(1 for o in w.get("runs", []) if o.get("steps_this_window")) for w in windows["windows"]
                for r in w.get("runs", [])}
    for model in result["models"] + result.get("earlier_models", []):
        same = [r for r in runs if r["name"] == model["name"] and r["schedule_steps"] == model["schedule_steps"]
                and r["steps"] == model["steps"]]
        if not same:  # an earlier, shorter run that no window's record holds: its own record stays
            continue
        model["seeds"] = [{k: r[k] for k in ("seed", "entropy_mae_bits", "kl_bits", "accuracy")}
                          for r in sorted(same, key=lambda r: r["seed"])]
        mine = [r for r in same if r["key"] == model["key"]]
        if mine:
            r = mine[0]
            model["gpu"] = {k: r.get(k) for k in ("steps_per_s", "tflops", "mfu", "wall_s", "graph")}
            model["gpu"]["device"] = r["trained_on"]["device_name"]
            model["gpu"]["runs_together"] = together.get(r["key"], 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoints", type=Path, required=True, help="folder of the paper-scale checkpoint folders")
    p.add_argument("--train-command", required=True, help="the command that trained them (recorded)")
    p.add_argument("--runs", type=Path, default=None, help="the GPU windows' records (paper_scale_runs.json)")
    p.add_argument("--earlier", type=Path, default=PAPER_SCALE_FILE,
                   help="the record whose rows are carried over where a tunnel has no checkpoint here")
    p.add_argument("--out", type=Path, default=PAPER_SCALE_FILE)
    p.add_argument("--fast", action="store_true", help="the scorecard's tiny test budget (a smoke run)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    earlier = load_paper_scale(a.earlier) if a.earlier.exists() else None
    t0 = time.perf_counter()
    result = measure(a.checkpoints, budget=FAST if a.fast else FULL, log=print, earlier=earlier)
    if a.runs is not None:
        attach_runs(result, json.loads(a.runs.read_text()))
    result["seconds"] = round(time.perf_counter() - t0, 1)
    result["commands"] = [a.train_command, "python experiments/paper_scale_claims.py --checkpoints DIR "
                          f"--runs {a.runs.name if a.runs else '-'} --out {a.out.name}"]
    if earlier is not None and result.get("earlier_models"):  # the commands of every earlier window rows come from
        before = (earlier.get("earlier_commands") or []) + (earlier.get("commands") or [])
        result["earlier_commands"] = list(dict.fromkeys(before))
    write(a.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
