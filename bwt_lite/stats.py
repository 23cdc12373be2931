"""Small statistics helpers shared by the experiments: Student-t quantiles and confidence intervals
of a mean over seeds, and the first step at which a learning curve reaches a level."""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .arguments import check_int


def t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t distribution with ``df`` degrees of freedom (``0.5 < p < 1``), by
    bisection on the numerically integrated density (Simpson's rule); accurate to about 1e-6."""
    check_int("df", df, 1)
    if not 0.5 < p < 1:
        raise ValueError(f"p must lie in (0.5, 1), got {p}")
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(x: float) -> float:
        n = 4000  # even number of Simpson intervals on [0, x]
        t = torch.linspace(0.0, x, n + 1, dtype=torch.float64)
        f = torch.exp(log_c - (df + 1) / 2 * torch.log1p(t * t / df))
        w = torch.ones(n + 1, dtype=torch.float64)
        w[1:-1:2], w[2:-1:2] = 4.0, 2.0
        return 0.5 + (x / n / 3.0) * (w * f).sum().item()

    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


def mean_ci(values: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` with its two-sided Student-t confidence interval: (mean, low, high).
    With a single value the interval is (nan, nan)."""
    n = len(values)
    if n == 0:
        raise ValueError("values must not be empty")
    x = torch.tensor(values, dtype=torch.float64)
    mean = x.mean().item()
    if n == 1:
        return mean, float("nan"), float("nan")
    half = t_quantile(0.5 + level / 2, n - 1) * x.std().item() / math.sqrt(n)
    return mean, mean - half, mean + half


def first_step_at_or_below(curve: Tensor, threshold: float) -> int | None:
    """The first step ``k >= 1`` with ``curve[k] <= threshold`` (``curve[0]`` is the initial model),
    or None if the curve never gets there."""
    hits = (curve[1:] <= threshold).nonzero()
    return int(hits[0]) + 1 if len(hits) else None


__all__ = ["first_step_at_or_below", "mean_ci", "t_quantile"]
