"""The bijection tunnel: layouts, exact posteriors against brute-force enumeration, errors."""
import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bwt_lite.metrics import entropy_bits
from bwt_lite.tunnels import Bijection, make_tunnel
from conftest import gen


def brute_force_posterior(V: int, keys: list[int], values: list[int]) -> list[list[float]]:
    """Enumerate all V! bijections; at each t condition on pairs < t and predict pi(keys[t])."""
    perms = list(itertools.permutations(range(V)))
    out = []
    for t in range(len(keys)):
        consistent = [p for p in perms if all(p[keys[i]] == values[i] for i in range(t))]
        counts = [0] * V
        for p in consistent:
            counts[p[keys[t]]] += 1
        out.append([c / len(consistent) for c in counts])
    return out


def split_episode(tunnel: Bijection, ep, b: int) -> tuple[list[int], list[int]]:
    """Recover (keys, values) of episode b from its tokens, for every prediction position."""
    tok = ep.inputs[b].tolist()
    V, L = tunnel.V, tunnel.L
    if tunnel.variant == "paired":
        keys = tok[0:2 * L:2] + [tok[2 * L]]
        values = tok[1:2 * L:2] + [ep.target[b, -1].item()]
    else:
        keys = tok[0::2]
        values = [v - V for v in tok[1::2]] + [ep.target[b, -1].item()]
    return keys, values


@settings(max_examples=40, deadline=None)
@given(V=st.integers(2, 6), data=st.data(), variant=st.sampled_from(Bijection.variants), seed=st.integers(0, 2**31))
def test_posterior_equals_enumeration(V, data, variant, seed):
    L = data.draw(st.integers(1, V if variant != "replacement" else 2 * V))
    tunnel = Bijection(V=V, L=L, variant=variant)
    ep = tunnel.sample(6, gen(seed))
    assert ep.probs.dtype == torch.float64
    for b in range(6):
        keys, values = split_episode(tunnel, ep, b)
        exact = torch.tensor(brute_force_posterior(V, keys, values), dtype=torch.float64)
        assert torch.allclose(ep.probs[b], exact, atol=1e-12, rtol=0)
        assert values == ep.target[b].tolist()


def test_canonical_layout():
    t = make_tunnel("bijection")
    assert (t.V, t.L, t.seq_len, t.vocab_size) == (20, 19, 37, 40)
    ep = t.sample(8, gen())
    assert ep.inputs.shape == (8, 37) and ep.inputs.dtype == torch.long
    assert ep.positions.tolist() == list(range(0, 37, 2))
    keys, vals = ep.inputs[:, 0::2], ep.inputs[:, 1::2]
    assert (keys < 20).all() and (vals >= 20).all()
    assert all(len(set(row)) == 19 for row in keys.tolist())  # keys without replacement
    # each supervised key predicts the value that follows it
    assert torch.equal(ep.target[:, :-1] + 20, vals)
    assert ep.mask.sum(1).eq(19).all() and ep.mask[:, 1::2].sum() == 0


def test_entropy_staircase():
    ep = make_tunnel("bijection").sample(16, gen(1))
    h = entropy_bits(ep.probs)
    expected = torch.tensor([math.log2(20 - t) for t in range(19)], dtype=torch.float64)
    assert torch.allclose(h, expected.expand_as(h), atol=1e-12)
    assert (ep.probs.gather(2, ep.target.unsqueeze(2)) > 0).all()  # the answer is always possible


def test_paired_query_has_zero_entropy_and_values_unsupervised():
    t = Bijection(V=8, L=6, variant="paired")
    ep = t.sample(32, gen(2))
    assert t.seq_len == 13 and t.vocab_size == 8 and ep.positions.tolist() == [0, 2, 4, 6, 8, 10, 12]
    assert torch.allclose(entropy_bits(ep.probs[:, -1]), torch.zeros(32, dtype=torch.float64))
    q = ep.inputs[:, -1]
    assert ((ep.inputs[:, 0:12:2] == q.unsqueeze(1)).any(1)).all()  # the query is a context key


def test_replacement_repeated_key_is_recall():
    t = Bijection(V=5, L=12, variant="replacement")
    ep = t.sample(64, gen(3))
    keys = ep.inputs[:, 0::2]
    h = entropy_bits(ep.probs)
    for b in range(64):
        for i in range(12):
            seen = keys[b, i].item() in keys[b, :i].tolist()
            distinct = len(set(keys[b, :i].tolist()))
            assert h[b, i].item() == pytest.approx(0.0 if seen else math.log2(5 - distinct), abs=1e-12)


def test_same_seed_same_episodes_and_no_global_rng():
    t = make_tunnel("bijection")
    torch.manual_seed(123)
    a = t.sample(4, gen(7))
    torch.manual_seed(456)
    b = t.sample(4, gen(7))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.probs, b.probs)
    assert not torch.equal(a.inputs, t.sample(4, gen(8)).inputs)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"V": 1}, "V must be >= 2"),
    ({"V": 5, "L": 6}, "L must be <= V"),
    ({"variant": "nope"}, "allowed: separate, paired, replacement"),
    ({"V": 2.5}, "V must be an int"),
])
def test_bad_arguments_name_the_argument(kwargs, fragment):
    with pytest.raises((ValueError, TypeError), match=fragment):
        Bijection(**kwargs)


def test_unknown_tunnel():
    with pytest.raises(ValueError, match="unknown tunnel 'x'; allowed: bijection"):
        make_tunnel("x")
