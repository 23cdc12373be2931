"""Metrics on tensors only (spec 1.9). Entropies and divergences are in bits.

Canonical entropy MAE: per episode and prediction position, |H_model - H_Bayes|, with H_model from
the softmax over the answer classes only, averaged over episodes and positions. The "difference of
means" variant is offered by name (:func:`entropy_mae_of_means`) and is never the headline.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

LN2 = math.log(2.0)


def entropy_bits(p: Tensor, dim: int = -1) -> Tensor:
    """Shannon entropy of probability vectors along ``dim``, in bits (0 log 0 = 0)."""
    p = p.to(torch.float64)
    return -(p * torch.log2(torch.where(p > 0, p, torch.ones_like(p)))).sum(dim) + 0.0  # no -0.0


def log_probs_bits(logits: Tensor) -> Tensor:
    """log2 of the softmax over the last dimension, in float64."""
    return torch.log_softmax(logits.to(torch.float64), dim=-1) / LN2


def entropy_from_logits_bits(logits: Tensor) -> Tensor:
    lq = log_probs_bits(logits)
    return -(lq.exp2() * lq).sum(-1)


def kl_bits(p: Tensor, logits: Tensor) -> Tensor:
    """KL(p || softmax(logits)) in bits along the last dimension (terms with p = 0 are 0)."""
    p = p.to(torch.float64)
    lq = log_probs_bits(logits)
    lp = torch.log2(torch.where(p > 0, p, torch.ones_like(p)))
    return (p * (lp - lq)).sum(-1).clamp_min(0.0)


def total_variation(p: Tensor, q: Tensor) -> Tensor:
    """0.5 * sum |p - q| along the last dimension."""
    return 0.5 * (p.to(torch.float64) - q.to(torch.float64)).abs().sum(-1)


def categorical_scores(logits: Tensor, probs: Tensor, target: Tensor) -> dict[str, Tensor]:
    """Per (episode, position) scores, each (B, P): h_model, h_bayes, abs_err, kl, tv, correct."""
    if logits.shape != probs.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and posterior {tuple(probs.shape)} must have the same shape")
    h_model = entropy_from_logits_bits(logits)
    h_bayes = entropy_bits(probs)
    q = torch.softmax(logits.to(torch.float64), dim=-1)
    return {
        "h_model": h_model,
        "h_bayes": h_bayes,
        "abs_err": (h_model - h_bayes).abs(),
        "kl": kl_bits(probs, logits),
        "tv": total_variation(probs, q),
        "correct": (logits.argmax(-1) == target).to(torch.float64),
    }


def entropy_mae(h_model: Tensor, h_bayes: Tensor) -> tuple[float, Tensor]:
    """Canonical entropy MAE over (B, P) entropies: (scalar, per-position curve (P,))."""
    err = (h_model.to(torch.float64) - h_bayes.to(torch.float64)).abs()
    return err.mean().item(), err.mean(0)


def entropy_mae_of_means(h_model: Tensor, h_bayes: Tensor) -> float:
    """The "difference of means" variant: mean over positions of |E[H_model] - E[H_Bayes]|.

    It hides per-episode errors (over- and under-confident episodes cancel); never a headline.
    """
    return (h_model.to(torch.float64).mean(0) - h_bayes.to(torch.float64).mean(0)).abs().mean().item()
