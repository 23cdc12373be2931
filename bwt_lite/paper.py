"""Numbers published in the papers (spec section 2), for printing beside ours. Never computed here.

Each entry: value, unit, and where it comes from, so a chapter can cite it precisely.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Published:
    value: float
    unit: str
    source: str
    note: str = ""


PAPER: dict[tuple[str, str], Published] = {
    ("bijection", "transformer"): Published(
        0.007, "bits", "Paper I, table (V=20, 2.67M parameters)",
        "0.003 in the v1 text; 0.0067 when the authors re-measured their 50k-step production checkpoint"),
    ("bijection", "mlp"): Published(
        1.85, "bits", "Paper I, capacity-matched MLP",
        "the authors' own MLP control measures 1.107 bits, the uniform plateau"),
    ("bijection", "lstm"): Published(0.009, "bits", "Paper I", "authors' re-runs 0.009-0.018"),
    ("bijection", "mamba"): Published(0.010, "bits", "Paper I", "authors' re-runs 0.012-0.013"),
}


def paper_value(tunnel: str, arch: str) -> Published | None:
    """The published entropy MAE for a (tunnel, architecture) cell, if the papers give one."""
    return PAPER.get((tunnel, arch))
