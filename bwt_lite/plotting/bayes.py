"""Chapters 1 and 2: the bijection's exact posterior, step by step (chapter 1), and a transformer that
learns it (chapter 2): figures and their widgets. They draw results and compute no science.

Every plotting function takes already-computed tensors (or arrays, or lists), draws one figure and
returns the :class:`matplotlib.figure.Figure`; one that accepts ``ax`` draws into that axes and returns
its figure, so panels can be combined. In a notebook, assign the result (``fig = plot_...(...)``): the
inline backend shows the figure once at the end of the cell. Every widget is an
``ipywidgets.interactive``: it runs once when built and, on Colab or in Jupyter, responds to its
controls; after ``setup_notebook`` it also carries a static HTML view of its current setting
(:func:`bwt_lite.display.static_view`), which the book shows.
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..metrics import entropy_bits
from ..tunnels import Episodes, Tunnel, make_tunnel
from .style import BAYES_COLOR, ELIMINATED_COLOR, FORMULA_COLOR, MARGINAL_COLOR, as_numpy, panels, show_figure


def plot_posterior_bars(
    probs: Any,
    *,
    revealed: dict[int, int] | Sequence[int] | None = None,
    answer: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Bar chart of one categorical posterior over the values ``0..V-1``.

    ``revealed`` marks the eliminated values with a grey cross at zero: either a list of values or a
    dict ``{value: key}`` (then the key that revealed the value is written above the cross).
    ``answer`` outlines the true value.

    Used in chapter 1.
    """
    p = as_numpy(probs)
    if p.ndim != 1:
        raise ValueError(f"probs must be one vector of V probabilities, got shape {p.shape}")
    V = p.shape[0]
    if ax is None:
        fig, ax = panels(1, width=6, height=3)
    x = np.arange(V)
    ax.bar(x, p, color=BAYES_COLOR, width=0.8, label="posterior")
    if answer is not None:
        ax.bar([answer], [p[answer]], width=0.8, fill=False, edgecolor="black", lw=2, label="true value")
    if revealed is not None:
        by_value = revealed if isinstance(revealed, dict) else {int(v): None for v in revealed}
        vals = sorted(by_value)
        labelled = any(k is not None for k in by_value.values())
        ax.scatter(vals, np.zeros(len(vals)), marker="x", color=ELIMINATED_COLOR, zorder=3, clip_on=False,
                   label="eliminated (kN: by key N)" if labelled else "eliminated")
        top = max(float(p.max()), 1e-9)
        for v in vals:
            if by_value[v] is not None:
                ax.text(v, 0.04 * top, f"k{by_value[v]}", ha="center", va="bottom", rotation=90,
                        fontsize=7, color=ELIMINATED_COLOR)
    ax.set_xticks(x if V <= 30 else x[:: max(1, V // 10)])
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlim(-0.7, V - 0.3)
    ax.set_ylim(0, max(float(p.max()) * 1.3, 0.05))
    ax.set_xlabel("value")
    ax.set_ylabel("probability")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper center", ncol=2, fontsize=8, frameon=False)
    return ax.figure


def plot_entropy_staircase(
    h_bayes: Any,
    *,
    formula: Any | None = None,
    marginal: float | None = None,
    current: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Bayes entropy (bits) against the key step ``t = 0..P-1``, drawn as a staircase.

    ``formula``: a closed form to overlay (dashed). ``marginal``: a constant entropy (e.g. log2 V,
    the uniform prediction) drawn as a line with the gap to the staircase shaded. ``current``: the
    step to highlight.

    Used in chapter 1.
    """
    h = as_numpy(h_bayes)
    if h.ndim != 1:
        raise ValueError(f"h_bayes must be one entropy per step, got shape {h.shape}")
    t = np.arange(h.shape[0])
    if ax is None:
        fig, ax = panels(1, width=6, height=3.2)
    ax.step(t, h, where="mid", color=BAYES_COLOR, lw=2, label="exact posterior")
    ax.plot(t, h, "o", color=BAYES_COLOR, ms=3)
    if formula is not None:
        ax.plot(t, as_numpy(formula), "--", color=FORMULA_COLOR, lw=1.2, label=r"$\log_2(V - t)$")
    if marginal is not None:
        ax.axhline(marginal, color=MARGINAL_COLOR, lw=1.5, label="uniform over V")
        ax.fill_between(t, h, marginal, step="mid", color=MARGINAL_COLOR, alpha=0.15, label="gap")
    if current is not None:
        ax.plot([current], [h[current]], "o", ms=10, mfc="none", mec="black", mew=2, label=f"step t = {current}")
    ax.set_xlabel("key step t (pairs revealed so far)")
    ax.set_ylabel("entropy (bits)")
    ax.set_ylim(bottom=0)
    ax.set_xticks(t if t.size <= 25 else t[:: max(1, t.size // 10)])
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    ax.legend(loc="lower left", fontsize=8, frameon=False)
    return ax.figure


def plot_posterior_heatmap(
    probs: Any,
    *,
    answers: Sequence[int] | Any | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """The posterior at every step as an image: rows are steps ``t``, columns the values.

    ``answers`` (one value per step) is marked with a white dot: it always lies in the support.

    Used in chapter 1.
    """
    p = as_numpy(probs)
    if p.ndim != 2:
        raise ValueError(f"probs must be (steps, values), got shape {p.shape}")
    P, V = p.shape
    if ax is None:
        fig, ax = panels(1, width=6, height=4.2)
    im = ax.imshow(p, aspect="auto", cmap="Blues", vmin=0, vmax=max(float(p.max()), 1e-9),
                   interpolation="nearest")
    if answers is not None:
        a = as_numpy(answers).astype(int)
        ax.scatter(a, np.arange(P), s=14, color="white", edgecolor="black", lw=0.6, label="true value")
        ax.legend(loc="lower left", fontsize=8, framealpha=0.9)
    ax.set_xlabel("value")
    ax.set_ylabel("key step t")
    ax.set_xticks(np.arange(V) if V <= 30 else np.arange(0, V, max(1, V // 10)))
    ax.set_yticks(np.arange(P) if P <= 30 else np.arange(0, P, max(1, P // 10)))
    ax.tick_params(labelsize=7)
    ax.figure.colorbar(im, ax=ax, label="probability")
    if title:
        ax.set_title(title)
    return ax.figure


def plot_elimination_step(
    probs: Any,
    h_bayes: Any,
    keys: Sequence[int],
    values: Sequence[int],
    t: int,
) -> Figure:
    """Two panels for step ``t`` of one episode: the posterior over the values (eliminated values
    marked with the key that revealed them) and the entropy staircase with step ``t`` highlighted.

    ``probs`` is (P, V), ``h_bayes`` (P,), ``keys`` and ``values`` the key and the value at each step.

    Used in chapter 1.
    """
    p = as_numpy(probs)
    if p.ndim != 2:
        raise ValueError(f"probs must be (steps, values), got shape {p.shape}")
    if not 0 <= t < p.shape[0]:
        raise ValueError(f"t must be in 0..{p.shape[0] - 1}, got {t}")
    keys, values = [int(k) for k in keys], [int(v) for v in values]
    fig, (ax_p, ax_h) = panels(2, height=3.4, gridspec_kw={"width_ratios": [1.3, 1]})
    revealed = {values[s]: keys[s] for s in range(t)}
    plot_posterior_bars(p[t], revealed=revealed, answer=values[t], ax=ax_p,
                        title=f"step t = {t}: posterior over the value of key {keys[t]}")
    plot_entropy_staircase(h_bayes, current=t, ax=ax_h, title="Bayes entropy")
    ax_h.set_xticks(np.arange(0, p.shape[0], 2))  # every other step: the panel is narrow
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------------
# Chapter 2: a transformer learns the posterior


def plot_entropy_calibration(curves: dict[str, dict[str, Sequence[float]]], *, ax: Axes | None = None,
                             title: str | None = None) -> Figure:
    """Model vs Bayes entropy per prediction position (the paper's calibration figure).

    ``curves`` maps a label to an ``EvalResult.per_position`` dict (``h_model``, ``h_bayes``); the
    Bayes curve is drawn from the first entry.

    Used in chapters 2 and 4.
    """
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=7, height=4)
    first = next(iter(curves.values()))
    t = np.arange(len(first["h_bayes"]))
    ax.plot(t, as_numpy(first["h_bayes"]), "--", color=BAYES_COLOR, lw=2.5, label="Bayes (exact)")
    for label, pp in curves.items():
        ax.plot(t, as_numpy(pp["h_model"]), "o-", ms=4, lw=1, label=label)
    ax.set_xlabel("prediction position t (pairs revealed)")
    ax.set_ylabel("mean entropy (bits)")
    ax.set_title(title or "Predictive entropy: model vs Bayes")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def plot_prediction_vs_posterior(model_probs: Any, bayes_probs: Any, *, ax: Axes | None = None,
                                 title: str = "") -> Figure:
    """Bars of a model's predictive distribution beside the exact posterior at one position. Used in chapter 2."""
    q, p = as_numpy(model_probs), as_numpy(bayes_probs)
    if q.shape != p.shape or q.ndim != 1:
        raise ValueError(f"model_probs {q.shape} and bayes_probs {p.shape} must be 1-D of the same length")
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=7, height=3)
    x = np.arange(len(p))
    ax.bar(x - 0.2, p, width=0.4, color=BAYES_COLOR, label="Bayes")
    ax.bar(x + 0.2, q, width=0.4, color=MARGINAL_COLOR, label="model")
    ax.set_xlabel("value")
    ax.set_ylabel("probability")
    ax.set_xticks(x)
    ax.set_title(title)
    ax.legend()
    return fig


def plot_learning_curves(histories: dict[str, Sequence[dict[str, float]]], *, key: str = "entropy_mae_bits",
                         target: float | None = None, ax: Axes | None = None) -> Figure:
    """A held-out metric against training step for several runs (log scale). Used in chapters 2 and 5."""
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=7, height=4)
    for label, hist in histories.items():
        ax.plot([r["step"] for r in hist], [r[key] for r in hist], "o-", ms=3, label=label)
    if target is not None:
        ax.axhline(target, color="k", ls=":", lw=1, label=f"{target} bits")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel(key.replace("_", " "))
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return fig


def elimination_widget(
    episode_or_seed: Episodes | int = 0,
    *,
    tunnel: Tunnel | None = None,
    index: int = 0,
    t: int = 0,
) -> ipywidgets.interactive:
    """Step through one bijection episode with a slider.

    At step ``t`` it lists the (key, value) pairs revealed so far and draws the exact posterior over
    the V values (eliminated values at zero, marked with the key that revealed them) beside the Bayes
    entropy staircase with step ``t`` highlighted.

    ``episode_or_seed``: an :class:`~bwt_lite.tunnels.Episodes` batch (episode ``index`` is shown),
    or an int seed for a fresh episode of ``tunnel`` (default ``make_tunnel("bijection")``).
    ``t``: the initial step. Works with every bijection variant.

    Used in chapter 1.
    """
    if isinstance(episode_or_seed, Episodes):
        ep = episode_or_seed
    elif isinstance(episode_or_seed, int) and not isinstance(episode_or_seed, bool):
        tunnel = tunnel if tunnel is not None else make_tunnel("bijection")
        ep = tunnel.sample(1, torch.Generator().manual_seed(episode_or_seed))
        index = 0
    else:
        raise TypeError(f"episode_or_seed must be an Episodes batch or an int seed, got {type(episode_or_seed).__name__}")
    if ep.probs is None or ep.inputs.dim() != 2:
        raise ValueError("elimination_widget needs a categorical token tunnel (Episodes with probs and token inputs)")
    if not 0 <= index < ep.batch_size:
        raise ValueError(f"index must be in 0..{ep.batch_size - 1}, got {index}")
    n_steps = ep.positions.numel()
    if not 0 <= t < n_steps:
        raise ValueError(f"t must be in 0..{n_steps - 1}, got {t}")

    probs = ep.probs[index].cpu()  # (P, V) exact posterior at each prediction position
    h_bayes = entropy_bits(probs)  # (P,) bits
    keys = ep.inputs[index, ep.positions].cpu().tolist()  # the key (or final query) at each position
    values = ep.target[index].cpu().tolist()  # its value

    def show(t: int) -> None:
        pairs = ", ".join(f"{k}\u2192{v}" for k, v in zip(keys[:t], values[:t])) or "none yet"
        support = int((probs[t] > 0).sum())
        print(f"revealed (key\u2192value): {pairs}")
        print(f"step t = {t}: key {keys[t]} | {support} value(s) still possible | "
              f"Bayes entropy {h_bayes[t].item():.3f} bits")
        fig = plot_elimination_step(probs, h_bayes, keys, values, t)
        show_figure(fig)

    slider = ipywidgets.IntSlider(value=t, min=0, max=n_steps - 1, step=1, description="step t",
                                  continuous_update=False)
    return ipywidgets.interactive(show, t=slider)


def prediction_widget(model: torch.nn.Module, tunnel: Tunnel, seed: int = 0, position: int = 0) -> ipywidgets.interactive:
    """Step through one episode: the model's prediction beside the exact posterior, with both entropies.

    Controls: the episode seed and the prediction position.

    Used in chapter 2.
    """
    n = tunnel.positions.numel()
    if not 0 <= position < n:
        raise ValueError(f"position must be in 0..{n - 1}, got {position}")
    device = next(model.parameters()).device
    cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def episode(s: int) -> tuple[torch.Tensor, torch.Tensor]:
        if s not in cache:
            ep = tunnel.sample(1, torch.Generator(device=device).manual_seed(s))
            with torch.no_grad():
                q = torch.softmax(model(ep.inputs, ep.positions).double(), -1)[0].cpu()
            cache[s] = (ep.probs[0].cpu(), q)
        return cache[s]

    def show(seed: int, position: int) -> None:
        p, q = episode(seed)
        h_b, h_m = entropy_bits(p[position]).item(), entropy_bits(q[position]).item()
        fig = plot_prediction_vs_posterior(
            q[position], p[position], title=f"position {position}: H_Bayes {h_b:.3f} bits, H_model {h_m:.3f} bits")
        show_figure(fig)

    return ipywidgets.interactive(
        show, seed=ipywidgets.IntText(value=seed, description="episode seed"),
        position=ipywidgets.IntSlider(value=position, min=0, max=n - 1, description="position",
                                      continuous_update=False))
