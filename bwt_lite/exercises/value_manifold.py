"""Checkers for chapter 9 (the value manifold, the frame-precision dissociation, belief probes).

Each checker runs the student's function on seeded constructed data, compares the result with the
package's own answer (:mod:`bwt_lite.geometry.manifold`, :mod:`bwt_lite.geometry.probes`), prints one
line (a success line, or what is off and a hint) and returns a bool. A wrong or unfinished answer
never raises.

- :func:`check_pc1_share`: ``fn(x)``, the fraction of the variance of a point cloud along its first
  principal component.
- :func:`check_spearman`: ``fn(x, y)``, Spearman's rank correlation (ties share their average rank).
- :func:`check_heldout_r2`: ``fn(x_fit, y_fit, x_test, y_test)``, the held-out R^2 of a least-squares
  linear map with intercept.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..geometry.manifold import pca, pearson, spearman
from ..geometry.probes import heldout_r2, r2_score, ridge_fit
from . import answer_number, call, report

_TOL = 1e-6


def _clouds(seed: int) -> list[tuple[str, Tensor]]:
    g = torch.Generator().manual_seed(seed)
    line = torch.randn(200, 1, generator=g, dtype=torch.float64) * torch.randn(1, 6, generator=g, dtype=torch.float64)
    scales = torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)
    aniso = torch.randn(400, 3, generator=g, dtype=torch.float64) * scales
    rot = torch.linalg.qr(torch.randn(8, 8, generator=g, dtype=torch.float64)).Q
    far = torch.randn(300, 8, generator=g, dtype=torch.float64) * torch.linspace(2, 0.5, 8, dtype=torch.float64) @ rot + 40.0
    return [("points on a line in 6 dimensions", line + 1.5),
            ("an anisotropic Gaussian cloud (scales 3, 2, 1)", aniso),
            ("a rotated cloud far from the origin (8 dimensions)", far)]


def check_pc1_share(fn: Callable[[Tensor], Any]) -> bool:
    """``fn(x)`` -> float: the fraction of the total variance of the points ``x`` (n, d) that lies
    along their first principal component (a number in [0, 1])."""
    for label, x in _clouds(901):
        got, err = call(fn, x.clone())
        if err is None:
            got, err = answer_number(got)
        if err:
            return report(False, f"on {label}: {err}")
        want = pca(x, 1).explained[0]
        if abs(got - want) <= _TOL:
            continue
        s_raw = torch.linalg.svdvals(x)
        s = torch.linalg.svdvals(x - x.mean(0))
        hints = {
            "you did not centre the points: subtract the mean of each coordinate before the SVD (or use "
            "the covariance matrix), otherwise PC1 points at the mean.": (s_raw[0] ** 2 / (s_raw ** 2).sum()).item(),
            "a principal component's variance is its singular value squared (or an eigenvalue of the "
            "covariance matrix), not the singular value itself.": (s[0] / s.sum()).item(),
            "return a fraction of the total variance (divide by the sum over all components), not the "
            "variance itself.": (s[0] ** 2 / (x.shape[0] - 1)).item(),
        }
        for hint, alt in hints.items():
            if abs(got - alt) <= _TOL and abs(alt - want) > _TOL:
                return report(False, f"on {label}: {hint}")
        return report(False, f"on {label}: expected {want:.6f}, got {got:.6f}.")
    return report(True, "your PC1 share matches on a line (1.0), an anisotropic cloud (9/14 in expectation) "
                        "and a rotated cloud far from the origin.")


def _rank_cases(seed: int) -> list[tuple[str, Tensor, Tensor]]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(50, generator=g, dtype=torch.float64)
    ties_x = torch.randint(0, 5, (60,), generator=g).double()
    ties_y = ties_x + torch.randint(0, 3, (60,), generator=g).double()
    return [("y = exp(3x), a monotone transform", x, torch.exp(3 * x)),
            ("y = -x^3", x, -x ** 3),
            ("noisy data", x, x + torch.randn(50, generator=g, dtype=torch.float64)),
            ("data with many ties (integers 0..4)", ties_x, ties_y)]


def _ordinal(x: Tensor) -> Tensor:
    r = torch.empty_like(x)
    r[torch.argsort(x, stable=True)] = torch.arange(1, x.numel() + 1, dtype=torch.float64)
    return r


def check_spearman(fn: Callable[[Tensor, Tensor], Any]) -> bool:
    """``fn(x, y)`` -> float: Spearman's rank correlation of two equally long 1-D tensors, with tied
    values sharing the average of the ranks they span."""
    for label, x, y in _rank_cases(902):
        got, err = call(fn, x.clone(), y.clone())
        if err is None:
            got, err = answer_number(got)
        if err:
            return report(False, f"on {label}: {err}")
        want = spearman(x, y)
        if abs(got - want) <= _TOL:
            continue
        hints = {
            "that is Pearson's r of the values; Spearman's is Pearson's r of their ranks.": pearson(x, y),
            "tied values must share their average rank (e.g. two values tied for ranks 3 and 4 both get "
            "3.5), not ranks in the order they appear.": pearson(_ordinal(x), _ordinal(y)),
        }
        for hint, alt in hints.items():
            if abs(got - alt) <= _TOL and abs(alt - want) > _TOL:
                return report(False, f"on {label}: {hint}")
        return report(False, f"on {label}: expected {want:.6f}, got {got:.6f}.")
    return report(True, "your Spearman correlation matches, monotone transforms give exactly +-1, and ties are "
                        "handled with average ranks.")


def _probe_cases(seed: int) -> list[tuple[str, Tensor, Tensor, Tensor, Tensor]]:
    g = torch.Generator().manual_seed(seed)
    cases = []
    for label, n, d, noise, offset in (("a linear target with a little noise", 200, 5, 0.1, 3.0),
                                       ("a noisy target far from zero", 150, 4, 2.0, 10.0),
                                       ("pure noise (nothing to learn)", 120, 10, None, 0.0)):
        w = torch.randn(d, generator=g, dtype=torch.float64)
        xs = [torch.randn(n, d, generator=g, dtype=torch.float64) for _ in range(2)]
        if noise is None:
            ys = [torch.randn(n, generator=g, dtype=torch.float64) for _ in range(2)]
        else:
            ys = [x @ w + offset + noise * torch.randn(n, generator=g, dtype=torch.float64) for x in xs]
        cases.append((label, xs[0], ys[0], xs[1], ys[1]))
    return cases


def check_heldout_r2(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Any]) -> bool:
    """``fn(x_fit, y_fit, x_test, y_test)`` -> float: fit ``y ~ x @ w + b`` by least squares on the
    fitting split and return ``R^2 = 1 - sum (y_test - y_hat)^2 / sum (y_test - mean(y_test))^2`` on
    the test split."""
    for label, xf, yf, xt, yt in _probe_cases(903):
        got, err = call(fn, xf.clone(), yf.clone(), xt.clone(), yt.clone())
        if err is None:
            got, err = answer_number(got)
        if err:
            return report(False, f"on {label}: {err}")
        want = heldout_r2(xf, yf, xt, yt, 0.0)
        if abs(got - want) <= _TOL:
            continue
        no_b = torch.linalg.lstsq(xf, yf.unsqueeze(1)).solution
        hints = {
            "you scored the fit on the data it was fit on (in-sample R^2 is optimistic, most of all on "
            "noise): score on x_test, y_test.": r2_score(yf, ridge_fit(xf, yf, 0.0).predict(xf)),
            "you fit the map on the test split: fit on x_fit, y_fit and only score on the test split.":
                heldout_r2(xt, yt, xt, yt, 0.0),
            "your map has no intercept: add a column of ones to x (or centre x and y with the fitting "
            "split's means).": r2_score(yt, xt @ no_b),
        }
        for hint, alt in hints.items():
            if abs(got - alt) <= _TOL and abs(alt - want) > _TOL:
                return report(False, f"on {label}: {hint}")
        return report(False, f"on {label}: expected {want:.6f}, got {got:.6f}.")
    return report(True, "your held-out R^2 matches, including a target with nothing to learn (about 0, "
                        "slightly below).")
