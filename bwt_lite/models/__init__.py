"""Architectures: one backbone per file, wrapped by a shared adapter and readout."""
from __future__ import annotations

from torch import nn

from ..arguments import check_choice
from .config import POSITIONS, ModelConfig
from .hooks import HookPoint, capture, hook_names, run_with_cache
from .lstm import LSTM
from .mamba import Mamba
from .mlp import MLPControl
from .model import WindTunnelModel, ablate_heads, bypass_layers
from .positions import sinusoidal_table
from .transformer import Transformer

BACKBONES: dict[str, type[nn.Module]] = {"transformer": Transformer, "mlp": MLPControl, "lstm": LSTM, "mamba": Mamba}
ARCHS: tuple[str, ...] = tuple(BACKBONES)


def state_numbers(cfg: ModelConfig, seq_len: int) -> int:
    """Numbers a model of ``cfg`` carries from one token to the next by the end of a ``seq_len`` episode
    (its backbone's ``state_numbers``: a recurrent state, or a cache that grows with the sequence)."""
    check_choice("arch", cfg.arch, ARCHS)
    count = getattr(BACKBONES[cfg.arch], "state_numbers", None)
    if count is None:
        raise NotImplementedError(f"architecture {cfg.arch!r}: its backbone {BACKBONES[cfg.arch].__name__} "
                                  f"has no state_numbers(cfg, seq_len); add one beside it in bwt_lite/models/")
    return int(count(cfg, seq_len))


def build_model(cfg: ModelConfig) -> WindTunnelModel:
    """Build the model a config describes (weights freshly initialised)."""
    check_choice("arch", cfg.arch, ARCHS)
    if cfg.rotary and cfg.arch != "transformer":
        what = "rope" if cfg.rope else "positions='rotary'"
        raise ValueError(f"{what} (rotary positions in attention) is for the transformer, not arch={cfg.arch!r}")
    return WindTunnelModel(cfg, BACKBONES[cfg.arch](cfg))


__all__ = [
    "ARCHS", "BACKBONES", "HookPoint", "ModelConfig", "POSITIONS", "WindTunnelModel", "ablate_heads",
    "build_model", "bypass_layers", "capture", "hook_names", "run_with_cache", "sinusoidal_table",
    "state_numbers",
]
