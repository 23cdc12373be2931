"""The fast code paths of the tunnels give the same answers as the plain computations they replace."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bwt_lite.tunnels import HMM, Bijection, Recall
from bwt_lite.tunnels import recall as recall_module
from bwt_lite.tunnels.hmm import forward_filter, round_to_hundredths
from bwt_lite.tunnels.hmm_filter import _forward_log
from conftest import gen


def rounding_by_sorting(p: torch.Tensor) -> torch.Tensor:
    """Largest-remainder rounding to hundredths with the floor of 5, ranks by two stable sorts."""
    n = p.shape[-1]
    rest = 100 - 5 * n
    excess = (100.0 * p - 5).clamp_min(0.0)
    total = excess.sum(-1, keepdim=True)
    share = torch.where(total > 0, rest * excess / total.clamp_min(1e-300), torch.full_like(excess, rest / n))
    base = share.floor()
    missing = rest - base.to(torch.int64).sum(-1, keepdim=True)
    rank = (share - base).argsort(dim=-1, descending=True, stable=True).argsort(dim=-1, stable=True)
    return 5 + base.to(torch.int64) + (rank < missing).to(torch.int64)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 20), seed=st.integers(0, 2**31), levels=st.sampled_from([3, 7, 40, 0]))
def test_rounding_matches_sorting_with_ties(n, seed, levels):
    g = gen(seed)
    x = torch.rand(64, n, generator=g, dtype=torch.float64)
    if levels:  # few distinct values: many ties between fractional parts
        x = (x * levels).floor() + 1
    p = x / x.sum(-1, keepdim=True)
    assert torch.equal(round_to_hundredths(p), rounding_by_sorting(p))
    assert torch.equal(round_to_hundredths(p.view(4, 16, n)), rounding_by_sorting(p).view(4, 16, n))


def test_rounding_of_equal_entries_goes_to_the_lower_index():
    p = torch.full((1, 7), 1 / 7, dtype=torch.float64)  # 65 hundredths above the floors: 9 each, 2 left
    assert round_to_hundredths(p).tolist() == [[15, 15, 14, 14, 14, 14, 14]]


def sample_states_by_loop(T_h, E_h, r_state, r_obs, s0):
    """The inverse-CDF sampling of states and symbols, one time step after another."""
    B, K = r_state.shape
    T_cum, E_cum = T_h.cumsum(-1), E_h.cumsum(-1)
    states = torch.empty(B, K, dtype=torch.int64)
    states[:, 0] = s0
    rows = torch.arange(B)
    for t in range(1, K):
        states[:, t] = (T_cum[rows, states[:, t - 1]] <= r_state[:, t:t + 1]).sum(1)
    e_cum = E_cum.gather(1, states.unsqueeze(2).expand(B, K, E_h.shape[-1]))
    return states, (e_cum <= r_obs.unsqueeze(2)).sum(2)


@pytest.mark.parametrize("S, O, K", [(5, 5, 20), (2, 7, 9), (20, 20, 3), (4, 3, 1), (3, 3, 70)])
def test_sampled_states_and_posteriors(S, O, K):
    tunnel, B = HMM(S=S, O=O, K=K), 33
    ep = tunnel.sample(B, gen(K))
    # replay the same draws
    g = gen(K)
    T_h, E_h = tunnel.sample_params(B, g)
    r_state = torch.randint(0, 100, (B, K), generator=g)
    r_obs = torch.randint(0, 100, (B, K), generator=g)
    s0 = torch.randint(0, S, (B,), generator=g)
    states, obs = sample_states_by_loop(T_h, E_h, r_state, r_obs, s0)
    assert torch.equal(ep.target, states)
    T, E, obs_tokens = HMM.decode(ep.inputs)
    assert torch.equal(obs_tokens, obs) and torch.equal((T * 100).round().long(), T_h)
    # the posterior is forward_filter's, bit for bit, and the log-space filter's up to rounding
    assert torch.equal(ep.probs, forward_filter(T, E, obs))
    log_space = _forward_log(T, E, obs, None, torch.arange(B))
    assert torch.allclose(ep.probs, log_space, atol=1e-13, rtol=0)


def test_forward_filter_long_episodes_and_mixed_batches():
    g, B, S, O, K = gen(5), 6, 3, 4, 400
    T = torch.rand(B, S, S, generator=g, dtype=torch.float64)
    T = T / T.sum(-1, keepdim=True)
    E = torch.full((B, S, O), 1e-3, dtype=torch.float64)  # the smallest emission for the fast path
    E[:, :, 0] = 1 - 1e-3 * (O - 1)
    E[3:, 0, 1], E[3:, 0, 0] = 0.0, E[3:, 0, 0] + 1e-3  # episodes 3..5: a zero, so log space
    obs = torch.randint(1, O, (B, K), generator=g)  # mostly improbable symbols: beliefs shrink fast
    post = forward_filter(T, E, obs)
    assert torch.isfinite(post).all() and torch.allclose(post.sum(-1), torch.ones(B, K, dtype=torch.float64))
    assert torch.allclose(post, _forward_log(T, E, obs, None, torch.arange(B)), atol=1e-12, rtol=0)
    for b in range(B):  # an episode's answer does not depend on the rest of the batch
        assert torch.equal(forward_filter(T[b], E[b], obs[b]), post[b])
    init = torch.tensor([0.2, 0.0, 0.8], dtype=torch.float64)
    assert torch.allclose(forward_filter(T, E, obs, init), _forward_log(T, E, obs, init.expand(B, S), torch.arange(B)),
                          atol=1e-12, rtol=0)
    assert forward_filter(T, E, obs[:, :0]).shape == (B, 0, S)


@pytest.mark.parametrize("V, L", [(20, 19), (7, 7), (2, 1), (9, 3)])
def test_bijection_posterior_paths_agree(V, L):
    t = Bijection(V=V, L=L)
    g = gen(V + L)
    keys = torch.rand(40, V, generator=g).argsort(1)[:, :L]
    values = torch.rand(40, V, generator=g).argsort(1).gather(1, keys)
    assert torch.equal(t._posterior_distinct(values), t.posterior(keys, values))
    h = -(t.posterior(keys, values).clamp_min(1e-300).log2() * t.posterior(keys, values)).sum(-1)
    assert torch.allclose(h, torch.tensor([math.log2(V - i) for i in range(L)], dtype=torch.float64).expand(40, L))


def test_recall_large_vocabulary_path(monkeypatch):
    small = Recall(V=6, L=20).sample(16, gen(3))
    monkeypatch.setattr(recall_module, "_MAX_ROWS_V", 0)  # the path for V too large to tabulate
    large = Recall(V=6, L=20).sample(16, gen(3))
    assert torch.equal(small.probs, large.probs) and torch.equal(small.inputs, large.inputs)
