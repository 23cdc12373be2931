"""What the figures of every chapter share: the colours that mean the same thing in every chapter and
the conversion of tensors, arrays and lists to NumPy, and how a widget shows its figure.

The book-wide matplotlib settings (figure size, fonts, retina PNGs) are set once, by
:func:`bwt_lite.display.set_figure_style` (:data:`bwt_lite.display.FIGURE_STYLE`), which
:func:`bwt_lite.notebook.setup_notebook` calls at the top of every chapter.
"""
from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from matplotlib.figure import Figure
# Colours used across the chapters.
BAYES_COLOR = "#1f77b4"  # the exact posterior
FORMULA_COLOR = "#d62728"  # a closed-form reference
ELIMINATED_COLOR = "#7f7f7f"  # hypotheses ruled out by the evidence
MARGINAL_COLOR = "#ff7f0e"  # what a model that cannot look back can do


def as_numpy(x: Any) -> np.ndarray:
    """A tensor (any device, any dtype), array or list as a float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64)


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
