"""bwt_lite.llm.diagnostics on constructed cases with known answers (no model needed)."""
import math

import pytest
import torch

from bwt_lite.llm.diagnostics import (attention_focusing, distinct_positions, key_orthogonality, mean_abs_cosine,
                                      pca_summary, qk_alignment, random_cosine_baseline)
from bwt_lite.llm.probe import Probe


def make_probe(keys, attention=None, queries=None, ids=None):
    L, H, T, d = keys.shape
    attention = attention if attention is not None else torch.full((L, H, T, T), 1.0 / T)
    queries = queries if queries is not None else keys.clone()
    ids = ids if ids is not None else torch.arange(T)
    z = torch.zeros(L + 1, T, 4)
    return Probe(ids, queries, keys, keys, keys, attention, z, z[0], torch.zeros(3), "gpt2", 0)


def test_mean_abs_cosine_known_cases():
    assert mean_abs_cosine(torch.eye(5)).item() == pytest.approx(0.0)
    x = torch.tensor([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0]])
    # pairs: (0,1) 1/sqrt2, (0,2) 1, (1,2) 1/sqrt2
    assert mean_abs_cosine(x).item() == pytest.approx((2 / math.sqrt(2) + 1) / 3)
    assert mean_abs_cosine(torch.stack([torch.eye(3), torch.ones(3, 3)])).tolist() == pytest.approx([0.0, 1.0])
    with pytest.raises(ValueError, match="at least 2"):
        mean_abs_cosine(torch.ones(1, 3))


def test_random_cosine_baseline_matches_monte_carlo():
    g = torch.Generator().manual_seed(0)
    for d in (8, 32, 64):
        x = torch.randn(4000, 2, d, generator=g, dtype=torch.float64)
        mc = torch.nn.functional.cosine_similarity(x[:, 0], x[:, 1], dim=-1).abs().mean().item()
        assert mc == pytest.approx(random_cosine_baseline(d, exact=True), abs=0.01)
    assert random_cosine_baseline(32) == pytest.approx(0.141, abs=5e-4)  # the analytic baseline for d_head 32
    assert random_cosine_baseline(2, exact=True) == pytest.approx(2 / math.pi)  # E|cos U|, U uniform angle
    assert abs(random_cosine_baseline(256) - random_cosine_baseline(256, exact=True)) < 1e-3
    with pytest.raises(ValueError, match="d must"):
        random_cosine_baseline(0)


def test_distinct_positions_and_key_orthogonality():
    ids = torch.tensor([7, 3, 3, 9, 7, 4])
    assert distinct_positions(ids).tolist() == [1, 3, 5]
    assert distinct_positions(ids, skip_first=False).tolist() == [0, 1, 3, 5]
    keys = torch.zeros(2, 1, 6, 3)
    keys[0, 0] = torch.tensor([[9, 9, 9], [1, 0, 0], [5, 5, 5], [0, 1, 0], [1, 1, 1], [0, 0, 1]], dtype=torch.float)
    keys[1, 0] = torch.tensor([[1, 0, 0]] * 6, dtype=torch.float)
    out = key_orthogonality([make_probe(keys, ids=ids)])
    assert out.tolist() == pytest.approx([0.0, 1.0])  # orthogonal distinct keys at layer 0, identical at layer 1
    with pytest.raises(ValueError, match="non-empty"):
        key_orthogonality([])


def test_attention_focusing_and_alignment():
    T = 4
    att = torch.zeros(3, 2, T, T)
    att[0] = torch.full((T, T), 1 / T)  # uniform: 2 bits at the last row
    att[1, :, -1] = torch.tensor([0.5, 0.5, 0.0, 0.0])  # 1 bit
    att[2, :, -1] = torch.tensor([0.0, 0.0, 0.0, 1.0])  # 0 bits
    f = attention_focusing([make_probe(torch.randn(3, 2, T, 5), attention=att)])
    assert f.per_layer.tolist() == pytest.approx([2.0, 1.0, 0.0])
    assert f.drop_bits == pytest.approx(2.0) and f.drop_fraction == pytest.approx(1.0)
    assert f.max_bits == pytest.approx(2.0)
    keys = torch.randn(1, 1, T, 5)
    q = torch.zeros(1, 1, T, 5)
    q[0, 0, -1] = keys[0, 0, 2] * 3
    cos = qk_alignment(make_probe(keys, queries=q))
    assert cos[0, 0, 2].item() == pytest.approx(1.0)
    assert cos.shape == (1, 1, T)


def test_pca_summary_known_spectrum():
    g = torch.Generator().manual_seed(0)
    basis = torch.linalg.qr(torch.randn(6, 6, generator=g, dtype=torch.float64))[0]
    # rows spanning 3 orthogonal directions with variances 9, 4, 1 exactly (a balanced design)
    signs = torch.tensor([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], dtype=torch.float64)
    x = (signs * torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)) @ basis[:3] + 5.0
    s = pca_summary(x, n_boot=50)
    assert s.pc1 == pytest.approx(9 / 14) and s.pc12 == pytest.approx(13 / 14)
    assert s.participation_ratio == pytest.approx(14 ** 2 / (81 + 16 + 1))
    assert s.explained.sum().item() == pytest.approx(1.0)
    assert s.scores.shape == (8, 2)
    lo, hi = s.ci["pc1"]
    assert 0 < lo <= hi <= 1
    # one coordinate with a huge scale dominates raw PCA, not the standardised one
    spiky = torch.randn(500, 4, generator=g, dtype=torch.float64) * torch.tensor([100.0, 1.0, 1.0, 1.0], dtype=torch.float64)
    assert pca_summary(spiky).pc1 > 0.99 and pca_summary(spiky, standardize=True).pc1 < 0.4
    iso = torch.randn(4000, 5, generator=g)
    assert pca_summary(iso).participation_ratio == pytest.approx(5.0, rel=0.05)
    with pytest.raises(ValueError, match="N >= 3"):
        pca_summary(torch.ones(2, 3))
