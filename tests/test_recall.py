"""The associative recall tunnel: layouts, exact posteriors against brute-force enumeration, errors."""
import itertools
import json
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bwt_lite.metrics import entropy_bits
from bwt_lite.tunnels.recall import Recall
from conftest import gen


def all_functions(V: int) -> torch.Tensor:
    """Every function {0..V-1} -> {0..V-1} as a (V^V, V) table (row = one function)."""
    return torch.tensor(list(itertools.product(range(V), repeat=V)), dtype=torch.long)


def brute_force_posterior(V: int, tokens: list[int], positions: list[int]) -> torch.Tensor:
    """Enumerate all V^V functions (uniform prior). At each prediction position p, condition on the
    (key, value) pairs whose value token lies before p, and predict f(tokens[p])."""
    funcs = all_functions(V)
    out = []
    for p in positions:
        consistent = torch.ones(len(funcs), dtype=torch.bool)
        for i in range(p - 1):
            if tokens[i] < V and V <= tokens[i + 1] < 2 * V:  # a revealed pair: key then value
                consistent &= funcs[:, tokens[i]] == tokens[i + 1] - V
        counts = torch.bincount(funcs[consistent, tokens[p]], minlength=V).to(torch.float64)
        out.append(counts / counts.sum())
    return torch.stack(out)


def random_tunnel(data, V: int, variant: str) -> Recall:
    if variant == "mqar":
        return Recall(V=V, variant="mqar", n_pairs=data.draw(st.integers(1, V)),
                      gap=data.draw(st.integers(0, 3)), n_queries=data.draw(st.integers(1, 6)))
    return Recall(V=V, L=data.draw(st.integers(1, 3 * V)))


@settings(max_examples=40, deadline=None)
@given(V=st.integers(2, 4), variant=st.sampled_from(Recall.variants), data=st.data(), seed=st.integers(0, 2**31))
def test_posterior_equals_enumeration(V, variant, data, seed):
    tunnel = random_tunnel(data, V, variant)
    ep = tunnel.sample(5, gen(seed))
    assert ep.probs.dtype == torch.float64 and ep.probs.shape == (5, len(tunnel.positions), V)
    for b in range(5):
        exact = brute_force_posterior(V, ep.inputs[b].tolist(), ep.positions.tolist())
        assert torch.allclose(ep.probs[b], exact, atol=1e-12, rtol=0)
    # the sampled answer is always possible, and recall positions (point masses) are the seen keys
    assert (ep.probs.gather(2, ep.target.unsqueeze(2)) > 0).all()
    seen = tunnel.seen_mask(ep)
    assert torch.equal(seen, ep.probs.amax(-1) == 1.0)
    h = entropy_bits(ep.probs)
    assert torch.allclose(h, torch.where(seen, 0.0, math.log2(V)).to(torch.float64), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(V=st.integers(2, 12), variant=st.sampled_from(Recall.variants), data=st.data(), seed=st.integers(0, 2**31))
def test_seen_mask_is_membership_and_targets_follow(V, variant, data, seed):
    tunnel = random_tunnel(data, V, variant)
    ep = tunnel.sample(4, gen(seed))
    pos = ep.positions.tolist()
    seen = tunnel.seen_mask(ep)
    for b in range(4):
        tok = ep.inputs[b].tolist()
        keys = [tok[p] for p in pos]
        assert seen[b].tolist() == [keys[i] in keys[:i] for i in range(len(keys))]
        for i, p in enumerate(pos):
            if p + 1 < len(tok):  # a value token follows: it is the sampled target
                assert tok[p + 1] == V + ep.target[b, i].item()
        # f is a function: a key always carries the same value within an episode
        pairs = {}
        for k, v in zip(keys, ep.target[b].tolist()):
            assert pairs.setdefault(k, v) == v


def test_default_layout():
    t = Recall()
    assert (t.V, t.L, t.variant, t.seq_len, t.vocab_size, t.n_classes) == (16, 32, "default", 63, 32, 16)
    assert t.answer_tokens == tuple(range(16, 32)) and t.fill_token is None
    ep = t.sample(64, gen())
    assert ep.inputs.shape == (64, 63) and ep.inputs.dtype == torch.long
    assert ep.positions.tolist() == list(range(0, 63, 2))
    assert ep.target.shape == (64, 32) and ep.target.dtype == torch.long
    keys, vals = ep.inputs[:, 0::2], ep.inputs[:, 1::2]
    assert (keys < 16).all() and (vals >= 16).all() and (vals < 32).all()
    assert torch.equal(ep.target[:, :-1] + 16, vals)
    assert any(len(set(row)) < 32 for row in keys.tolist())  # with replacement: repeats occur
    assert ep.mask.sum(1).eq(32).all() and ep.mask[:, 1::2].sum() == 0


@pytest.mark.parametrize("V, n, gap, m", [(16, 8, 0, 8), (5, 5, 3, 1), (6, 2, 7, 9), (2, 1, 1, 3)])
def test_mqar_layout(V, n, gap, m):
    t = Recall(V=V, variant="mqar", n_pairs=n, gap=gap, n_queries=m)
    T = 2 * n + gap + 2 * m - 1
    assert (t.seq_len, t.vocab_size, t.n_classes, t.fill_token) == (T, 2 * V + 1, V, 2 * V)
    assert t.answer_tokens == tuple(range(V, 2 * V))
    ep = t.sample(50, gen(4))
    assert ep.inputs.shape == (50, T)
    q0 = 2 * n + gap
    assert ep.positions.tolist() == list(range(0, 2 * n, 2)) + list(range(q0, T, 2))
    assert (ep.inputs[:, 2 * n:q0] == 2 * V).all()
    assert (ep.inputs[:, :2 * n] != 2 * V).all() and (ep.inputs[:, q0:] != 2 * V).all()
    stored, s_vals = ep.inputs[:, 0:2 * n:2], ep.inputs[:, 1:2 * n:2]
    queries, q_vals = ep.inputs[:, q0::2], ep.inputs[:, q0 + 1::2]
    assert (stored < V).all() and (queries < V).all()
    assert ((s_vals >= V) & (s_vals < 2 * V)).all() and ((q_vals >= V) & (q_vals < 2 * V)).all()
    assert all(len(set(row)) == n for row in stored.tolist())  # distinct stored keys
    assert (queries.unsqueeze(2) == stored.unsqueeze(1)).any(2).all()  # queries are stored keys
    assert torch.equal(ep.target[:, :n] + V, s_vals)
    assert torch.equal(ep.target[:, n:n + m - 1] + V, q_vals)
    seen = t.seen_mask(ep)
    assert not seen[:, :n].any() and seen[:, n:].all()
    assert torch.equal(t.expected_seen(), seen.to(torch.float64).mean(0))


def test_default_recall_fraction_matches_expectation():
    t = Recall()  # V = 16, L = 32
    seen = t.seen_mask(t.sample(8192, gen(5))).to(torch.float64)
    expected = torch.tensor([1 - (1 - 1 / 16) ** i for i in range(32)], dtype=torch.float64)
    assert torch.allclose(t.expected_seen(), expected, atol=1e-15)
    assert (seen.mean(0) - expected).abs().max() < 0.03  # per position, std <= 0.0056
    assert abs(seen.mean().item() - expected.mean().item()) < 0.01
    assert expected.mean().item() == pytest.approx(0.5634, abs=1e-4)


def test_values_are_uniform_and_keys_uniform():
    ep = Recall(V=8, L=20).sample(4096, gen(6))
    for x in (ep.target, ep.inputs[:, 0::2]):
        counts = torch.bincount(x.flatten(), minlength=8)
        freq = counts.to(torch.float64) / counts.sum()
        assert (freq - 1 / 8).abs().max() < 0.01


def test_same_seed_same_episodes_and_global_rng_untouched():
    for t in (Recall(), Recall(variant="mqar", gap=3)):
        torch.manual_seed(123)
        state = torch.get_rng_state()
        a = t.sample(4, gen(7))
        assert torch.equal(torch.get_rng_state(), state)
        torch.manual_seed(456)
        b = t.sample(4, gen(7))
        assert torch.equal(a.inputs, b.inputs) and torch.equal(a.probs, b.probs) and torch.equal(a.target, b.target)
        assert not torch.equal(a.inputs, t.sample(4, gen(8)).inputs)


@pytest.mark.parametrize("t, keys", [
    (Recall(V=5, L=7), {"tunnel", "V", "L", "variant"}),
    (Recall(V=5, variant="mqar", n_pairs=4, gap=2, n_queries=3),
     {"tunnel", "V", "variant", "n_pairs", "gap", "n_queries"}),
])
def test_config_rebuilds_the_tunnel(t, keys):
    cfg = t.config()
    assert set(cfg) == keys and next(iter(cfg)) == "tunnel" and cfg["tunnel"] == "recall"
    assert json.loads(json.dumps(cfg)) == cfg
    u = Recall(**{k: v for k, v in cfg.items() if k != "tunnel"})
    assert u.config() == cfg and repr(u) == repr(t)
    a, b = t.sample(3, gen(9)), u.sample(3, gen(9))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.positions, b.positions)


def test_default_variant_ignores_mqar_parameters():
    assert Recall(V=4).config() == Recall(V=4, n_pairs=3, gap=5).config()  # n_pairs=8 > V is fine here


@pytest.mark.parametrize("kwargs, fragment", [
    ({"V": 1}, "V must be >= 2"),
    ({"V": 2.5}, "V must be an int"),
    ({"L": 0}, "L must be >= 1"),
    ({"variant": "nope"}, "unknown variant 'nope'; allowed: default, mqar"),
    ({"variant": "mqar", "n_pairs": 0}, "n_pairs must be >= 1"),
    ({"variant": "mqar", "V": 4, "n_pairs": 5}, "n_pairs must be <= V"),
    ({"variant": "mqar", "gap": -1}, "gap must be >= 0"),
    ({"variant": "mqar", "n_queries": 0}, "n_queries must be >= 1"),
    ({"variant": "mqar", "gap": "2"}, "gap must be an int"),
])
def test_bad_arguments_name_the_argument(kwargs, fragment):
    with pytest.raises((ValueError, TypeError), match=fragment):
        Recall(**kwargs)


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        Recall().sample(0, gen())
