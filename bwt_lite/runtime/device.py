"""Where and how training runs: device, mixed precision (autocast) and ``torch.compile``.

None of this is part of a preset: it changes speed (and, for mixed precision, rounding), not the
recipe, so it never enters a checkpoint key. :func:`bwt_lite.train.fit` takes them in one
:class:`~bwt_lite.runtime.options.RunOptions`, resolved once, and ``bwt train`` as ``--device``,
``--amp`` and ``--compile``.

Mixed precision (``amp``):
- ``"auto"`` (default): off on CPU; on CUDA, bfloat16 autocast on GPUs with native bfloat16
  (compute capability 8.0 and newer: A100, L4, H100, RTX 30xx/40xx), float16 autocast with a
  gradient scaler on older ones (the free Colab T4 is 7.5: it would only emulate bfloat16);
- ``"bf16"`` / ``"fp16"``: that precision on any device (on CPU only useful to test the code path);
- ``"off"``: float32 throughout (the off switch).
Weights, optimizer state and evaluation stay float32 in every mode: autocast only runs the forward
matmuls in lower precision, and :func:`bwt_lite.evaluate.evaluate` always scores in float32.
"""
from __future__ import annotations

import contextlib
import platform
import re
from pathlib import Path
from typing import Any, Callable, ContextManager

import torch

from ..arguments import check_choice

AMP_MODES = ("auto", "bf16", "fp16", "off")
DEVICE_CHOICES = ("auto", "cpu", "cuda")  # or any torch device string, e.g. "cuda:1"


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"`` (or None) is the GPU when one is visible, else the CPU; anything else as given."""
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"unknown device {device!r}; use one of {', '.join(DEVICE_CHOICES)} "
                         f"or a torch device string such as 'cuda:0'") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but no CUDA GPU is visible; use --device cpu (or auto)")
    return dev


def native_bf16(device: torch.device) -> bool:
    """True on a CUDA GPU that computes in bfloat16 natively (compute capability >= 8.0)."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device) >= (8, 0)


def amp_dtype(amp: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype for ``amp`` on ``device``, or None for float32 (see the module docstring)."""
    check_choice("amp", amp, AMP_MODES)
    if amp == "off" or (amp == "auto" and device.type != "cuda"):
        return None
    if amp == "auto":
        return torch.bfloat16 if native_bf16(device) else torch.float16
    if device.type not in ("cuda", "cpu"):
        raise ValueError(f"amp={amp!r} is supported on cuda and cpu devices, not {device.type!r}; use amp='off'")
    return torch.bfloat16 if amp == "bf16" else torch.float16


def autocast(device: torch.device, dtype: torch.dtype | None) -> ContextManager[Any]:
    """``torch.autocast`` for ``dtype``, or a no-op when ``dtype`` is None."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def grad_scaler(device: torch.device, dtype: torch.dtype | None) -> Any | None:
    """A gradient scaler for float16 (its small range underflows gradients), else None."""
    if dtype != torch.float16:
        return None
    if hasattr(torch.amp, "GradScaler"):  # torch >= 2.3
        return torch.amp.GradScaler(device.type)
    return torch.cuda.amp.GradScaler()  # pragma: no cover - torch 2.2, CUDA only


def compiled(model: torch.nn.Module, enabled: bool) -> Callable[..., torch.Tensor]:
    """``torch.compile(model)`` when ``enabled`` (the training forward only), else ``model`` itself.

    The compiled wrapper shares the model's parameters; checkpoints and evaluation use ``model``.
    """
    if not enabled:
        return model
    if not hasattr(torch, "compile"):  # pragma: no cover - torch < 2.0 is not supported anyway
        raise ValueError("compile=True needs torch >= 2.0")
    return torch.compile(model)


def device_name(device: torch.device) -> str:
    """A human-readable name: the GPU's (e.g. 'Tesla T4') or 'cpu (N threads)'."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{device.type} ({threads_label(torch.get_num_threads())})"


def threads_label(n: int) -> str:
    """'1 thread', '2 threads'."""
    return f"{n} thread{'' if n == 1 else 's'}"


def cpu_model() -> str:
    """The processor and the kernel set torch dispatches to on it, e.g. 'AMD EPYC (family 26, model 2), AVX512'.

    Recorded with a CPU-trained checkpoint: one-thread training is bit-for-bit repeatable on one kind of
    processor, but another processor (or another kernel set) rounds differently, so a retrain elsewhere
    can take another path (lab notes, "Reproducibility across threads and seeds").
    """
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]  # the first processor is enough
    except OSError:
        first = ""
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines())}
    name = fields.get("model name") or platform.processor() or platform.machine() or "unknown CPU"
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return f"{name}, {torch.backends.cpu.get_cpu_capability()}"


def cpu_threads(name: str) -> int | None:
    """The thread count in a :func:`device_name` of the CPU ('cpu (2 threads)' -> 2); None for a GPU's name."""
    m = re.fullmatch(r"cpu \((\d+) threads?\)", name)
    return None if m is None else int(m.group(1))


def precision_name(dtype: torch.dtype | None) -> str:
    return {None: "fp32", torch.bfloat16: "bf16 autocast", torch.float16: "fp16 autocast"}[dtype]


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work (for honest timings); a no-op on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


__all__ = ["AMP_MODES", "DEVICE_CHOICES", "amp_dtype", "autocast", "compiled", "cpu_threads", "device_name",
           "grad_scaler", "native_bf16", "precision_name", "resolve_device", "synchronize"]
