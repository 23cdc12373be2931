"""Chapter 5: Bayesian linear regression (Gaussian predictives): figures and the regression widget.
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..metrics import gaussian_entropy_bits, gaussian_kl_bits
from ..tunnels import Tunnel
from .style import BAYES_COLOR, ELIMINATED_COLOR, as_numpy, finish, panels, show_figure


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

    Used in chapter 5.
    """
    if axes is None:
        fig, axes = panels(2, height=3.6)
    else:
        fig = axes[0].figure
    for ax, key, name in zip(axes, ("entropy_mae", "kl"), ("entropy MAE (bits)", "KL(Bayes || model) (bits)")):
        for label, pp in curves.items():
            v = as_numpy(pp[key])
            t = np.arange(v.shape[0])
            ax.plot(t, np.where(v > floor, v, np.nan), "o-", ms=3.5, lw=1, label=label)
        ax.set_yscale("log")
        ax.set_xlabel("prediction position i (pairs seen)")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=8)
    return finish(fig, title)


def plot_variance_by_position(var_model: dict[str, Any], var_bayes: Any, *, noise_var: float | None = None,
                              ax: Axes | None = None, title: str | None = None) -> Figure:
    """Mean predictive variance per position (log scale): each model's against the exact one.

    ``var_model`` maps a label to one value per position (already averaged over episodes);
    ``var_bayes`` is the exact curve; ``noise_var`` (sigma^2) is drawn as the floor no amount of
    data can beat.

    Used in chapter 5.
    """
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=7, height=4)
    vb = as_numpy(var_bayes)
    t = np.arange(vb.shape[0])
    ax.plot(t, vb, "--", color=BAYES_COLOR, lw=2.5, label="Bayes (exact)")
    for label, v in var_model.items():
        ax.plot(t, as_numpy(v), "o-", ms=4, lw=1, label=label)
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

    Used in chapter 5.
    """
    p, e = as_numpy(predicted).ravel(), as_numpy(exact).ravel()
    if p.shape != e.shape:
        raise ValueError(f"predicted {p.shape} and exact {e.shape} must have the same number of values")
    idx = np.linspace(0, p.size - 1, min(max_points, p.size)).astype(int) if p.size else np.arange(0)
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=4.8, height=4.4)
    c = None if color is None else as_numpy(color).ravel()[idx]
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
    clipped into the outermost bins.

    Used in chapter 5.
    """
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=7, height=4)
    edges = np.linspace(-limit, limit, bins + 1)
    for label, z in residuals.items():
        ax.hist(np.clip(as_numpy(z).ravel(), -limit, limit), bins=edges, density=True, histtype="step", lw=1.8,
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
    realised ``y`` as a vertical line.

    Used in chapter 5.
    """
    mm, vm, mb, vb = (float(as_numpy(v)) for v in (mean_model, var_model, mean_bayes, var_bayes))
    if vm <= 0 or vb <= 0:
        raise ValueError(f"variances must be > 0, got var_model={vm}, var_bayes={vb}")
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, width=6, height=3.6)
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
    peak = 1 / np.sqrt(2 * np.pi * min(vm, vb))
    ax.set_ylim(0, 1.4 * peak)  # room for the legend above the curves
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

    Used in chapter 5.
    """
    arrs = [as_numpy(a).ravel() for a in (y, mean_model, var_model, mean_bayes, var_bayes)]
    n = arrs[0].shape[0]
    if any(a.shape[0] != n for a in arrs):
        raise ValueError("y, mean_model, var_model, mean_bayes and var_bayes need one value per position each")
    if not 0 <= position < n:
        raise ValueError(f"position must be in 0..{n - 1}, got {position}")
    yv, mm, vm, mb, vb = arrs
    fig, (ax_l, ax_r) = panels(2, height=3.8, gridspec_kw={"width_ratios": [1.3, 1]})
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


def regression_widget(model: torch.nn.Module, tunnel: Tunnel, seed: int = 0, position: int = 4
                      ) -> ipywidgets.interactive:
    """Step through one Bayesian-linear-regression episode (chapter 5).

    At prediction position i it lists the context pairs (x_j, y_j), j < i, and compares the model's
    predictive N(mean, var) at x_i with the exact posterior predictive (means, variances, entropies
    in bits and the KL), drawn as two density curves with the realised y_i, beside the predictions
    at every earlier position. Controls: the episode seed and the position.

    Used in chapter 5.
    """
    if getattr(tunnel, "kind", None) != "gaussian" or not hasattr(tunnel, "split_inputs"):
        raise ValueError("regression_widget needs the regression tunnel (make_tunnel('regression', ...))")
    n = tunnel.positions.numel()
    if not 0 <= position < n:
        raise ValueError(f"position must be in 0..{n - 1}, got {position}")
    device = next(model.parameters()).device
    cache: dict[int, dict[str, torch.Tensor]] = {}

    def episode(s: int) -> dict[str, torch.Tensor]:
        if s not in cache:
            ep = tunnel.sample(1, torch.Generator(device=device).manual_seed(s))
            was_training = model.training
            model.eval()
            with torch.no_grad():
                out = model(ep.inputs, ep.positions)[0].double().cpu()
            model.train(was_training)
            x, y = tunnel.split_inputs(ep)
            cache[s] = {"x": x[0].cpu(), "y": y[0].double().cpu(), "mean_q": out[:, 0], "var_q": out[:, 1].exp(),
                        "mean_p": ep.mean[0].cpu(), "var_p": ep.var[0].cpu()}
        return cache[s]

    def show(seed: int, position: int) -> None:
        e, i = episode(seed), position
        rows = [f"  j={j:2d}  x=({', '.join(f'{v:+.2f}' for v in e['x'][j].tolist())})  y={e['y'][j].item():+.3f}"
                for j in range(i)]
        print(f"context: {i} pair(s) seen" + (":" if i else " (the prediction is the prior predictive)"))
        if len(rows) > 8:
            rows = rows[:3] + [f"  ... ({len(rows) - 6} more)"] + rows[-3:]
        for r in rows:
            print(r)
        mp, vp, mq, vq = e["mean_p"][i], e["var_p"][i], e["mean_q"][i], e["var_q"][i]
        print(f"new x_{i} = ({', '.join(f'{v:+.2f}' for v in e['x'][i].tolist())}), realised y = {e['y'][i].item():+.3f}")
        print(f"Bayes: mean {mp.item():+.3f}, var {vp.item():.4f}, H {gaussian_entropy_bits(vp).item():.3f} bits")
        print(f"model: mean {mq.item():+.3f}, var {vq.item():.4f}, H {gaussian_entropy_bits(vq).item():.3f} bits"
              f" | KL(Bayes || model) {gaussian_kl_bits(mp, vp, mq, vq).item():.4f} bits")
        fig = plot_regression_step(e["y"], e["mean_q"], e["var_q"], e["mean_p"], e["var_p"], i)
        show_figure(fig)

    return ipywidgets.interactive(
        show, seed=ipywidgets.IntText(value=seed, description="episode seed"),
        position=ipywidgets.IntSlider(value=position, min=0, max=n - 1, description="position i",
                                      continuous_update=False))
