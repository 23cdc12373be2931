"""Benchmarks, run by hand and reported, never as timed tests.

``bwt bench [--scale lite paper] [--threads 1 2] [--device auto] [--amp auto] [--compile] [--train] [--json]``
measures, on whatever device it runs, each figure as min / median / max over repeats (on a shared
machine the spread says how much other work disturbed it):
- episodes/s of each tunnel generator at batch 256 on the device (exact posterior included), and a
  naive per-episode Python forward algorithm on the HMM (filter only, for comparison);
- ms per full training step (fresh batch, forward, backward, clipping, AdamW) of every architecture
  in :data:`bwt_lite.models.ARCHS` at every scale, for each tunnel that has presets, on a CPU at
  each thread count asked for, with the time the preset's whole run would take at the median speed
  (evaluations excluded) and the floating-point operations of one step (counted by
  ``torch.utils.flop_counter``, the same on every device: divided by a GPU's sustained FLOP/s, they
  estimate its step time where none was measured; operations torch has no count for, such as its
  fused LSTM, would be missing, so a step counted below one operation per parameter and token shows
  ``n/a``);
- the variants behind the defaults: Mamba's scans (forward + backward of one selective scan at the
  lite Mamba's sizes) and the transformer's two attention paths (forward + backward);
- the speed goals (:mod:`bwt_lite.orchestration.goals`): on a CPU, HMM and bijection episodes against
  reference generators and the Mamba step against the transformer's, at one thread; on a GPU, each
  paper-scale transformer on the eager trainer and on the fast path (steps/s, TFLOP/s, MFU);
- the wall time of the last ``make book`` and ``make test`` (``_build/timings/*.json``), or "unknown";
- with ``--train``, time to target: the wall time until the held-out entropy MAE of the bijection
  transformer first reaches the target (0.02 bits at lite scale, 0.01 at paper scale unless
  ``--target``), evaluations included, read at the preset's evaluation interval.
"""
from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch
import torch.nn.functional as F

from ..paths import CHECKOUT
from ..arguments import check_choice, check_int
from ..models import ARCHS
from ..models.mamba import D_STATE, EXPAND
from ..models.scan import selective_scan
from ..recipes import SCALES, TUNNEL_ARGS, Preset, get_preset
from ..train import fit, format_duration
from ..tunnels import Tunnel, make_tunnel
from ..runtime.device import amp_dtype, device_name, precision_name, resolve_device
from ..runtime.options import RunOptions
from .goals import cpu_ratios, format_goals, gpu_fast_path
from .timing import num_threads, stats, steps_per_second, timings

DEFAULT_TARGET_BITS = {"lite": 0.02, "paper": 0.01}
DEFAULT_THREADS = (1, 2)  # CPU thread counts every preset is timed at


def episodes_per_second(tunnel: str | Tunnel = "bijection", batch: int = 256, repeats: int = 20,
                        calls: int = 10, warmup: int = 3, device: str | torch.device = "cpu",
                        threads: int | None = None, seed: int = 0, **tunnel_args: Any) -> dict[str, float]:
    """Episodes/s of ``tunnel.sample(batch, g)`` (exact posterior included): ``{"min", "median", "max"}``
    over ``repeats`` timings of ``calls`` consecutive calls each, after ``warmup`` untimed calls.

    ``tunnel`` is a :class:`~bwt_lite.tunnels.base.Tunnel` or a name for :func:`make_tunnel` (with
    ``tunnel_args``). The generator lives on ``device``; CUDA work is synchronised around each
    timing. ``threads``, if given, sets torch's intra-op threads for the measurement (restored
    afterwards); on a shared machine the spread between min and max says how much the load
    disturbed the numbers.
    """
    t = make_tunnel(tunnel, **tunnel_args) if isinstance(tunnel, str) else tunnel
    if not isinstance(t, Tunnel):
        raise TypeError(f"tunnel must be a tunnel name or a Tunnel, got {type(tunnel).__name__}")
    batch, repeats = check_int("batch", batch, 1), check_int("repeats", repeats, 1)
    calls, warmup = check_int("calls", calls, 1), check_int("warmup", warmup, 0)
    if threads is not None:
        check_int("threads", threads, 1)
    dev = resolve_device(device)
    g = torch.Generator(device=dev).manual_seed(check_int("seed", seed, 0))

    def burst() -> None:
        for _ in range(calls):
            t.sample(batch, g)

    with num_threads(threads):
        times = timings(burst, repeats, warmup, dev)
    return stats([batch * calls / s for s in times])


def forward_filter_reference(T: list[list[list[float]]], E: list[list[list[float]]],
                             obs: list[list[int]]) -> list[list[list[float]]]:
    """Naive forward filter, uniform initial state, in plain Python floats (loops over episodes,
    time and states). A cross-check and a benchmark baseline for
    :func:`bwt_lite.tunnels.hmm.forward_filter`."""
    out = []
    for Tb, Eb, ob in zip(T, E, obs):
        S = len(Tb)
        alpha = [1.0 / S] * S
        rows = []
        for t, o in enumerate(ob):
            if t > 0:
                alpha = [sum(alpha[i] * Tb[i][j] for i in range(S)) for j in range(S)]
            alpha = [alpha[j] * Eb[j][o] for j in range(S)]
            z = sum(alpha)
            alpha = [a / z for a in alpha]
            rows.append(alpha)
        out.append(rows)
    return out


def hmm_naive_episodes_per_second(batch_size: int = 256, repeat: int = 3) -> float:
    """The HMM filter as a naive per-episode Python loop (no sampling), for comparison."""
    t, g = make_tunnel("hmm"), torch.Generator().manual_seed(0)
    T, E, obs = t.decode(t.sample(batch_size, g).inputs)
    T, E, obs = T.tolist(), E.tolist(), obs.tolist()
    return batch_size / min(timings(lambda: forward_filter_reference(T, E, obs), repeat))


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


def ms_per_step(tunnel: str, arch: str, scale: str = "lite", repeat: int = 20, device: str = "cpu") -> float:
    """Milliseconds per training step of a preset (float32, median), as chapter 2 times it."""
    return steps_per_second(get_preset(tunnel, arch, scale), device, "off", repeat=repeat, warmup=2)["ms_per_step"]


def scan_variants(tunnels: Iterable[str] = ("bijection", "hmm"), repeat: int = 5) -> list[dict[str, Any]]:
    """Mamba's scans (forward + backward, ms per call, median / min / max: see
    :func:`benchmark_scan`) at each lite Mamba's sizes, at its own batch and at
    the lite transformer's (the same parameter count), on the current thread count."""
    rows = []
    for tunnel in tunnels:
        mamba, transformer = get_preset(tunnel, "mamba", "lite"), get_preset(tunnel, "transformer", "lite")
        T = make_tunnel(**mamba.tunnel).seq_len
        for batch in sorted({mamba.train.batch_size, transformer.train.batch_size}):
            row = benchmark_scan((T,), batch=batch, d_inner=EXPAND * mamba.model.d_model, repeat=repeat)[0]
            rows.append({"tunnel": tunnel, "batch": batch, "d_inner": EXPAND * mamba.model.d_model, **row})
    return rows


SCAN_VARIANTS: dict[str, tuple[str, bool]] = {  # name: (method, states returned), for benchmark_scan
    "sequential": ("sequential", True), "parallel": ("parallel", True),
    "stepwise": ("stepwise", False),  # as in training: every SCAN_BLOCK-th state kept for the backward pass
    "stepwise_states": ("stepwise", True),  # every state kept (as when a hook reads hook_ssm_state)
}


def benchmark_scan(lengths: tuple[int, ...] = (16, 32, 64, 128, 256), batch: int = 16, d_inner: int = 64,
                   d_state: int = D_STATE, methods: tuple[str, ...] = tuple(SCAN_VARIANTS),
                   repeat: int = 7, backward: bool = True, seed: int = 0) -> list[dict[str, float]]:
    """Milliseconds per :func:`~bwt_lite.models.mamba.selective_scan` call of each variant (:data:`SCAN_VARIANTS`) on CPU, one
    row per length.

    With ``backward``, a call is forward + backward with respect to every input. Each call is timed
    on its own; row keys: ``length``, ``<variant>_ms`` (median of ``repeat``), ``<variant>_ms_min``
    and ``<variant>_ms_max``, and ``speedup`` = sequential / stepwise medians (the CPU default against
    the reference).
    """
    for name in methods:
        check_choice("method", name, tuple(SCAN_VARIANTS))
    g = torch.Generator().manual_seed(seed)
    rows = []
    for T in lengths:
        u, B, C = (torch.randn(batch, T, n, generator=g) for n in (d_inner, d_state, d_state))
        dt = F.softplus(torch.randn(batch, T, d_inner, generator=g) - 2)
        A = -torch.arange(1, d_state + 1.0).repeat(d_inner, 1)
        D = torch.randn(d_inner, generator=g)
        inputs = [t.requires_grad_(backward) for t in (u, dt, A, B, C, D)]
        row: dict[str, float] = {"length": T}
        for name in methods:
            method, states = SCAN_VARIANTS[name]

            def call() -> None:
                y, _ = selective_scan(*inputs, method=method, return_states=states)
                if backward:
                    y.square().sum().backward()
            times = [1000 * t for t in timings(call, repeat)]  # after one untimed warm-up call
            row[f"{name}_ms"] = statistics.median(times)
            row[f"{name}_ms_min"], row[f"{name}_ms_max"] = min(times), max(times)
        if "sequential_ms" in row and "stepwise_ms" in row:
            row["speedup"] = row["sequential_ms"] / row["stepwise_ms"]
        rows.append(row)
    return rows


def format_scan_benchmark(rows: list[dict[str, float]]) -> str:
    """The rows of :func:`benchmark_scan` as plain text: median (min-max) ms per call."""
    methods = [k[:-3] for k in rows[0] if k.endswith("_ms")] if rows else []
    lines = ["ms per call, median (min-max)",
             f"{'T':>5}" + "".join(f"{m:>24}" for m in methods) + "  stepwise vs sequential"]
    for r in rows:
        cells = "".join(f"{r[m + '_ms']:.2f} ({r[m + '_ms_min']:.2f}-{r[m + '_ms_max']:.2f})".rjust(24)
                        for m in methods)
        lines.append(f"{r['length']:>5}" + cells + (f"  {r['speedup']:.2f}x" if "speedup" in r else ""))
    return "\n".join(lines)


def attention_variants(tunnels: Iterable[str] = ("bijection", "hmm"), repeat: int = 10,
                       device: str | torch.device = "cpu") -> list[dict[str, Any]]:
    """The transformer's attention paths (forward + backward of one layer's q, k, v -> z, ms per call,
    min/median/max) at each lite transformer's sizes: ``explicit`` (the path with hook points, scaling
    and causal mask folded into one ``baddbmm``) and ``sdpa`` (``scaled_dot_product_attention``)."""
    dev = resolve_device(device)
    rows = []
    for tunnel in tunnels:
        p = get_preset(tunnel, "transformer", "lite")
        B, T, H = p.train.batch_size, make_tunnel(**p.tunnel).seq_len, p.model.n_heads
        dh = p.model.d_model // H
        g = torch.Generator().manual_seed(0)
        q, k, v, grad = (torch.randn(B, H, T, dh, generator=g).to(dev) for _ in range(4))
        bias = torch.full((T, T), float("-inf"), device=dev).triu(1)

        def explicit(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            s = torch.baddbmm(bias, q.flatten(0, 1), k.flatten(0, 1).transpose(1, 2), alpha=1 / math.sqrt(dh))
            return s.view(B, H, T, T).softmax(-1) @ v

        def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        row: dict[str, Any] = {"tunnel": tunnel, "batch": B, "heads": H, "length": T, "head_dim": dh}
        for name, attend in (("explicit", explicit), ("sdpa", sdpa)):
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            row[f"{name}_ms"] = stats([1000.0 * s for s in timings(
                lambda: attend(*leaves).backward(grad), repeat, 2, dev)])
        rows.append(row)
    return rows


def last_build_times(roots: Iterable[Path] | None = None) -> dict[str, Any]:
    """Wall time of the last ``make book`` and ``make test`` (``_build/timings/{book,test}.json``,
    written by the Makefile), each a dict with ``seconds``, ``exit_code`` and ``finished``, or
    ``"unknown"`` where no such file exists under ``roots`` (default: the working directory and the
    source checkout this package was imported from)."""
    if roots is None:
        roots = [Path.cwd(), CHECKOUT]
    out: dict[str, Any] = {}
    for name in ("book", "test"):
        out[name] = "unknown"
        for root in roots:
            path = Path(root) / "_build" / "timings" / f"{name}.json"
            try:
                out[name] = {**json.loads(path.read_text()), "source": str(path)}
                break
            except (OSError, ValueError):
                continue
    return out


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
    run = RunOptions(device=device, amp=amp, compile_model=compile_model, progress=progress, desc=preset.name)
    run = run.resolved()
    t0 = time.perf_counter()
    _, state = fit(preset.tunnel, preset.model, train, run=run,
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
        log: Callable[[str], None] | None = None, threads: Sequence[int] | None = None,
        variants: bool = True, goals: bool = True) -> dict[str, Any]:
    """Everything ``bwt bench`` measures, as a JSON-ready dict (see the module docstring); ``log``
    gets a line as each preset is timed (paper scale on a CPU takes minutes per preset).

    ``threads``: the CPU thread counts to time every preset at (default :data:`DEFAULT_THREADS` on a
    CPU, the current count on a GPU). ``variants``: also time the scan and attention variants. ``goals``: the
    speed figures against the project's goals (:mod:`bwt_lite.orchestration.goals`: the CPU ratios on a CPU,
    the fast path of the paper-scale transformers on a GPU)."""
    dev = resolve_device(device)
    presets, skipped = benchmark_presets(tunnels, archs, scales)
    if threads is None:
        threads = DEFAULT_THREADS if dev.type == "cpu" else (torch.get_num_threads(),)

    def timed(p: Preset, n: int) -> dict[str, Any]:
        row = steps_per_second(p, dev, amp, compile_model, repeat, threads=n)
        if log is not None:
            gflop = "n/a" if row["gflop_per_step"] is None else f"{row['gflop_per_step']:.1f}"
            ms = row["ms"]
            log(f"{p.name}, {n} thread(s): {ms['median']:.1f} ms/step (min {ms['min']:.1f}, max {ms['max']:.1f}), "
                f"{gflop} GFLOP/step")
        return row

    names = sorted(TUNNEL_ARGS) if tunnels is None else list(tunnels)
    out: dict[str, Any] = {
        "device": dev.type, "device_name": device_name(dev), "precision": precision_name(amp_dtype(amp, dev)),
        "compile": compile_model, "torch": torch.__version__, "threads": list(threads),
        "episodes_per_s": {name: episodes_per_second(name, repeats=10, device=dev) for name in names},
        "hmm_naive_python_filter_episodes_per_s": hmm_naive_episodes_per_second(),
        "train_steps": [timed(p, n) for n in threads for p in presets],
        "skipped": skipped,
        "last_build": last_build_times(),
    }
    if variants and dev.type == "cpu":
        lite = [t for t in names if t in ("bijection", "hmm")]
        with num_threads(threads[0]):
            out["scan_variants"] = scan_variants(lite) if archs is None or "mamba" in archs else []
            out["attention_variants"] = attention_variants(lite) if archs is None or "transformer" in archs else []
    if goals:
        if dev.type == "cpu":
            out["cpu_ratios"] = cpu_ratios()
        else:
            out["gpu_fast_path"] = gpu_fast_path(dev)
    if train:
        out["time_to_target"] = [train_to_target(scale, target_bits, dev, amp, compile_model, progress)
                                 for scale in scales]
    return out


def _range(s: dict[str, float], digits: int = 1) -> str:
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def format_table(result: dict[str, Any]) -> str:
    """The result of :func:`run` as plain text: medians, with (min-max) where measured."""
    rates = " | ".join(f"{k} {v['median'] if isinstance(v, dict) else v:,.0f}"
                       for k, v in result["episodes_per_s"].items())
    lines = [f"bwt bench on {result['device_name']}, {result['precision']}"
             f"{', compiled' if result['compile'] else ''}, torch {result['torch']}",
             f"episodes/s at batch 256 (median): {rates} "
             f"(naive Python HMM filter: {result['hmm_naive_python_filter_episodes_per_s']:,.0f})", ""]
    head = (f"{'preset':<34}{'threads':>8}{'params':>11}{'batch':>7}{'GFLOP/step':>12}"
            f"{'ms/step: median (min-max)':>29}  full run at the median")
    lines += [head, "-" * len(head)]
    for r in result["train_steps"]:
        gflop = "n/a" if r["gflop_per_step"] is None else f"{r['gflop_per_step']:.1f}"
        ms = _range(r["ms"]) if "ms" in r else f"{r['ms_per_step']:.1f}"
        lines.append(f"{r['preset']:<34}{r.get('threads', ''):>8}{r['params']:>11,}{r['batch_size']:>7}{gflop:>12}"
                     f"{ms:>29}  {format_duration(r['full_run_s'])} ({r['steps']:,} steps)")
    if result["skipped"]:
        lines.append("no preset yet for: " + ", ".join(result["skipped"]))
    for r in result.get("scan_variants", []):
        methods = [k[:-3] for k in r if k.endswith("_ms")]
        lines.append(f"Mamba scan, {r['tunnel']} (batch {r['batch']}, T {r['length']}, d_inner {r['d_inner']}), "
                     f"ms forward + backward: " + ", ".join(
                         f"{m} {_range({'median': r[m + '_ms'], 'min': r[m + '_ms_min'], 'max': r[m + '_ms_max']})}"
                         for m in methods))
    for r in result.get("attention_variants", []):
        lines.append(f"attention, {r['tunnel']} (batch {r['batch']}, {r['heads']} heads of {r['head_dim']}, T "
                     f"{r['length']}), ms forward + backward: explicit {_range(r['explicit_ms'], 2)}, "
                     f"sdpa {_range(r['sdpa_ms'], 2)}")
    lines += format_goals(result)
    for name, t in result.get("last_build", {}).items():
        lines.append(f"last make {name}: " + ("unknown" if not isinstance(t, dict) else
                                              f"{format_duration(t['seconds'])} (exit {t.get('exit_code')}, "
                                              f"finished {t.get('finished')})"))
    for r in result.get("time_to_target", []):
        if r["reached"]:
            lines.append(f"time to {r['target_bits']} bits: {r['preset']} after {format_duration(r['time_to_target_s'])} "
                         f"(step {r['steps']:,}; entropy MAE {r['entropy_mae_bits']:.4f}, KL {r['kl_bits']:.4f} bits; "
                         f"evaluated every {r['eval_every']:,} steps)")
        else:
            lines.append(f"time to {r['target_bits']} bits: {r['preset']} not reached in {r['steps']:,} steps "
                         f"({format_duration(r['wall_s'])}; entropy MAE {r['entropy_mae_bits']:.4f} bits)")
    return "\n".join(lines)
