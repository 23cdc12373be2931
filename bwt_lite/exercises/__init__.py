"""Checker functions for the chapters' exercises, one module per chapter.

A checker runs the student's function on seeded random inputs, compares the result with the
package's own answer, prints one line (a success line, or what is off and a hint) and returns a
bool. A wrong or unfinished answer never raises. Import the module of the chapter, e.g.
``from bwt_lite.exercises.bayes_by_hand import check_posterior``.
"""
from __future__ import annotations

from typing import Any, Callable


def call(fn: Callable, *args: Any) -> tuple[Any, str | None]:
    """Run a student's function: ``(result, None)``, or ``(None, message)`` if it raised."""
    try:
        return fn(*args), None
    except Exception as e:  # a student's unfinished code: report, never raise
        return None, f"your function raised {type(e).__name__}: {e}"


def report(ok: bool, message: str) -> bool:
    """Print the one-line verdict and return ``ok``."""
    print(("Correct! " if ok else "Not yet: ") + message)
    return ok


def pairs_text(keys: list[int], values: list[int], limit: int = 6) -> str:
    """The (key, value) pairs revealed so far, for a checker's message: "revealed 3→1, 0→4, ..."."""
    if not keys:
        return "no pairs revealed yet"
    shown = ", ".join(f"{k}\u2192{v}" for k, v in zip(keys[:limit], values[:limit]))
    more = f", ... ({len(keys) - limit} more)" if len(keys) > limit else ""
    return f"revealed {shown}{more}"
