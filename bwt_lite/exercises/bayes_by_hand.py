"""Checkers for chapter 1 (Bayes by hand on the bijection).

Each checker runs the student's function on seeded random episodes of the bijection tunnel,
compares the result with the package's exact posterior (float64), prints one line (a success line,
or where the answer is off and a hint) and returns a bool. A wrong or unfinished answer never raises.

- :func:`check_posterior`: ``fn(keys, values, key, V)``, the posterior without replacement.
- :func:`check_entropy_staircase`: ``fn(V, L)``, the Bayes entropy at each key position.
- :func:`check_mlp_plateau`: ``fn(V, L)``, the entropy MAE of the uniform-over-V prediction.
- :func:`check_replacement_posterior`: ``fn(keys, values, key, V)``, with replacement.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterator

import torch

from ..metrics import entropy_bits, entropy_mae
from ..tunnels import make_tunnel
from . import call as _call
from . import pairs_text
from . import report as _report

PosteriorFn = Callable[[list, list, int, int], Any]

_TOL = 1e-6  # float32 answers are accepted


def _as_vector(got: Any, n: int, what: str) -> tuple[torch.Tensor | None, str | None]:
    """The student's answer as a float64 vector of length ``n``, or a message saying why not."""
    if got is None:
        return None, f"your function returned None; return {what}."
    try:
        arr = torch.as_tensor(got)
        vec = arr.detach().to("cpu", torch.float64).flatten()
    except Exception:
        return None, f"could not read your answer ({type(got).__name__}) as numbers; return {what}."
    if arr.squeeze().dim() > 1:
        return None, f"your answer has shape {tuple(arr.shape)}; return {what}."
    if vec.numel() != n:
        return None, f"your answer has {vec.numel()} entries; return {what}."
    if torch.isnan(vec).any():
        return None, "your answer contains NaN (0 log 0 counts as 0; 0/0 is NaN)."
    return vec, None


def _episodes(variant: str, cases: list[tuple[int, int]], n: int, seed: int) -> Iterator[tuple[int, list, list, torch.Tensor]]:
    """(V, keys, values, exact posterior (L, V)) of ``n`` seeded episodes for each (V, L)."""
    for i, (V, L) in enumerate(cases):
        tunnel = make_tunnel("bijection", V=V, L=L, variant=variant)
        ep = tunnel.sample(n, torch.Generator().manual_seed(seed + i))
        keys = ep.inputs[:, ep.positions].tolist()
        values = ep.target.tolist()
        for b in range(n):
            yield V, keys[b], values[b], ep.probs[b]


def _diagnose(got: torch.Tensor, want: torch.Tensor, keys: list[int], values: list[int], key: int,
              t: int) -> str:
    """Say where a posterior over V values differs from the exact one (at step ``t``)."""
    where = f"at step t = {t} ({pairs_text(keys, values)}; asking for key {key})"
    if (got < -_TOL).any():
        v = int(got.argmin())
        return f"{where} you give value {v} a negative probability ({got[v].item():.4g})."
    total = got.sum().item()
    if abs(total - 1) > _TOL:
        return f"{where} your probabilities sum to {total:.4g}; a posterior sums to 1 (normalise it)."
    if key in keys:  # with replacement: a key seen before
        s = keys.index(key)
        v = values[s]
        return (f"{where} key {key} was already revealed at step {s} with value {v}: its value is known "
                f"(recall), so the posterior is a point mass on {v}; you give {v} probability {got[v].item():.4g}.")
    revealed = dict(zip(values, keys))
    for v, k in revealed.items():
        if got[v].item() > _TOL:
            return (f"{where} you give {got[v].item():.4g} to value {v}, which was already revealed "
                    f"(key {k}\u2192{v}): a bijection never maps two keys to the same value.")
    free = (want > 0).nonzero().flatten().tolist()
    for v in free:
        if got[v].item() <= _TOL:
            return (f"{where} value {v} has not been revealed yet, so it is still possible, "
                    f"but you give it {got[v].item():.4g}.")
    lo, hi = min(free, key=lambda v: got[v].item()), max(free, key=lambda v: got[v].item())
    n = len(free)
    return (f"{where} the {n} values not yet revealed are equally likely (1/{n} = {1 / n:.4g} each), "
            f"but you give value {lo} {got[lo].item():.4g} and value {hi} {got[hi].item():.4g}.")


def _check_posterior_fn(fn: PosteriorFn, variant: str, cases: list[tuple[int, int]], seed: int,
                        n: int = 4) -> bool:
    count = 0
    for V, keys, values, probs in _episodes(variant, cases, n, seed):
        for t in range(len(keys)):
            prev_k, prev_v, key = list(keys[:t]), list(values[:t]), keys[t]
            got, err = _call(fn, list(prev_k), list(prev_v), key, V)
            if err:
                return _report(False, f"at step t = {t} ({pairs_text(prev_k, prev_v)}; asking for key "
                                      f"{key}, V = {V}) {err}")
            vec, err = _as_vector(got, V, f"a vector of V = {V} probabilities, one per value")
            if err:
                return _report(False, f"at step t = {t} (V = {V}) {err}")
            want = probs[t]
            if not torch.allclose(vec, want, atol=_TOL, rtol=0):
                return _report(False, _diagnose(vec, want, prev_k, prev_v, key, t))
            count += 1
    sizes = ", ".join(str(V) for V, _ in cases)
    return _report(True, f"Your posterior matches the exact one at all {count} key positions of "
                         f"{n * len(cases)} random episodes (V = {sizes}).")


def check_posterior(fn: PosteriorFn) -> bool:
    """``fn(keys, values, key, V)`` -> V probabilities: the exact posterior over the value of ``key``
    given the revealed pairs ``keys[i] -> values[i]``, for the bijection without replacement."""
    return _check_posterior_fn(fn, "separate", [(20, 19), (6, 6), (3, 3)], seed=101)


def check_replacement_posterior(fn: PosteriorFn) -> bool:
    """``fn(keys, values, key, V)`` -> V probabilities for the bijection with replacement (a key may
    come back; ``keys`` may contain repeats)."""
    return _check_posterior_fn(fn, "replacement", [(6, 10), (4, 8), (20, 19)], seed=202)


def _bayes_entropies(V: int, L: int) -> torch.Tensor:
    """The package's Bayes entropy (bits) at the L key positions (the same in every episode)."""
    ep = make_tunnel("bijection", V=V, L=L).sample(1, torch.Generator().manual_seed(0))
    return entropy_bits(ep.probs[0])


def check_entropy_staircase(fn: Callable[[int, int], Any]) -> bool:
    """``fn(V, L)`` -> the L Bayes entropies (bits) at the key positions of the bijection."""
    cases = [(20, 19), (5, 5), (8, 3), (2, 1), (10, 10)]
    for V, L in cases:
        got, err = _call(fn, V, L)
        if err:
            return _report(False, f"for V = {V}, L = {L} {err} (at step t there are V - t values left, t = 0..L-1)")
        vec, err = _as_vector(got, L, f"one entropy per key position, L = {L} numbers")
        if err:
            return _report(False, f"for V = {V}, L = {L} {err}")
        want = _bayes_entropies(V, L)
        if torch.allclose(vec, want, atol=_TOL, rtol=0):
            continue
        t = torch.arange(L, dtype=torch.float64)
        if torch.allclose(vec, want * math.log(2), atol=_TOL, rtol=0):
            return _report(False, f"for V = {V}, L = {L} these are nats; entropies in this course are in bits (log2).")
        shifted = torch.log2((V - t - 1).clamp_min(1e-300))
        if L < V and torch.allclose(vec, shifted, atol=_TOL, rtol=0):
            return _report(False, f"for V = {V}, L = {L} your staircase is one step early: at the first key "
                                  f"(t = 0) nothing has been revealed, so all {V} values are possible.")
        if torch.allclose(vec, 1 / (V - t), atol=_TOL, rtol=0):
            return _report(False, f"for V = {V}, L = {L} you return the probability of each remaining value; "
                                  "the entropy of a uniform distribution over n values is log2(n) bits.")
        i = int((vec - want).abs().argmax())
        return _report(False, f"for V = {V}, L = {L} at step t = {i} the Bayes entropy is {want[i].item():.4f} "
                              f"bits, you give {vec[i].item():.4f}.")
    h = _bayes_entropies(20, 19)
    return _report(True, f"For V = 20 the staircase runs from {h[0].item():.3f} bits down to "
                         f"{h[-1].item():.3f} bits at the last key.")


def _plateau(V: int, L: int) -> float:
    """Entropy MAE (bits) of a prediction uniform over V, computed with the package's metric."""
    h_bayes = _bayes_entropies(V, L).unsqueeze(0)
    h_model = torch.full_like(h_bayes, math.log2(V))
    return entropy_mae(h_model, h_bayes)[0]


def check_mlp_plateau(fn: Callable[[int, int], float]) -> bool:
    """``fn(V, L)`` -> the entropy MAE (bits) of a model that predicts uniform over the V values at
    every key position (the best an MLP that cannot look back can do)."""
    cases = [(20, 19), (10, 10), (6, 2), (2, 1), (50, 30)]
    for V, L in cases:
        got, err = _call(fn, V, L)
        if err:
            return _report(False, f"for V = {V}, L = {L} {err}")
        try:
            val = float(got)
        except Exception:
            return _report(False, f"for V = {V}, L = {L} your function returned {type(got).__name__}; "
                                  "return one number (bits).")
        want = _plateau(V, L)
        if math.isclose(val, want, rel_tol=1e-6, abs_tol=1e-9):
            continue
        mean_bayes = _bayes_entropies(V, L).mean().item()
        hint = f"expected {want:.4f} bits, got {val:.4f}."
        if math.isclose(val, want * math.log(2), rel_tol=1e-6, abs_tol=1e-9):
            hint = "that is in nats; use log2 (bits)."
        elif L > 1 and math.isclose(val, want * L, rel_tol=1e-6, abs_tol=1e-9):
            hint = "that is the sum over the L key positions; the MAE is the mean."
        elif math.isclose(val, mean_bayes, rel_tol=1e-6, abs_tol=1e-9):
            hint = ("that is the mean Bayes entropy; the plateau is the mean gap between the model's "
                    "entropy (log2 V) and the Bayes entropy.")
        elif math.isclose(val, math.log2(V), rel_tol=1e-6, abs_tol=1e-9):
            hint = "that is the model's entropy, log2 V; subtract the Bayes entropy at each step, then average."
        elif L < V and math.isclose(val, sum(math.log2(V / (V - t)) for t in range(1, L + 1)) / L, rel_tol=1e-6):
            hint = "your steps are shifted by one: at the first key (t = 0) the uniform guess is exactly Bayes."
        return _report(False, f"for V = {V}, L = {L} {hint}")
    return _report(True, f"For V = 20, L = 19 a model that cannot look back stays {_plateau(20, 19):.3f} bits "
                         "from Bayes on average.")
