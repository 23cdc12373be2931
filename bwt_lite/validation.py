"""Argument checks whose errors name the argument and the allowed values."""
from __future__ import annotations

from typing import Any, Iterable


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
