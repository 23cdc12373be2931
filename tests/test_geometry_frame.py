"""Hypothesis frame (key orthogonality): constructed key sets with known answers, the keys read from
the model by hand, every definition, the random-init reference, errors and plots."""
import math

import ipywidgets
import pytest
import torch
from matplotlib.figure import Figure

from bwt_lite.geometry.frame import (DEFINITIONS, FrameDefinition, abs_cosine_std, analytic_abs_cosine, cosine_matrix,
                                     effective_dimension,
                                     expected_abs_cosine, format_frame_table, frame_table, hypothesis_keys,
                                     key_orthogonality, off_diagonal_cosine, random_init_model)
from bwt_lite.plotting.attention import frame_widget, plot_frame_by_head, plot_key_cosines
from bwt_lite.models import ModelConfig, build_model, run_with_cache
from bwt_lite.train import init_model
from conftest import gen

CFG = ModelConfig(d_model=32, n_layers=2, n_heads=4, vocab_size=40, n_positions=38, answer_tokens=tuple(range(20, 40)))


def random_orthogonal(d: int, seed: int) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=gen(seed), dtype=torch.float64))
    return q


def test_exactly_orthogonal_keys_have_zero_off_diagonal_cosine():
    for d, n in ((16, 16), (32, 20), (8, 3)):
        q = random_orthogonal(d, d)[:n]  # n orthonormal rows
        scales = torch.rand(n, 1, generator=gen(1), dtype=torch.float64) * 10 + 0.1  # lengths do not matter
        keys = torch.stack([q * scales, -q])  # two "heads"
        for stat in ("abs", "signed"):
            assert torch.allclose(off_diagonal_cosine(keys, stat), torch.zeros(2, dtype=torch.float64), atol=1e-12)
        assert torch.allclose(cosine_matrix(keys)[0], torch.eye(n, dtype=torch.float64), atol=1e-12)
        assert torch.allclose(effective_dimension(cosine_matrix(keys)), torch.full((2,), float(n), dtype=torch.float64))


def test_identical_and_antipodal_keys():
    v = torch.randn(1, 8, generator=gen(2))
    same = v.repeat(5, 1)
    assert off_diagonal_cosine(same, "abs").item() == pytest.approx(1.0)
    assert effective_dimension(cosine_matrix(same)).item() == pytest.approx(1.0)
    # a regular simplex: n unit vectors summing to zero have mean off-diagonal cosine -1/(n-1), the minimum
    n = 6
    simplex = torch.eye(n, dtype=torch.float64) - 1 / n
    assert off_diagonal_cosine(simplex, "signed").item() == pytest.approx(-1 / (n - 1))
    assert off_diagonal_cosine(simplex, "abs").item() == pytest.approx(1 / (n - 1))


def test_exact_expected_abs_cosine_in_closed_form():
    assert expected_abs_cosine(2) == pytest.approx(2 / math.pi)  # the cosine of a uniform angle
    assert expected_abs_cosine(3) == pytest.approx(0.5)  # Archimedes: cos is uniform on [-1, 1] in 3D
    # the analytic sqrt(2 / (pi d)) is the large-d limit: E|cos| = sqrt(2/(pi d)) (1 + 1/(4d) + O(1/d^2))
    for d in (8, 16, 32, 192):
        ratio = expected_abs_cosine(d) / analytic_abs_cosine(d)
        assert abs(ratio - (1 + 1 / (4 * d))) < 1 / d ** 2
    assert analytic_abs_cosine(32) == pytest.approx(0.141, abs=5e-4)  # 0.141 for d_head 32


@pytest.mark.parametrize("d", [16, 32, 128])
def test_random_gaussian_keys_match_the_analytic_baseline_within_sampling_error(d):
    """n isotropic Gaussian vectors give n (n - 1) / 2 distinct pairs. Their |cos| values are pairwise
    independent (|cos(u_i, u_j)| does not depend on u_i's direction, so given u_i the pairs (i, j) and
    (i, k) are independent with a distribution free of u_i), each with mean E|cos| and variance
    1/d - E|cos|^2. The mean over pairs therefore has standard error sd / sqrt(pairs): 4 of them is
    the tolerance (a false alarm about once in 16,000 runs; the seeds are fixed anyway)."""
    n = 200
    pairs = n * (n - 1) // 2
    for seed in range(3):
        keys = torch.randn(n, d, generator=gen(100 + seed), dtype=torch.float64)
        got = off_diagonal_cosine(keys, "abs").item()
        assert abs(got - expected_abs_cosine(d)) < 4 * abs_cosine_std(d) / math.sqrt(pairs)
        signed = off_diagonal_cosine(keys, "signed").item()  # E cos = 0, Var cos = 1/d
        assert abs(signed) < 4 * math.sqrt(1 / d / pairs)
    # and the test can fail: correlated keys (a shared component) are far outside the tolerance
    shared = torch.randn(n, d, generator=gen(7), dtype=torch.float64) + 0.5 * torch.randn(1, d, generator=gen(8),
                                                                                         dtype=torch.float64)
    assert abs(off_diagonal_cosine(shared, "abs").item() - expected_abs_cosine(d)) > 4 * abs_cosine_std(d) / math.sqrt(pairs)


def test_hypothesis_keys_are_the_layer0_key_projection_of_the_normed_embedding():
    torch.manual_seed(0)
    model = build_model(CFG).eval()
    tokens = list(range(20, 40))
    keys = hypothesis_keys(model, tokens)  # (H, n, dh)
    assert keys.shape == (4, 20, 8) and keys.dtype == torch.float64
    blk = model.backbone.blocks[0]
    e = model.embed.tok.weight[20:40].double()
    normed = e * torch.rsqrt(e.pow(2).mean(-1, keepdim=True) + 1e-5) * blk.ln1.weight.double()
    by_hand = normed @ blk.attn.k.weight.double().T  # (n, d)
    for h in range(4):
        assert torch.allclose(keys[h], by_hand[:, 8 * h: 8 * (h + 1)], atol=1e-5)
    # the same keys the model computes in a forward pass when position embeddings are zero
    with torch.no_grad():
        model.embed.pos.weight.zero_()
    x = torch.tensor([tokens[:19] + tokens[:18]])
    _, cache = run_with_cache(model, x, names=["backbone.blocks.0.attn.hook_k"])
    in_context = cache["backbone.blocks.0.attn.hook_k"][0]  # (H, T, dh)
    assert torch.allclose(in_context[:, :19].double(), keys[:, :19], atol=1e-5)
    # concatenated heads and raw embeddings
    concat = hypothesis_keys(model, tokens, heads="concat")
    assert torch.allclose(concat[0], torch.cat(list(keys), dim=-1), atol=1e-12)
    raw = hypothesis_keys(model, tokens, source="raw", heads="concat")
    assert torch.equal(raw[0], model.embed.tok.weight[20:40].double())
    # the default tokens are the model's answer tokens
    assert torch.equal(hypothesis_keys(model), keys)
    # a deeper layer uses its own norm and projection
    blk1 = model.backbone.blocks[1]
    deep = hypothesis_keys(model, tokens, layer=1, heads="concat")[0]
    assert torch.allclose(deep, (normed / blk.ln1.weight.double() * blk1.ln1.weight.double()) @ blk1.attn.k.weight.double().T,
                          atol=1e-5)


def test_key_orthogonality_reports_random_init_and_analytic_for_every_definition():
    trained = init_model(CFG, 3)
    with torch.no_grad():  # "training" that makes the layer-0 value keys collinear in every head
        trained.embed.tok.weight[20:40] = trained.embed.tok.weight[20] * torch.linspace(1, 2, 20).unsqueeze(1)
    table = frame_table(trained, seed=3)
    assert [r.definition for r in table] == [d.name for d in DEFINITIONS]
    ref = init_model(CFG, 3)
    for r in table:
        d = FrameDefinition.parse(r.definition)
        keys0 = hypothesis_keys(ref, source=d.source, heads=d.heads)
        assert r.random_init == pytest.approx(off_diagonal_cosine(keys0, d.statistic).tolist())
        assert r.trained == pytest.approx([1.0] * len(r.trained), abs=1e-5)  # collinear, positive multiples
        assert r.dim == (8 if d.heads == "per_head" else 32)
        if d.statistic == "abs":
            assert r.analytic == pytest.approx(analytic_abs_cosine(r.dim))
            assert r.analytic_exact == pytest.approx(expected_abs_cosine(r.dim))
        else:
            assert r.analytic == 0.0
        assert r.cosines.shape == r.cosines_random.shape == (len(r.trained), 20, 20)
        assert r.effective_dim == pytest.approx([1.0] * len(r.trained), abs=1e-4)
        assert all(1 < e <= r.dim for e in r.effective_dim_random)
    # the random-init model is the training seed's initial model, and at init the statistic is near chance
    same = key_orthogonality(ref, seed=3)
    assert same.trained == same.random_init
    assert torch.equal(random_init_model(ref, 3).embed.tok.weight, ref.embed.tok.weight)
    assert "projected/per_head/abs" in format_frame_table(table)


def test_bad_definitions_and_inputs_raise_naming_the_argument():
    model = init_model(CFG, 0)
    with pytest.raises(ValueError, match="source"):
        key_orthogonality(model, "embedded/per_head/abs", seed=0)
    with pytest.raises(ValueError, match="heads"):
        FrameDefinition("raw", "per_head", "abs")
    with pytest.raises(ValueError, match="statistic"):
        off_diagonal_cosine(torch.randn(3, 4), "median")
    with pytest.raises(ValueError, match="definition"):
        FrameDefinition.parse("projected")
    with pytest.raises(ValueError, match="tokens"):
        hypothesis_keys(model, [0, 99])
    with pytest.raises(ValueError, match="layer"):
        hypothesis_keys(model, layer=5)
    with pytest.raises(ValueError, match="at least 2"):
        off_diagonal_cosine(torch.randn(1, 4))
    mlp = build_model(ModelConfig(arch="mlp", d_model=32, n_layers=2, vocab_size=40, n_positions=38,
                                  answer_tokens=tuple(range(20, 40))))
    with pytest.raises(ValueError, match="raw"):
        hypothesis_keys(mlp)
    assert hypothesis_keys(mlp, source="raw", heads="concat").shape == (1, 20, 32)


def test_frame_plots_and_widget():
    model = init_model(CFG, 1)
    res = key_orthogonality(model, seed=0)
    assert isinstance(plot_key_cosines(res, 2, labels=[str(v) for v in range(20)]), Figure)
    assert isinstance(plot_frame_by_head(res, paper={"paper": 0.052, "range": (0.43, 0.49)}), Figure)
    with pytest.raises(ValueError, match="head"):
        plot_key_cosines(res, 9)
    w = frame_widget(model, seed=0)
    assert isinstance(w, ipywidgets.interactive)
    w.children[0].value = "raw/concat/signed"  # one key per token: the head slider is ignored
    w.children[2].value = 3
