"""bwt_lite.llm.probe on tiny GPT-NeoX, GPT-2 and Llama (grouped-query) models built locally from configs:
keys (before and after rotary), queries, values and attention equal a manual computation from the
layer's weights, and the attention pattern equals transformers' own eager attention."""
import math

import pytest
import torch

pytest.importorskip("transformers")

from bwt_lite.llm.diagnostics import entropy_bits, final_query_entropy  # noqa: E402
from bwt_lite.llm.offline import from_config, local_tokenizer, tiny_config  # noqa: E402
from bwt_lite.llm.probe import encode, last_token_states, probe  # noqa: E402

D, LAYERS, HEADS = 32, 2, 4
IDS = torch.tensor([5, 9, 17, 9, 30, 2, 41, 5, 12, 60, 3])  # repeated tokens, 11 positions


def tiny(arch: str, seed: int = 0):
    kw = {"n_kv_heads": 2} if arch == "llama" else {}
    model = from_config(tiny_config(arch, 64, d_model=D, n_layers=LAYERS, n_heads=HEADS, **kw), seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():  # larger weights than the 0.02 init, so attention is far from uniform
        for name, p in model.named_parameters():
            if "norm" in name or "ln" in name:
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.4 * torch.randn(p.shape, generator=g))
    return model


@pytest.fixture(scope="module", params=["gpt_neox", "gpt2", "llama"])
def case(request):
    model = tiny(request.param)
    with torch.no_grad():
        out = model(IDS.unsqueeze(0), output_hidden_states=True, output_attentions=True)
    return request.param, model, probe(model, IDS), out


def rot_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def rope(x, dims, theta):
    """Rotary embedding written out: positions 0..T-1, the first ``dims`` dimensions, NeoX halves."""
    T = x.shape[-2]
    inv = 1.0 / theta ** (torch.arange(0, dims, 2, dtype=torch.float32) / dims)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None]
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    r = x[..., :dims]
    return torch.cat([r * cos + rot_half(r) * sin, x[..., dims:]], -1)


def theta_of(cfg):
    t = getattr(cfg, "rope_theta", None)
    return t if t is not None else cfg.rope_parameters["rope_theta"]


def manual_qkv(arch, model, layer, x):
    """(q, k_pre, k, v) of ``layer`` for residual input ``x`` (T, D), from the weights alone."""
    T, d = x.shape[0], D // HEADS
    if arch == "gpt_neox":
        blk = model.gpt_neox.layers[layer]
        ln = blk.input_layernorm
        h = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + ln.eps) * ln.weight + ln.bias
        W, b = blk.attention.query_key_value.weight, blk.attention.query_key_value.bias
        y = h @ W.T + b  # (T, 3D), per head [q | k | v]
        per = y.view(T, HEADS, 3 * d).transpose(0, 1)
        q, k, v = per[..., :d], per[..., d:2 * d], per[..., 2 * d:]
        dims = int(d * model.config.rope_parameters.get("partial_rotary_factor", 1.0)) if hasattr(
            model.config, "rope_parameters") else int(d * model.config.rotary_pct)
        theta = theta_of(model.config)
        return rope(q, dims, theta), k, rope(k, dims, theta), v
    if arch == "gpt2":
        blk = model.transformer.h[layer]
        ln = blk.ln_1
        h = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + ln.eps) * ln.weight + ln.bias
        y = h @ blk.attn.c_attn.weight + blk.attn.c_attn.bias  # Conv1D: x W + b, W (D, 3D)
        q, k, v = (y[:, i * D:(i + 1) * D].view(T, HEADS, d).transpose(0, 1) for i in range(3))
        return q, k, k, v
    blk = model.model.layers[layer]
    n = blk.input_layernorm
    h = x / torch.sqrt((x * x).mean(-1, keepdim=True) + n.variance_epsilon) * n.weight
    a = blk.self_attn
    q = (h @ a.q_proj.weight.T).view(T, HEADS, d).transpose(0, 1)
    k = (h @ a.k_proj.weight.T).view(T, 2, d).transpose(0, 1)
    v = (h @ a.v_proj.weight.T).view(T, 2, d).transpose(0, 1)
    theta = theta_of(model.config)
    return rope(q, d, theta), k, rope(k, d, theta), v


def embed(arch, model):
    if arch == "gpt_neox":
        return model.gpt_neox.embed_in.weight[IDS]
    if arch == "gpt2":
        return model.transformer.wte.weight[IDS] + model.transformer.wpe.weight[: len(IDS)]
    return model.model.embed_tokens.weight[IDS]


@torch.no_grad()
def test_keys_queries_values_equal_manual_computation(case):
    arch, model, p, out = case
    kv = 2 if arch == "llama" else HEADS
    assert p.keys.shape == p.keys_pre.shape == p.values.shape == (LAYERS, kv, len(IDS), D // HEADS)
    assert p.queries.shape == (LAYERS, HEADS, len(IDS), D // HEADS)
    inputs = [embed(arch, model), out.hidden_states[1]]  # block 0's input, then block 1's (block 0's output)
    for layer, x in enumerate(inputs):
        q, k_pre, k, v = manual_qkv(arch, model, layer, x[0] if x.dim() == 3 else x)
        torch.testing.assert_close(p.keys_pre[layer], k_pre, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(p.keys[layer], k, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(p.queries[layer], q, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(p.values[layer], v, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(p.residual[1], out.hidden_states[1][0])


def test_rotary_is_reported_explicitly(case):
    arch, model, p, _ = case
    d = D // HEADS
    if arch == "gpt2":
        assert p.rotary_dims == 0 and torch.equal(p.keys, p.keys_pre)
        return
    assert p.rotary_dims == (d if arch == "llama" else d // 4)  # Pythia-style partial rotary: 25 %
    # position 0 is not rotated; later positions are, and only in the first rotary_dims dimensions
    torch.testing.assert_close(p.keys[:, :, 0], p.keys_pre[:, :, 0])
    assert not torch.allclose(p.keys[:, :, 1:, : p.rotary_dims], p.keys_pre[:, :, 1:, : p.rotary_dims])
    torch.testing.assert_close(p.keys[..., p.rotary_dims:], p.keys_pre[..., p.rotary_dims:])
    # a rotation keeps every key's norm
    torch.testing.assert_close(p.keys.norm(dim=-1), p.keys_pre.norm(dim=-1), atol=1e-5, rtol=1e-5)


def test_attention_equals_transformers_eager_attention(case):
    arch, model, p, out = case
    torch.testing.assert_close(p.attention, torch.stack([a[0] for a in out.attentions]), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(p.attention.sum(-1), torch.ones(LAYERS, HEADS, len(IDS)))
    assert torch.all(p.attention.triu(1) == 0)


def test_final_query_entropy_matches_a_manual_softmax(case):
    arch, model, p, _ = case
    d, group = D // HEADS, p.group
    assert group == (2 if arch == "llama" else 1)
    ent = final_query_entropy(p)
    for layer in range(LAYERS):
        for h in range(HEADS):
            scores = [float(p.queries[layer, h, -1] @ p.keys[layer, h // group, j]) / math.sqrt(d) for j in range(len(IDS))]
            z = max(scores)
            w = [math.exp(s - z) for s in scores]
            w = [x / sum(w) for x in w]
            manual = -sum(x * math.log2(x) for x in w if x > 0)
            assert abs(ent[layer, h].item() - manual) < 1e-4
    assert ent.min() < math.log2(len(IDS)) - 0.2, "test weights should give non-uniform attention"
    # the entropy helper itself on known distributions
    assert entropy_bits(torch.tensor([0.5, 0.5, 0.0])).item() == pytest.approx(1.0)
    assert entropy_bits(torch.full((8,), 1 / 8)).item() == pytest.approx(3.0)


def test_final_state_logits_and_last_token_states(case):
    arch, model, p, out = case
    torch.testing.assert_close(p.logits, out.logits[0, -1])
    res, fin, logits = last_token_states(model, IDS)
    torch.testing.assert_close(res, p.residual[:, -1])
    torch.testing.assert_close(fin, p.final[-1])
    torch.testing.assert_close(logits, p.logits)
    head = model.get_output_embeddings()
    torch.testing.assert_close(head(p.final[-1]), p.logits, atol=1e-5, rtol=1e-5)


def test_encode_and_errors():
    tok = local_tokenizer()
    ids = encode(tok, "Input: apple\nLabel: foo")
    assert tok.convert_ids_to_tokens(ids.tolist()) == ["Input", ":", "apple", "Label", ":", "foo"]
    with pytest.raises(ValueError, match="no tokens"):
        encode(tok, "")
    with pytest.raises(ValueError, match="arch"):
        tiny_config("mamba", 10)
    with pytest.raises(ValueError, match="n_kv_heads"):
        tiny_config("llama", 10, n_heads=4, n_kv_heads=3)
