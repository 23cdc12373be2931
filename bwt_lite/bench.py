"""Benchmarks, run by hand and reported, never as timed tests.

Run as ``bwt bench [--train] [--json]``. Measures, on this machine: episodes/s of each tunnel
generator at batch 256 (exact posterior included), the same for a naive per-episode Python forward
algorithm on the HMM (filter only, for comparison), ms per training step of each lite preset, and
(with ``--train``) the wall time of lite training until the held-out entropy MAE first reaches a
target, read from the training history.
"""
from __future__ import annotations

import json
import time
from typing import Any

import torch

from .presets import get_preset
from .train import init_model, loss_fn, make_optimizer
from .tunnels import TUNNELS, make_tunnel


def _timeit(fn, repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def episodes_per_second(tunnel: str = "bijection", batch_size: int = 256, repeat: int = 50) -> float:
    t, g = make_tunnel(tunnel), torch.Generator().manual_seed(0)
    return batch_size / _timeit(lambda: t.sample(batch_size, g), repeat)


def hmm_naive_episodes_per_second(batch_size: int = 256, repeat: int = 3) -> float:
    """The HMM filter as a naive per-episode Python loop (no sampling), for comparison."""
    from .tunnels.hmm import _forward_filter_reference

    t, g = make_tunnel("hmm"), torch.Generator().manual_seed(0)
    T, E, obs = t.decode(t.sample(batch_size, g).inputs)
    T, E, obs = T.tolist(), E.tolist(), obs.tolist()
    return batch_size / _timeit(lambda: _forward_filter_reference(T, E, obs), repeat, warmup=1)


def ms_per_step(tunnel: str, arch: str, scale: str = "lite", repeat: int = 20, device: str = "cpu") -> float:
    p = get_preset(tunnel, arch, scale)
    t, g = make_tunnel(**p.tunnel), torch.Generator(device=device).manual_seed(0)
    model = init_model(p.model, 0).to(device)
    opt = make_optimizer(model, p.train)

    def step() -> None:
        ep = t.sample(p.train.batch_size, g)
        loss = loss_fn(model(ep.inputs, ep.positions), ep, p.train.target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), p.train.grad_clip)
        opt.step()
        if device != "cpu":
            torch.cuda.synchronize()

    return 1000 * _timeit(step, repeat)


def time_to_target(history: list[dict[str, float]], target_bits: float) -> float | None:
    """Training seconds until the held-out entropy MAE first reached ``target_bits`` (None if never)."""
    for row in history:
        if row["entropy_mae_bits"] <= target_bits:
            return row["elapsed_s"]
    return None


def run(train: bool = False, target_bits: float = 0.02) -> dict[str, Any]:
    out: dict[str, Any] = {"torch": torch.__version__, "threads": torch.get_num_threads(),
                           "episodes_per_s": {name: episodes_per_second(name) for name in sorted(TUNNELS)},
                           "hmm_naive_python_filter_episodes_per_s": hmm_naive_episodes_per_second(),
                           "ms_per_step": {f"{tunnel}-{arch}-lite": ms_per_step(tunnel, arch)
                                           for tunnel in sorted(TUNNELS) for arch in ("transformer", "mlp")}}
    if train:
        from .checkpoints import train_and_save

        p = get_preset("bijection", "transformer", "lite")
        t0 = time.perf_counter()
        _, meta = train_and_save(p, progress=False, fresh=True, log=lambda _: None)
        out["lite_training"] = {"preset": p.name, "wall_s": time.perf_counter() - t0,
                                "final_mae_bits": meta["history"][-1]["entropy_mae_bits"],
                                f"time_to_{target_bits}_bits_s": time_to_target(meta["history"], target_bits)}
    return out
