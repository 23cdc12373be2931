"""Benchmarks, run by hand and reported, never as timed tests.

``bwt bench [--scale lite paper] [--device auto] [--amp auto] [--compile] [--train] [--json]``
measures, on whatever device it runs:
- episodes/s of each tunnel generator at batch 256 on the device (exact posterior included), and a
  naive per-episode Python forward algorithm on the HMM (filter only, for comparison);
- steps/s of a full training step (fresh batch, forward, backward, clipping, AdamW) of every
  architecture in :data:`bwt_lite.models.ARCHS` at every scale, for each tunnel that has presets,
  with the time the preset's whole run would take at that speed (evaluations excluded), and the
  floating-point operations of one step (counted by ``torch.utils.flop_counter``, the same on every
  device: divided by a GPU's sustained FLOP/s, they estimate its step time where none was measured;
  operations torch has no count for, such as its fused LSTM, would be missing, so a step counted
  below one operation per parameter and token shows ``n/a``);
- with ``--train``, time to target: the wall time until the held-out entropy MAE of the bijection
  transformer first reaches the target (0.02 bits at lite scale, 0.01 at paper scale unless
  ``--target``), evaluations included, read at the preset's evaluation interval.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Sequence

import torch
from torch.utils.flop_counter import FlopCounterMode

from .device import amp_dtype, compiled, device_name, grad_scaler, precision_name, resolve_device, synchronize
from .models import ARCHS
from .presets import SCALES, TUNNEL_ARGS, Preset, get_preset
from .train import fit, format_duration, init_model, make_optimizer, train_step
from .tunnels import make_tunnel

DEFAULT_TARGET_BITS = {"lite": 0.02, "paper": 0.01}


def _timeit(fn, repeat: int, warmup: int = 2, device: torch.device | None = None) -> float:
    for _ in range(warmup):
        fn()
    if device is not None:
        synchronize(device)
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    if device is not None:
        synchronize(device)
    return (time.perf_counter() - t0) / repeat


def episodes_per_second(tunnel: str = "bijection", batch_size: int = 256, repeat: int = 50,
                        device: str | torch.device = "cpu") -> float:
    """Episodes/s of a tunnel's generator (exact posterior included) on ``device``."""
    dev = resolve_device(device)
    t, g = make_tunnel(tunnel), torch.Generator(device=dev).manual_seed(0)
    return batch_size / _timeit(lambda: t.sample(batch_size, g), repeat, device=dev)


def hmm_naive_episodes_per_second(batch_size: int = 256, repeat: int = 3) -> float:
    """The HMM filter as a naive per-episode Python loop (no sampling), for comparison."""
    from .tunnels.hmm import _forward_filter_reference

    t, g = make_tunnel("hmm"), torch.Generator().manual_seed(0)
    T, E, obs = t.decode(t.sample(batch_size, g).inputs)
    T, E, obs = T.tolist(), E.tolist(), obs.tolist()
    return batch_size / _timeit(lambda: _forward_filter_reference(T, E, obs), repeat, warmup=1)


def benchmark_presets(tunnels: Iterable[str] | None = None, archs: Iterable[str] | None = None,
                      scales: Iterable[str] = SCALES) -> tuple[list[Preset], list[str]]:
    """The presets to time (every tunnel with presets x every architecture x ``scales``), and the
    combinations skipped because they have no preset yet (e.g. an architecture just added)."""
    presets, skipped = [], []
    for scale in scales:
        for tunnel in (sorted(TUNNEL_ARGS) if tunnels is None else tunnels):
            for arch in (ARCHS if archs is None else archs):
                try:
                    presets.append(get_preset(tunnel, arch, scale))
                except (KeyError, ValueError):  # no sizes or recipe for it at this scale
                    skipped.append(f"{tunnel}-{arch}-{scale}")
    return presets, skipped


def steps_per_second(preset: Preset, device: str | torch.device = "cpu", amp: str = "auto",
                     compile_model: bool = False, repeat: int | None = None,
                     warmup: int | None = None) -> dict[str, Any]:
    """Time full training steps of ``preset`` (batch, forward, backward, clip, AdamW) on ``device``.

    Returns a row: preset name, parameters, batch size, steps/s, ms/step, and the time the preset's
    whole run would take at that speed. Default repeats: 50 on a GPU; on CPU 20 lite, 3 paper.
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

    with FlopCounterMode(display=False) as counter:  # one eager step, counted (not timed)
        one(model)
    seconds = _timeit(one, repeat, warmup, device=dev)
    tokens = preset.train.batch_size * t.seq_len
    counted = counter.get_total_flops()
    gflop = counted / 1e9 if counted >= model.n_params * tokens else None  # else: ops torch cannot count
    return {"preset": preset.name, "tunnel": preset.tunnel["tunnel"], "arch": preset.model.arch,
            "scale": preset.scale, "params": model.n_params, "batch_size": preset.train.batch_size,
            "steps_per_s": 1.0 / seconds, "ms_per_step": 1000.0 * seconds, "steps": preset.train.steps,
            "full_run_s": preset.train.steps * seconds, "gflop_per_step": gflop,
            "tflop_per_s": None if gflop is None else gflop / seconds / 1000.0, "repeat": repeat}


def ms_per_step(tunnel: str, arch: str, scale: str = "lite", repeat: int = 20, device: str = "cpu") -> float:
    """Milliseconds per training step of a preset (float32), as chapter 2 times it."""
    return steps_per_second(get_preset(tunnel, arch, scale), device, "off", repeat=repeat, warmup=2)["ms_per_step"]


def time_to_target(history: list[dict[str, float]], target_bits: float) -> float | None:
    """Training seconds until the held-out entropy MAE first reached ``target_bits`` (None if never)."""
    for row in history:
        if row["entropy_mae_bits"] <= target_bits:
            return row["elapsed_s"]
    return None


def train_to_target(scale: str = "lite", target_bits: float | None = None, device: str | torch.device = "cpu",
                    amp: str = "auto", compile_model: bool = False, progress: bool = False,
                    max_steps: int | None = None) -> dict[str, Any]:
    """Train the bijection transformer at ``scale`` until its held-out entropy MAE reaches ``target_bits``.

    Nothing is saved. Stops at the target, or at the preset's last step (``max_steps`` caps it).
    """
    preset = get_preset("bijection", "transformer", scale)
    target = DEFAULT_TARGET_BITS[scale] if target_bits is None else target_bits
    train = preset.train if max_steps is None else preset.with_train(steps=min(max_steps, preset.train.steps)).train
    dev = resolve_device(device)
    t0 = time.perf_counter()
    _, state = fit(preset.tunnel, preset.model, train, progress=progress, device=dev, amp=amp,
                   compile_model=compile_model, desc=preset.name,
                   stop=lambda row: row["entropy_mae_bits"] <= target)
    last = state.history[-1]
    reached = time_to_target(state.history, target)
    return {"preset": preset.name, "target_bits": target, "reached": reached is not None,
            "time_to_target_s": reached, "steps": state.step, "wall_s": time.perf_counter() - t0,
            "entropy_mae_bits": last["entropy_mae_bits"], "kl_bits": last["kl_bits"],
            "eval_every": preset.train.eval_every}


def run(scales: Sequence[str] = SCALES, tunnels: Sequence[str] | None = None, archs: Sequence[str] | None = None,
        device: str | torch.device = "auto", amp: str = "auto", compile_model: bool = False, train: bool = False,
        target_bits: float | None = None, repeat: int | None = None, progress: bool = False,
        log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Everything ``bwt bench`` measures, as a JSON-ready dict (see the module docstring); ``log``
    gets a line as each preset is timed (paper scale on a CPU takes minutes per preset)."""
    dev = resolve_device(device)
    presets, skipped = benchmark_presets(tunnels, archs, scales)

    def timed(p: Preset) -> dict[str, Any]:
        row = steps_per_second(p, dev, amp, compile_model, repeat)
        if log is not None:
            gflop = "n/a" if row["gflop_per_step"] is None else f"{row['gflop_per_step']:.1f}"
            log(f"{p.name}: {row['steps_per_s']:.2f} steps/s, {gflop} GFLOP/step")
        return row

    out: dict[str, Any] = {
        "device": dev.type, "device_name": device_name(dev), "precision": precision_name(amp_dtype(amp, dev)),
        "compile": compile_model, "torch": torch.__version__, "threads": torch.get_num_threads(),
        "episodes_per_s": {name: episodes_per_second(name, device=dev)
                           for name in (sorted(TUNNEL_ARGS) if tunnels is None else tunnels)},
        "hmm_naive_python_filter_episodes_per_s": hmm_naive_episodes_per_second(),
        "train_steps": [timed(p) for p in presets],
        "skipped": skipped,
    }
    if train:
        out["time_to_target"] = [train_to_target(scale, target_bits, dev, amp, compile_model, progress)
                                 for scale in scales]
    return out


def format_table(result: dict[str, Any]) -> str:
    """The result of :func:`run` as a plain-text table."""
    lines = [f"bwt bench on {result['device_name']}, {result['precision']}"
             f"{', compiled' if result['compile'] else ''}, torch {result['torch']}",
             "episodes/s at batch 256: " + " | ".join(f"{k} {v:,.0f}" for k, v in result["episodes_per_s"].items())
             + f" (naive Python HMM filter: {result['hmm_naive_python_filter_episodes_per_s']:,.0f})", ""]
    head = (f"{'preset':<34}{'params':>11}{'batch':>7}{'GFLOP/step':>12}{'steps/s':>10}{'ms/step':>10}"
            f"  full run at this speed")
    lines += [head, "-" * len(head)]
    for r in result["train_steps"]:
        gflop = "n/a" if r["gflop_per_step"] is None else f"{r['gflop_per_step']:.1f}"
        lines.append(f"{r['preset']:<34}{r['params']:>11,}{r['batch_size']:>7}{gflop:>12}"
                     f"{r['steps_per_s']:>10.2f}"
                     f"{r['ms_per_step']:>10.1f}  {format_duration(r['full_run_s'])} ({r['steps']:,} steps)")
    if result["skipped"]:
        lines.append("no preset yet for: " + ", ".join(result["skipped"]))
    for r in result.get("time_to_target", []):
        if r["reached"]:
            lines.append(f"time to {r['target_bits']} bits: {r['preset']} after {format_duration(r['time_to_target_s'])} "
                         f"(step {r['steps']:,}; entropy MAE {r['entropy_mae_bits']:.4f}, KL {r['kl_bits']:.4f} bits; "
                         f"evaluated every {r['eval_every']:,} steps)")
        else:
            lines.append(f"time to {r['target_bits']} bits: {r['preset']} not reached in {r['steps']:,} steps "
                         f"({format_duration(r['wall_s'])}; entropy MAE {r['entropy_mae_bits']:.4f} bits)")
    return "\n".join(lines)
