"""Checkers for chapter 2 (a transformer learns the posterior).

Each checker runs the student's function on seeded random inputs, compares it with the package's
own implementation, prints one line (what is right, or what is off and a hint) and returns a bool.
A wrong or unfinished answer never raises.
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from ..metrics import entropy_bits, entropy_mae, kl_bits
from . import call, report


def check_entropy_mae(fn: Callable[[torch.Tensor, torch.Tensor], float]) -> bool:
    """``fn(h_model, h_bayes)`` with (episodes, positions) entropies must return the canonical MAE."""
    g = torch.Generator().manual_seed(11)
    h_bayes = torch.rand(64, 7, generator=g, dtype=torch.float64) * 4
    h_model = h_bayes + 0.3 * torch.randn(64, 7, generator=g, dtype=torch.float64)
    got, err = call(fn, h_model, h_bayes)
    if err:
        return report(False, err)
    if got is None:
        return report(False, "your function returned None; return a float")
    got = float(got)
    want, _ = entropy_mae(h_model, h_bayes)
    means = (h_model.mean(0) - h_bayes.mean(0)).abs().mean().item()
    if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
        return report(True, f"canonical entropy MAE = {want:.4f} bits (the difference of means gives {means:.4f}).")
    if math.isclose(got, means, rel_tol=1e-9, abs_tol=1e-12):
        return report(False, "you averaged entropies over episodes before taking |difference|: that is the "
                              "'difference of means', which lets over- and under-confident episodes cancel. "
                              "Take |H_model - H_Bayes| per episode and position first, then average.")
    if math.isclose(got, (h_model - h_bayes).mean().item(), rel_tol=1e-9):
        return report(False, "you forgot the absolute value: signed errors cancel.")
    return report(False, f"expected {want:.6f} bits, got {got:.6f}.")


def check_kl_bits(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> bool:
    """``fn(p, logits)`` must return KL(p || softmax(logits)) in bits over the last dimension."""
    g = torch.Generator().manual_seed(12)
    p = torch.rand(16, 5, 6, generator=g, dtype=torch.float64)
    p[..., :2] = 0.0  # eliminated classes: 0 log 0 = 0
    p = p / p.sum(-1, keepdim=True)
    logits = torch.randn(16, 5, 6, generator=g)
    got, err = call(fn, p, logits)
    if err:
        return report(False, err)
    if not isinstance(got, torch.Tensor) or got.shape != p.shape[:-1]:
        return report(False, f"return a tensor of shape {tuple(p.shape[:-1])} (one KL per episode and position), "
                              f"got {type(got).__name__} {getattr(got, 'shape', '')}")
    got = got.to(torch.float64)
    want = kl_bits(p, logits)
    if torch.isnan(got).any():
        return report(False, "NaN in your result: terms with p = 0 must count as 0 (0 log 0 = 0).")
    if torch.allclose(got, want, atol=1e-6):
        return report(True, f"mean KL = {want.mean().item():.4f} bits.")
    if torch.allclose(got, want * math.log(2), atol=1e-6):
        return report(False, "that is KL in nats; divide by ln 2 for bits.")
    q = torch.softmax(logits.double(), -1)
    if torch.allclose(got, (q * (q.log2() - torch.log2(p.clamp_min(1e-300)))).sum(-1), atol=1e-3):
        return report(False, "that is KL(model || Bayes); the metric is KL(Bayes || model).")
    return report(False, f"mean KL should be {want.mean().item():.4f} bits, yours is {got.mean().item():.4f}.")


def check_leak_entropy(fn: Callable[[int, int, float], float]) -> bool:
    """``fn(n_allowed, n_eliminated, eps)``: entropy (bits) of a prediction that is uniform on the
    allowed values with total mass 1 - eps, and puts eps uniformly on the eliminated values."""
    cases = [(2, 18, 0.005), (10, 10, 0.01), (19, 1, 0.001), (5, 15, 0.0)]
    for n_ok, n_bad, eps in cases:
        got, err = call(fn, n_ok, n_bad, eps)
        if err:
            return report(False, err)
        if got is None:
            return report(False, "your function returned None; return the entropy in bits")
        q = torch.tensor([(1 - eps) / n_ok] * n_ok + [eps / n_bad] * n_bad, dtype=torch.float64)
        want = entropy_bits(q).item()
        if not math.isclose(float(got), want, rel_tol=1e-9, abs_tol=1e-12):
            hint = " (is it in nats?)" if math.isclose(float(got), want * math.log(2), rel_tol=1e-6) else ""
            return report(False, f"for n_allowed={n_ok}, n_eliminated={n_bad}, eps={eps} the entropy is "
                                  f"{want:.5f} bits, you give {float(got):.5f}{hint}.")
    n_ok, n_bad, eps = cases[0]
    extra = entropy_bits(torch.tensor([(1 - eps) / n_ok] * n_ok + [eps / n_bad] * n_bad, dtype=torch.float64)).item() - math.log2(n_ok)
    return report(True, f"leaking {eps:.1%} of the mass onto {n_bad} eliminated values adds {extra:.4f} bits "
                         f"to a {math.log2(n_ok):.0f}-bit posterior.")
