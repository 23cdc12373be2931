"""ipywidgets controls for the chapters. They call the package for every number and draw with
:mod:`bwt_lite.plots`; they compute no science themselves.

Every control is an ``ipywidgets.interactive``: it runs once when built and, on Colab or in
Jupyter, responds to its controls. After ``setup_notebook`` every such control also carries a static
HTML view of its current setting (:func:`bwt_lite.display.static_view`): what it prints and its
figure, which the book shows, since a page without a kernel cannot move a slider.

Chapter 1: :func:`elimination_widget`. Chapter 2: :func:`prediction_widget`. Chapter 3:
:func:`hmm_filter_widget`. Chapter 4: :func:`recall_widget`. Chapter 5: :func:`regression_widget`.
Chapter 6: :func:`primitives_widget`. Chapter 11: :func:`routing_widget`.
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


def recall_widget(model: torch.nn.Module, tunnel: Tunnel, seed: int = 0, position: int | None = None) -> ipywidgets.interactive:
    """Step through the key positions of one recall episode (chapter 4).

    At key step ``t`` it prints the key, whether it was seen before (at which pair, how far back,
    with which value) and both entropies, and draws the episode's tokens with that key outlined above
    the model's predicted distribution beside the exact posterior. Controls: the episode seed and the
    key step. ``position`` is the initial key step (default: the episode's first recall).
    """
    from .evaluate import recall_key_stats

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
        fig = plots.plot_recall_step(e["tokens"], e["positions"], tunnel.V, t, q, p, seen=e["seen"],
                                     previous=e["previous"],
                                     title=f"key step {t}: H_Bayes {h_b:.3f} bits, H_model {h_m:.3f} bits")
        from IPython.display import display

        display(fig)
        plt.close(fig)

    if position is None:
        seen0 = episode(seed)["seen"]
        position = int(seen0.nonzero()[0, 0]) if seen0.any() else 0
    return ipywidgets.interactive(
        show, seed=ipywidgets.IntText(value=seed, description="episode seed"),
        position=ipywidgets.IntSlider(value=position, min=0, max=n - 1, description="key step",
                                      continuous_update=False))


def regression_widget(model: torch.nn.Module, tunnel: Tunnel, seed: int = 0, position: int = 4
                      ) -> ipywidgets.interactive:
    """Step through one Bayesian-linear-regression episode (chapter 5).

    At prediction position i it lists the context pairs (x_j, y_j), j < i, and compares the model's
    predictive N(mean, var) at x_i with the exact posterior predictive (means, variances, entropies
    in bits and the KL), drawn as two density curves with the realised y_i, beside the predictions
    at every earlier position. Controls: the episode seed and the position.
    """
    from .metrics import gaussian_entropy_bits, gaussian_kl_bits

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
        fig = plots.plot_regression_step(e["y"], e["mean_q"], e["var_q"], e["mean_p"], e["var_p"], i)
        from IPython.display import display

        display(fig)
        plt.close(fig)

    return ipywidgets.interactive(
        show, seed=ipywidgets.IntText(value=seed, description="episode seed"),
        position=ipywidgets.IntSlider(value=position, min=0, max=n - 1, description="position i",
                                      continuous_update=False))


def hmm_filter_widget(model: torch.nn.Module, tunnel: Tunnel | None = None, seed: int = 0,
                      t: int = 0) -> ipywidgets.interactive:
    """Step through one HMM episode: at time ``t``, the observed symbol and the true hidden state, the
    exact filtering posterior and the model's as bars, and both entropies through time.

    Controls: the episode seed and the time step. ``tunnel`` defaults to ``make_tunnel("hmm")``
    (K = 20); pass a longer one (e.g. K = 50, within the model's position table) to look past the
    training length.
    """
    from .metrics import kl_bits
    from .tunnels.hmm import HMM

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
        fig = plots.plot_hmm_step(e["p"], e["q"], e["h_b"], e["h_m"], t, obs=e["obs"], states=e["states"])
        from IPython.display import display

        display(fig)
        plt.close(fig)

    return ipywidgets.interactive(
        show, seed=ipywidgets.IntText(value=seed, description="episode seed"),
        t=ipywidgets.IntSlider(value=t, min=0, max=K - 1, description="time t", continuous_update=False))


from .dynamics.gradients import ScoreDescent  # noqa: E402  (chapter 11)


def routing_widget(trace: ScoreDescent, symbols: list[int] | None = None, step: int = 0) -> ipywidgets.interactive:
    """Step through a descent on one query's attention scores (:func:`bwt_lite.dynamics.gradients.free_score_descent`):
    the attention over the keys, each key's advantage and the loss, at the chosen step.

    ``symbols``: the symbol each key shows (the query's own last), to mark the keys that show it.
    """
    n_steps = trace.alpha.shape[0]
    if not 0 <= step < n_steps:
        raise ValueError(f"step must be in 0..{n_steps - 1}, got {step}")
    same = None if symbols is None else torch.tensor([s == symbols[-1] for s in symbols])

    def show(step: int) -> None:
        on_same = "" if same is None else (f" | attention on keys showing the query's symbol {symbols[-1]}: "
                                            f"{trace.alpha[step][same].sum().item():.3f}")
        print(f"step {step} (lr {trace.lr:g}): loss {trace.loss[step].item():.4f} nats{on_same}")
        fig = plots.plot_routing_step(trace.alpha, trace.advantage, trace.loss, step, symbols=symbols)
        from IPython.display import display

        display(fig)
        plt.close(fig)

    slider = ipywidgets.IntSlider(value=step, min=0, max=n_steps - 1, description="step", continuous_update=False)
    return ipywidgets.interactive(show, step=slider)


def primitives_widget(rows: list[dict], tunnel: str | None = None, error: bool = False) -> ipywidgets.interactive:
    """Browse the primitives table: for one tunnel, each architecture's entropy (or entropy error)
    per position beside Bayes', with its row of the table.

    ``rows``: the rows of :func:`bwt_lite.reproduce.reproduce`. Controls: the tunnel, which
    architectures to draw, and entropy vs error.
    """
    tunnels = list(dict.fromkeys(r["tunnel"] for r in rows))
    archs = list(dict.fromkeys(r["arch"] for r in rows))
    if not tunnels:
        raise ValueError("rows has no cells")
    tunnel = tunnels[0] if tunnel is None else tunnel
    if tunnel not in tunnels:
        raise ValueError(f"tunnel must be one of {tunnels}, got {tunnel!r}")

    def show(tunnel: str, archs: tuple[str, ...], error: bool) -> None:
        from IPython.display import display

        for r in rows:
            if r["tunnel"] == tunnel and r["arch"] in archs:
                acc = "" if r["tunnel"] != "recall" else f", accuracy on recalled keys {r['accuracy']:.1%}"
                print(f"{r['arch']:<12} entropy MAE {r['entropy_mae_bits']:.4f} bits, KL {r['kl_bits']:.4f}{acc}"
                      f" -> realises {r['primitive']}: {'yes' if r['realises'] else 'no'}")
        fig = plots.plot_primitives_entropy(rows, tunnels=[tunnel], archs=list(archs), error=error)
        display(fig)
        plt.close(fig)

    return ipywidgets.interactive(
        show, tunnel=ipywidgets.Dropdown(options=tunnels, value=tunnel, description="tunnel"),
        archs=ipywidgets.SelectMultiple(options=archs, value=tuple(archs), description="architectures"),
        error=ipywidgets.Checkbox(value=error, description="entropy error instead of entropy"))
