"""What the lite transformer's recipe on each tunnel aims for on held-out episodes (:data:`LITE_TARGETS`): a
training target, to tell whether a run went as planned, never a verdict on a claim (the scorecard,
:mod:`bwt_lite.claims`, judges claims against the exact baselines). :func:`lite_target_status` says where a
run stands against it."""
from __future__ import annotations

from typing import Any

from ..arguments import check_choice

# tunnel -> (metric, "max" or "min", value)
LITE_TARGETS: dict[str, tuple[str, str, float]] = {
    "bijection": ("entropy_mae_bits", "max", 0.02),
    "hmm": ("entropy_mae_bits", "max", 0.05),
    "recall": ("accuracy", "min", 0.99),  # top-1 on recalled (seen) keys
    "regression": ("entropy_mae_bits", "max", 0.05),
    "sticky": ("entropy_mae_bits", "max", 0.02),
    "recurrence": ("entropy_mae_bits", "max", 0.1),
}


def meets_lite_target(tunnel: str, result: Any) -> bool:
    """Does an evaluation result (an EvalResult) meet the lite transformer's target (LITE_TARGETS)?"""
    check_choice("tunnel", tunnel, sorted(LITE_TARGETS))
    metric, kind, target = LITE_TARGETS[tunnel]
    value = getattr(result, metric)
    return value <= target if kind == "max" else value >= target


def lite_target_status(tunnel: str, result: Any) -> str:
    """One line: is an evaluation result (an EvalResult) within the recipe's training target? (Not a verdict.)"""
    met = meets_lite_target(tunnel, result)
    metric, kind, target = LITE_TARGETS[tunnel]
    value = getattr(result, metric)
    line = (f"{metric} {value:.4f} is {'within' if met else 'outside'} the recipe's training target "
            f"({'<=' if kind == 'max' else '>='} {target}; a check on the run, not a verdict on a claim)")
    if not met:
        line += "; this is a lite model on a CPU budget: the paper preset on a GPU is the way to go further"
    return line


__all__ = ["LITE_TARGETS", "lite_target_status", "meets_lite_target"]
