"""The HMM filtering tunnel: layout, exact hundredths, forward filter against path enumeration, errors."""
import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bwt_lite.orchestration.bench import forward_filter_reference
from bwt_lite.tunnels.hmm import (
    HMM,
    forward_filter,
    recent_filter,
    round_to_hundredths,
    tokenize,
)
from conftest import gen


def brute_force_recent(T: list, E: list, obs: list[int], window: int, init: list[float] | None = None) -> list[list[float]]:
    """p(s_t | o_{t-window+1}..o_t) for every t: the joint over all state paths 0..t, with the
    symbols before the window left out (summed over), normalised."""
    S = len(T)
    init = init or [1.0 / S] * S
    out = []
    for t in range(len(obs)):
        lo = max(0, t - window + 1) if window else t + 1
        mass = [0.0] * S
        for path in itertools.product(range(S), repeat=t + 1):
            p = init[path[0]]
            for i in range(1, t + 1):
                p *= T[path[i - 1]][path[i]]
            for i in range(lo, t + 1):
                p *= E[path[i]][obs[i]]
            mass[path[-1]] += p
        z = sum(mass)
        out.append([m / z for m in mass])
    return out


def brute_force_filter(T: list, E: list, obs: list[int], init: list[float] | None = None) -> list[list[float]]:
    """p(s_t | o_0..o_t) for every t by summing the joint over all S^(t+1) state paths."""
    return brute_force_recent(T, E, obs, len(obs), init)


def random_stochastic(g: torch.Generator, *shape: int, zeros: bool = False) -> torch.Tensor:
    """Random row-stochastic float64 matrices; with ``zeros``, some entries (never a whole row) are 0."""
    x = -torch.log1p(-torch.rand(*shape, generator=g, dtype=torch.float64))
    if zeros:
        keep = torch.rand(*shape, generator=g) < 0.6
        keep[..., 0] |= ~keep.any(-1)
        x = x * keep
    return x / x.sum(-1, keepdim=True)


def hundredths(x: torch.Tensor) -> torch.Tensor:
    return (x * 100).round().to(torch.int64)


# ---- exactness ------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(S=st.integers(2, 3), O=st.integers(2, 3), K=st.integers(1, 5), seed=st.integers(0, 2**31),
       zeros=st.booleans(), with_init=st.booleans())
def test_forward_filter_equals_enumeration(S, O, K, seed, zeros, with_init):
    g, B = gen(seed), 3
    T = random_stochastic(g, B, S, S, zeros=zeros)
    E = random_stochastic(g, B, S, O)  # strictly positive: every observation sequence is possible
    obs = torch.randint(0, O, (B, K), generator=g)
    init = random_stochastic(g, S, zeros=zeros) if with_init else None
    post = forward_filter(T, E, obs, init)
    assert post.shape == (B, K, S) and post.dtype == torch.float64
    for b in range(B):
        exact = brute_force_filter(T[b].tolist(), E[b].tolist(), obs[b].tolist(),
                                   None if init is None else init.tolist())
        assert torch.allclose(post[b], torch.tensor(exact, dtype=torch.float64), atol=1e-10, rtol=0)
    if init is None:
        ref = forward_filter_reference(T.tolist(), E.tolist(), obs.tolist())
        assert torch.allclose(post, torch.tensor(ref, dtype=torch.float64), atol=1e-12, rtol=0)
    # unbatched inputs give the same answer
    assert torch.equal(forward_filter(T[1], E[1], obs[1], init), post[1])


@settings(max_examples=40, deadline=None)
@given(S=st.integers(2, 3), O=st.integers(2, 3), K=st.integers(1, 5), window=st.integers(0, 6),
       seed=st.integers(0, 2**31), with_init=st.booleans())
def test_recent_filter_equals_enumeration(S, O, K, window, seed, with_init):
    g, B = gen(seed), 3
    T, E = random_stochastic(g, B, S, S), random_stochastic(g, B, S, O)
    obs = torch.randint(0, O, (B, K), generator=g)
    init = random_stochastic(g, S) if with_init else None
    post = recent_filter(T, E, obs, window, init)
    assert post.shape == (B, K, S) and post.dtype == torch.float64
    for b in range(B):
        exact = brute_force_recent(T[b].tolist(), E[b].tolist(), obs[b].tolist(), window,
                                   None if init is None else init.tolist())
        assert torch.allclose(post[b], torch.tensor(exact, dtype=torch.float64), atol=1e-10, rtol=0)
    assert torch.allclose(recent_filter(T[0], E[0], obs[0], window, init), post[0], atol=1e-14, rtol=0)
    if window >= K:
        assert torch.equal(post, forward_filter(T, E, obs, init))


def test_recent_filter_approaches_the_exact_belief_and_rejects_bad_window():
    tunnel = HMM(K=12)
    ep = tunnel.sample(256, gen(3))
    T, E, obs = HMM.decode(ep.inputs)
    gaps = [(recent_filter(T, E, obs, w) - ep.probs).abs().max().item() for w in range(0, 13)]
    assert all(a > b for a, b in zip(gaps[:6], gaps[1:7]))  # each symbol more brings it closer
    assert gaps[12] == 0.0
    with pytest.raises(ValueError, match="window"):
        recent_filter(T, E, obs, -1)
    with pytest.raises(TypeError, match="window"):
        recent_filter(T, E, obs, 1.5)


@settings(max_examples=30, deadline=None)
@given(S=st.integers(2, 3), O=st.integers(2, 3), K=st.integers(1, 5), seed=st.integers(0, 2**31))
def test_sampled_episodes_equal_enumeration(S, O, K, seed):
    tunnel = HMM(S=S, O=O, K=K)
    ep = tunnel.sample(4, gen(seed))
    T, E, obs = HMM.decode(ep.inputs)
    assert T.dtype == E.dtype == torch.float64 and obs.dtype == torch.int64
    assert torch.equal(tokenize(hundredths(T), hundredths(E), obs), ep.inputs)  # decode inverts tokenize
    for b in range(4):
        exact = brute_force_filter(T[b].tolist(), E[b].tolist(), obs[b].tolist())
        assert torch.allclose(ep.probs[b], torch.tensor(exact, dtype=torch.float64), atol=1e-10, rtol=0)
        T1, E1, obs1 = HMM.decode(ep.inputs[b])  # one episode on its own
        assert torch.equal(T1, T[b]) and torch.equal(E1, E[b]) and torch.equal(obs1, obs[b])


# ---- layout and exact hundredths ------------------------------------------------------------------

def check_layout(tunnel: HMM, ep) -> None:
    S, O, K = tunnel.S, tunnel.O, tunnel.K
    head = 3 + S * S + S * O
    B = ep.inputs.shape[0]
    assert tunnel.header_len == head and tunnel.seq_len == head + 2 * K
    assert ep.inputs.shape == (B, head + 2 * K) and ep.inputs.dtype == torch.int64
    x = ep.inputs
    assert (x[:, 0] == HMM.TRANS).all() and (x[:, 1 + S * S] == HMM.EMIT).all() and (x[:, head - 1] == HMM.SEP).all()
    probs_tok = torch.cat([x[:, 1 : 1 + S * S], x[:, 2 + S * S : head - 1]], dim=1)
    assert ((probs_tok >= 0) & (probs_tok <= 95)).all()
    h_T = (x[:, 1 : 1 + S * S] + 5).reshape(B, S, S)
    h_E = (x[:, 2 + S * S : head - 1] + 5).reshape(B, S, O)
    for h in (h_T, h_E):  # integer hundredths: every entry >= 0.05, rows sum to exactly 1.00
        assert (h >= 5).all() and (h.sum(-1) == 100).all()
    assert (x[:, head::2] == HMM.OBS).all()
    sym = x[:, head + 1 :: 2]
    assert ((sym >= HMM.SYMBOL0) & (sym < HMM.SYMBOL0 + O)).all()
    assert ep.positions.tolist() == list(range(head + 1, head + 2 * K, 2))
    assert (x[:, ep.positions] >= HMM.SYMBOL0).all()
    assert ep.target.shape == (B, K) and ep.target.dtype == torch.int64
    assert ((ep.target >= 0) & (ep.target < S)).all()
    assert ep.probs.shape == (B, K, S) and ep.probs.dtype == torch.float64
    assert torch.allclose(ep.probs.sum(-1), torch.ones(B, K, dtype=torch.float64), atol=1e-12, rtol=0)


def test_canonical_layout():
    t = HMM()
    assert (t.S, t.O, t.K, t.header_len, t.seq_len, t.vocab_size) == (5, 5, 20, 53, 93, 105)
    assert (t.n_classes, t.answer_tokens, t.n_features, t.kind, t.name) == (5, None, 0, "categorical", "hmm")
    assert HMM.length_arg == "K"
    assert (HMM.TRANS, HMM.EMIT, HMM.SEP, HMM.OBS, HMM.SYMBOL0) == (96, 97, 98, 99, 100)
    ep = t.sample(64, gen())
    check_layout(t, ep)
    assert ep.positions.tolist() == list(range(54, 93, 2))
    assert ep.mask.sum(1).eq(20).all()
    assert torch.equal(ep.inputs[:, 53::2], torch.full((64, 20), 99))


@settings(max_examples=25, deadline=None)
@given(S=st.integers(2, 20), O=st.integers(2, 20), K=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_layout_many_sizes(S, O, K, seed):
    t = HMM(S=S, O=O, K=K)
    assert t.vocab_size == 100 + O
    check_layout(t, t.sample(5, gen(seed)))


def test_extreme_sizes_are_all_floor():
    ep = HMM(S=20, O=20, K=3).sample(4, gen(3))
    T, E, _ = HMM.decode(ep.inputs)
    assert (hundredths(T) == 5).all() and (hundredths(E) == 5).all()  # 20 x 0.05 = 1.00


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 20), seed=st.integers(0, 2**31), floored=st.booleans())
def test_round_to_hundredths(n, seed, floored):
    g = gen(seed)
    p = random_stochastic(g, 16, n, zeros=True)
    if floored:  # the tunnel's own preprocessing: floor at 0.05, renormalise
        p = p.clamp_min(0.05)
        p = p / p.sum(-1, keepdim=True)
    h = round_to_hundredths(p)
    assert h.dtype == torch.int64 and (h >= 5).all() and (h.sum(-1) == 100).all()
    if (p >= 0.05).all():  # then it is plain largest-remainder rounding: within one hundredth
        assert ((h - 100 * p).abs() < 1).all()
        # and no rounding can be improved by moving one hundredth between two entries
        err = (h - 100 * p)
        assert (err.max(-1).values - err.min(-1).values <= 1 + 1e-9).all()


def test_round_to_hundredths_examples():
    p = torch.tensor([[0.333, 0.333, 0.334], [0.01, 0.49, 0.5], [0.5, 0.5, 0.0]], dtype=torch.float64)
    assert round_to_hundredths(p).tolist() == [[33, 33, 34], [5, 47, 48], [48, 47, 5]]


def test_length_generalisation_sizes():
    for K in (30, 50):
        t = HMM(K=K)
        assert t.seq_len == 53 + 2 * K
        ep = t.sample(8, gen(K))
        check_layout(t, ep)
        T, E, obs = HMM.decode(ep.inputs)
        assert obs.shape == (8, K)
        assert torch.allclose(forward_filter(T, E, obs[:, :20]), ep.probs[:, :20], atol=1e-14, rtol=0)


# ---- targets and sampling statistics --------------------------------------------------------------

def test_targets_consistent_with_posterior_and_calibrated():
    B, t = 4000, HMM()
    ep = t.sample(B, gen(11))
    p_true = ep.probs.gather(2, ep.target.unsqueeze(2)).squeeze(2)
    assert (p_true > 0).all()
    # Given the observations, 1{s_t = s} is Bernoulli(p_t(s)) independently across episodes, so the
    # count of state s at position t has mean sum_b p and variance sum_b p (1 - p): z-scores per cell.
    onehot = torch.nn.functional.one_hot(ep.target, 5).to(torch.float64)
    z = (onehot.sum(0) - ep.probs.sum(0)) / (ep.probs * (1 - ep.probs)).sum(0).sqrt()
    assert z.abs().max() < 5, z
    assert z.abs().mean() < 1.2  # about sqrt(2/pi) = 0.8 for standard normals
    # and the posterior is informative: the true state is on average likelier than uniform
    assert p_true.mean() > 0.3


def test_transitions_and_emissions_follow_the_parameters():
    B = 4000
    ep = HMM().sample(B, gen(12))
    T, E, obs = HMM.decode(ep.inputs)
    s = ep.target
    b = torch.arange(B).unsqueeze(1)
    p_next = T[b, s[:, :-1]]  # (B, K-1, S): distribution of s_t given s_{t-1}
    p_obs = E[b, s]  # (B, K, O): distribution of o_t given s_t
    for onehot, p in ((torch.nn.functional.one_hot(s[:, 1:], 5), p_next),
                      (torch.nn.functional.one_hot(obs, 5), p_obs)):
        # sums of martingale differences: variance = sum of the conditional variances p (1 - p)
        z = (onehot.sum(0) - p.sum(0)) / (p * (1 - p)).sum(0).sqrt()  # per position and class
        assert z.abs().max() < 5
        z = (onehot.sum((0, 1)) - p.sum((0, 1))) / (p * (1 - p)).sum((0, 1)).sqrt()  # pooled: sees 0.01 biases
        assert z.abs().max() < 4.5
    first = torch.bincount(s[:, 0], minlength=5).to(torch.float64)  # s_0 uniform
    assert ((first - B / 5).abs() / (B * 0.2 * 0.8) ** 0.5).max() < 5


def test_same_seed_same_episodes_and_no_global_rng():
    t = HMM()
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = t.sample(4, gen(7))
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is untouched
    torch.manual_seed(456)
    b = t.sample(4, gen(7))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.probs, b.probs) and torch.equal(a.target, b.target)
    assert not torch.equal(a.inputs, t.sample(4, gen(8)).inputs)


def test_config_rebuilds():
    t = HMM(S=3, O=4, K=7)
    cfg = t.config()
    assert list(cfg)[0] == "tunnel" and cfg == {"tunnel": "hmm", "S": 3, "O": 4, "K": 7, "variant": "default"}
    u = type(t)(**{k: v for k, v in cfg.items() if k != "tunnel"})
    assert u.config() == cfg and torch.equal(u.sample(2, gen(1)).inputs, t.sample(2, gen(1)).inputs)
    assert repr(t) == "HMM(S=3, O=4, K=7, variant='default')"


# ---- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, fragment", [
    ({"S": 1}, "S must be >= 2"),
    ({"O": 1}, "O must be >= 2"),
    ({"S": 21}, "S must be <= 20"),
    ({"O": 25}, "O must be <= 20"),
    ({"K": 0}, "K must be >= 1"),
    ({"S": 2.0}, "S must be an int"),
    ({"variant": "x"}, "allowed: default"),
])
def test_bad_arguments_name_the_argument(kwargs, fragment):
    with pytest.raises((ValueError, TypeError), match=fragment):
        HMM(**kwargs)


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        HMM().sample(0, gen())


def _good(B=2, S=3, O=2, K=4):
    g = gen(0)
    return random_stochastic(g, B, S, S), random_stochastic(g, B, S, O), torch.randint(0, O, (B, K), generator=g)


@pytest.mark.parametrize("change, exc, fragment", [
    (lambda T, E, o: (T - 0.5, E, o), ValueError, "T must have no negative entries"),
    (lambda T, E, o: (T * 1.01, E, o), ValueError, "T must be row-stochastic"),
    (lambda T, E, o: (T, -E, o), ValueError, "E must have no negative entries"),
    (lambda T, E, o: (T, E * 0.9, o), ValueError, "E must be row-stochastic"),
    (lambda T, E, o: (T, E + torch.tensor([1e-8, 0.0], dtype=torch.float64), o), ValueError, "E must be row-stochastic"),
    (lambda T, E, o: (T.clone().fill_(float("nan")), E, o), ValueError, "T must be finite"),
    (lambda T, E, o: (T[:, :2, :2] / T[:, :2, :2].sum(-1, keepdim=True), E, o), ValueError, "E must have shape"),
    (lambda T, E, o: (T, E, o[:1]), ValueError, "obs must have shape"),
    (lambda T, E, o: (T, E, o + 2), ValueError, r"obs must be symbols in 0\.\.1"),
    (lambda T, E, o: (T, E, o - 1), ValueError, r"obs must be symbols in 0\.\.1"),
    (lambda T, E, o: (T, E, o.double()), TypeError, "obs must be an integer tensor"),
    (lambda T, E, o: (T.long(), E, o), TypeError, "T must be a floating-point tensor"),
    (lambda T, E, o: (T[..., :2], E, o), ValueError, "T must be row-stochastic|T must have shape"),
])
def test_forward_filter_rejects_bad_input(change, exc, fragment):
    T, E, obs = change(*_good())
    with pytest.raises(exc, match=fragment):
        forward_filter(T, E, obs)


def test_forward_filter_init_and_impossible_observations():
    T, E, obs = _good()
    forward_filter(T, E + torch.tensor([1e-11, 0.0], dtype=torch.float64), obs)  # within tolerance
    with pytest.raises(ValueError, match="init must be row-stochastic"):
        forward_filter(T, E, obs, torch.tensor([0.5, 0.5, 0.5], dtype=torch.float64))
    with pytest.raises(ValueError, match="init must have no negative entries"):
        forward_filter(T, E, obs, torch.tensor([1.5, -0.5, 0.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="init must have shape"):
        forward_filter(T, E, obs, torch.tensor([0.5, 0.5], dtype=torch.float64))
    E = torch.tensor([[1.0, 0.0]] * 3, dtype=torch.float64).expand(2, 3, 2)  # symbol 1 never emitted
    with pytest.raises(ValueError, match="obs has probability 0"):
        forward_filter(T, E, torch.ones(2, 4, dtype=torch.int64))
    # a point-mass init is fine and gives a point mass at t = 0 when E cannot tell states apart
    post = forward_filter(T, E, torch.zeros(2, 4, dtype=torch.int64), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
    assert post[:, 0].tolist() == [[0.0, 1.0, 0.0]] * 2


def test_tokenize_and_decode_reject_bad_input():
    T_h = torch.full((1, 2, 2), 50)
    E_h = torch.full((1, 2, 2), 50)
    obs = torch.zeros(1, 3, dtype=torch.int64)
    assert tokenize(T_h, E_h, obs).tolist() == [[96, 45, 45, 45, 45, 97, 45, 45, 45, 45, 98, 99, 100, 99, 100, 99, 100]]
    with pytest.raises(ValueError, match="T_hundredths must have every entry >= 5"):
        tokenize(torch.tensor([[[97, 3], [50, 50]]]), E_h, obs)
    with pytest.raises(ValueError, match="E_hundredths must have every entry >= 5 and every row summing to 100"):
        tokenize(T_h, torch.full((1, 2, 2), 49), obs)
    with pytest.raises(ValueError, match="obs must be symbols in 0..1"):
        tokenize(T_h, E_h, obs + 2)
    with pytest.raises(TypeError, match="T_hundredths must be an integer tensor"):
        tokenize(T_h / 100, E_h, obs)
    tokens = tokenize(T_h, E_h, obs)
    with pytest.raises(ValueError, match="markers"):
        HMM.decode(torch.cat([tokens, tokens.clone().index_fill_(1, torch.tensor([11]), 5)]))
    with pytest.raises(ValueError, match="not a symbol token"):
        HMM.decode(tokens.clone().index_fill_(1, torch.tensor([12]), 104))
    with pytest.raises(ValueError, match="HMM layout|EMIT"):
        HMM.decode(tokens[:, 1:])
    with pytest.raises(TypeError, match="tokens must be an integer tensor"):
        HMM.decode(tokens.double())


# ---- the slow-mixing variant ----------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(S=st.integers(2, 3), O=st.integers(2, 4), K=st.integers(1, 5), seed=st.integers(0, 2**31))
def test_slow_episodes_equal_enumeration(S, O, K, seed):
    tunnel = HMM(S=S, O=O, K=K, variant="slow")
    ep = tunnel.sample(3, gen(seed))
    check_layout(tunnel, ep)
    T, E, obs = HMM.decode(ep.inputs)
    for b in range(3):
        exact = brute_force_filter(T[b].tolist(), E[b].tolist(), obs[b].tolist())
        assert torch.allclose(ep.probs[b], torch.tensor(exact, dtype=torch.float64), atol=1e-10, rtol=0)


def test_slow_variant_stays_and_its_default_preset():
    from bwt_lite.recipes import get_preset

    preset = get_preset("hmm", "transformer", "lite", variant="slow")
    # the variant's recipe: ALiBi on the learned table (recipes.VARIANT_MODEL) and the 2,000-step warm-up
    assert preset.name == "hmm-slow-transformer-lite-alibi-soft"
    assert (preset.model.alibi, preset.train.warmup_steps) == (True, 2_000)
    default = get_preset("hmm", "transformer", "lite")
    assert (default.model.alibi, default.train.warmup_steps) == (False, 200)
    assert not get_preset("hmm", "transformer", "lite", variant="slow", depth="paper").model.alibi
    assert {k: preset.tunnel[k] for k in ("S", "O", "K", "variant")} == {"S": 3, "O": 5, "K": 30, "variant": "slow"}
    tunnel = HMM(S=3, O=5, K=30, variant="slow")
    T, E = tunnel.sample_params(4096, gen(0))
    stay = T.diagonal(dim1=-2, dim2=-1)
    assert stay.min() >= 80 and stay.max() <= 90  # hundredths: heavy self-transitions under the 0.05 floor
    assert (T >= 5).all() and (E >= 5).all() and (T.sum(-1) == 100).all() and (E.sum(-1) == 100).all()
    with pytest.raises(ValueError, match="S must be <= 9"):
        HMM(S=10, variant="slow")


def test_slow_variant_needs_a_long_window():
    """The point of the variant: the exact filter of the last 8 symbols is still > 0.01 bits off,
    while on the default variant 4 symbols already come within 0.005 bits."""
    def window_gap(tunnel, w):
        ep = tunnel.sample(2048, gen(7))
        T, E, obs = HMM.decode(ep.inputs)
        H = lambda p: -(p * p.clamp_min(1e-300).log2()).sum(-1)  # noqa: E731
        return (H(recent_filter(T, E, obs, w)) - H(ep.probs)).abs().mean().item()

    assert window_gap(HMM(S=3, O=5, K=30, variant="slow"), 8) > 0.01
    assert window_gap(HMM(), 4) < 0.005


# --- sharper draws (the curriculum's easier episodes) -------------------------------------------------


@pytest.mark.parametrize("variant, S", [("default", 5), ("slow", 3)])
def test_sharpen_draws_more_peaked_rows_and_keeps_the_posterior_exact(variant, S):
    from bwt_lite.tunnels.hmm import forward_filter

    plain = HMM(S=S, O=5, K=6, variant=variant)
    sharp = HMM(S=S, O=5, K=6, variant=variant, sharpen=3.0)
    _, E_plain = plain.sample_params(4096, torch.Generator().manual_seed(0))
    _, E_sharp = sharp.sample_params(4096, torch.Generator().manual_seed(0))
    assert E_sharp.amax(-1).double().mean() > E_plain.amax(-1).double().mean() + 10  # hundredths
    assert (E_sharp.sum(-1) == 100).all() and (E_sharp >= 5).all()
    ep = sharp.sample(64, torch.Generator().manual_seed(1))
    T, E, obs = HMM.decode(ep.inputs)
    assert torch.allclose(ep.probs, forward_filter(T, E, obs), atol=1e-12, rtol=0)
    assert sharp.config()["sharpen"] == 3.0 and "sharpen" not in plain.config()
    from bwt_lite.tunnels import make_tunnel
    assert make_tunnel(**sharp.config()).config() == sharp.config()


def test_sharpen_one_is_the_tunnels_own_draws():
    a = HMM(variant="default").sample(32, torch.Generator().manual_seed(3))
    b = HMM(variant="default", sharpen=1.0).sample(32, torch.Generator().manual_seed(3))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.probs, b.probs)


@pytest.mark.parametrize("bad", [0, -1.0, 17.0, True, "2", float("nan")])
def test_sharpen_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="sharpen"):
        HMM(sharpen=bad)
