"""Models: exact parameter counts, causality, hook points, head mask and layer bypass."""
import pytest
import torch

from bwt_lite.models import (ARCHS, ModelConfig, ablate_heads, build_model, bypass_layers, capture,
                             hook_names, run_with_cache)
from bwt_lite.recipes import get_preset
from bwt_lite.recipes.key_schema import key_fields
from bwt_lite.tunnels import Bijection
from conftest import gen

SMALL = dict(d_model=32, n_layers=2, n_heads=4, vocab_size=40, n_positions=38, answer_tokens=tuple(range(20, 40)))


def test_paper_parameter_counts():
    assert build_model(get_preset("bijection", "transformer", "paper").model).n_params == 2_677_440
    assert build_model(get_preset("bijection", "mlp", "paper").model).n_params == 2_681_472
    with torch.device("meta"):
        assert build_model(get_preset("bijection", "lstm", "paper").model).n_params == 1_793_856  # "about 1.8M"
        assert build_model(get_preset("bijection", "mamba", "paper").model).n_params == 2_784_000  # nearest 2.68M


def test_lstm_is_stacked_lstm_layers_with_hooks():
    model = build_model(ModelConfig(arch="lstm", **{**SMALL, "n_layers": 3}))
    assert [type(b.lstm).__name__ for b in model.backbone.blocks] == ["LSTM"] * 3
    x = Bijection().sample(2, gen()).inputs
    _, cache = run_with_cache(model, x, names=["backbone.blocks.0.hook_resid_pre", "backbone.blocks.1.hook_resid_pre",
                                               "backbone.blocks.0.hook_resid_post"])
    assert cache["backbone.blocks.0.hook_resid_post"].shape == (2, 37, 32)
    # no residual: a layer's output is its LSTM's hidden states, the next layer's input
    assert torch.equal(cache["backbone.blocks.1.hook_resid_pre"], cache["backbone.blocks.0.hook_resid_post"])
    h, _ = model.backbone.blocks[0].lstm(cache["backbone.blocks.0.hook_resid_pre"])
    assert torch.allclose(h, cache["backbone.blocks.0.hook_resid_post"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("variant", Bijection.variants)
def test_every_arch_runs_every_variant(arch, variant):
    preset = get_preset("bijection", arch, "lite", variant=variant)
    t = Bijection(**{k: v for k, v in preset.tunnel.items() if k != "tunnel"})
    model = build_model(preset.model)
    ep = t.sample(3, gen())
    logits = model(ep.inputs, ep.positions)
    assert logits.shape == (3, len(ep.positions), t.V)
    assert model(ep.inputs).shape == (3, t.seq_len, t.V)


@pytest.mark.parametrize("arch", ARCHS)
def test_causal(arch):
    model = build_model(ModelConfig(arch=arch, **SMALL))
    x = Bijection().sample(2, gen()).inputs
    y = x.clone()
    y[:, 20:] = (y[:, 20:] + 1) % 40
    a, b = model(x), model(y)
    assert torch.allclose(a[:, :20], b[:, :20], atol=1e-6)
    assert not torch.allclose(a[:, 20:], b[:, 20:])


def test_mlp_control_never_mixes_positions():
    model = build_model(ModelConfig(arch="mlp", **SMALL))
    x = Bijection().sample(2, gen()).inputs
    y = x.clone()
    y[:, 5] = (y[:, 5] + 1) % 40
    diff = (model(x) - model(y)).abs().amax(dim=(0, 2))
    assert diff[5] > 0 and diff[torch.arange(37) != 5].max() == 0


def test_tied_head_uses_the_answer_token_embeddings():
    model = build_model(ModelConfig(arch="transformer", **SMALL))
    x = Bijection().sample(2, gen()).inputs
    _, cache = run_with_cache(model, x, names=["hook_final"])
    manual = cache["hook_final"] @ model.embed.tok.weight[20:40].T
    assert torch.allclose(model(x), manual, atol=1e-6)


def test_hook_points_and_cache_cleanup():
    model = build_model(ModelConfig(arch="transformer", **SMALL))
    names = hook_names(model)
    for n in ["hook_embed", "backbone.blocks.0.attn.hook_pattern", "backbone.blocks.1.hook_resid_post",
              "backbone.blocks.0.attn.hook_q", "backbone.blocks.0.attn.hook_z", "hook_final", "hook_logits"]:
        assert n in names
    x = Bijection().sample(2, gen()).inputs
    out, cache = run_with_cache(model, x, names=["backbone.blocks.0.attn.hook_pattern"])
    assert list(cache) == ["backbone.blocks.0.attn.hook_pattern"]
    pat = cache["backbone.blocks.0.attn.hook_pattern"]
    assert pat.shape == (2, 4, 37, 37)
    assert torch.allclose(pat.sum(-1), torch.ones(2, 4, 37))
    assert torch.equal(pat.triu(1), torch.zeros_like(pat))
    with pytest.raises(RuntimeError):
        with capture(model, ["hook_final"]):
            raise RuntimeError("boom")
    assert all(not m._forward_hooks for m in model.modules())
    with pytest.raises(ValueError, match="unknown hook point"):
        run_with_cache(model, x, names=["nope"])


def test_head_mask_zero_ablates_and_restores():
    model = build_model(ModelConfig(arch="transformer", **SMALL))
    x = Bijection().sample(2, gen()).inputs
    base = model(x)
    name = "backbone.blocks.0.attn.hook_z"
    with ablate_heads(model, [(0, 1)]):
        out, cache = run_with_cache(model, x, names=[name])
        assert torch.equal(cache[name][:, 1], torch.zeros_like(cache[name][:, 1]))
        assert not torch.allclose(out, base)
    assert torch.equal(model(x), base)
    with pytest.raises(ValueError, match="out of range"):
        with ablate_heads(model, [(5, 0)]):
            pass


@pytest.mark.parametrize("arch", ARCHS)
def test_bypass_skips_a_block(arch):
    model = build_model(ModelConfig(arch=arch, **SMALL))
    x = Bijection().sample(2, gen()).inputs
    base = model(x)
    with bypass_layers(model, [1]):
        _, cache = run_with_cache(model, x, names=["backbone.blocks.0.hook_resid_post", "hook_final"])
        final = model.norm_f(cache["backbone.blocks.0.hook_resid_post"])
        assert torch.allclose(cache["hook_final"], final, atol=1e-6)
    assert torch.equal(model(x), base)


def test_model_config_errors():
    with pytest.raises(ValueError, match="divisible"):
        build_model(ModelConfig(arch="transformer", **{**SMALL, "n_heads": 5}))
    with pytest.raises(ValueError, match="unknown arch 'rnn'; allowed: transformer, mlp, lstm, mamba"):
        build_model(ModelConfig(arch="rnn", **SMALL))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ModelConfig(**{**SMALL, "answer_tokens": (39, 40)})
    model = build_model(ModelConfig(arch="transformer", **{**SMALL, "n_positions": 10}))
    with pytest.raises(ValueError, match="exceeds the position table"):
        model(Bijection().sample(1, gen()).inputs)


@pytest.mark.parametrize("arch", ARCHS)
def test_feature_adapter(arch):
    cfg = ModelConfig(arch=arch, d_model=32, n_layers=2, n_heads=4, vocab_size=0, n_features=5,
                      n_positions=12, n_outputs=3)
    model = build_model(cfg)
    assert model(torch.randn(2, 12, 5), torch.arange(0, 12, 3)).shape == (2, 4, 3)
    with pytest.raises(ValueError, match=r"shape \(B, T, 5\)"):
        model(torch.randn(2, 12, 4))
    with pytest.raises(ValueError, match="tied head"):
        ModelConfig(arch=arch, vocab_size=10, n_features=5, answer_tokens=(1, 2))


def test_rotary_scores_depend_on_the_offset_only():
    from bwt_lite.models.transformer import rotary
    g = gen()
    q, k = torch.randn(1, 1, 1, 16, generator=g, dtype=torch.float64), torch.randn(1, 1, 1, 16, generator=g, dtype=torch.float64)
    T = 12
    rq, rk = rotary(q.expand(1, 1, T, 16)), rotary(k.expand(1, 1, T, 16))
    scores = (rq @ rk.transpose(-2, -1))[0, 0]  # (T, T): the same q and k placed at every position
    assert torch.allclose(rq.norm(dim=-1), q.norm().expand(1, 1, T), rtol=0, atol=1e-12)  # a rotation keeps lengths
    for offset in range(T):
        diag = scores.diagonal(-offset)  # query at t, key at t - offset
        assert torch.allclose(diag, diag[0].expand_as(diag), rtol=0, atol=1e-12)
    assert torch.allclose(scores[0, 0], (q * k).sum())  # position 0 is not rotated
    assert not torch.allclose(scores.diagonal(-1)[0], scores[0, 0])


def test_rope_model_config_and_key():
    preset = get_preset("hmm", "transformer", "lite")
    assert "rope" not in preset.to_dict()["model"]  # the default is left out: shipped keys are unchanged
    cfg = ModelConfig(**{**SMALL, "rope": True})
    assert key_fields(cfg)["rope"] is True and ModelConfig.from_dict(key_fields(cfg)) == cfg
    model = build_model(cfg)
    plain = build_model(ModelConfig(**SMALL))
    plain.load_state_dict(model.state_dict())  # no new weights: the same parameters, rotated scores
    x = Bijection().sample(2, gen()).inputs
    assert model(x).shape == plain(x).shape and not torch.allclose(model(x), plain(x))
    y = x.clone()
    y[:, 20:] = (y[:, 20:] + 1) % 40
    assert torch.allclose(model(x)[:, :20], model(y)[:, :20], atol=1e-6)  # still causal
    with pytest.raises(ValueError, match="rope"):
        build_model(ModelConfig(arch="mlp", **{**SMALL, "rope": True}))
    with pytest.raises(ValueError, match="even head dimension"):
        build_model(ModelConfig(**{**SMALL, "d_model": 36, "n_heads": 4, "rope": True}))


def test_rope_model_trains_after_inference_mode():
    model = build_model(ModelConfig(**{**SMALL, "rope": True, "n_positions": 41}))
    x = Bijection().sample(2, gen()).inputs[:, :41 - 2]  # a length no other test uses: a fresh rotation
    with torch.inference_mode():
        model(x)
    model(x).sum().backward()  # the cached rotation is usable outside inference mode
    assert model.backbone.blocks[0].attn.q.weight.grad is not None
