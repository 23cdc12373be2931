"""The sticky Markov chain tunnel (Paper II): the matrix, exact predictive against path enumeration,
the Bayes floor, sampling, errors."""
import itertools
import math

import pytest
import torch

from bwt_lite.metrics import LN2, entropy_bits
from bwt_lite.tunnels import TUNNELS, make_tunnel
from bwt_lite.tunnels.sticky import Sticky, row_entropy_floor_nats, symbol_means, transition_matrix
from conftest import gen


def test_the_papers_matrix_and_floor():
    T = transition_matrix()
    assert T.dtype == torch.float64 and T.shape == (8, 8)
    assert torch.allclose(T.sum(1), torch.ones(8, dtype=torch.float64), atol=1e-15, rtol=0)
    assert round(T[0, 0].item(), 4) == 0.3498  # "self-transition 0.3498"
    assert torch.allclose(T.diagonal(), T[0, 0].expand(8))
    assert torch.allclose(T, T.T)  # circular distance is symmetric
    assert torch.equal(T[1], T[0].roll(1))  # circulant
    assert torch.allclose(T[0, 1:4], 0.7 / (0.3 + 1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 3 + 1 / 2 + 1) * torch.tensor(
        [1, 1 / 2, 1 / 3], dtype=torch.float64), atol=1e-15, rtol=0)
    floor = row_entropy_floor_nats(T)
    assert round(floor, 3) == 1.829 and round(floor / LN2, 3) == 2.639
    assert TUNNELS["sticky"] is Sticky


def test_matrix_extremes():
    assert torch.equal(transition_matrix(4, 1.0), torch.eye(4, dtype=torch.float64))
    T = transition_matrix(3, 0.0)  # every other symbol at circular distance 1: uniform off the diagonal
    assert torch.allclose(T, (1 - torch.eye(3, dtype=torch.float64)) / 2)


def brute_force_predictive(T: torch.Tensor, mu: torch.Tensor, noise: float, x: torch.Tensor) -> torch.Tensor:
    """p(y_{t+1} | x_0..x_t) for every t by summing the joint over all S^(t+1) symbol paths, with
    full Gaussian densities (constants included), in plain float64 arithmetic."""
    S, d = mu.shape
    L = x.shape[0]
    x = x.to(torch.float64)
    dens = torch.empty(L, S, dtype=torch.float64)
    for t in range(L):
        for s in range(S):
            sq = ((x[t] - mu[s]) ** 2).sum().item()
            dens[t, s] = math.exp(-0.5 * sq / noise ** 2) / (2 * math.pi * noise ** 2) ** (d / 2)
    out = []
    for t in range(L):
        mass = torch.zeros(S, dtype=torch.float64)
        for path in itertools.product(range(S), repeat=t + 1):
            p = 1.0 / S * dens[0, path[0]].item()
            for i in range(1, t + 1):
                p *= T[path[i - 1], path[i]].item() * dens[i, path[i]].item()
            mass[path[-1]] += p
        out.append((mass / mass.sum()) @ T)
    return torch.stack(out)


@pytest.mark.parametrize("S, d, L, noise, stay", [(3, 2, 5, 1.5, 0.3), (4, 3, 4, 2.0, 0.6), (8, 20, 3, 3.0, 0.3),
                                                  (2, 1, 6, 0.7, 0.1)])
def test_predictive_equals_path_enumeration(S, d, L, noise, stay):
    tunnel = Sticky(S=S, d=d, L=L, noise=noise, stay=stay, means_seed=S)
    ep, shown = tunnel.sample_symbols(3, gen(7 * S + L))
    assert ep.probs.dtype == torch.float64 and ep.probs.shape == (3, L, S)
    for b in range(3):
        exact = brute_force_predictive(tunnel.T, tunnel.means, noise, ep.inputs[b])
        assert torch.allclose(ep.probs[b], exact, atol=1e-10, rtol=0)
    # the posterior is not trivial in these instances: some token leaves real doubt about its symbol
    assert tunnel.filter(ep.inputs).amax(-1).min() < 0.99


def test_perfectly_identified_symbols_give_the_transition_row():
    tunnel = Sticky(noise=1e-3)
    ep, shown = tunnel.sample_symbols(4, gen(1))
    assert torch.allclose(ep.probs, tunnel.T[shown], atol=1e-12, rtol=0)
    h_nats = entropy_bits(ep.probs) * LN2
    assert torch.allclose(h_nats, torch.full_like(h_nats, row_entropy_floor_nats(tunnel.T)), atol=1e-10, rtol=0)


def test_episode_layout_and_sampling():
    tunnel = make_tunnel("sticky", L=40)
    assert (tunnel.seq_len, tunnel.n_features, tunnel.vocab_size, tunnel.n_classes) == (40, 20, 0, 8)
    assert tunnel.answer_tokens is None and torch.equal(tunnel.positions, torch.arange(40))
    ep, shown = tunnel.sample_symbols(2048, gen(2))
    assert ep.inputs.dtype == torch.float32 and ep.inputs.shape == (2048, 40, 20)
    assert torch.equal(ep.target[:, :-1], shown[:, 1:])  # token t + 1 shows the symbol token t predicts
    # the noise is standard normal around the symbol's mean
    resid = ep.inputs.double() - tunnel.means[shown]
    assert abs(resid.mean().item()) < 0.01 and abs(resid.var().item() - 1.0) < 0.01
    # transitions follow T: every empirical frequency within 4.5 standard errors (about 10k per row)
    counts = torch.zeros(8, 8, dtype=torch.float64)
    counts.index_put_((shown.flatten(), ep.target.flatten()), torch.ones(shown.numel(), dtype=torch.float64),
                      accumulate=True)
    n = counts.sum(1, keepdim=True)
    se = (tunnel.T * (1 - tunnel.T) / n).sqrt()
    assert ((counts / n - tunnel.T).abs() / se).max() < 4.5
    # y_0 is uniform (the stationary distribution)
    first = torch.bincount(shown[:, 0], minlength=8) / 2048
    assert (first - 1 / 8).abs().max() < 0.03


def test_exact_predictive_is_calibrated():
    """The cross-entropy of the sampled targets under the exact predictive averages to its entropy."""
    tunnel = Sticky(noise=2.0, L=32)
    ep = tunnel.sample(4096, gen(3))
    ce = -ep.probs.gather(2, ep.target.unsqueeze(2)).log().mean().item()
    ent = (entropy_bits(ep.probs) * LN2).mean().item()
    assert abs(ce - ent) < 0.01


def test_noisy_floor_is_above_the_row_floor_and_grows_with_noise():
    floor = row_entropy_floor_nats(transition_matrix())
    f1, se1 = Sticky(L=16).noisy_floor_nats(512, seed=0)
    f3, se3 = Sticky(L=16, noise=3.0).noisy_floor_nats(512, seed=0)
    assert floor < f1 < floor + 0.02 and 0 < se1 < 1e-3
    assert f3 > f1 + 0.1 and se3 > 0
    assert math.log(8) > f3


def test_determinism_and_config_round_trip():
    tunnel = make_tunnel("sticky", L=8, noise=1.5, means_seed=3)
    again = make_tunnel(**tunnel.config())
    a, b = tunnel.sample(4, gen(5)), again.sample(4, gen(5))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.target, b.target) and torch.equal(a.probs, b.probs)
    assert torch.equal(symbol_means(8, 20, 3), tunnel.means)
    assert not torch.equal(symbol_means(8, 20, 4), tunnel.means)
    assert "Sticky(S=8" in repr(tunnel)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"S": 1}, "S must be >= 2"),
    ({"d": 0}, "d must be >= 1"),
    ({"L": 0}, "L must be >= 1"),
    ({"stay": 1.5}, "stay must lie in [0, 1]"),
    ({"noise": 0.0}, "noise must be > 0"),
    ({"noise": float("nan")}, "noise must be a finite float"),
    ({"means_seed": -1}, "means_seed must be >= 0"),
    ({"variant": "x"}, "unknown variant 'x'"),
])
def test_bad_arguments_are_named(kwargs, fragment):
    with pytest.raises((ValueError, TypeError)) as e:
        Sticky(**kwargs)
    assert fragment in str(e.value)


def test_bad_inputs_are_named():
    tunnel = Sticky(L=4)
    with pytest.raises(ValueError, match=r"x must have shape \(B, L, d\)"):
        tunnel.predictive(torch.zeros(2, 4, 3))
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        tunnel.filter(torch.zeros(2, 4, 20, dtype=torch.int64))
    with pytest.raises(ValueError, match="T must be a square"):
        row_entropy_floor_nats(torch.ones(2, 3, dtype=torch.float64))
