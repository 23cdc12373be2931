"""A wind-tunnel model: token adapter -> backbone -> final norm -> readout.

Every architecture is a backbone mapping (B, T, d) to (B, T, d); this wrapper adds the task
adapter (token embedding plus the position table of ``cfg.positions``, see ``positions.py``) and the
readout: a head tied to the token embedding and restricted to the answer tokens, or a linear head
(for answers that are not tokens).
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterable, Iterator

import torch
from torch import nn

from .config import ModelConfig
from .hooks import HookPoint
from .positions import add_positions, check_length, position_table
from .transformer import RMSNorm


class TokenAdapter(nn.Module):
    """Tokens (B, T) -> (B, T, d): the token embedding plus the position table of ``cfg.positions``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = position_table(cfg)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, d)
        check_length(self.pos, tokens.shape[1])
        if tokens.dtype != torch.long:
            raise TypeError(f"tokens must be int64, got {tokens.dtype}")
        return add_positions(self.pos, self.tok(tokens))


class FeatureAdapter(nn.Module):
    """Float inputs (B, T, F) -> (B, T, d): a linear map plus the position table of ``cfg.positions``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.proj = nn.Linear(cfg.n_features, cfg.d_model)
        self.pos = position_table(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[-1] != self.proj.in_features:
            raise ValueError(f"features must have shape (B, T, {self.proj.in_features}), got {tuple(x.shape)}")
        check_length(self.pos, x.shape[1])
        return add_positions(self.pos, self.proj(x.to(self.proj.weight.dtype)))


class BlockStack(nn.Module):
    """A backbone that runs ``blocks`` in order, skipping the indices in ``bypass`` (see :func:`bypass_layers`)."""

    def __init__(self, blocks: Iterable[nn.Module]):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.bypass: set[int] = set()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, block in enumerate(self.blocks):
            if i not in self.bypass:
                x = block(x)
        return x


class WindTunnelModel(nn.Module):
    def __init__(self, cfg: ModelConfig, backbone: nn.Module):
        super().__init__()
        self.cfg = cfg
        self.embed = FeatureAdapter(cfg) if cfg.n_features > 0 else TokenAdapter(cfg)
        self.hook_embed = HookPoint()  # (B, T, d)
        self.backbone = backbone
        self.norm_f = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.hook_final = HookPoint()  # (B, T, d) after the final norm
        if cfg.answer_tokens is None:
            self.head: nn.Linear | None = nn.Linear(cfg.d_model, cfg.n_outputs)
        else:
            self.head = None
            self.register_buffer("answer_tokens", torch.tensor(cfg.answer_tokens), persistent=False)
        self.hook_logits = HookPoint()  # (B, P, C) logits over the answer classes
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GPT-2 style: N(0, 0.02) weights, zero biases, residual projections scaled by depth; then the
        backbone's own ``reset_parameters()`` if it has one (e.g. Mamba's SSM initialisation)."""
        residual = tuple(getattr(self.backbone, "residual_projections", ()))
        n_layers = max(self.cfg.n_layers, 1)
        for name, mod in self.named_modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                std = 0.02 / math.sqrt(2 * n_layers) if name.endswith(residual) else 0.02
                nn.init.normal_(mod.weight, 0.0, std)
                if getattr(mod, "bias", None) is not None:
                    nn.init.zeros_(mod.bias)
        if callable(getattr(self.backbone, "reset_parameters", None)):
            self.backbone.reset_parameters()

    def forward(self, inputs: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Logits over the answer classes: (B, P, C) at ``positions``, or (B, T, C) everywhere.

        A backbone with ``takes_positions`` is handed the positions and returns only those rows (the
        transformer's last block then computes no other), unless a hook reads ``hook_final``."""
        x = self.hook_embed(self.embed(inputs))
        if positions is not None and getattr(self.backbone, "takes_positions", False) and not self.hook_final.hooked:
            h = self.hook_final(self.norm_f(self.backbone(x, positions)))  # (B, P, d) straight from the backbone
        else:
            h = self.hook_final(self.norm_f(self.backbone(x)))
            if positions is not None:
                h = h[:, positions]
        if self.head is not None:
            logits = self.head(h)
        else:
            logits = h @ self.embed.tok.weight[self.answer_tokens].T
        return self.hook_logits(logits)

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


@contextmanager
def ablate_heads(model: WindTunnelModel, heads: Iterable[tuple[int, int]]) -> Iterator[WindTunnelModel]:
    """Zero-ablate attention heads ``(layer, head)`` inside the block; restored on exit."""
    mask = getattr(model.backbone, "head_mask", None)
    if mask is None:
        raise ValueError(f"architecture {model.cfg.arch!r} has no attention heads to ablate")
    saved = mask.clone()
    try:
        for layer, head in heads:
            if not (0 <= layer < mask.shape[0] and 0 <= head < mask.shape[1]):
                raise ValueError(f"head ({layer}, {head}) out of range: layers 0..{mask.shape[0] - 1}, heads 0..{mask.shape[1] - 1}")
            mask[layer, head] = 0.0
        yield model
    finally:
        mask.copy_(saved)


@contextmanager
def bypass_layers(model: WindTunnelModel, layers: Iterable[int]) -> Iterator[WindTunnelModel]:
    """Skip whole blocks (the residual stream passes through unchanged); restored on exit."""
    n = len(model.backbone.blocks)
    layers = set(layers)
    bad = [i for i in layers if not 0 <= i < n]
    if bad:
        raise ValueError(f"layer(s) {bad} out of range 0..{n - 1}")
    saved = set(model.backbone.bypass)
    model.backbone.bypass |= layers
    try:
        yield model
    finally:
        model.backbone.bypass = saved
