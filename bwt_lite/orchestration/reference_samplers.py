"""Reference episode generators that ``bwt bench`` times the tunnels' samplers against.

- :func:`hmm_per_instance`: HMM episodes made one at a time, the way the authors' research code makes
  them (per episode: each row of T and E drawn from a Dirichlet, floored at 0.05 and renormalised,
  rounded to hundredths with a loop that moves single hundredths until the row sums to 100, states
  and symbols drawn with ``Generator.choice`` one step at a time, and the exact posterior by a
  log-space forward pass, one max-shifted log-sum-exp per state and step). Written here from that description; it draws from
  NumPy's random stream, so its episodes are not the tunnel's.
- :func:`bijection_plain`: bijection episodes from a plain vectorised sampler, tokens and targets
  only, no posterior: two ``rand`` + ``argsort`` per batch, what any vectorised sampler of this task
  spends at the least.

The ratios ``tunnel episodes/s : reference episodes/s`` at one thread are what ``bwt bench`` reports.
"""
from __future__ import annotations

import numpy as np
import torch

MIN_HUNDREDTHS = 5  # the HMM tunnel's floor of 0.05 per entry


def _stochastic_row(n: int, rng: np.random.Generator) -> np.ndarray:
    raw = np.maximum(rng.dirichlet(np.ones(n)), MIN_HUNDREDTHS / 100)
    return raw / raw.sum()


def _hundredths(row: np.ndarray) -> np.ndarray:
    """A row rounded to hundredths (each >= 0.05) summing to exactly 1, one hundredth moved at a time."""
    cents = np.maximum(np.rint(np.round(row, 2) * 100.0).astype(int), MIN_HUNDREDTHS)
    diff = 100 - int(cents.sum())
    order = np.argsort(cents) if diff > 0 else np.argsort(-cents)
    i = 0
    while diff:
        j = order[i % len(cents)]
        if diff > 0 and cents[j] < 100:
            cents[j] += 1
            diff -= 1
        elif diff < 0 and cents[j] > MIN_HUNDREDTHS:
            cents[j] -= 1
            diff += 1
        i += 1
    return cents / 100.0


def _logsumexp(x: np.ndarray) -> float:
    m = np.max(x)  # shifted by the maximum, so that exp never overflows
    return float(m + np.log(np.sum(np.exp(x - m))))


def _log_forward(T: np.ndarray, E: np.ndarray, obs: list[int]) -> np.ndarray:
    """p(s_t | o_0..o_t) for every t (K, S), uniform start, in log space, one log-sum-exp per state and step."""
    S = T.shape[0]
    log_T, log_E = np.log(T), np.log(E)
    alpha = np.empty((len(obs), S))
    a = np.log(np.full(S, 1.0 / S)) + log_E[:, obs[0]]
    alpha[0] = a - _logsumexp(a)
    for t in range(1, len(obs)):
        for j in range(S):
            alpha[t, j] = _logsumexp(alpha[t - 1] + log_T[:, j]) + log_E[j, obs[t]]
        alpha[t] -= _logsumexp(alpha[t])
    return np.exp(alpha)


def hmm_per_instance(n: int, S: int = 5, O: int = 5, K: int = 20, seed: int = 0) -> list[tuple]:
    """``n`` HMM episodes made one at a time: (T, E, symbols, posteriors) each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        T = np.stack([_hundredths(_stochastic_row(S, rng)) for _ in range(S)])
        E = np.stack([_hundredths(_stochastic_row(O, rng)) for _ in range(S)])
        state = int(rng.choice(S))
        obs = [int(rng.choice(O, p=E[state]))]
        for _ in range(1, K):
            state = int(rng.choice(S, p=T[state]))
            obs.append(int(rng.choice(O, p=E[state])))
        out.append((T, E, obs, _log_forward(T, E, obs)))
    return out


def bijection_plain(batch: int, generator: torch.Generator, V: int = 20, L: int = 19) -> tuple[torch.Tensor, ...]:
    """A batch of bijection episodes (keys without replacement), tokens and targets only: (inputs, targets)."""
    dev = generator.device
    pi = torch.rand(batch, V, generator=generator, device=dev).argsort(dim=1)
    keys = torch.rand(batch, V, generator=generator, device=dev).argsort(dim=1)[:, :L]
    values = pi.gather(1, keys)
    inputs = torch.empty(batch, 2 * L - 1, dtype=torch.int64, device=dev)
    inputs[:, 0::2] = keys
    inputs[:, 1::2] = values[:, :-1] + V
    return inputs, values


__all__ = ["bijection_plain", "hmm_per_instance"]
