"""Chapter 6: three primitives across architectures: figures and the primitives widget.
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..window_ladder import METRIC_LABELS, ladder, windows_of
from .style import ELIMINATED_COLOR, arch_color, arch_style, as_numpy, finish, panels, show_figure


def plot_primitives_entropy(rows: Sequence[dict[str, Any]], *, tunnels: Sequence[str] | None = None,
                            archs: Sequence[str] | None = None, error: bool = False, title: str = "") -> Figure:
    """One panel per tunnel: each architecture's mean predictive entropy per position beside Bayes'
    (or, with ``error``, its entropy MAE per position).

    ``rows``: the rows of :func:`bwt_lite.reproduce.reproduce` (``per_position`` with ``h_model``,
    ``h_bayes``, ``entropy_mae``); ``tunnels`` and ``archs`` select and order the panels and curves.

    Used in chapter 6.
    """
    tunnels = list(dict.fromkeys(r["tunnel"] for r in rows)) if tunnels is None else list(tunnels)
    archs = list(dict.fromkeys(r["arch"] for r in rows)) if archs is None else list(archs)
    if not tunnels:
        raise ValueError("rows has no cells to draw")
    fig, axes = panels(len(tunnels), width=6.2 * len(tunnels), height=3.4)
    for ax, tunnel in zip(np.atleast_1d(axes), tunnels):
        cells = {r["arch"]: r for r in rows if r["tunnel"] == tunnel and r["arch"] in archs}
        if not cells:
            ax.set_title(f"{tunnel}: no cells")
            continue
        first = next(iter(cells.values()))["per_position"]
        t = np.arange(len(first["h_bayes"]))
        if not error:
            ax.plot(t, as_numpy(first["h_bayes"]), "--", color="black", lw=2.5, label="Bayes (exact)")
        for arch in archs:
            if arch in cells:
                pp = cells[arch]["per_position"]
                style = {"markersize": 3, **arch_style(arch)}
                ax.plot(t, as_numpy(pp["entropy_mae" if error else "h_model"]), lw=1, label=arch,
                        color=arch_color(arch), **style)
        any_cell = next(iter(cells.values()))
        gaussian = any_cell["accuracy"] is None
        ax.set_ylabel(("entropy MAE" if error else "mean entropy") + (" (bits, differential)" if gaussian else " (bits)"))
        ax.set_xlabel("prediction position")
        ax.set_title(f"{tunnel} ({any_cell.get('primitive', '')})", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return finish(fig, title)


def plot_accuracy_by_pairs(curves: dict[str, tuple[Sequence[int], Sequence[float]]], *, chance: float | None = None,
                           ax: Axes | None = None, title: str = "") -> Figure:
    """Accuracy on recalled keys against the number of stored pairs, one line per model.

    ``curves`` maps a label to ``(n_pairs, accuracy)``; ``chance`` draws the 1/V line.

    Used in chapter 6.
    """
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=7, height=3.6)
    for label, (n, acc) in curves.items():
        ax.plot(as_numpy(n), as_numpy(acc), "o-", ms=4, label=label)
    if chance is not None:
        ax.axhline(chance, color=ELIMINATED_COLOR, ls=":", label="chance (1/V)")
    ax.set_xlabel("stored pairs")
    ax.set_ylabel("accuracy on recalled keys")
    ax.set_ylim(0, 1.05)
    ax.set_title(title or "Binding as the number of stored pairs grows", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def primitives_widget(rows: list[dict], tunnel: str | None = None, error: bool = False) -> ipywidgets.interactive:
    """Browse the primitives table: for one tunnel, each architecture's entropy (or entropy error)
    per position beside Bayes', with its row of the table.

    ``rows``: the rows of :func:`bwt_lite.reproduce.reproduce`. Controls: the tunnel, which
    architectures to draw, and entropy vs error.

    Used in chapter 6.
    """
    tunnels = list(dict.fromkeys(r["tunnel"] for r in rows))
    archs = list(dict.fromkeys(r["arch"] for r in rows))
    if not tunnels:
        raise ValueError("rows has no cells")
    tunnel = tunnels[0] if tunnel is None else tunnel
    if tunnel not in tunnels:
        raise ValueError(f"tunnel must be one of {tunnels}, got {tunnel!r}")

    def show(tunnel: str, archs: tuple[str, ...], error: bool) -> None:
        for r in rows:
            if r["tunnel"] == tunnel and r["arch"] in archs:
                acc = "" if r["tunnel"] != "recall" else f", accuracy on recalled keys {r['accuracy']:.1%}"
                print(f"{r['arch']:<12} entropy MAE {r['entropy_mae_bits']:.4f} bits, KL {r['kl_bits']:.4f}{acc}"
                      f" -> realises {r['primitive']}: {'yes' if r['realises'] else 'no'}")
        fig = plot_primitives_entropy(rows, tunnels=[tunnel], archs=list(archs), error=error)
        show_figure(fig)

    return ipywidgets.interactive(
        show, tunnel=ipywidgets.Dropdown(options=tunnels, value=tunnel, description="tunnel"),
        archs=ipywidgets.SelectMultiple(options=archs, value=tuple(archs), description="architectures"),
        error=ipywidgets.Checkbox(value=error, description="entropy error instead of entropy"))


def plot_seed_curves(sweep: dict[str, Any], *, windows: Sequence[int] = (4, 8, 12)) -> Figure:
    """Held-out entropy MAE over training, one line per run of a seed sweep
    (:func:`bwt_lite.window_ladder.load_slow_seeds`), one panel per peak learning rate, log scale;
    the window filters of ``windows`` symbols as dotted lines (the longest listed is the bar of
    transport: a run below it reads further back than any window).

    Used in chapter 6.
    """
    lrs = list(dict.fromkeys(r["lr"] for r in sweep["runs"]))
    ws, values = windows_of(sweep)
    shown = [w for w in windows if w in ws]
    fig, axes = panels(len(lrs), height=3.2, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, lr in zip(axes, lrs):
        for r in (r for r in sweep["runs"] if r["lr"] == lr):
            steps = [h["step"] for h in r["history"]]
            ax.plot(steps, [h["entropy_mae_bits"] for h in r["history"]], marker=".", label=f"seed {r['seed']}")
        for i, w in enumerate(shown):
            ax.axhline(values[ws.index(w)], color="k", linestyle=(":", "-.", "--")[i % 3], lw=1, label=f"window-{w}")
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_title(f"peak learning rate {lr:g}")
    axes[0].set_ylabel("held-out entropy MAE (bits)")
    # one legend (the last panel has the most runs; seed colours are the same in every panel), in the
    # first panel's lower left, which every run leaves empty
    axes[0].legend(*axes[-1].get_legend_handles_labels(), fontsize="small", loc="lower left", ncol=2)
    fig.tight_layout()
    return fig


def plot_window_ladder(rows: Sequence[dict[str, Any]], tunnel: str, *, axes: Any = None) -> Any:
    """Entropy MAE and KL of each window (dots) and of each model (horizontal lines), log scale;
    ``rows``: the rows of :func:`bwt_lite.reproduce.reproduce` (models and baselines).

    Used in chapter 6.
    """
    ws, values = ladder(rows, tunnel)
    models = [r for r in rows if r["tunnel"] == tunnel and r.get("kind", "model") == "model"]
    if axes is None:
        _, axes = panels(2, height=3.4)
    for ax, metric in zip(axes, METRIC_LABELS):
        ax.plot(ws, values[metric], "ko-", label="window-w filter (exact, no state)")
        for r in models:
            ax.axhline(r[metric], color=arch_color(r["arch"]), linestyle="--", label=r["arch"])
        ax.set_yscale("log")
        ax.set_xlabel("window w (symbols the filter reads)")
        ax.set_ylabel(METRIC_LABELS[metric])
        ax.set_xticks(ws)
    axes[0].legend(fontsize="small")
    axes[0].figure.suptitle(f"{tunnel}: the window ladder and the models")
    axes[0].figure.tight_layout()
    return axes[0].figure
