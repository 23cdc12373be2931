"""Plots and widgets for the attention diagnostics of chapters 7 and 8 (hypothesis frame, head and
layer ablation, progressive elimination). They draw results computed by
:mod:`bwt_lite.geometry.frame`, :mod:`~bwt_lite.geometry.ablation` and
:mod:`~bwt_lite.geometry.elimination`; the widgets call those modules for every number.

Widgets are ``ipywidgets.interactive`` controls: they run once when built (so an executed notebook
shows the initial state) and respond to the controls on Colab or in Jupyter.
"""
from __future__ import annotations

from typing import Sequence

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import nn

from ..geometry.ablation import HeadAblation, LayerAblation
from ..geometry.elimination import ROLES, EliminationResult
from ..geometry.frame import DEFINITIONS, FrameResult, key_orthogonality, random_init_model
from .style import panels, show_figure


ROLE_COLORS = {"self": "#7f7f7f", "key": "#1f77b4", "consistent": "#2ca02c", "eliminated": "#d62728",
               "future": "#dddddd"}
TRAINED_COLOR, RANDOM_COLOR, ANALYTIC_COLOR = "#1f77b4", "#ff7f0e", "black"


# ------------------------------------------------------------------------------------------------
# Hypothesis frame


def plot_key_cosines(result: FrameResult, head: int = 0, *, axes: Sequence[Axes] | None = None,
                     labels: Sequence[str] | None = None) -> Figure:
    """The cosine matrix of the hypothesis keys of one head: trained beside random init. Used in chapter 7."""
    n_heads = result.cosines.shape[0]
    if not 0 <= head < n_heads:
        raise ValueError(f"head must be in 0..{n_heads - 1} for definition {result.definition}, got {head}")
    if axes is None:
        fig, axes = panels(2, height=3.8, layout="constrained")
    fig = axes[0].figure
    signed = result.definition.endswith("signed")
    for ax, mat, vals, name in ((axes[0], result.cosines, result.trained, "trained"),
                                (axes[1], result.cosines_random, result.random_init, "random init")):
        im = ax.imshow(mat[head].numpy(), cmap="RdBu_r", vmin=-1, vmax=1)
        stat = "mean cos" if signed else "mean |cos|"
        ax.set_title(f"{name}:\n{stat} off-diagonal {vals[head]:+.3f}", fontsize=10)
        n = mat.shape[-1]
        ticks = np.arange(n)
        ax.set_xticks(ticks[:: max(1, n // 10)])
        ax.set_yticks(ticks[:: max(1, n // 10)])
        if labels is not None:
            ax.set_xticklabels([labels[i] for i in ticks[:: max(1, n // 10)]], fontsize=7)
            ax.set_yticklabels([labels[i] for i in ticks[:: max(1, n // 10)]], fontsize=7)
        ax.set_xlabel("hypothesis token")
    fig.colorbar(im, ax=list(axes), shrink=0.8, label="cosine")
    where = f"head {head}" if n_heads > 1 else "all heads"
    fig.suptitle(f"layer-{result.layer} keys, {result.definition}, {where} (dim {result.dim}; "
                 f"analytic E|cos| {result.analytic_exact:.3f})", fontsize=10)
    return fig


def plot_frame_by_head(result: FrameResult, *, ax: Axes | None = None,
                       paper: dict[str, float | tuple[float, float]] | None = None) -> Figure:
    """Per head: the trained statistic beside random init, with the analytic value as a line.

    ``paper``: published values, ``{label: value}`` drawn as a line, or ``{label: (low, high)}`` as a band.

    Used in chapter 7.
    """
    if ax is None:
        fig, ax = panels(1, height=3.4)
    h = np.arange(len(result.trained))
    ax.bar(h - 0.2, result.trained, 0.4, color=TRAINED_COLOR, label="trained")
    ax.bar(h + 0.2, result.random_init, 0.4, color=RANDOM_COLOR, label="random init (same seed)")
    ax.axhline(result.analytic_exact, color=ANALYTIC_COLOR, ls="--", lw=1,
               label=f"isotropic Gaussian, d = {result.dim}")
    for i, (label, v) in enumerate((paper or {}).items()):
        if isinstance(v, tuple):
            ax.axhspan(v[0], v[1], color=f"C{i + 4}", alpha=0.2, label=label)
        else:
            ax.axhline(v, color=f"C{i + 4}", ls=":", lw=1.5, label=label)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xticks(h)
    ax.set_xlabel("head" if len(h) > 1 else "")
    ax.set_ylabel("off-diagonal cosine" + (" (signed)" if result.definition.endswith("signed") else " |cos|"))
    ax.set_title(f"layer-{result.layer} key orthogonality: {result.definition}", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.figure.tight_layout()
    return ax.figure


def frame_widget(model: nn.Module, *, seed: int, tokens: Sequence[int] | None = None,
                 labels: Sequence[str] | None = None) -> ipywidgets.interactive:
    """Choose a definition, layer and head: the key cosine matrix of the trained model beside random init.

    Used in chapter 7.
    """
    ref = random_init_model(model, seed)
    n_layers = len(model.backbone.blocks)
    n_heads = model.backbone.blocks[0].attn.n_heads

    def show(definition: str, layer: int, head: int) -> None:
        res = key_orthogonality(model, definition, seed=seed, tokens=tokens, layer=layer, reference=ref)
        h = min(head, len(res.trained) - 1)
        print(f"{res.definition}, layer {layer}: trained {res.trained[h]:+.3f}, random init {res.random_init[h]:+.3f}, "
              f"analytic {res.analytic_exact:.3f} (dimension {res.dim})"
              + ("" if len(res.trained) > 1 else " (one key per token: the head slider does nothing)"))
        show_figure(plot_key_cosines(res, h, labels=labels))

    return ipywidgets.interactive(
        show,
        definition=ipywidgets.Dropdown(options=[d.name for d in DEFINITIONS], value=DEFINITIONS[0].name,
                                       description="definition"),
        layer=ipywidgets.IntSlider(value=0, min=0, max=n_layers - 1, description="layer", continuous_update=False),
        head=ipywidgets.IntSlider(value=0, min=0, max=n_heads - 1, description="head", continuous_update=False),
    )


# ------------------------------------------------------------------------------------------------
# Ablation


def plot_head_ablation(result: HeadAblation, *, ax: Axes | None = None, paper: tuple[float, float] | None = None) -> Figure:
    """Entropy MAE with each head removed (one group of bars per ablated layer), intact MAE as a line.

    ``paper``: a published (low, high) range of ablated-head MAEs to shade.

    Used in chapter 7.
    """
    if ax is None:
        fig, ax = panels(1, height=3.4)
    n_heads = result.mae.shape[1]
    width = 0.8 / len(result.layers)
    for i, layer in enumerate(result.layers):
        x = np.arange(n_heads) + (i - (len(result.layers) - 1) / 2) * width
        ax.bar(x, result.mae[layer].numpy(), width, label=f"layer {layer} head removed", color=f"C{i}")
    ax.axhline(result.baseline_mae, color="black", ls="--", lw=1, label=f"intact ({result.baseline_mae:.4f} bits)")
    if paper is not None:
        ax.axhspan(paper[0], paper[1], color="grey", alpha=0.2, label="paper: layer-0 heads removed")
    ax.set_yscale("log")
    ax.set_xticks(np.arange(n_heads))
    ax.set_xlabel("head")
    ax.set_ylabel("entropy MAE (bits, log scale)")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.figure.tight_layout()
    return ax.figure


def plot_layer_ablation(result: LayerAblation, *, paper_ratio: float | None = None, ax: Axes | None = None) -> Figure:
    """Error ratio (ablated / intact) per bypassed block, entropy MAE and KL, on a log scale. Used in chapter 8."""
    if ax is None:
        fig, ax = panels(1, width=6, height=3.4)
    x = np.arange(len(result.mae))
    ax.bar(x - 0.2, result.error_ratio, 0.4, label="entropy MAE ratio")
    ax.bar(x + 0.2, result.kl_ratio, 0.4, label="KL ratio")
    ax.axhline(1, color="grey", lw=0.8)
    if paper_ratio is not None:
        ax.axhline(paper_ratio, color="black", ls="--", lw=1, label=f"paper: > {paper_ratio:g}x")
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([f"block {i}" for i in x])
    ax.set_xlabel("bypassed block")
    ax.set_ylabel("ablated / intact")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.figure.tight_layout()
    return ax.figure


def plot_layer_ablation_curves(result: LayerAblation, *, plateau: float | None = None, ax: Axes | None = None) -> Figure:
    """Entropy MAE per query step, intact and with each block bypassed (log scale); ``plateau``: a
    reference level (e.g. the context-blind MLP's) as a dashed line.

    Used in chapter 8.
    """
    if ax is None:
        fig, ax = panels(1, width=7, height=3.4)
    t = np.arange(len(result.baseline_per_position))
    ax.plot(t, result.baseline_per_position, "-o", ms=3, color="black", label="intact")
    for i, curve in enumerate(result.per_position):
        ax.plot(t, curve, "-o", ms=3, color=f"C{i}", label=f"block {i} bypassed")
    if plateau is not None:
        ax.axhline(plateau, color="grey", ls="--", lw=1, label=f"context-blind plateau ({plateau:.3f})")
    ax.set_yscale("log")
    ax.set_xlabel("query step t (pairs revealed)")
    ax.set_ylabel("entropy MAE (bits, log scale)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.figure.tight_layout()
    return ax.figure


# ------------------------------------------------------------------------------------------------
# Progressive elimination


def plot_role_mass(result: EliminationResult, roles: Sequence[str] = ("eliminated", "key", "self"), *,
                   axes: Sequence[Axes] | None = None, reference: EliminationResult | None = None) -> Figure:
    """Per layer (one panel each): the mass each query step puts on each role, heads averaged, with
    the uniform-attention value dashed; ``reference`` (e.g. the random-init model) dotted.

    Used in chapter 8.
    """
    L = result.n_layers
    own = axes is None
    if own:
        _, axes = panels(L, width=5.5 * L, height=3.0, sharey=True, layout="constrained")
        axes = np.atleast_1d(axes)
    t = np.arange(len(result.positions))
    for layer, ax in enumerate(axes):
        for role in roles:
            c = ROLE_COLORS[role]
            ax.plot(t, result.layer_mass(role)[layer].numpy(), "-o", ms=3, color=c, label=role)
            ax.plot(t, result.uniform_mass(role).numpy(), "--", color=c, lw=1)
            if reference is not None:
                ax.plot(t, reference.layer_mass(role)[layer].numpy(), ":", color=c, lw=1.5)
        ax.set_title(f"layer {layer}", fontsize=10)
        ax.set_xlabel("query step t (pairs revealed)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        if layer == 0 or (own and layer % 2 == 0):  # the first panel of each row
            ax.set_ylabel("attention mass (mean over heads)")
    fig = axes[0].figure
    styles = "solid: trained, dashed: uniform attention" + (", dotted: random init" if reference is not None else "")
    if own:  # one legend above the grid
        fig.legend(*axes[-1].get_legend_handles_labels(), loc="outside upper center", ncols=len(roles), fontsize=8,
                   frameon=False, title=styles, title_fontsize=8)
    else:
        axes[-1].legend(fontsize=8, frameon=False, title=styles.replace(", ", "\n"), title_fontsize=8,
                        loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.tight_layout()
    return fig


def plot_attention_entropy(result: EliminationResult, *, ax: Axes | None = None,
                           reference: EliminationResult | None = None) -> Figure:
    """Attention entropy (bits, mean over heads) per layer against the query step, beside uniform attention.

    Used in chapter 8.
    """
    if ax is None:
        fig, ax = panels(1, width=6, height=3.4)
    t = np.arange(len(result.positions))
    for layer in range(result.n_layers):
        ax.plot(t, result.entropy[layer].mean(0).numpy(), "-o", ms=3, color=f"C{layer}", label=f"layer {layer}")
        if reference is not None:
            ax.plot(t, reference.entropy[layer].mean(0).numpy(), ":", color=f"C{layer}", label=f"layer {layer}, random init")
    ax.plot(t, result.uniform_entropy().numpy(), "--", color="black", lw=1, label="uniform over visible positions")
    ax.set_xlabel("query step t (pairs revealed)")
    ax.set_ylabel("attention entropy (bits)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return ax.figure


def plot_qk_cosine(result: EliminationResult, *, head: int | None = None, axes: Sequence[Axes] | None = None) -> Figure:
    """Query-key cosine heatmaps, one per layer (mean over heads, or one ``head``), query rows = token positions.

    Used in chapter 8.
    """
    L = result.n_layers
    if axes is None:
        _, axes = panels(L, width=5.0 * L, height=3.6, layout="constrained")
        axes = np.atleast_1d(axes)
    for layer, ax in enumerate(axes):
        c = result.qk_cos[layer]
        mat = c.mean(0) if head is None else c[head]
        im = ax.imshow(mat.numpy(), cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set_title(f"layer {layer}" + ("" if head is None else f", head {head}"), fontsize=10)
        ax.set_xlabel("key position (odd: values)")
        ax.set_ylabel("query position (even: keys)")
    axes[0].figure.colorbar(im, ax=list(axes), shrink=0.8, label="cos(q, k)")
    return axes[0].figure


def plot_value_mass(result: EliminationResult, *, ax: Axes | None = None) -> Figure:
    """Mean attention weight on a revealed value's position, by value identity: one row per (layer, head).

    Used in chapter 8.
    """
    L, H, V = result.value_mass.shape
    if ax is None:
        fig, ax = panels(1, height=0.28 * L * H + 1.5)
    im = ax.imshow(result.value_mass.reshape(L * H, V).numpy(), aspect="auto", cmap="viridis", vmin=0)
    ax.set_yticks(np.arange(L * H))
    ax.set_yticklabels([f"L{layer} H{h}" for layer in range(L) for h in range(H)], fontsize=7)
    for layer in range(1, L):
        ax.axhline(layer * H - 0.5, color="white", lw=2)
    ax.set_xticks(np.arange(V))
    ax.set_xlabel("revealed value v")
    ax.set_title("mean attention weight on the position of a revealed value", fontsize=10)
    ax.figure.colorbar(im, ax=ax, label="attention weight")
    return ax.figure


def plot_attention_row(result: EliminationResult, step: int, layer: int, *, head: int | None = None,
                       ax: Axes | None = None) -> Figure:
    """The example episode: where query step ``step`` attends in ``layer``, bars coloured by role. Used in chapter 8."""
    ex = result.example
    if not ex:
        raise ValueError("the result holds no example episode")
    P = len(result.positions)
    if not 0 <= step < P:
        raise ValueError(f"step must be in 0..{P - 1}, got {step}")
    if not 0 <= layer < result.n_layers:
        raise ValueError(f"layer must be in 0..{result.n_layers - 1}, got {layer}")
    pos = result.positions[step]
    pat = ex["patterns"][layer]  # (H, T, T)
    row = (pat.mean(0) if head is None else pat[head])[pos].to(torch.float64).numpy()
    roles = ex["roles"][step].numpy()
    tokens = ex["inputs"].tolist()
    if ax is None:
        fig, ax = panels(1, height=3.2)
    T = len(tokens)
    ax.bar(np.arange(T), row, color=[ROLE_COLORS[ROLES[r]] for r in roles])
    ax.set_xticks(np.arange(T))
    ax.set_xticklabels([str(tok) for tok in tokens], fontsize=6, rotation=90)
    ax.set_xlabel("context token (keys 0..V-1, values V..2V-1)")
    ax.set_ylabel("attention weight")
    ax.set_ylim(0, max(1e-3, float(row.max()) * 1.15))
    handles = [plt.Rectangle((0, 0), 1, 1, color=ROLE_COLORS[r]) for r in ROLES]
    ax.legend(handles, ROLES, fontsize=7, ncol=5, frameon=False, loc="upper right")
    ax.set_title(f"query step t = {step} (position {pos}), layer {layer}"
                 + (", heads averaged" if head is None else f", head {head}"), fontsize=10)
    return ax.figure


def elimination_scrub_widget(result: EliminationResult, *, step: int = 6, layer: int = 0) -> ipywidgets.interactive:
    """Scrub the query step and the layer: where the example episode's query attends, coloured by role,
    with the held-out averages of the mass on each role printed above.

    Used in chapter 8.
    """
    n_heads = result.mass.shape[1]

    def show(step: int, layer: int, head: int) -> None:
        h = None if head < 0 else head
        m = result.mass[layer, :, step] if h is None else result.mass[layer, h, step][None]
        masses = ", ".join(f"{r} {m[:, i].mean().item():.3f}" for i, r in enumerate(ROLES) if r != "future")
        uni = ", ".join(f"{r} {result.uniform_mass(r)[step].item():.3f}" for r in ("self", "key", "eliminated"))
        print(f"held-out mean mass ({result.episodes} episodes): {masses}")
        print(f"uniform attention would give: {uni}")
        show_figure(plot_attention_row(result, step, layer, head=h))

    return ipywidgets.interactive(
        show,
        step=ipywidgets.IntSlider(value=step, min=0, max=len(result.positions) - 1, description="step t",
                                  continuous_update=False),
        layer=ipywidgets.IntSlider(value=layer, min=0, max=result.n_layers - 1, description="layer",
                                   continuous_update=False),
        head=ipywidgets.IntSlider(value=-1, min=-1, max=n_heads - 1, description="head (-1: mean)",
                                  continuous_update=False),
    )
