"""Figures and widgets for the value manifold, the belief-substrate probes, the frame-precision
dissociation (chapter 9) and the belief simplex (chapter 10). They draw results computed by
:mod:`~bwt_lite.geometry.manifold`, :mod:`~bwt_lite.geometry.probes`,
:mod:`~bwt_lite.geometry.dissociation` and :mod:`~bwt_lite.geometry.simplex`, and compute no science.

Every plotting function returns the :class:`matplotlib.figure.Figure`; those that accept ``ax`` draw
into it. Widgets are ``ipywidgets.interactive`` controls that run once when built (so an executed
notebook shows their first state) and index precomputed results.
"""
from __future__ import annotations

import textwrap
from typing import Any, Mapping, Sequence

import ipywidgets
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .style import BAYES_COLOR, ELIMINATED_COLOR, FORMULA_COLOR, MARGINAL_COLOR, as_numpy, panels, show_figure


STATE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _axes(ax: Axes | None, figsize: tuple[float, float] = (5.5, 4.2)) -> tuple[Figure, Axes]:
    return (ax.figure, ax) if ax is not None else panels(1, width=figsize[0], height=figsize[1])


def plot_value_manifold(scores: Any, entropy: Any, *, explained: Sequence[float] | None = None, ax: Axes | None = None,
                        title: str = "", max_points: int = 4000, colorbar: bool = True) -> Figure:
    """PC1 against PC2 of a representation, one dot per (episode, position), colored by the Bayes entropy.

    Used in chapter 9.
    """
    fig, ax = _axes(ax)
    s, h = as_numpy(scores)[:max_points], as_numpy(entropy)[:max_points]
    sc = ax.scatter(s[:, 0], s[:, 1], c=h, cmap="viridis", s=6, alpha=0.7, linewidths=0)
    if colorbar:
        fig.colorbar(sc, ax=ax, label="Bayes entropy (bits)")
    ex = list(explained or [])
    ax.set_xlabel(f"PC1 ({100 * ex[0]:.1f} % of variance)" if ex else "PC1")
    ax.set_ylabel(f"PC2 ({100 * ex[1]:.1f} %)" if len(ex) > 1 else "PC2")
    ax.set_title(title, fontsize=10)
    return fig


def plot_manifold_comparison(rows: Mapping[str, Mapping[str, float]], *, paper: float | None = None,
                             paper_range: tuple[float, float] | None = None, ax: Axes | None = None) -> Figure:
    """Bars of PC1's variance share under several definitions (``rows``: label -> {definition: share})
    beside the paper's claim (a line) and Paper III's range (a band).

    Used in chapter 9.
    """
    fig, ax = _axes(ax, (8, 3.8))
    labels = list(rows)
    defs = list(next(iter(rows.values())))
    width = 0.8 / len(defs)
    for j, d in enumerate(defs):
        ax.bar(np.arange(len(labels)) + (j - (len(defs) - 1) / 2) * width, [100 * rows[lab][d] for lab in labels],
               width, label=d)
    if paper_range is not None:
        ax.axhspan(100 * paper_range[0], 100 * paper_range[1], color=FORMULA_COLOR, alpha=0.12,
                   label="Paper III recap range")
    if paper is not None:
        ax.axhline(100 * paper, color=FORMULA_COLOR, ls="--", lw=1, label=f"paper: > {100 * paper:.0f} %")
    ax.set_xticks(np.arange(len(labels)), ["\n".join(textwrap.wrap(lab, 20)) for lab in labels], fontsize=8)
    ax.set_ylabel("PC1 share of variance (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=5)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_probe_r2(results: Mapping[str, Any], *, ax: Axes | None = None, title: str = "") -> Figure:
    """Held-out R^2 of the linear probes by layer, one line per model (``results``: label -> ProbeResult).

    Used in chapter 9.
    """
    fig, ax = _axes(ax, (6.5, 3.8))
    longest = max(results.values(), key=lambda r: len(r.layers))
    for label, res in results.items():
        # each layer at its own name's tick: a shallower model's final norm sits at "final norm",
        # not at the deeper model's block of the same index
        x = [longest.layers.index(name) if name in longest.layers else i for i, name in enumerate(res.layers)]
        ax.plot(x, res.r2, "o-", ms=4, label=label)
    first = next(iter(results.values()))
    ax.set_xticks(range(len(longest.layers)), longest.layers, rotation=20, fontsize=8)
    ax.axhline(0, color=ELIMINATED_COLOR, lw=0.8)
    ax.set_ylim(min(-0.05, min(min(r.r2) for r in results.values())), 1.02)
    ax.set_ylabel(f"held-out R$^2$ ({first.target})")
    ax.set_title(title or "linear probe to the exact posterior, by layer", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _precision_panel(ax: Axes, d: Any, step: int | None = None) -> None:
    x = np.maximum(d.steps, 1)
    ax.plot(x, d.entropy_mae, "o-", ms=3, color=BAYES_COLOR, label="entropy MAE")
    ax.plot(x, d.kl, "s-", ms=3, color=MARGINAL_COLOR, label="KL")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training step (step 0 drawn at 1)")
    ax.set_ylabel("bits (held-out)")
    ax.set_title("precision keeps improving", fontsize=10)
    if step is not None:
        ax.axvline(max(step, 1), color="k", lw=1, alpha=0.6)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")


def _stability_panel(ax: Axes, d: Any, step: int | None = None) -> None:
    x = np.maximum(d.steps, 1)
    ax.plot(x, d.pattern, "o-", ms=3, color=BAYES_COLOR, label="attention pattern vs final (1 - TV)")
    ax.plot(x, d.key_frame, "^-", ms=3, color=FORMULA_COLOR, label="layer-0 key frame vs final (r)")
    ax.plot(x, d.key_overlap, "v:", ms=3, color="#9467bd", label="key subspace overlap vs final")
    ax.axhline(d.overlap_null, color="#9467bd", lw=0.8, ls="--", label=f"overlap of random subspaces ({d.overlap_null:.2f})")
    ax.plot(x, d.pc1, "s--", ms=3, color=MARGINAL_COLOR, label="value manifold: PC1 share")
    ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("training step (step 0 drawn at 1)")
    ax.set_title("the frame settles early", fontsize=10)
    if step is not None:
        ax.axvline(max(step, 1), color="k", lw=1, alpha=0.6)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(alpha=0.3, which="both")


def plot_dissociation(d: Any, *, title: str = "") -> Figure:
    """Two panels over training (log steps): held-out entropy MAE and KL; attention-pattern and
    key-frame similarity to the final model, with the value manifold's PC1 share (a Dissociation).

    Used in chapter 9.
    """
    fig, (a, b) = panels(2, height=3.4, max_cols=1)
    _precision_panel(a, d)
    _stability_panel(b, d)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def plot_snapshot(view: Any, d: Any, tokens: Sequence[str] | None = None) -> Figure:
    """One snapshot: where it sits on the curves, its attention pattern on one episode, its value manifold.

    Used in chapter 9.
    """
    fig, axes = panels(3, height=3.6)
    _precision_panel(axes[0], d, view.step)
    i = d.steps.index(view.step)
    axes[0].set_title(f"step {view.step}: MAE {d.entropy_mae[i]:.3f} bits\npattern vs final {d.pattern[i]:.2f}",
                      fontsize=10)
    pat = as_numpy(view.pattern)
    axes[1].imshow(pat, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    axes[1].set_title(f"layer {view.layer}, head {view.head}:\nattention on one episode", fontsize=10)
    axes[1].set_xlabel("key position")
    axes[1].set_ylabel("query position")
    if tokens is not None and len(tokens) <= 40:
        axes[1].set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=6)
    plot_value_manifold(view.scores, view.entropy, explained=view.explained, ax=axes[2],
                        title="value manifold (final representation)")
    fig.tight_layout()
    return fig


def dissociation_widget(views: Sequence[Any], d: Any, index: int = 0, tokens: Sequence[str] | None = None):
    """Scrub through the snapshots of a trajectory: precision so far, attention, value manifold.
    ``views`` from :func:`~bwt_lite.geometry.dissociation.snapshot_views`, ``d`` from
    :func:`~bwt_lite.geometry.dissociation.frame_precision`.

    Used in chapter 9.
    """
    if not 0 <= index < len(views):
        raise ValueError(f"index must be in 0..{len(views) - 1}, got {index}")
    steps = [v.step for v in views]

    def show(step: int) -> None:
        fig = plot_snapshot(views[steps.index(step)], d, tokens)
        show_figure(fig)

    slider = ipywidgets.SelectionSlider(options=steps, value=steps[index], description="step",
                                        continuous_update=False)
    return ipywidgets.interactive(show, step=slider)


def plot_belief_simplex(result: Any, *, color_by: str = "state", ax: Axes | None = None, title: str = "",
                        max_points: int = 3000) -> Figure:
    """PC1 against PC2 at the symbol tokens, colored by the most likely state or by the Bayes entropy
    (a SimplexResult).

    Used in chapter 10.
    """
    if color_by not in ("state", "entropy"):
        raise ValueError(f"color_by must be 'state' or 'entropy', got {color_by!r}")
    fig, ax = _axes(ax, (5, 4.2))
    s = as_numpy(result.scores)[:max_points]
    if color_by == "entropy":
        sc = ax.scatter(s[:, 0], s[:, 1], c=as_numpy(result.entropy)[:max_points], cmap="viridis", s=6, alpha=0.7, linewidths=0)
        fig.colorbar(sc, ax=ax, label="Bayes entropy (bits)")
    else:
        state = as_numpy(result.state)[:max_points].astype(int)
        for k in sorted(set(state.tolist())):
            m = state == k
            ax.scatter(s[m, 0], s[m, 1], s=6, alpha=0.7, linewidths=0, color=STATE_COLORS[k % len(STATE_COLORS)],
                       label=f"state {k}")
        ax.legend(fontsize=7, markerscale=2, loc="best")
    ex = result.explained
    ax.set_xlabel(f"PC1 ({100 * ex[0]:.1f} %)")
    ax.set_ylabel(f"PC2 ({100 * ex[1]:.1f} %)")
    ax.set_title(title, fontsize=10)
    return fig


def plot_simplex_by_layer(layers: Mapping[str, Mapping[str, Any]], *, paper: Mapping[str, float] | None = None) -> Figure:
    """Through the layers, one color per model (``layers``: model -> {layer label: SimplexResult}):
    the silhouette by most likely state (full representation), and the held-out R^2 of the whole
    posterior (solid) and of its entropy (dashed), against relative depth (0: the embedding, 1: the
    final norm, the blocks evenly in between, so models of different depths line up); ``paper``:
    model -> the published entropy R^2, drawn as a star at the final layer.

    Used in chapter 10.
    """
    fig, (a, b) = panels(2, height=3.4, max_cols=1)
    for j, (label, res) in enumerate(layers.items()):
        x = np.linspace(0.0, 1.0, len(res))
        color = STATE_COLORS[j % len(STATE_COLORS)]
        a.plot(x, [r.silhouette_full for r in res.values()], "o-", ms=4, color=color, label=f"{label} ({len(res) - 2} blocks)")
        b.plot(x, [r.posterior_r2 for r in res.values()], "o-", ms=4, color=color, label=f"{label}: posterior")
        b.plot(x, [r.entropy_r2 for r in res.values()], "s--", ms=3, color=color, alpha=0.7, label=f"{label}: entropy")
        if paper and label in paper:
            b.plot([1.0], [paper[label]], "*", ms=12, color=color, mec="k", label=f"{label}: paper (entropy)")
    for ax, what in ((a, "silhouette by most likely state"), (b, "held-out R$^2$")):
        ax.set_xticks([0.0, 1.0], ["embedding", "final norm"], fontsize=8)
        ax.set_xlabel("relative depth (each dot a layer: embedding, blocks, final norm)", fontsize=8)
        ax.set_ylabel(what)
        ax.axhline(0, color=ELIMINATED_COLOR, lw=0.8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    a.set_title("clusters by most likely state, layer by layer", fontsize=10)
    b.set_title("how linearly the belief can be read, layer by layer", fontsize=10)
    fig.tight_layout()
    return fig


def simplex_widget(layers: Mapping[str, Mapping[str, Any]], model: str | None = None, layer: str | None = None,
                   color_by: str = "state"):
    """Pick a model, a layer and a coloring: PCA(2) of that representation at the symbol tokens
    (``layers``: model -> {layer label: SimplexResult}, e.g. from ``simplex_by_layer``).

    Used in chapter 10.
    """
    models = list(layers)
    model = model or models[0]
    if model not in layers:
        raise ValueError(f"model must be one of {models}, got {model!r}")
    layer = layer or list(layers[model])[-1]
    if layer not in layers[model]:
        raise ValueError(f"layer must be one of {list(layers[model])}, got {layer!r}")

    def show(model: str, layer: str, color_by: str) -> None:
        names = list(layers[model])
        if layer not in names:
            layer = names[-1]
        r = layers[model][layer]
        head = "" if r.silhouette_head != r.silhouette_head else f"; head's readout {r.silhouette_head:.3f}"
        print(f"{model}, {layer}: silhouette by state {r.silhouette_full:.3f} (PCA plane {r.silhouette_pc2:.3f}{head}), "
              f"by symbol {r.silhouette_token:.3f} | entropy R^2 {r.entropy_r2:.3f} | posterior R^2 {r.posterior_r2:.3f}")
        titles = {"state": "colored by the most likely state", "entropy": "colored by the Bayes entropy"}
        shown = list(titles) if color_by == "both" else [color_by]
        fig, axes = panels(len(shown), width=5.5 * len(shown), height=4.0)
        for ax, by in zip(np.atleast_1d(axes), shown):
            plot_belief_simplex(r, color_by=by, ax=ax, title=titles[by])
        fig.tight_layout()
        show_figure(fig)

    all_layers = list(dict.fromkeys(name for res in layers.values() for name in res))
    return ipywidgets.interactive(
        show,
        model=ipywidgets.Dropdown(options=models, value=model, description="model"),
        layer=ipywidgets.Dropdown(options=all_layers, value=layer, description="layer"),
        color_by=ipywidgets.ToggleButtons(options=["state", "entropy", "both"], value=color_by, description="color"),
    )


__all__ = ["dissociation_widget", "plot_belief_simplex", "plot_dissociation", "plot_manifold_comparison",
           "plot_probe_r2", "plot_simplex_by_layer", "plot_snapshot", "plot_value_manifold", "simplex_widget"]
