"""Head and layer ablation: the head mask removes exactly one head's term, bypassing every block
leaves the embedding, the model is always restored (also after an error), and constructed
models with known answers (a head or block that contributes nothing has ratio exactly 1)."""
import pytest
import torch
from matplotlib.figure import Figure

from bwt_lite.evaluate import evaluate
from bwt_lite.geometry.ablation import (format_head_ablation, format_layer_ablation, head_ablation,
                                        layer_ablation)
from bwt_lite.plotting.attention import plot_head_ablation, plot_layer_ablation, plot_layer_ablation_curves
from bwt_lite.models import ARCHS, ModelConfig, ablate_heads, build_model, bypass_layers, run_with_cache
from bwt_lite.tunnels.bijection import Bijection
from conftest import gen

ANSWERS = tuple(range(20, 40))


def small(arch: str = "transformer", n_layers: int = 2, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(ModelConfig(arch=arch, d_model=32, n_layers=n_layers, n_heads=4, vocab_size=40,
                                   n_positions=38, answer_tokens=ANSWERS)).eval()


@pytest.mark.parametrize("head", [0, 3])
def test_zeroing_a_head_through_the_mask_equals_removing_its_term_by_hand(head):
    model = small(n_layers=1)
    x = Bijection().sample(3, gen(1)).inputs
    names = ["backbone.blocks.0.hook_resid_pre", "backbone.blocks.0.attn.hook_z", "backbone.blocks.0.hook_attn_out"]
    with torch.no_grad():
        full, cache = run_with_cache(model, x, names=names)
        with ablate_heads(model, [(0, head)]):
            ablated = model(x)
        blk = model.backbone.blocks[0]
        dh = blk.attn.d_head
        z = cache["backbone.blocks.0.attn.hook_z"][:, head]  # (B, T, dh): this head's output
        term = z @ blk.attn.o.weight[:, head * dh:(head + 1) * dh].T  # its term in the o projection
        attn_out = cache["backbone.blocks.0.hook_attn_out"] - term
        mid = cache["backbone.blocks.0.hook_resid_pre"] + attn_out
        post = mid + blk.mlp(blk.ln2(mid))
        by_hand = model.norm_f(post) @ model.embed.tok.weight[list(ANSWERS)].T
    assert torch.allclose(ablated, by_hand, atol=1e-5)
    assert not torch.allclose(ablated, full, atol=1e-3)  # the head did contribute
    assert torch.equal(model.backbone.head_mask, torch.ones(1, 4))


@pytest.mark.parametrize("arch", ARCHS)
def test_bypassing_every_block_leaves_the_embedding(arch):
    model = small(arch)
    x = Bijection().sample(2, gen(2)).inputs
    with torch.no_grad():
        with bypass_layers(model, range(len(model.backbone.blocks))):
            out = model(x)
        by_hand = model.norm_f(model.embed(x)) @ model.embed.tok.weight[list(ANSWERS)].T
        assert torch.allclose(out, by_hand, atol=1e-6)
        assert not torch.allclose(model(x), by_hand, atol=1e-3)
    assert model.backbone.bypass == set()


def test_head_with_no_output_has_ablation_ratio_exactly_one():
    model = small()
    tunnel = Bijection()
    with torch.no_grad():  # head 2 of layer 0 writes nothing: its columns of W_O are zero
        model.backbone.blocks[0].attn.o.weight[:, 16:24] = 0
    res = head_ablation(model, tunnel, layers=None, episodes=64)
    assert res.mae[0, 2].item() == pytest.approx(res.baseline_mae, abs=1e-12)
    assert res.ratio()[0, 2].item() == pytest.approx(1.0)
    # every entry is the held-out evaluation under that ablation
    with ablate_heads(model, [(1, 3)]):
        direct = evaluate(model, tunnel, episodes=64, seed=0)
    assert res.mae[1, 3].item() == pytest.approx(direct.entropy_mae_bits)
    assert res.kl[1, 3].item() == pytest.approx(direct.kl_bits)
    assert res.frame_head(0) == int(res.mae[0].argmax())
    assert res.baseline_mae == pytest.approx(evaluate(model, tunnel, episodes=64).entropy_mae_bits)
    only0 = head_ablation(model, tunnel, episodes=64)  # default: layer 0 only
    assert only0.layers == [0] and torch.isnan(only0.mae[1]).all()
    with pytest.raises(ValueError, match="not ablated"):
        only0.frame_head(1)
    assert "head 3" in format_head_ablation(res)


def test_identity_block_has_layer_ablation_ratio_exactly_one():
    model = small()
    with torch.no_grad():  # block 1 adds nothing to the residual stream
        blk = model.backbone.blocks[1]
        blk.attn.o.weight.zero_()
        blk.mlp.proj.weight.zero_()
        blk.mlp.proj.bias.zero_()
    res = layer_ablation(model, Bijection(), episodes=64)
    assert res.error_ratio[1] == pytest.approx(1.0, abs=1e-9) and res.kl_ratio[1] == pytest.approx(1.0, abs=1e-9)
    assert res.error_ratio[0] == pytest.approx(res.mae[0] / res.baseline_mae)
    assert len(res.per_position) == 2 and len(res.per_position[0]) == 19
    assert res.baseline_per_position == pytest.approx(res.per_position[1])  # the identity block changes nothing
    assert "bypass block 1" in format_layer_ablation(res, 10)


class FailingTunnel(Bijection):
    """A bijection tunnel whose sampling fails after ``ok`` calls (to break an ablation midway)."""

    def __init__(self, ok: int):
        super().__init__()
        self.ok = ok

    def sample(self, batch_size, generator):
        if self.ok == 0:
            raise RuntimeError("sampling failed")
        self.ok -= 1
        return super().sample(batch_size, generator)


def test_mask_and_bypass_are_restored_even_when_an_ablation_fails():
    model = small()
    model.backbone.head_mask[1, 0] = 0.0  # a state set by the user must survive too
    model.backbone.bypass = {1}
    mask, bypass = model.backbone.head_mask.clone(), set(model.backbone.bypass)
    with pytest.raises(RuntimeError, match="sampling failed"):
        head_ablation(model, FailingTunnel(ok=3), layers=None, episodes=8)  # fails with head (0, 2) removed
    assert torch.equal(model.backbone.head_mask, mask) and model.backbone.bypass == bypass
    with pytest.raises(RuntimeError, match="sampling failed"):
        layer_ablation(model, FailingTunnel(ok=1), episodes=8)  # fails with block 0 bypassed
    assert torch.equal(model.backbone.head_mask, mask) and model.backbone.bypass == bypass
    head_ablation(model, Bijection(), layers=[0], episodes=8)
    layer_ablation(model, Bijection(), episodes=8)
    assert torch.equal(model.backbone.head_mask, mask) and model.backbone.bypass == bypass
    assert not model.training


def test_ablation_errors_name_the_argument():
    with pytest.raises(ValueError, match="no attention heads"):
        head_ablation(small("mlp"), Bijection(), episodes=8)
    with pytest.raises(ValueError, match="layers"):
        head_ablation(small(), Bijection(), layers=[7], episodes=8)
    with pytest.raises(ValueError, match="episodes"):
        layer_ablation(small(), Bijection(), episodes=0)
    # layer ablation works for every architecture with blocks
    assert len(layer_ablation(small("lstm"), Bijection(), episodes=8).mae) == 2


def test_ablation_plots():
    model = small()
    ha = head_ablation(model, Bijection(), layers=None, episodes=16)
    la = layer_ablation(model, Bijection(), episodes=16)
    assert isinstance(plot_head_ablation(ha, paper=(0.114, 0.162)), Figure)
    assert isinstance(plot_layer_ablation(la, paper_ratio=10), Figure)
    assert isinstance(plot_layer_ablation_curves(la, plateau=1.107), Figure)
