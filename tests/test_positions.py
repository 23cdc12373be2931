"""Position schemes (``ModelConfig.positions``): learned table, sinusoidal table, rotary alone, ALiBi, none.

Each builds and runs past the learned table's length (learned refuses it), the sinusoidal table is the
closed form, rotary scores depend on relative positions only, ALiBi adds the closed-form recency bias, "none" sees its prefix as a set, the
config and a checkpoint keep the scheme, and the default leaves every existing key unchanged."""
import json
import math

import pytest
import torch

from bwt_lite.checkpoints import checkpoint_dir, load_checkpoint, load_or_train
from bwt_lite.cli import eval_tunnel, main
from bwt_lite.models import POSITIONS, ModelConfig, build_model, run_with_cache, sinusoidal_table
from bwt_lite.models.positions import SINUSOIDAL_SCALE, SinusoidalPositions
from bwt_lite.recipes import get_preset, shipped_presets
from bwt_lite.recipes.key_schema import key_fields
from bwt_lite.tunnels import Bijection
from conftest import gen

SMALL = dict(d_model=32, n_layers=2, n_heads=4, vocab_size=40, n_positions=10, answer_tokens=tuple(range(20, 40)))
SCORES = "backbone.blocks.0.attn.hook_scores"


def model_of(positions: str, seed: int = 0, **kw):
    torch.manual_seed(seed)
    return build_model(ModelConfig(**{**SMALL, "positions": positions, **kw}))


def tokens(n: int = 2, seed: int = 0) -> torch.Tensor:
    return Bijection().sample(n, gen(seed)).inputs  # (n, 37): longer than the 10 rows of SMALL's table


@pytest.mark.parametrize("positions", POSITIONS)
def test_every_scheme_runs_past_the_table_length_except_learned(positions):
    model, x = model_of(positions), tokens()
    if positions == "learned":
        with pytest.raises(ValueError, match="exceeds the position table"):
            model(x)
        return
    assert model(x).shape == (2, 37, 20)
    has_table = any(name.startswith("embed.pos") for name in model.state_dict())
    assert not has_table  # no position parameters and nothing stored: only "learned" has a table
    n_learned = model_of("learned").n_params
    assert model.n_params == n_learned - SMALL["n_positions"] * SMALL["d_model"]


@pytest.mark.parametrize("arch", ["mlp", "lstm", "mamba"])
@pytest.mark.parametrize("positions", ["sinusoidal", "none"])
def test_other_architectures_take_the_table_free_schemes(arch, positions):
    model = build_model(ModelConfig(arch=arch, **{**SMALL, "positions": positions}))
    assert model(tokens()).shape == (2, 37, 20)


def test_float_feature_models_take_every_table_scheme():
    for positions in ("sinusoidal", "none"):
        cfg = ModelConfig(d_model=16, n_layers=1, n_heads=2, n_features=3, n_positions=4, n_outputs=2,
                          positions=positions)
        assert build_model(cfg)(torch.randn(2, 9, 3)).shape == (2, 9, 2)


@pytest.mark.parametrize("d", [8, 7])
def test_sinusoidal_table_is_the_closed_form(d):
    table = sinusoidal_table(12, d, torch.device("cpu"), torch.float64)
    for t in range(12):
        for j in range(d):
            angle = t / 10_000 ** ((j - j % 2) / d)  # dimensions 2i and 2i + 1 share the frequency of i
            want = SINUSOIDAL_SCALE * (math.sin(angle) if j % 2 == 0 else math.cos(angle))
            assert table[t, j].item() == pytest.approx(want, abs=1e-12)
    if d % 2 == 0:  # each row: d/2 pairs sin^2 + cos^2 = 1, scaled to an RMS of 0.02
        torch.testing.assert_close(table.pow(2).mean(1).sqrt(), torch.full((12,), 0.02, dtype=torch.float64))


def test_sinusoidal_model_adds_the_table_to_the_token_embedding():
    model, x = model_of("sinusoidal"), tokens()
    assert isinstance(model.embed.pos, SinusoidalPositions)
    _, cache = run_with_cache(model, x, names=["hook_embed"])
    want = model.embed.tok(x) + sinusoidal_table(37, 32, x.device, torch.float32)
    torch.testing.assert_close(cache["hook_embed"], want, rtol=0, atol=0)


def test_sinusoidal_model_trains_after_inference_mode():
    model, x = model_of("sinusoidal"), tokens()[:, :29]  # a length no other test uses: a fresh table
    with torch.inference_mode():
        model(x)
    model(x).sum().backward()  # the cached table is usable outside inference mode
    assert model.embed.tok.weight.grad is not None


def test_rotary_scores_depend_on_relative_positions_only():
    """Layer 0 of a rotary model: q and k are functions of the token, rotated by position, so the score
    of the same two tokens is the same wherever the pair sits. A prefix shifts every position."""
    x = tokens(2)[:, :15]
    shifted = torch.cat([tokens(2, seed=1)[:, :6], x], dim=1)  # the same tokens at positions 6..20
    rotary, learned = model_of("rotary", n_positions=38).double(), model_of("learned", n_positions=38).double()
    assert rotary.embed.pos is None and rotary.backbone.blocks[0].attn.rope
    for model, same in ((rotary, True), (learned, False)):
        _, a = run_with_cache(model, x, names=[SCORES])
        _, b = run_with_cache(model, shifted, names=[SCORES])
        close = torch.allclose(b[SCORES][..., 6:, 6:], a[SCORES], rtol=0, atol=1e-10)
        assert close is same


def test_alibi_adds_a_linear_recency_bias_to_the_scores():
    """ALiBi: the same weights with and without it differ in the scores by exactly -m_h (i - j) below the
    diagonal, slopes 2^(-8h/H); so the bias depends on the offset only, and the model runs at any length."""
    from bwt_lite.models.transformer import alibi_slopes
    assert torch.allclose(alibi_slopes(4), torch.tensor([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8], dtype=torch.float64))
    x = tokens(2)
    alibi, none = model_of("alibi").double(), model_of("none").double()
    none.load_state_dict(alibi.state_dict())
    assert alibi.embed.pos is None and alibi.backbone.blocks[0].attn.alibi
    _, a = run_with_cache(alibi, x, names=[SCORES])
    _, b = run_with_cache(none, x, names=[SCORES])
    i = torch.arange(37, dtype=torch.float64)
    expected = -alibi_slopes(4)[:, None, None] * (i[:, None] - i[None, :])  # (H, T, T)
    below = torch.ones(37, 37, dtype=torch.bool).tril()
    diff = (a[SCORES] - b[SCORES])[:, :, below]
    assert torch.allclose(diff, expected[:, below].expand_as(diff), rtol=0, atol=1e-10)
    assert torch.isinf(a[SCORES][:, :, ~below]).all()  # still causal


def test_alibi_on_the_learned_table_keeps_the_table_and_adds_the_bias():
    """``alibi=True``: the learned table's parameters and the same recency bias as ``positions="alibi"``."""
    x = tokens(2)[:, :10]
    both, table = model_of("learned", alibi=True).double(), model_of("learned").double()
    table.load_state_dict(both.state_dict())  # the same weights, table included
    assert both.embed.pos is not None and both.backbone.blocks[0].attn.alibi and both.n_params == table.n_params
    _, a = run_with_cache(both, x, names=[SCORES])
    _, b = run_with_cache(table, x, names=[SCORES])
    assert torch.allclose(a[SCORES][0, 0, 9, :10] - b[SCORES][0, 0, 9, :10],
                          -0.25 * torch.arange(9, -1, -1, dtype=torch.float64), rtol=0, atol=1e-10)  # slope 2^-2 (H = 4)
    cfg = ModelConfig(**{**SMALL, "alibi": True})
    assert key_fields(cfg)["alibi"] is True and "alibi" not in key_fields(ModelConfig(**SMALL))
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    preset = get_preset("hmm", "transformer", variant="slow", alibi=True)
    assert preset.name == "hmm-slow-transformer-lite-alibi-soft" and preset.model.alibi
    assert preset.train == get_preset("hmm", "transformer", variant="slow").train
    with pytest.raises(ValueError, match="alibi=True adds ALiBi's recency bias to the learned table"):
        ModelConfig(**{**SMALL, "alibi": True, "positions": "none"})
    with pytest.raises(ValueError, match="alibi=True .* is for the transformer"):
        ModelConfig(arch="lstm", **{**SMALL, "alibi": True})


def test_rotary_is_not_none():
    x = tokens()
    rotary, none = model_of("rotary"), model_of("none")
    none.load_state_dict(rotary.state_dict())  # the same weights: only the rotation differs
    assert not torch.allclose(rotary(x), none(x))


def test_none_sees_its_prefix_as_a_set():
    """No position input: one causal attention layer reads the keys before a query as a set, so the
    output at the last position does not change when the tokens before it are permuted."""
    x = tokens()
    y = x.clone()
    y[:, :-1] = x[:, :-1][:, torch.randperm(36, generator=gen(3))]
    assert not torch.equal(x, y)
    for positions, same in (("none", True), ("sinusoidal", False)):
        model = model_of(positions, n_layers=1)
        close = torch.allclose(model(x)[:, -1], model(y)[:, -1], rtol=0, atol=1e-5)
        assert close is same, positions


@pytest.mark.parametrize("positions", POSITIONS)
def test_config_round_trip(positions):
    cfg = ModelConfig(**{**SMALL, "positions": positions})
    d = key_fields(cfg)
    assert ("positions" in d) is (positions != "learned")  # the key leaves the default out
    assert ModelConfig.from_dict(d) == cfg and ModelConfig.from_dict(json.loads(json.dumps(d))) == cfg
    assert ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg  # every field written
    assert cfg.rotary is (positions == "rotary")


def test_the_default_leaves_every_shipped_key_and_name_unchanged():
    for preset in shipped_presets():  # the learned table, written as before positions existed
        if preset.model.positions == "learned":
            assert "positions" not in preset.to_dict()["model"] and "-pos-" not in preset.name
        else:  # a scheme asked for on purpose (the recurrence's length control) is in its name and key
            assert preset.to_dict()["model"]["positions"] in preset.name
    # the lite HMM transformer's key, as before positions existed (its shipped checkpoint is keyed by it)
    assert get_preset("hmm", "transformer").key()[:16] == "88ad46dae15bb2b1"
    assert get_preset("hmm", "transformer", positions="learned") == get_preset("hmm", "transformer")


def test_the_lite_recall_and_slow_hmm_recipes_add_alibi_and_nothing_else_does():
    """The recipe's choice (``alibi=None``) is on for the lite recall and slow-HMM transformers only; asked
    for, it can be left out, and other schemes or depths never get it."""
    recipe = get_preset("recall", "transformer")
    assert recipe.model.alibi and recipe.name == "recall-transformer-lite-alibi"
    table = get_preset("recall", "transformer", alibi=False)
    assert not table.model.alibi and table.name == "recall-transformer-lite" and table.train == recipe.train
    assert table.key() != recipe.key()
    assert not get_preset("recall", "transformer", "paper").model.alibi  # the paper's model: the table alone
    assert get_preset("recall", "transformer", positions="rotary").model.positions == "rotary"  # no ALiBi added
    assert not get_preset("recall", "transformer", positions="rotary").model.alibi
    assert get_preset("recall", "transformer", variant="mqar").model.alibi
    assert not any(get_preset(t, "transformer").model.alibi for t in ("bijection", "hmm", "regression"))
    slow = get_preset("hmm", "transformer", variant="slow", alibi=False)
    assert slow.name == "hmm-slow-transformer-lite-soft" and slow.train == get_preset("hmm", "transformer", variant="slow").train
    assert not get_preset("hmm", "transformer", variant="slow", positions="rotary").model.alibi
    assert sorted(p.name for p in shipped_presets() if p.model.alibi) == ["hmm-slow-transformer-lite-alibi-soft",
                                                                         "recall-transformer-lite-alibi"]


def test_cli_alibi_follows_the_recipe_unless_told(capsys):
    assert main(["info", "recall", "transformer", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "recall-transformer-lite-alibi" and out["model"]["alibi"] is True
    assert main(["info", "recall", "transformer", "--no-alibi", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "recall-transformer-lite" and "alibi" not in out["model"]
    assert main(["info", "recall", "mlp", "--json"]) == 0  # the recipe's choice is the transformer's only
    assert "alibi" not in json.loads(capsys.readouterr().out)["model"]


def test_preset_names_and_keys_of_the_schemes():
    presets = {s: get_preset("hmm", "transformer", positions=s) for s in POSITIONS}
    assert presets["sinusoidal"].name == "hmm-transformer-lite-pos-sinusoidal-soft"
    assert presets["none"].name == "hmm-transformer-lite-pos-none-soft"
    assert presets["alibi"].name == "hmm-transformer-lite-pos-alibi-soft"
    assert len({p.key() for p in presets.values()}) == len(POSITIONS)
    assert all(p.train == presets["learned"].train for p in presets.values())  # only the positions differ


def test_bad_choices_raise():
    with pytest.raises(ValueError, match="unknown positions 'absolute'; allowed: learned, sinusoidal, rotary, alibi, none"):
        ModelConfig(**{**SMALL, "positions": "absolute"})
    with pytest.raises(ValueError, match="unknown positions"):
        get_preset("hmm", "transformer", positions="absolute")
    with pytest.raises(ValueError, match="positions='rotary'.*transformer, not arch='mlp'"):
        ModelConfig(arch="mlp", **{**SMALL, "positions": "rotary"})
    with pytest.raises(ValueError, match="positions='rotary'.*transformer"):
        get_preset("hmm", "lstm", positions="rotary")
    with pytest.raises(ValueError, match="positions='alibi'.*transformer, not arch='lstm'"):
        ModelConfig(arch="lstm", **{**SMALL, "positions": "alibi"})
    with pytest.raises(ValueError, match="positions='rotary' needs an even head dimension"):
        build_model(ModelConfig(**{**SMALL, "d_model": 36, "n_heads": 4, "positions": "rotary"}))
    with pytest.raises(ValueError, match="rope=True adds rotary embedding to the learned table"):
        ModelConfig(**{**SMALL, "rope": True, "positions": "sinusoidal"})


def test_a_checkpoint_keeps_its_scheme(isolated_cache):
    p = get_preset("bijection", "transformer", "lite", positions="sinusoidal", steps=2, batch_size=8, eval_every=2,
                   eval_episodes=16, warmup_steps=1)
    trained, _ = load_or_train(p, progress=False, log=lambda _: None)
    model, meta = load_checkpoint(checkpoint_dir(p))  # rebuilt from the stored configuration alone
    assert model.cfg.positions == "sinusoidal" and isinstance(model.embed.pos, SinusoidalPositions)
    assert model.cfg == p.model and meta["train_steps"] == 2
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), trained.state_dict().values()))
    x = tokens()
    torch.testing.assert_close(model(x), trained.eval()(x), rtol=0, atol=0)


def test_cli_positions_option(capsys):
    assert main(["info", "hmm", "transformer", "--positions", "rotary", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "hmm-transformer-lite-pos-rotary-soft" and out["model"]["positions"] == "rotary"
    assert out["key"] == get_preset("hmm", "transformer", positions="rotary").key()
    assert main(["info", "hmm", "transformer", "--json"]) == 0
    assert "positions" not in json.loads(capsys.readouterr().out)["model"]
    with pytest.raises(SystemExit) as exit_:
        main(["info", "hmm", "mlp", "--positions", "rotary"])
    assert exit_.value.code == 2 and "--positions rotary" in capsys.readouterr().err
    assert main(["info", "hmm", "transformer", "--variant", "slow", "--alibi", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "hmm-slow-transformer-lite-alibi-soft" and out["model"]["alibi"] is True
    with pytest.raises(SystemExit) as exit_:
        main(["info", "hmm", "transformer", "--positions", "none", "--alibi"])
    assert exit_.value.code == 2 and "--alibi" in capsys.readouterr().err


def test_eval_length_past_the_table_only_without_a_learned_one():
    assert eval_tunnel(get_preset("hmm", "transformer", positions="none"), 60).config()["K"] == 60
    with pytest.raises(ValueError, match="exceed the model's position table"):
        eval_tunnel(get_preset("hmm", "transformer"), 60)
    with pytest.raises(ValueError, match=r"4x the position table's rows.*at most --length 279"):
        eval_tunnel(get_preset("hmm", "transformer", positions="sinusoidal"), 300)
