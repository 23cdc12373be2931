"""Checkers for chapter 12 (Paper III: the same geometry in pretrained language models).

Each checker runs the student's function on seeded inputs, compares the result with the package's
own answer (float64), prints one line (a success line, or what is off and a hint) and returns a bool.
A wrong or unfinished answer never raises.

- :func:`check_sula_posterior`: ``fn(shown, accuracy)``, the exact posterior that the hidden label is
  label 0 after the labels ``shown`` (a list of 0s and 1s).
- :func:`check_mean_abs_cosine`: ``fn(keys)``, the mean |cosine| over distinct pairs of rows (N, d).
- :func:`check_participation_ratio`: ``fn(x)``, the participation ratio of the centred rows (N, d).
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..llm.diagnostics import mean_abs_cosine, pca_summary
from ..llm.sula import bayes_posterior, bayes_predictive
from . import answer_tensor, call, report


def _scalar(fn: Callable, args: tuple, what: str) -> tuple[float | None, str | None]:
    got, err = call(fn, *args)
    if err:
        return None, err
    x, err = answer_tensor(got, (), what, allow_singletons=True)
    if err:
        return None, err
    return x.item(), None


def _close(a: float, b: float, tol: float = 1e-6) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(b))


def check_sula_posterior(fn: Callable[[list[int], float], Any]) -> bool:
    """``fn(shown, accuracy)`` -> P(hidden label = 0 | shown labels), with a uniform prior on the hidden
    label and each shown label equal to it with probability ``accuracy``."""
    cases = [([], 0.9), ([0], 0.9), ([1], 0.9), ([0, 0], 0.9), ([0, 1], 0.9), ([0, 0, 1, 0], 0.9),
             ([1, 1, 1, 0, 1, 1, 0, 1], 0.9), ([0, 0, 0], 0.6), ([1, 0, 1, 1, 1], 0.75), ([0] * 8, 0.99)]
    for shown, a in cases:
        x, err = _scalar(fn, (list(shown), a), "one number, the probability that the hidden label is 0")
        label = f"shown labels {shown} with accuracy {a}"
        if err:
            return report(False, f"on {label}: {err}")
        m, n = shown.count(0), shown.count(1)
        want = bayes_posterior(m, n, a).item()
        if _close(x, want):
            continue
        hints = {
            "that is the predictive for the next shown label (a P + (1-a)(1-P)); the question asks for the hidden label itself.":
                bayes_predictive(m, n, a).item(),
            "that is P(hidden label = 1); return the probability of label 0.": 1 - want,
            "the frequency of label 0 among the examples is not the posterior: weigh each example by the likelihood a or 1 - a.":
                m / len(shown) if shown else float("nan"),
            "the likelihood ratio is right but not normalised: divide by the sum over both hidden labels.":
                a ** m * (1 - a) ** n * 0.5,
        }
        for hint, alt in hints.items():
            if alt == alt and _close(x, alt) and not _close(alt, want):
                return report(False, f"on {label}: {hint}")
        return report(False, f"on {label}: expected {want:.6f}, got {x:.6f}.")
    return report(True, "your posterior is sigmoid((m - n) logit(a)) on every case, equal evidence for "
                        "either label included.")


def _key_cases() -> list[tuple[str, Tensor]]:
    g = torch.Generator().manual_seed(1201)
    return [("two orthogonal vectors", torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)),
            ("three vectors of different lengths", torch.tensor([[2.0, 0.0], [1.0, 1.0], [-3.0, 0.0]], dtype=torch.float64)),
            ("40 random keys in 16 dimensions", torch.randn(40, 16, generator=g, dtype=torch.float64) * 3),
            ("10 keys sharing a common direction", torch.randn(10, 8, generator=g, dtype=torch.float64) + 2.0)]


def check_mean_abs_cosine(fn: Callable[[Tensor], Any]) -> bool:
    """``fn(keys)`` -> the mean of |cos(k_i, k_j)| over all pairs i != j of rows of ``keys`` (N, d)."""
    for label, k in _key_cases():
        x, err = _scalar(fn, (k.clone(),), "one number, the mean |cosine| over pairs of different rows")
        if err:
            return report(False, f"on {label}: {err}")
        want = mean_abs_cosine(k).item()
        if _close(x, want):
            continue
        u = torch.nn.functional.normalize(k, dim=-1)
        c = u @ u.T
        N = k.shape[0]
        off = ~torch.eye(N, dtype=torch.bool)
        hints = {
            "you included the diagonal (every key with itself, cosine 1): average over pairs i != j only.": c.abs().mean().item(),
            "take the absolute value before averaging: opposite keys (cosine -1) are not orthogonal.": c[off].mean().item(),
            "normalise the keys first: a dot product is not a cosine.": (k @ k.T).abs()[off].mean().item(),
        }
        for hint, alt in hints.items():
            if _close(x, alt) and not _close(alt, want):
                return report(False, f"on {label}: {hint}")
        return report(False, f"on {label}: expected {want:.6f}, got {x:.6f}.")
    return report(True, "your mean |cosine| matches on every case; compare it with sqrt(2 / (pi d)) for random keys.")


def check_participation_ratio(fn: Callable[[Tensor], Any]) -> bool:
    """``fn(x)`` -> (sum of eigenvalues)^2 / (sum of squared eigenvalues) of the covariance of the centred
    rows of ``x`` (N, d): about d for isotropic data, 1 when one direction holds all the variance."""
    g = torch.Generator().manual_seed(1202)
    cases = [("points on a line, offset from the origin", torch.linspace(-1, 1, 9, dtype=torch.float64)[:, None] * torch.tensor([[1.0, 2.0, 0.5]], dtype=torch.float64) + 4.0),
             ("anisotropic cloud (scales 3, 1, 0.5), offset", torch.randn(200, 3, generator=g, dtype=torch.float64) * torch.tensor([3.0, 1.0, 0.5], dtype=torch.float64) + 2.0),
             ("20 points in 30 dimensions", torch.randn(20, 30, generator=g, dtype=torch.float64))]
    for label, data in cases:
        x, err = _scalar(fn, (data.clone(),), "one number, the participation ratio")
        if err:
            return report(False, f"on {label}: {err}")
        want = pca_summary(data).participation_ratio
        if _close(x, want):
            continue
        s_raw = torch.linalg.svdvals(data)
        s = torch.linalg.svdvals(data - data.mean(0))
        hints = {
            "centre the rows first (subtract the mean vector): otherwise the offset counts as a direction of variance.":
                ((s_raw ** 2).sum() ** 2 / (s_raw ** 4).sum()).item(),
            "use the eigenvalues of the covariance, the squared singular values, not the singular values themselves.":
                (s.sum() ** 2 / (s ** 2).sum()).item(),
            "that is the fraction of variance on PC1; the participation ratio uses the whole spectrum.":
                ((s[0] ** 2) / (s ** 2).sum()).item(),
        }
        for hint, alt in hints.items():
            if _close(x, alt) and not _close(alt, want):
                return report(False, f"on {label}: {hint}")
        return report(False, f"on {label}: expected {want:.6f}, got {x:.6f}.")
    return report(True, "your participation ratio matches: an effective number of dimensions of the representation.")
