"""ipywidgets controls for the chapters. They call the package for every number and draw with
:mod:`bwt_lite.plots`; they compute no science themselves.

Every control is an ``ipywidgets.interactive``: it runs once when built, so an executed notebook
(and the book built from it) shows its initial state; on Colab or in Jupyter it responds to the
slider.

Chapter 1: :func:`elimination_widget`. Chapter 2: :func:`prediction_widget`.
"""
from __future__ import annotations

import ipywidgets
import matplotlib.pyplot as plt
import torch

from . import plots
from .metrics import entropy_bits
from .tunnels import Episodes, Tunnel, make_tunnel


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
        fig = plots.plot_elimination_step(probs, h_bayes, keys, values, t)
        from IPython.display import display

        display(fig)
        plt.close(fig)

    slider = ipywidgets.IntSlider(value=t, min=0, max=n_steps - 1, step=1, description="step t",
                                  continuous_update=False)
    return ipywidgets.interactive(show, t=slider)


def prediction_widget(model: torch.nn.Module, tunnel: Tunnel, seed: int = 0, position: int = 0) -> ipywidgets.interactive:
    """Step through one episode: the model's prediction beside the exact posterior, with both entropies.

    Controls: the episode seed and the prediction position.
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
        fig = plots.plot_prediction_vs_posterior(
            q[position], p[position], title=f"position {position}: H_Bayes {h_b:.3f} bits, H_model {h_m:.3f} bits")
        from IPython.display import display

        display(fig)
        plt.close(fig)

    return ipywidgets.interactive(
        show, seed=ipywidgets.IntText(value=seed, description="episode seed"),
        position=ipywidgets.IntSlider(value=position, min=0, max=n - 1, description="position",
                                      continuous_update=False))
