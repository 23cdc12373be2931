"""SULA: the exact posterior equals brute-force enumeration of the latent label; prompts, metrics,
the entropy axis and the intervention on constructed cases."""
import itertools
import math

import pytest
import torch

from bwt_lite.llm import sula as S


def brute_force(shown, a):
    """P(y = 0 | shown labels) and P(next label = 0 | shown) by enumerating y and the next label."""
    joint = {}
    for y in (0, 1):
        lik = 0.5
        for s in shown:
            lik *= a if s == y else 1 - a
        joint[y] = lik
    post0 = joint[0] / (joint[0] + joint[1])
    pred0 = sum(joint[y] * (a if y == 0 else 1 - a) for y in (0, 1)) / (joint[0] + joint[1])
    return post0, pred0


@pytest.mark.parametrize("a", [0.9, 0.6, 0.99])
def test_bayes_posterior_equals_enumeration(a):
    for k in range(7):
        for shown in itertools.product((0, 1), repeat=k):
            m, n = shown.count(0), shown.count(1)
            post0, pred0 = brute_force(shown, a)
            assert S.bayes_posterior(m, n, a).item() == pytest.approx(post0, abs=1e-12)
            assert S.bayes_predictive(m, n, a).item() == pytest.approx(pred0, abs=1e-12)
            # Paper III's closed form
            closed = a ** m * (1 - a) ** n / (a ** m * (1 - a) ** n + a ** n * (1 - a) ** m)
            assert S.bayes_posterior(m, n, a).item() == pytest.approx(closed, abs=1e-12)


def test_entropies_known_values():
    assert S.binary_entropy_bits(0.5).item() == pytest.approx(1.0)
    assert S.binary_entropy_bits(torch.tensor([0.0, 1.0])).tolist() == [0.0, 0.0]
    assert S.binary_entropy_bits(0.9).item() == pytest.approx(0.4689955936, abs=1e-9)
    # k = 0: 1 bit; one example: H(0.9) for the latent label, H(0.82) for the next label
    assert S.binary_entropy_bits(S.bayes_posterior(1, 0)).item() == pytest.approx(0.4689955936, abs=1e-9)
    assert S.bayes_predictive(1, 0).item() == pytest.approx(0.82)


def test_generate_prompts():
    prompts = S.generate(("foo", "bar"), k_values=(0, 2, 8), per_k=300, seed=3)
    assert len(prompts) == 900 and [p.k for p in prompts[::300]] == [0, 2, 8]
    for p in prompts[:5] + prompts[-5:]:
        assert p.text.count("Label:") == p.k + 1 and p.text.endswith("Label:")
        assert p.m + p.n == p.k
        body = p.text.split("\n")
        assert [line.split(": ")[1] for line in body if line.startswith("Label: ")] == [("foo", "bar")[s] for s in p.shown]
    match = [s == p.latent for p in prompts for s in p.shown]
    assert sum(match) / len(match) == pytest.approx(0.9, abs=0.02)
    assert sum(p.latent for p in prompts) / len(prompts) == pytest.approx(0.5, abs=0.05)
    assert [p.text for p in S.generate(("foo", "bar"), per_k=3, seed=1)] == [p.text for p in S.generate(("foo", "bar"), per_k=3, seed=1)]
    with pytest.raises(ValueError, match="labels"):
        S.generate(("foo", "foo"))
    with pytest.raises(ValueError, match="accuracy"):
        S.generate(("foo", "bar"), accuracy=0.4)


def test_two_label_probability_and_correlations():
    logits = torch.full((10,), -5.0)
    logits[3], logits[7] = math.log(3.0), 0.0
    assert S.two_label_probability(logits, (3, 7)).item() == pytest.approx(0.75)
    assert S.ranks(torch.tensor([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert S.spearman(x, x ** 3) == pytest.approx(1.0) and S.pearson(x, -2 * x) == pytest.approx(-1.0)
    ece, table = S.calibration(torch.tensor([0.1, 0.1, 0.9, 0.9]), torch.tensor([0, 0, 1, 0]))
    assert ece == pytest.approx(0.5 * 0.1 + 0.5 * 0.4)
    assert table[0][2] == 2 and table[-1][1] == pytest.approx(0.5)


def fake_run(p_model, prompts, d=6):
    g = torch.Generator().manual_seed(0)
    N = len(prompts)
    return S.SulaRun(prompts, (0, 1), p_model, torch.randn(N, 3, d, generator=g), torch.randn(N, d, generator=g))


def test_evaluate_a_bayes_optimal_model_scores_zero():
    prompts = S.generate(("foo", "bar"), per_k=20, seed=0)
    post = S.bayes_posterior([p.m for p in prompts], [p.n for p in prompts])
    run = fake_run(post, prompts)
    met = S.evaluate(run)
    assert met.mae_posterior == pytest.approx(0.0, abs=1e-12)
    assert met.mae_predictive > 0.1  # the latent posterior is sharper than the predictive
    assert [r["k"] for r in met.per_k] == [0, 1, 2, 4, 8] and met.per_k[0]["h_bayes"] == pytest.approx(1.0)
    # a constant model (1 bit everywhere) has MAE = mean(1 - H_Bayes)
    flat = S.evaluate(fake_run(torch.full((len(prompts),), 0.5, dtype=torch.float64), prompts))
    assert flat.mae_posterior == pytest.approx((1 - run.h_bayes).mean().item())
    # the best prompt-blind predictor: one entropy for every prompt, checked against a fine grid of constants
    grid = torch.linspace(0, 1, 2001, dtype=torch.float64)
    best = min((run.h_bayes - c).abs().mean().item() for c in grid)
    assert flat.blind_mae == pytest.approx(best, abs=1e-3) and flat.blind_mae <= flat.mae_posterior
    with pytest.raises(ValueError, match="non-empty"):
        S.blind_entropy_mae(torch.zeros(0))
    # a state whose only varying coordinate is H_Bayes: PC1 is H_Bayes (up to sign), within every k too
    run.final = torch.cat([run.h_bayes.unsqueeze(1) * 100, torch.ones(len(prompts), 3, dtype=torch.float64)], 1)
    met = S.evaluate(run)
    assert abs(met.r_pc1) == pytest.approx(1.0) and abs(met.rho_pc1) == pytest.approx(1.0)
    assert abs(met.rho_within_k) == pytest.approx(1.0)
    # a state that only knows k (prompt length) correlates with H_Bayes overall, but not within k
    run.final = torch.cat([run.k.float().unsqueeze(1), torch.ones(len(prompts), 3)], 1)
    met = S.evaluate(run)
    assert abs(met.rho_pc1) > 0.5 and math.isnan(met.rho_within_k)


def test_fit_entropy_axis_recovers_a_planted_direction():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 10, generator=g, dtype=torch.float64)
    w = torch.zeros(10, dtype=torch.float64)
    w[3] = 2.0
    h = x @ w + 0.5
    ax = S.fit_entropy_axis(x, h, layer=1, ridge=1e-6)
    assert abs(ax.direction[3].item()) == pytest.approx(1.0, abs=1e-3)
    assert ax.r2_train > 0.999 and ax.r2_heldout > 0.999
    noise = S.fit_entropy_axis(x, torch.randn(200, generator=g, dtype=torch.float64), layer=1)
    assert noise.r2_heldout < 0.1
    with pytest.raises(ValueError, match="states"):
        S.fit_entropy_axis(x[:3], h[:3], layer=1)


def test_intervention_at_the_last_block_equals_manual_edit():
    pytest.importorskip("transformers")
    from bwt_lite.llm.offline import from_config, local_tokenizer, tiny_config
    from bwt_lite.llm.probe import encode, last_token_states

    tok = local_tokenizer()
    model = from_config(tiny_config("gpt_neox", len(tok), d_model=32, n_layers=2, n_heads=4), seed=0)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(4)
    labels, ids = S.pick_labels(tok)
    assert labels == ("wug", "dax") and len(set(ids)) == 2
    prompts = S.generate(labels, k_values=(1, 4), per_k=3, seed=0)
    run = S.run_model(model, tok, prompts, ids)
    assert run.mass.shape == (6,) and bool(((run.mass > 0) & (run.mass <= 1)).all())
    assert S.evaluate(run).label_mass == pytest.approx(run.mass.mean().item())
    g = torch.Generator().manual_seed(1)
    u = torch.randn(32, generator=g, dtype=torch.float64)
    u /= u.norm()
    scale = run.residual[:, 2].norm(dim=-1).mean().item() / 3
    axis = S.EntropyAxis(2, u, run.residual[:, 2].double().mean(0), scale, 0.0, 0.0)
    head, norm = model.get_output_embeddings(), model.gpt_neox.final_layer_norm
    for mode, alpha in (("remove", 0.0), ("shift", 2.0)):
        got = S.intervene(model, tok, prompts, ids, axis, mode=mode, alpha=alpha)
        for i, p in enumerate(prompts):
            x = last_token_states(model, encode(tok, p.text))[0][2].double()
            x = x - ((x - axis.center) @ u) * u if mode == "remove" else x + alpha * scale * u
            with torch.no_grad():
                want = S.two_label_probability(head(norm(x.float())), ids)
            assert got[i].item() == pytest.approx(want.item(), abs=1e-5)
    torch.testing.assert_close(S.intervene(model, tok, prompts, ids, axis, mode="shift", alpha=0.0), run.p_model)
    assert not torch.allclose(S.intervene(model, tok, prompts, ids, axis, mode="shift", alpha=5.0), run.p_model)
    with pytest.raises(ValueError, match="mode"):
        S.intervene(model, tok, prompts, ids, axis, mode="zero")
    with pytest.raises(ValueError, match="layer"):
        S.intervene(model, tok, prompts, ids, S.EntropyAxis(0, u, axis.center, 1.0, 0, 0))
    with pytest.raises(ValueError, match="single token"):
        S.pick_labels(tok, ["notaword", "alsonot"])
