"""The paper's transformer backbone (spec 1.7), nanoGPT-style but with an explicit attention path.

Pre-norm blocks: RMSNorm -> causal multi-head attention (q/k/v/o without bias) -> residual,
RMSNorm -> MLP (d -> 4d -> d, GELU, biases) -> residual. ``head_mask`` (n_layers, n_heads)
multiplies attention weights (zero-ablation); ``bypass`` is a set of block indices to skip.
With ``cfg.rope`` the queries and keys are rotated by their position (rotary embedding, base
10,000, over the whole head), so a head can attend by relative offset ("two tokens back") at any
position; ``hook_q`` and ``hook_k`` then hold the rotated vectors, whose dot products are the scores.
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig
from .hooks import HookPoint


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


@functools.lru_cache(maxsize=32)
def _rotation(T: int, dh: int, base: float, device: torch.device, dtype: torch.dtype
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (T, dh/2) of the angles t * base^(-2i/dh), computed once per shape (as ordinary
    tensors even when first asked for under inference mode, so training can reuse them)."""
    dt = torch.float64 if dtype == torch.float64 else torch.float32
    with torch.inference_mode(False), torch.no_grad():
        inv = base ** (-torch.arange(0, dh // 2, device=device, dtype=dt) * 2 / dh)
        angle = torch.arange(T, device=device, dtype=dt)[:, None] * inv
        return angle.cos().to(dtype), angle.sin().to(dtype)


def rotary(x: torch.Tensor, base: float = 10_000.0) -> torch.Tensor:
    """Rotate (B, H, T, dh) queries or keys by position: pairs (i, i + dh/2) turn by t * base^(-2i/dh).
    ``dh`` must be even (:class:`Attention` checks it when the model is built)."""
    T, dh = x.shape[-2], x.shape[-1]
    cos, sin = _rotation(T, dh, base, x.device, x.dtype)
    a, b = x[..., : dh // 2], x[..., dh // 2:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.d_model % cfg.n_heads:
            raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads})")
        self.n_heads, self.d_head = cfg.n_heads, cfg.d_model // cfg.n_heads
        if cfg.rope and self.d_head % 2:
            raise ValueError(f"rope needs an even head dimension, got d_model / n_heads = {self.d_head}")
        self.rope = cfg.rope
        self.q = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.k = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.v = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.o = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.hook_q, self.hook_k, self.hook_v = HookPoint(), HookPoint(), HookPoint()  # (B, H, T, dh)
        self.hook_scores = HookPoint()  # (B, H, T, T) pre-softmax, causal entries -inf
        self.hook_pattern = HookPoint()  # (B, H, T, T) attention weights after the head mask
        self.hook_z = HookPoint()  # (B, H, T, dh) per-head outputs before the o projection

    def split(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d) -> (B, H, T, dh)
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, head_mask: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k = self.split(self.q(x)), self.split(self.k(x))
        if self.rope:
            q, k = rotary(q), rotary(k)
        q, k = self.hook_q(q), self.hook_k(k)
        v = self.hook_v(self.split(self.v(x)))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, T, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scores = self.hook_scores(scores.masked_fill(~causal, float("-inf")))
        pattern = self.hook_pattern(scores.softmax(-1) * head_mask.view(1, -1, 1, 1))
        z = self.hook_z(pattern @ v)  # (B, H, T, dh)
        return self.o(z.transpose(1, 2).reshape(B, T, d))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1, self.attn = RMSNorm(cfg.d_model, cfg.norm_eps), Attention(cfg)
        self.ln2, self.mlp = RMSNorm(cfg.d_model, cfg.norm_eps), MLP(cfg)
        self.hook_resid_pre, self.hook_attn_out = HookPoint(), HookPoint()
        self.hook_resid_mid, self.hook_mlp_out = HookPoint(), HookPoint()
        self.hook_resid_post = HookPoint()

    def forward(self, x: torch.Tensor, head_mask: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(x + self.hook_attn_out(self.attn(self.ln1(x), head_mask)))
        return self.hook_resid_post(x + self.hook_mlp_out(self.mlp(self.ln2(x))))


class Transformer(nn.Module):
    """(B, T, d) -> (B, T, d): a stack of causal pre-norm attention blocks."""

    residual_projections = ("attn.o", "mlp.proj")  # scaled at init, as in GPT-2

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.register_buffer("head_mask", torch.ones(cfg.n_layers, cfg.n_heads), persistent=False)
        self.bypass: set[int] = set()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, block in enumerate(self.blocks):
            if i not in self.bypass:
                x = block(x, self.head_mask[i])
        return x
