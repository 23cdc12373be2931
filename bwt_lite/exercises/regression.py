"""Checkers for chapter 5 (continuous accumulation: Bayesian linear regression).

Each checker runs the student's function on seeded random inputs, compares the result with the
package's own answer (float64), prints one line (a success line, or what is off and a hint) and
returns a bool. A wrong or unfinished answer never raises.

- :func:`check_posterior_predictive`: ``fn(X, y, x_new, tau, sigma) -> (mean, var)``, the exact
  posterior predictive of one new point (empty contexts included).
- :func:`check_gaussian_entropy`: ``fn(var)``, the differential entropy of ``N(., var)`` in bits.
- :func:`check_gaussian_kl`: ``fn(mean_p, var_p, mean_q, var_q)``, ``KL(N_p || N_q)`` in bits.
- :func:`check_prior_baseline_mae`: ``fn(x, var_bayes, tau, sigma)``, the entropy MAE of the
  prior-predictive baseline (the best a model that sees one ``x`` at a time can do).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import Tensor

from ..metrics import entropy_mae, gaussian_entropy_bits, gaussian_kl_bits
from ..tunnels.regression import Regression, posterior_predictive
from . import answer_tensor, call, report

LN2 = math.log(2.0)

# (n context points, d features, tau, sigma): an empty context, a single point, fewer points than
# features (least squares is undefined there, Bayes is not), and a long context.
_PREDICTIVE_CASES: tuple[tuple[int, int, float, float], ...] = (
    (0, 3, 1.0, 0.5),
    (1, 1, 2.0, 0.3),
    (2, 4, 0.7, 0.5),
    (6, 4, 1.0, 0.5),
    (20, 3, 1.5, 1.2),
)


def _as_float(v: Any) -> float:
    """A Python float from a float, a 0-d (or one-element) tensor or array."""
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise ValueError(f"expected one number, got a tensor of shape {tuple(v.shape)}")
        return float(v.detach().to("cpu", torch.float64).item())
    return float(v)


def _as_tensor(got: Any, shape: torch.Size, what: str) -> tuple[Tensor | None, str | None]:
    """The student's answer as a float64 tensor of ``shape`` without NaN, or a message saying why not."""
    t, msg = answer_tensor(got, shape, what)
    if t is not None and torch.isnan(t).any():
        return None, "your answer contains NaN."
    return t, msg


def _close(a: float, b: float, tol: float = 1e-8) -> bool:
    return math.isclose(a, b, rel_tol=tol, abs_tol=1e-10)


def _predictive_variant(X: Tensor, y: Tensor, x: Tensor, prior_prec: float, noise_var: float
                        ) -> tuple[float, float, float]:
    """Mean, variance and the weight-uncertainty part ``x^T Sigma x`` for a given prior precision
    and noise variance (used to recognise typical mistakes, e.g. a prior precision of tau^2)."""
    d = X.shape[1]
    Sigma = torch.linalg.inv(prior_prec * torch.eye(d, dtype=torch.float64) + X.T @ X / noise_var)
    mu = Sigma @ X.T @ y / noise_var
    w_part = float(x @ Sigma @ x)
    return float(x @ mu), noise_var + w_part, w_part


def _predictive_case(i: int, n: int, d: int, tau: float, sigma: float) -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(500 + i)
    w = torch.randn(d, generator=g, dtype=torch.float64) * tau
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = X @ w + sigma * torch.randn(n, generator=g, dtype=torch.float64)
    x_new = torch.randn(d, generator=g, dtype=torch.float64)
    return X, y, x_new


def _diagnose_predictive(X: Tensor, y: Tensor, x: Tensor, tau: float, sigma: float, mean: float, var: float,
                         want_mean: float, want_var: float) -> str:
    n, d = X.shape
    where = f"with n = {n} context points, d = {d}, tau = {tau}, sigma = {sigma}"
    # recognisable wrong formulas (the answer is wrong, so a variant equal to the right one never matches)
    m_tau2, v_tau2, _ = _predictive_variant(X, y, x, tau ** 2, sigma ** 2)
    if _close(mean, m_tau2) and _close(var, v_tau2):
        return (f"{where} you used tau^2 I as the prior precision; the prior N(0, tau^2 I) has precision "
                "I / tau^2.")
    m_swap, v_swap, _ = _predictive_variant(X, y, x, 1 / sigma ** 2, tau ** 2)
    if _close(mean, m_swap) and _close(var, v_swap):
        return f"{where} you swapped tau and sigma: tau scales the weights' prior, sigma the noise."
    if n > 0:
        Sigma = torch.linalg.inv(torch.eye(d, dtype=torch.float64) / tau ** 2 + X.T @ X / sigma ** 2)
        if _close(mean, float(x @ Sigma @ X.T @ y)):
            return f"{where} your mean misses the 1/sigma^2: mu = Sigma X^T y / sigma^2."
    if _close(mean, want_mean):
        w_part = want_var - sigma ** 2
        if _close(var, w_part):
            return (f"{where} your variance {var:.5f} is only the weight uncertainty x^T Sigma x; a new y also "
                    f"carries its own noise: add sigma^2 (the exact variance is {want_var:.5f}).")
        if _close(var, math.sqrt(want_var)):
            return f"{where} you returned the standard deviation ({var:.5f}); return the variance {want_var:.5f}."
        if _close(var, sigma ** 2):
            return (f"{where} your variance is the noise sigma^2 alone; the weights are still uncertain, so add "
                    f"x^T Sigma x (the exact variance is {want_var:.5f}).")
        return f"{where} your mean is right but your variance is {var:.5f}; the exact one is {want_var:.5f}."
    if n == 0:
        return (f"{where} (an empty context) the predictive is the prior predictive: mean 0 and variance "
                f"sigma^2 + tau^2 |x|^2 = {want_var:.5f}; you give mean {mean:.5f}, variance {var:.5f}.")
    return (f"{where} expected mean {want_mean:.5f} and variance {want_var:.5f}, got mean {mean:.5f} and "
            f"variance {var:.5f}.")


def check_posterior_predictive(fn: Callable[[Tensor, Tensor, Tensor, float, float], Any]) -> bool:
    """``fn(X, y, x_new, tau, sigma)`` with ``X`` (n, d), ``y`` (n,), ``x_new`` (d,) float64 tensors
    (``n`` may be 0) must return ``(mean, var)`` of the exact posterior predictive at ``x_new``."""
    for i, (n, d, tau, sigma) in enumerate(_PREDICTIVE_CASES):
        X, y, x = _predictive_case(i, n, d, tau, sigma)
        got, err = call(fn, X.clone(), y.clone(), x.clone(), tau, sigma)
        if err:
            extra = " (an empty context: Sigma = tau^2 I and mu = 0 there)" if n == 0 else ""
            return report(False, f"with n = {n} context points, d = {d}: {err}{extra}")
        try:
            mean, var = got
            mean, var = _as_float(mean), _as_float(var)
        except Exception as e:
            return report(False, f"return a pair (mean, var) of two numbers; got {type(got).__name__} ({e}).")
        if not (math.isfinite(mean) and math.isfinite(var)):
            return report(False, f"with n = {n} context points your answer is not finite (mean {mean}, var {var}).")
        want_mean, want_var = (float(t) for t in posterior_predictive(X, y, x, tau, sigma))
        if not (_close(mean, want_mean) and _close(var, want_var)):
            return report(False, _diagnose_predictive(X, y, x, tau, sigma, mean, var, want_mean, want_var))
    X, y, x = _predictive_case(3, *_PREDICTIVE_CASES[3][:2], 1.0, 0.5)
    m0, v0 = (float(t) for t in posterior_predictive(X[:0], y[:0], x, 1.0, 0.5))
    m, v = (float(t) for t in posterior_predictive(X, y, x, 1.0, 0.5))
    return report(True, f"all {len(_PREDICTIVE_CASES)} cases match. With {X.shape[0]} points the variance at a "
                         f"new x fell from {v0:.3f} (prior) to {v:.3f} (floor sigma^2 = 0.250).")


def check_gaussian_entropy(fn: Callable[[Tensor], Any]) -> bool:
    """``fn(var)`` must return the differential entropy of ``N(., var)`` in bits, elementwise."""
    var = torch.tensor([1e-3, 0.01, 1 / (2 * math.pi * math.e), 0.25, 1.0, 4.0, 1e3], dtype=torch.float64)
    got, err = call(fn, var.clone())
    if err:
        return report(False, err)
    got, msg = _as_tensor(got, var.shape, "one entropy per variance (a tensor like var)")
    if msg:
        return report(False, msg)
    want = gaussian_entropy_bits(var)
    if torch.allclose(got, want, rtol=1e-6, atol=1e-9):
        return report(True, f"H(N(0, 1)) = {want[4].item():.4f} bits; a variance of {var[0].item():g} gives "
                             f"{want[0].item():.4f} bits: differential entropy can be negative.")
    if torch.allclose(got, want * LN2, rtol=1e-6, atol=1e-9):
        return report(False, "that is in nats; divide by ln 2 (or use log2) for bits.")
    if torch.allclose(got, want.clamp_min(0.0), rtol=1e-6, atol=1e-9) or torch.allclose(got, want.abs(), rtol=1e-6, atol=1e-9):
        return report(False, "a differential entropy can be negative (for var < 1/(2 pi e)); do not clip it "
                              "or take its absolute value.")
    if torch.allclose(got, 0.5 * torch.log2(2 * math.pi * math.e * var.sqrt()), rtol=1e-6, atol=1e-9):
        return report(False, "you used the standard deviation where the formula has the variance: "
                              "0.5 log2(2 pi e var) = log2(sd) + 0.5 log2(2 pi e).")
    if torch.allclose(got, 2 * want, rtol=1e-6, atol=1e-9):
        return report(False, "you are missing the factor 1/2: H = 0.5 log2(2 pi e var).")
    if torch.allclose(got, 0.5 * torch.log2(2 * math.pi * var), rtol=1e-6, atol=1e-9):
        return report(False, "you are missing the e: H = 0.5 log2(2 pi e var) (the e comes from E[z^2] / 2 "
                              "with z standard normal).")
    i = int((got - want).abs().argmax())
    return report(False, f"for var = {var[i].item():g} the entropy is {want[i].item():.5f} bits, "
                          f"you give {got[i].item():.5f}.")


def check_gaussian_kl(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Any]) -> bool:
    """``fn(mean_p, var_p, mean_q, var_q)`` must return ``KL(N(mean_p, var_p) || N(mean_q, var_q))``
    in bits, elementwise."""
    g = torch.Generator().manual_seed(55)
    mean_p = torch.randn(64, generator=g, dtype=torch.float64)
    var_p = torch.rand(64, generator=g, dtype=torch.float64) * 2 + 0.05
    mean_q = mean_p + 0.5 * torch.randn(64, generator=g, dtype=torch.float64)
    var_q = var_p * torch.exp(0.7 * torch.randn(64, generator=g, dtype=torch.float64))
    mean_q[:4], var_q[:4] = mean_p[:4], var_p[:4]  # identical Gaussians: KL 0
    args = (mean_p, var_p, mean_q, var_q)
    got, err = call(fn, *(a.clone() for a in args))
    if err:
        return report(False, err)
    got, msg = _as_tensor(got, mean_p.shape, "one KL per element (a tensor like mean_p)")
    if msg:
        return report(False, msg)
    want = gaussian_kl_bits(*args)
    if torch.allclose(got, want, rtol=1e-6, atol=1e-9):
        return report(True, f"mean KL = {want.mean().item():.4f} bits; 0 where the two Gaussians are equal.")
    if torch.allclose(got, want * LN2, rtol=1e-6, atol=1e-9):
        return report(False, "that is KL in nats; divide by ln 2 for bits.")
    if torch.allclose(got, gaussian_kl_bits(mean_q, var_q, mean_p, var_p), rtol=1e-6, atol=1e-9):
        return report(False, "that is KL(q || p); the metric is KL(p || q) = KL(Bayes || model), with the "
                              "model's variance in the denominators.")
    ratio = var_p / var_q
    no_mean = 0.5 * (ratio - 1 - torch.log(ratio)) / LN2
    if torch.allclose(got, no_mean, rtol=1e-6, atol=1e-9):
        return report(False, "you left out the mean term (mean_p - mean_q)^2 / var_q: two Gaussians with the "
                              "same variance but different means are not the same.")
    if torch.allclose(got, want + 0.5 / LN2, rtol=1e-6, atol=1e-9):
        return report(False, "you are missing the -1: KL must be 0 when the two Gaussians are equal.")
    sd_ratio = ratio.sqrt()
    if torch.allclose(got, 0.5 * (sd_ratio - 1 - torch.log(sd_ratio) + (mean_p - mean_q) ** 2 / var_q.sqrt()) / LN2,
                      rtol=1e-6, atol=1e-9):
        return report(False, "you used standard deviations where the formula has variances.")
    if got[:4].abs().max() > 1e-9:
        return report(False, f"for identical Gaussians KL must be 0; yours gives {got[0].item():.5f}.")
    i = int((got - want).abs().argmax())
    return report(False, f"for N({mean_p[i].item():.3f}, {var_p[i].item():.3f}) || N({mean_q[i].item():.3f}, "
                          f"{var_q[i].item():.3f}) the KL is {want[i].item():.5f} bits, you give {got[i].item():.5f}.")


def check_prior_baseline_mae(fn: Callable[[Tensor, Tensor, float, float], Any]) -> bool:
    """``fn(x, var_bayes, tau, sigma)`` with ``x`` (episodes, N, d) and the exact predictive variance
    ``var_bayes`` (episodes, N) must return the canonical entropy MAE (bits, a float) of the prior
    predictive ``N(0, sigma^2 + tau^2 |x|^2)`` against the exact predictive."""
    tau, sigma = 0.8, 0.4
    tunnel = Regression(d=3, N=8, tau=tau, sigma=sigma)
    ep = tunnel.sample(256, torch.Generator().manual_seed(56))
    x, _ = tunnel.split_inputs(ep)
    x = x.to(torch.float64)
    var_b = ep.var
    got, err = call(fn, x.clone(), var_b.clone(), tau, sigma)
    if err:
        return report(False, err)
    if got is None:
        return report(False, "your function returned None; return the entropy MAE as a float.")
    try:
        got = _as_float(got)
    except Exception:
        return report(False, f"return one number (the mean over episodes and positions); got {type(got).__name__} "
                              f"{tuple(getattr(got, 'shape', ()))}.")
    r2 = (x * x).sum(-1)

    def mae(var_model: Tensor) -> float:
        return entropy_mae(gaussian_entropy_bits(var_model), gaussian_entropy_bits(var_b))[0]

    var_prior = sigma ** 2 + tau ** 2 * r2
    want = mae(var_prior)
    if _close(got, want):
        return report(True, f"the prior-predictive baseline is {want:.4f} bits off Bayes here (tau = {tau}, "
                             f"sigma = {sigma}, d = 3, N = 8); it is exact only at the first position.")
    if _close(got, want * LN2):
        return report(False, "that is in nats; use log2 for bits.")
    if _close(got, mae(torch.full_like(var_b, sigma ** 2))):
        return report(False, "sigma^2 alone is the noise floor (what Bayes approaches with infinite data); the "
                              "prior predictive adds the weights' uncertainty tau^2 |x|^2.")
    if _close(got, mae(tau ** 2 * r2)):
        return report(False, "you left out the noise: the prior predictive variance is sigma^2 + tau^2 |x|^2.")
    if _close(got, mae(sigma ** 2 + tau * r2)) or _close(got, mae(sigma + tau * r2)) or _close(got, mae(sigma ** 2 + tau ** 2 * r2.sqrt())):
        return report(False, "check the squares: y = w.x + eps has variance sigma^2 + tau^2 |x|^2 "
                              "(squared scales, squared norm of x).")
    return report(False, f"expected {want:.5f} bits, got {got:.5f}.")
