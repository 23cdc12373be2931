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
SIMPLEX_GAP = 0.05  # an entropy R^2 must exceed another (and 0) by this to count as "higher"
LEARNED = 0.5  # a comparison model "learned" when its entropy MAE is at most this fraction of the uniform belief's
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


def _parts_rule(verdict: str, holds: dict[str, bool], what: str) -> str:
    """``"<verdict>: <what> <the parts that hold>, not <the others>"``: the rule that decided a count verdict."""
    yes, no = [k for k, v in holds.items() if v], [k for k, v in holds.items() if not v]
    if not no:
        return f"{verdict}: {what} {' and '.join(yes)}"
    if not yes:
        return f"{verdict}: {what} neither {' nor '.join(no)}"
    return f"{verdict}: {what} {' and '.join(yes)}, not {' nor '.join(no)}"


def manifold_verdict(all_points: float, within_position: float, criterion: float) -> tuple[str, str]:
    """value-manifold-pc1: the paper's criterion, PC1's share of the variance > ``criterion``, over all
    (episode, position) points and within position (each point minus its position's mean). Both ->
    reproduced; one -> partly; neither (or nan) -> not reproduced. PC1 of the per-position means is
    no argument: it never earns a verdict. Returns (verdict, the rule that decided it)."""
    holds = {"over all points": all_points > criterion, "within position": within_position > criterion}
    verdict = count_verdict(list(holds.values()))
    return verdict, _parts_rule(verdict, holds, f"PC1 > {criterion:.0%} holds")


def unfurling_verdict(all_points: Sequence[float], within_position: Sequence[float]) -> tuple[str, str]:
    """manifold-unfurling: PC1's share at each training snapshot, first to last, over all points and
    within position. It grows (last > first) both ways -> reproduced; one way -> partly; neither ->
    not reproduced. Returns (verdict, the rule that decided it)."""
    holds = {"over all points": all_points[-1] > all_points[0],
             "within position": within_position[-1] > within_position[0]}
    verdict = count_verdict(list(holds.values()))
    return verdict, _parts_rule(verdict, holds, "PC1's share grows from the first snapshot to the last")


def simplex_verdict(mamba: float, window: float, lstm: float, lstm_learned: bool,
                    gap: float = SIMPLEX_GAP) -> tuple[str, str]:
    """mamba-simplex, on the held-out entropy R^2 read from the final representation. ``window``: the
    same read-out from the best short window's exact belief; Mamba must exceed it (and 0) by ``gap``,
    else not reproduced: a representation that carries no more than a short window's belief does not
    earn the claim. Then reproduced against an LSTM that learned (``lstm_learned``) and stays ``gap``
    below Mamba; partly when the LSTM carries as much, or never learned (beating a model that learned
    nothing is no evidence). Returns (verdict, the rule that decided it)."""
    if not mamba > max(window, 0.0) + gap:
        return NOT_REPRODUCED, (f"{NOT_REPRODUCED}: Mamba's R^2 does not exceed the best window read-out's by "
                                f"{gap:g}")
    if not lstm_learned:
        return PARTLY, (f"{PARTLY}: Mamba's R^2 exceeds the window read-outs', but the LSTM never learned, so the "
                        "gap to it is no evidence")
    if mamba > max(lstm, 0.0) + gap:
        return REPRODUCED, (f"{REPRODUCED}: Mamba's R^2 exceeds the window read-outs' and the trained LSTM's by "
                            f"{gap:g}")
    return PARTLY, f"{PARTLY}: Mamba's R^2 exceeds the window read-outs', not the trained LSTM's by {gap:g}"


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
