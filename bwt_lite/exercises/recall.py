"""Checkers for chapter 4 (binding: associative recall).

Each checker runs the student's function on seeded inputs, compares the result with the package's
own answer (the recall tunnel's exact posterior, or sums over its per-position recall probability
``Recall.expected_seen``), prints one line (a success line, or what is off and a hint) and returns a
bool. A wrong or unfinished answer never raises.

- :func:`check_recall_posterior`: ``fn(keys, values, V)``, the exact posterior at every key position.
- :func:`check_expected_recalls`: ``fn(V, L)``, the expected number of recall positions.
- :func:`check_expected_bayes_entropy`: ``fn(V, L)``, the expected mean Bayes entropy of an episode.
- :func:`check_mlp_recall`: ``fn(V, L)``, the accuracy on seen keys and entropy MAE of the best model
  that cannot look back.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from ..metrics import entropy_bits
from ..tunnels import make_tunnel
from . import call, pairs_text, report

_TOL = 1e-6  # float32 answers are accepted
# (V, L) cases for the closed forms: the chapter's, the bijection's sizes, tiny and lopsided ones.
_CASES = [(16, 32), (20, 19), (2, 5), (5, 1), (100, 10), (3, 40)]


def _expected_seen(V: int, L: int) -> torch.Tensor:
    """(L,) float64: probability that key position t is a recall (the tunnel's own formula)."""
    return make_tunnel("recall", V=V, L=L).expected_seen()


def _number(got: Any, what: str) -> tuple[float | None, str | None]:
    """The student's answer as a float, or a message saying why not."""
    if got is None:
        return None, f"your function returned None; return {what}."
    try:
        x = float(got)
    except Exception:
        return None, f"could not read your answer ({type(got).__name__}) as one number; return {what}."
    if math.isnan(x):
        return None, "your answer is NaN."
    return x, None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


# ------------------------------------------------------------------------------------------------
# Exercise 4.1: the exact posterior


def check_recall_posterior(fn: Callable[[list, list, int], Any]) -> bool:
    """``fn(keys, values, V)`` gets one episode's keys and values (lists of length L: ``values[t]``
    is the answer at key position ``t``, revealed only *after* that prediction) and must return an
    (L, V) array: at every key position the exact posterior over the key's value given the pairs
    before it."""
    cases = [(4, 6), (6, 12), (16, 32)]
    checked = recalls = 0
    for i, (V, L) in enumerate(cases):
        tunnel = make_tunnel("recall", V=V, L=L)
        ep = tunnel.sample(4, torch.Generator().manual_seed(40 + i))
        seen = tunnel.seen_mask(ep)
        for b in range(ep.batch_size):
            keys, values = ep.inputs[b, ep.positions].tolist(), ep.target[b].tolist()
            got, err = call(fn, list(keys), list(values), V)
            if err:
                return report(False, err)
            if got is None:
                return report(False, f"your function returned None; return an ({L}, {V}) array of probabilities.")
            try:
                q = torch.as_tensor(got).detach().to("cpu", torch.float64)
            except Exception:
                return report(False, f"could not read your answer ({type(got).__name__}) as numbers; "
                                      f"return an ({L}, {V}) array.")
            if tuple(q.shape) != (L, V):
                return report(False, f"for V = {V}, L = {L} return shape ({L}, {V}) (one row per key position), "
                                      f"got {tuple(q.shape)}.")
            if torch.isnan(q).any():
                return report(False, "your answer contains NaN.")
            want = ep.probs[b]
            for t in range(L):
                if torch.allclose(q[t], want[t], atol=_TOL, rtol=0):
                    continue
                return report(False, _diagnose(q[t], want[t], keys, values, t, V))
            checked += L
            recalls += int(seen[b].sum())
    return report(True, f"exact on all {checked} key positions of {sum(4 for _ in cases)} episodes; "
                         f"{recalls} of them were recalls (point masses), the rest uniform over V.")


def _diagnose(got: torch.Tensor, want: torch.Tensor, keys: list[int], values: list[int], t: int, V: int) -> str:
    """Say why a posterior row differs from the exact one at key position ``t``."""
    key = keys[t]
    where = f"at key position t = {t} ({pairs_text(keys[:t], values[:t], limit=8)}; asking for key {key})"
    if (got < -_TOL).any():
        return f"{where} you give a negative probability ({got.min().item():.4g})."
    total = got.sum().item()
    if abs(total - 1) > _TOL:
        return f"{where} your probabilities sum to {total:.4g}; a posterior sums to 1."
    if key in keys[:t]:
        s = t - 1 - keys[:t][::-1].index(key)
        v = values[s]
        return (f"{where} key {key} was revealed at pair {s} with value {v}: the map is a function, so its value "
                f"is known (recall) and the posterior is a point mass on {v}; you give {v} probability "
                f"{got[v].item():.4g}.")
    point = torch.nn.functional.one_hot(torch.tensor(values[t]), V).to(torch.float64)
    if torch.allclose(got, point, atol=_TOL):
        return (f"{where} key {key} is new, but you put all the mass on its answer {values[t]}: that value is "
                f"revealed only after this prediction (use values[:t] only). A new key's value is uniform over V.")
    revealed = set(values[:t])
    if revealed and len(revealed) < V:
        elim = torch.tensor([0.0 if v in revealed else 1.0 for v in range(V)], dtype=torch.float64)
        if torch.allclose(got, elim / elim.sum(), atol=_TOL):
            return (f"{where} key {key} is new and you ruled out the values already revealed: that is the "
                    f"bijection's elimination. Here the map is a random *function*: values may repeat, so "
                    f"seeing f(a) = v says nothing about f(b) for another key b; the posterior is uniform over all {V}.")
    return (f"{where} key {key} is new (not among the earlier keys), so its value is uniform over all {V} "
            f"values (entropy log2 {V} = {math.log2(V):.3f} bits); your row has entropy "
            f"{entropy_bits(got.clamp_min(0)).item():.3f} bits.")


# ------------------------------------------------------------------------------------------------
# Exercise 4.2: expected recalls and expected Bayes entropy (closed forms)


def _monte_carlo(V: int, L: int, episodes: int = 4096, seed: int = 4) -> tuple[float, float]:
    """Sampled (number of recall positions, mean Bayes entropy in bits) per episode."""
    tunnel = make_tunnel("recall", V=V, L=L)
    ep = tunnel.sample(episodes, torch.Generator().manual_seed(seed))
    return tunnel.seen_mask(ep).sum(1).double().mean().item(), entropy_bits(ep.probs).mean().item()


def check_expected_recalls(fn: Callable[[int, int], Any]) -> bool:
    """``fn(V, L)``: the expected number of recall positions (keys seen before) among the L key
    positions of a default recall episode."""
    for V, L in _CASES:
        got, err = call(fn, V, L)
        if err:
            return report(False, err)
        x, err = _number(got, "the expected number of recall positions (a float)")
        if err:
            return report(False, err)
        p = _expected_seen(V, L)
        want = p.sum().item()
        if _close(x, want):
            continue
        hint = f"for V = {V}, L = {L} the expected number of recalls is {want:.6f}, you give {x:.6f}."
        shifted = (1.0 - (1.0 - 1.0 / V) ** torch.arange(1, L + 1, dtype=torch.float64)).sum().item()
        distinct = V * (1.0 - (1.0 - 1.0 / V) ** L)
        if _close(x, shifted):
            hint += " Off by one: key position t (counting from 0) has t pairs before it, so position 0 is never a recall."
        elif _close(x, distinct):
            hint += " That is the expected number of *distinct* keys, i.e. of new-key positions; recalls are the rest."
        elif _close(x, want / L):
            hint += " That is the expected *fraction* of recall positions; multiply by L."
        return report(False, hint)
    V, L = _CASES[0]
    mc, _ = _monte_carlo(V, L)
    return report(True, f"V = {V}, L = {L}: {_expected_seen(V, L).sum().item():.3f} recalls expected; "
                         f"4,096 sampled episodes average {mc:.3f}.")


def check_expected_bayes_entropy(fn: Callable[[int, int], Any]) -> bool:
    """``fn(V, L)``: the expected mean Bayes entropy (bits) over the L key positions of a default
    recall episode (mean over positions, expectation over episodes)."""
    for V, L in _CASES:
        got, err = call(fn, V, L)
        if err:
            return report(False, err)
        x, err = _number(got, "the expected mean Bayes entropy in bits (a float)")
        if err:
            return report(False, err)
        p = _expected_seen(V, L)
        want = (math.log2(V) * (1.0 - p)).mean().item()
        if _close(x, want):
            continue
        hint = f"for V = {V}, L = {L} the expected mean Bayes entropy is {want:.6f} bits, you give {x:.6f}."
        if _close(x, want * math.log(2)):
            hint += " That is in nats; use log2 for bits."
        elif _close(x, want * L):
            hint += " That is the sum over positions; the question asks for the mean over the L positions."
        elif _close(x, (math.log2(V) * p).mean().item()):
            hint += " Swapped: recalls (seen keys) have 0 bits, and new keys log2 V."
        elif _close(x, math.log2(V)):
            hint += " Only new keys are uncertain; recalls have 0 bits."
        else:
            shifted = (1.0 - 1.0 / V) ** torch.arange(1, L + 1, dtype=torch.float64)
            if _close(x, (math.log2(V) * shifted).mean().item()):
                hint += " Off by one: position 0 is always a new key (log2 V bits)."
        return report(False, hint)
    V, L = _CASES[0]
    _, mc = _monte_carlo(V, L)
    want = (math.log2(V) * (1.0 - _expected_seen(V, L))).mean().item()
    return report(True, f"V = {V}, L = {L}: {want:.3f} bits expected; 4,096 sampled episodes average {mc:.3f}.")


# ------------------------------------------------------------------------------------------------
# Exercise 4.3: the best a model that cannot look back can do


def check_mlp_recall(fn: Callable[[int, int], Any]) -> bool:
    """``fn(V, L)`` returns ``(accuracy, entropy_mae)``: the expected top-1 accuracy on seen keys and
    the expected entropy MAE (bits, over all L key positions) of the best prediction that uses only
    the current key token and its position (what the MLP control can see)."""
    for V, L in _CASES:
        got, err = call(fn, V, L)
        if err:
            return report(False, err)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return report(False, f"return a pair (accuracy on seen keys, entropy MAE in bits), got {got!r}.")
        acc, err = _number(got[0], "the accuracy on seen keys as a float in [0, 1]")
        if err:
            return report(False, err)
        mae, err = _number(got[1], "the entropy MAE in bits as a float")
        if err:
            return report(False, err)
        p = _expected_seen(V, L)
        want_acc, want_mae = 1.0 / V, (math.log2(V) * p).mean().item()
        where = f"for V = {V}, L = {L}:"
        if not _close(acc, want_acc):
            if _close(acc, 100.0 / V):
                return report(False, f"{where} give the accuracy as a fraction, not a percentage.")
            return report(False, f"{where} the accuracy on seen keys should be {want_acc:.4f}, you give {acc:.4f}. "
                                  "The value of a key is uniform and independent of the key token, so without the "
                                  "earlier pairs every guess is right with the same probability.")
        if not _close(mae, want_mae):
            hint = f"{where} the entropy MAE should be {want_mae:.6f} bits, you give {mae:.6f}."
            if _close(mae, math.log2(V)):
                hint += (" On new keys the uniform prediction *is* the posterior (error 0); only recall "
                         "positions, where Bayes has 0 bits, cost log2 V.")
            elif _close(mae, (math.log2(V) * (1 - p)).mean().item()):
                hint += " That is the mean Bayes entropy; the error sits on the recall positions instead."
            elif _close(mae, want_mae * math.log(2)):
                hint += " That is in nats; use log2 for bits."
            return report(False, hint)
    V, L = _CASES[0]
    return report(True, f"V = {V}, L = {L}: chance accuracy {1 / V:.4f} on seen keys and an entropy MAE plateau "
                         f"of {(math.log2(V) * _expected_seen(V, L)).mean().item():.3f} bits.")
