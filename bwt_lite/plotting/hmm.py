"""Chapter 3: filtering a hidden Markov model: figures and the filter widget.
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..metrics import entropy_bits, kl_bits
from ..tunnels import Tunnel, make_tunnel
from ..tunnels.hmm import HMM
from .style import BAYES_COLOR, ELIMINATED_COLOR, MARGINAL_COLOR, as_numpy, panels, show_figure


# Chapter 3: filtering a hidden Markov model


def plot_hmm_posteriors(bayes_probs: Any, model_probs: Any | None = None, *, states: Sequence[int] | Any | None = None,
                        obs: Sequence[int] | Any | None = None, title: str | None = None) -> Figure:
    """The filtering posterior of one HMM episode through time, as heatmaps (rows: hidden states,
    columns: time t), the exact posterior on top and, if given, the model's below it.

    ``bayes_probs`` and ``model_probs`` are (K, S). ``states`` (K,) marks the true hidden state with a
    white dot; ``obs`` (K,) writes the observed symbol under each column.

    Used in chapter 3.
    """
    p = as_numpy(bayes_probs)
    if p.ndim != 2:
        raise ValueError(f"bayes_probs must be (time, states), got shape {p.shape}")
    maps = [("exact posterior p(s_t | o_0..o_t)", p)]
    if model_probs is not None:
        q = as_numpy(model_probs)
        if q.shape != p.shape:
            raise ValueError(f"model_probs {q.shape} must have the shape of bayes_probs {p.shape}")
        maps.append(("model", q))
    K, S = p.shape
    n = len(maps)
    fig, axes = panels(n, width=max(6.0, 0.32 * K + 2), height=0.45 * S + 1.6 / n, max_cols=1, sharex=True)
    axes = np.atleast_1d(axes)
    t = np.arange(K)
    vmax = max(max(float(m.max()) for _, m in maps), 1e-9)  # one colour scale for both panels
    for ax, (label, m) in zip(axes, maps):
        im = ax.imshow(m.T, aspect="auto", cmap="Blues", vmin=0.0, vmax=vmax, interpolation="nearest")
        if states is not None:
            ax.scatter(t, as_numpy(states).astype(int), s=14, color="white", edgecolor="black", lw=0.6)
            label += "   (white dots: the true hidden state)"
        ax.set_ylabel("state")
        ax.set_yticks(np.arange(S))
        ax.set_title(label, fontsize=10, loc="left")
        ax.tick_params(labelsize=7)
    ax = axes[-1]
    step = 1 if K <= 30 else max(1, K // 15)
    ax.set_xticks(t[::step])
    if obs is not None:
        o = as_numpy(obs).astype(int)
        ax.set_xticklabels([f"{i}\no={o[i]}" for i in t[::step]])
        ax.set_xlabel("time t (and the symbol o_t observed)")
    else:
        ax.set_xlabel("time t")
    fig.colorbar(im, ax=list(axes), label="probability", fraction=0.03, pad=0.02)
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

    Used in chapter 3.
    """
    fig, ax = (ax.figure, ax) if ax is not None else panels(1, height=4)
    longest = 0
    for label, values in curves.items():
        y = as_numpy(values)
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

    Used in chapter 3.
    """
    p, q = as_numpy(bayes_probs), as_numpy(model_probs)
    hb, hm = as_numpy(h_bayes), as_numpy(h_model)
    if p.ndim != 2 or q.shape != p.shape:
        raise ValueError(f"bayes_probs {p.shape} and model_probs {q.shape} must both be (time, states)")
    K, S = p.shape
    if hb.shape != (K,) or hm.shape != (K,):
        raise ValueError(f"h_bayes {hb.shape} and h_model {hm.shape} must be one entropy per time step ({K},)")
    if not 0 <= t < K:
        raise ValueError(f"t must be in 0..{K - 1}, got {t}")
    fig, (ax_p, ax_h) = panels(2, height=3.4, gridspec_kw={"width_ratios": [1, 1.4]})
    x = np.arange(S)
    ax_p.bar(x - 0.2, p[t], width=0.4, color=BAYES_COLOR, label="exact posterior")
    ax_p.bar(x + 0.2, q[t], width=0.4, color=MARGINAL_COLOR, label="model")
    if states is not None:
        s = int(as_numpy(states)[t])
        ax_p.bar([s], [max(p[t, s], q[t, s])], width=0.9, fill=False, edgecolor="black", lw=1.5,
                 label="true hidden state")
    ax_p.set_xticks(x)
    ax_p.set_xlabel("hidden state")
    ax_p.set_ylabel("probability")
    ax_p.set_ylim(0, 1.05)
    seen = f", observed o_t = {int(as_numpy(obs)[t])}" if obs is not None else ""
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


def hmm_filter_widget(model: torch.nn.Module, tunnel: Tunnel | None = None, seed: int = 0,
                      t: int = 0) -> ipywidgets.interactive:
    """Step through one HMM episode: at time ``t``, the observed symbol and the true hidden state, the
    exact filtering posterior and the model's as bars, and both entropies through time.

    Controls: the episode seed and the time step. ``tunnel`` defaults to ``make_tunnel("hmm")``
    (K = 20); pass a longer one (e.g. K = 50, within the model's position table) to look past the
    training length.

    Used in chapter 3.
    """
    tunnel = tunnel if tunnel is not None else make_tunnel("hmm")
    if not isinstance(tunnel, HMM):
        raise ValueError(f"hmm_filter_widget needs an HMM tunnel, got {type(tunnel).__name__}")
    K = tunnel.positions.numel()
    if not 0 <= t < K:
        raise ValueError(f"t must be in 0..{K - 1}, got {t}")
    device = next(model.parameters()).device
    cache: dict[int, dict[str, torch.Tensor]] = {}

    def episode(s: int) -> dict[str, torch.Tensor]:
        if s not in cache:
            ep = tunnel.sample(1, torch.Generator(device=device).manual_seed(s))
            with torch.no_grad():
                logits = model(ep.inputs, ep.positions).double()[0].cpu()
            p = ep.probs[0].cpu()
            _, _, obs = HMM.decode(ep.inputs[0].cpu())
            q = torch.softmax(logits, -1)
            cache[s] = {"p": p, "q": q, "obs": obs, "states": ep.target[0].cpu(), "h_b": entropy_bits(p),
                        "h_m": entropy_bits(q), "kl": kl_bits(p, logits)}
        return cache[s]

    def show(seed: int, t: int) -> None:
        e = episode(seed)
        so_far = " ".join(str(o) for o in e["obs"][: t + 1].tolist())
        print(f"observations o_0..o_{t}: {so_far}")
        print(f"t = {t}: observed symbol {int(e['obs'][t])}, true hidden state {int(e['states'][t])} | "
              f"H_Bayes {e['h_b'][t].item():.3f} bits, H_model {e['h_m'][t].item():.3f} bits, "
              f"KL {e['kl'][t].item():.4f} bits")
        fig = plot_hmm_step(e["p"], e["q"], e["h_b"], e["h_m"], t, obs=e["obs"], states=e["states"])
        show_figure(fig)

    return ipywidgets.interactive(
        show, seed=ipywidgets.IntText(value=seed, description="episode seed"),
        t=ipywidgets.IntSlider(value=t, min=0, max=K - 1, description="time t", continuous_update=False))
