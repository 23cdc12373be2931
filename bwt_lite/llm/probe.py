"""Read queries, keys, values, attention and the residual stream out of a Hugging Face causal LM.

Hooks record the input of every attention module (the normed residual) and every block's output;
queries, keys and values are then computed with the layer's **own projection modules** (the fused
``query_key_value`` of GPT-NeoX, GPT-2's ``c_attn``, the ``q_proj``/``k_proj``/``v_proj`` of
Llama-style models), never from raw token embeddings.

Rotary embeddings: ``keys_pre`` are the projections before the rotation (position-free content, the
vectors we use for key orthogonality), ``keys`` are after it (what enters the attention score); GPT-2
has no rotary embedding and the two are equal. The attention pattern is recomputed from ``queries``
and ``keys`` with the layer's scale and the causal mask (grouped-query heads share their key head).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

SUPPORTED = ("gpt_neox", "gpt2", "llama-style (q_proj/k_proj/v_proj)")


@dataclass
class Probe:
    input_ids: torch.Tensor  # (T,) the prompt's token ids
    queries: torch.Tensor  # (L, H, T, d_head) after rotary
    keys: torch.Tensor  # (L, H_kv, T, d_head) after rotary: what enters q.k
    keys_pre: torch.Tensor  # (L, H_kv, T, d_head) the key projection before rotary
    values: torch.Tensor  # (L, H_kv, T, d_head)
    attention: torch.Tensor  # (L, H, T, T) causal attention weights, rows sum to 1
    residual: torch.Tensor  # (L+1, T, d_model): input of block 0, then the output of each block
    final: torch.Tensor  # (T, d_model) after the final norm (what the unembedding reads)
    logits: torch.Tensor  # (vocab,) at the last position
    arch: str  # "gpt_neox", "gpt2" or "llama"
    rotary_dims: int  # how many dimensions of each head the rotary embedding turns (0 for GPT-2)

    @property
    def n_layers(self) -> int:
        return self.queries.shape[0]

    @property
    def group(self) -> int:
        """Query heads per key head (1 without grouped-query attention)."""
        return self.queries.shape[1] // self.keys.shape[1]


def model_parts(model):
    """(architecture, base model, blocks, attention modules, final norm) of a supported model."""
    base = model.base_model
    mtype = getattr(model.config, "model_type", "")
    blocks = getattr(base, "layers", None) or getattr(base, "h", None)
    if blocks is None:
        raise ValueError(f"unsupported model type {mtype!r}: supported {SUPPORTED}")
    first = blocks[0]
    if hasattr(first, "attention") and hasattr(first.attention, "query_key_value"):
        arch, attns = "gpt_neox", [b.attention for b in blocks]
    elif hasattr(first, "attn") and hasattr(first.attn, "c_attn"):
        arch, attns = "gpt2", [b.attn for b in blocks]
    elif hasattr(first, "self_attn") and all(hasattr(first.self_attn, p) for p in ("q_proj", "k_proj", "v_proj")):
        arch, attns = "llama", [b.self_attn for b in blocks]
    else:
        raise ValueError(f"unsupported model type {mtype!r}: supported {SUPPORTED}")
    norm = next((getattr(base, n) for n in ("final_layer_norm", "ln_f", "norm", "final_layernorm") if hasattr(base, n)), None)
    if norm is None:
        raise ValueError(f"model type {mtype!r}: no final norm found")
    return arch, base, blocks, attns, norm


def _heads(model) -> tuple[int, int, int]:
    c = model.config
    n_heads = getattr(c, "num_attention_heads", None) or c.n_head
    d_model = getattr(c, "hidden_size", None) or c.n_embd
    d_head = getattr(c, "head_dim", None) or d_model // n_heads
    n_kv = getattr(c, "num_key_value_heads", None) or n_heads
    return n_heads, n_kv, d_head


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension (the GPT-NeoX/Llama convention)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the first ``cos.shape[-1]`` dimensions of ``x`` (..., T, d_head); cos, sin: (T, r)."""
    r = cos.shape[-1]
    rot, keep = x[..., :r], x[..., r:]
    return torch.cat((rot * cos + rotate_half(rot) * sin, keep), dim=-1)


def qkv(model, layer: int, h: torch.Tensor, cos: torch.Tensor | None = None, sin: torch.Tensor | None = None):
    """Queries, keys before rotary, keys and values of ``layer`` for its input ``h`` (T, d_model), each
    (heads, T, d_head), from the layer's own projection modules."""
    arch, _, _, attns, _ = model_parts(model)
    attn = attns[layer]
    n_heads, n_kv, d = _heads(model)
    T = h.shape[0]
    if arch == "gpt_neox":
        fused = attn.query_key_value(h).view(T, n_heads, 3 * d).transpose(0, 1)  # per head [q | k | v]
        q, k, v = fused.chunk(3, dim=-1)
    elif arch == "gpt2":
        q, k, v = (t.view(T, n_heads, d).transpose(0, 1) for t in attn.c_attn(h).split(n_heads * d, dim=-1))
    else:
        q = attn.q_proj(h).view(T, n_heads, d).transpose(0, 1)
        k = attn.k_proj(h).view(T, n_kv, d).transpose(0, 1)
        v = attn.v_proj(h).view(T, n_kv, d).transpose(0, 1)
    k_pre = k
    if cos is not None:
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
    return q, k_pre, k, v


def attention_scale(model, layer: int) -> float:
    """The factor on q.k: the module's ``scaling`` when it has one, else GPT-2's rule or 1/sqrt(d_head)."""
    _, _, _, attns, _ = model_parts(model)
    s = getattr(attns[layer], "scaling", None)
    if s is not None:
        return float(s)
    c, d = model.config, _heads(model)[2]
    s = d ** -0.5 if getattr(c, "scale_attn_weights", True) else 1.0
    return s / (layer + 1) if getattr(c, "scale_attn_by_inverse_layer_idx", False) else s


def causal_attention(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    """softmax(scale q k^T) with the causal mask; q (H, T, d), k (H_kv, T, d) with H a multiple of H_kv."""
    group = q.shape[0] // k.shape[0]
    k = k.repeat_interleave(group, dim=0)
    scores = (q.float() @ k.float().transpose(-1, -2)) * scale
    T = q.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return scores.masked_fill(mask, float("-inf")).softmax(-1)


@torch.no_grad()
def probe(model, input_ids: torch.Tensor | list[int]) -> Probe:
    """Run ``model`` on one prompt (``input_ids`` (T,) or (1, T)) and read every layer (see :class:`Probe`)."""
    arch, base, blocks, attns, norm = model_parts(model)
    ids = torch.as_tensor(input_ids, dtype=torch.long).reshape(-1)
    if ids.numel() < 1:
        raise ValueError("input_ids must hold at least one token")
    device = next(model.parameters()).device
    ids = ids.to(device)
    attn_in: dict[int, torch.Tensor] = {}
    rope: dict[int, tuple] = {}
    block_out: dict[int, torch.Tensor] = {}
    block_in: list[torch.Tensor] = []
    final: list[torch.Tensor] = []

    def attn_hook(i):
        def hook(module, args, kwargs):
            attn_in[i] = (args[0] if args else kwargs["hidden_states"])[0].detach()
            pe = kwargs.get("position_embeddings")
            if pe is not None:
                rope[i] = (pe[0][0].detach(), pe[1][0].detach())
        return hook

    def out_hook(i):
        def hook(module, args, output):
            block_out[i] = (output[0] if isinstance(output, tuple) else output)[0].detach()
        return hook

    handles = [a.register_forward_pre_hook(attn_hook(i), with_kwargs=True) for i, a in enumerate(attns)]
    handles += [b.register_forward_hook(out_hook(i)) for i, b in enumerate(blocks)]
    handles.append(blocks[0].register_forward_pre_hook(
        lambda m, args, kwargs: block_in.append((args[0] if args else kwargs["hidden_states"])[0].detach()),
        with_kwargs=True))
    handles.append(norm.register_forward_hook(lambda m, a, o: final.append(o[0].detach())))
    try:
        logits = model(ids.unsqueeze(0), use_cache=False).logits[0, -1].detach()
    finally:
        for h in handles:
            h.remove()

    T = ids.numel()
    rotary_dims = 0
    if arch != "gpt2" and not rope:  # older transformers: compute cos/sin with the model's rotary module
        pos = torch.arange(T, device=device).unsqueeze(0)
        cos, sin = base.rotary_emb(attn_in[0].unsqueeze(0), pos)
        rope = {i: (cos[0], sin[0]) for i in range(len(attns))}
    qs, kps, ks, vs, pats = [], [], [], [], []
    for i in range(len(attns)):
        cos, sin = rope.get(i, (None, None))
        if cos is not None:
            rotary_dims = cos.shape[-1]
        q, kp, k, v = qkv(model, i, attn_in[i], cos, sin)
        qs.append(q), kps.append(kp), ks.append(k), vs.append(v)
        pats.append(causal_attention(q, k, attention_scale(model, i)))
    residual = torch.stack(block_in[:1] + [block_out[i] for i in range(len(blocks))])
    return Probe(ids.cpu(), torch.stack(qs).cpu(), torch.stack(ks).cpu(), torch.stack(kps).cpu(),
                 torch.stack(vs).cpu(), torch.stack(pats).cpu(), residual.cpu(), final[-1].cpu(),
                 logits.cpu(), arch, rotary_dims)


@torch.no_grad()
def last_token_states(model, input_ids: torch.Tensor | list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cheaper than :func:`probe` for many prompts: (residual (L+1, d_model), final (d_model,), logits
    (vocab,)) at the last position of one prompt."""
    _, _, blocks, _, norm = model_parts(model)
    ids = torch.as_tensor(input_ids, dtype=torch.long).reshape(1, -1).to(next(model.parameters()).device)
    outs: dict[int, torch.Tensor] = {}
    first: list[torch.Tensor] = []
    final: list[torch.Tensor] = []
    handles = [b.register_forward_hook(
        lambda m, a, o, i=i: outs.__setitem__(i, (o[0] if isinstance(o, tuple) else o)[0, -1].detach()))
        for i, b in enumerate(blocks)]
    handles.append(blocks[0].register_forward_pre_hook(
        lambda m, args, kwargs: first.append((args[0] if args else kwargs["hidden_states"])[0, -1].detach()),
        with_kwargs=True))
    handles.append(norm.register_forward_hook(lambda m, a, o: final.append(o[0, -1].detach())))
    try:
        logits = model(ids, use_cache=False).logits[0, -1].detach()
    finally:
        for h in handles:
            h.remove()
    residual = torch.stack(first[:1] + [outs[i] for i in range(len(blocks))])
    return residual.cpu(), final[-1].cpu(), logits.cpu()


def encode(tokenizer, text: str) -> torch.Tensor:
    """Token ids of ``text`` without special tokens (T,)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError(f"text encodes to no tokens: {text!r}")
    return torch.tensor(ids, dtype=torch.long)
