"""The construction boundary (chapter 13): what a model trained on the modular recurrence does inside and
outside the positions its loss rewarded, and how sure it is that an episode is a recurrence.

- :func:`horizon_scores`: entropy MAE and KL per position on full-length episodes, averaged inside the
  loss horizon (the predictions of x_1 .. x_K) and beyond it (x_{K+1} .. x_{L-1}), and their ratio (the
  authors' "83x" at K = 5). As the authors score it, x_0 (always uniform, never predicted by their
  models) is in neither average;
- :func:`class_posterior_read`: the probability the model gives the episode being a recurrence, read
  off its predictive (:func:`implied_class_posterior`), beside the exact class posterior;
- :func:`copy_split`: the error on recurrences split by whether the previous value came earlier in the
  episode, where copying what followed it then (no arithmetic) already gives the answer;
- :func:`length_scores`: a model trained on short episodes scored on longer ones (length extrapolation),
  inside and past the trained length, beside the exact baselines at the same positions.

Every score is on held-out episodes of the tunnel without a horizon (every position scored), from the
evaluation stream of :func:`bwt_lite.evaluate.evaluate` (generator ``EVAL_SEED_BASE + seed``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from .evaluate import EVAL_SEED_BASE, evaluate
from .metrics import entropy_bits
from .tunnels.recurrence import Recurrence, recurrence_posterior


def full_length(tunnel: Recurrence) -> Recurrence:
    """The same tunnel with every position scored (no loss horizon): what evaluation uses."""
    return Recurrence(p=tunnel.p, length=tunnel.length, variant=tunnel.variant)


@dataclass
class HorizonScores:
    """Scores inside and beyond a loss horizon of ``horizon`` positions (None: no horizon, all inside)."""

    horizon: int | None
    entropy_mae: list[float]  # per position, bits
    kl: list[float]
    inside: dict[str, float]  # entropy_mae_bits, kl_bits over positions 1 .. horizon
    beyond: dict[str, float] | None  # over positions horizon + 1 .. L - 1 (None without a horizon)
    ratio: float | None  # beyond / inside entropy MAE
    episodes: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def horizon_scores(model: torch.nn.Module, tunnel: Recurrence, horizon: int | None = None, episodes: int = 2048,
                   seed: int = 0) -> HorizonScores:
    """``model`` scored at every position of ``tunnel``'s full-length episodes, split at ``horizon``
    (default: the tunnel's own training horizon)."""
    horizon = tunnel.horizon if horizon is None else horizon
    res = evaluate(model, full_length(tunnel), episodes=episodes, seed=seed)
    mae, kl = res.per_position["entropy_mae"], res.per_position["kl"]

    def mean(v: list[float], lo: int, hi: int) -> float:
        return sum(v[lo:hi]) / max(hi - lo, 1)

    n = len(mae)
    k = n - 1 if horizon is None else horizon  # the last position inside
    inside = {"entropy_mae_bits": mean(mae, 1, k + 1), "kl_bits": mean(kl, 1, k + 1)}
    beyond = None if k >= n - 1 else {"entropy_mae_bits": mean(mae, k + 1, n), "kl_bits": mean(kl, k + 1, n)}
    ratio = None if beyond is None else beyond["entropy_mae_bits"] / max(inside["entropy_mae_bits"], 1e-12)
    return HorizonScores(horizon, mae, kl, inside, beyond, ratio, episodes)


def implied_class_posterior(probs: Tensor, p: int) -> Tensor:
    """The probability of "recurrence" a predictive implies where the recurrence's own prediction is a point
    mass: the exact predictive is then ``pi * delta + (1 - pi) / p``, so ``pi = (max - 1/p) / (1 - 1/p)``."""
    return ((probs.max(-1).values - 1.0 / p) / (1.0 - 1.0 / p)).clamp(0.0, 1.0)


def _held_out_predictions(model: torch.nn.Module, tunnel: Recurrence, episodes: int, seed: int
                          ) -> tuple[Recurrence, Tensor, Tensor, Any, Tensor]:
    """A held-out set at the tunnel's full length and the model's predictive on it (float64):
    ``(tunnel, values, is_recurrence, episodes, probs)``."""
    t = full_length(tunnel)
    gen = torch.Generator().manual_seed(EVAL_SEED_BASE + seed)
    values, is_rec = t.sample_values(episodes, gen)
    ep = t.episodes(values, gen)
    model.eval()
    return t, values, is_rec, ep, model(ep.inputs, ep.positions).double().softmax(-1)


@torch.no_grad()
def class_posterior_read(model: torch.nn.Module, tunnel: Recurrence, episodes: int = 1024,
                         seed: int = 0) -> dict[str, list[float]]:
    """Per position, over the recurrence episodes of a held-out set whose program is already pinned down
    (a point-mass prediction: from the fourth value on): the exact class posterior's mean and the mean
    that the model's predictive implies (:func:`implied_class_posterior`); ``None`` where no such episode."""
    t, values, is_rec, ep, out = _held_out_predictions(model, tunnel, episodes, seed)
    rec_probs, exact = recurrence_posterior(values, t.p)
    pinned = (rec_probs.max(-1).values > 0.5 + 0.5 / t.p - 1e-9) & is_rec.unsqueeze(1)  # a point-mass program
    pinned[:, :3] = False
    model_pi = implied_class_posterior(out, t.p)
    exact_mean, model_mean = [], []
    for pos in range(t.length):
        sel = pinned[:, pos]
        exact_mean.append(exact[sel, pos].mean().item() if sel.any() else None)
        model_mean.append(model_pi[sel, pos].mean().item() if sel.any() else None)
    return {"exact": exact_mean, "model": model_mean, "episodes": [int(v) for v in pinned.sum(0).tolist()]}


def repeats_previous(values: Tensor) -> Tensor:
    """(B, L) bool: position t's previous value ``x_{t-1}`` occurred before it, at some ``s < t - 1``. In a
    recurrence the value after a repeat is the value after its earlier occurrence, so a model that copies
    (an induction head) predicts it without knowing (a, b)."""
    B, L = values.shape
    out = torch.zeros(B, L, dtype=torch.bool, device=values.device)
    for t in range(2, L):
        out[:, t] = (values[:, : t - 1] == values[:, t - 1 : t]).any(1)
    return out


@torch.no_grad()
def copy_split(model: torch.nn.Module, tunnel: Recurrence, episodes: int = 2048, seed: int = 0,
               start: int = 5) -> dict[str, dict[str, float]]:
    """Entropy MAE (bits) of ``model`` on the recurrence episodes of a held-out set, at positions
    ``>= start`` (the program is pinned down there), split by :func:`repeats_previous`: ``"repeat"`` and
    ``"new"``, each ``{"entropy_mae_bits", "positions"}``."""
    t, values, is_rec, ep, probs = _held_out_predictions(model, tunnel, episodes, seed)
    err = (entropy_bits(probs) - entropy_bits(ep.probs)).abs()
    scored = is_rec.unsqueeze(1) & (torch.arange(t.length, device=values.device) >= start)
    rep = repeats_previous(values)
    out = {}
    for name, mask in (("repeat", scored & rep), ("new", scored & ~rep)):
        n = int(mask.sum())
        out[name] = {"entropy_mae_bits": err[mask].mean().item() if n else float("nan"), "positions": n}
    return out


@dataclass
class LengthScores:
    """A model scored on episodes of ``length`` values after training on ``trained`` values: entropy MAE
    (bits) per position, its mean over x_1 .. x_{trained-1} (``inside``) and x_trained .. (``beyond``), and
    the same two means for each exact baseline (``baselines[name] = (inside, beyond)``)."""

    length: int
    trained: int
    entropy_mae: list[float]
    inside: float
    beyond: float | None
    baselines: dict[str, tuple[float, float | None]]


def length_scores(model: torch.nn.Module, tunnel: Recurrence, lengths: tuple[int, ...] = (8, 16, 32),
                  episodes: int = 1024, seed: int = 0) -> list[LengthScores]:
    """``model``, trained on ``tunnel`` (its length is the trained length), scored on held-out episodes of
    each of ``lengths`` values (every position), beside the prior and the window baselines on the same
    episodes. Past the trained length the positions are new to the model: does the program it found
    keep running there? (A position scheme defined at every length is needed: sinusoidal, rotary, ALiBi.)"""
    from .baselines import evaluate_baselines

    out = []
    for length in lengths:
        t = Recurrence(p=tunnel.p, length=length, variant=tunnel.variant)
        k = min(tunnel.length, length)  # x_1 .. x_{k-1} were trained on

        def split(curve: list[float]) -> tuple[float, float | None]:
            inside = sum(curve[1:k]) / max(k - 1, 1)
            return inside, (sum(curve[k:]) / (length - k) if length > k else None)

        mae = evaluate(model, t, episodes=episodes, seed=seed).per_position["entropy_mae"]
        bases = {name: split(r.per_position["entropy_mae"])
                 for name, r in evaluate_baselines(t, episodes=episodes, seed=seed).items()}
        out.append(LengthScores(length, tunnel.length, mae, *split(mae), bases))
    return out


__all__ = ["HorizonScores", "LengthScores", "class_posterior_read", "copy_split", "full_length", "horizon_scores",
           "implied_class_posterior", "length_scores", "repeats_previous"]
