"""The transformer's fast paths: fused attention, the last block at the answer positions only, and the
cached head-mask check, each against the explicit reference path (numbers, gradients, hooks, training)."""
import math

import pytest
import torch
import torch.nn.functional as F

from bwt_lite.models import ModelConfig, ablate_heads, build_model, bypass_layers, run_with_cache
from bwt_lite.recipes import get_preset
from bwt_lite.train import init_model, make_optimizer, train_step
from bwt_lite.tunnels import Bijection, make_tunnel
from conftest import gen

# head dims 8 and 16 (scales 1/sqrt(dh) that are and are not powers of two), with and without rotary positions
# (on top of the learned table, and alone), and with the ALiBi recency bias (a per-head attention mask)
CONFIGS = [dict(d_model=32, n_heads=4), dict(d_model=48, n_heads=3), dict(d_model=32, n_heads=4, rope=True),
           dict(d_model=32, n_heads=4, positions="rotary"), dict(d_model=48, n_heads=3, positions="alibi")]


def model_of(seed: int = 0, **kw):
    torch.manual_seed(seed)
    return build_model(ModelConfig(arch="transformer", n_layers=2, vocab_size=40, n_positions=38,
                                   answer_tokens=tuple(range(20, 40)), **kw))


def assert_grads_close(grads, ref, what=""):
    """Every gradient equal to float rounding: within 1e-5 of that tensor's largest entry (sums of
    many products are rounded in another order, and an entry that cancels keeps only the rounding)."""
    for name, g in ref.items():
        err, scale = (grads[name] - g).abs().max().item(), g.abs().max().item()
        assert err <= 1e-5 * scale + 1e-7, f"{what} {name}: difference {err:.2e}, largest entry {scale:.2e}"


def logits_and_grads(model, method, x, positions=None):
    model.backbone.set_attention(method)
    model.zero_grad()
    out = model(x, positions)
    (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
    model.backbone.set_attention("auto")
    return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("with_positions", [False, True])
def test_fast_paths_equal_the_explicit_path(cfg, with_positions):
    """Fused attention ("sdpa"), the CPU default ("auto", which also computes the last block at the
    answer positions only) and the explicit path: the same logits and every parameter's gradient."""
    model = model_of(**cfg)
    ep = Bijection().sample(4, gen(1))
    positions = ep.positions if with_positions else None
    ref, ref_grads = logits_and_grads(model, "explicit", ep.inputs, positions)
    for method in ("sdpa", "auto"):
        out, grads = logits_and_grads(model, method, ep.inputs, positions)
        torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
        assert_grads_close(grads, ref_grads, method)


def test_the_last_block_at_the_answer_positions_only():
    """model(x, positions) computes only those rows in the last block: equal to the full forward
    there, also with the last block bypassed, with a head masked, and with a hook on the last block
    (which then sees every position)."""
    model = model_of(rope=True, d_model=32, n_heads=4)
    ep = Bijection().sample(3, gen(2))
    full = model(ep.inputs)[:, ep.positions]
    torch.testing.assert_close(model(ep.inputs, ep.positions), full, rtol=0, atol=1e-6)
    with bypass_layers(model, [1]):
        torch.testing.assert_close(model(ep.inputs, ep.positions), model(ep.inputs)[:, ep.positions], rtol=0, atol=1e-6)
    with ablate_heads(model, [(1, 2)]):
        torch.testing.assert_close(model(ep.inputs, ep.positions), model(ep.inputs)[:, ep.positions], rtol=0, atol=1e-6)
    name = "backbone.blocks.1.hook_resid_post"
    out, cache = run_with_cache(model, ep.inputs, ep.positions, names=[name, "hook_final"])
    assert cache[name].shape == (3, 37, 32) and cache["hook_final"].shape == (3, 37, 32)  # every position
    torch.testing.assert_close(out, full, rtol=0, atol=1e-6)


@pytest.mark.parametrize("method", ["auto", "sdpa"])
def test_a_hook_on_the_pattern_gets_the_pattern(method, monkeypatch):
    """With a hook on hook_pattern or hook_scores the explicit path runs (the fused kernel is not
    called) and the cached pattern is softmax(q k^T / sqrt(dh)) under the causal mask, computed here
    from the hooked q and k; without hooks the fused kernel runs again ("sdpa")."""
    calls = []
    sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **k: calls.append(1) or sdpa(*a, **k))
    model = model_of(d_model=48, n_heads=3)
    model.backbone.set_attention(method)
    ep = Bijection().sample(2, gen(3))
    names = [f"backbone.blocks.0.attn.{n}" for n in ("hook_q", "hook_k", "hook_pattern", "hook_scores")]
    for read in (names, names[:3], names[:2] + names[3:]):
        calls.clear()
        out, cache = run_with_cache(model, ep.inputs, ep.positions, names=read)
        assert (len(calls) == 1) == (method == "sdpa")  # layer 1 (no hook) still fused under "sdpa"
        q, k = cache[names[0]], cache[names[1]]
        scores = (q @ k.transpose(-2, -1) / math.sqrt(16)).masked_fill(torch.ones(37, 37).tril() == 0, float("-inf"))
        if names[2] in cache:
            pattern = cache[names[2]]
            assert pattern.shape == (2, 3, 37, 37) and torch.equal(pattern.triu(1), torch.zeros_like(pattern))
            torch.testing.assert_close(pattern, scores.softmax(-1), rtol=0, atol=1e-6)
        if names[3] in cache:
            torch.testing.assert_close(cache[names[3]], scores, rtol=0, atol=1e-5)
    calls.clear()
    model(ep.inputs, ep.positions)
    assert len(calls) == (2 if method == "sdpa" else 0)


@pytest.mark.parametrize("method", ["auto", "sdpa", "explicit"])
def test_head_masks_work_on_every_path(method, monkeypatch):
    """A masked head's output is zero and the logits equal a hand-built ablation, whichever the
    method; the mask check is cached and sees in-place changes to the mask, also direct writes."""
    model = model_of(d_model=32, n_heads=4)
    model.backbone.set_attention(method)
    ep = Bijection().sample(2, gen(4))
    base = model(ep.inputs, ep.positions)
    z = "backbone.blocks.0.attn.hook_z"
    with ablate_heads(model, [(0, 1)]):
        assert model.backbone.masked_layers() == (True, False)
        out, cache = run_with_cache(model, ep.inputs, ep.positions, names=[z])
        assert torch.equal(cache[z][:, 1], torch.zeros_like(cache[z][:, 1]))
    assert model.backbone.masked_layers() == (False, False)
    torch.testing.assert_close(model(ep.inputs, ep.positions), base, rtol=0, atol=0)
    with torch.no_grad():  # the same ablation by hand: the head's columns of the o projection set to zero
        saved = model.backbone.blocks[0].attn.o.weight.clone()
        model.backbone.blocks[0].attn.o.weight[:, 8:16] = 0
        by_hand = model(ep.inputs, ep.positions)
        model.backbone.blocks[0].attn.o.weight.copy_(saved)
    torch.testing.assert_close(out, by_hand, rtol=0, atol=1e-6)
    model.backbone.head_mask[1, 3] = 0.5  # a direct in-place write, not through ablate_heads
    assert model.backbone.masked_layers() == (False, True)
    assert not torch.allclose(model(ep.inputs, ep.positions), base)
    model.backbone.head_mask.fill_(1.0)
    assert model.backbone.masked_layers() == (False, False)
    with pytest.raises(ValueError, match="unknown method 'flash'"):
        model.backbone.set_attention("flash")


def test_training_gives_the_same_losses_with_and_without_the_fast_paths():
    """A tiny preset trained a few steps (the same episodes, fit's own step) with the reference path
    ("explicit") and with the fast ones: the same loss at every step. (The weights are not compared
    entry by entry: Adam divides by the gradient's running scale, so where a gradient is near zero its
    last-bit rounding can move that weight by a sizeable fraction of the learning rate.)"""
    preset = get_preset("bijection", "transformer", "lite", steps=6, batch_size=8, warmup_steps=2)
    tunnel = make_tunnel(**preset.tunnel)
    runs = {}
    for method in ("explicit", "auto", "sdpa"):
        model = init_model(preset.model, 0)
        model.backbone.set_attention(method)
        opt, g = make_optimizer(model, preset.train), gen(7)
        losses = [train_step(model, model, opt, tunnel.sample(8, g), preset.train, step,
                             device=torch.device("cpu")).item() for step in range(preset.train.steps)]
        runs[method] = losses
    for method in ("auto", "sdpa"):
        assert runs[method] == pytest.approx(runs["explicit"], abs=1e-6), method


def test_tunnel_sized_models_agree():
    """The lite bijection and HMM transformers (head dims 16 and 32) on their own episodes."""
    for tunnel in ("bijection", "hmm"):
        preset = get_preset(tunnel, "transformer", "lite")
        model = init_model(preset.model, 0)
        ep = make_tunnel(**preset.tunnel).sample(4, gen(5))
        ref, ref_grads = logits_and_grads(model, "explicit", ep.inputs, ep.positions)
        for method in ("auto", "sdpa"):
            out, grads = logits_and_grads(model, method, ep.inputs, ep.positions)
            torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
            assert_grads_close(grads, ref_grads, f"{tunnel} {method}")
