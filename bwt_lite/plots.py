"""Matplotlib helpers for the chapters. They draw results and never compute science.

Every function takes already-computed tensors (or arrays, or lists), draws one figure, and returns
the :class:`matplotlib.figure.Figure`. A function that accepts ``ax`` draws into that axes instead
and returns its figure, so panels can be combined. In a notebook, assign the result
(``fig = plot_...(...)``): the inline backend shows the figure once at the end of the cell.

Functions are self-contained (each one only needs this module's imports), so chapters can add
their own without touching the others. Matplotlib only.

Chapter 1 (bijection): :func:`plot_posterior_bars`, :func:`plot_entropy_staircase`,
:func:`plot_posterior_heatmap`, :func:`plot_elimination_step`.
Chapter 2 (learning the posterior): :func:`plot_entropy_calibration`,
:func:`plot_prediction_vs_posterior`, :func:`plot_learning_curves`.
Chapter 3 (HMM filtering): :func:`plot_hmm_posteriors`, :func:`plot_position_errors`, :func:`plot_hmm_step`.
Chapter 4 (associative recall): :func:`plot_recall_tokens`, :func:`plot_recall_episode`,
:func:`plot_recall_fraction`, :func:`plot_recall_breakdown`, :func:`plot_recall_step`.
Chapter 5 (Bayesian regression): :func:`plot_gaussian_errors_by_position`, :func:`plot_variance_by_position`,
:func:`plot_predicted_vs_exact`, :func:`plot_standardised_residuals`, :func:`plot_gaussian_predictive`,
:func:`plot_regression_step`.
Chapter 6 (primitives): :func:`plot_primitives_entropy`, :func:`plot_accuracy_by_pairs`.
Chapter 11 (gradient dynamics): :func:`plot_routing_step`, :func:`plot_speedup`, :func:`plot_frame_vs_precision`.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

# Colours used across the chapters.
BAYES_COLOR = "#1f77b4"  # the exact posterior
FORMULA_COLOR = "#d62728"  # a closed-form reference
ELIMINATED_COLOR = "#7f7f7f"  # hypotheses ruled out by the evidence
MARGINAL_COLOR = "#ff7f0e"  # what a model that cannot look back can do


def _as_numpy(x: Any) -> np.ndarray:
    """A tensor (any device, any dtype), array or list as a float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64)


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
    """
    p = _as_numpy(probs)
    if p.ndim != 1:
        raise ValueError(f"probs must be one vector of V probabilities, got shape {p.shape}")
    V = p.shape[0]
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 3))
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
    ax.legend(loc="upper center", ncol=3, fontsize=8, frameon=False)
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
    """
    h = _as_numpy(h_bayes)
    if h.ndim != 1:
        raise ValueError(f"h_bayes must be one entropy per step, got shape {h.shape}")
    t = np.arange(h.shape[0])
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.step(t, h, where="mid", color=BAYES_COLOR, lw=2, label="exact posterior")
    ax.plot(t, h, "o", color=BAYES_COLOR, ms=3)
    if formula is not None:
        ax.plot(t, _as_numpy(formula), "--", color=FORMULA_COLOR, lw=1.2, label=r"$\log_2(V - t)$")
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
    """
    p = _as_numpy(probs)
    if p.ndim != 2:
        raise ValueError(f"probs must be (steps, values), got shape {p.shape}")
    P, V = p.shape
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4.2))
    im = ax.imshow(p, aspect="auto", cmap="Blues", vmin=0, vmax=max(float(p.max()), 1e-9),
                   interpolation="nearest")
    if answers is not None:
        a = _as_numpy(answers).astype(int)
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
    """
    p = _as_numpy(probs)
    if p.ndim != 2:
        raise ValueError(f"probs must be (steps, values), got shape {p.shape}")
    if not 0 <= t < p.shape[0]:
        raise ValueError(f"t must be in 0..{p.shape[0] - 1}, got {t}")
    keys, values = [int(k) for k in keys], [int(v) for v in values]
    fig, (ax_p, ax_h) = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [1.3, 1]})
    revealed = {values[s]: keys[s] for s in range(t)}
    plot_posterior_bars(p[t], revealed=revealed, answer=values[t], ax=ax_p,
                        title=f"step t = {t}: posterior over the value of key {keys[t]}")
    plot_entropy_staircase(h_bayes, current=t, ax=ax_h, title="Bayes entropy")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------------
# Chapter 2: a transformer learns the posterior


def plot_entropy_calibration(curves: dict[str, dict[str, Sequence[float]]], *, ax: Axes | None = None,
                             title: str | None = None) -> Figure:
    """Model vs Bayes entropy per prediction position (the paper's calibration figure).

    ``curves`` maps a label to an ``EvalResult.per_position`` dict (``h_model``, ``h_bayes``); the
    Bayes curve is drawn from the first entry.
    """
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 4))
    first = next(iter(curves.values()))
    t = np.arange(len(first["h_bayes"]))
    ax.plot(t, _as_numpy(first["h_bayes"]), "--", color=BAYES_COLOR, lw=2.5, label="Bayes (exact)")
    for label, pp in curves.items():
        ax.plot(t, _as_numpy(pp["h_model"]), "o-", ms=4, lw=1, label=label)
    ax.set_xlabel("prediction position t (pairs revealed)")
    ax.set_ylabel("mean entropy (bits)")
    ax.set_title(title or "Predictive entropy: model vs Bayes")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def plot_prediction_vs_posterior(model_probs: Any, bayes_probs: Any, *, ax: Axes | None = None,
                                 title: str = "") -> Figure:
    """Bars of a model's predictive distribution beside the exact posterior at one position."""
    q, p = _as_numpy(model_probs), _as_numpy(bayes_probs)
    if q.shape != p.shape or q.ndim != 1:
        raise ValueError(f"model_probs {q.shape} and bayes_probs {p.shape} must be 1-D of the same length")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 3))
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
    """A held-out metric against training step for several runs (log scale)."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 4))
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


# ------------------------------------------------------------------------------------------------
# Chapter 4: binding (associative recall)

RECALL_COLOR = "#2ca02c"  # a key seen before in the episode (a recall position)
NEW_KEY_COLOR = "#aec7e8"  # a key seen for the first time
VALUE_COLOR = "#f0f0f0"  # a value token


def plot_recall_tokens(
    tokens: Sequence[int] | Any,
    positions: Sequence[int] | Any,
    V: int,
    *,
    seen: Sequence[bool] | Any | None = None,
    previous: Sequence[int] | Any | None = None,
    highlight: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """One recall episode (any variant) as a strip of tokens: keys ``kN`` (token N < V), values ``vN``
    (token V + N) and filler tokens (2V, drawn as a dot). Under every key, its key step ``t``.

    ``seen`` (one bool per key step) colours recalled keys green and new keys light blue. ``previous``
    (one index per key step, -1 for a new key) draws an arc from the value token a recall must copy
    (the one after the key's previous occurrence) to the key. ``highlight``: a key step drawn with a
    thick outline, with only its own arc.
    """
    tok = _as_numpy(tokens).astype(int)
    pos = _as_numpy(positions).astype(int)
    if tok.ndim != 1 or pos.ndim != 1:
        raise ValueError(f"tokens and positions must be 1-D (one episode), got shapes {tok.shape} and {pos.shape}")
    P, T = pos.shape[0], tok.shape[0]
    if P and (pos.min() < 0 or pos.max() >= T):
        raise ValueError(f"positions must index tokens 0..{T - 1}")
    seen_a = None if seen is None else _as_numpy(seen).astype(bool)
    prev = None if previous is None else _as_numpy(previous).astype(int)
    for name, arr in (("seen", seen_a), ("previous", prev)):
        if arr is not None and arr.shape != (P,):
            raise ValueError(f"{name} must have one entry per key step ({P}), got shape {arr.shape}")
    if highlight is not None and not 0 <= highlight < P:
        raise ValueError(f"highlight must be a key step in 0..{P - 1}, got {highlight}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(6.0, 0.2 * T + 1), 2.0))
    step_of = {int(p): t for t, p in enumerate(pos)}
    for i, v in enumerate(tok):
        if v < V:
            label, color = f"k{v}", NEW_KEY_COLOR
            t = step_of.get(i)
            if t is not None and seen_a is not None and seen_a[t]:
                color = RECALL_COLOR
        elif v < 2 * V:
            label, color = f"v{v - V}", VALUE_COLOR
        else:
            label, color = "\u00b7", "white"
        lw = 2.5 if (highlight is not None and step_of.get(i) == highlight) else 0.5
        ax.add_patch(plt.Rectangle((i - 0.45, 0), 0.9, 1, facecolor=color, edgecolor="black", lw=lw))
        ax.text(i, 0.5, label, ha="center", va="center", fontsize=6 if T > 40 else 7)
    for t, p in enumerate(pos):
        ax.text(p, -0.3, str(t), ha="center", va="center", fontsize=5 if T > 40 else 6, color=ELIMINATED_COLOR)
    top = 1.0
    if prev is not None:
        steps = [highlight] if highlight is not None else range(P)
        for t in steps:
            if prev[t] < 0:
                continue
            x0, x1 = pos[prev[t]] + 1, pos[t]
            h = 0.35 + 1.6 * (x1 - x0) / max(T, 1)
            u = np.linspace(0.0, 1.0, 40)
            ax.plot(x0 + (x1 - x0) * u, 1.02 + h * np.sin(np.pi * u), color=RECALL_COLOR,
                    lw=2 if highlight is not None else 0.8, alpha=0.9 if highlight is not None else 0.6)
            ax.plot([x1], [1.02], marker="v", color=RECALL_COLOR, ms=4)
            top = max(top, 1.02 + h)
    ax.set_xlim(-0.7, T - 0.3)
    ax.set_ylim(-0.55, top + 0.1)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    return ax.figure


def plot_recall_episode(
    tokens: Sequence[int] | Any,
    positions: Sequence[int] | Any,
    V: int,
    h_bayes: Any,
    *,
    h_model: Any | None = None,
    seen: Sequence[bool] | Any | None = None,
    previous: Sequence[int] | Any | None = None,
    title: str | None = None,
) -> Figure:
    """Two panels for one recall episode: the Bayes entropy at each key (bars; a model's entropy as
    dots when ``h_model`` is given) above the token strip of :func:`plot_recall_tokens`."""
    tok, pos, h = _as_numpy(tokens), _as_numpy(positions).astype(int), _as_numpy(h_bayes)
    if h.shape != pos.shape:
        raise ValueError(f"h_bayes must have one entropy per key step ({pos.shape[0]}), got shape {h.shape}")
    T = tok.shape[0]
    fig, (ax_h, ax_s) = plt.subplots(2, 1, figsize=(max(6.0, 0.2 * T + 1), 4.0), sharex=True,
                                     gridspec_kw={"height_ratios": [1.2, 1]})
    ax_h.bar(pos, h, width=0.8, color=BAYES_COLOR, label="Bayes entropy")
    if seen is not None:
        s = _as_numpy(seen).astype(bool)
        if s.shape == pos.shape and s.any():
            ax_h.plot(pos[s], h[s], "^", color=RECALL_COLOR, ms=5, clip_on=False, label="recall (Bayes: 0 bits)")
    if h_model is not None:
        hm = _as_numpy(h_model)
        if hm.shape != pos.shape:
            raise ValueError(f"h_model must have one entropy per key step ({pos.shape[0]}), got shape {hm.shape}")
        ax_h.plot(pos, hm, "o", color=MARGINAL_COLOR, ms=4, label="model entropy")
    ax_h.axhline(np.log2(V), color=ELIMINATED_COLOR, lw=0.8, ls=":", label=r"$\log_2 V$")
    ax_h.set_ylabel("bits")
    ax_h.set_ylim(0, np.log2(V) * 1.25)
    ax_h.legend(loc="upper right", fontsize=7, ncol=3, frameon=False)
    ax_h.grid(alpha=0.3, axis="y")
    if title:
        ax_h.set_title(title)
    plot_recall_tokens(tok, pos, V, seen=seen, previous=previous, ax=ax_s)
    ax_s.tick_params(labelbottom=False)
    fig.tight_layout()
    return fig


def plot_recall_fraction(expected: Any, observed: Any | None = None, *, ax: Axes | None = None,
                         title: str | None = None) -> Figure:
    """Probability that key step ``t`` is a recall: a closed form (line) and, optionally, the
    fraction observed in sampled episodes (dots)."""
    e = _as_numpy(expected)
    if e.ndim != 1:
        raise ValueError(f"expected must be one probability per key step, got shape {e.shape}")
    t = np.arange(e.shape[0])
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 3.2))
    ax.plot(t, e, "-", color=FORMULA_COLOR, lw=1.5, label=r"$1-(1-1/V)^t$")
    if observed is not None:
        o = _as_numpy(observed)
        if o.shape != e.shape:
            raise ValueError(f"observed {o.shape} and expected {e.shape} must have the same shape")
        ax.plot(t, o, "o", color=BAYES_COLOR, ms=4, label="sampled episodes")
    ax.set_xlabel("key step t (pairs revealed so far)")
    ax.set_ylabel("fraction of recalls")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    if title:
        ax.set_title(title)
    return fig


def _recall_field(obj: Any, name: str) -> Any:
    """``obj.name`` or ``obj[name]`` (a dataclass or its ``to_dict()``)."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def plot_recall_breakdown(breakdowns: dict[str, Any], *, chance: float | None = None, min_count: int = 1,
                          title: str | None = None) -> Figure:
    """Accuracy and entropy error on recalled keys against memory load and distance.

    ``breakdowns`` maps a label to a :class:`bwt_lite.evaluate.RecallBreakdown` (or its ``to_dict()``).
    Columns: grouped by distinct pairs stored before the query, and by distance back to the key's
    previous occurrence. Rows: top-1 accuracy (with ``chance``, default the first breakdown's 1/V),
    entropy error in bits, and the number of recall positions per bucket (from the first breakdown).
    Buckets with fewer than ``min_count`` positions are left out.
    """
    if not breakdowns:
        raise ValueError("breakdowns is empty: give at least one {label: RecallBreakdown}")
    first = next(iter(breakdowns.values()))
    chance = _recall_field(first, "chance") if chance is None else chance
    fig, axes = plt.subplots(3, 2, figsize=(11, 7), sharex="col", gridspec_kw={"height_ratios": [1.2, 1.2, 0.7]})
    columns = (("by_stored", "distinct pairs stored before the query"),
               ("by_distance", "distance back to the previous occurrence (pairs)"))
    for col, (field, xlabel) in enumerate(columns):
        for label, b in breakdowns.items():
            g = _recall_field(b, field)
            keep = np.asarray(g["count"]) >= min_count
            x = np.asarray(g["bucket"])[keep]
            axes[0, col].plot(x, np.asarray(g["accuracy"])[keep], "o-", ms=3, lw=1, label=label)
            axes[1, col].plot(x, np.asarray(g["entropy_mae"])[keep], "o-", ms=3, lw=1, label=label)
        if chance is not None:
            axes[0, col].axhline(chance, color=ELIMINATED_COLOR, ls=":", lw=1.2, label=f"chance 1/V = {chance:.3f}")
        g = _recall_field(first, field)
        keep = np.asarray(g["count"]) >= min_count
        axes[2, col].bar(np.asarray(g["bucket"])[keep], np.asarray(g["count"])[keep], color=ELIMINATED_COLOR)
        axes[0, col].set_ylim(-0.03, 1.05)
        axes[0, col].set_ylabel("accuracy on seen keys")
        axes[1, col].set_ylabel("entropy error (bits)")
        axes[1, col].set_ylim(bottom=0)
        axes[2, col].set_ylabel("recalls")
        axes[2, col].set_xlabel(xlabel)
        for r in range(3):
            axes[r, col].grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="center right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_recall_step(
    tokens: Sequence[int] | Any,
    positions: Sequence[int] | Any,
    V: int,
    t: int,
    model_probs: Any,
    bayes_probs: Any,
    *,
    seen: Sequence[bool] | Any | None = None,
    previous: Sequence[int] | Any | None = None,
    title: str | None = None,
) -> Figure:
    """Key step ``t`` of one recall episode: the token strip with that key outlined (and an arc to the
    value it must copy, when it is a recall) above the model's prediction beside the exact posterior."""
    tok = _as_numpy(tokens)
    fig, (ax_s, ax_p) = plt.subplots(2, 1, figsize=(max(7.0, 0.2 * tok.shape[0] + 1), 5.0),
                                     gridspec_kw={"height_ratios": [1, 1.6]})
    plot_recall_tokens(tok, positions, V, seen=seen, previous=previous, highlight=t, ax=ax_s)
    plot_prediction_vs_posterior(model_probs, bayes_probs, ax=ax_p, title=title or f"key step t = {t}")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------------
# Chapter 5: Bayesian linear regression (Gaussian predictives): plot_gaussian_errors_by_position,
# plot_variance_by_position, plot_predicted_vs_exact, plot_standardised_residuals,
# plot_gaussian_predictive, plot_regression_step. Bayes is drawn in BAYES_COLOR.

_REG_MODEL_COLOR = "#2ca02c"  # the model's prediction in single-model regression figures


def plot_gaussian_errors_by_position(curves: dict[str, dict[str, Sequence[float]]], *,
                                     axes: Sequence[Axes] | None = None, title: str | None = None,
                                     floor: float = 1e-9) -> Figure:
    """Two panels: entropy MAE and KL(Bayes || model) in bits against the prediction position.

    ``curves`` maps a label to an ``EvalResult.per_position`` dict (``entropy_mae``, ``kl``). Log
    scale; a value at or below ``floor`` (e.g. a baseline that is exact at a position, up to
    rounding) leaves a gap in its curve.
    """
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    else:
        fig = axes[0].figure
    for ax, key, name in zip(axes, ("entropy_mae", "kl"), ("entropy MAE (bits)", "KL(Bayes || model) (bits)")):
        for label, pp in curves.items():
            v = _as_numpy(pp[key])
            t = np.arange(v.shape[0])
            ax.plot(t, np.where(v > floor, v, np.nan), "o-", ms=3.5, lw=1, label=label)
        ax.set_yscale("log")
        ax.set_xlabel("prediction position i (pairs seen)")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_variance_by_position(var_model: dict[str, Any], var_bayes: Any, *, noise_var: float | None = None,
                              ax: Axes | None = None, title: str | None = None) -> Figure:
    """Mean predictive variance per position (log scale): each model's against the exact one.

    ``var_model`` maps a label to one value per position (already averaged over episodes);
    ``var_bayes`` is the exact curve; ``noise_var`` (sigma^2) is drawn as the floor no amount of
    data can beat.
    """
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 4))
    vb = _as_numpy(var_bayes)
    t = np.arange(vb.shape[0])
    ax.plot(t, vb, "--", color=BAYES_COLOR, lw=2.5, label="Bayes (exact)")
    for label, v in var_model.items():
        ax.plot(t, _as_numpy(v), "o-", ms=4, lw=1, label=label)
    if noise_var is not None:
        ax.axhline(noise_var, color=ELIMINATED_COLOR, ls=":", lw=1.5, label=r"noise floor $\sigma^2$")
    ax.set_yscale("log")
    ax.set_xlabel("prediction position i (pairs seen)")
    ax.set_ylabel("mean predictive variance")
    ax.set_title(title or "Predictive variance as evidence accumulates")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return fig


def plot_predicted_vs_exact(predicted: Any, exact: Any, *, log: bool = False, color: Any = None,
                            color_label: str | None = None, ax: Axes | None = None, xlabel: str = "exact",
                            ylabel: str = "model", title: str | None = None, max_points: int = 5000) -> Figure:
    """Scatter of a model's numbers against the exact ones, with the diagonal ``y = x``.

    ``log``: log-log axes (for variances). ``color``: one value per point (e.g. the position) shown
    with a colour bar labelled ``color_label``. At most ``max_points`` points are drawn (evenly
    spaced through the flattened arrays, so the choice is deterministic).
    """
    p, e = _as_numpy(predicted).ravel(), _as_numpy(exact).ravel()
    if p.shape != e.shape:
        raise ValueError(f"predicted {p.shape} and exact {e.shape} must have the same number of values")
    idx = np.linspace(0, p.size - 1, min(max_points, p.size)).astype(int) if p.size else np.arange(0)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(4.8, 4.4))
    c = None if color is None else _as_numpy(color).ravel()[idx]
    sc = ax.scatter(e[idx], p[idx], s=5, alpha=0.5, c=c, cmap="viridis" if c is not None else None,
                    color=None if c is not None else _REG_MODEL_COLOR, rasterized=True)
    if c is not None:
        fig.colorbar(sc, ax=ax, label=color_label)
    both = np.concatenate([p[idx], e[idx]]) if idx.size else np.array([1.0, 2.0])
    lo, hi = float(both.min()), float(both.max())
    ax.plot([lo, hi], [lo, hi], color="k", lw=1, ls="--", label="y = x")
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return fig


def plot_standardised_residuals(residuals: dict[str, Any], *, bins: int = 60, limit: float = 5.0,
                                ax: Axes | None = None, title: str | None = None) -> Figure:
    """Histograms (as densities) of standardised residuals ``(y - mean) / sd`` against the N(0, 1)
    density. ``residuals`` maps a label to an array of residuals; values beyond +-``limit`` are
    clipped into the outermost bins."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 4))
    edges = np.linspace(-limit, limit, bins + 1)
    for label, z in residuals.items():
        ax.hist(np.clip(_as_numpy(z).ravel(), -limit, limit), bins=edges, density=True, histtype="step", lw=1.8,
                label=label)
    grid = np.linspace(-limit, limit, 400)
    ax.plot(grid, np.exp(-0.5 * grid ** 2) / np.sqrt(2 * np.pi), "--", color="k", lw=1.5, label="N(0, 1)")
    ax.set_xlabel("standardised residual (y - mean) / sd")
    ax.set_ylabel("density")
    ax.set_title(title or "Calibration on held-out episodes")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def plot_gaussian_predictive(mean_model: float, var_model: float, mean_bayes: float, var_bayes: float, *,
                             y: float | None = None, ax: Axes | None = None, title: str | None = None) -> Figure:
    """The model's predictive density N(mean_model, var_model) beside the exact one, with the
    realised ``y`` as a vertical line."""
    mm, vm, mb, vb = (float(_as_numpy(v)) for v in (mean_model, var_model, mean_bayes, var_bayes))
    if vm <= 0 or vb <= 0:
        raise ValueError(f"variances must be > 0, got var_model={vm}, var_bayes={vb}")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 3.6))
    sd = max(np.sqrt(vm), np.sqrt(vb))
    lo, hi = min(mm, mb) - 4 * sd, max(mm, mb) + 4 * sd
    if y is not None:
        lo, hi = min(lo, float(y) - sd), max(hi, float(y) + sd)
    g = np.linspace(lo, hi, 500)
    for m, v, color, ls, label in ((mb, vb, BAYES_COLOR, "--", "Bayes (exact)"),
                                   (mm, vm, _REG_MODEL_COLOR, "-", "model")):
        dens = np.exp(-0.5 * (g - m) ** 2 / v) / np.sqrt(2 * np.pi * v)
        ax.plot(g, dens, ls, color=color, lw=2, label=f"{label}: N({m:.2f}, {v:.3f})")
    if y is not None:
        ax.axvline(float(y), color="k", lw=1.2, label=f"realised y = {float(y):.2f}")
    ax.set_xlabel("y")
    ax.set_ylabel("predictive density")
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left")
    return fig


def plot_regression_step(y: Any, mean_model: Any, var_model: Any, mean_bayes: Any, var_bayes: Any,
                         position: int) -> Figure:
    """Two panels for one episode at prediction position ``position``.

    Left: the realised ``y_j`` of every position up to ``position`` (filled: seen as context; hollow:
    the one being predicted) with the exact and the model's predictive mean +- 2 sd at each of them,
    so the bands narrow as evidence accumulates. Right: the two predictive densities at ``position``
    with the realised y. All inputs are one value per position of the episode.
    """
    arrs = [_as_numpy(a).ravel() for a in (y, mean_model, var_model, mean_bayes, var_bayes)]
    n = arrs[0].shape[0]
    if any(a.shape[0] != n for a in arrs):
        raise ValueError("y, mean_model, var_model, mean_bayes and var_bayes need one value per position each")
    if not 0 <= position < n:
        raise ValueError(f"position must be in 0..{n - 1}, got {position}")
    yv, mm, vm, mb, vb = arrs
    fig, (ax_l, ax_r) = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [1.3, 1]})
    j = np.arange(position + 1)
    ax_l.errorbar(j - 0.12, mb[j], yerr=2 * np.sqrt(vb[j]), fmt="s", ms=4, color=BAYES_COLOR, capsize=2,
                  label="Bayes mean +- 2 sd")
    ax_l.errorbar(j + 0.12, mm[j], yerr=2 * np.sqrt(vm[j]), fmt="^", ms=4, color=_REG_MODEL_COLOR, capsize=2,
                  label="model mean +- 2 sd")
    if position > 0:
        ax_l.plot(j[:-1], yv[:position], "o", color="k", ms=5, label="y seen (context)")
    ax_l.plot([position], [yv[position]], "o", mfc="white", mec="k", mew=1.5, ms=8, label="y to predict")
    ax_l.set_xlim(-0.6, n - 0.4)
    ax_l.set_xticks(np.arange(n) if n <= 32 else np.arange(0, n, max(1, n // 16)))
    ax_l.set_xlabel("position j (x token j)")
    ax_l.set_ylabel("y")
    ax_l.set_title(f"predictions at positions 0..{position}")
    ax_l.legend(fontsize=7, loc="best")
    ax_l.grid(alpha=0.3)
    plot_gaussian_predictive(mm[position], vm[position], mb[position], vb[position], y=yv[position], ax=ax_r,
                             title=f"position {position}: predictive densities")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------------
# Chapter 3: filtering a hidden Markov model


def plot_hmm_posteriors(bayes_probs: Any, model_probs: Any | None = None, *, states: Sequence[int] | Any | None = None,
                        obs: Sequence[int] | Any | None = None, title: str | None = None) -> Figure:
    """The filtering posterior of one HMM episode through time, as heatmaps (rows: hidden states,
    columns: time t), the exact posterior on top and, if given, the model's below it.

    ``bayes_probs`` and ``model_probs`` are (K, S). ``states`` (K,) marks the true hidden state with a
    white dot; ``obs`` (K,) writes the observed symbol under each column.
    """
    p = _as_numpy(bayes_probs)
    if p.ndim != 2:
        raise ValueError(f"bayes_probs must be (time, states), got shape {p.shape}")
    panels = [("exact posterior p(s_t | o_0..o_t)", p)]
    if model_probs is not None:
        q = _as_numpy(model_probs)
        if q.shape != p.shape:
            raise ValueError(f"model_probs {q.shape} must have the shape of bayes_probs {p.shape}")
        panels.append(("model", q))
    K, S = p.shape
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(6.0, 0.32 * K + 2), 1.0 + 0.45 * S * len(panels) + 0.6),
                             sharex=True, squeeze=False)
    t = np.arange(K)
    vmax = max(max(float(m.max()) for _, m in panels), 1e-9)  # one colour scale for both panels
    for ax, (label, m) in zip(axes[:, 0], panels):
        im = ax.imshow(m.T, aspect="auto", cmap="Blues", vmin=0.0, vmax=vmax, interpolation="nearest")
        if states is not None:
            ax.scatter(t, _as_numpy(states).astype(int), s=14, color="white", edgecolor="black", lw=0.6)
            label += "   (white dots: the true hidden state)"
        ax.set_ylabel("state")
        ax.set_yticks(np.arange(S))
        ax.set_title(label, fontsize=10, loc="left")
        ax.tick_params(labelsize=7)
    ax = axes[-1, 0]
    step = 1 if K <= 30 else max(1, K // 15)
    ax.set_xticks(t[::step])
    if obs is not None:
        o = _as_numpy(obs).astype(int)
        ax.set_xticklabels([f"{i}\no={o[i]}" for i in t[::step]])
        ax.set_xlabel("time t (and the symbol o_t observed)")
    else:
        ax.set_xlabel("time t")
    fig.colorbar(im, ax=axes[:, 0].tolist(), label="probability", fraction=0.03, pad=0.02)
    if title:
        fig.suptitle(title)
    return fig


def plot_position_errors(curves: dict[str, Sequence[float] | Any], *, train_length: int | None = None,
                         ylabel: str = "entropy MAE (bits)", logy: bool = True, ax: Axes | None = None,
                         title: str | None = None) -> Figure:
    """Per-position error curves against the observation number 1..K (e.g. an ``EvalResult``'s
    ``per_position["entropy_mae"]`` for several models or episode lengths).

    ``train_length`` draws a vertical line after the last position seen in training and shades the
    positions beyond it. ``logy``: log scale (values are clipped at 1e-6 to stay drawable).
    """
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(8, 4))
    longest = 0
    for label, values in curves.items():
        y = _as_numpy(values)
        if y.ndim != 1:
            raise ValueError(f"curve {label!r} must be one value per position, got shape {y.shape}")
        x = np.arange(1, y.size + 1)
        longest = max(longest, y.size)
        ax.plot(x, np.clip(y, 1e-6, None) if logy else y, "o-", ms=3, lw=1.2, label=label)
    if train_length is not None:
        ax.axvline(train_length + 0.5, color="k", ls="--", lw=1.2, label=f"training length ({train_length})")
        if longest > train_length:
            ax.axvspan(train_length + 0.5, longest + 0.5, color=ELIMINATED_COLOR, alpha=0.12,
                       label="positions never seen in training")
    if logy:
        ax.set_yscale("log")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_xlim(0.5, longest + 0.5)
    ax.set_xlabel("observation number (position 1 = o_0)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return fig


def plot_hmm_step(bayes_probs: Any, model_probs: Any, h_bayes: Any, h_model: Any, t: int, *,
                  obs: Sequence[int] | Any | None = None, states: Sequence[int] | Any | None = None) -> Figure:
    """Two panels for time ``t`` of one HMM episode: the exact posterior and the model's over the S
    hidden states as bars (the true state outlined), and both entropies through time with ``t`` marked.

    ``bayes_probs``, ``model_probs``: (K, S); ``h_bayes``, ``h_model``: (K,) entropies in bits.
    """
    p, q = _as_numpy(bayes_probs), _as_numpy(model_probs)
    hb, hm = _as_numpy(h_bayes), _as_numpy(h_model)
    if p.ndim != 2 or q.shape != p.shape:
        raise ValueError(f"bayes_probs {p.shape} and model_probs {q.shape} must both be (time, states)")
    K, S = p.shape
    if hb.shape != (K,) or hm.shape != (K,):
        raise ValueError(f"h_bayes {hb.shape} and h_model {hm.shape} must be one entropy per time step ({K},)")
    if not 0 <= t < K:
        raise ValueError(f"t must be in 0..{K - 1}, got {t}")
    fig, (ax_p, ax_h) = plt.subplots(1, 2, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1, 1.4]})
    x = np.arange(S)
    ax_p.bar(x - 0.2, p[t], width=0.4, color=BAYES_COLOR, label="exact posterior")
    ax_p.bar(x + 0.2, q[t], width=0.4, color=MARGINAL_COLOR, label="model")
    if states is not None:
        s = int(_as_numpy(states)[t])
        ax_p.bar([s], [max(p[t, s], q[t, s])], width=0.9, fill=False, edgecolor="black", lw=1.5,
                 label="true hidden state")
    ax_p.set_xticks(x)
    ax_p.set_xlabel("hidden state")
    ax_p.set_ylabel("probability")
    ax_p.set_ylim(0, 1.05)
    seen = f", observed o_t = {int(_as_numpy(obs)[t])}" if obs is not None else ""
    ax_p.set_title(f"t = {t}{seen}", fontsize=10)
    ax_p.legend(fontsize=8, loc="upper left")
    steps = np.arange(K)
    ax_h.plot(steps, hb, "o-", ms=3, color=BAYES_COLOR, label="exact posterior")
    ax_h.plot(steps, hm, "s--", ms=3, color=MARGINAL_COLOR, label="model")
    ax_h.axhline(np.log2(S), color=ELIMINATED_COLOR, lw=1, ls=":", label=f"uniform, log2 {S}")
    ax_h.plot([t], [hb[t]], "o", ms=10, mfc="none", mec="black", mew=2)
    ax_h.set_xlabel("time t")
    ax_h.set_ylabel("entropy (bits)")
    ax_h.set_ylim(0, np.log2(S) * 1.08)
    ax_h.set_title("entropy of the belief over the hidden state", fontsize=10)
    ax_h.legend(fontsize=8, loc="lower right")
    ax_h.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------------
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
    """
    a, adv, lo = _as_numpy(alpha), _as_numpy(advantage), _as_numpy(loss)
    if a.ndim != 2 or adv.shape != a.shape or lo.shape != (a.shape[0],):
        raise ValueError(f"alpha {a.shape} and advantage {adv.shape} must be (steps + 1, keys) and loss "
                         f"{lo.shape} (steps + 1,)")
    n_steps, n = a.shape
    if not 0 <= step < n_steps:
        raise ValueError(f"step must be in 0..{n_steps - 1}, got {step}")
    if symbols is not None and len(symbols) != n:
        raise ValueError(f"symbols must name the symbol of each of the {n} keys, got {len(symbols)}")
    same = np.array([s == symbols[-1] for s in symbols]) if symbols is not None else np.zeros(n, dtype=bool)
    fig, (ax_a, ax_v, ax_l) = plt.subplots(1, 3, figsize=(13, 3.4), gridspec_kw={"width_ratios": [1.3, 1.3, 1]})
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
    """
    if not curves:
        raise ValueError("curves must hold at least one arm")
    fig, (ax_c, ax_s) = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [1.6, 1]})
    base = None
    for arm, c in curves.items():
        c = _as_numpy(c)
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
        vals = _as_numpy(list(speedups[arm]))
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
    ax_s.set_title("per seed (dots), mean and 95% CI (square)", fontsize=10)
    ax_s.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def plot_frame_vs_precision(stability: dict[str, Sequence[float]], history: Sequence[dict[str, float]], *,
                            title: str = "") -> Figure:
    """Two panels over training: the held-out entropy MAE and KL (log scale), and the attention
    pattern's similarity to the final one beside the relative distance of the value and of the
    query/key weights to their final values.

    ``stability``: ``steps``, ``pattern``, ``values``, ``routing`` lists; ``history``: the trainer's rows.
    """
    fig, (ax_e, ax_s) = plt.subplots(1, 2, figsize=(12, 3.6))
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


def plot_primitives_entropy(rows: Sequence[dict[str, Any]], *, tunnels: Sequence[str] | None = None,
                            archs: Sequence[str] | None = None, error: bool = False, title: str = "") -> Figure:
    """One panel per tunnel: each architecture's mean predictive entropy per position beside Bayes'
    (or, with ``error``, its entropy MAE per position).

    ``rows``: the rows of :func:`bwt_lite.reproduce.reproduce` (``per_position`` with ``h_model``,
    ``h_bayes``, ``entropy_mae``); ``tunnels`` and ``archs`` select and order the panels and curves.
    """
    tunnels = list(dict.fromkeys(r["tunnel"] for r in rows)) if tunnels is None else list(tunnels)
    archs = list(dict.fromkeys(r["arch"] for r in rows)) if archs is None else list(archs)
    if not tunnels:
        raise ValueError("rows has no cells to draw")
    ncols = min(len(tunnels), 2)
    nrows = (len(tunnels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(tunnels):]:
        ax.set_visible(False)
    for ax, tunnel in zip(axes.flat, tunnels):
        cells = {r["arch"]: r for r in rows if r["tunnel"] == tunnel and r["arch"] in archs}
        if not cells:
            ax.set_title(f"{tunnel}: no cells")
            continue
        first = next(iter(cells.values()))["per_position"]
        t = np.arange(len(first["h_bayes"]))
        if not error:
            ax.plot(t, _as_numpy(first["h_bayes"]), "--", color="black", lw=2.5, label="Bayes (exact)")
        for arch in archs:
            if arch in cells:
                pp = cells[arch]["per_position"]
                ax.plot(t, _as_numpy(pp["entropy_mae" if error else "h_model"]), "o-", ms=3, lw=1, label=arch)
        any_cell = next(iter(cells.values()))
        gaussian = any_cell["accuracy"] is None
        ax.set_ylabel(("entropy MAE" if error else "mean entropy") + (" (bits, differential)" if gaussian else " (bits)"))
        ax.set_xlabel("prediction position")
        ax.set_title(f"{tunnel} ({any_cell.get('primitive', '')})", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_accuracy_by_pairs(curves: dict[str, tuple[Sequence[int], Sequence[float]]], *, chance: float | None = None,
                           ax: Axes | None = None, title: str = "") -> Figure:
    """Accuracy on recalled keys against the number of stored pairs, one line per model.

    ``curves`` maps a label to ``(n_pairs, accuracy)``; ``chance`` draws the 1/V line.
    """
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 3.6))
    for label, (n, acc) in curves.items():
        ax.plot(_as_numpy(n), _as_numpy(acc), "o-", ms=4, label=label)
    if chance is not None:
        ax.axhline(chance, color=ELIMINATED_COLOR, ls=":", label="chance (1/V)")
    ax.set_xlabel("stored pairs")
    ax.set_ylabel("accuracy on recalled keys")
    ax.set_ylim(0, 1.05)
    ax.set_title(title or "Binding as the number of stored pairs grows", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
