"""Bayesian linear regression (continuous accumulation).

Fresh weights per episode, ``w ~ N(0, tau^2 I_d)``; inputs ``x_i ~ N(0, I_d)``; observations
``y_i = w . x_i + eps_i`` with ``eps_i ~ N(0, sigma^2)``; ``N`` points. At every new ``x`` the model
predicts a Gaussian (a mean and a log-variance head, trained with the Gaussian NLL).

Layouts (float features, no vocabulary; ``variant``):

- ``pairs`` (default): one token per prediction, ``N`` tokens; token i carries the new input and the
  whole pair revealed just before it, width ``F = 2d + 2``::

      token i: (x_i, x_{i-1}, y_{i-1}, 1)     token 0: (x_0, 0, ..., 0, 0, 0)

  Every token is a prediction position. Attention then only has to pool the revealed pairs (as in
  the bijection). This is the default because with interleaved tokens a causal model must first
  learn a previous-token head to pair each y with its x before it can regress: the lite transformer
  stayed on the prior-predictive plateau for 4,000 steps there (KL 1.08 bits), while on pair tokens
  it fell to 0.37 bits in 1,000.
- ``interleaved``: the tokens ``x_1, y_1, x_2, y_2, ..., x_N`` (length ``2N - 1``; the last ``y`` is
  only a target), width ``F = d + 2``: an x token is ``(x, 0, 1)`` (the last feature flags x tokens),
  a y token ``(0, ..., 0, y, 0)``; the prediction positions are the x tokens ``0, 2, 4, ...``.

``inputs`` is float32; ``target`` (B, N) float32 holds the sampled ``y_i``, bit for bit the value
the next tokens show (the last one appears in no token).

Exact posterior predictive at x token i, having seen the pairs ``j < i``: Gaussian with mean
``x_i^T mu`` and variance ``sigma^2 + x_i^T Sigma x_i``, where
``Sigma = (I / tau^2 + X^T X / sigma^2)^-1`` and ``mu = Sigma X^T y / sigma^2`` (at i = 0 the prior
predictive: mean 0, variance ``sigma^2 + tau^2 |x_i|^2``). It is computed in float64 from the float32
values the model sees (x is drawn in float32, y is rounded to float32 before anything else), so it
is the exact posterior of the episode as presented; the rounding of y (relative 6e-8) is far below
``sigma``. That holds in the allowed range, ``1e-6 <= tau, sigma <= 1e6`` and ``tau / sigma <= 1e4``
(:data:`SCALE_MIN`, :data:`SCALE_MAX`, :data:`MAX_TAU_OVER_SIGMA`); other values raise ValueError.

Module helpers (tensors only, float64, entropies and divergences in bits):
:func:`posterior_predictive`, :func:`gaussian_entropy_bits`, :func:`gaussian_kl_bits`, and the
training loss :func:`gaussian_nll` (nats).
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ..arguments import check_choice, check_float_tensor, check_int
from .base import Card, Episodes, Tunnel, check_size

# Elements of one (B, chunk, d, d) float64 block of prefix statistics in Regression.posterior: the
# positions are processed in chunks so memory stays bounded (32 MiB a block) for large d and N.
_CHUNK_ELEMS = 2 ** 22


# The allowed prior and noise scales. Within [1e-6, 1e6] the squares and reciprocals of tau and sigma
# are normal float64 numbers and the float32 inputs (|y| about tau |x|) stay finite and far from
# float32's overflow and underflow.
SCALE_MIN, SCALE_MAX = 1e-6, 1e6
# The tunnel rounds y to float32 (relative error 2^-24 = 6e-8 of |y|, about tau |x|) and its posterior
# treats the rounded y as exact data with noise sigma. With tau / sigma <= 1e4 that rounding stays
# below 1e-3 sigma per unit of |x|, negligible next to the noise, so the posterior is exact for the
# episode as shown; it also keeps the posterior precision's condition number (about
# 1 + N |x|^2 tau^2 / sigma^2) far from float64's limit.
MAX_TAU_OVER_SIGMA = 1e4


def _check_scale(name: str, value: Any) -> float:
    """A float (ints accepted) in [SCALE_MIN, SCALE_MAX], naming the argument and the range on error."""
    allowed = f"allowed: {SCALE_MIN:g} <= {name} <= {SCALE_MAX:g}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a finite float > 0, got {value!r} ({type(value).__name__}); {allowed}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite float > 0, got {value}; {allowed}")
    if not SCALE_MIN <= value <= SCALE_MAX:
        raise ValueError(f"{name} must be a finite float > 0 in [{SCALE_MIN:g}, {SCALE_MAX:g}], got {value:g}; "
                         f"{allowed} (there the float64 posterior stays finite and exact)")
    return value


def _predictive_from_stats(xtx: Tensor, xty: Tensor, x_new: Tensor, tau: float, sigma: float
                           ) -> tuple[Tensor, Tensor]:
    """Predictive (mean, var) at ``x_new`` (..., d) from context statistics ``xtx = X^T X``
    (..., d, d) and ``xty = X^T y`` (..., d), all float64, no validation.

    Numerics: the posterior precision ``A = I/tau^2 + X^T X / sigma^2`` is symmetric positive
    definite with every eigenvalue >= 1/tau^2, so its Cholesky factor ``A = L L^T`` always exists
    and is backward stable. One triangular solve ``L [z, u] = [x_new, X^T y / sigma^2]`` gives
    ``x^T Sigma x = |z|^2`` and ``x^T mu = z . u``. The variance is thus ``sigma^2`` plus a sum of
    squares: never negative and never below ``sigma^2``, which an explicit inverse or a chain of
    Sherman-Morrison downdates (subtracting rank-one terms, losing symmetry) cannot guarantee.
    """
    prec = xtx * (1.0 / sigma ** 2)
    prec.diagonal(dim1=-2, dim2=-1).add_(1.0 / tau ** 2)  # + I / tau^2, in place on the fresh tensor
    # cholesky_ex: no error check, hence no device sync; A is positive definite by construction
    chol = torch.linalg.cholesky_ex(prec)[0]
    rhs = torch.stack([x_new, xty / sigma ** 2], dim=-1)  # (..., d, 2)
    z = torch.linalg.solve_triangular(chol, rhs, upper=False)
    zx, zb = z[..., 0], z[..., 1]
    return (zx * zb).sum(-1), sigma ** 2 + (zx * zx).sum(-1)


def posterior_predictive(X: Tensor, y: Tensor, x_new: Tensor, tau: float, sigma: float
                         ) -> tuple[Tensor, Tensor]:
    """Exact posterior predictive of ``y_new`` at ``x_new`` given the context ``(X, y)``.

    Shapes: ``X`` (..., n, d), ``y`` (..., n), ``x_new`` (..., d), with the same leading dims; the
    context may be empty (n = 0: the prior predictive). ``tau`` is the prior scale of the weights,
    ``sigma`` the noise scale. Returns ``(mean, var)``, each (...) float64: the predictive is
    ``N(x_new^T mu, sigma^2 + x_new^T Sigma x_new)``.
    """
    tau, sigma = _check_scale("tau", tau), _check_scale("sigma", sigma)
    X, y, x_new = check_float_tensor("X", X), check_float_tensor("y", y), check_float_tensor("x_new", x_new)
    if X.dim() < 2:
        raise ValueError(f"X must have shape (..., n, d), got {tuple(X.shape)}")
    lead, d = X.shape[:-2], X.shape[-1]
    if d < 1:
        raise ValueError(f"X must have d >= 1 features, got shape {tuple(X.shape)}")
    if y.shape != X.shape[:-1]:
        raise ValueError(f"y must have shape {tuple(X.shape[:-1])} (X's shape without d), got {tuple(y.shape)}")
    if x_new.shape != lead + (d,):
        raise ValueError(f"x_new must have shape {tuple(lead + (d,))}, got {tuple(x_new.shape)}")
    X, y, x_new = (t.to(torch.float64) for t in (X, y, x_new))
    for name, t in (("X", X), ("y", y), ("x_new", x_new)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
    xtx = X.transpose(-1, -2) @ X
    xty = (X * y.unsqueeze(-1)).sum(-2)
    mean, var = _predictive_from_stats(xtx, xty, x_new, tau, sigma)
    if not (bool(torch.isfinite(mean).all()) and bool(torch.isfinite(var).all())):
        raise ValueError(f"the posterior precision I / tau^2 + X^T X / sigma^2 is numerically singular in float64 "
                         f"(tau / sigma = {tau / sigma:.3g}, largest |X| entry {X.abs().max().item():.3g}): "
                         f"lower tau / sigma or rescale X")
    return mean, var


class Regression(Tunnel):
    """Bayesian linear regression: ``d`` features, ``N`` points, prior scale ``tau``, noise ``sigma``."""

    name = "regression"
    kind = "gaussian"
    variants = ("pairs", "interleaved")
    length_arg = "N"
    baselines = {"prior": "regression_prior", "one-pair": "one_pair_predictive"}
    cards = {"regression": Card(
        "continuous accumulation", ("entropy_mae_bits", "max", 0.25),
        {"entropy_mae_bits": ("prior", "one-pair"), "kl_bits": ("prior", "one-pair")},
        why="a quarter of a bit (the MLP control sits near 1.16); one-pair is the exact predictive from the most "
            "recent pair alone")}

    def __init__(self, d: int = 4, N: int = 16, tau: float = 1.0, sigma: float = 0.5, variant: str = "pairs"):
        self.d = check_int("d", d, 1)
        self.N = check_int("N", N, 1)
        self.tau = _check_scale("tau", tau)
        self.sigma = _check_scale("sigma", sigma)
        if self.tau > MAX_TAU_OVER_SIGMA * self.sigma:
            raise ValueError(f"tau / sigma must be <= {MAX_TAU_OVER_SIGMA:g}, got tau = {self.tau:g}, sigma = "
                             f"{self.sigma:g} (ratio {self.tau / self.sigma:.3g}): y is shown in float32, and past "
                             f"this ratio its rounding is no longer negligible next to the noise sigma")
        self.variant = check_choice("variant", variant, self.variants)
        # Per episode: x, y, w and the noise (float32 and float64 copies), the tokens, and the
        # posterior's float64 prefix statistics, (d x d) blocks per position (about six at a time);
        # Regression.posterior takes the positions in chunks of at most _CHUNK_ELEMS block entries for
        # the whole batch, so beyond one position per episode that part is bounded by fixed_bytes.
        self.episode_bytes = 48 * d * d + 8 * N * (4 * d + 10)
        self.fixed_bytes = 48 * _CHUNK_ELEMS
        check_size("d and N", self.episode_bytes + self.fixed_bytes)
        if variant == "pairs":
            self.seq_len, self.n_features, self.positions = N, 2 * d + 2, torch.arange(N)
        else:
            self.seq_len, self.n_features, self.positions = 2 * N - 1, d + 2, torch.arange(0, 2 * N - 1, 2)
        self.vocab_size, self.n_classes, self.answer_tokens = 0, 1, None

    def config(self) -> dict[str, Any]:
        return {"tunnel": self.name, "d": self.d, "N": self.N, "tau": self.tau, "sigma": self.sigma,
                "variant": self.variant}

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        (B, g), d, N = self._check_sample_args(batch_size, generator), self.d, self.N
        dev = g.device
        w = torch.randn(B, d, generator=g, device=dev, dtype=torch.float64) * self.tau
        x = torch.randn(B, N, d, generator=g, device=dev, dtype=torch.float32)  # what the model sees
        eps = torch.randn(B, N, generator=g, device=dev, dtype=torch.float64) * self.sigma
        y = ((x.to(torch.float64) * w.unsqueeze(1)).sum(-1) + eps).to(torch.float32)  # (B, N)

        if self.variant == "pairs":
            tokens = torch.zeros(B, N, 2 * d + 2, dtype=torch.float32, device=dev)
            tokens[:, :, :d] = x
            tokens[:, 1:, d:2 * d] = x[:, :-1]
            tokens[:, 1:, 2 * d] = y[:, :-1]
            tokens[:, 1:, 2 * d + 1] = 1.0
        else:
            tokens = torch.zeros(B, 2 * N, d + 2, dtype=torch.float32, device=dev)
            tokens[:, 0::2, :d] = x
            tokens[:, 0::2, d + 1] = 1.0
            tokens[:, 1::2, d] = y
            tokens = tokens[:, :-1]
        mean, var = self.posterior(x, y)
        return Episodes(inputs=tokens.contiguous(), positions=self.positions.to(dev), target=y,
                        mean=mean, var=var)

    def split_inputs(self, episodes: Episodes) -> tuple[Tensor, Tensor]:
        """The inputs and answers of sampled episodes: ``x`` (B, N, d) and ``y`` (B, N)."""
        x = episodes.inputs[:, :, :self.d] if self.variant == "pairs" else episodes.inputs[:, 0::2, :self.d]
        return x, episodes.target

    def posterior(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Exact predictive of ``y[:, i]`` at ``x[:, i]`` given the pairs ``j < i``, for every i.

        ``x`` (B, N, d), ``y`` (B, N); returns ``(mean, var)``, each (B, N) float64. Same numerics
        as :func:`posterior_predictive` (shared Cholesky core), with the context statistics
        ``X^T X`` and ``X^T y`` of every prefix built by an exclusive cumulative sum, vectorised over
        episodes and positions (in chunks of positions to bound memory).
        """
        X, Y = x.to(torch.float64), y.to(torch.float64)
        B, N, d = X.shape
        chunk = max(1, min(N, _CHUNK_ELEMS // (B * d * d)))
        xtx = X.new_zeros(B, 1, d, d)  # statistics of all pairs before the current chunk
        xty = X.new_zeros(B, 1, d)
        means, vars_ = [], []
        for s in range(0, N, chunk):
            Xc, Yc = X[:, s:s + chunk], Y[:, s:s + chunk]
            incl_xtx = xtx + (Xc.unsqueeze(-1) * Xc.unsqueeze(-2)).cumsum(1)
            incl_xty = xty + (Xc * Yc.unsqueeze(-1)).cumsum(1)
            excl_xtx = torch.cat([xtx, incl_xtx[:, :-1]], dim=1)
            excl_xty = torch.cat([xty, incl_xty[:, :-1]], dim=1)
            m, v = _predictive_from_stats(excl_xtx, excl_xty, Xc, self.tau, self.sigma)
            means.append(m)
            vars_.append(v)
            xtx, xty = incl_xtx[:, -1:], incl_xty[:, -1:]
        return torch.cat(means, dim=1), torch.cat(vars_, dim=1)
