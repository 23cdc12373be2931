"""The capacity-matched MLP control (Paper I): residual MLP blocks that never mix positions.

Each block is ``x + fc2(GELU(fc1(LayerNorm(x))))`` with hidden width 4d. With the same embeddings,
final norm and tied head as the transformer, 9 blocks at d = 192 give 2,681,472 parameters.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig
from .hooks import HookPoint
from .model import BlockStack


class MLPBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.fc2 = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)
        self.hook_resid_pre, self.hook_mlp_out, self.hook_resid_post = HookPoint(), HookPoint(), HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        return self.hook_resid_post(x + self.hook_mlp_out(self.fc2(F.gelu(self.fc1(self.ln(x))))))


class MLPControl(BlockStack):
    """(B, T, d) -> (B, T, d), position by position."""

    residual_projections = ("fc2",)
    # how every figure draws it: dashed, hollow markers on top, so its plateau stays visible over the LSTM's
    plot_color = "C7"
    plot_style = {"marker": "s", "linestyle": "--", "markerfacecolor": "none", "markersize": 6, "zorder": 4}

    @staticmethod
    def state_numbers(cfg: ModelConfig, seq_len: int) -> int:
        """Numbers carried from token to token: none, since no block mixes positions."""
        return 0

    def __init__(self, cfg: ModelConfig):
        super().__init__(MLPBlock(cfg) for _ in range(cfg.n_layers))
