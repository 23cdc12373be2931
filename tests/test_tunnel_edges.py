"""Edge cases of the episode API, for every tunnel: bad generators, batch sizes, sizes and float
parameters raise ValueError or TypeError naming the argument and the allowed range, before anything
large is allocated."""

import pytest
import torch

from bwt_lite.tunnels import TUNNELS, HMM, Bijection, Recall, Recurrence, Regression, Sticky, make_tunnel
from bwt_lite.tunnels.base import MAX_SAMPLE_BYTES
from bwt_lite.tunnels.hmm import recent_filter
from bwt_lite.tunnels.regression import posterior_predictive
from bwt_lite.tunnels.sticky import symbol_means, transition_matrix
from bwt_lite.orchestration.bench import episodes_per_second
from conftest import gen

SMALL = {  # one small instance of every tunnel and variant
    "bijection-separate": Bijection(V=5, L=4), "bijection-paired": Bijection(V=5, L=4, variant="paired"),
    "bijection-replacement": Bijection(V=3, L=6, variant="replacement"), "hmm": HMM(S=3, O=2, K=4),
    "recall": Recall(V=4, L=6), "recall-mqar": Recall(V=4, variant="mqar", n_pairs=3, gap=2, n_queries=2),
    "regression-pairs": Regression(d=2, N=3), "regression-interleaved": Regression(d=2, N=3, variant="interleaved"),
    "sticky": Sticky(S=3, d=2, L=4),
    "recurrence-integer": Recurrence(p=3, length=4), "recurrence-opaque": Recurrence(p=3, length=4, variant="opaque"),
}


def test_every_tunnel_is_covered():
    assert {type(t) for t in SMALL.values()} == set(TUNNELS.values())


# ---- the generator ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("bad", [None, 0, "seed", torch.zeros(2), torch.Generator])
def test_generator_must_be_a_generator(name, bad):
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        SMALL[name].sample(2, bad)


def test_other_sampling_methods_check_the_generator():
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        HMM().sample_params(2, None)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        Sticky(L=3).sample_symbols(2, None)


# ---- the batch size --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("bad, exc, fragment", [
    (0, ValueError, "batch_size must be >= 1"),
    (-3, ValueError, "batch_size must be >= 1"),
    (True, TypeError, "batch_size must be an int"),
    (2.0, TypeError, "batch_size must be an int"),
    (float("nan"), TypeError, "batch_size must be an int"),
    ("4", TypeError, "batch_size must be an int"),
])
def test_bad_batch_size(name, bad, exc, fragment):
    with pytest.raises(exc, match=fragment):
        SMALL[name].sample(bad, gen())


@pytest.mark.parametrize("name", sorted(SMALL))
def test_huge_batch_is_refused_before_allocating(name):
    t = SMALL[name]
    limit = t.max_batch_size
    assert limit * t.episode_bytes + t.fixed_bytes <= MAX_SAMPLE_BYTES < (limit + 1) * t.episode_bytes + t.fixed_bytes
    for bad in (limit + 1, 10 ** 12):
        with pytest.raises(ValueError, match=rf"batch_size must be <= {limit:,}.*MAX_SAMPLE_BYTES = 2\.0 GiB"):
            t.sample(bad, gen())
    assert t.sample(1, gen()).batch_size == 1  # and nothing else changed


def test_default_tunnels_accept_large_batches():
    for name in TUNNELS:
        assert make_tunnel(name).max_batch_size >= 4096, name


# ---- sizes too large for one sample call -----------------------------------------------------------

@pytest.mark.parametrize("build, fragment", [
    (lambda: Bijection(V=10 ** 9, L=10 ** 9), "V and L too large"),
    (lambda: Bijection(V=10 ** 12, L=2), "V and L too large"),
    (lambda: Bijection(V=3, L=10 ** 12, variant="replacement"), "V and L too large"),
    (lambda: Bijection(V=20_000, L=20_000), "V and L too large"),
    (lambda: HMM(K=10 ** 12), "K too large"),
    (lambda: HMM(S=20, O=20, K=10 ** 8), "K too large"),
    (lambda: Recall(V=10 ** 10), "V, L, n_pairs, gap and n_queries too large"),
    (lambda: Recall(L=10 ** 12), "V, L, n_pairs, gap and n_queries too large"),
    (lambda: Recall(variant="mqar", gap=10 ** 12), "V, L, n_pairs, gap and n_queries too large"),
    (lambda: Recall(variant="mqar", n_queries=10 ** 12), "V, L, n_pairs, gap and n_queries too large"),
    (lambda: Regression(d=10 ** 6), "d and N too large"),
    (lambda: Regression(N=10 ** 12), "d and N too large"),
    (lambda: Sticky(S=10 ** 6), "S, d and L too large"),
    (lambda: Sticky(d=10 ** 10), "S, d and L too large"),
    (lambda: Sticky(L=10 ** 12), "S, d and L too large"),
    (lambda: transition_matrix(10 ** 6), "S too large: the transition matrix"),
    (lambda: symbol_means(8, 10 ** 12), "S and d too large: the symbol means"),
])
def test_huge_sizes_are_refused_with_the_bound(build, fragment):
    with pytest.raises(ValueError, match=fragment) as e:
        build()
    assert "MAX_SAMPLE_BYTES = 2.0 GiB (2,147,483,648 bytes)" in str(e.value)


@pytest.mark.parametrize("build, exc, fragment", [
    (lambda: Bijection(V=True), TypeError, "V must be an int"),
    (lambda: Bijection(L=3.0), TypeError, "L must be an int"),
    (lambda: Bijection(L=-1), ValueError, "L must be >= 1"),
    (lambda: Bijection(V=float("inf")), TypeError, "V must be an int"),
    (lambda: HMM(S=True), TypeError, "S must be an int"),
    (lambda: HMM(K=-2), ValueError, "K must be >= 1"),
    (lambda: HMM(K=20.0), TypeError, "K must be an int"),
    (lambda: Recall(gap=True, variant="mqar"), TypeError, "gap must be an int"),
    (lambda: Recall(n_pairs=float("nan"), variant="mqar"), TypeError, "n_pairs must be an int"),
    (lambda: Regression(N=0), ValueError, "N must be >= 1"),
    (lambda: Sticky(L=False), TypeError, "L must be an int"),
    (lambda: Sticky(means_seed=2 ** 64), ValueError, r"means_seed must be <= 2\*\*64 - 1"),
    (lambda: Sticky(means_seed=1.5), TypeError, "means_seed must be an int"),
    (lambda: symbol_means(8, 20, -1), ValueError, "seed must be >= 0"),
    (lambda: Sticky(L=4).noisy_floor_nats(8, seed=2 ** 64), ValueError, r"seed must be <= 2\*\*64 - 1"),
    (lambda: Sticky(L=4).noisy_floor_nats(8, batch_size=0), ValueError, "batch_size must be >= 1"),
    (lambda: make_tunnel("bijection", V=None), TypeError, "V must be an int"),
])
def test_bad_integers_name_the_argument(build, exc, fragment):
    with pytest.raises(exc, match=fragment):
        build()


# ---- float parameters -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, exc, fragment", [
    ({"tau": 1e-300}, ValueError, r"tau must be a finite float > 0 in \[1e-06, 1e\+06\], got 1e-300"),
    ({"sigma": 1e-300}, ValueError, r"sigma must be a finite float > 0 in \[1e-06, 1e\+06\]"),
    ({"tau": 1e300}, ValueError, r"tau must be a finite float > 0 in \[1e-06, 1e\+06\], got 1e\+300"),
    ({"sigma": 1e300}, ValueError, r"sigma must be .* in \[1e-06, 1e\+06\]"),
    ({"tau": 5e-324}, ValueError, "tau must be"),
    ({"tau": -0.0}, ValueError, "tau must be a finite float > 0, got -0.0"),
    ({"sigma": float("nan")}, ValueError, r"sigma must be a finite float > 0, got nan; allowed: 1e-06 <= sigma"),
    ({"tau": float("-inf")}, ValueError, "tau must be a finite float > 0, got -inf"),
    ({"tau": True}, TypeError, "tau must be a finite float"),
    ({"sigma": None}, TypeError, "sigma must be a finite float"),
    ({"sigma": torch.tensor(0.5)}, TypeError, "sigma must be a finite float"),
    ({"tau": 100.0, "sigma": 1e-3}, ValueError, r"tau / sigma must be <= 10000"),
])
def test_regression_scales(kwargs, exc, fragment):
    with pytest.raises(exc, match=fragment):
        Regression(**kwargs)


def test_regression_scales_at_the_edges_stay_finite():
    for tau, sigma in ((1e-6, 1e-6), (1e6, 1e6), (1e-2, 1e-6), (1e-6, 1e6), (1e4, 1.0)):
        ep = Regression(d=3, N=6, tau=tau, sigma=sigma).sample(16, gen(1))
        for name in ("inputs", "target", "mean", "var"):
            assert torch.isfinite(getattr(ep, name)).all(), (tau, sigma, name)
        assert (ep.var >= sigma ** 2 * (1 - 1e-12)).all()


def test_posterior_predictive_scales():
    X, y, x = torch.ones(1, 2, 1), torch.ones(1, 2), torch.ones(1, 1)
    with pytest.raises(ValueError, match=r"sigma must be a finite float > 0 in \[1e-06, 1e\+06\]"):
        posterior_predictive(X, y, x, tau=1.0, sigma=1e-300)
    with pytest.raises(ValueError, match=r"tau must be a finite float > 0 in \[1e-06, 1e\+06\]"):
        posterior_predictive(X, y, x, tau=1e300, sigma=1.0)
    # within the range but numerically singular: a clear error instead of NaN
    X = torch.tensor([[[1.0, 1.0], [1.0, 1.0]]], dtype=torch.float64)
    with pytest.raises(ValueError, match="numerically singular"):
        posterior_predictive(X * 1e150, y, torch.ones(1, 2, dtype=torch.float64), tau=1e6, sigma=1e-6)


@pytest.mark.parametrize("kwargs, exc, fragment", [
    ({"noise": 1e-300}, ValueError, r"noise must lie in \[0.0001, 1e\+06\], got 1e-300"),
    ({"noise": 1e300}, ValueError, r"noise must lie in \[0.0001, 1e\+06\]"),
    ({"noise": float("inf")}, ValueError, r"noise must be a finite float, got inf; allowed: 0.0001 <= noise"),
    ({"noise": -1.0}, ValueError, "noise must be > 0"),
    ({"noise": True}, TypeError, "noise must be a finite float"),
    ({"stay": float("nan")}, ValueError, "stay must be a finite float, got nan; allowed: 0 <= stay <= 1"),
    ({"stay": -0.1}, ValueError, r"stay must lie in \[0, 1\]"),
    ({"stay": False}, TypeError, "stay must be a finite float"),
])
def test_sticky_floats(kwargs, exc, fragment):
    with pytest.raises(exc, match=fragment):
        Sticky(**kwargs)


def test_sticky_edges_stay_finite():
    for kwargs in ({"noise": 1e-4}, {"noise": 1e6}, {"stay": 0.0}, {"stay": 1.0}):
        ep = Sticky(L=6, **kwargs).sample(8, gen(2))
        assert torch.isfinite(ep.inputs).all() and torch.isfinite(ep.probs).all(), kwargs
        assert torch.allclose(ep.probs.sum(-1), torch.ones(8, 6, dtype=torch.float64), atol=1e-12)


def test_recent_filter_window_type():
    ep = HMM(K=3).sample(2, gen())
    T, E, obs = HMM.decode(ep.inputs)
    with pytest.raises(TypeError, match="window must be an int"):
        recent_filter(T, E, obs, True)


def test_episodes_per_second():
    r = episodes_per_second("bijection", batch=8, repeats=3, calls=2, warmup=1, threads=1, V=5, L=4)
    assert set(r) == {"min", "median", "max"} and 0 < r["min"] <= r["median"] <= r["max"]
    threads = torch.get_num_threads()
    episodes_per_second(SMALL["hmm"], batch=4, repeats=1, calls=1, warmup=0, threads=1)
    assert torch.get_num_threads() == threads  # restored
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        episodes_per_second("hmm", repeats=0)
    with pytest.raises(TypeError, match="tunnel must be a tunnel name or a Tunnel"):
        episodes_per_second(3)
