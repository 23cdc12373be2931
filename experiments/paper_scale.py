"""The paper-scale transformers (Paper I's sizes) trained on a GPU inside a fixed wall-clock budget.

Each cell (``--cells``: tunnels, the transformer at ``scale="paper"``) trains in its own process on the
one GPU, all at once. A short timed run measures each cell's steps per second while they all
run; a cell whose 50,000 paper steps do not fit the budget trains a shortened schedule instead (the
same warmup, the cosine over the steps that fit), and the result says how many steps it had. Every
model is scored on 2,048 held-out episodes and stored as a checkpoint folder under
``--root`` (its preset, with the steps it really trained, is the checkpoint's key), beside
``<tunnel>.json`` with the score, the learning curve, the device and the times; ``--out`` collects
those rows. ``experiments/paper_scale_claims.py`` then measures the scorecard's claims on them.

    python experiments/paper_scale.py --cells bijection hmm recall regression --budget-s 480 --device cuda \
        --root DIR

``--steps N`` trains N steps without the timed run (a smoke run: ``--steps 2 --device cpu``).
"""
from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import torch

from bwt_lite.checkpoints import checkpoint_dir
from bwt_lite.evaluate import evaluate
from bwt_lite.presets import get_preset
from bwt_lite.runtime.device import amp_dtype, device_name, precision_name, resolve_device
from bwt_lite.store.checkpoint import save_checkpoint
from bwt_lite.train import fit
from bwt_lite.tunnels import make_tunnel

from _common import RESULTS, parser, run_parallel, write

CALIBRATE = (30, 150)  # steps of the warm-up run (start-up, kernel selection) and of the timed run
EVAL_RESERVE_S = 40.0  # wall time kept back at the end for scoring and saving


def steps_per_s(preset, device, amp: str) -> float:
    """Training steps per second of ``preset`` on ``device`` now, timed after a warm-up run."""
    rate = 0.0
    for n in CALIBRATE:
        cfg = preset.with_train(steps=n, eval_every=n, eval_episodes=16, warmup_steps=0).train
        t0 = time.perf_counter()
        fit(preset.tunnel, preset.model, cfg, progress=False, device=device, amp=amp)
        rate = n / (time.perf_counter() - t0)
    return rate


def fitted_steps(full: int, rate: float, seconds: float) -> int:
    """The paper's ``full`` steps if they fit ``seconds`` at ``rate`` (with a 10 % margin), else what fits
    (rounded down to a thousand when that many fit)."""
    fits = max(int(rate * seconds * 0.9), 10)
    if fits >= full:
        return full
    return fits // 1000 * 1000 if fits >= 1000 else fits


def run_cell(tunnel: str, out: Path, deadline: float, device: str, amp: str, fixed: int | None = None,
             episodes: int = 2048) -> None:
    """Time, train and score one cell (``fixed`` steps: no timing); write ``out/<tunnel>.json`` (with an
    ``error`` field if it failed)."""
    row: dict = {"tunnel": tunnel, "arch": "transformer", "scale": "paper"}
    try:
        dev = resolve_device(device)
        torch.set_float32_matmul_precision("high")
        paper = get_preset(tunnel, "transformer", "paper")
        rate = steps_per_s(paper, dev, amp) if fixed is None else None
        left = deadline - time.time() - EVAL_RESERVE_S
        steps = fitted_steps(paper.train.steps, rate, left) if fixed is None else fixed
        warmup = min(paper.train.warmup_steps, steps // 5)
        preset = paper.with_train(steps=steps, warmup_steps=warmup, eval_every=min(500, steps))
        row.update(name=preset.name, paper_steps=paper.train.steps, steps=steps,
                   timed_steps_per_s=None if rate is None else round(rate, 2), budget_s=round(left, 1))
        speed = "" if rate is None else f"{rate:.1f} steps/s with the other cells running, "
        print(f"{tunnel}: {speed}{left:.0f} s left: training {steps} steps", flush=True)
        hard_stop = deadline - EVAL_RESERVE_S / 2
        t0 = time.perf_counter()
        model, state = fit(preset.tunnel, preset.model, preset.train, progress=False, device=dev, amp=amp,
                           log=lambda s: print(f"{tunnel}: {s}", flush=True), log_every_s=60.0,
                           stop=lambda r: time.time() > hard_stop)
        row["train_wall_s"] = round(time.perf_counter() - t0, 1)
        row["parameters"] = model.n_params
        row["trained_steps"] = state.step
        row["complete"] = state.step >= steps
        dtype = amp_dtype(amp, dev)
        trained_on = {"device": dev.type, "device_name": device_name(dev), "precision": precision_name(dtype),
                      "compile": False}
        row["trained_on"] = trained_on
        if not row["complete"]:  # stopped by the deadline: the checkpoint says so (the schedule ran to ``steps``)
            preset = preset.with_train(steps=state.step, decay_steps=steps)
        if state.step > preset.train.warmup_steps:
            directory = checkpoint_dir(preset, out)
            directory.mkdir(parents=True, exist_ok=True)
            meta = save_checkpoint(directory, preset, model, state, trained_on)
            row["checkpoint"] = directory.name
            row["train_time_s"] = meta["train_time_s"]
        res = evaluate(model, make_tunnel(**preset.tunnel), episodes=episodes, device=dev)
        curve = [{k: h[k] for k in ("step", "loss", "entropy_mae_bits", "kl_bits") if k in h} for h in state.history]
        row.update(entropy_mae_bits=res.entropy_mae_bits, kl_bits=res.kl_bits, accuracy=res.accuracy, history=curve)
    except Exception:  # a failed cell must not cost the others their results
        row["error"] = traceback.format_exc()
        print(row["error"], file=sys.stderr, flush=True)
    (out / f"{tunnel}.json").write_text(json.dumps(row, indent=1) + "\n")
    print(f"{tunnel}: done {json.dumps({k: v for k, v in row.items() if k != 'history'})}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "paper_scale.json")
    p.set_defaults(root=RESULTS / "paper_scale")
    p.add_argument("--cells", nargs="+", default=["bijection", "hmm"], help="tunnels (the paper transformer each)")
    p.add_argument("--budget-s", type=float, default=480.0, help="wall seconds from start to the last saved result")
    p.add_argument("--device", default="cuda")
    p.add_argument("--amp", default="auto", help="mixed precision (auto: bf16 where the GPU computes in it)")
    a = p.parse_args(argv)
    a.root.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + a.budget_s
    jobs = [(t, a.root, deadline, a.device, a.amp, a.steps, a.episodes) for t in a.cells]
    run_parallel(run_cell, jobs)
    rows = [json.loads((a.root / f"{t}.json").read_text()) for t in a.cells]
    write(a.out, {"budget_s": a.budget_s, "cells": rows})
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
