"""Belief-substrate probes: closed-form ridge and held-out R^2 on constructed cases with known answers."""
import math

import pytest
import torch

from bwt_lite.geometry.probes import heldout_r2, probe_layers, r2_score, ridge_fit
from bwt_lite.models import build_model
from bwt_lite.recipes import get_preset
from bwt_lite.tunnels import make_tunnel


def _posteriors(n, c, g):
    return torch.softmax(2 * torch.randn(n, c, generator=g, dtype=torch.float64), -1)


def test_a_representation_that_linearly_encodes_the_posterior_is_probed_perfectly():
    g = torch.Generator().manual_seed(0)
    n, c, d = 2000, 5, 32
    A = torch.randn(c, d, generator=g, dtype=torch.float64)
    p_fit, p_test = _posteriors(n, c, g), _posteriors(n, c, g)
    x_fit = p_fit @ A + 0.5 + 1e-4 * torch.randn(n, d, generator=g, dtype=torch.float64)
    x_test = p_test @ A + 0.5 + 1e-4 * torch.randn(n, d, generator=g, dtype=torch.float64)
    assert heldout_r2(x_fit, p_fit, x_test, p_test) > 0.999


def test_noise_is_probed_at_zero_held_out():
    g = torch.Generator().manual_seed(1)
    n, c, d = 4000, 5, 32
    p_fit, p_test = _posteriors(n, c, g), _posteriors(n, c, g)
    x_fit = torch.randn(n, d, generator=g, dtype=torch.float64)
    x_test = torch.randn(n, d, generator=g, dtype=torch.float64)
    r2 = heldout_r2(x_fit, p_fit, x_test, p_test)
    assert abs(r2) < 0.03
    # in-sample it is positive (overfitting): exactly why the probes score held-out
    assert r2_score(p_fit, ridge_fit(x_fit, p_fit).predict(x_fit)) > r2


def test_ridge_recovers_an_exact_linear_map_with_intercept():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(100, 4, generator=g, dtype=torch.float64)
    W = torch.randn(4, 3, generator=g, dtype=torch.float64)
    y = x @ W + torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64)
    fit = ridge_fit(x, y, ridge=0.0)
    assert torch.allclose(fit.weight, W, atol=1e-10)
    assert torch.allclose(fit.predict(x), y, atol=1e-10)
    # a large penalty shrinks the map towards predicting the mean
    assert ridge_fit(x, y, ridge=1e6).weight.abs().max() < 1e-3


def test_r2_known_values_and_errors():
    y = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert r2_score(y, y) == 1.0
    assert r2_score(y, torch.full((4,), 2.5)) == 0.0
    assert r2_score(y, torch.full((4,), 4.5)) < 0
    assert math.isnan(r2_score(torch.ones(4), torch.ones(4)))
    with pytest.raises(ValueError, match="same number of rows"):
        ridge_fit(torch.zeros(4, 2), torch.zeros(3))
    with pytest.raises(ValueError, match="ridge"):
        ridge_fit(torch.zeros(4, 2), torch.zeros(4), ridge=-1.0)


@pytest.mark.parametrize("arch", ["transformer", "mamba", "lstm", "mlp"])
def test_probe_layers_on_every_architecture(arch):
    p = get_preset("hmm", arch, "lite")
    torch.manual_seed(0)
    model = build_model(p.model)
    res = probe_layers(model, make_tunnel(**p.tunnel), episodes=8)
    assert res.layers[0] == "embedding" and res.layers[-1] == "final norm"
    assert len(res.layers) == p.model.n_layers + 2 == len(res.r2) == len(res.r2_fit)
    assert res.fit_episodes == res.test_episodes == 4 and res.n_points == 4 * 20
    with pytest.raises(ValueError, match="target"):
        probe_layers(model, make_tunnel(**p.tunnel), episodes=8, target="logits")
