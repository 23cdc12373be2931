"""Chapter 13: the construction boundary (the modular recurrence): one episode's exact posterior, errors per
position split at a loss horizon, and the class posterior a model implies beside the exact one.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .style import BAYES_COLOR, ELIMINATED_COLOR, MARGINAL_COLOR, as_numpy, finish, panels

_BEYOND_SHADE = "#f2dede"  # positions the loss never rewarded


def plot_recurrence_episode(values: Sequence[int], entropy: Any, class_posterior: Any, p: int, *,
                            is_recurrence: bool | None = None, title: str | None = None) -> Figure:
    """Two panels for one episode: the residues x_t against t (top), and the exact predictive entropy of
    each x_t with the class posterior P(recurrence | x_0 .. x_{t-1}) (bottom, right axis).

    Used in chapter 13.
    """
    fig, (top, bottom) = panels(2, max_cols=1, height=2.6, sharex=True)
    v = as_numpy(values)
    t = np.arange(v.shape[0])
    top.plot(t, v, "o-", color=ELIMINATED_COLOR if is_recurrence is False else BAYES_COLOR, ms=5, lw=1)
    for ti, vi in zip(t, v):
        top.annotate(f"{int(vi)}", (ti, vi), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
    top.set_ylim(-1.5, p + 1.5)
    top.set_ylabel(f"x_t (mod {p})")
    kind = {True: "a recurrence", False: "i.i.d. residues", None: ""}[is_recurrence]
    top.set_title(f"the values{': ' + kind if kind else ''}", fontsize=9)
    top.grid(alpha=0.3)
    h = as_numpy(entropy)
    bottom.bar(t, h, color=BAYES_COLOR, alpha=0.6, label="Bayes entropy of x_t")
    bottom.axhline(np.log2(p), color=ELIMINATED_COLOR, ls=":", lw=1, label=f"uniform: log2 {p}")
    bottom.set_ylabel("entropy (bits)")
    bottom.set_xlabel("position t (values seen before it: t)")
    right = bottom.twinx()
    right.plot(t, as_numpy(class_posterior), "s-", color=MARGINAL_COLOR, ms=4, lw=1.2,
               label="P(recurrence | values before t)")
    right.set_ylim(-0.05, 1.05)
    right.set_ylabel("class posterior", color=MARGINAL_COLOR)
    lines = bottom.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    bottom.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="center right")
    return finish(fig, title)


def plot_horizon_profile(curves: dict[str, Sequence[float]], *, horizon: int | None = None,
                         bayes_entropy: Sequence[float] | None = None, ax: Axes | None = None,
                         title: str | None = None, floor: float = 1e-4) -> Figure:
    """Entropy MAE (bits, log scale) against the position for each labelled curve; the positions past
    ``horizon`` (the last position the training loss rewarded, K) are shaded. ``bayes_entropy``, when given,
    is drawn for scale: the error of a model that predicts with certainty where Bayes is unsure.

    Used in chapter 13.
    """
    if ax is None:
        fig, ax = panels(1, height=3.6)
    else:
        fig = ax.figure
    n = 0
    for label, v in curves.items():
        y = as_numpy(v)
        n = max(n, y.shape[0])
        ax.plot(np.arange(y.shape[0]), np.maximum(y, floor), "o-", ms=3.5, lw=1.2, label=label)
    if bayes_entropy is not None:
        y = as_numpy(bayes_entropy)
        ax.plot(np.arange(y.shape[0]), np.maximum(y, floor), ":", color=BAYES_COLOR, lw=1.5,
                label="Bayes entropy (for scale)")
    if horizon is not None and horizon < n - 1:
        ax.axvspan(horizon + 0.5, n - 0.5, color=_BEYOND_SHADE, zorder=0,
                   label=f"beyond the loss horizon K = {horizon}")
    ax.set_yscale("log")
    ax.set_xlabel("position t")
    ax.set_ylabel("entropy MAE (bits)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    return finish(fig, title)


def plot_class_posterior_read(read: dict[str, Sequence[float | None]], *, ax: Axes | None = None,
                              title: str | None = None) -> Figure:
    """The exact class posterior (mean over recurrence episodes whose program is pinned down) and the one a
    model's predictive implies, per position; ``read`` is :func:`bwt_lite.boundary.class_posterior_read`'s
    dict. Positions with no such episode are left out.

    Used in chapter 13.
    """
    if ax is None:
        fig, ax = panels(1, height=3.2)
    else:
        fig = ax.figure
    for key, label, style, color in (("exact", "Bayes", "o-", BAYES_COLOR), ("model", "model (implied)", "s--",
                                                                             MARGINAL_COLOR)):
        pts = [(t, v) for t, v in enumerate(read[key]) if v is not None]
        if pts:
            t, v = zip(*pts)
            ax.plot(t, v, style, color=color, ms=4, lw=1.2, label=label)
    ax.set_xlabel("position t")
    ax.set_ylabel("P(recurrence | x_0 .. x_(t-1))")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return finish(fig, title)


__all__ = ["plot_class_posterior_read", "plot_horizon_profile", "plot_recurrence_episode"]
