"""The paper's transformer backbone, nanoGPT-style, with hook points on every attention tensor.

Pre-norm blocks: RMSNorm -> causal multi-head attention (q/k/v/o without bias) -> residual,
RMSNorm -> MLP (d -> 4d -> d, GELU, biases) -> residual. ``head_mask`` (n_layers, n_heads)
multiplies attention weights (zero-ablation); ``bypass`` is a set of block indices to skip.

Attention runs one of two ways, equal to float rounding (about 1e-6): the explicit path (scores,
softmax, pattern, each through its hook point; the scaling and the causal mask are folded into one
``baddbmm``) and PyTorch's fused ``scaled_dot_product_attention``, which never materialises the
(B, H, T, T) pattern. The explicit path runs whenever something reads or changes the pattern (a hook
on ``hook_scores`` or ``hook_pattern``, or a head mask other than all ones in that layer), and on a
CPU always: at these head sizes (16-32) the CPU's fused kernel measured slower than the explicit path
(``bwt bench``). ``Transformer.set_attention`` chooses: ``"auto"`` (the fused kernel on GPUs),
``"sdpa"`` (the fused kernel on every device) or ``"explicit"`` (the reference path: never the fused
kernel, and every position of every block).
Given the answer positions, the last block computes only their rows (its keys and values still come
from every position): nothing after it mixes positions, so the logits are the same, for about half
that block's work. A hook on any tensor of that block turns this off, so hooks see every position.
With ``cfg.rope`` (on top of the learned table) or ``cfg.positions == "rotary"`` (alone) the queries
and keys are rotated by their position (rotary embedding, base 10,000, over the whole head), so a head
can attend by relative offset ("two tokens back") at any position; ``hook_q`` and ``hook_k`` then hold
the rotated vectors, whose dot products are the scores. With ``cfg.positions == "alibi"`` (Press et
al., 2022) there is no position table: head h adds ``-m_h (i - j)`` to the score of query i on key j,
with slopes ``m_h = 2^(-8 h / H)`` (h = 1..H), so each head prefers recent tokens at its own rate, the
same at every position and at any length; ``hook_scores`` holds the scores with that bias added.
``cfg.alibi`` adds the same bias on top of the learned table (absolute positions for reading, a
recency preference for attending).
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from ..arguments import check_choice
from .config import ModelConfig
from .hooks import HookPoint


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x * rsqrt(mean(x^2) + eps) * weight
        if hasattr(F, "rms_norm"):  # torch >= 2.4: one fused operation, the same numbers
            return F.rms_norm(x, self.weight.shape, self.weight, self.eps)
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


def rotary(x: torch.Tensor, base: float = 10_000.0, rows: torch.Tensor | None = None,
           length: int | None = None) -> torch.Tensor:
    """Rotate (B, H, T, dh) queries or keys by position: pairs (i, i + dh/2) turn by t * base^(-2i/dh).
    ``dh`` must be even (:class:`Attention` checks it when the model is built). Positions are 0..T-1,
    or ``rows`` (T indices into a sequence of ``length``) when ``x`` holds only those rows."""
    dh = x.shape[-1]
    cos, sin = _rotation(x.shape[-2] if rows is None else length, dh, base, x.device, x.dtype)
    if rows is not None:
        cos, sin = cos[rows], sin[rows]
    a, b = x[..., : dh // 2], x[..., dh // 2:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


@functools.lru_cache(maxsize=32)
def _causal_bias(T: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(T, T): 0 where a query may attend (key position <= query position), -inf above the diagonal;
    built once per length (an ordinary tensor even when first asked for under inference mode)."""
    with torch.inference_mode(False):
        return torch.full((T, T), float("-inf"), device=device, dtype=dtype).triu(1)


ATTENTION_METHODS = ("auto", "explicit", "sdpa")


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """(H,) ALiBi slopes ``2^(-8 h / H)`` for h = 1..H: from ``2^(-8/H)`` (a recency head) down to
    ``2^-8`` (nearly position-blind)."""
    return 2.0 ** (-8.0 * torch.arange(1, n_heads + 1, dtype=torch.float64) / n_heads)


@functools.lru_cache(maxsize=32)
def _alibi_bias(T: int, n_heads: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(H, T, T): the causal bias plus ``-m_h (i - j)`` for query i and key j <= i, built once per length."""
    with torch.inference_mode(False):
        pos = torch.arange(T, device=device, dtype=torch.float64)
        dist = (pos[:, None] - pos[None, :]).clamp(min=0)  # i - j on and below the diagonal
        bias = -alibi_slopes(n_heads).to(device)[:, None, None] * dist
        return (bias + _causal_bias(T, device, torch.float64)).to(dtype)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.d_model % cfg.n_heads:
            raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads})")
        self.n_heads, self.d_head = cfg.n_heads, cfg.d_model // cfg.n_heads
        if cfg.rotary and self.d_head % 2:
            what = "rope" if cfg.rope else "positions='rotary'"
            raise ValueError(f"{what} needs an even head dimension, got d_model / n_heads = {self.d_head}")
        self.rope = cfg.rotary
        self.alibi = cfg.recency_bias
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

    def forward(self, x: torch.Tensor, head_mask: torch.Tensor | None, fused: bool = True,
                rows: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, d) -> (B, T, d), or (B, P, d) for the queries at ``rows`` (P positions) only.

        ``head_mask`` (H,) or None (no head masked); ``fused``: the fused kernel may be used."""
        B, T, d = x.shape
        q, k = self.split(self.q(x if rows is None else x[:, rows])), self.split(self.k(x))
        if self.rope:
            q, k = rotary(q, rows=rows, length=T), rotary(k)
        q, k = self.hook_q(q), self.hook_k(k)
        v = self.hook_v(self.split(self.v(x)))
        P = q.shape[2]  # query rows: T, or len(rows)
        if self.alibi:  # (H, T, T) causal + recency bias, or its query rows
            bias = _alibi_bias(T, self.n_heads, x.device, q.dtype)
            bias = bias if rows is None else bias[:, rows]
        else:  # (T, T) causal bias, or its query rows
            bias = _causal_bias(T, x.device, q.dtype)
            bias = bias if rows is None else bias[rows]
        if fused and head_mask is None and not (self.hook_scores.hooked or self.hook_pattern.hooked):
            if rows is None and not self.alibi:
                z = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                z = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        else:  # scores = q k^T / sqrt(dh) + bias (-inf above the diagonal), in one matrix product
            if self.alibi:  # one (P, T) bias per head, repeated over the batch
                bias = bias.unsqueeze(0).expand(B, -1, -1, -1).reshape(B * self.n_heads, P, T)
            scores = torch.baddbmm(bias, q.flatten(0, 1),
                                   k.flatten(0, 1).transpose(1, 2), alpha=1 / math.sqrt(self.d_head))
            pattern = self.hook_scores(scores.view(B, self.n_heads, P, T)).softmax(-1)
            if head_mask is not None:
                pattern = pattern * head_mask.view(1, -1, 1, 1)
            z = self.hook_pattern(pattern) @ v
        z = self.hook_z(z)  # (B, H, P, dh)
        return self.o(z.transpose(1, 2).reshape(B, P, d))


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

    def forward(self, x: torch.Tensor, head_mask: torch.Tensor | None, fused: bool = True,
                rows: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, d) -> (B, T, d), or (B, P, d) at ``rows`` only (attention still reads every position)."""
        x = self.hook_resid_pre(x)
        a = self.hook_attn_out(self.attn(self.ln1(x), head_mask, fused, rows))
        x = self.hook_resid_mid((x if rows is None else x[:, rows]) + a)
        return self.hook_resid_post(x + self.hook_mlp_out(self.mlp(self.ln2(x))))

    @property
    def hooked(self) -> bool:
        """Does any hook read a tensor of this block (then it must compute every position)?"""
        return any(m.hooked for m in self.modules() if isinstance(m, HookPoint))


class Transformer(nn.Module):
    """(B, T, d) -> (B, T, d): a stack of causal pre-norm attention blocks."""

    residual_projections = ("attn.o", "mlp.proj")  # scaled at init, as in GPT-2
    plot_color, plot_style = "C0", {"marker": "o", "linestyle": "-"}  # how every figure draws it
    takes_positions = True  # forward(x, positions) returns only those rows (see WindTunnelModel.forward)

    @staticmethod
    def state_numbers(cfg: ModelConfig, seq_len: int) -> int:
        """Numbers carried from token to token by the end of a ``seq_len`` episode: the key and value
        cache, which grows with the sequence (2 x d_model per token per layer)."""
        return 2 * cfg.d_model * cfg.n_layers * seq_len

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.register_buffer("head_mask", torch.ones(cfg.n_layers, cfg.n_heads), persistent=False)
        self.bypass: set[int] = set()
        self.attention = "auto"  # see ATTENTION_METHODS; a runtime choice, not part of the config
        self._masked: tuple[torch.Tensor, int, tuple[bool, ...]] | None = None  # (mask, its version, per layer)

    def set_attention(self, method: str) -> None:
        """One of :data:`ATTENTION_METHODS` (see the module docstring); every choice keeps the hooks."""
        check_choice("method", method, ATTENTION_METHODS)
        self.attention = method

    def masked_layers(self) -> tuple[bool, ...]:
        """Per layer: is any head's mask other than 1? Recomputed only after ``head_mask`` changes
        (its in-place version counter moves), so a training step never waits on this check."""
        mask, cached = self.head_mask, self._masked
        if cached is None or cached[0] is not mask or cached[1] != mask._version:
            cached = self._masked = (mask, mask._version, tuple(bool(r) for r in (mask != 1).any(1).tolist()))
        return cached[2]

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, d) -> (B, T, d), or (B, P, d) at ``positions``. Nothing after the last block mixes
        positions, so that block computes only those rows, unless a hook reads it or the attention
        method is ``"explicit"`` (the reference path: every position of every block)."""
        masked = self.masked_layers()
        fused = self.attention == "sdpa" or (self.attention == "auto" and x.device.type != "cpu")
        active = [i for i in range(len(self.blocks)) if i not in self.bypass]
        rows = positions
        if positions is None or self.attention == "explicit" or not active or self.blocks[active[-1]].hooked:
            rows = None
        for i in active:
            x = self.blocks[i](x, self.head_mask[i] if masked[i] else None, fused, rows if i == active[-1] else None)
        return x if positions is None or rows is not None else x[:, positions]
