"""The paper presets are the authors' production recipe (Paper I's model and training setup), exactly."""
from dataclasses import replace

import pytest
import torch

from bwt_lite.models import build_model
from bwt_lite.recipes import PAPER_DEPTH_TRAIN, get_preset
from bwt_lite.train import lr_at, make_optimizer


@pytest.mark.parametrize("arch, params, layers", [("transformer", 2_677_440, 6), ("mlp", 2_681_472, 9)])
def test_bijection_paper_models_match_paper_i(arch, params, layers):
    p = get_preset("bijection", arch, "paper")
    with torch.device("meta"):
        model = build_model(p.model)
    assert model.n_params == params
    m = p.model
    assert (m.d_model, m.n_layers, m.vocab_size, m.n_positions) == (192, layers, 40, 38)
    if arch == "transformer":
        assert m.n_heads == 6 and m.d_model // m.n_heads == 32
    assert p.tunnel == {"tunnel": "bijection", "V": 20, "L": 19, "variant": "separate"}


@pytest.mark.parametrize("tunnel, arch", [("bijection", "transformer"), ("bijection", "mlp"), ("hmm", "transformer"),
                                          ("recall", "transformer"), ("regression", "transformer")])
def test_paper_training_recipe_matches_paper_i(tunnel, arch):
    t = get_preset(tunnel, arch, "paper").train
    assert (t.lr, t.weight_decay, t.warmup_steps, t.min_lr_ratio, t.grad_clip, t.batch_size) == (3e-4, 0.1, 2_000, 0.0, 1.0, 256)
    assert 20_000 <= t.steps <= 50_000 and t.value_lr_mult == 1.0
    assert t.target == ("soft" if tunnel == "hmm" else "sampled")  # the authors' HMM recipe used soft targets
    assert lr_at(0, t) == pytest.approx(3e-4 / 2_000) and lr_at(1_999, t) == pytest.approx(3e-4)
    assert lr_at(t.steps, t) == pytest.approx(0.0, abs=1e-15)  # cosine to zero
    mid = 2_000 + (t.steps - 2_000) // 2
    assert lr_at(mid, t) == pytest.approx(1.5e-4, rel=1e-3)


def test_paper_optimizer_is_adamw_with_decay_on_matrices_only():
    p = get_preset("bijection", "transformer", "paper")
    model = build_model(p.model)
    opt = make_optimizer(model, p.train)
    assert isinstance(opt, torch.optim.AdamW)
    for g in opt.param_groups:
        assert g["weight_decay"] == (0.1 if all(q.dim() >= 2 for q in g["params"]) else 0.0)


def test_hmm_paper_transformer_is_the_papers_text():
    m = get_preset("hmm", "transformer", "paper").model
    assert (m.n_layers, m.n_heads, m.d_model) == (9, 8, 256)


@pytest.mark.parametrize("tunnel, layers", [("bijection", 6), ("hmm", 9)])
def test_paper_depth_lite_models_have_the_papers_layers(tunnel, layers):
    deep, default = get_preset(tunnel, "transformer", depth="paper"), get_preset(tunnel, "transformer")
    assert deep.model.n_layers == layers and deep.model.d_model // deep.model.n_heads == default.model.d_model // default.model.n_heads
    assert deep.name == default.name.replace("-lite", f"-lite-{layers}L") and deep.key() != default.key()
    # the same recipe, but for the training fields PAPER_DEPTH_TRAIN changes (the 9-layer HMM model's longer run)
    assert deep.train == replace(default.train, **PAPER_DEPTH_TRAIN.get((tunnel, "transformer"), {}))
    assert (tunnel == "hmm") == (deep.train.steps > default.train.steps)


@pytest.mark.parametrize("tunnel, arch, scale", [("recall", "transformer", "lite"), ("bijection", "mamba", "lite"),
                                                 ("bijection", "transformer", "paper")])
def test_paper_depth_is_refused_where_no_such_model_exists(tunnel, arch, scale):
    with pytest.raises(ValueError, match="depth='paper'"):
        get_preset(tunnel, arch, scale, depth="paper")


@pytest.mark.parametrize("variant", [None, "slow"])
def test_every_lite_hmm_cell_sees_the_same_number_of_training_episodes(variant):
    from bwt_lite.recipes import HMM_EPISODES

    for arch in ("transformer", "mlp", "lstm", "mamba"):
        t = get_preset("hmm", arch, "lite", variant=variant).train
        assert t.steps * t.batch_size == HMM_EPISODES and t.steps // t.eval_every == 20, arch


@pytest.mark.parametrize("tunnel", ["bijection", "recall", "regression"])
def test_no_lite_cell_sees_more_episodes_than_the_transformer(tunnel):
    """Bijection, recall and regression: the lite transformer's episodes are the budget. The MLP controls
    (which never realise a primitive) and the recall LSTM get all of it; the regression LSTM and Mamba
    the steps that fit in the transformer's training time; the others realise their primitive with less."""
    from bwt_lite.recipes import EQUAL_EPISODES, TIME_CAPPED_EPISODES

    budget = EQUAL_EPISODES[tunnel]
    t = get_preset(tunnel, "transformer", "lite").train
    assert t.steps * t.batch_size == budget
    for arch in ("mlp", "lstm", "mamba"):
        r = get_preset(tunnel, arch, "lite").train
        seen = r.steps * r.batch_size
        assert seen <= budget, arch
        if arch == "mlp" or (tunnel, arch) == ("recall", "lstm"):
            assert seen == budget and r.steps // r.eval_every == 20, arch
        if (tunnel, arch) in TIME_CAPPED_EPISODES:
            assert seen == TIME_CAPPED_EPISODES[(tunnel, arch)] < budget, arch
