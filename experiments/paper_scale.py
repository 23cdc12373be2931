"""The paper-scale transformers (Paper I's sizes) on the paper's full schedule, several seeds, in one GPU window.

One process trains every run on the fast path (:mod:`bwt_lite.fast_train`: each step one replayed
CUDA graph, each run on its own stream, ``--max-active`` runs side by side). In order:

1. **The plan**: the runs (``--cells`` x ``--seeds``, seed-major, so every cell gets its first seed
   before any gets a second), each with its model FLOPs and its estimated time at ``--assumed-tflops``,
   and which of them fit ``--budget-s``; printed before anything trains.
2. **The check**: for each cell, a few steps of the fast path (graph included) against the eager
   trainer (:func:`bwt_lite.train.train_step`) on the same batches, on this device.
3. **Before and after** (``--compare-steps N``, 0 to skip): each cell alone for N steps on the eager
   trainer and on the fast path: steps/s, TFLOP/s and the model FLOPs utilisation (MFU) of both.
4. **The runs**: a run is started only when its estimated time (at the throughput measured so far)
   fits what is left of the budget. A finished run is saved as a checkpoint folder under ``--root``
   and scored on ``--episodes`` held-out episodes; every ``--state-every-s`` seconds, and when the
   budget ends, each unfinished run saves a resume state there, and the same command with the same
   ``--root`` continues it (finished runs are loaded, not retrained).
5. **The record**: ``--out`` (JSON) holds every run (steps, wall time, steps/s, TFLOP/s, MFU, scores,
   learning curve) and the window's totals; with ``--pack DIR`` the median seed of each cell is copied
   there as a tar (split into parts of at most 15 MiB) for ``experiments/paper_scale_claims.py``.

    python experiments/paper_scale.py --cells bijection hmm recall regression --seeds 0 1 2 \\
        --budget-s 480 --root DIR --pack OUT
    python experiments/paper_scale.py --cells recurrence recurrence-opaque recurrence-h5 recurrence-h3 \\
        --seeds 0 --budget-s 480 --root DIR --pack OUT   # chapter 13's tunnel at the authors' 6 x 192

``--steps N`` shortens every run to N steps (a smoke run: ``--steps 16 --device cpu``).
"""
from __future__ import annotations

import io
import math
import re
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import torch

from bwt_lite.fast_train import (FastRun, check_against_eager, eager_and_fast, final_scores, peak_tflops,
                                 train_flops_per_step, train_together)
from bwt_lite.models import POSITIONS
from bwt_lite.recipes import Preset, get_preset
from bwt_lite.runtime.device import device_name, resolve_device
from bwt_lite.store.cache import RESUME, checkpoint_dir
from bwt_lite.evaluate import evaluate
from bwt_lite.store.checkpoint import load_checkpoint, save_checkpoint
from bwt_lite.store.resume import load_train_state, save_train_state
from bwt_lite.train import init_model
from bwt_lite.tunnels import make_tunnel

from _common import RESULTS, write

PART_BYTES = 15 * 1024 ** 2  # files that come back from a lent GPU machine must stay under 16 MiB each
EVAL_RESERVE_S = 30.0  # kept back at the end of the budget for the last scores, the record and the pack


def cell_preset(cell: str, seed: int) -> Preset:
    """The paper-scale transformer of a cell: a tunnel name, then optional ``-`` parts: a variant, ``hK`` (a
    loss horizon K), ``LN`` (trained on N values), a position scheme; e.g. ``recurrence-opaque``,
    ``recurrence-h5``, ``recurrence-L8-sinusoidal``."""
    tunnel, *parts = cell.split("-")
    kwargs: dict[str, Any] = {}
    for part in parts:
        if re.fullmatch(r"h\d+", part):
            kwargs["horizon"] = int(part[1:])
        elif re.fullmatch(r"L\d+", part):
            kwargs["length"] = int(part[1:])
        elif part in POSITIONS:
            kwargs["positions"] = part
        else:
            kwargs["variant"] = part
    return get_preset(tunnel, "transformer", "paper", seed=seed, **kwargs)


def cell_of(p: Preset) -> str:
    """The cell a run belongs to, read off its name: ``hmm``, ``recurrence-opaque``, ``recurrence-h5`` ..."""
    return p.name.split("-transformer-")[0]


def presets(cells: list[str], seeds: list[int], steps: int | None, batch_size: int | None = None) -> list[Preset]:
    """The runs, seed-major: every cell's first seed before any cell's second (``steps`` and ``batch_size``
    shorten them for a smoke run)."""
    runs = []
    for seed in seeds:
        for cell in cells:
            p = cell_preset(cell, seed)
            if steps is not None:
                p = p.with_train(steps=steps, warmup_steps=min(p.train.warmup_steps, max(steps // 5, 1)))
            if batch_size is not None:
                p = p.with_train(batch_size=batch_size)
            runs.append(p)
    return runs


def model_flops(p: Preset) -> float:
    n = sum(t.numel() for t in init_model(p.model, 0).parameters())
    return train_flops_per_step(p, n)


def plan(runs: list[Preset], budget_s: float, tflops: float, log) -> None:
    """Print what each run costs at ``tflops`` and which fit ``budget_s`` in this order."""
    log(f"plan: {len(runs)} runs, budget {budget_s:.0f} s, assuming {tflops:.0f} TFLOP/s for all runs together")
    total = 0.0
    for p in runs:
        f = model_flops(p) * p.train.steps
        total += f
        fits = total / (tflops * 1e12) <= budget_s - EVAL_RESERVE_S
        log(f"  {p.name} seed {p.train.seed}: {p.train.steps:,} steps x {p.train.batch_size}, "
            f"{f / 1e15:.1f} PFLOP, about {f / (tflops * 1e12):.0f} s alone; "
            f"{'fits' if fits else 'does not fit'} (cumulative {total / (tflops * 1e12):.0f} s)")


class Window:
    """The runs of one call: builds, admits, saves and records them."""

    def __init__(self, args: Any, runs: list[Preset], device: torch.device, deadline: float, log):
        self.a, self.runs, self.device, self.deadline, self.log = args, runs, device, deadline, log
        self.flops = {p.name: model_flops(p) for p in runs}
        self.peak = peak_tflops(device_name(device)) if device.type == "cuda" else None
        self.rows: dict[str, dict[str, Any]] = {}
        self.started: dict[str, tuple[float, int]] = {}
        self.t0 = time.time()
        self.done_flops = 0.0
        self.active: list[FastRun] = []

    def key(self, p: Preset) -> str:
        return f"{p.name}#{p.train.seed}"

    def folder(self, p: Preset) -> Path:
        return checkpoint_dir(p, self.a.root)

    def throughput(self) -> float:
        """Model FLOP/s of all runs together so far (the assumption until a run has stepped)."""
        done = self.done_flops + sum(r.step_count * self.flops[r.preset.name] for r in self.active) \
            - sum(self.started[self.key(r.preset)][1] * self.flops[r.preset.name] for r in self.active)
        elapsed = time.time() - self.t0
        if done <= 0 or elapsed < 20:
            return self.a.assumed_tflops * 1e12
        return done / elapsed

    def admit(self, index: int) -> bool:
        """Start run ``index`` now? Not if it was trained in an earlier window (then it is recorded), nor if,
        at the throughput measured so far, it would not finish (after the active runs) within the budget."""
        p = self.runs[index]
        if self.key(p) in self.rows:
            return False
        if (self.folder(p) / "checkpoint.json").exists():
            model, meta = load_checkpoint(self.folder(p), p, device=self.device)
            res = evaluate(model, make_tunnel(**p.tunnel), episodes=self.a.episodes, device=self.device)
            self.rows[self.key(p)] = self.row(p, meta=meta, earlier=True)
            self.rows[self.key(p)].update(entropy_mae_bits=res.entropy_mae_bits, kl_bits=res.kl_bits,
                                          accuracy=res.accuracy, history=meta["history"])
            self.log(f"{self.key(p)}: trained in an earlier window ({self.folder(p).name}), entropy MAE "
                     f"{res.entropy_mae_bits:.4f} bits")
            return False
        left = sum((r.cfg.steps - r.step_count) * self.flops[r.preset.name] for r in self.active)
        need = (p.train.steps * self.flops[p.name] + left) / self.throughput()
        return time.time() + need <= self.deadline - EVAL_RESERVE_S

    def build(self, index: int) -> FastRun:
        p = self.runs[index]
        folder = self.folder(p)
        resume = load_train_state(folder, p) if (folder / RESUME).exists() else None
        if resume is not None:
            self.log(f"{self.key(p)}: resuming at step {resume.step:,}")
        run = FastRun(p, self.device, amp=self.a.amp, chunk=self.a.chunk, resume=resume)
        self.started[self.key(p)] = (time.perf_counter(), run.step_count)
        self.active.append(run)
        return run

    def save_state(self, run: FastRun) -> None:
        folder = self.folder(run.preset)
        folder.mkdir(parents=True, exist_ok=True)
        save_train_state(folder, run.state(), run.preset)

    def finish(self, run: FastRun) -> None:
        """Save the finished run, score it and free its memory."""
        p = run.preset
        self.active.remove(run)
        folder = self.folder(p)
        folder.mkdir(parents=True, exist_ok=True)
        meta = save_checkpoint(folder, p, run.scored, run.state(), run.trained_on())
        for old in (folder / RESUME).glob("*"):
            old.unlink()
        scores = final_scores(run, self.a.episodes)
        self.record(run, meta=meta, scores=scores)
        self.log(f"{self.key(p)}: done, entropy MAE {scores['entropy_mae_bits']:.4f} bits, KL {scores['kl_bits']:.4f}")
        run.graph, run.batches = None, None
        torch.cuda.empty_cache() if self.device.type == "cuda" else None

    def record(self, run: FastRun, meta: dict | None = None, scores: dict | None = None) -> None:
        t_start, step0 = self.started[self.key(run.preset)]
        wall = time.perf_counter() - t_start
        steps = run.step_count - step0
        self.done_flops += steps * self.flops[run.preset.name]
        row = self.row(run.preset, meta=meta)
        rate = steps / wall if wall > 0 else 0.0
        tflops = rate * self.flops[run.preset.name] / 1e12
        row.update(steps=run.step_count, complete=run.step_count >= run.cfg.steps, wall_s=round(wall, 1),
                   steps_this_window=steps, steps_per_s=round(rate, 2), tflops=round(tflops, 2),
                   mfu=None if self.peak is None else round(tflops / self.peak, 4), graph=run.graph is not None,
                   graph_error=run.graph_error, trained_on=run.trained_on(),
                   history=[{k: h[k] for k in ("step", "loss", "entropy_mae_bits", "kl_bits") if k in h}
                            for h in run.history])
        if scores is not None:
            row.update(scores)
        self.rows[self.key(run.preset)] = row

    def row(self, p: Preset, meta: dict | None = None, earlier: bool = False, skipped: bool = False) -> dict:
        row: dict[str, Any] = {"tunnel": p.tunnel["tunnel"], "cell": cell_of(p), "seed": p.train.seed, "name": p.name,
                               "key": p.key()[:16], "schedule_steps": p.train.steps,
                               "flops_per_step": self.flops[p.name]}
        if meta is not None:
            row.update(checkpoint=self.folder(p).name, parameters=meta["params"], train_time_s=meta["train_time_s"])
        if earlier:
            row.update(earlier_window=True, steps=meta["train_steps"], complete=True)
        if skipped:
            row.update(skipped="did not fit the budget", steps=0, complete=False)
        return row


def pack(rows: list[dict], root: Path, dest: Path, log) -> dict[str, Any]:
    """The median seed (by entropy MAE; of two, the worse) of each cell's finished runs, tarred into ``dest``
    in parts of at most :data:`PART_BYTES`."""
    dest.mkdir(parents=True, exist_ok=True)
    chosen = {}
    for tunnel in sorted({r.get("cell", r["tunnel"]) for r in rows}):  # a cell: a tunnel, or a variant of one
        done = sorted((r for r in rows if r.get("cell", r["tunnel"]) == tunnel and r.get("complete")
                       and "entropy_mae_bits" in r),
                      key=lambda r: r["entropy_mae_bits"])
        if not done:
            continue
        median = done[len(done) // 2]
        chosen[tunnel] = {"seed": median["seed"], "checkpoint": median["checkpoint"]}
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            folder = root / median["checkpoint"]
            for f in ("checkpoint.json", "model.safetensors"):
                tar.add(folder / f, arcname=f"{median['checkpoint']}/{f}")
        data = buf.getvalue()
        parts = math.ceil(len(data) / PART_BYTES)
        for i in range(parts):
            (dest / f"{tunnel}.tar.{i}").write_bytes(data[i * PART_BYTES:(i + 1) * PART_BYTES])
        log(f"packed {tunnel} seed {median['seed']} ({len(data) / 1e6:.1f} MB, {parts} part(s))")
    return chosen


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", nargs="+", default=["bijection", "hmm", "recall", "regression"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--budget-s", type=float, default=480.0, help="wall seconds from start to the last saved result")
    p.add_argument("--device", default="cuda")
    p.add_argument("--amp", default="auto", help="mixed precision (auto: bf16 where the GPU computes in it)")
    p.add_argument("--max-active", type=int, default=4, help="runs trained side by side")
    p.add_argument("--chunk", type=int, default=8, help="batches drawn per sampler call")
    p.add_argument("--eval-every", type=int, default=2500, help="steps between evaluations of a run")
    p.add_argument("--state-every-s", type=float, default=180.0, help="seconds between resume states")
    p.add_argument("--assumed-tflops", type=float, default=150.0, help="throughput assumed before any is measured")
    p.add_argument("--compare-steps", type=int, default=0, help="eager vs fast path, each cell alone (0: skip)")
    p.add_argument("--no-check", action="store_true", help="skip the fast-path check against the eager trainer")
    p.add_argument("--steps", type=int, default=None, help="shorten every run (a smoke run)")
    p.add_argument("--batch-size", type=int, default=None, help="smaller batches (a smoke run on a CPU)")
    p.add_argument("--episodes", type=int, default=2048, help="held-out episodes of the final score")
    p.add_argument("--root", type=Path, default=RESULTS / "paper_scale")
    p.add_argument("--out", type=Path, default=RESULTS / "paper_scale_runs.json")
    p.add_argument("--pack", type=Path, default=None, help="copy each cell's median seed here as tar parts")
    a = p.parse_args(argv)
    t_start = time.time()
    deadline = t_start + a.budget_s

    def log(line: str) -> None:
        print(f"[{time.time() - t_start:6.1f} s] {line}", flush=True)

    device = resolve_device(a.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    name = device_name(device)
    log(f"device {name}, torch {torch.__version__}, bf16 peak {peak_tflops(name)} TFLOP/s")
    runs = presets(a.cells, a.seeds, a.steps, a.batch_size)
    plan(runs, a.budget_s, a.assumed_tflops, log)
    result: dict[str, Any] = {"device": name, "torch": torch.__version__, "budget_s": a.budget_s,
                              "command": " ".join(["python", "experiments/paper_scale.py", *(argv or sys.argv[1:])]),
                              "checks": {}, "compare": {}}
    cells = [r for r in runs if r.train.seed == a.seeds[0]]
    if not a.no_check:
        for c in cells:
            chk = check_against_eager(c.with_train(steps=max(c.train.steps, 8)), device, steps=4, amp=a.amp)
            result["checks"][cell_of(c)] = {k: v for k, v in chk.items()}
            log(f"check {c.name}: graph {chk['graph']} ({chk['graph_error']}), losses differ by "
                f"{chk['loss_rel_diff']:.2e} (relative), weights by {chk['weight_abs_diff']:.2e} after 4 steps")
    if a.compare_steps:
        for c in cells:
            r = eager_and_fast(c, device, a.compare_steps, amp=a.amp, chunk=a.chunk)
            result["compare"][cell_of(c)] = r
            log(f"alone {c.name}: eager {r['eager_steps_per_s']:.1f} steps/s ({r['eager_tflops']:.1f} TFLOP/s), "
                f"fast {r['fast_steps_per_s']:.1f} steps/s ({r['fast_tflops']:.1f} TFLOP/s, MFU {r['fast_mfu']}), "
                f"graph {r['graph']}")
            torch.cuda.empty_cache() if device.type == "cuda" else None
    window = Window(a, runs, device, deadline, log)
    window.t0 = time.time()
    a.root.mkdir(parents=True, exist_ok=True)
    finished, stopped = train_together(
        [lambda i=i: window.build(i) for i in range(len(runs))], max_active=a.max_active, admit=window.admit,
        deadline=deadline - EVAL_RESERVE_S, eval_every=a.eval_every, on_state=window.save_state,
        state_every_s=a.state_every_s, on_done=window.finish, log=log)
    for run in stopped:
        window.record(run)
        log(f"{window.key(run.preset)}: stopped by the budget at step {run.step_count:,}; resume state in "
            f"{window.folder(run.preset)}")
    for p in runs:
        if window.key(p) not in window.rows:
            window.rows[window.key(p)] = window.row(p, skipped=True)
            log(f"{window.key(p)}: not started: it would not have finished within the budget")
    wall = time.time() - window.t0
    rows = [window.rows[window.key(p)] for p in runs]
    total = sum(r.get("steps_this_window", 0) * r["flops_per_step"] for r in rows)
    peak = peak_tflops(name)
    result.update(train_wall_s=round(wall, 1), model_pflop=round(total / 1e15, 2),
                  tflops=round(total / wall / 1e12, 2) if wall > 0 else None,
                  mfu=None if peak is None or wall <= 0 else round(total / wall / 1e12 / peak, 4), runs=rows)
    log(f"trained {total / 1e15:.1f} PFLOP in {wall:.0f} s: {result['tflops']} TFLOP/s, MFU {result['mfu']}")
    if a.pack is not None:
        result["packed"] = pack(rows, a.root, a.pack, log)
    write(a.out, result)
    log(f"total {time.time() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
