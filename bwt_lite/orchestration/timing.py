"""Timing helpers shared by the benchmarks: min / median / max of repeated calls, a thread-count
context, and the time of one full training step of a preset."""
from __future__ import annotations

import contextlib
import statistics
import time
from typing import Any, Callable, Iterator, Sequence

import torch
from torch.utils.flop_counter import FlopCounterMode

from ..recipes import Preset
from ..train import init_model, make_optimizer, train_step
from ..tunnels import make_tunnel
from ..runtime.device import amp_dtype, compiled, grad_scaler, resolve_device, synchronize


def stats(samples: Sequence[float]) -> dict[str, float]:
    """``{"min", "median", "max"}`` of ``samples``."""
    return {"min": min(samples), "median": statistics.median(samples), "max": max(samples)}


def timings(fn: Callable[[], Any], repeat: int, warmup: int = 1, device: torch.device | None = None) -> list[float]:
    """Seconds of each of ``repeat`` calls of ``fn``, timed one by one after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        if device is not None:
            synchronize(device)
        t0 = time.perf_counter()
        fn()
        if device is not None:
            synchronize(device)
        times.append(time.perf_counter() - t0)
    return times


@contextlib.contextmanager
def num_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` (None: unchanged) inside the block, restored after it."""
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def steps_per_second(preset: Preset, device: str | torch.device = "cpu", amp: str = "auto",
                     compile_model: bool = False, repeat: int | None = None,
                     warmup: int | None = None, threads: int | None = None) -> dict[str, Any]:
    """Time full training steps of ``preset`` (batch, forward, backward, clip, AdamW) on ``device``.

    Returns a row: preset name, parameters, batch size, ``ms`` (min/median/max per step),
    ``ms_per_step`` and ``steps_per_s`` at the median, and the time the preset's whole run would take
    at that speed. Default repeats: 50 on a GPU; on CPU 20 lite, 3 paper. ``threads``: torch's CPU
    threads for the measurement (None: as they are).
    """
    dev = resolve_device(device)
    dtype = amp_dtype(amp, dev)
    if repeat is None:
        repeat = 50 if dev.type == "cuda" else (20 if preset.scale == "lite" else 3)
    if warmup is None:
        warmup = (10 if compile_model else 5) if dev.type == "cuda" else 1
    t, g = make_tunnel(**preset.tunnel), torch.Generator(device=dev).manual_seed(0)
    model = init_model(preset.model, 0).to(dev).train()
    forward, opt, scaler = compiled(model, compile_model), make_optimizer(model, preset.train), grad_scaler(dev, dtype)
    step = iter(range(10**9))

    def one(fwd: Any = forward) -> None:
        train_step(fwd, model, opt, t.sample(preset.train.batch_size, g), preset.train, next(step),
                   device=dev, dtype=dtype, scaler=scaler)

    with num_threads(threads):
        with FlopCounterMode(display=False) as counter:  # one eager step, counted (not timed)
            one(model)
        ms = [1000.0 * s for s in timings(one, repeat, warmup, dev)]
    median = statistics.median(ms)
    tokens = preset.train.batch_size * t.seq_len
    counted = counter.get_total_flops()
    gflop = counted / 1e9 if counted >= model.n_params * tokens else None  # else: ops torch cannot count
    return {"preset": preset.name, "tunnel": preset.tunnel["tunnel"], "arch": preset.model.arch,
            "scale": preset.scale, "params": model.n_params, "batch_size": preset.train.batch_size,
            "threads": torch.get_num_threads() if threads is None else threads, "ms": stats(ms),
            "steps_per_s": 1000.0 / median, "ms_per_step": median, "steps": preset.train.steps,
            "full_run_s": preset.train.steps * median / 1000.0, "gflop_per_step": gflop,
            "tflop_per_s": None if gflop is None else gflop / median, "repeat": repeat}



__all__ = ["num_threads", "stats", "steps_per_second"]
