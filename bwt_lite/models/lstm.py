"""The LSTM backbone (Paper I's architecture comparison): ``n_layers`` stacked LSTM layers of width ``d_model``.

Each layer is one ``nn.LSTM`` (d -> d, both PyTorch biases) that replaces the stream with its hidden
states; there is no residual connection, as in an ordinary stacked LSTM. The shared adapter supplies
the token and position embeddings, the final RMSNorm and the head. At paper scale (6 layers, d = 192)
the model has 1,793,856 parameters on the bijection (Paper I's LSTM: "about 1.8M"). PyTorch's
initialisation (uniform in +-1/sqrt(d)) is kept: the adapter's generic initialisation only touches
linear and embedding layers.
"""
from __future__ import annotations

import torch
from torch import nn

from .config import ModelConfig
from .hooks import HookPoint
from .model import BlockStack


class LSTMBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.lstm = nn.LSTM(cfg.d_model, cfg.d_model, batch_first=True)
        self.hook_resid_pre = HookPoint()  # (B, T, d) the layer's input
        self.hook_resid_post = HookPoint()  # (B, T, d) its hidden states h_t, the next layer's input

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.hook_resid_pre(x))
        return self.hook_resid_post(h)


class LSTM(BlockStack):
    """(B, T, d) -> (B, T, d): stacked causal LSTM layers."""

    plot_color, plot_style = "C2", {"marker": "^", "linestyle": "-"}  # how every figure draws it

    @staticmethod
    def state_numbers(cfg: ModelConfig, seq_len: int) -> int:
        """Numbers carried from token to token: each layer's hidden and cell states, fixed in size."""
        return 2 * cfg.d_model * cfg.n_layers

    def __init__(self, cfg: ModelConfig):
        super().__init__(LSTMBlock(cfg) for _ in range(cfg.n_layers))
