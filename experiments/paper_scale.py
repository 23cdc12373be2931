"""The paper-scale transformers (Paper I's sizes) on the paper's full schedule, several seeds, in one GPU window.

One process trains every run on the fast path: a run is a :class:`bwt_lite.fast_train.FastRun` (one seed,
each step one replayed CUDA graph, its forward optionally through ``torch.compile``) or a
:class:`bwt_lite.fast_stack.SeedStack` (the seeds of one cell as one model with stacked weights, each
step one graph). In order:

1. **The plan**: the units to train (a cell's seeds as one stack, or one run per seed), in the order the
   cells are given (the first is the most wanted), each with its model FLOPs and its time at the rates
   the fast path measured alone on an H200 (:data:`ALONE_STEPS_PER_S`); printed before anything trains.
   Seeds that an earlier window's record (``--earlier-runs``) holds complete are not trained again.
2. **The check**: for each cell, its trainer's gradients on one batch and a few steps (graph included;
   compiled where asked) against the eager trainer (:func:`bwt_lite.train.train_step`), or each seed of
   a stack against its own FastRun, on the same batches, on this device; a cell whose check fails is
   not trained (a compiled one is checked again, and trained, without compile).
3. **The probe**: unit by unit, in order, the unit is built and trained alone for ``--probe-steps``
   steps; its measured steps/s says whether it can finish, after the units already kept, within the
   budget (counting them one after another; side by side they finish sooner). A unit that cannot is
   dropped and recorded so, or with ``--fill`` becomes a filler when it could finish alone in the time
   left; a compiled unit whose compile or graph fails is rebuilt without compile.
4. **The runs**: the kept units and the fillers train side by side, each on its own CUDA stream (the
   first cell's at a higher stream priority). Whenever a kept unit's recent rate would not finish it
   before the deadline, the units after it (later kept ones, then the fillers) are held, unstepped, so
   that a less wanted unit never costs a more wanted one its run. A finished seed is saved as a checkpoint folder under ``--root`` and scored on ``--episodes`` held-out episodes; every
   ``--state-every-s`` seconds, and when the budget ends, each unfinished seed saves a resume state there,
   and the same command with the same ``--root`` continues it (finished seeds are loaded, not retrained).
5. **The record**: ``--out`` (JSON) holds every seed's row (steps, wall time, steps/s, TFLOP/s, MFU,
   scores, learning curve, its trainer) and the window's totals; with ``--pack DIR`` the median seed of
   each cell, over this window and the earlier ones, is copied there as a tar (in parts of at most
   15 MiB) when this window trained it, for ``experiments/paper_scale_claims.py``; the packs together stay
   under ``--pack-mb`` (what a lent GPU machine can send back).

    python experiments/paper_scale.py --cells hmm:1 regression recall hmm:2 --seeds 0 1 2 --compile hmm \\
        --fill --earlier-runs bwt_lite/data/paper_scale_runs.json --budget-s 555 --root DIR --pack OUT
    python experiments/paper_scale.py --cells recurrence recurrence-opaque recurrence-h5 recurrence-h3 \\
        --seeds 0 --budget-s 480 --root DIR --pack OUT   # chapter 13's tunnel at the authors' 6 x 192

A cell may name its own seeds (``hmm:0`` or ``recall:1,2``); ``--seeds`` gives the others theirs.
What one H200 measured (2026-11-28, ``bwt_lite/data/paper_scale_runs.json``): the HMM model 95 steps/s
alone, 143 with ``--compile`` (the other cells not tried compiled); a stack of 3 seeds no faster than
the seeds one after another (bijection 1.01x, HMM 0.78x), so ``--stack`` is off by default.
``--steps N`` shortens every run to N steps (a smoke run: ``--steps 16 --device cpu``).
"""
from __future__ import annotations

import io
import json
import math
import re
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import torch

from bwt_lite.evaluate import evaluate
from bwt_lite.fast_stack import SeedStack, check_stack, stack_and_alone
from bwt_lite.fast_train import FastRun, check_against_eager, peak_tflops, train_flops_per_step, train_together
from bwt_lite.models import POSITIONS
from bwt_lite.recipes import Preset, get_preset
from bwt_lite.runtime.device import device_name, resolve_device
from bwt_lite.store.cache import RESUME, checkpoint_dir
from bwt_lite.store.checkpoint import load_checkpoint, save_checkpoint
from bwt_lite.store.resume import load_train_state, save_train_state
from bwt_lite.train import init_model
from bwt_lite.tunnels import make_tunnel

from _common import RESULTS, write

PART_BYTES = 15 * 1024 ** 2  # files that come back from a lent GPU machine must stay under 16 MiB each
EVAL_RESERVE_S = 30.0  # kept back at the end of the budget for the last scores, the record and the pack
# steps/s of each paper-scale transformer alone on the fast path (one graph a step, no compile), measured
# on one NVIDIA H200 on 2026-11-28 (bwt_lite/data/paper_scale_runs.json): the plan's rates until a probe
# measures the unit itself; a stack of G seeds is assumed no faster than its seeds one after another
ALONE_STEPS_PER_S = {"bijection": 285.0, "hmm": 95.2, "recall": 216.0, "regression": 378.0}
DEFAULT_STEPS_PER_S = 100.0  # a cell not measured yet (e.g. the recurrence)
# what the check on the device accepts: bf16 autocast rounds gradients to a few parts in a thousand, while a
# wrong gradient (a missing term, a seed's scale) is off by tens of percent; losses after 4 steps likewise
GRAD_TOLERANCE = 0.05
LOSS_TOLERANCE = 1e-3


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


def cell_seeds(cells: list[str], seeds: list[int]) -> list[tuple[str, list[int]]]:
    """``hmm:0`` -> ("hmm", [0]); ``recall:1,2`` -> ("recall", [1, 2]); a bare cell gets ``seeds``."""
    out = []
    for c in cells:
        cell, _, own = c.partition(":")
        try:
            out.append((cell, [int(s) for s in own.split(",")] if own else list(seeds)))
        except ValueError:
            raise SystemExit(f"--cells: {c!r} is not CELL or CELL:SEED[,SEED...]") from None
    return out


def presets(cells: list[str], seeds: list[int], steps: int | None, batch_size: int | None = None) -> list[Preset]:
    """The runs, cell by cell in the order given (``steps`` and ``batch_size`` shorten them for a smoke run)."""
    runs = []
    for cell, own in cell_seeds(cells, seeds):
        for seed in own:
            p = cell_preset(cell, seed)
            if steps is not None:
                p = p.with_train(steps=steps, warmup_steps=min(p.train.warmup_steps, max(steps // 5, 1)))
            if batch_size is not None:
                p = p.with_train(batch_size=batch_size)
            runs.append(p)
    return runs


def units(runs: list[Preset], stack: bool, compiled: set[str]) -> list[list[Preset]]:
    """What trains as one: a cell's seeds as one stack (``stack``), or one run per seed (always for the
    cells in ``compiled``, whose forward goes through torch.compile); in the order of ``runs``."""
    out: list[list[Preset]] = []
    for p in runs:
        last = out[-1] if out else None
        if stack and cell_of(p) not in compiled and last is not None and cell_of(last[0]) == cell_of(p):
            last.append(p)
        else:
            out.append([p])
    return out


def model_flops(p: Preset) -> float:
    n = sum(t.numel() for t in init_model(p.model, 0).parameters())
    return train_flops_per_step(p, n)


def assumed_rate(unit: list[Preset]) -> float:
    """The plan's steps/s of a unit (:data:`ALONE_STEPS_PER_S`; a stack counted as its seeds in turn)."""
    return ALONE_STEPS_PER_S.get(cell_of(unit[0]), DEFAULT_STEPS_PER_S) / len(unit)


def describe(unit: list[Preset]) -> str:
    seeds = [p.train.seed for p in unit]
    return f"{unit[0].name} seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def plan(todo: list[list[Preset]], budget_s: float, log) -> None:
    """Print what each unit costs at the plan's rates, and the running total, in the order they are tried."""
    log(f"plan: {len(todo)} units, budget {budget_s:.0f} s; times at the fast path's rates alone "
        f"(a stack: its seeds one after another); each unit is measured before it is kept")
    total = 0.0
    for unit in todo:
        p = unit[0]
        secs = p.train.steps / assumed_rate(unit)
        total += secs
        pflop = model_flops(p) * p.train.steps * len(unit) / 1e15
        log(f"  {describe(unit)}: {p.train.steps:,} steps x {p.train.batch_size}"
            f"{f' x {len(unit)} seeds' if len(unit) > 1 else ''}, {pflop:.1f} PFLOP, about {secs:.0f} s "
            f"(cumulative {total:.0f} s: {'fits' if total <= budget_s - EVAL_RESERVE_S else 'past the budget'})")


def earlier_complete(path: Path | None) -> dict[str, dict[str, Any]]:
    """The seeds that earlier windows' record (a paper_scale_runs.json) holds complete and scored, by
    their preset key (its first 16 hex digits, which include the seed and the whole recipe)."""
    if path is None or not path.exists():
        return {}
    record = json.loads(path.read_text())
    rows = [r for w in record.get("windows", [record]) for r in w.get("runs", [])]
    return {r["key"]: r for r in rows if r.get("complete") and "entropy_mae_bits" in r}


class Window:
    """The units of one call: builds, probes, saves and records them (one row per seed)."""

    def __init__(self, args: Any, device: torch.device, deadline: float, log):
        self.a, self.device, self.deadline, self.log = args, device, deadline, log
        self.peak = peak_tflops(device_name(device)) if device.type == "cuda" else None
        self.rows: dict[str, dict[str, Any]] = {}
        self.flops: dict[str, float] = {}
        self.started: dict[int, tuple[float, int]] = {}  # per run (id): wall clock and step at its start here
        self.rates: dict[int, float] = {}  # per run: steps/s measured by its probe
        self.together: dict[int, tuple[float, int]] = {}  # per run: wall clock and step when all kept runs start
        self.compiled = set(args.compile or ())
        self.first_cell = args.cells[0].split(":")[0]  # its runs' CUDA streams have the higher priority

    def key(self, p: Preset) -> str:
        return f"{p.name}#{p.train.seed}"

    def folder(self, p: Preset) -> Path:
        return checkpoint_dir(p, self.a.root)

    def time_left(self) -> float:
        return self.deadline - EVAL_RESERVE_S - time.time()

    def finished_here(self, p: Preset) -> bool:
        """Was this seed finished by an earlier call with the same ``--root``? Then it is scored and recorded."""
        if not (self.folder(p) / "checkpoint.json").exists():
            return False
        model, meta = load_checkpoint(self.folder(p), p, device=self.device)
        res = evaluate(model, make_tunnel(**p.tunnel), episodes=self.a.episodes, device=self.device)
        self.rows[self.key(p)] = self.row(p, meta=meta, earlier=True)
        self.rows[self.key(p)].update(entropy_mae_bits=res.entropy_mae_bits, kl_bits=res.kl_bits,
                                      accuracy=res.accuracy, history=meta["history"])
        self.log(f"{self.key(p)}: trained in an earlier call ({self.folder(p).name}), entropy MAE "
                 f"{res.entropy_mae_bits:.4f} bits")
        return True

    def build(self, unit: list[Preset], compile: bool = False, priority: int = 0) -> FastRun | SeedStack:
        """The unit's trainer, resumed from its seeds' states where every seed has one at the same step."""
        states = [load_train_state(self.folder(p), p) if (self.folder(p) / RESUME).exists() else None for p in unit]
        usable = all(s is not None for s in states) and len({s.step for s in states}) == 1
        if any(s is not None for s in states):
            self.log(f"{describe(unit)}: " + (f"resuming at step {states[0].step:,}" if usable else
                                              "the seeds' resume states differ; starting afresh"))
        a = self.a
        if len(unit) == 1:
            run = FastRun(unit[0], self.device, amp=a.amp, chunk=a.chunk, resume=states[0] if usable else None,
                          compile=compile, priority=priority)
        else:
            run = SeedStack(unit, self.device, amp=a.amp, chunk=a.chunk, resumes=states if usable else None,
                            priority=priority)
        for p in unit:
            self.flops[p.name] = self.flops.get(p.name) or model_flops(p)
        self.started[id(run)] = (time.perf_counter(), run.step_count)
        return run

    def probe(self, run: FastRun | SeedStack, steps: int) -> float:
        """Train ``run`` alone for ``steps`` steps (graph capture and compile included) and return its
        steps/s over the second half of them."""
        steps = min(steps, run.cfg.steps - run.step_count)
        half = steps // 2
        every = self.a.eval_every or run.cfg.eval_every

        def step() -> None:
            run.step()
            if run.step_count % every == 0:  # the evaluations a run makes on schedule, also while probed
                run.evaluate_now()

        for _ in range(steps - half):
            step()
        run.sync()
        t0 = time.perf_counter()
        for _ in range(half):
            step()
        run.sync()
        rate = half / max(time.perf_counter() - t0, 1e-9) if half else DEFAULT_STEPS_PER_S
        self.rates[id(run)] = rate
        return rate

    def remaining_s(self, run: FastRun | SeedStack) -> float:
        return (run.cfg.steps - run.step_count) / self.rates[id(run)]

    def save_state(self, run: FastRun | SeedStack) -> None:
        for i, p in enumerate(run.presets):
            folder = self.folder(p)
            folder.mkdir(parents=True, exist_ok=True)
            save_train_state(folder, run.member_state(i), p)

    def finish(self, run: FastRun | SeedStack) -> None:
        """Save, score and record each finished seed of ``run``, then free its memory."""
        for i, p in enumerate(run.presets):
            folder = self.folder(p)
            folder.mkdir(parents=True, exist_ok=True)
            meta = save_checkpoint(folder, p, run.member_model(i), run.member_state(i), run.trained_on())
            for old in (folder / RESUME).glob("*"):
                old.unlink()
            scores = run.member_scores(i, self.a.episodes)
            self.record(run, i, meta=meta, scores=scores)
            self.log(f"{self.key(p)}: done, entropy MAE {scores['entropy_mae_bits']:.4f} bits, KL {scores['kl_bits']:.4f}")
        run.release()
        torch.cuda.empty_cache() if self.device.type == "cuda" else None

    def fail(self, run: FastRun | SeedStack, error: Exception) -> None:
        """A unit whose training failed (e.g. diverged): each seed recorded with the error, nothing saved."""
        for i, p in enumerate(run.presets):
            self.record(run, i)
            self.rows[self.key(p)].update(failed=f"{type(error).__name__}: {str(error)[:400]}", complete=False)
        self.log(f"{run.label}: failed at step {run.step_count:,} ({type(error).__name__}: {str(error)[:300]}); "
                 f"the other units go on")
        run.release()
        torch.cuda.empty_cache() if self.device.type == "cuda" else None

    def record(self, run: FastRun | SeedStack, i: int, meta: dict | None = None, scores: dict | None = None) -> None:
        p = run.presets[i]
        t_start, step0 = self.started[id(run)]
        wall = time.perf_counter() - t_start
        steps = run.step_count - step0  # its probe's steps included
        # the rate side by side: from the start of the kept runs (after every probe) to now
        t_side, step_side = self.together.get(id(run), (t_start, step0))
        rate = (run.step_count - step_side) / max(time.perf_counter() - t_side, 1e-9)
        tflops = rate * self.flops[p.name] / 1e12  # this seed's share; the unit's is len(run.presets) times it
        row = self.row(p, meta=meta)
        row.update(steps=run.step_count, complete=run.step_count >= run.cfg.steps, wall_s=round(wall, 1),
                   steps_this_window=steps, steps_per_s=round(rate, 2), tflops=round(tflops, 2),
                   mfu=None if self.peak is None else round(tflops / self.peak, 4), graph=run.graph is not None,
                   graph_error=run.graph_error, trained_on=run.trained_on(), seeds_together=len(run.presets),
                   probe_steps_per_s=None if id(run) not in self.rates else round(self.rates[id(run)], 2),
                   history=[{k: h[k] for k in ("step", "loss", "entropy_mae_bits", "kl_bits") if k in h}
                            for h in run.member_history(i)])
        if scores is not None:
            row.update(scores)
        self.rows[self.key(p)] = row

    def row(self, p: Preset, meta: dict | None = None, earlier: bool = False, skipped: str | None = None) -> dict:
        row: dict[str, Any] = {"tunnel": p.tunnel["tunnel"], "cell": cell_of(p), "seed": p.train.seed, "name": p.name,
                               "key": p.key()[:16], "schedule_steps": p.train.steps,
                               "flops_per_step": self.flops.get(p.name) or model_flops(p)}
        if meta is not None:
            row.update(checkpoint=self.folder(p).name, parameters=meta["params"], train_time_s=meta["train_time_s"])
        if earlier:
            row.update(earlier_window=True, steps=meta["train_steps"], complete=True)
        if skipped:
            row.update(skipped=skipped, steps=0, complete=False)
        return row


def keep_or_drop(window: Window, unit: list[Preset], kept_s: float, log
                 ) -> tuple[FastRun | SeedStack | None, float, bool]:
    """Build and probe ``unit``: (run, its seconds to finish, kept). Kept when it finishes, after the units
    already kept (``kept_s`` seconds one after another), within the budget; else, with ``--fill``, a filler
    when it could finish alone in the time left (it trains in the kept units' gaps, held whenever one of
    them falls behind); else dropped (run None). A compiled unit whose compile or graph fails is rebuilt plain."""
    a = window.a
    compile = cell_of(unit[0]) in window.compiled
    priority = -1 if cell_of(unit[0]) == window.first_cell else 0
    for attempt in ((True, False) if compile else (False,)):
        try:
            run = window.build(unit, compile=attempt, priority=priority)
            rate = window.probe(run, a.probe_steps)
        except Exception as e:  # a compile that fails on this device: the plain graph instead
            if not attempt:
                raise
            log(f"{describe(unit)}: torch.compile failed ({type(e).__name__}: {str(e)[:300]}); trying without it")
            torch.cuda.empty_cache() if window.device.type == "cuda" else None
            continue
        if attempt and run.graph_wanted and run.graph is None:
            log(f"{describe(unit)}: compiled, but its step could not be captured ({run.graph_error}); trying without compile")
            continue
        need = window.remaining_s(run)
        label = f"{describe(unit)}{' (compiled)' if attempt else ''}"
        if kept_s + need <= window.time_left():
            log(f"{label}: {rate:.1f} steps/s alone ({rate * len(unit) * window.flops[unit[0].name] / 1e12:.1f} "
                f"TFLOP/s), {need:.0f} s to finish: kept (kept units {kept_s + need:.0f} s one after another, "
                f"{window.time_left():.0f} s left)")
            return run, need, True
        if a.fill and need <= window.time_left():
            log(f"{label}: {rate:.1f} steps/s alone, {need:.0f} s to finish, {window.time_left() - kept_s:.0f} s "
                f"free after the kept units: a filler (trains in their gaps, held whenever one falls behind)")
            return run, need, False
        log(f"{label}: {rate:.1f} steps/s alone, {need:.0f} s to finish, {window.time_left() - kept_s:.0f} s "
            f"free: dropped")
        for p in unit:
            window.rows[window.key(p)] = window.row(p, skipped=f"did not fit the budget at {rate:.1f} steps/s")
        return None, 0.0, False
    return None, 0.0, False


class Holder:
    """``train_together``'s ``hold``, which keeps the most wanted runs on time: ``order`` lists the kept runs
    (most wanted first), then the fillers. When a kept run, at its rate over the last few seconds, would
    not finish before the deadline (with 3 % to spare), every run after it in ``order`` is left unstepped
    until the next call. Fillers train one at a time, in order."""

    def __init__(self, window: Window, kept: list, fillers: list, log):
        self.window, self.order, self.kept, self.log = window, list(kept) + list(fillers), {id(r) for r in kept}, log
        self.seen = {id(r): (time.perf_counter(), r.step_count) for r in kept}
        self.holding: str | None = None

    def __call__(self, active: list) -> set[int]:
        now = time.perf_counter()
        left = self.window.time_left()
        live = {id(r) for r in active}
        late = None
        for i, r in enumerate(self.order):
            if id(r) not in self.kept or id(r) not in live or r.done:
                continue
            t, step = self.seen[id(r)]
            rate = (r.step_count - step) / max(now - t, 1e-9) if r.step_count > step else self.window.rates.get(id(r), 0.0)
            self.seen[id(r)] = (now, r.step_count)
            if late is None and (rate <= 0 or (r.cfg.steps - r.step_count) / rate > 0.97 * left):
                late = (i, f"{r.label} at {rate:.0f} steps/s")
        held = set() if late is None else {id(r) for r in self.order[late[0] + 1:] if id(r) in live}
        state = None if not held else late[1]
        if state != self.holding:
            self.log(f"{len(held)} later run(s) held: {late[1]} would finish late" if held else "no run held")
        self.holding = state
        # fillers one at a time, in order: one that finishes is worth more than several half-trained
        fillers = [r for r in self.order if id(r) not in self.kept and id(r) in live and not r.done]
        return held | {id(r) for r in fillers[1:]}


def pack(rows: list[dict], root: Path, dest: Path, log, earlier: list[dict] | None = None,
         limit_bytes: float = math.inf, order: list[str] | None = None) -> dict[str, Any]:
    """The median seed (by entropy MAE; of two, the worse) of each cell's finished seeds, over ``rows`` and
    the ``earlier`` windows' rows, tarred into ``dest`` in parts of at most :data:`PART_BYTES` when it
    was trained here (its folder is under ``root``); when it was not, the seed trained here nearest to
    it in entropy MAE, marked as its stand-in. Cells in ``order`` first, the packs together under
    ``limit_bytes``."""
    dest.mkdir(parents=True, exist_ok=True)
    chosen: dict[str, Any] = {}
    def cell(r: dict) -> str:
        return r.get("cell") or r["tunnel"]

    cells = sorted({cell(r) for r in rows}, key=lambda c: ((order or []).index(c) if c in (order or [])
                                                           else len(order or []), c))
    used = 0
    for c in cells:
        # an earlier window's seeds count when they trained the same recipe to the same schedule
        names = {(r["name"], r.get("schedule_steps")) for r in rows if cell(r) == c}
        same = [dict(r, earlier_record=True) for r in earlier or []
                if cell(r) == c and (r["name"], r.get("schedule_steps")) in names]
        done = sorted((r for r in same + [r for r in rows if cell(r) == c] if r.get("complete")
                       and "entropy_mae_bits" in r), key=lambda r: r["entropy_mae_bits"])
        if not done:
            continue
        median = done[len(done) // 2]
        chosen[c] = {"seed": median["seed"], "checkpoint": median.get("checkpoint"), "of_seeds": len(done),
                     "packed": False}

        def here(r: dict) -> bool:
            return (not r.get("earlier_record") and bool(r.get("checkpoint"))
                    and (root / r["checkpoint"] / "model.safetensors").exists())

        pick = median
        if not here(median):  # an earlier window's seed, whose checkpoint went with its machine
            mine = [r for r in done if here(r)]
            if not mine:
                log(f"{c}: the median of {len(done)} seeds is seed {median['seed']}, trained in an earlier window: "
                    f"nothing to pack")
                continue
            pick = min(mine, key=lambda r: abs(r["entropy_mae_bits"] - median["entropy_mae_bits"]))
            chosen[c]["stand_in"] = {"seed": pick["seed"], "checkpoint": pick["checkpoint"]}
            log(f"{c}: the median of {len(done)} seeds is seed {median['seed']} ({median['entropy_mae_bits']:.5f} "
                f"bits), trained in an earlier window whose checkpoint is not here: packing seed {pick['seed']} "
                f"({pick['entropy_mae_bits']:.5f} bits), the nearest to it, in its place")
        folder = root / pick["checkpoint"]
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for f in ("checkpoint.json", "model.safetensors"):
                tar.add(folder / f, arcname=f"{pick['checkpoint']}/{f}")
        data = buf.getvalue()
        if used + len(data) > limit_bytes:
            log(f"{c}: seed {pick['seed']} ({len(data) / 1e6:.1f} MB) would pass the {limit_bytes / 1e6:.0f} MB "
                f"that can come back: not packed")
            continue
        used += len(data)
        parts = math.ceil(len(data) / PART_BYTES)
        for i in range(parts):
            (dest / f"{c}.tar.{i}").write_bytes(data[i * PART_BYTES:(i + 1) * PART_BYTES])
        chosen[c]["packed"] = True
        log(f"packed {c} seed {pick['seed']} ({len(data) / 1e6:.1f} MB, {parts} part(s))")
    return chosen


def check_cells(window: Window, todo: list[list[Preset]], checks: dict[str, Any], log) -> list[list[Preset]]:
    """Each cell's trainer against the reference on this device (see the module docstring), recorded in
    ``checks``; returns the units whose check passed. A compiled cell that fails is checked again, and
    trained, without compile; any other cell that fails is not trained."""
    a, device = window.a, window.device
    passed: set[str] = set()
    for unit in todo:
        c = cell_of(unit[0])
        if c in checks:
            continue
        short = [u.with_train(steps=max(u.train.steps, 8)) for u in unit[:2]]
        for compile in ((True, False) if c in window.compiled else (False,)):
            trainer = f"seed stack of {len(short)}" if len(unit) > 1 else "fast run" + (" (compiled)" if compile else "")
            try:
                if len(unit) > 1:
                    chk = check_stack(short, device, steps=4, amp=a.amp)
                else:
                    chk = check_against_eager(short[0], device, steps=4, amp=a.amp, compile=compile)
                ok = chk["grad_rel_diff"] <= GRAD_TOLERANCE and chk["loss_rel_diff"] <= LOSS_TOLERANCE
                log(f"check {c} ({trainer}): gradients differ by {chk['grad_rel_diff']:.2e} (relative), losses by "
                    f"{chk['loss_rel_diff']:.2e}, weights by {chk['weight_abs_diff']:.2e} after 4 steps; graph "
                    f"{chk['graph']} ({chk['graph_error']}): {'passed' if ok else 'FAILED'}")
            except Exception as e:  # e.g. torch.compile failing on this device
                chk, ok = {"error": f"{type(e).__name__}: {str(e)[:300]}"}, False
                log(f"check {c} ({trainer}): failed: {chk['error']}")
            checks[c] = dict(chk, trainer=trainer, passed=ok)
            if ok:
                passed.add(c)
                break
            if compile:
                window.compiled.discard(c)
                log(f"{c}: trained without compile")
    kept = [u for u in todo if cell_of(u[0]) in passed]
    for unit in todo:
        if cell_of(unit[0]) not in passed:
            for p in unit:
                window.rows[window.key(p)] = window.row(p, skipped="its trainer failed the check on this device")
    return kept


def train_units(window: Window, todo: list[list[Preset]], deadline: float, log) -> None:
    """Probe the units in order (kept, filler or dropped), then train the kept units and the fillers side by side."""
    a = window.a
    kept, fillers, kept_s = [], [], 0.0
    for unit in todo:
        free = window.time_left() - (0.0 if a.fill else kept_s)
        if free < 0.5 * unit[0].train.steps / assumed_rate(unit):
            log(f"{describe(unit)}: not tried: even at twice the plan's rate it would not fit")
            for p in unit:
                window.rows[window.key(p)] = window.row(p, skipped="did not fit the budget")
            continue
        run, need, fits = keep_or_drop(window, unit, kept_s, log)
        if run is not None and fits:
            kept.append(run)
            kept_s += need
        elif run is not None:
            fillers.append(run)
    for run in kept + fillers:
        window.together[id(run)] = (time.perf_counter(), run.step_count)
    finished, stopped = train_together(
        kept + fillers, deadline=deadline - EVAL_RESERVE_S, eval_every=a.eval_every, on_state=window.save_state,
        state_every_s=a.state_every_s, on_done=window.finish, log=log, on_fail=window.fail,
        hold=Holder(window, kept, fillers, log) if len(kept) + len(fillers) > 1 and kept else None)
    for run in stopped:
        for i, p in enumerate(run.presets):
            window.record(run, i)
        log(f"{run.label}: stopped by the budget at step {run.step_count:,}; resume states under {a.root}")


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", nargs="+", default=["bijection", "hmm", "recall", "regression"],
                   help="CELL or CELL:SEED[,SEED...], the most wanted first")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--budget-s", type=float, default=480.0, help="wall seconds from start to the last saved result")
    p.add_argument("--device", default="cuda")
    p.add_argument("--amp", default="auto", help="mixed precision (auto: bf16 where the GPU computes in it)")
    p.add_argument("--stack", action="store_true",
                   help="a cell's seeds as one stacked model (measured on an H200: no faster than one after another)")
    p.add_argument("--compile", nargs="*", default=[], help="cells whose forward goes through torch.compile")
    p.add_argument("--probe-steps", type=int, default=200, help="steps each unit trains alone before it is kept")
    p.add_argument("--fill", action="store_true",
                   help="units that do not fit after the kept ones train in their gaps, held when one falls behind")
    p.add_argument("--chunk", type=int, default=8, help="batches drawn per sampler call")
    p.add_argument("--eval-every", type=int, default=2500, help="steps between evaluations of a run")
    p.add_argument("--state-every-s", type=float, default=180.0, help="seconds between resume states")
    p.add_argument("--no-check", action="store_true", help="skip the check against the eager trainer")
    p.add_argument("--compare", nargs="*", default=[],
                   help="cells timed alone and as a stack of 3 seeds before training (200 steps each)")
    p.add_argument("--steps", type=int, default=None, help="shorten every run (a smoke run)")
    p.add_argument("--batch-size", type=int, default=None, help="smaller batches (a smoke run on a CPU)")
    p.add_argument("--episodes", type=int, default=2048, help="held-out episodes of the final score")
    p.add_argument("--earlier-runs", type=Path, default=None,
                   help="earlier windows' record: their complete seeds are not trained again, and count for the median")
    p.add_argument("--root", type=Path, default=RESULTS / "paper_scale")
    p.add_argument("--out", type=Path, default=RESULTS / "paper_scale_runs.json")
    p.add_argument("--pack", type=Path, default=None, help="copy each cell's median seed here as tar parts")
    p.add_argument("--pack-mb", type=float, default=64.0,
                   help="the most the packs may hold together (MB; a lent GPU sends back 64 MiB in all)")
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
    earlier = earlier_complete(a.earlier_runs)
    runs = []
    for r in presets(a.cells, a.seeds, a.steps, a.batch_size):
        old = earlier.get(r.key()[:16])
        if old is not None:
            log(f"{r.name} seed {r.train.seed}: complete in an earlier window ({old['entropy_mae_bits']:.4f} bits), "
                f"not trained again")
        else:
            runs.append(r)
    window = Window(a, device, deadline, log)
    a.root.mkdir(parents=True, exist_ok=True)
    todo = [u for u in units([r for r in runs if not window.finished_here(r)], a.stack, window.compiled)]
    plan(todo, a.budget_s, log)
    result: dict[str, Any] = {"device": name, "torch": torch.__version__, "budget_s": a.budget_s,
                              "command": " ".join(["python", "experiments/paper_scale.py", *(argv or sys.argv[1:])]),
                              "checks": {}}
    if not a.no_check:
        todo = check_cells(window, todo, result["checks"], log)
    result["compare"] = {}
    for c in a.compare:
        r = stack_and_alone(presets([c], [0], a.steps, a.batch_size)[0], device, steps=min(200, a.steps or 200),
                            amp=a.amp, chunk=a.chunk)
        result["compare"][c] = r
        log(f"alone vs stack, {c}: {r['alone_steps_per_s']:.1f} steps/s alone ({r['alone_tflops']:.1f} TFLOP/s), "
            f"{r['stack_steps_per_s']:.1f} as a stack of 3 ({r['stack_tflops']:.1f} TFLOP/s, graph {r['graph']}): "
            f"{r['seed_speedup']:.2f}x the seed-steps")
        torch.cuda.empty_cache() if device.type == "cuda" else None
    t_train = time.time()
    error = None
    try:  # whatever happens, the record and the packs of what finished are written
        train_units(window, todo, deadline, log)
    except Exception as e:  # recorded, then raised again once the record is written
        error = e
        result["error"] = f"{type(e).__name__}: {str(e)[:400]}"
        log(f"stopped by an error: {result['error']}")
    wall = time.time() - t_train
    rows = [window.rows[window.key(p)] for p in runs if window.key(p) in window.rows]
    total = sum(r.get("steps_this_window", 0) * r["flops_per_step"] for r in rows)
    peak = peak_tflops(name)
    result.update(train_wall_s=round(wall, 1), model_pflop=round(total / 1e15, 2),
                  tflops=round(total / wall / 1e12, 2) if wall > 0 else None,
                  mfu=None if peak is None or wall <= 0 else round(total / wall / 1e12 / peak, 4), runs=rows)
    log(f"trained {total / 1e15:.1f} PFLOP in {wall:.0f} s: {result['tflops']} TFLOP/s, MFU {result['mfu']}")
    if a.pack is not None:
        order = [c for c, _ in cell_seeds([c.split(":")[0] for c in a.cells], a.seeds)]
        result["packed"] = pack(rows, a.root, a.pack, log, earlier=list(earlier.values()),
                                limit_bytes=a.pack_mb * 1e6, order=order)
    write(a.out, result)
    log(f"total {time.time() - t_start:.0f} s")
    if error is not None:
        raise error
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
