"""The lite checkpoints shipped with the package (``bwt_lite/data/checkpoints``), so the book and the tests
never retrain them. ``bwt ship`` trains whichever are missing."""
from __future__ import annotations

from typing import Any

from .preset import Preset
from .resolve import get_preset

# (tunnel, arch, get_preset's keyword arguments) of each shipped lite checkpoint.
SHIPPED: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("bijection", "transformer", {}),
    ("bijection", "transformer", {"target": "soft"}),
    ("bijection", "mlp", {}),
    ("hmm", "transformer", {}),
    ("hmm", "mlp", {}),
    ("recall", "transformer", {}),
    ("recall", "mlp", {}),
    ("regression", "transformer", {}),
    ("regression", "mlp", {}),
    ("bijection", "lstm", {}),
    ("bijection", "mamba", {}),
    ("hmm", "lstm", {}),
    ("hmm", "mamba", {}),
    ("recall", "lstm", {}),
    ("recall", "mamba", {}),
    ("regression", "lstm", {}),
    ("regression", "mamba", {}),
    # the slow-mixing HMM (chapters 3, 6 and 10), every architecture on the same 320,000 episodes
    ("hmm", "transformer", {"variant": "slow"}),
    ("hmm", "mlp", {"variant": "slow"}),
    ("hmm", "lstm", {"variant": "slow"}),
    ("hmm", "mamba", {"variant": "slow"}),
    # the bijection transformer at the paper's 6 layers (the per-layer geometry of chapters 7-9)
    ("bijection", "transformer", {"depth": "paper"}),
    # the HMM transformer at the paper's 9 layers (its 25,000-step recipe: PAPER_DEPTH_TRAIN)
    ("hmm", "transformer", {"depth": "paper"}),
    # the modular recurrence (chapter 13): integer and opaque tokens, and the loss horizons K = 5 and 3
    ("recurrence", "transformer", {}),
    ("recurrence", "transformer", {"variant": "opaque"}),
    ("recurrence", "transformer", {"horizon": 5}),
    ("recurrence", "transformer", {"horizon": 3}),
    ("recurrence", "mlp", {}),
    ("recurrence", "lstm", {}),
    ("recurrence", "mamba", {}),
    # its controls: trained on 8 values with sinusoidal positions (scored on 16 and 32) ...
    ("recurrence", "transformer", {"length": 8, "positions": "sinusoidal"}),
    # and the shuffled layout: (time, value) pairs in a random order
    ("recurrence", "transformer", {"variant": "shuffled"}),
)


def shipped_presets() -> list[Preset]:
    """The presets whose lite checkpoints ship with the package."""
    return [get_preset(tunnel, arch, "lite", **overrides) for tunnel, arch, overrides in SHIPPED]


__all__ = ["SHIPPED", "shipped_presets"]
