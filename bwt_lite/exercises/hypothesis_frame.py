"""Checkers for chapter 7 (the hypothesis frame: key orthogonality and the frame head).

Each checker runs the student's function on seeded random inputs, compares the result with the
package's own answer (:mod:`bwt_lite.geometry.frame`), prints one line (a success line, or what is
off and a hint) and returns a bool. A wrong or unfinished answer never raises.

- :func:`check_offdiag_cosine`: ``fn(keys)``, the mean |off-diagonal cosine| of a key set (n, d).
- :func:`check_chance_cosine`: ``fn(d)``, the exact E|cos| of two independent isotropic vectors in R^d.
- :func:`check_head_removal`: ``fn(attn_out, z, W_O, head)``, the attention output without one head's term.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from ..geometry.frame import analytic_abs_cosine, expected_abs_cosine, off_diagonal_cosine
from . import answer_number, answer_tensor, call, report


def _key_sets() -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(707)
    q, _ = torch.linalg.qr(torch.randn(12, 12, generator=g, dtype=torch.float64))
    scaled = q[:8] * (torch.rand(8, 1, generator=g, dtype=torch.float64) * 5 + 0.2)
    simplex = torch.eye(6, dtype=torch.float64) - 1 / 6
    return [
        ("20 random keys in d = 16", torch.randn(20, 16, generator=g, dtype=torch.float64)),
        ("8 orthogonal keys of different lengths", scaled),
        ("a regular simplex of 6 keys", simplex),
        ("keys sharing a common direction", torch.randn(10, 8, generator=g, dtype=torch.float64) + 2.0),
    ]


def check_offdiag_cosine(fn: Callable[[torch.Tensor], Any]) -> bool:
    """``fn(keys)`` with keys of shape (n, d) must return the mean |cos| over the n (n - 1) pairs i != j."""
    for label, keys in _key_sets():
        got, err = call(fn, keys.clone())
        if err:
            return report(False, f"on {label}: {err}")
        val, err = answer_number(got)
        if err:
            return report(False, f"on {label}: {err}")
        want = off_diagonal_cosine(keys, "abs").item()
        if math.isclose(val, want, rel_tol=1e-6, abs_tol=1e-9):
            continue
        n = keys.shape[0]
        kn = keys / keys.norm(dim=-1, keepdim=True)
        c = kn @ kn.T
        dots = keys @ keys.T
        off = ~torch.eye(n, dtype=torch.bool)
        hints = [
            (c.abs().mean().item(), "you included the diagonal (each key with itself, cos = 1): average over i != j only."),
            (c[off].mean().item(), "you averaged the signed cosines; the statistic is the mean of |cos| (signed "
                                   "cosines cancel, and that is a different definition: report it separately)."),
            (dots[off].abs().mean().item(), "you averaged dot products, not cosines: normalise each key to unit length first."),
        ]
        for alt, hint in hints:
            if math.isclose(val, alt, rel_tol=1e-6, abs_tol=1e-9) and not math.isclose(alt, want, rel_tol=1e-6):
                return report(False, f"on {label}: {hint}")
        return report(False, f"on {label}: expected {want:.6f}, got {val:.6f}.")
    return report(True, "mean |off-diagonal cosine| right on random, orthogonal, simplex and correlated key sets "
                        "(orthogonal keys give exactly 0, whatever their lengths).")


def check_chance_cosine(fn: Callable[[int], Any]) -> bool:
    """``fn(d)`` must return the exact E|cos| of two independent isotropic random vectors in R^d."""
    for d in (2, 3, 4, 16, 32, 192):
        got, err = call(fn, d)
        if err:
            return report(False, f"for d = {d}: {err}")
        val, err = answer_number(got)
        if err:
            return report(False, f"for d = {d}: {err}")
        want = expected_abs_cosine(d)
        if math.isclose(val, want, rel_tol=1e-6):
            continue
        if math.isclose(val, analytic_abs_cosine(d), rel_tol=1e-6):
            return report(False, f"for d = {d} you returned sqrt(2 / (pi d)) = {val:.5f}, the large-d approximation "
                                 f"(exact {want:.5f}: relative error about 1/(4d)). Integrate |x| against the density "
                                 "of the cosine, proportional to (1 - x^2)^((d - 3)/2), to get a ratio of Gamma functions.")
        if math.isclose(val, math.sqrt(1 / d), rel_tol=1e-6):
            return report(False, f"for d = {d} you returned sqrt(1/d), the root-mean-square cosine (E cos^2 = 1/d); "
                                 "the mean of |cos| is smaller.")
        if math.isclose(val, 1 / d, rel_tol=1e-6):
            return report(False, f"for d = {d} you returned 1/d = E cos^2; the question asks for E|cos|.")
        return report(False, f"for d = {d}: expected {want:.6f}, got {val:.6f}. Check d = 3 by hand: there the cosine "
                             "is uniform on [-1, 1] (Archimedes), so E|cos| = 1/2.")
    return report(True, "exact E|cos| for d = 2 (2/pi), 3 (1/2), ... 192; sqrt(2/(pi d)) is its large-d limit.")


def check_head_removal(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], Any]) -> bool:
    """``fn(attn_out, z, W_O, head)``: ``attn_out`` (B, T, d) = concat_h(z_h) @ W_O.T with ``z``
    (B, H, T, dh) the per-head outputs and ``W_O`` (d, d) the output projection's weight; return
    the attention output with head ``head``'s term removed (what zero-ablating that head gives)."""
    g = torch.Generator().manual_seed(708)
    B, H, T, dh = 3, 4, 7, 5
    d = H * dh
    z = torch.randn(B, H, T, dh, generator=g, dtype=torch.float64)
    W_O = torch.randn(d, d, generator=g, dtype=torch.float64)
    attn_out = z.transpose(1, 2).reshape(B, T, d) @ W_O.T
    for head in (0, 2, 3):
        got, err = call(fn, attn_out.clone(), z.clone(), W_O.clone(), head)
        if err:
            return report(False, f"for head {head}: {err}")
        val, err = answer_tensor(got, (B, T, d), "the attention output (B, T, d) without that head's term")
        if err:
            return report(False, f"for head {head}: {err}")
        zz = z.clone()
        zz[:, head] = 0
        want = zz.transpose(1, 2).reshape(B, T, d) @ W_O.T
        if torch.allclose(val, want, atol=1e-8):
            continue
        sl = slice(head * dh, (head + 1) * dh)
        rows = attn_out - z[:, head] @ W_O[sl, :]  # used rows of W_O instead of columns
        zeroed_out = attn_out.clone()
        zeroed_out[..., sl] = 0
        if torch.allclose(val, rows, atol=1e-8):
            return report(False, f"for head {head}: W_O maps the concatenated heads (inputs: columns) to the stream "
                                 "(outputs: rows); head h owns the columns h*dh:(h+1)*dh, i.e. W_O[:, h*dh:(h+1)*dh].")
        if torch.allclose(val, zeroed_out, atol=1e-8):
            return report(False, f"for head {head}: you zeroed output dimensions of the stream; a head writes to "
                                 "all d dimensions through W_O: subtract z_h @ W_O[:, h*dh:(h+1)*dh].T instead.")
        return report(False, f"for head {head}: the result differs from attn_out minus that head's term "
                             f"(max difference {(val - want).abs().max().item():.3g}).")
    return report(True, "removing z_h @ W_O[:, h*dh:(h+1)*dh].T is exactly what the head mask does: a head's output "
                        "is one additive term of the attention output.")
