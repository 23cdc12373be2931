"""Train several presets at once in worker processes, for CPUs with more cores than one run can use.

A lite model is too small to keep two cores busy: on a 2-core machine, two one-thread runs side by
side finish a list of presets sooner than the same runs one after the other with two threads each
(``bwt bench`` measures ms per step for a given thread count). :func:`train_presets` hands the
presets, longest first, to ``jobs`` processes with ``threads`` threads each; every run is the
ordinary resumable :func:`~bwt_lite.checkpoints.train_and_save` into the cache, so a killed pool
loses at most ``ckpt_every`` steps of each run in flight (rerun without ``fresh`` to resume).
"""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from ..arguments import check_int
from ..checkpoints import train_and_save
from ..recipes import Preset
from ..store.cache import META, SHIPPED_DIR, checkpoint_dir
from ..train import format_duration


def expected_seconds(preset: Preset) -> float:
    """The recorded training time of ``preset``'s shipped checkpoint, else its step count (a rank only)."""
    meta = checkpoint_dir(preset, SHIPPED_DIR) / META
    if meta.exists():
        return float(json.loads(meta.read_text())["train_time_s"])
    return float(preset.train.steps)


def _train_one(preset_dict: dict[str, Any], fresh: bool, threads: int, ckpt_every: int,
               log_every_s: float, root: str | None) -> tuple[str, float]:
    """Worker: train one preset on the CPU with ``threads`` threads; its name and training seconds.

    Progress goes to stderr, so the parent's stdout (``bwt reproduce --json``) stays machine-readable.
    """
    torch.set_num_threads(threads)
    preset = Preset.from_dict(preset_dict)
    _, meta = train_and_save(preset, progress=False, device="cpu", fresh=fresh, ckpt_every=ckpt_every,
                             log=lambda msg: print(f"[{preset.name}] {msg}", file=sys.stderr, flush=True),
                             log_every_s=log_every_s, root=None if root is None else Path(root))
    return preset.name, float(meta["train_time_s"])


def _ignore_interrupts() -> None:
    """Worker initializer: Ctrl-C reaches the whole process group, but only the parent handles it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def train_presets(presets: Sequence[Preset], *, jobs: int = 2, threads: int | None = None, fresh: bool = False,
                  ckpt_every: int = 500, log_every_s: float = 300.0, root: Path | None = None,
                  log: Callable[[str], None] = print) -> dict[str, float]:
    """Train ``presets`` into the cache (or ``root``) on the CPU, ``jobs`` at a time; {name: training seconds}.

    ``threads`` per job defaults to the cores torch uses divided by ``jobs`` (at least 1). Presets
    start longest first (by the shipped checkpoint's recorded time), which keeps the pool's wall time
    near the sum divided by ``jobs``. ``fresh`` discards saved resume states (a retrain).
    """
    check_int("jobs", jobs, 1)
    threads = max(1, torch.get_num_threads() // jobs) if threads is None else check_int("threads", threads, 1)
    order = sorted(presets, key=expected_seconds, reverse=True)
    if not order:
        return {}
    log(f"training {len(order)} preset(s), {jobs} at a time with {threads} thread(s) each")
    t0 = time.perf_counter()
    done: dict[str, float] = {}
    ctx = multiprocessing.get_context("spawn")  # no forked torch thread pools
    env_threads = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(threads)  # inherited by the workers before torch starts
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(order)), mp_context=ctx,
                                 initializer=_ignore_interrupts) as pool:
            futures = [pool.submit(_train_one, p.to_dict(), fresh, threads, ckpt_every, log_every_s,
                                   None if root is None else str(root)) for p in order]
            try:
                for fut in as_completed(futures):
                    try:
                        name, seconds = fut.result()
                    except Exception:
                        for f in futures:
                            f.cancel()  # the runs in flight finish (or resume later); no new ones start
                        raise
                    done[name] = seconds
                    log(f"finished {name} in {format_duration(seconds)} ({len(done)}/{len(order)}, "
                        f"{format_duration(time.perf_counter() - t0)} since the start)")
            except KeyboardInterrupt:
                # Stop the runs in flight at once: each keeps its last saved state (atomic writes)
                # and resumes from it on the next call; waiting for them could take many minutes.
                pool.shutdown(wait=False, cancel_futures=True)
                for child in multiprocessing.active_children():
                    child.terminate()
                log(f"interrupted: {len(done)}/{len(order)} preset(s) finished; the others resume from their "
                    f"last saved state (every {ckpt_every} steps) on the next run")
                raise
    finally:
        if env_threads is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = env_threads
    return done
