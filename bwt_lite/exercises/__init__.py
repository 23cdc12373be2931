"""Checker functions for the chapters' exercises, one module per chapter.

A checker runs the student's function on seeded random inputs, compares the result with the
package's own answer, prints one line (a success line, or what is off and a hint) and returns a
bool. A wrong or unfinished answer never raises. Import the module of the chapter, e.g.
``from bwt_lite.exercises.bayes_by_hand import check_posterior``.

A chapter's exercise template raises ``NotImplementedError`` until the student writes it. The checker
then prints :data:`YOUR_TURN`, with no hint: the built book runs the template, and a hint printed
there would give the answer away before the student has tried.
"""
from __future__ import annotations

from typing import Any, Callable

import torch


# What a checker prints for an exercise template not yet written (it raises NotImplementedError).
YOUR_TURN = "Your turn: write the function in the cell above, then run this cell again."
_NOT_WRITTEN = "\x00not written\x00"  # a message marker that report() turns into YOUR_TURN


def call(fn: Callable, *args: Any) -> tuple[Any, str | None]:
    """Run a student's function: ``(result, None)``, or ``(None, message)`` if it raised."""
    try:
        return fn(*args), None
    except NotImplementedError:  # the template, not yet written: no hint
        return None, _NOT_WRITTEN
    except Exception as e:  # a student's unfinished code: report, never raise
        return None, f"your function raised {type(e).__name__}: {e}"


def answer_tensor(got: Any, shape: tuple[int, ...] | torch.Size, what: str, *,
                  allow_singletons: bool = False) -> tuple[torch.Tensor | None, str | None]:
    """A student's answer as a float64 CPU tensor of ``shape``, or ``(None, message)`` saying why not.

    With ``allow_singletons``, extra or missing dimensions of size 1 are accepted and reshaped away.
    """
    shape = torch.Size(shape)
    if got is None:
        return None, f"your function returned None; return {what}."
    try:
        x = torch.as_tensor(got).detach().to("cpu", torch.float64)
    except Exception:
        return None, f"could not read your answer ({type(got).__name__}) as numbers; return {what}."
    if allow_singletons and x.shape != shape and [d for d in x.shape if d != 1] == [d for d in shape if d != 1]:
        x = x.reshape(shape)
    if x.shape != shape:
        return None, f"your answer has shape {tuple(x.shape)}, expected {tuple(shape)}: return {what}."
    return x, None


def report(ok: bool, message: str) -> bool:
    """Print the one-line verdict and return ``ok`` (:data:`YOUR_TURN` for an unwritten template)."""
    if not ok and _NOT_WRITTEN in message:
        print(YOUR_TURN)
        return False
    print(("Correct! " if ok else "Not yet: ") + message)
    return ok


def pairs_text(keys: list[int], values: list[int], limit: int = 6) -> str:
    """The (key, value) pairs revealed so far, for a checker's message: "revealed 3→1, 0→4, ..."."""
    if not keys:
        return "no pairs revealed yet"
    shown = ", ".join(f"{k}\u2192{v}" for k, v in zip(keys[:limit], values[:limit]))
    more = f", ... ({len(keys) - limit} more)" if len(keys) > limit else ""
    return f"revealed {shown}{more}"


def answer_number(got: Any) -> tuple[float | None, str | None]:
    """A student's answer as one float, or ``(None, message)`` saying why not (None, not numeric,
    several values). NaN is returned as it is, for the checker to judge."""
    if got is None:
        return None, "your function returned None; return one number."
    try:
        x = torch.as_tensor(got, dtype=torch.float64)
    except Exception:
        return None, f"could not read your answer ({type(got).__name__}) as a number; return one number."
    if x.numel() != 1:
        return None, f"your answer has {x.numel()} numbers (shape {tuple(x.shape)}); return one number."
    return x.item(), None
