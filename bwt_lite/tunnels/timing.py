"""How fast a tunnel generates episodes (exact posteriors included), for benchmarks run by hand.

On a shared machine, measure one thread and read the spread::

    python -c "import os, torch; from bwt_lite.tunnels import episodes_per_second as e; \
    torch.set_num_threads(1); print(os.getloadavg()); [print(n, e(n, batch=256, threads=1)) \
    for n in ('bijection', 'hmm', 'recall', 'regression', 'sticky')]"
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from ..validation import check_int
from .base import Tunnel


def episodes_per_second(tunnel: str | Tunnel = "bijection", batch: int = 256, repeats: int = 20,
                        calls: int = 10, warmup: int = 3, device: str | torch.device = "cpu",
                        threads: int | None = None, seed: int = 0, **tunnel_args: Any) -> dict[str, float]:
    """Episodes/s of ``tunnel.sample(batch, g)``: ``{"min", "median", "max"}`` over ``repeats``
    timings of ``calls`` consecutive calls each, after ``warmup`` untimed calls.

    ``tunnel`` is a :class:`Tunnel` or a name for :func:`make_tunnel` (with ``tunnel_args``). The
    generator lives on ``device``; CUDA work is synchronised before each clock read. ``threads``, if
    given, sets torch's intra-op threads for the measurement (restored afterwards); on a shared
    machine the spread between min and max says how much the load disturbed the numbers.
    """
    from . import make_tunnel  # here, not at import: the package imports this module

    t = make_tunnel(tunnel, **tunnel_args) if isinstance(tunnel, str) else tunnel
    if not isinstance(t, Tunnel):
        raise TypeError(f"tunnel must be a tunnel name or a Tunnel, got {type(tunnel).__name__}")
    batch, repeats = check_int("batch", batch, 1), check_int("repeats", repeats, 1)
    calls, warmup = check_int("calls", calls, 1), check_int("warmup", warmup, 0)
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(check_int("seed", seed, 0))
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(check_int("threads", threads, 1))
    try:
        for _ in range(warmup):
            t.sample(batch, g)
        rates = []
        for _ in range(repeats):
            sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                t.sample(batch, g)
            sync()
            rates.append(batch * calls / (time.perf_counter() - t0))
    finally:
        torch.set_num_threads(old_threads)
    return {"min": min(rates), "median": statistics.median(rates), "max": max(rates)}
