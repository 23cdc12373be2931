"""Belief substrate (Paper I, geometric diagnostics): linear probes from the residual stream at every layer to the exact
posterior.

A probe is closed-form ridge regression in float64 with an intercept (:func:`ridge_fit`), fit on the
representations of one set of held-out episodes and scored, as R^2, on another
(:func:`probe_layers`). R^2 of a multi-output target is ``1 - sum ||Y - Y_hat||^2 / sum ||Y - mean(Y)||^2``
over all outputs (the variance-weighted R^2; :func:`r2_score`): 1 when the posterior is a linear
function of the layer's representation, about 0 when the layer says nothing linear about it (below 0
when the probe does worse than predicting the mean). The first "layer" is the embedding (token plus
position): its R^2 is the baseline of what the position and the current token alone tell a linear map.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..arguments import check_choice, check_int
from ..evaluate import EVAL_SEED_BASE
from ..metrics import entropy_bits
from ..models import run_with_cache
from ..tunnels import Tunnel

PROBE_TARGETS = ("posterior", "entropy")


def _as_2d(name: str, x: Tensor) -> Tensor:
    x = torch.as_tensor(x).detach().to("cpu", torch.float64)
    if x.dim() == 1:
        x = x.unsqueeze(1)
    if x.dim() != 2:
        raise ValueError(f"{name} must be a 1-D or 2-D tensor, got shape {tuple(x.shape)}")
    return x


@dataclass
class Ridge:
    """A fitted linear map ``Y = (X - x_mean) @ weight + y_mean``."""

    weight: Tensor  # (d, m)
    x_mean: Tensor  # (d,)
    y_mean: Tensor  # (m,)
    lam: float  # the absolute ridge penalty used

    def predict(self, x: Tensor) -> Tensor:
        return (_as_2d("x", x) - self.x_mean) @ self.weight + self.y_mean


def ridge_fit(x: Tensor, y: Tensor, ridge: float = 1e-6) -> Ridge:
    """Closed-form ridge regression with intercept, in float64.

    The penalty is relative: ``lam = ridge * trace(Xc^T Xc) / d`` (``ridge`` times the mean eigenvalue
    of the centred Gram matrix), so one value suits layers of any scale. ``x`` (n, d), ``y`` (n,) or (n, m).
    """
    x, y = _as_2d("x", x), _as_2d("y", y)
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same number of rows, got {x.shape[0]} and {y.shape[0]}")
    if x.shape[0] < 2:
        raise ValueError("x needs at least 2 rows")
    if not ridge >= 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    x_mean, y_mean = x.mean(0), y.mean(0)
    xc, yc = x - x_mean, y - y_mean
    gram = xc.T @ xc
    lam = ridge * gram.diagonal().sum().item() / x.shape[1]
    eye = torch.eye(x.shape[1], dtype=torch.float64)
    weight = torch.linalg.lstsq(gram + lam * eye, xc.T @ yc).solution
    return Ridge(weight=weight, x_mean=x_mean, y_mean=y_mean, lam=lam)


def r2_score(y: Tensor, y_hat: Tensor) -> float:
    """Variance-weighted R^2: ``1 - sum (y - y_hat)^2 / sum (y - mean(y))^2`` over all outputs."""
    y, y_hat = _as_2d("y", y), _as_2d("y_hat", y_hat)
    if y.shape != y_hat.shape:
        raise ValueError(f"y {tuple(y.shape)} and y_hat {tuple(y_hat.shape)} must have the same shape")
    total = ((y - y.mean(0)) ** 2).sum().item()
    if total == 0.0:
        return float("nan")  # a constant target: R^2 is undefined
    return 1.0 - ((y - y_hat) ** 2).sum().item() / total


def heldout_r2(x_fit: Tensor, y_fit: Tensor, x_test: Tensor, y_test: Tensor, ridge: float = 1e-6) -> float:
    """R^2 on (``x_test``, ``y_test``) of the ridge map fit on (``x_fit``, ``y_fit``)."""
    return r2_score(y_test, ridge_fit(x_fit, y_fit, ridge).predict(x_test))


def residual_layers(model: torch.nn.Module) -> list[tuple[str, str]]:
    """``(label, hook name)`` of the residual stream, bottom to top: the embedding, the output of
    every block, and the final normalised representation (read by the head)."""
    blocks = getattr(model.backbone, "blocks", None)
    if blocks is None:
        raise ValueError(f"architecture {model.cfg.arch!r} has no blocks to probe")
    layers = [("embedding", "hook_embed")]
    layers += [(f"block {i}", f"backbone.blocks.{i}.hook_resid_post") for i in range(len(blocks))]
    layers.append(("final norm", "hook_final"))
    return layers


@torch.no_grad()
def collect_hooks(model: torch.nn.Module, tunnel: Tunnel, names: list[str], episodes: int, seed: int = 0,
                  batch_size: int = 256) -> tuple[dict[str, Tensor], Tensor, Tensor | None]:
    """The named (B, T, d) activations at the prediction positions of ``episodes`` held-out episodes
    (generator ``EVAL_SEED_BASE + seed``): ``({name: (episodes, P, d) float64}, probs (episodes, P, C),
    tokens)`` with ``tokens`` (episodes, P) the input token at each prediction position (None for
    float-feature tunnels)."""
    check_int("episodes", episodes, 1)
    gen = torch.Generator().manual_seed(EVAL_SEED_BASE + seed)
    was_training = model.training
    model.eval()
    acts: dict[str, list[Tensor]] = {n: [] for n in names}
    probs: list[Tensor] = []
    tokens: list[Tensor] = []
    try:
        left = episodes
        while left > 0:
            n = min(batch_size, left)
            ep = tunnel.sample(n, gen)
            if ep.probs is None:
                raise ValueError("the probes need a categorical tunnel (exact posterior probabilities)")
            _, cache = run_with_cache(model, ep.inputs, ep.positions, names=names)
            for name in names:
                acts[name].append(cache[name][:, ep.positions].double().cpu())
            probs.append(ep.probs.cpu())
            if ep.inputs.dim() == 2:
                tokens.append(ep.inputs[:, ep.positions].cpu())
            left -= n
    finally:
        model.train(was_training)
    return {k: torch.cat(v) for k, v in acts.items()}, torch.cat(probs), (torch.cat(tokens) if tokens else None)


@dataclass
class ProbeResult:
    """Held-out R^2 of a linear probe at each layer of the residual stream."""

    layers: list[str]  # "embedding", "block 0", ..., "final norm"
    r2: list[float]  # held-out R^2 per layer
    r2_fit: list[float]  # R^2 on the fitting episodes (a large gap means overfitting)
    target: str  # "posterior" or "entropy"
    fit_episodes: int
    test_episodes: int
    n_points: int = field(default=0)  # (episode, position) pairs per split


def probe_layers(model: torch.nn.Module, tunnel: Tunnel, episodes: int = 1024, seed: int = 0,
                 target: str = "posterior", ridge: float = 1e-6) -> ProbeResult:
    """Fit a ridge probe at every residual layer on the first half of ``episodes`` held-out episodes
    and score it on the second half. ``target``: ``"posterior"`` (the exact posterior, all C classes)
    or ``"entropy"`` (its entropy in bits)."""
    check_choice("target", target, PROBE_TARGETS)
    check_int("episodes", episodes, 4)
    layers = residual_layers(model)
    acts, probs, _ = collect_hooks(model, tunnel, [h for _, h in layers], episodes, seed)
    y = probs if target == "posterior" else entropy_bits(probs).unsqueeze(-1)
    half = episodes // 2
    y_fit, y_test = y[:half].flatten(0, 1), y[half:].flatten(0, 1)
    r2, r2_fit = [], []
    for _, hook in layers:
        x = acts[hook]
        x_fit, x_test = x[:half].flatten(0, 1), x[half:].flatten(0, 1)
        fitted = ridge_fit(x_fit, y_fit, ridge)
        r2.append(r2_score(y_test, fitted.predict(x_test)))
        r2_fit.append(r2_score(y_fit, fitted.predict(x_fit)))
    return ProbeResult(layers=[name for name, _ in layers], r2=r2, r2_fit=r2_fit, target=target, fit_episodes=half,
                       test_episodes=episodes - half, n_points=int(y_fit.shape[0]))


def probe_window_beliefs(tunnel: Tunnel, windows: tuple[int, ...] = (1, 2), episodes: int = 1024, seed: int = 0,
                         ridge: float = 1e-6, batch_size: int = 256, target: str = "posterior") -> dict[str, float]:
    """The baseline of an HMM probe: held-out R^2 of a ridge probe from the exact belief of the last ``w``
    symbols alone (a window filter, :func:`bwt_lite.baselines.window_filter`) to the exact posterior (or its
    entropy, ``target="entropy"``), on the episodes and split :func:`probe_layers` uses. A model's
    representation carries more than a short look-back only where its probe beats these: ``{"window-w": R^2}``.
    For the entropy the probe reads ``p``, ``log p`` and ``p log p`` of the window's belief, so that the
    window belief's own entropy is a linear function of its input (a model's wide representation can
    compute such features; the bare belief cannot give a linear probe its entropy)."""
    check_choice("target", target, PROBE_TARGETS)
    from ..baselines import window_filter

    check_int("episodes", episodes, 4)
    gen = torch.Generator().manual_seed(EVAL_SEED_BASE + seed)
    feats: dict[int, list[Tensor]] = {w: [] for w in windows}
    probs: list[Tensor] = []
    left = episodes
    while left > 0:
        n = min(batch_size, left)
        ep = tunnel.sample(n, gen)
        for w in windows:
            belief = window_filter(tunnel, ep, w).double().cpu()
            if target == "entropy":
                logs = belief.clamp_min(1e-300).log()
                belief = torch.cat([belief, logs, belief * logs], dim=-1)
            feats[w].append(belief)
        probs.append(ep.probs.cpu())
        left -= n
    y, half = torch.cat(probs), episodes // 2
    if target == "entropy":
        y = entropy_bits(y).unsqueeze(-1)
    out = {}
    for w in windows:
        x = torch.cat(feats[w])
        out[f"window-{w}"] = heldout_r2(x[:half].flatten(0, 1), y[:half].flatten(0, 1), x[half:].flatten(0, 1),
                                        y[half:].flatten(0, 1), ridge)
    return out


__all__ = ["PROBE_TARGETS", "ProbeResult", "probe_window_beliefs", "Ridge", "collect_hooks", "heldout_r2", "probe_layers", "r2_score",
           "residual_layers", "ridge_fit"]
