"""The verdict rules of the claims scorecard (pure functions of numbers), their thresholds, and the
formatting helpers every row's text uses."""
from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from ..paper import Published

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "partly", "not reproduced", "not testable here"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE)

FACTOR = 3.0  # an error in bits "has the paper's size" within 3x of it, either way
ACCURACY_POINTS = 5.0  # an accuracy has the paper's size within 5 percentage points
SPEEDUP_FACTOR = 1.5  # a speedup has the paper's size within 1.5x (or with the paper's value in our 95 % interval)
HEAD_RAISE = 1.1  # removing a head "raises the error" when the MAE grows by more than 10 % (same episodes)
PROBE_EMBEDDING_MAX = 0.1  # a belief probe reads ~nothing at the embedding: held-out R^2 below this
PROBE_FINAL_MIN = 0.8  # ... and most of the posterior after the last block: R^2 at least this
RISE_TOLERANCE = 0.02  # a per-layer series "rises" when no layer falls below the previous by more than this
SIMPLEX_GAP = 0.05  # Mamba's entropy R^2 must exceed the LSTM's (and 0) by this to count as "higher"
SETTLED = 0.9  # the key frame has "formed" once its similarity to the final frame stays >= this
EARLY = 0.5  # ... within this fraction of training
KEEPS_FALLING = 3.0  # and the error "keeps falling" when it drops at least this factor afterwards
LENGTHS = (30, 50)  # the lengths of the paper's length-generalisation figures


# ------------------------------------------------------------------------------------------------
# Verdict rules (pure functions of numbers)


def ratio(ours: float, paper: float) -> float:
    """How far apart two positive numbers are, as a factor >= 1 (inf when either is <= 0 or NaN)."""
    if not (ours > 0 and paper > 0):
        return math.inf
    return max(ours / paper, paper / ours)


def within_factor(ours: float, paper: float, factor: float = FACTOR) -> bool:
    """Is ``ours`` within ``factor`` of ``paper``, either way (both positive)?"""
    return ratio(ours, paper) <= factor


def within_points(ours: float, paper: float, points: float = ACCURACY_POINTS) -> bool:
    """Are two percentages within ``points`` percentage points?"""
    return abs(ours - paper) <= points


def size_verdict(direction_holds: bool, size_holds: bool) -> str:
    """The basic rule: wrong direction -> not reproduced; right direction and size -> reproduced;
    right direction, wrong size -> partly."""
    if not direction_holds:
        return NOT_REPRODUCED
    return REPRODUCED if size_holds else PARTLY


def cell_verdict(paper_succeeds: bool, ours_succeeds: bool, size_holds: bool) -> str:
    """An (architecture, tunnel) cell. The paper claims success (its number passes the tunnel's
    threshold) or failure; ours must do the same (success: realise the primitive, baselines
    included), then :func:`size_verdict` on the size."""
    return size_verdict(ours_succeeds == paper_succeeds, size_holds)


def count_verdict(parts: Sequence[bool]) -> str:
    """A claim of several parts: all hold -> reproduced, some -> partly, none -> not reproduced."""
    parts = list(parts)
    if not parts:
        raise ValueError("count_verdict needs at least one part")
    return REPRODUCED if all(parts) else (PARTLY if any(parts) else NOT_REPRODUCED)


def trend(values: Sequence[float], tolerance: float = 0.0) -> str:
    """``"up"`` when no step falls by more than ``tolerance`` and the last value is above the first,
    ``"down"`` for the mirror image, ``"flat"`` when no step moves by more than ``tolerance`` (or there
    is a single value), else ``"mixed"``."""
    v = [float(x) for x in values]
    if len(v) < 2:
        return "flat"
    steps = [b - a for a, b in zip(v, v[1:])]
    if all(s >= -tolerance for s in steps) and v[-1] > v[0]:
        return "up"
    if all(s <= tolerance for s in steps) and v[-1] < v[0]:
        return "down"
    return "flat" if all(abs(s) <= tolerance for s in steps) else "mixed"


def speedup_verdict(mean: float, low: float, high: float, paper: float) -> str:
    """Paper II's speedup: slower or equal -> not reproduced; the paper's value within our interval
    or within :data:`SPEEDUP_FACTOR` of our mean -> reproduced; faster but not by that much -> partly."""
    size = (low <= paper <= high) or within_factor(mean, paper, SPEEDUP_FACTOR)
    return size_verdict(mean > 1.0, size)


# ------------------------------------------------------------------------------------------------
# Formatting helpers


def num(x: float | None, digits: int = 3) -> str:
    """A number for a reason line: 3 significant digits, plain where short."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 1e-3 and abs(x) < 1e5:
        return f"{x:.{digits}g}"
    return f"{x:.{max(digits - 1, 1)}e}"


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def times(r: float) -> str:
    return f"x{r:.1f}" if r < 100 else f"x{r:.0f}"


def jsonable(obj: Any) -> Any:
    """Tensors to lists, NaN/inf to None, tuples to lists, recursively."""
    if isinstance(obj, torch.Tensor):
        return jsonable(obj.tolist())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def published_text(pub: Published) -> str:
    return f"{pub.value:g} {pub.unit}".strip()
