"""The HMM window ladder beside the models (chapters 3, 6 and 10).

A window filter of w symbols (:func:`bwt_lite.baselines.window_filter`) is the exact belief from
the last w observations only: it reads locally and carries nothing forward. Its error falls as w
grows; where a model's error sits on that ladder says how far back it effectively reads. A model
that carries its belief across the episode (transport) beats every short window.
"""
from __future__ import annotations

from typing import Any, Sequence

METRIC_LABELS = {"entropy_mae_bits": "entropy MAE (bits)", "kl_bits": "KL (bits)"}


def ladder(rows: Sequence[dict[str, Any]], tunnel: str) -> tuple[list[int], dict[str, list[float]]]:
    """The windows of ``tunnel`` among :func:`bwt_lite.reproduce.reproduce` rows: (w values, metric -> values)."""
    windows = sorted((int(r["arch"].removeprefix("window-")), r) for r in rows
                     if r["tunnel"] == tunnel and r.get("kind") == "baseline" and r["arch"].startswith("window-"))
    if not windows:
        raise ValueError(f"no window baselines for tunnel {tunnel!r} among the rows")
    return [w for w, _ in windows], {m: [r[m] for _, r in windows] for m in METRIC_LABELS}


def window_equivalent(value: float, ws: Sequence[int], values: Sequence[float]) -> str:
    """Where ``value`` sits on the ladder: ``"between window-3 and window-4"``, ``"below window-8"``..."""
    if value >= values[0]:
        return f"above window-{ws[0]}"
    for (w0, v0), (w1, v1) in zip(zip(ws, values), zip(ws[1:], values[1:])):
        if v1 <= value < v0:
            return f"between window-{w0} and window-{w1}"
    return f"below window-{ws[-1]}"


def plot_window_ladder(rows: Sequence[dict[str, Any]], tunnel: str, *, axes: Any = None) -> Any:
    """Entropy MAE and KL of each window (dots) and of each model (horizontal lines), log scale.
    Used in chapters 3, 6 and 10."""
    import matplotlib.pyplot as plt

    ws, values = ladder(rows, tunnel)
    models = [r for r in rows if r["tunnel"] == tunnel and r.get("kind", "model") == "model"]
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(7.8, 3.4))  # the book column at 100 dpi
    colors = {"transformer": "C0", "mlp": "C7", "lstm": "C2", "mamba": "C3"}
    for ax, metric in zip(axes, METRIC_LABELS):
        ax.plot(ws, values[metric], "ko-", label="window-w filter (exact, no state)")
        for r in models:
            ax.axhline(r[metric], color=colors.get(r["arch"], "C1"), linestyle="--", label=r["arch"])
        ax.set_yscale("log")
        ax.set_xlabel("window w (symbols the filter reads)")
        ax.set_ylabel(METRIC_LABELS[metric])
        ax.set_xticks(ws)
    axes[0].legend(fontsize="small")
    axes[0].figure.suptitle(f"{tunnel}: the window ladder and the models")
    axes[0].figure.tight_layout()
    return axes[0].figure
