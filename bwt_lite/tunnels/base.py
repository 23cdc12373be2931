"""The common shape of a wind tunnel: fresh random episodes with an exact Bayesian answer.

A tunnel samples a batch of episodes from a ``torch.Generator`` (vectorised, no Python loop per
episode, no global RNG) and returns an :class:`Episodes`: the model input, the prediction positions,
the exact posterior predictive at those positions (float64) and the sampled target.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

import torch
from torch import Tensor


@dataclass
class Episodes:
    """A batch of episodes. ``P`` is the number of prediction positions, ``C`` of answer classes."""

    inputs: Tensor  # (B, T) int64 token ids, or (B, T, F) float32 features
    positions: Tensor  # (P,) int64 prediction positions, the same for every episode
    target: Tensor  # (B, P) sampled answer: class index (int64) or value (float)
    probs: Tensor | None = None  # (B, P, C) float64 exact posterior predictive (categorical)
    mean: Tensor | None = None  # (B, P) float64 exact predictive mean (Gaussian)
    var: Tensor | None = None  # (B, P) float64 exact predictive variance (Gaussian)

    @property
    def batch_size(self) -> int:
        return self.inputs.shape[0]

    @property
    def mask(self) -> Tensor:
        """(B, T) boolean mask of the prediction positions."""
        m = torch.zeros(self.inputs.shape[:2], dtype=torch.bool, device=self.inputs.device)
        m[:, self.positions] = True
        return m

    def to(self, device: torch.device | str) -> "Episodes":
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return Episodes(**{k: (v.to(device) if isinstance(v, Tensor) else v) for k, v in moved.items()})

    def __getitem__(self, idx: int | slice) -> "Episodes":
        """Select episodes (not positions)."""
        sel = slice(idx, idx + 1) if isinstance(idx, int) else idx
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = v if (v is None or f.name == "positions") else v[sel]
        return Episodes(**out)


class Tunnel:
    """Base class: subclasses set the class attributes and implement :meth:`sample`."""

    name: ClassVar[str]
    kind: ClassVar[str] = "categorical"  # "categorical" or "gaussian"
    variants: ClassVar[tuple[str, ...]] = ("default",)
    length_arg: ClassVar[str | None] = None  # constructor argument that sets the episode length (eval --length)
    accuracy_on: ClassVar[str] = "all"  # "all" positions, or "certain": where Bayes is a point mass (recall)

    # Filled in by subclasses' __init__:
    seq_len: int  # T, tokens per episode
    vocab_size: int  # input vocabulary (0 for float-feature tunnels)
    n_features: int = 0  # float features per position (0 for token tunnels)
    n_classes: int  # C, answer classes (1 for Gaussian tunnels)
    answer_tokens: tuple[int, ...] | None  # token id of each answer class, or None (no tied head)
    positions: Tensor  # (P,)

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        """Everything that defines the episode distribution (used in checkpoint keys)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items() if k != "tunnel")
        return f"{type(self).__name__}({args})"
