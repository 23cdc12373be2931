"""Belief simplex: the silhouette score and the simplex diagnostics on constructed cases."""
import math

import pytest
import torch

from bwt_lite.geometry.manifold import Representation
from bwt_lite.geometry.simplex import belief_simplex, silhouette, simplex_by_layer, simplex_of
from bwt_lite.models import build_model
from bwt_lite.recipes import get_preset
from bwt_lite.tunnels import make_tunnel


def _silhouette_brute_force(x, labels):
    n = len(labels)
    d = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1).sqrt()
    out = []
    for i in range(n):
        same = [j for j in range(n) if labels[j] == labels[i] and j != i]
        if not same:
            out.append(0.0)
            continue
        a = d[i, same].mean()
        b = min(d[i, [j for j in range(n) if labels[j] == c]].mean() for c in set(labels) if c != labels[i])
        out.append(((b - a) / max(a, b)).item())
    return sum(out) / n


def test_well_separated_clusters_score_near_one():
    g = torch.Generator().manual_seed(0)
    centres = 100 * torch.eye(5, dtype=torch.float64)
    labels = torch.arange(5).repeat(40)
    x = centres[labels] + torch.randn(200, 5, generator=g, dtype=torch.float64)
    assert silhouette(x, labels) > 0.97


def test_random_labels_score_near_zero():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1000, 3, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 5, (1000,), generator=g)
    assert abs(silhouette(x, labels)) < 0.05


def test_silhouette_matches_the_definition_point_by_point():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(30, 2, generator=g, dtype=torch.float64)
    labels = [0] * 10 + [1] * 12 + [2] * 7 + [3]  # cluster 3 is a singleton (score 0)
    want = _silhouette_brute_force(x, labels)
    assert silhouette(x, torch.tensor(labels)) == pytest.approx(want, abs=1e-12)
    assert silhouette(x, torch.tensor(labels), chunk=7) == pytest.approx(want, abs=1e-12)
    # labels need not be 0..k-1
    assert silhouette(x, torch.tensor(labels) * 10 + 3) == pytest.approx(want, abs=1e-12)


def test_silhouette_errors():
    with pytest.raises(ValueError, match="at least 2 clusters"):
        silhouette(torch.zeros(5, 2), torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="one label per row"):
        silhouette(torch.zeros(5, 2), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="integers"):
        silhouette(torch.zeros(5, 2), torch.zeros(5))


def test_a_representation_that_is_the_posterior_reproduces_the_ideal_simplex():
    g = torch.Generator().manual_seed(3)
    E, P, S = 60, 10, 5
    probs = torch.softmax(3 * torch.randn(E * P, S, generator=g, dtype=torch.float64), -1)
    h = -(probs * probs.log2()).sum(-1)
    A = torch.randn(S, 12, generator=g, dtype=torch.float64)
    rep = Representation(x=probs @ A, probs=probs, entropy=h, position=torch.arange(P).repeat(E),
                         episode=torch.arange(E).repeat_interleave(P))
    r = simplex_of(rep, max_points=10_000)
    assert r.posterior_r2 > 0.999
    assert r.silhouette_posterior > 0.2
    assert r.silhouette_full > 0  # an invertible linear map distorts but keeps the clusters apart
    assert r.n_silhouette == E * P and r.scores.shape == (E * P, 2)


@pytest.mark.parametrize("arch", ["transformer", "mamba", "lstm"])
def test_belief_simplex_runs_on_every_architecture(arch):
    p = get_preset("hmm", arch, "lite")
    torch.manual_seed(0)
    model = build_model(p.model)
    tunnel = make_tunnel(**p.tunnel)
    r = belief_simplex(model, tunnel, episodes=8, max_points=50)
    assert r.n_points == 8 * 20 and r.n_silhouette == 50
    assert set(r.state.tolist()) <= set(range(5))
    assert not math.isnan(r.silhouette_head) and not math.isnan(r.silhouette_token)
    layers = simplex_by_layer(model, tunnel, episodes=8, max_points=50)
    assert list(layers)[0] == "embedding" and list(layers)[-1] == "final norm"


def test_readout_subspace_and_token_silhouettes():
    g = torch.Generator().manual_seed(4)
    E, P, S, d = 40, 10, 5, 12
    probs = torch.softmax(3 * torch.randn(E * P, S, generator=g, dtype=torch.float64), -1)
    log_post = probs.log() - probs.log().mean(-1, keepdim=True)
    W = torch.randn(S, d, generator=g, dtype=torch.float64)
    # a representation whose logits x @ W.T are exactly the centred log-posteriors, plus a large
    # component orthogonal to the head's rows that only depends on the current token
    x = log_post @ torch.linalg.pinv(W).T
    token = torch.randint(0, 4, (E * P,), generator=g)
    null = torch.linalg.svd(W, full_matrices=True).Vh[S:]  # directions the head cannot see
    x = x + 20 * torch.randn(4, null.shape[0], generator=g, dtype=torch.float64)[token] @ null
    h = -(probs * probs.log2()).sum(-1)
    rep = Representation(x=x, probs=probs, entropy=h, position=torch.arange(P).repeat(E),
                         episode=torch.arange(E).repeat_interleave(P), token=token)
    r = simplex_of(rep, max_points=10_000, readout=W)
    assert r.silhouette_head == pytest.approx(r.silhouette_log_posterior, abs=1e-9)
    assert r.silhouette_token > 0.9 and r.silhouette_full < r.silhouette_head
    assert math.isnan(simplex_of(rep, max_points=100).silhouette_head)
