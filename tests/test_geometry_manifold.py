"""Value manifold: PCA, Pearson/Spearman and held-out R^2 on constructed cases with known answers."""
import math

import pytest
import torch

from bwt_lite.geometry.manifold import (Representation, manifold_of, pc1_shares, pca, pearson, position_means,
                                        rankdata, spearman, value_manifold)
from bwt_lite.models import build_model
from bwt_lite.recipes import get_preset
from bwt_lite.tunnels import make_tunnel


def test_points_on_a_line_have_all_their_variance_on_pc1():
    g = torch.Generator().manual_seed(0)
    t = torch.randn(500, generator=g, dtype=torch.float64)
    direction = torch.randn(16, generator=g, dtype=torch.float64)
    x = 3.0 + t[:, None] * direction  # a line in 16 dimensions
    p = pca(x, 2)
    assert p.explained[0] == pytest.approx(1.0, abs=1e-12)
    assert abs(abs(p.components[0] @ direction / direction.norm()) - 1) < 1e-12
    # a 1-D curve with a little noise: PC1 near 100 %
    curve = torch.stack([t, 0.05 * torch.sin(t), 0.01 * torch.randn(500, generator=g, dtype=torch.float64)], 1)
    assert pca(curve, 1).explained[0] > 0.99


def test_isotropic_cloud_spreads_variance_evenly():
    x = torch.randn(20000, 10, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert pca(x, 10).explained == pytest.approx([0.1] * 10, abs=0.01)
    assert sum(pca(x, 10).explained) == pytest.approx(1.0)


def test_pca_scores_and_transform_agree():
    x = torch.randn(50, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    p = pca(x, 3)
    assert torch.allclose(p.transform(x), p.scores, atol=1e-12)
    assert torch.allclose(p.components @ p.components.T, torch.eye(3, dtype=torch.float64), atol=1e-12)


def test_spearman_of_a_monotone_transform_is_one():
    x = torch.randn(300, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    assert spearman(x, torch.exp(3 * x) + x ** 3) == pytest.approx(1.0, abs=1e-12)
    assert spearman(x, -torch.exp(x)) == pytest.approx(-1.0, abs=1e-12)
    assert pearson(x, torch.exp(3 * x)) < 0.9  # Pearson is not rank-based


def test_ranks_average_ties():
    assert rankdata(torch.tensor([10.0, 20.0, 10.0, 30.0, 20.0, 20.0])).tolist() == [1.5, 4.0, 1.5, 6.0, 4.0, 4.0]
    # a step function of x (many ties) is still perfectly rank-correlated with the ranks it keeps
    x = torch.arange(12.0)
    assert spearman(x // 4, x // 4) == pytest.approx(1.0, abs=1e-12)


def test_pearson_known_values_and_errors():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert pearson(x, 2 * x + 1) == pytest.approx(1.0)
    assert pearson(x, torch.tensor([1.0, -1.0, -1.0, 1.0])) == pytest.approx(0.0, abs=1e-15)
    assert math.isnan(pearson(x, torch.ones(4)))
    with pytest.raises(ValueError, match="same length"):
        pearson(x, x[:3])
    with pytest.raises(ValueError, match="k must be"):
        pca(torch.zeros(5, 3), 4)


def _rep(x, entropy, n_episodes, n_pos):
    n = n_episodes * n_pos
    return Representation(x=x, probs=torch.zeros(n, 2, dtype=torch.float64), entropy=entropy,
                          position=torch.arange(n_pos).repeat(n_episodes),
                          episode=torch.arange(n_episodes).repeat_interleave(n_pos))


def test_manifold_of_a_representation_that_encodes_the_entropy_on_a_line():
    g = torch.Generator().manual_seed(4)
    E, P = 200, 10
    h = torch.rand(E * P, generator=g, dtype=torch.float64) * 4  # entropy varies within a position
    direction = torch.randn(8, generator=g, dtype=torch.float64)
    x = (-h)[:, None] * direction + 1e-3 * torch.randn(E * P, 8, generator=g, dtype=torch.float64)
    r = manifold_of(_rep(x, h, E, P))
    assert r.pc1 > 0.999
    assert r.pearson_r > 0.999 and r.spearman_r > 0.999  # PC1 oriented to correlate positively
    assert r.r2 > 0.999 and r.r2_pc1 > 0.999
    # the deviation from the position mean: all but the (unencoded) noise of those means is recovered
    assert r.r2_within_position > 0.98
    assert abs(r.position_r2) < 0.05  # the position says nothing here


def test_manifold_position_baseline_when_entropy_is_a_function_of_position():
    E, P = 50, 6
    h = torch.log2(10.0 - torch.arange(P, dtype=torch.float64)).repeat(E)  # a staircase, as on the bijection
    x = torch.randn(E * P, 5, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    r = manifold_of(_rep(x, h, E, P))
    assert r.position_r2 == pytest.approx(1.0)
    assert math.isnan(r.r2_within_position)
    assert r.r2 < 0.1  # noise carries nothing, held out


def test_value_manifold_runs_on_a_model():
    p = get_preset("bijection", "transformer", "lite")
    torch.manual_seed(0)
    model = build_model(p.model)
    r = value_manifold(model, make_tunnel(**p.tunnel), episodes=8)
    assert r.n_points == 8 * 19 and r.dim == p.model.d_model and r.scores.shape == (8 * 19, 2)
    assert 0 < r.pc1 <= 1
    r_attn = value_manifold(model, make_tunnel(**p.tunnel), episodes=8, hook="attn_out")
    assert r_attn.hook == "backbone.blocks.1.hook_attn_out"
    with pytest.raises(ValueError, match="episodes"):
        value_manifold(model, make_tunnel(**p.tunnel), episodes=2)


def test_position_means_and_single_episodes_discard_the_episode_content():
    g = torch.Generator().manual_seed(6)
    E, P, d = 100, 8, 10
    direction = torch.randn(d, generator=g, dtype=torch.float64)
    h = torch.log2(10.0 - torch.arange(P, dtype=torch.float64))
    along = h[:, None] * direction  # the entropy staircase on a line, the same in every episode
    offsets = 5 * torch.randn(E, 1, d, generator=g, dtype=torch.float64)  # episode content, constant in an episode
    x = (along.unsqueeze(0) + offsets).reshape(E * P, d)
    r = manifold_of(_rep(x, h.repeat(E), E, P))
    assert r.pc1 < 0.5  # the global PCA is dominated by the episode content
    assert r.pc1_position_means == pytest.approx(1.0, abs=1e-9)
    assert r.position_means_r == pytest.approx(1.0, abs=1e-9)
    assert r.pc1_single_episode == pytest.approx(1.0, abs=1e-9)


def test_pc1_within_position_is_the_spread_among_episodes_at_one_position():
    """Positions on a line along e1 (values -3, -1, 1, 3: variance 5); at every position the episodes
    spread along e2 (variance 4) and e3 (variance 1), uncorrelated and zero-mean within the position."""
    P, E = 4, 4
    along = torch.tensor([-3.0, -1.0, 1.0, 3.0], dtype=torch.float64)
    s = torch.tensor([2.0, -2.0, 2.0, -2.0], dtype=torch.float64)  # variance 4
    t = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=torch.float64)  # variance 1, orthogonal to s
    x = torch.stack([along.repeat(E), s.repeat_interleave(P), t.repeat_interleave(P)], 1)
    rep = _rep(x, torch.zeros(E * P, dtype=torch.float64), E, P)
    assert torch.allclose(position_means(x, rep.position)[:, 0], along)
    shares = pc1_shares(rep)
    assert shares.within_position == pytest.approx(4 / 5, abs=1e-12)  # e2 of the within-position spread
    assert shares.position_means == pytest.approx(1.0, abs=1e-12)  # the means lie on a line
    assert shares.all_points == pytest.approx(5 / 10, abs=1e-12)  # e1: 5 of 5 + 4 + 1
    r = manifold_of(rep)
    assert (r.pc1, r.pc1_within_position, r.pc1_position_means) == pytest.approx(
        (shares.all_points, shares.within_position, shares.position_means), abs=1e-12)


def test_all_points_share_bounds_the_within_position_share():
    """The covariance over all points is the within-position one plus that of the position means (every
    episode has every position), so PC1 over all points >= within share x w and >= means share x (1 - w),
    w the within-position fraction of the variance: within <= all / (1 - all / means)."""
    g = torch.Generator().manual_seed(7)
    E, P, d = 60, 7, 6
    for scale in (0.3, 1.0, 3.0):
        x = (scale * torch.randn(1, P, d, generator=g, dtype=torch.float64)
             + torch.randn(E, P, d, generator=g, dtype=torch.float64) * torch.linspace(0.2, 2, d)).reshape(E * P, d)
        sh = pc1_shares(_rep(x, torch.zeros(E * P, dtype=torch.float64), E, P))
        assert sh.all_points < sh.position_means
        assert sh.within_position <= sh.all_points / (1 - sh.all_points / sh.position_means) + 1e-12
