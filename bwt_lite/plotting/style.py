"""What the figures of every chapter share: the colours that mean the same thing in every chapter,
the conversion of tensors, arrays and lists to NumPy, :func:`panels`, which makes every figure (at
most two panels a row, no wider than :data:`~bwt_lite.display.MAX_WIDTH_IN`, so the book shows it at
nearly its own size), and how a widget shows its figure.

The book-wide matplotlib settings (figure size, fonts, retina PNGs) are set once, by
:func:`bwt_lite.display.set_figure_style` (:data:`bwt_lite.display.FIGURE_STYLE`), which
:func:`bwt_lite.notebook.setup_notebook` calls at the top of every chapter.
"""
from __future__ import annotations

from typing import Any, TypeVar

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from matplotlib.figure import Figure

from ..display import MAX_WIDTH_IN
from ..models import BACKBONES

# Colours used across the chapters.
BAYES_COLOR = "#1f77b4"  # the exact posterior
FORMULA_COLOR = "#d62728"  # a closed-form reference
ELIMINATED_COLOR = "#7f7f7f"  # hypotheses ruled out by the evidence
MARGINAL_COLOR = "#ff7f0e"  # what a model that cannot look back can do
# One colour and one marker and line style per architecture in every figure that compares them: each
# backbone class says how it is drawn (its ``plot_color`` and ``plot_style``, beside its code in
# bwt_lite/models/), so that curves that coincide (the MLP's and the LSTM's context-blind plateaus, a
# transformer and a Mamba both at accuracy 1) stay distinguishable. A backbone without them is an error
# in a figure, not a silent default.
ARCH_COLORS: dict[str, str] = {arch: b.plot_color for arch, b in BACKBONES.items() if hasattr(b, "plot_color")}
ARCH_STYLES: dict[str, dict[str, Any]] = {arch: b.plot_style for arch, b in BACKBONES.items()
                                          if hasattr(b, "plot_style")}

T = TypeVar("T")


def arch_entry(table: dict[str, T], arch: str, name: str) -> T:
    """``table[arch]``; for an architecture the table lacks, a ValueError naming the table ``name`` to add
    it to (a figure never draws a new architecture in a default colour or style)."""
    if arch not in table:
        raise ValueError(f"architecture {arch!r} has no entry in {name}; add one (known: {', '.join(table)})")
    return table[arch]


def _drawn(arch: str, attr: str) -> Any:
    if arch not in BACKBONES:
        raise ValueError(f"architecture {arch!r} is not one of bwt_lite.models.BACKBONES ({', '.join(BACKBONES)})")
    if not hasattr(BACKBONES[arch], attr):
        raise ValueError(f"architecture {arch!r}: its backbone {BACKBONES[arch].__name__} has no {attr}; add one "
                         f"beside it in bwt_lite/models/ (how every figure draws it)")
    return getattr(BACKBONES[arch], attr)


def arch_color(arch: str) -> str:
    """The colour of ``arch`` in every figure that compares architectures (its backbone's ``plot_color``)."""
    return _drawn(arch, "plot_color")


def arch_style(arch: str) -> dict[str, Any]:
    """The marker and line style of ``arch`` (its backbone's ``plot_style``)."""
    return _drawn(arch, "plot_style")


def as_numpy(x: Any) -> np.ndarray:
    """A tensor (any device, any dtype), array or list as a float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64)


def panels(n: int = 1, *, width: float = MAX_WIDTH_IN, height: float = 3.4, max_cols: int = 2,
           **subplots: Any) -> tuple[Figure, Any]:
    """A new figure of ``n`` panels, filled row by row with at most ``max_cols`` (1 or 2) a row.

    ``width``: the figure's width in inches, capped at :data:`~bwt_lite.display.MAX_WIDTH_IN`;
    ``height``: the height of one row. Other keywords go to ``plt.subplots`` (``sharex``,
    ``gridspec_kw``, ...). Returns the figure and its axes: one Axes when ``n`` is 1, else a flat array
    of ``n`` (grid cells past ``n`` are removed).
    """
    if n < 1 or max_cols not in (1, 2):
        raise ValueError(f"need n >= 1 panels and max_cols 1 or 2, got n={n}, max_cols={max_cols}")
    cols = min(n, max_cols)
    rows = -(-n // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(min(width, MAX_WIDTH_IN), height * rows), squeeze=False,
                             **subplots)
    for ax in grid.flat[n:]:
        ax.remove()
    return fig, grid[0, 0] if n == 1 else grid.ravel()[:n]


def show_figure(fig: Figure) -> None:
    """Show a widget's figure once and close it, so the cell does not draw it a second time at its end."""
    display(fig)
    plt.close(fig)


def finish(fig: Figure, title: str = "") -> Figure:
    """The last step of a multi-panel figure: its title (when ``title`` is given), a tight layout; returns it."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
