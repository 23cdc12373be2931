"""Metrics on tensors only, as Paper I scores its wind tunnels. Entropies and divergences are in bits.

Canonical entropy MAE: per episode and prediction position, |H_model - H_Bayes|, with H_model from
the softmax over the answer classes only, averaged over episodes and positions. The "difference of
means" variant is offered by name (:func:`entropy_mae_of_means`) and is never the headline.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .arguments import check_float_tensor, check_positive

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


def gaussian_entropy_bits(var: Tensor) -> Tensor:
    """Differential entropy of ``N(., var)`` in bits, elementwise: ``0.5 log2(2 pi e var)`` (float64)."""
    var = check_positive("var", check_float_tensor("var", var))
    return 0.5 * torch.log2(2 * math.pi * math.e * var)


def gaussian_kl_bits(mean_p: Tensor, var_p: Tensor, mean_q: Tensor, var_q: Tensor) -> Tensor:
    """``KL(N(mean_p, var_p) || N(mean_q, var_q))`` in bits, elementwise (shapes broadcast; float64)."""
    args = {"mean_p": mean_p, "var_p": var_p, "mean_q": mean_q, "var_q": var_q}
    args = {k: check_float_tensor(k, v) for k, v in args.items()}
    try:
        torch.broadcast_shapes(*(v.shape for v in args.values()))
    except RuntimeError:
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in args.items())
        raise ValueError(f"gaussian_kl_bits: shapes do not broadcast: {shapes}") from None
    mp, mq = args["mean_p"].to(torch.float64), args["mean_q"].to(torch.float64)
    vp, vq = check_positive("var_p", args["var_p"]), check_positive("var_q", args["var_q"])
    ratio = vp / vq
    nats = 0.5 * (ratio - 1.0 - torch.log(ratio) + (mp - mq) ** 2 / vq)
    return nats / LN2


def gaussian_nll(mean: Tensor, log_var: Tensor, y: Tensor) -> Tensor:
    """Gaussian negative log-likelihood of ``y`` under ``N(mean, exp(log_var))`` in nats, averaged
    over all elements (the training loss; the constant ``0.5 log(2 pi)`` is included, so it is a
    true NLL). All three must have the same shape. Computed in the inputs' promoted dtype so it
    stays differentiable in the model's precision.
    """
    mean, log_var, y = check_float_tensor("mean", mean), check_float_tensor("log_var", log_var), check_float_tensor("y", y)
    if not (mean.shape == log_var.shape == y.shape):
        raise ValueError(f"mean {tuple(mean.shape)}, log_var {tuple(log_var.shape)} and y {tuple(y.shape)} "
                         "must have the same shape")
    if mean.numel() == 0:
        raise ValueError("gaussian_nll needs at least one element")
    return 0.5 * (math.log(2 * math.pi) + log_var + (y - mean) ** 2 * torch.exp(-log_var)).mean()


def gaussian_scores(out: Tensor, mean: Tensor, var: Tensor) -> dict[str, Tensor]:
    """Per (episode, position) scores of a Gaussian head ``out`` (B, P, 2) = (mean, log-variance)
    against the exact predictive N(mean, var): h_model, h_bayes, abs_err, kl (bits)."""
    if out.shape[:-1] != mean.shape or out.shape[-1] != 2 or mean.shape != var.shape:
        raise ValueError(f"Gaussian head output {tuple(out.shape)} must be (B, P, 2) against mean/var "
                         f"{tuple(mean.shape)}")
    mean_q, var_q = out[..., 0].to(torch.float64), out[..., 1].to(torch.float64).exp()
    h_model, h_bayes = gaussian_entropy_bits(var_q), gaussian_entropy_bits(var)
    return {"h_model": h_model, "h_bayes": h_bayes, "abs_err": (h_model - h_bayes).abs(),
            "kl": gaussian_kl_bits(mean, var, mean_q, var_q)}


def entropy_mae(h_model: Tensor, h_bayes: Tensor) -> tuple[float, Tensor]:
    """Canonical entropy MAE over (B, P) entropies: (scalar, per-position curve (P,))."""
    err = (h_model.to(torch.float64) - h_bayes.to(torch.float64)).abs()
    return err.mean().item(), err.mean(0)


def entropy_mae_of_means(h_model: Tensor, h_bayes: Tensor) -> float:
    """The "difference of means" variant: mean over positions of |E[H_model] - E[H_Bayes]|.

    It hides per-episode errors (over- and under-confident episodes cancel); never a headline.
    """
    return (h_model.to(torch.float64).mean(0) - h_bayes.to(torch.float64).mean(0)).abs().mean().item()
