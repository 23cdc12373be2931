"""Chapter 11: gradient dynamics (Paper II): figures and the routing widget.
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets
import numpy as np
import torch
from matplotlib.figure import Figure

from ..dynamics.gradients import ScoreDescent
from .style import BAYES_COLOR, ELIMINATED_COLOR, FORMULA_COLOR, MARGINAL_COLOR, as_numpy, panels, show_figure


# Chapter 11: gradient dynamics (Paper II)

PULLED_COLOR = "#2ca02c"  # positive advantage: a gradient step moves attention towards this key
PUSHED_COLOR = "#d62728"  # negative advantage: attention moves away


def plot_routing_step(alpha: Any, advantage: Any, loss: Any, step: int, *,
                      symbols: Sequence[int] | None = None) -> Figure:
    """Three panels for step ``step`` of a descent on one query's attention scores: the attention over
    the keys (the starting attention outlined; keys showing the query's own symbol, the last one in
    ``symbols``, hatched), the advantage of every key (green: attention flows in, red: out), and the
    loss through the steps with ``step`` marked.

    ``alpha``, ``advantage``: (steps + 1, n_keys); ``loss``: (steps + 1,) in nats.

    Used in chapter 11.
    """
    a, adv, lo = as_numpy(alpha), as_numpy(advantage), as_numpy(loss)
    if a.ndim != 2 or adv.shape != a.shape or lo.shape != (a.shape[0],):
        raise ValueError(f"alpha {a.shape} and advantage {adv.shape} must be (steps + 1, keys) and loss "
                         f"{lo.shape} (steps + 1,)")
    n_steps, n = a.shape
    if not 0 <= step < n_steps:
        raise ValueError(f"step must be in 0..{n_steps - 1}, got {step}")
    if symbols is not None and len(symbols) != n:
        raise ValueError(f"symbols must name the symbol of each of the {n} keys, got {len(symbols)}")
    same = np.array([s == symbols[-1] for s in symbols]) if symbols is not None else np.zeros(n, dtype=bool)
    fig, (ax_a, ax_v, ax_l) = panels(3, height=3.2)
    x = np.arange(n)
    ax_a.bar(x, a[step], color=BAYES_COLOR, hatch=None, label="attention now")
    ax_a.bar(x[same], a[step][same], color=BAYES_COLOR, hatch="//", edgecolor="white",
             label="key shows the query's symbol")
    ax_a.bar(x, a[0], fill=False, edgecolor="black", lw=0.8, label="at step 0")
    ax_a.set_xticks(x, [str(s) for s in symbols] if symbols is not None else [str(i) for i in x], fontsize=7)
    ax_a.set_xlabel("key (labelled by the symbol it shows)" if symbols is not None else "key")
    ax_a.set_ylabel("attention weight")
    ax_a.set_title(f"step {step}: attention of the query", fontsize=10)
    ax_a.legend(fontsize=7, loc="best")
    colors = np.where(adv[step] >= 0, PULLED_COLOR, PUSHED_COLOR)
    ax_v.bar(x, adv[step], color=colors)
    ax_v.axhline(0, color="black", lw=0.8)
    ax_v.set_xticks(x, [str(s) for s in symbols] if symbols is not None else [str(i) for i in x], fontsize=7)
    ax_v.set_xlabel("key")
    ax_v.set_ylabel("advantage  -(b_ij - E_alpha[b])")
    ax_v.set_title("green: attention flows in, red: out", fontsize=10)
    ax_l.plot(np.arange(n_steps), lo, color=MARGINAL_COLOR)
    ax_l.plot([step], [lo[step]], "o", ms=8, mfc="none", mec="black", mew=2)
    ax_l.set_xlabel("descent step")
    ax_l.set_ylabel("cross-entropy (nats)")
    ax_l.set_title("the query's loss", fontsize=10)
    ax_l.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_speedup(curves: dict[str, Any], speedups: dict[str, Sequence[float]], *, paper: float | None = None,
                 floor: float | None = None, intervals: dict[str, tuple[float, float, float]] | None = None) -> Figure:
    """Two panels: held-out loss against step for every arm (mean over seeds, band from min to max),
    with SGD's final loss dotted; and each arm's per-seed speedup (dots), its mean and confidence
    interval, beside the paper's value.

    ``curves``: arm -> (seeds, steps + 1) losses, the first arm the baseline; ``speedups``: arm -> per-seed
    speedups (arms after the baseline); ``intervals``: arm -> (mean, low, high).

    Used in chapter 11.
    """
    if not curves:
        raise ValueError("curves must hold at least one arm")
    fig, (ax_c, ax_s) = panels(2, height=3.8, gridspec_kw={"width_ratios": [1.6, 1]})
    base = None
    for arm, c in curves.items():
        c = as_numpy(c)
        steps = np.arange(c.shape[1])
        line, = ax_c.plot(steps, c.mean(0), label=arm)
        ax_c.fill_between(steps, c.min(0), c.max(0), color=line.get_color(), alpha=0.15)
        base = c[:, -1].mean() if base is None else base
    ax_c.axhline(base, color="black", ls=":", lw=1, label="baseline's final loss (mean)")
    if floor is not None:
        ax_c.axhline(floor, color=BAYES_COLOR, ls="--", lw=1, label="Bayes floor (held-out)")
    ax_c.set_xlabel("full-batch step")
    ax_c.set_ylabel("held-out cross-entropy (nats)")
    ax_c.legend(fontsize=8)
    ax_c.grid(alpha=0.3)
    arms = [a for a in speedups if a != next(iter(curves))]
    for i, arm in enumerate(arms):
        vals = as_numpy(list(speedups[arm]))
        ax_s.plot(np.full(len(vals), i), vals, "o", color=ELIMINATED_COLOR, ms=5)
        if intervals and arm in intervals:
            m, lo, hi = intervals[arm]
            ax_s.errorbar([i + 0.15], [m], yerr=[[m - lo], [hi - m]], fmt="s", color="black", capsize=4)
    if paper is not None:
        ax_s.axhline(paper, color=FORMULA_COLOR, ls="--", lw=1, label=f"paper: {paper:g}x")
        ax_s.legend(fontsize=8)
    ax_s.axhline(1.0, color="black", lw=0.6)
    ax_s.set_xticks(range(len(arms)), arms, fontsize=8)
    ax_s.set_xlim(-0.5, len(arms) - 0.5)
    ax_s.set_ylabel("speedup (baseline steps / arm steps)")
    ax_s.set_title("per seed (dots),\nmean and 95% CI (square)", fontsize=10)
    ax_s.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def plot_frame_vs_precision(stability: dict[str, Sequence[float]], history: Sequence[dict[str, float]], *,
                            title: str = "") -> Figure:
    """Two panels over training: the held-out entropy MAE and KL (log scale), and the attention
    pattern's similarity to the final one beside the relative distance of the value and of the
    query/key weights to their final values.

    ``stability``: ``steps``, ``pattern``, ``values``, ``routing`` lists; ``history``: the trainer's rows.

    Used in chapter 11.
    """
    fig, (ax_e, ax_s) = panels(2, height=3.2, max_cols=1)
    steps = [r["step"] for r in history]
    ax_e.plot(steps, [r["entropy_mae_bits"] for r in history], "o-", ms=3, label="entropy MAE")
    ax_e.plot(steps, [r["kl_bits"] for r in history], "s-", ms=3, label="KL")
    ax_e.set_yscale("log")
    ax_e.set_xlabel("training step")
    ax_e.set_ylabel("bits (held-out)")
    ax_e.set_title("precision keeps improving", fontsize=10)
    ax_e.legend(fontsize=8)
    ax_e.grid(alpha=0.3, which="both")
    s = list(stability["steps"])
    ax_s.plot(s, stability["pattern"], "o-", ms=3, color=BAYES_COLOR, label="attention pattern: similarity to final")
    ax_s.plot(s, stability["values"], "s--", ms=3, color=MARGINAL_COLOR, label="value weights: distance to final")
    ax_s.plot(s, stability["routing"], "^--", ms=3, color=ELIMINATED_COLOR, label="query/key weights: distance to final")
    ax_s.set_xlabel("training step")
    ax_s.set_ylim(0, 1.05)
    ax_s.set_title(title or "the frame settles early", fontsize=10)
    ax_s.legend(fontsize=8)
    ax_s.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def routing_widget(trace: ScoreDescent, symbols: list[int] | None = None, step: int = 0) -> ipywidgets.interactive:
    """Step through a descent on one query's attention scores (:func:`bwt_lite.dynamics.gradients.free_score_descent`):
    the attention over the keys, each key's advantage and the loss, at the chosen step.

    ``symbols``: the symbol each key shows (the query's own last), to mark the keys that show it.

    Used in chapter 11.
    """
    n_steps = trace.alpha.shape[0]
    if not 0 <= step < n_steps:
        raise ValueError(f"step must be in 0..{n_steps - 1}, got {step}")
    same = None if symbols is None else torch.tensor([s == symbols[-1] for s in symbols])

    def show(step: int) -> None:
        on_same = "" if same is None else (f" | attention on keys showing the query's symbol {symbols[-1]}: "
                                            f"{trace.alpha[step][same].sum().item():.3f}")
        print(f"step {step} (lr {trace.lr:g}): loss {trace.loss[step].item():.4f} nats{on_same}")
        fig = plot_routing_step(trace.alpha, trace.advantage, trace.loss, step, symbols=symbols)
        show_figure(fig)

    slider = ipywidgets.IntSlider(value=step, min=0, max=n_steps - 1, description="step", continuous_update=False)
    return ipywidgets.interactive(show, step=slider)
