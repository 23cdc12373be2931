"""Exact baselines: predictors that are computed, not trained, and lack one inference primitive.

Before saying that a model *realises* a tunnel's primitive (:mod:`bwt_lite.reproduce`), it must beat
the strongest exact predictor that does without that primitive. Each baseline here reads only what a
model reads (the episode's ``inputs`` and prediction ``positions``; never the exact posterior or the
sampled answer) and returns its predictive distribution at the prediction positions in the form the
metrics take: class probabilities (B, P, C) float64 for categorical tunnels, ``(mean, var)`` (B, P)
float64 for Gaussian ones. :func:`evaluate_baseline` scores it with :func:`bwt_lite.evaluate.evaluate`,
the same code and the same held-out episodes as the models.

Each tunnel declares its baselines on its class (``baselines``: name -> function here; ``window_baseline``
and ``window_range``: its window ladder), so nothing here dispatches on the tunnel's type. Baselines by
tunnel (names as in :func:`baseline_names`; ``window-w`` etc. are the table's ``arch``):

- hmm: ``window-w`` for w = 0..``max_window``: the exact belief from the last w symbols only
  (:func:`window_filter`, built on :func:`bwt_lite.tunnels.hmm.recent_filter`); ``window-0`` is the
  state's marginal from T alone. A fixed window reads symbols locally and carries no belief forward.
- recall: ``prior`` (uniform over the V values everywhere) and ``reader-no-binding``
  (:func:`reader_no_binding`): knows which keys and values were revealed but not which key holds which.
- regression: ``prior`` (the prior predictive, ignores every pair) and ``one-pair``
  (:func:`one_pair_predictive`): the exact predictive from the most recent pair alone.
- bijection: ``prior`` (uniform over the V values) and ``right-entropy`` (:func:`right_entropy`):
  entropy exactly ``log2(V - t)`` at key t, but a shape that ignores which values were revealed.
- sticky (Paper II): ``window-w`` (:func:`sticky_window`); ``window-0`` is the chain's marginal,
  uniform over the symbols (the chain is circulant, so its stationary distribution is uniform).
- recurrence: ``prior`` and ``window-1`` .. ``window-4`` (:func:`recurrence_window`): the exact
  predictive of the last w values alone.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Callable

import torch
from torch import Tensor

from .arguments import check_int
from .evaluate import EvalResult, evaluate
from .tunnels import HMM, Bijection, Episodes, Recall, Recurrence, Regression, Sticky, Tunnel
from .tunnels.hmm import recent_filter
from .tunnels.recurrence import recurrence_posterior, shuffled_posterior
from .tunnels.regression import posterior_predictive

# A zero probability becomes this logit (nats) when a baseline is scored as logits: exp of it
# underflows to exactly 0 in float64, so the entropy has no 0 * log 0 = NaN term, and the
# renormalisation changes nothing measurable.
LOGIT_FLOOR = -1e4
DEFAULT_MAX_WINDOW = 4  # HMM window ladder 0..4 (the default HMM mixes within a few steps)
SLOW_MIXING_MAX_WINDOW = 16  # the ladder to use for HMM variants whose chains mix slowly

Prediction = Tensor | tuple[Tensor, Tensor]  # probs (B, P, C), or (mean, var) each (B, P)
BaselineFn = Callable[[Tunnel, Episodes], Prediction]


def _check(tunnel: Tunnel, cls: type, what: str) -> None:
    if not isinstance(tunnel, cls):
        raise ValueError(f"{what} needs a {cls.__name__} tunnel (make_tunnel({cls.name!r}, ...)), "
                         f"got {type(tunnel).__name__}")


# ------------------------------------------------------------------------------------------------
# Categorical baselines


def uniform_prior(tunnel: Tunnel, episodes: Episodes) -> Tensor:
    """Uniform over the ``n_classes`` answers at every prediction position: (B, P, C) float64."""
    B, P, C = episodes.inputs.shape[0], len(episodes.positions), tunnel.n_classes
    return torch.full((B, P, C), 1.0 / C, dtype=torch.float64, device=episodes.inputs.device)


def window_filter(tunnel: HMM, episodes: Episodes, window: int) -> Tensor:
    """HMM: the exact belief ``p(s_t | o_{t-w+1..t})`` from the last ``window`` symbols only (B, K, S).

    T, E and the symbols are decoded from the tokens (:meth:`HMM.decode`); the belief is
    :func:`bwt_lite.tunnels.hmm.recent_filter`: window 0 is the marginal ``p(s_t)`` from T alone, a
    window of K or more is the exact filter.
    """
    _check(tunnel, HMM, "window_filter")
    window = check_int("window", window, 0)
    T, E, obs = HMM.decode(episodes.inputs)
    return recent_filter(T, E, obs, window)


def reader_no_binding(tunnel: Recall, episodes: Episodes) -> Tensor:
    """Recall: the best reader that knows which keys and values were revealed but not which key holds which (B, P, V).

    At a key seen before, the key is equally likely to be any of the distinct keys revealed so far, so
    without the binding the best prediction is each value's share of those keys (two of three distinct
    keys holding value 1 give it 2/3); the right value always has a share. At a new key: uniform over
    all V values, which is exact there. Works on both layouts (every key token but the last is followed
    by its value token).
    """
    _check(tunnel, Recall, "reader_no_binding")
    V, x, pos = tunnel.V, episodes.inputs, episodes.positions.to(episodes.inputs.device)
    keys = x[:, pos]  # (B, P)
    values = x[:, pos[:-1] + 1] - V  # (B, P - 1): the value of each pair but the last (never needed)
    key_hot = torch.nn.functional.one_hot(keys, V)
    key_seen = ((key_hot.cumsum(1) - key_hot) * key_hot).sum(2) > 0  # (B, P)
    first = (~key_seen[:, :-1]).unsqueeze(2)  # (B, P - 1, 1): the pair's key appears for the first time
    value_hot = torch.nn.functional.one_hot(values, V).to(torch.float64) * first
    shares = torch.cat([torch.zeros_like(value_hot[:, :1]), value_hot.cumsum(1)], 1)  # (B, P, V): distinct keys per value
    on_seen = shares / shares.sum(2, keepdim=True).clamp_min(1)
    return torch.where(key_seen.unsqueeze(2), on_seen, torch.full_like(on_seen, 1.0 / V))


def _exponential_entropy_bits(beta: Tensor, n: int) -> Tensor:
    """Entropy in bits of ``q_r ∝ exp(-beta r)``, r = 0..n-1, for each beta (float64)."""
    lq = torch.log_softmax(-beta.unsqueeze(-1) * torch.arange(n, dtype=torch.float64), dim=-1)
    return -(lq.exp() * lq).sum(-1) / math.log(2.0)


def right_entropy_table(V: int, L: int) -> Tensor:
    """The right-entropy predictor's distribution at each key t = 0..L-1: (L, V) float64.

    Row t is ``q_r ∝ exp(-beta_t r)`` over the fixed ordering r = value index, with ``beta_t >= 0``
    solved by bisection (200 halvings of a bracket, float64) so that its entropy is ``log2(V - t)``
    bits; where that is 0 (t = V - 1) the row is a point mass on value 0.
    """
    V, L = check_int("V", V, 2), check_int("L", L, 1)
    if L > V:
        raise ValueError(f"L must be <= V (keys without replacement), got L={L}, V={V}")
    return _right_entropy_table(V, L).clone()  # a copy: the cached table stays untouched


@lru_cache(maxsize=32)
def _right_entropy_table(V: int, L: int) -> Tensor:
    target = torch.log2(V - torch.arange(L, dtype=torch.float64))
    lo, hi = torch.zeros(L, dtype=torch.float64), torch.ones(L, dtype=torch.float64)
    while True:  # grow the bracket until beta = hi is below each target entropy (it falls as beta grows)
        low_enough = (_exponential_entropy_bits(hi, V) <= target) | (target <= 0)
        if bool(low_enough.all()):
            break
        hi = torch.where(low_enough, hi, 2 * hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        high = _exponential_entropy_bits(mid, V) > target
        lo, hi = torch.where(high, mid, lo), torch.where(high, hi, mid)
    beta = torch.where(target > 0, 0.5 * (lo + hi), torch.full_like(lo, math.inf))
    beta = torch.where(target >= math.log2(V), torch.zeros_like(beta), beta)  # t = 0: exactly uniform
    logits = -beta.unsqueeze(1) * torch.arange(V, dtype=torch.float64)
    logits = torch.nan_to_num(logits, nan=0.0, neginf=-math.inf)  # inf * 0 on the point mass's first value
    return torch.softmax(logits, dim=1)


def right_entropy(tunnel: Bijection, episodes: Episodes) -> Tensor:
    """Bijection: entropy exactly ``log2(V - t)`` at key t (Bayes' entropy), but no elimination (B, L, V).

    Every value keeps some probability, in a shape fixed in advance (:func:`right_entropy_table`)
    whatever was revealed: its entropy MAE is 0 while its KL from Bayes stays large, which is why KL
    is reported beside entropy MAE. Only for layouts without repeated keys and one answer per key
    (variant ``separate``).
    """
    _check(tunnel, Bijection, "right_entropy")
    if tunnel.variant != "separate":
        raise ValueError(f"right_entropy needs the bijection's 'separate' variant (Bayes' entropy log2(V - t) "
                         f"at key t), got {tunnel.variant!r}")
    B, L = episodes.inputs.shape[0], len(episodes.positions)
    table = right_entropy_table(tunnel.V, L).to(episodes.inputs.device)
    return table.unsqueeze(0).expand(B, L, tunnel.V)


def sticky_window(tunnel: Sticky, episodes: Episodes, window: int) -> Tensor:
    """Sticky chain: the exact predictive of ``y_{t+1}`` from the last ``window`` inputs only (B, L, S).

    The symbol at the window's start has the chain's marginal, uniform (the chain is circulant, so
    doubly stochastic, and ``y_0`` is uniform). Window 0 is the marginal itself; a window of L or
    more is the exact predictive (:meth:`Sticky.predictive`).
    """
    _check(tunnel, Sticky, "sticky_window")
    window = check_int("window", window, 0)
    ll = tunnel.log_likelihoods(episodes.inputs)  # (B, L, S)
    B, L, S = ll.shape
    log_T = tunnel.T.to(ll.device).log()
    t = torch.arange(L, device=ll.device)
    log_b = torch.full((B, L, S), -math.log(S), dtype=torch.float64, device=ll.device)  # one belief per t
    for back in range(min(window, L) - 1, -1, -1):  # feed the inputs x_{t-back}, oldest first
        s = t - back
        moved = torch.logsumexp(log_b.unsqueeze(3) + log_T, dim=2)  # a uniform belief stays uniform
        upd = torch.log_softmax(moved + ll[:, s.clamp_min(0)], dim=2)
        log_b = torch.where((s >= 0).view(1, L, 1), upd, log_b)
    return log_b.exp() @ tunnel.T.to(ll.device)


# ------------------------------------------------------------------------------------------------
# Gaussian baselines (regression)


def _regression_parts(tunnel: Regression, inputs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The new ``x`` at each prediction and the pair revealed just before it (zeros at the first):
    x_new (B, N, d), x_prev (B, N, d), y_prev (B, N), float64, read from the tokens."""
    d, x = tunnel.d, inputs.to(torch.float64)
    if tunnel.variant == "pairs":
        return x[..., :d], x[..., d:2 * d], x[..., 2 * d]
    x_new = x[:, 0::2, :d]
    x_prev = torch.cat([torch.zeros_like(x_new[:, :1]), x_new[:, :-1]], 1)
    y_prev = torch.cat([torch.zeros_like(x[:, :1, d]), x[:, 1::2, d]], 1)
    return x_new, x_prev, y_prev


def regression_prior(tunnel: Regression, episodes: Episodes) -> tuple[Tensor, Tensor]:
    """The prior predictive, ignoring every pair: ``N(0, sigma^2 + tau^2 |x|^2)``; (mean, var) (B, N)."""
    _check(tunnel, Regression, "regression_prior")
    x_new, _, _ = _regression_parts(tunnel, episodes.inputs)
    var = tunnel.sigma ** 2 + tunnel.tau ** 2 * (x_new ** 2).sum(-1)
    return torch.zeros_like(var), var


def one_pair_predictive(tunnel: Regression, episodes: Episodes) -> tuple[Tensor, Tensor]:
    """The exact predictive from the most recent pair alone (the prior predictive at the first x).

    What a model that sees one token can do at best on the ``pairs`` layout (chapter 5's one-pair
    baseline). The missing pair at x_0 is zeros, which adds nothing to X^T X or X^T y.
    """
    _check(tunnel, Regression, "one_pair_predictive")
    x_new, x_prev, y_prev = _regression_parts(tunnel, episodes.inputs)
    return posterior_predictive(x_prev.unsqueeze(-2), y_prev.unsqueeze(-1), x_new, tunnel.tau, tunnel.sigma)


def recurrence_window(tunnel: Recurrence, episodes: Episodes, window: int) -> Tensor:
    """Recurrence: the exact predictive of each value from the last ``window`` values alone, as if the
    episode began there (B, P, C), in the answer tokens' order. Two values can only reveal a fixed point;
    three can name the program but not tell it from chance; the class posterior needs four or more.
    Shuffled layout: the exact predictive from the last ``window`` (time, value) pairs shown."""
    _check(tunnel, Recurrence, "recurrence_window")
    window = check_int("window", window, 0)
    if tunnel.variant == "shuffled":  # the last ``window`` pairs shown, with their times
        unused = episodes.inputs.new_zeros(episodes.inputs.shape[0], 1)  # the last value predicts nothing
        times, values = tunnel.time_ordered(episodes.inputs, unused)
        return shuffled_posterior(values, times, tunnel.p, window=window)[0]
    values = tunnel.decode(episodes.inputs)  # (B, L - 1): x_0 .. x_{L-2}
    B, p = values.shape[0], tunnel.p
    n = len(episodes.positions)
    out = torch.empty(B, n, p, dtype=torch.float64, device=values.device)
    for t in range(n):  # the answer at position t is x_t, from x_{t-w} .. x_{t-1}
        seen = values[:, max(t - window, 0):t]
        probs, _ = recurrence_posterior(torch.cat([seen, seen.new_zeros(B, 1)], dim=1), p)
        out[:, t] = probs[:, -1]
    if tunnel.variant == "opaque":  # into the answer tokens' order
        perm = episodes.inputs[:, :p]
        out = torch.zeros_like(out).scatter_(2, perm.unsqueeze(1).expand(-1, n, -1), out)
    return out


# ------------------------------------------------------------------------------------------------
# The baselines of each tunnel, and their scores


def baseline_names(tunnel: Tunnel, max_window: int = DEFAULT_MAX_WINDOW) -> list[str]:
    """The baselines of ``tunnel``, weakest first (``max_window``: the top of a window ladder), as the
    tunnel declares them (:attr:`bwt_lite.tunnels.Tunnel.baselines` and its window ladder)."""
    max_window = check_int("max_window", max_window, 0)
    names = list(tunnel.baseline_functions())
    if tunnel.window_baseline is not None:
        low, high = tunnel.window_range
        top = max_window if high is None else min(max_window, high)
        names += [f"window-{w}" for w in range(low, top + 1)]
    if not names:
        raise ValueError(f"no baselines for {type(tunnel).__name__}")
    return names


def baseline_fn(tunnel: Tunnel, name: str) -> BaselineFn:
    """The function ``(tunnel, episodes) -> prediction`` of the baseline ``name`` of ``tunnel``. A
    window ladder has no top here: ``window-12`` of an HMM is the belief from its last 12 symbols."""
    match = re.fullmatch(r"window-(\d+)", name)
    if tunnel.window_baseline is not None and match is not None:
        w, (low, high) = int(match.group(1)), tunnel.window_range
        if w >= low and (high is None or w <= high):
            window = globals()[tunnel.window_baseline]
            return lambda t, ep: window(t, ep, w)
    named = tunnel.baseline_functions()
    if name not in named:
        ladder = "" if tunnel.window_baseline is None else (
            f", or window-w for w >= {tunnel.window_range[0]}" + (
                f" up to {tunnel.window_range[1]}" if tunnel.window_range[1] is not None else ""))
        raise ValueError(f"unknown baseline {name!r} for {type(tunnel).__name__}; allowed: "
                         f"{', '.join(named) or '(none named)'}{ladder}")
    return globals()[named[name]]


def probs_to_logits(probs: Tensor) -> Tensor:
    """Log-probabilities (nats) as logits, zeros floored at :data:`LOGIT_FLOOR` (see there)."""
    return probs.to(torch.float64).log().clamp_min(LOGIT_FLOOR)


class BaselinePredictor(torch.nn.Module):
    """A baseline as a model: ``forward(inputs, positions)`` returns logits (categorical) or the
    Gaussian head's ``(mean, log-variance)`` (B, P, 2), so :func:`bwt_lite.evaluate.evaluate` scores it.

    It has no parameters; ``n_params`` is 0.
    """

    n_params = 0

    def __init__(self, tunnel: Tunnel, name: str):
        super().__init__()
        self.tunnel, self.name, self.fn = tunnel, name, baseline_fn(tunnel, name)

    def forward(self, inputs: Tensor, positions: Tensor) -> Tensor:
        # baselines read only inputs and positions: the answer fields stay empty
        ep = Episodes(inputs=inputs, positions=positions, target=inputs.new_zeros(0, dtype=torch.int64))
        out = self.fn(self.tunnel, ep)
        if isinstance(out, tuple):
            mean, var = out
            return torch.stack([mean, var.log()], dim=-1)
        return probs_to_logits(out)


def evaluate_baseline(tunnel: Tunnel, name: str, episodes: int = 2048, seed: int = 0, batch_size: int = 512,
                      device: str | torch.device = "cpu") -> EvalResult:
    """Score baseline ``name`` on the held-out episodes :func:`bwt_lite.evaluate.evaluate` gives a model
    for the same ``seed``, ``batch_size`` and ``device``, with the same metrics."""
    return evaluate(BaselinePredictor(tunnel, name), tunnel, episodes=episodes, seed=seed,
                    batch_size=batch_size, device=device)


def evaluate_baselines(tunnel: Tunnel, episodes: int = 2048, seed: int = 0, batch_size: int = 512,
                       device: str | torch.device = "cpu", max_window: int = DEFAULT_MAX_WINDOW
                       ) -> dict[str, EvalResult]:
    """Every baseline of ``tunnel`` (:func:`baseline_names`) scored by :func:`evaluate_baseline`."""
    return {name: evaluate_baseline(tunnel, name, episodes, seed, batch_size, device)
            for name in baseline_names(tunnel, max_window)}


DESCRIPTIONS: dict[str, str] = {
    "prior": "ignores the context",
    "reader-no-binding": "knows the revealed keys and values, not which key holds which",
    "one-pair": "exact predictive from the last pair alone",
    "right-entropy": "Bayes' entropy, no elimination",
}


def describe(name: str) -> str:
    """One line on what the baseline ``name`` lacks, for tables."""
    if name.startswith("window-"):
        w = int(name.removeprefix("window-"))
        if w <= 1:
            return "the marginal from T alone" if w == 0 else "exact belief from the current symbol alone"
        return f"exact belief from the last {w} symbols only"
    return DESCRIPTIONS.get(name, "")
