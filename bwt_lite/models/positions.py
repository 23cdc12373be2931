"""Position input of the adapters (``ModelConfig.positions``): the table added to the token or feature
embedding, if any.

- ``learned``: an ``nn.Embedding`` of ``n_positions`` rows; longer sequences are refused, since rows past
  the table do not exist (and rows past the training length stay at their initialisation).
- ``sinusoidal``: the fixed table of Vaswani et al. (2017), ``sin(t w_i)`` in even and ``cos(t w_i)`` in
  odd dimensions with ``w_i = 10000^(-2i/d)``, defined at any length, no parameters. It is scaled by
  :data:`SINUSOIDAL_SCALE` so that each row's RMS is 0.02, the standard deviation the learned table and
  the token embedding start from: tokens and positions enter the residual stream at the same scale as
  with the learned table (at amplitude 1 the positions would outweigh the tokens about 35 to 1).
- ``rotary``, ``alibi`` and ``none``: no table (rotary embedding and the ALiBi recency bias act in
  attention, see ``transformer.py``).
"""
from __future__ import annotations

import functools
import math

import torch
from torch import nn

from .config import ModelConfig

SINUSOIDAL_SCALE = 0.02 * math.sqrt(2)  # a row of sin/cos pairs has RMS 1/sqrt(2): this makes it 0.02


@functools.lru_cache(maxsize=32)
def sinusoidal_table(T: int, d: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(T, d): ``SINUSOIDAL_SCALE * sin(t w_i)`` at dimension 2i and ``cos(t w_i)`` at 2i + 1, with
    ``w_i = 10000^(-2i/d)``; computed once per shape (an ordinary tensor even under inference mode)."""
    dt = torch.float64 if dtype == torch.float64 else torch.float32
    with torch.inference_mode(False), torch.no_grad():
        w = 10_000.0 ** (-torch.arange(0, d, 2, device=device, dtype=dt) / d)
        angle = torch.arange(T, device=device, dtype=dt)[:, None] * w  # (T, ceil(d/2))
        table = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)[:, :d]  # interleaved sin, cos
        return (SINUSOIDAL_SCALE * table).to(dtype)


class SinusoidalPositions(nn.Module):
    """The fixed sin/cos table (no parameters, no stored buffer): ``forward(T, device, dtype)`` -> (T, d)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model

    def forward(self, T: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        return sinusoidal_table(T, self.d_model, device, dtype)


def position_table(cfg: ModelConfig) -> nn.Module | None:
    """The adapter's position table for ``cfg.positions``: learned, sinusoidal, or None (rotary, alibi,
    none)."""
    if cfg.positions == "learned":
        return nn.Embedding(cfg.n_positions, cfg.d_model)
    if cfg.positions == "sinusoidal":
        return SinusoidalPositions(cfg.d_model)
    return None


def add_positions(table: nn.Module | None, x: torch.Tensor) -> torch.Tensor:
    """``x`` (B, T, d) plus the position rows 0..T-1 of ``table`` (unchanged when there is no table)."""
    if table is None:
        return x
    T = x.shape[1]
    if isinstance(table, nn.Embedding):
        return x + table(torch.arange(T, device=x.device))
    return x + table(T, x.device, x.dtype)


def check_length(table: nn.Module | None, T: int) -> None:
    """A learned table has rows for ``n_positions`` positions only: longer sequences are refused."""
    if isinstance(table, nn.Embedding) and T > table.num_embeddings:
        raise ValueError(f"sequence length {T} exceeds the position table ({table.num_embeddings} rows)")
