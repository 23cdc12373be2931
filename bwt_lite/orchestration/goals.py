"""The speed figures ``bwt bench`` reports against the project's goals.

- On a CPU, one thread (:func:`cpu_ratios`): HMM episodes (exact posterior included) against the
  per-instance generator of :mod:`bwt_lite.orchestration.reference_samplers` (goal >= 300x), bijection
  episodes against a plain vectorised sampler without the posterior (goal >= 1x), and the lite
  Mamba's training step against the lite transformer's at the same parameter count and batch
  (goal <= 2x).
- On a GPU (:func:`gpu_fast_path`): each paper-scale transformer alone on the eager trainer and on
  the fast path (:mod:`bwt_lite.fast_train`), with and without torch.compile, and three of its seeds as one stacked model
  (:mod:`bwt_lite.fast_stack`): steps/s, model TFLOP/s and MFU against the card's bf16 peak.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch

from ..fast_stack import stack_and_alone
from ..fast_train import eager_and_fast
from ..recipes import get_preset
from ..tunnels import make_tunnel
from .reference_samplers import bijection_plain, hmm_per_instance
from .timing import num_threads, steps_per_second

GOALS = {"hmm_vs_per_instance": 300.0, "bijection_vs_plain": 1.0, "mamba_vs_transformer": 2.0}


def _median_rate(fn: Callable[[], int], repeats: int) -> float:
    """Median items/s over ``repeats`` timed calls of ``fn`` (which returns how many items it made), after one warm-up."""
    fn()
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = fn()
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def cpu_ratios(repeats: int = 7, per_instance: int = 100) -> dict[str, Any]:
    """The three CPU ratios at one thread (median rates over ``repeats``), each with its goal and whether it is met."""
    out: dict[str, Any] = {"threads": 1}
    with num_threads(1):
        g = torch.Generator().manual_seed(0)
        hmm, bij = make_tunnel("hmm"), make_tunnel("bijection")
        ours_hmm = _median_rate(lambda: hmm.sample(256, g).batch_size, repeats)
        ref_hmm = _median_rate(lambda: len(hmm_per_instance(per_instance, seed=int(g.initial_seed()))), 3)
        ours_bij = _median_rate(lambda: bij.sample(256, g).batch_size, repeats)
        plain_bij = _median_rate(lambda: bijection_plain(256, g)[0].shape[0], repeats)
        out["hmm_vs_per_instance"] = {"ours_episodes_per_s": ours_hmm, "reference_episodes_per_s": ref_hmm,
                                      "ratio": ours_hmm / ref_hmm}
        out["bijection_vs_plain"] = {"ours_episodes_per_s": ours_bij, "reference_episodes_per_s": plain_bij,
                                     "ratio": ours_bij / plain_bij}
        rows = []
        for tunnel in ("bijection", "hmm"):
            t = get_preset(tunnel, "transformer", "lite")
            m = get_preset(tunnel, "mamba", "lite").with_train(batch_size=t.train.batch_size)
            ms_t = steps_per_second(t, "cpu", "off", repeat=repeats, threads=1)
            ms_m = steps_per_second(m, "cpu", "off", repeat=repeats, threads=1)
            rows.append({"tunnel": tunnel, "batch": t.train.batch_size, "transformer_params": ms_t["params"],
                         "mamba_params": ms_m["params"], "transformer_ms": ms_t["ms_per_step"],
                         "mamba_ms": ms_m["ms_per_step"], "ratio": ms_m["ms_per_step"] / ms_t["ms_per_step"]})
        out["mamba_vs_transformer"] = {"rows": rows, "ratio": max(r["ratio"] for r in rows)}
    for name, goal in GOALS.items():
        ratio = out[name]["ratio"]
        out[name]["goal"] = goal
        out[name]["met"] = ratio <= goal if name == "mamba_vs_transformer" else ratio >= goal
    return out


def gpu_fast_path(device: torch.device, steps: int = 200,
                  tunnels: tuple[str, ...] = ("bijection", "hmm", "recall", "regression")) -> list[dict[str, Any]]:
    """Each paper-scale transformer alone, eager and fast path (:func:`bwt_lite.fast_train.eager_and_fast`)."""
    rows = []
    for tunnel in tunnels:
        preset = get_preset(tunnel, "transformer", "paper")
        row = eager_and_fast(preset, device, steps=steps, compile=True)
        torch.cuda.empty_cache()
        stack = stack_and_alone(preset, device, steps=steps)  # three seeds as one stacked model
        row.update({k: stack[k] for k in ("stack_steps_per_s", "stack_tflops", "stack_mfu", "seed_speedup")})
        rows.append(row)
        torch.cuda.empty_cache()
    return rows


def format_goals(result: dict[str, Any]) -> list[str]:
    """Text lines for :func:`cpu_ratios` and :func:`gpu_fast_path` results in a ``bwt bench`` result."""
    lines = []
    r = result.get("cpu_ratios")
    if r:
        def mark(name: str) -> str:
            return "met" if r[name]["met"] else "missed"

        h, b, m = r["hmm_vs_per_instance"], r["bijection_vs_plain"], r["mamba_vs_transformer"]
        lines += [f"HMM episodes vs a per-instance generator (1 thread): {h['ours_episodes_per_s']:,.0f} vs "
                  f"{h['reference_episodes_per_s']:,.0f}/s, {h['ratio']:.0f}x (goal >= {h['goal']:g}x: {mark('hmm_vs_per_instance')})",
                  f"bijection episodes vs a plain vectorised sampler (1 thread): {b['ours_episodes_per_s']:,.0f} vs "
                  f"{b['reference_episodes_per_s']:,.0f}/s, {b['ratio']:.2f}x (goal >= {b['goal']:g}x: "
                  f"{mark('bijection_vs_plain')})"]
        lines += [f"Mamba vs transformer step, {row['tunnel']} lite at batch {row['batch']} (1 thread): "
                  f"{row['mamba_ms']:.1f} vs {row['transformer_ms']:.1f} ms, {row['ratio']:.2f}x" for row in m["rows"]]
        lines.append(f"  worst {m['ratio']:.2f}x (goal <= {m['goal']:g}x: {mark('mamba_vs_transformer')})")
    for row in result.get("gpu_fast_path", []):
        lines.append(f"{row['preset']} on {row['device']}: eager {row['eager_steps_per_s']:.1f} steps/s "
                     f"({row['eager_tflops']:.1f} TFLOP/s), fast path {row['fast_steps_per_s']:.1f} steps/s "
                     f"({row['fast_tflops']:.1f} TFLOP/s, MFU {row['fast_mfu']}), {row['speedup']:.1f}x")
        if "compiled_steps_per_s" in row:
            lines.append(f"  compiled: {row['compiled_steps_per_s']:.1f} steps/s ({row['compiled_tflops']:.1f} TFLOP/s, "
                         f"MFU {row['compiled_mfu']}), {row['compile_speedup']:.2f}x the fast path")
        if "stack_steps_per_s" in row:
            lines.append(f"  3 seeds stacked: {row['stack_steps_per_s']:.1f} steps/s ({row['stack_tflops']:.1f} TFLOP/s, "
                         f"MFU {row['stack_mfu']}), {row['seed_speedup']:.2f}x the seed-steps of one run")
    return lines


__all__ = ["GOALS", "cpu_ratios", "format_goals", "gpu_fast_path"]
