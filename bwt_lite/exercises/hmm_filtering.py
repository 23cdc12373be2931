"""Checkers for chapter 3 (belief transport: filtering a hidden Markov model).

Each checker runs the student's function on seeded random HMMs (from the tunnel, plus hand-made
ones with zero-probability transitions and emissions), compares the result with the package's own
answer (:func:`bwt_lite.tunnels.hmm.forward_filter`, :meth:`HMM.decode`), prints one line (a
success line, or what is off and a hint) and returns a bool. A wrong or unfinished answer never
raises.

- :func:`check_forward_step`: ``fn(belief, T, E, o)``, one predict-update step of the forward algorithm.
- :func:`check_filter`: ``fn(T, E, obs)``, the filtering posterior at every time of one episode.
- :func:`check_decode`: ``fn(tokens, S, O)``, read (T, E, obs) back from an episode's tokens.
- :func:`check_context_free_prediction`: ``fn(S, O, t, symbol)``, the best prediction of a model that
  sees only the current symbol and its position (the MLP control).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import torch

from ..tunnels.hmm import HMM, forward_filter
from . import answer_tensor
from . import call as _call
from . import report as _report

_TOL = 1e-6  # float32 answers are accepted

# A hand-made HMM with zero-probability transitions and emissions: state 0 never stays put and
# never goes to 2, only state 0 can emit symbol 0, and state 2 never emits symbol 1. Observation
# sequences below have positive probability, but many state paths have probability 0.
_ZERO_T = [[0.0, 1.0, 0.0], [0.0, 0.5, 0.5], [0.6, 0.0, 0.4]]
_ZERO_E = [[0.9, 0.1, 0.0, 0.0], [0.0, 0.5, 0.25, 0.25], [0.0, 0.0, 0.5, 0.5]]
_ZERO_OBS = [0, 1, 2, 3, 0, 1, 1, 3, 2, 0, 1, 2]


def _zero_hmm() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (torch.tensor(_ZERO_T, dtype=torch.float64), torch.tensor(_ZERO_E, dtype=torch.float64),
            torch.tensor(_ZERO_OBS, dtype=torch.int64))


def _episodes(cases: list[tuple[int, int, int, int]], seed: int) -> Iterator[tuple[str, torch.Tensor, torch.Tensor,
                                                                                   torch.Tensor, torch.Tensor]]:
    """(label, T, E, obs, exact posterior (K, S)) for ``n`` tunnel episodes of each (S, O, K, n),
    then the hand-made HMM with zero-probability paths."""
    for i, (S, O, K, n) in enumerate(cases):
        ep = HMM(S=S, O=O, K=K).sample(n, torch.Generator().manual_seed(seed + i))
        T, E, obs = HMM.decode(ep.inputs)
        for b in range(n):
            yield f"a random HMM with S = {S}, O = {O}, K = {K}", T[b], E[b], obs[b], ep.probs[b]
    T, E, obs = _zero_hmm()
    yield "the HMM with zero-probability transitions and emissions", T, E, obs, forward_filter(T, E, obs)


def _normalise(x: torch.Tensor) -> torch.Tensor:
    return x / x.sum(-1, keepdim=True)


def _step_variants(belief: torch.Tensor, T: torch.Tensor, E: torch.Tensor, o: int) -> dict[str, torch.Tensor]:
    """Typical wrong versions of one forward step, each with the hint that explains it."""
    like = E[:, o]
    out = {
        "you did not normalise: divide by the sum, which is p(o_t | o_0..o_{t-1}).": (belief @ T) * like,
        "you multiplied by T the wrong way round. T[i, j] = p(s_t = j | s_{t-1} = i): the prediction "
        "sums over the previous state i, i.e. belief @ T (not T @ belief).": _normalise((T @ belief) * like),
        "you skipped the transition: before weighing by the emission, move the belief one step with "
        "belief @ T (the hidden state changes between observations).": _normalise(belief * like),
        "you forgot the observation: after the transition, multiply by the likelihood E[:, o] of the "
        "new symbol under each state and normalise.": belief @ T,
        "you weighed by the emission before the transition: o_t is emitted by s_t, so first predict "
        "s_t (belief @ T), then weigh by E[:, o_t].": _normalise((belief * like) @ T),
    }
    if E.shape[0] == E.shape[1]:
        out["you used the row E[o] instead of the column E[:, o]: E[i, o] = p(o | s = i), so the "
            "likelihood of symbol o under each state is the column E[:, o]."] = _normalise((belief @ T) * E[o])
    return out


def _fmt(x: torch.Tensor) -> str:
    return "[" + ", ".join(f"{v:.4f}" for v in x.tolist()) + "]"


def _diagnose_step(got: torch.Tensor, belief: torch.Tensor, T: torch.Tensor, E: torch.Tensor, o: int,
                   want: torch.Tensor) -> str:
    if torch.isnan(got).any():
        return "your answer contains NaN (a 0/0 somewhere?)."
    if (got < -_TOL).any():
        return f"your answer has a negative probability: {_fmt(got)}."
    for hint, alt in _step_variants(belief, T, E, o).items():
        if torch.allclose(got, alt, atol=_TOL, rtol=0) and not torch.allclose(alt, want, atol=_TOL, rtol=0):
            return hint
    if abs(got.sum().item() - 1) > _TOL:
        return f"your probabilities sum to {got.sum().item():.4g}; a posterior sums to 1 (normalise it)."
    return f"expected {_fmt(want)}, got {_fmt(got)}."


def check_forward_step(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], Any]) -> bool:
    """``fn(belief, T, E, o)`` -> S probabilities: given the filtering posterior ``belief`` =
    p(s_{t-1} | o_0..o_{t-1}) (float64, shape (S,)), the transition matrix ``T`` (S, S), the emission
    matrix ``E`` (S, O) and the new symbol ``o`` (an int), return p(s_t | o_0..o_t)."""
    count = 0
    for label, T, E, obs, probs in _episodes([(5, 5, 10, 3), (3, 4, 8, 2), (4, 2, 6, 1)], seed=303):
        S = T.shape[0]
        for t in range(1, obs.numel()):
            belief, o, want = probs[t - 1].clone(), int(obs[t]), probs[t]
            got, err = _call(fn, belief.clone(), T.clone(), E.clone(), o)
            where = f"on {label}, at t = {t} (belief {_fmt(belief)}, new symbol o = {o})"
            if err:
                return _report(False, f"{where} {err}")
            vec, err = answer_tensor(got, (S,), f"S = {S} probabilities, one per state", allow_singletons=True)
            if err:
                return _report(False, f"{where} {err}")
            if not torch.allclose(vec, want, atol=_TOL, rtol=0):
                return _report(False, f"{where}: {_diagnose_step(vec, belief, T, E, o, want)}")
            count += 1
    return _report(True, f"your forward step matches the exact filter at all {count} steps, including an HMM "
                         "whose zero-probability transitions and emissions rule states out.")


def _long_case() -> tuple[str, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    K = 600
    ep = HMM(K=K).sample(1, torch.Generator().manual_seed(404))
    T, E, obs = HMM.decode(ep.inputs[0])
    return f"a long episode (S = 5, O = 5, K = {K})", T, E, obs, ep.probs[0]


def check_filter(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Any]) -> bool:
    """``fn(T, E, obs)`` -> (K, S): the filtering posterior p(s_t | o_0..o_t) at every time t of one
    episode, with s_0 uniform over the S states. ``T`` (S, S) and ``E`` (S, O) are float64, ``obs``
    (K,) int64 symbols."""
    cases = list(_episodes([(5, 5, 20, 3), (3, 4, 10, 2), (2, 3, 1, 1)], seed=505)) + [_long_case()]
    for label, T, E, obs, want in cases:
        K, S = want.shape
        got, err = _call(fn, T.clone(), E.clone(), obs.clone())
        if err:
            return _report(False, f"on {label}: {err}")
        x, err = answer_tensor(got, (K, S), f"one row of S = {S} probabilities per observation, K = {K} rows",
                               allow_singletons=True)
        if err:
            hint = ""
            if got is not None and hasattr(got, "shape") and len(got.shape) == 2 and got.shape[0] == K + 1:
                hint = " One row too many: the first posterior is the one after o_0, not the prior before it."
            return _report(False, f"on {label}: {err}{hint}")
        if torch.allclose(x, want, atol=_TOL, rtol=0):
            continue
        bad = ~torch.isclose(x, want, atol=_TOL, rtol=0).all(-1)
        t = int(bad.nonzero()[0])
        broken = torch.isnan(x).any(-1) | (x.abs().sum(-1) == 0)  # rows lost to underflow (0/0)
        if broken.any():
            t = int(broken.nonzero()[0])
            return _report(False, f"on {label}: your posterior at t = {t} is {_fmt(x[t])}. The unnormalised forward "
                                  "probabilities p(s_t, o_0..o_t) shrink geometrically and underflow on long "
                                  "sequences: normalise at every step (or work in log space).")
        prior_step = _normalise(torch.full((S,), 1.0 / S, dtype=torch.float64) @ T * E[:, int(obs[0])])
        if t == 0 and torch.allclose(x[0], prior_step, atol=_TOL, rtol=0):
            return _report(False, f"on {label}: at t = 0 you applied a transition before the first observation. "
                                  "s_0 itself is uniform: p(s_0 | o_0) is proportional to E[:, o_0].")
        if t == 0 and torch.allclose(x[0], torch.full((S,), 1.0 / S, dtype=torch.float64), atol=_TOL, rtol=0):
            return _report(False, f"on {label}: at t = 0 you returned the uniform prior; the filtering posterior "
                                  "already includes o_0: p(s_0 | o_0) is proportional to E[:, o_0].")
        if t >= 1 and torch.allclose(x[t], _normalise(want[t - 1] @ T), atol=_TOL, rtol=0):
            return _report(False, f"on {label}: at t = {t} you returned the prediction p(s_t | o_0..o_(t-1)); "
                                  "the filtering posterior also conditions on o_t (multiply by E[:, o_t] and normalise).")
        if t >= 1:
            hint = _diagnose_step(x[t], want[t - 1], T, E, int(obs[t]), want[t])
            return _report(False, f"on {label}, at t = {t} (your earlier rows are right): {hint}")
        return _report(False, f"on {label}, at t = 0: expected {_fmt(want[0])}, got {_fmt(x[0])}.")
    return _report(True, f"your filter matches forward_filter on {len(cases)} episodes: random HMMs, one with "
                         "zero-probability paths, and a 600-step episode.")


def check_decode(fn: Callable[[torch.Tensor, int, int], Any]) -> bool:
    """``fn(tokens, S, O)`` -> ``(T, E, obs)``: from the 1-D token ids of one episode, the transition
    matrix T (S, S) and emission matrix E (S, O) as probabilities, and the K observed symbols (K,)."""
    cases = [(5, 5, 20), (3, 4, 7), (2, 6, 1), (4, 2, 12)]
    for i, (S, O, K) in enumerate(cases):
        ep = HMM(S=S, O=O, K=K).sample(2, torch.Generator().manual_seed(606 + i))
        for b in range(2):
            tokens = ep.inputs[b]
            T, E, obs = HMM.decode(tokens)
            label = f"for S = {S}, O = {O}, K = {K} ({tokens.numel()} tokens)"
            got, err = _call(fn, tokens.clone(), S, O)
            if err:
                return _report(False, f"{label} {err}")
            if not isinstance(got, (tuple, list)) or len(got) != 3:
                return _report(False, f"{label} return a tuple (T, E, obs), got {type(got).__name__}.")
            for name, value, want, is_matrix in (("T", got[0], T, True), ("E", got[1], E, True),
                                                 ("obs", got[2], obs.to(torch.float64), False)):
                x, err = answer_tensor(value, tuple(want.shape), f"{name} of shape {tuple(want.shape)}",
                                       allow_singletons=True)
                if err and name == "obs" and value is not None and hasattr(value, "__len__") and len(value) == 2 * K:
                    return _report(False, f"{label} obs has 2K = {2 * K} entries: the OBS marker ({HMM.OBS}) "
                                          "comes before every symbol; keep every other token after SEP.")
                if err:
                    return _report(False, f"{label} {err}")
                if torch.allclose(x, want, atol=_TOL, rtol=0):
                    continue
                if is_matrix:
                    ids = want * 100 - 5
                    if torch.allclose(x, ids / 100, atol=_TOL, rtol=0):
                        hint = "token id = hundredths - 5: add 5 before dividing by 100."
                    elif torch.allclose(x, want * 100, atol=1e-4, rtol=0):
                        hint = "these are hundredths; divide by 100 for probabilities."
                    elif torch.allclose(x, ids, atol=1e-4, rtol=0):
                        hint = "these are the raw token ids; probability = (id + 5) / 100."
                    elif x.shape[0] == x.shape[1] and torch.allclose(x, want.T, atol=_TOL, rtol=0):
                        hint = "the matrix is transposed: the tokens list it row by row (row-major)."
                    else:
                        hint = (f"expected first rows {', '.join(_fmt(r) for r in want[:2])}, got {', '.join(_fmt(r) for r in x[:2])} "
                                f"(count the markers: TRANS at 0, EMIT at {1 + S * S}, SEP at {2 + S * S + S * O}).")
                else:
                    if torch.allclose(x, want + HMM.SYMBOL0, atol=_TOL, rtol=0):
                        hint = f"these are the symbol tokens; subtract {HMM.SYMBOL0} (the first symbol's id)."
                    else:
                        hint = f"expected {[int(v) for v in want.tolist()]}, got {[round(v, 3) for v in x.tolist()]}."
                return _report(False, f"{label} {name} is wrong: {hint}")
    return _report(True, "you read T, E and the observations back from the tokens for all the layouts tried "
                         f"(header length 3 + S*S + S*O, e.g. {HMM(5, 5).header_len} for S = O = 5).")


def _empirical_given_symbol(S: int, O: int, t: int, symbol: int, n: int = 4096,
                            seed: int = 707) -> tuple[torch.Tensor, int]:
    """Average exact posterior p(s_t | context) over tunnel episodes whose symbol at t is ``symbol``."""
    ep = HMM(S=S, O=O, K=t + 1).sample(n, torch.Generator().manual_seed(seed))
    _, _, obs = HMM.decode(ep.inputs)
    keep = obs[:, t] == symbol
    return ep.probs[keep, t].mean(0), int(keep.sum())


def check_context_free_prediction(fn: Callable[[int, int, int, int], Any]) -> bool:
    """``fn(S, O, t, symbol)`` -> S probabilities: the prediction over the hidden state that minimises
    the expected cross-entropy to the exact posterior for a model that sees only the symbol at time
    ``t`` and the position (not T, E, nor the earlier symbols), averaged over the tunnel's HMMs."""
    cases = [(5, 5, 0, 2), (5, 5, 7, 0), (3, 4, 2, 3), (4, 2, 19, 1)]
    for S, O, t, symbol in cases:
        label = f"for S = {S}, O = {O}, t = {t}, symbol {symbol}"
        got, err = _call(fn, S, O, t, symbol)
        if err:
            return _report(False, f"{label} {err}")
        x, err = answer_tensor(got, (S,), f"S = {S} probabilities, one per state", allow_singletons=True)
        if err:
            return _report(False, f"{label} {err}")
        want = torch.full((S,), 1.0 / S, dtype=torch.float64)
        if torch.allclose(x, want, atol=_TOL, rtol=0):
            continue
        emp, n = _empirical_given_symbol(S, O, t, symbol)
        if abs(x.sum().item() - 1) > _TOL or (x < -_TOL).any():
            return _report(False, f"{label} your answer is not a probability vector: {_fmt(x)}.")
        if symbol < S and torch.allclose(x, torch.eye(S, dtype=torch.float64)[symbol], atol=_TOL, rtol=0):
            hint = (f"symbol {symbol} is not state {symbol}: which state emits which symbol is set by E, "
                    "drawn fresh in every episode.")
        else:
            hint = "what could make one state more likely than another before you know T and E?"
        return _report(False, f"{label} you give {_fmt(x)}; {hint} The exact posterior averaged over {n} "
                              f"random episodes with that symbol at t is {_fmt(emp)}. Relabel the states of any "
                              "HMM and you get another HMM that is exactly as likely.")
    emp, n = _empirical_given_symbol(5, 5, 7, 0)
    return _report(True, f"uniform over the states: relabelling the states of an HMM gives another, equally likely "
                         f"HMM, so without T and E a state's name says nothing. (Average exact posterior over {n} "
                         f"episodes with symbol 0 at t = 7: {_fmt(emp)}.)")
