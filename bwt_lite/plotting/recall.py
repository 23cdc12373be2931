"""Chapter 4: binding (associative recall): figures and the recall widget.
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..evaluate import recall_key_stats
from ..metrics import entropy_bits
from ..tunnels import Tunnel
from .bayes import plot_prediction_vs_posterior
from .style import (BAYES_COLOR, ELIMINATED_COLOR, FORMULA_COLOR, MARGINAL_COLOR, arch_entry, as_numpy, finish,
                    panels, show_figure)


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

    Used in chapter 4.
    """
    tok = as_numpy(tokens).astype(int)
    pos = as_numpy(positions).astype(int)
    if tok.ndim != 1 or pos.ndim != 1:
        raise ValueError(f"tokens and positions must be 1-D (one episode), got shapes {tok.shape} and {pos.shape}")
    P, T = pos.shape[0], tok.shape[0]
    if P and (pos.min() < 0 or pos.max() >= T):
        raise ValueError(f"positions must index tokens 0..{T - 1}")
    seen_a = None if seen is None else as_numpy(seen).astype(bool)
    prev = None if previous is None else as_numpy(previous).astype(int)
    for name, arr in (("seen", seen_a), ("previous", prev)):
        if arr is not None and arr.shape != (P,):
            raise ValueError(f"{name} must have one entry per key step ({P}), got shape {arr.shape}")
    if highlight is not None and not 0 <= highlight < P:
        raise ValueError(f"highlight must be a key step in 0..{P - 1}, got {highlight}")
    if ax is None:
        fig, ax = panels(1, width=max(6.0, 0.2 * T + 1), height=2.0)
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
        ax.text(i, 0.5, label, ha="center", va="center", fontsize=6 if T > 40 else 7,
                rotation=90 if T > 40 else 0)  # upright labels are wider than a box of a long episode
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
    dots when ``h_model`` is given) above the token strip of :func:`plot_recall_tokens`.

    Used in chapter 4.
    """
    tok, pos, h = as_numpy(tokens), as_numpy(positions).astype(int), as_numpy(h_bayes)
    if h.shape != pos.shape:
        raise ValueError(f"h_bayes must have one entropy per key step ({pos.shape[0]}), got shape {h.shape}")
    T = tok.shape[0]
    fig, (ax_h, ax_s) = panels(2, width=max(6.0, 0.2 * T + 1), height=2.0, max_cols=1, sharex=True,
                               gridspec_kw={"height_ratios": [1.2, 1]})
    ax_h.bar(pos, h, width=0.8, color=BAYES_COLOR, label="Bayes entropy")
    if seen is not None:
        s = as_numpy(seen).astype(bool)
        if s.shape == pos.shape and s.any():
            ax_h.plot(pos[s], h[s], "^", color=RECALL_COLOR, ms=5, clip_on=False, label="recall (Bayes: 0 bits)")
    if h_model is not None:
        hm = as_numpy(h_model)
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
    fraction observed in sampled episodes (dots).

    Used in chapter 4.
    """
    e = as_numpy(expected)
    if e.ndim != 1:
        raise ValueError(f"expected must be one probability per key step, got shape {e.shape}")
    t = np.arange(e.shape[0])
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=6, height=3.2)
    ax.plot(t, e, "-", color=FORMULA_COLOR, lw=1.5, label=r"$1-(1-1/V)^t$")
    if observed is not None:
        o = as_numpy(observed)
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

    Used in chapter 4.
    """
    if not breakdowns:
        raise ValueError("breakdowns is empty: give at least one {label: RecallBreakdown}")
    first = next(iter(breakdowns.values()))
    chance = _recall_field(first, "chance") if chance is None else chance
    fig, axes = panels(6, height=7 / 3, sharex="col", gridspec_kw={"height_ratios": [1.2, 1.2, 0.7]})
    axes = axes.reshape(3, 2)
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
    return finish(fig, title)


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
    value it must copy, when it is a recall) above the model's prediction beside the exact posterior.

    Used in chapter 4.
    """
    tok = as_numpy(tokens)
    fig, (ax_s, ax_p) = panels(2, width=max(7.0, 0.2 * tok.shape[0] + 1), height=2.5, max_cols=1,
                               gridspec_kw={"height_ratios": [1, 1.6]})
    plot_recall_tokens(tok, positions, V, seen=seen, previous=previous, highlight=t, ax=ax_s)
    plot_prediction_vs_posterior(model_probs, bayes_probs, ax=ax_p, title=title or f"key step t = {t}")
    fig.tight_layout()
    return fig


def recall_widget(model: torch.nn.Module, tunnel: Tunnel, seed: int = 0, position: int | None = None) -> ipywidgets.interactive:
    """Step through the key positions of one recall episode (chapter 4).

    At key step ``t`` it prints the key, whether it was seen before (at which pair, how far back,
    with which value) and both entropies, and draws the episode's tokens with that key outlined above
    the model's predicted distribution beside the exact posterior. Controls: the episode seed and the
    key step. ``position`` is the initial key step (default: the episode's first recall).

    Used in chapter 4.
    """
    n = tunnel.positions.numel()
    if position is not None and not 0 <= position < n:
        raise ValueError(f"position must be in 0..{n - 1}, got {position}")
    first = next(model.parameters(), None)
    device = first.device if first is not None else torch.device("cpu")
    cache: dict[int, dict] = {}

    def episode(s: int) -> dict:
        if s not in cache:
            ep = tunnel.sample(1, torch.Generator(device=device).manual_seed(s))
            with torch.no_grad():
                q = torch.softmax(model(ep.inputs, ep.positions).double(), -1)[0].cpu()
            stats = recall_key_stats(ep.inputs[:, ep.positions], tunnel.V)
            cache[s] = {"tokens": ep.inputs[0].cpu(), "positions": ep.positions.cpu(), "p": ep.probs[0].cpu(), "q": q,
                        "keys": ep.inputs[0, ep.positions].cpu().tolist(), "values": ep.target[0].cpu().tolist(),
                        **{k: v[0].cpu() for k, v in stats.items()}}
        return cache[s]

    def show(seed: int, position: int) -> None:
        e = episode(seed)
        t = position
        key, p, q = e["keys"][t], e["p"][t], e["q"][t]
        h_b, h_m = entropy_bits(p).item(), entropy_bits(q).item()
        if e["seen"][t]:
            s = int(e["previous"][t])
            print(f"key step t = {t}: key {key} was SEEN at pair {s} ({int(e['distance'][t])} pair(s) back) with "
                  f"value {e['values'][s]}: Bayes is a point mass on it (recall)")
        else:
            print(f"key step t = {t}: key {key} is NEW: Bayes is uniform over all {tunnel.V} values")
        print(f"distinct pairs stored before it: {int(e['stored'][t])} | H_Bayes {h_b:.3f} bits | H_model {h_m:.3f} bits"
              f" | model's top value {int(q.argmax())} (p = {q.max().item():.3f})")
        fig = plot_recall_step(e["tokens"], e["positions"], tunnel.V, t, q, p, seen=e["seen"],
                                     previous=e["previous"],
                                     title=f"key step {t}: H_Bayes {h_b:.3f} bits, H_model {h_m:.3f} bits")
        show_figure(fig)

    if position is None:
        seen0 = episode(seed)["seen"]
        position = int(seen0.nonzero()[0, 0]) if seen0.any() else 0
    return ipywidgets.interactive(
        show, seed=ipywidgets.IntText(value=seed, description="episode seed"),
        position=ipywidgets.IntSlider(value=position, min=0, max=n - 1, description="key step",
                                      continuous_update=False))


CAPACITY_COLORS = {"transformer": "C0", "transformer+alibi": "C1", "lstm": "C2", "mamba": "C3"}


def capacity_color(arch: str) -> str:
    """The colour of a capacity sweep's architecture (:data:`bwt_lite.capacity.ARCHS`)."""
    return arch_entry(CAPACITY_COLORS, arch, "CAPACITY_COLORS (bwt_lite/plotting/recall.py)")


def plot_capacity(rows: Sequence[dict[str, Any]], no_binding: dict[Any, float] | None = None,
                  title: str = "") -> Figure:
    """Binding capacity on MQAR, two panels. Left: query accuracy against stored pairs, one line per
    (architecture, width). Right: at the largest pair count, accuracy against the numbers each model
    carries from token to token (:func:`bwt_lite.capacity.state_numbers`: the recurrent state, or the
    transformer's key-value cache), log scale.

    ``rows``: those of :func:`bwt_lite.capacity.run_sweep` (or ``load_sweep()["rows"]``);
    ``no_binding``: {pairs: accuracy} of the best reader without binding, drawn as a grey line.

    Used in chapter 4.
    """
    if not rows:
        raise ValueError("rows has no cells to draw")
    fig, (ax, ax_state) = panels(2, height=3.6)
    widest = max(r["d_model"] for r in rows)
    pairs = sorted({r["n_pairs"] for r in rows})
    if no_binding:
        nb = sorted((int(k), v) for k, v in no_binding.items())
        ax.plot([k for k, _ in nb], [100 * v for _, v in nb], color="0.55", linestyle=":", marker="x",
                label="reader without binding")
    for (arch, d) in dict.fromkeys((r["arch"], r["d_model"]) for r in rows):
        pts = sorted((r["n_pairs"], r["accuracy"]) for r in rows if (r["arch"], r["d_model"]) == (arch, d))
        ax.plot([p for p, _ in pts], [100 * a for _, a in pts], marker="o" if d == widest else "s",
                color=capacity_color(arch), linestyle="-" if d == widest else "--")
    ax.set_xscale("log", base=2)
    ax.set_xticks(pairs, [str(p) for p in pairs])
    ax.set_xlabel("stored pairs")
    ax.set_ylabel("query accuracy (%)")
    ax.set_ylim(0, 102)
    last = [r for r in rows if r["n_pairs"] == pairs[-1]]
    handles = []  # one legend for both panels: colour = architecture; solid line and circle = widest model
    for r in last:
        style = dict(color=capacity_color(r["arch"]), marker="o" if r["d_model"] == widest else "s")
        ax_state.scatter(r["state_numbers"], 100 * r["accuracy"], s=40, zorder=3, **style)
        handles.append(Line2D([], [], linestyle="-" if r["d_model"] == widest else "--",
                              label=f"{r['arch']}, d={r['d_model']}", **style))
    if no_binding and str(pairs[-1]) in {str(k) for k in no_binding}:
        level = {str(k): v for k, v in no_binding.items()}[str(pairs[-1])]
        ax_state.axhline(100 * level, color="0.55", linestyle=":")
        handles.append(Line2D([], [], color="0.55", linestyle=":", marker="x", label="reader without binding"))
    ax_state.legend(handles=handles, fontsize="x-small", loc="upper left")
    ax_state.set_xscale("log")
    ax_state.set_xlabel("numbers carried between tokens")
    ax_state.set_ylabel(f"query accuracy at {pairs[-1]} pairs (%)")
    ax_state.set_ylim(0, 102)
    return finish(fig, title or "Binding capacity (MQAR, the same training budget)")


def plot_capacity_curves(rows: Sequence[dict[str, Any]], n_pairs: int, no_binding: float | None = None,
                         title: str = "") -> Figure:
    """Held-out query accuracy against training episodes for every cell of the sweep at ``n_pairs``
    stored pairs (``rows[i]["curve"]``: [episodes, accuracy] pairs), with the reader without binding
    as a grey line.

    Used in chapter 4.
    """
    cells = [r for r in rows if r["n_pairs"] == n_pairs]
    if not cells:
        raise ValueError(f"no cell of the sweep has {n_pairs} pairs")
    fig, ax = panels(1, width=6.4, height=3.6)
    widest = max(r["d_model"] for r in cells)
    for r in cells:
        ep, acc = zip(*r["curve"])
        ax.plot(ep, [100 * a for a in acc], color=capacity_color(r["arch"]),
                linestyle="-" if r["d_model"] == widest else "--", label=f"{r['arch']}, d={r['d_model']}")
    if no_binding is not None:
        ax.axhline(100 * no_binding, color="0.55", linestyle=":", label="reader without binding")
    ax.set_xlabel("training episodes")
    ax.set_ylabel("held-out query accuracy (%)")
    ax.set_ylim(0, 102)
    ax.legend(fontsize="x-small")
    return finish(fig, title or f"Learning curves at {n_pairs} stored pairs")

