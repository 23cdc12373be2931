"""Checkers for chapter 11 (Paper II: how cross-entropy gradients shape attention).

Each checker runs the student's function on seeded random inputs, compares the result with the
package's own answer (float64), prints one line (a success line, or what is off and a hint) and
returns a bool. A wrong or unfinished answer never raises.

- :func:`check_score_gradient`: ``fn(alpha, u, v)``, the routing law ``dL/ds_ij = alpha_ij (b_ij - E_alpha_i[b])``.
- :func:`check_value_gradient`: ``fn(alpha, u)``, the responsibility-weighted ``dL/dv_j = sum_i alpha_ij u_i``.
- :func:`check_sticky_predictive`: ``fn(x, T, means, noise)``, the exact predictive of the next
  symbol of one sticky-chain sequence (the forward filter, then one step of the chain).
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..dynamics.gradients import score_gradient, value_gradient
from ..tunnels.sticky import Sticky
from . import answer_tensor, call, report

_TOL = 1e-8


def _attention_cases(seed: int) -> list[tuple[str, Tensor, Tensor, Tensor]]:
    """(label, alpha (T, T), u (T, d_v), v (T, d_v)): causal and full attention, a single position,
    a sharply peaked pattern, and the paper's head sizes."""
    g = torch.Generator().manual_seed(seed)
    cases = []
    for label, T, d, causal, scale in (("causal attention, T = 6, d_v = 3", 6, 3, True, 1.0),
                                       ("full (non-causal) attention, T = 5, d_v = 4", 5, 4, False, 1.0),
                                       ("a single position", 1, 2, True, 1.0),
                                       ("sharply peaked attention, T = 7", 7, 3, True, 8.0),
                                       ("the paper's head (T = 12, d_v = 15), causal", 12, 15, True, 1.0)):
        s = torch.randn(T, T, generator=g, dtype=torch.float64) * scale
        if causal:
            s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        alpha = s.softmax(-1)
        u = torch.randn(T, d, generator=g, dtype=torch.float64) * 0.3
        v = torch.randn(T, d, generator=g, dtype=torch.float64)
        cases.append((label, alpha, u, v))
    return cases


def _matches(x: Tensor, want: Tensor) -> bool:
    return torch.allclose(x, want, atol=_TOL, rtol=1e-6)


def _answer(fn: Callable[..., Any], args: tuple[Tensor, ...], shape: tuple[int, ...],
            what: str) -> tuple[Tensor | None, str | None]:
    """Run the student's ``fn(*args)`` (on copies) and read its answer as a float64 tensor of
    ``shape``: ``(tensor, None)`` or ``(None, what went wrong)``."""
    got, err = call(fn, *(a.clone() if isinstance(a, Tensor) else a for a in args))
    if err:
        return None, err
    return answer_tensor(got, shape, what)


def _diagnose(x: Tensor, want: Tensor, hints: dict[str, Tensor]) -> str:
    """The hint of the first typical mistake ``x`` reproduces (and the right answer does not), else
    the expected and obtained first rows."""
    for hint, alt in hints.items():
        if _matches(x, alt) and not _matches(alt, want):
            return hint
    return f"expected row 0 {want[0].tolist()}, got {x[0].tolist()}."


def check_score_gradient(fn: Callable[[Tensor, Tensor, Tensor], Any]) -> bool:
    """``fn(alpha, u, v)`` -> (T, T): the gradient of the loss with respect to the attention scores,
    given the attention weights ``alpha`` (T, T) (rows sum to 1), the upstream errors ``u_i = dL/dz_i``
    (T, d_v) and the values ``v`` (T, d_v)."""
    for label, alpha, u, v in _attention_cases(1101):
        T = alpha.shape[0]
        x, err = _answer(fn, (alpha, u, v), (T, T), f"a (T, T) = ({T}, {T}) tensor of score gradients")
        if err:
            return report(False, f"on {label}: {err}")
        want = score_gradient(alpha, u, v)
        if _matches(x, want):
            continue
        b = u @ v.T
        hints = {
            "you forgot to centre: the gradient is alpha_ij (b_ij - E_alpha_i[b]); softmax is shift-invariant, so "
            "each row of the score gradient must sum to 0.": alpha * b,
            "you forgot the factor alpha_ij: the softmax Jacobian is alpha_ij (delta_jk - alpha_ik), so the "
            "centred b_ij is weighted by how much i attends to j.": b - (alpha * b).sum(-1, keepdim=True),
            "the sign is flipped: that is minus the gradient (the advantage times alpha). dL/ds_ij is positive "
            "where v_j increases the loss, b_ij = u_i . v_j above average.": -want,
            "you centred with the plain mean over keys; use the attention-weighted mean E_alpha_i[b] = "
            "sum_k alpha_ik b_ik.": alpha * (b - b.mean(-1, keepdim=True)),
            "b is transposed: b_ij = u_i . v_j pairs query i's error with key j's value, i.e. b = u @ v.T.":
                alpha * (b.T - (alpha * b.T).sum(-1, keepdim=True)),
        }
        return report(False, f"on {label}: {_diagnose(x, want, hints)}")
    return report(True, "your score gradient is the routing law alpha_ij (b_ij - E_alpha_i[b]) on every case, "
                        "including full attention and a sharply peaked pattern.")


def check_value_gradient(fn: Callable[[Tensor, Tensor], Any]) -> bool:
    """``fn(alpha, u)`` -> (T, d_v): the gradient of the loss with respect to the value vectors v_j,
    given the attention weights ``alpha`` (T, T) and the upstream errors ``u`` (T, d_v)."""
    for label, alpha, u, _ in _attention_cases(1102):
        T, d = u.shape
        x, err = _answer(fn, (alpha, u), (T, d), f"a (T, d_v) = ({T}, {d}) tensor, one gradient per value vector")
        if err:
            return report(False, f"on {label}: {err}")
        want = value_gradient(alpha, u)
        if _matches(x, want):
            continue
        hints = {
            "you used alpha @ u, which sums over keys for each query; value j collects from every query i "
            "that attends to it: dL/dv_j = sum_i alpha_ij u_i, i.e. alpha.T @ u.": alpha @ u,
            "the sign is flipped: that is the update direction -dL/dv_j, not the gradient.": -want,
            "every value got the same sum of errors; weight query i's error by its attention alpha_ij to "
            "value j (its responsibility for j).": u.sum(0, keepdim=True).expand(T, d),
        }
        return report(False, f"on {label}: {_diagnose(x, want, hints)}")
    return report(True, "your value gradient is the responsibility-weighted sum of upstream errors, "
                        "dL/dv_j = sum_i alpha_ij u_i, on every case.")


def _sticky_cases() -> list[tuple[str, Sticky, Tensor, Tensor]]:
    """(label, tunnel, x (L, d) float32, exact predictive (L, S)) for a few chains and noise levels."""
    cases = []
    for i, (S, d, L, noise) in enumerate(((8, 20, 12, 1.0), (8, 20, 10, 3.0), (3, 2, 9, 1.5), (4, 5, 1, 2.0))):
        tunnel = Sticky(S=S, d=d, L=L, noise=noise, means_seed=i)
        ep = tunnel.sample(1, torch.Generator().manual_seed(1110 + i))
        cases.append((f"a sticky chain with S = {S}, d = {d}, L = {L}, noise = {noise:g}", tunnel,
                      ep.inputs[0], ep.probs[0]))
    return cases


def check_sticky_predictive(fn: Callable[[Tensor, Tensor, Tensor, float], Any]) -> bool:
    """``fn(x, T, means, noise)`` -> (L, S): for one sequence of noisy inputs ``x`` (L, d), with the
    transition matrix ``T`` (S, S), the symbol means ``means`` (S, d) and the noise scale, the exact
    predictive p(y_{t+1} | x_0..x_t) of the next symbol at every t (y_0 uniform)."""
    for label, tunnel, x, want in _sticky_cases():
        L, S = want.shape
        p, err = _answer(fn, (x, tunnel.T, tunnel.means, tunnel.noise), (L, S),
                         f"a (L, S) = ({L}, {S}) tensor: one distribution over the next symbol per token")
        if err:
            return report(False, f"on {label}: {err}")
        if torch.allclose(p, want, atol=1e-6, rtol=0):
            continue
        batch = x.unsqueeze(0)
        filt = tunnel.filter(batch)[0]
        lik = tunnel.log_likelihoods(batch)[0].softmax(-1)  # the current token alone, uniform prior
        hints = [
            (filt, "you returned the filtering posterior of the *current* symbol; the target is the next one: "
                   "multiply by T once more (predictive = posterior @ T)."),
            (lik @ tunnel.T, "you used only the current token: the earlier tokens matter too, through the chain. "
                             "Carry the belief forward: before weighing by token t's likelihood, move it with T."),
            (lik, "you returned the likelihood of the current token, normalised; the belief must be carried "
                  "forward through T from earlier tokens, and the answer is about the next symbol."),
            (tunnel.T[lik.argmax(-1)], "you picked the most likely symbol and returned its row of T; with noisy "
                                       "inputs the symbol is uncertain: mix the rows by the filtering posterior."),
        ]
        for alt, hint in hints:
            if torch.allclose(p, alt, atol=1e-6, rtol=0) and not torch.allclose(alt, want, atol=1e-6, rtol=0):
                return report(False, f"on {label}: {hint}")
        if (p.sum(-1) - 1).abs().max() > 1e-6:
            return report(False, f"on {label}: your rows do not sum to 1; each is a distribution over the next symbol.")
        t = int((~torch.isclose(p, want, atol=1e-6, rtol=0).all(-1)).nonzero()[0])
        return report(False, f"on {label}, first wrong at t = {t}: expected {[round(v, 4) for v in want[t].tolist()]}, "
                             f"got {[round(v, 4) for v in p[t].tolist()]}. Log-likelihood of token t under symbol s: "
                             "-|x_t - mu_s|^2 / (2 noise^2) (the constant cancels).")
    return report(True, "your predictive matches the exact forward filter on every chain, including heavy noise "
                        "where the symbols are far from certain.")
