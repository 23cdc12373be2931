"""Argument checks for the package's public functions: each error names the argument and the allowed
values (or range), before any work starts."""
from __future__ import annotations

from typing import Any, Iterable

import torch


def check_int(name: str, value: Any, low: int, allowed: str | None = None) -> int:
    """Validate an integer argument, naming it and the allowed values on error."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < low:
        raise ValueError(f"{name} must be >= {low}{' (' + allowed + ')' if allowed else ''}, got {value}")
    return value


def check_choice(name: str, value: Any, allowed: Iterable[str]) -> str:
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(map(str, allowed))}")
    return value


def check_positive(name: str, t: torch.Tensor) -> torch.Tensor:
    """``t`` as float64, checked > 0 everywhere (NaN fails too)."""
    t = t.to(torch.float64)
    if not bool((t > 0).all()):  # NaN fails this too
        raise ValueError(f"{name} must be > 0 (and not NaN) everywhere")
    return t


def check_float_tensor(name: str, t: Any) -> torch.Tensor:
    """``t`` itself, checked to be a floating-point torch tensor."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    return t
