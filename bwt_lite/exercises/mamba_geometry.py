"""Checkers for chapter 10 (the belief simplex of Mamba and the LSTM on the HMM).

Each checker runs the student's function on seeded constructed data, compares the result with the
package's own answer (:mod:`bwt_lite.geometry.simplex`, :mod:`bwt_lite.geometry.manifold`), prints
one line (a success line, or what is off and a hint) and returns a bool. A wrong or unfinished answer
never raises.

- :func:`check_silhouette`: ``fn(x, labels)``, the mean silhouette coefficient of labelled points.
- :func:`check_pca_scores`: ``fn(x, k)``, the coordinates of the points on their top-k principal
  components (each column up to its sign).
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..geometry.manifold import pca
from ..geometry.simplex import silhouette
from . import answer_tensor, call, report

_TOL = 1e-6


def _cluster_cases(seed: int) -> list[tuple[str, Tensor, Tensor]]:
    g = torch.Generator().manual_seed(seed)
    centres = 4 * torch.randn(3, 2, generator=g, dtype=torch.float64)
    labels = torch.tensor([0] * 15 + [1] * 10 + [2] * 12)
    blobs = centres[labels] + torch.randn(37, 2, generator=g, dtype=torch.float64)
    overlap = torch.randn(40, 5, generator=g, dtype=torch.float64)
    lab2 = torch.randint(0, 4, (40,), generator=g)
    single = torch.randn(12, 3, generator=g, dtype=torch.float64)
    lab3 = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3])  # cluster 3 is a single point
    return [("three Gaussian blobs in the plane", blobs, labels),
            ("overlapping clusters (random labels) in 5 dimensions", overlap, lab2),
            ("clusters including one of a single point (its score is 0)", single, lab3)]


def _silhouette_variants(x: Tensor, labels: Tensor) -> dict[str, float]:
    """Typical wrong silhouettes, each with the hint that explains it."""
    d = ((x[:, None] - x[None]) ** 2).sum(-1).sqrt()
    ks = sorted(set(labels.tolist()))
    n = len(labels)
    out: dict[str, list[float]] = {"self": [], "all": [], "nomax": []}
    for i in range(n):
        same = labels == labels[i]
        n_same = int(same.sum())
        others = [d[i, labels == k].mean() for k in ks if k != labels[i]]
        b = min(others)
        a_self = d[i, same].mean()  # includes the zero distance to itself
        a = d[i, same].sum() / max(n_same - 1, 1)
        b_all = d[i, ~same].mean()
        single = n_same == 1
        out["self"].append(0.0 if single else ((b - a_self) / max(a_self, b)).item())
        out["all"].append(0.0 if single else ((b_all - a) / max(a, b_all)).item())
        out["nomax"].append(0.0 if single else ((b - a) / b).item())
    return {
        "a(i) must average over the *other* points of i's cluster: divide by (cluster size - 1), "
        "leaving out the zero distance of i to itself.": sum(out["self"]) / n,
        "b(i) is the mean distance to the points of the *nearest* other cluster (the smallest mean "
        "over the other clusters), not to all points outside i's cluster.": sum(out["all"]) / n,
        "divide (b - a) by max(a, b), not by b: when a > b the score must go down to -1.": sum(out["nomax"]) / n,
    }


def check_silhouette(fn: Callable[[Tensor, Tensor], Any]) -> bool:
    """``fn(x, labels)`` -> float: the mean over points of ``(b - a) / max(a, b)``, where ``a`` is the
    point's mean Euclidean distance to the other points of its cluster and ``b`` the smallest mean
    distance to the points of another cluster (0 for a point alone in its cluster)."""
    for label, x, labels in _cluster_cases(1001):
        got, err = call(fn, x.clone(), labels.clone())
        if err is None:
            vec, err = answer_tensor(got, (), "one number, the mean silhouette", allow_singletons=True)
        if err:
            return report(False, f"on {label}: {err}")
        value, want = vec.item(), silhouette(x, labels)
        if abs(value - want) <= _TOL:
            continue
        for hint, alt in _silhouette_variants(x, labels).items():
            if abs(value - alt) <= _TOL and abs(alt - want) > _TOL:
                return report(False, f"on {label}: {hint}")
        return report(False, f"on {label}: expected {want:.6f}, got {value:.6f}.")
    return report(True, "your silhouette matches on separated blobs, on overlapping clusters and with a "
                        "single-point cluster.")


def check_pca_scores(fn: Callable[[Tensor, int], Any]) -> bool:
    """``fn(x, k)`` -> (n, k): the coordinates of the points ``x`` (n, d) on their top-``k`` principal
    components, largest variance first. The sign of each component is arbitrary, so each column may
    be flipped."""
    g = torch.Generator().manual_seed(1002)
    rot = torch.linalg.qr(torch.randn(6, 6, generator=g, dtype=torch.float64)).Q
    cases = [("a cloud with variances 9, 4, 1, ... far from the origin",
              torch.randn(100, 6, generator=g, dtype=torch.float64) * torch.tensor([3.0, 2, 1, 0.5, 0.3, 0.2],
                                                                                  dtype=torch.float64) @ rot + 20.0, 2),
             ("a cloud in 6 dimensions, k = 3", torch.randn(80, 6, generator=g, dtype=torch.float64)
              * torch.linspace(2, 0.2, 6, dtype=torch.float64), 3)]
    for label, x, k in cases:
        raw_answer, err = call(fn, x.clone(), k)
        got = None
        if err is None:
            got, err = answer_tensor(raw_answer, (x.shape[0], k), f"an (n, k) = ({x.shape[0]}, {k}) tensor of coordinates")
        if err:
            if tuple(getattr(raw_answer, "shape", ())) == (k, x.shape[1]):
                err += " It looks like the components themselves (k, d): project the centred points on them."
            return report(False, f"on {label}: {err}")
        want = pca(x, k).scores
        signs = torch.sign((got * want).sum(0))
        signs[signs == 0] = 1
        if torch.allclose(got * signs, want, atol=_TOL, rtol=1e-6):
            continue
        raw = x @ pca(x, k).components.T
        if torch.allclose(got * signs, raw, atol=_TOL, rtol=1e-6):
            return report(False, f"on {label}: centre the points (subtract the mean) before projecting them "
                                 "on the components.")
        return report(False, f"on {label}: expected first row {(want[0]).tolist()}, got {got[0].tolist()} "
                             "(each column up to its sign).")
    return report(True, "your principal-component coordinates match (up to the sign of each component).")
