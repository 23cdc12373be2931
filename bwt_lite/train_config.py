"""What a training run is asked to do (:class:`TrainConfig`, part of a preset and so of a checkpoint's
key) and how far it got (:class:`TrainState`, what a resumable checkpoint stores).

Records only: the loop that reads them is :mod:`bwt_lite.train`, the files that store them are in
:mod:`bwt_lite.store`, so the store can read and write them without importing the trainer.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

import torch

from .arguments import check_choice

TARGET_MODES = ("sampled", "soft")


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 50_000  # optimizer steps (one fresh batch each)
    batch_size: int = 256  # episodes per step
    lr: float = 3e-4  # peak learning rate
    weight_decay: float = 0.1  # AdamW decoupled weight decay, on matrices and embeddings only
    warmup_steps: int = 2_000  # linear warmup from 0, then cosine to min_lr_ratio * lr
    min_lr_ratio: float = 0.0  # floor of the cosine, as a fraction of lr
    grad_clip: float = 1.0  # max global gradient norm
    value_lr_mult: float = 1.0  # lr multiplier on attention value projections (Paper II two-timescale)
    target: str = "sampled"  # "sampled" answer or "soft" exact posterior
    seed: int = 0  # model init and the training episode stream
    eval_every: int = 1_000  # steps between evaluations during training
    eval_episodes: int = 512  # held-out episodes per evaluation during training
    ema: float = 0.0  # decay of a moving average of the weights, evaluated and saved (0: off, the raw weights)
    decay_steps: int = 0  # length of the warmup + cosine schedule (0: steps); more than steps stops before its end
    stop_accuracy: float = 0.0  # end the run at the first evaluation whose held-out accuracy reaches this (0: off)
    # A curriculum: the first easy_steps steps train on episodes of the tunnel with easy_tunnel's arguments
    # changed (e.g. (("sharpen", 3.0),): the HMM's more peaked rows); evaluations always use the tunnel itself.
    easy_steps: int = 0
    easy_tunnel: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        check_choice("target", self.target, TARGET_MODES)
        for name in ("steps", "batch_size", "eval_every", "eval_episodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.warmup_steps < 0 or self.lr <= 0:
            raise ValueError("warmup_steps must be >= 0 and lr > 0")
        if not 0.0 <= self.ema < 1.0:
            raise ValueError(f"ema must be in [0, 1) (0: no weight average), got {self.ema}")
        if not 0.0 <= self.stop_accuracy <= 1.0:
            raise ValueError(f"stop_accuracy must be in [0, 1] (0: train all steps), got {self.stop_accuracy}")
        easy = self.easy_tunnel.items() if isinstance(self.easy_tunnel, dict) else self.easy_tunnel
        object.__setattr__(self, "easy_tunnel", tuple(sorted((str(k), v) for k, v in easy)))
        if self.easy_steps < 0 or bool(self.easy_steps) != bool(self.easy_tunnel):
            raise ValueError(f"easy_steps ({self.easy_steps}) and easy_tunnel ({dict(self.easy_tunnel)}) go together: "
                             f"both set for a curriculum, both off (0, empty) without one")
        if self.decay_steps and self.decay_steps <= self.warmup_steps:
            raise ValueError(f"decay_steps must be 0 (the schedule spans steps) or more than warmup_steps "
                             f"({self.warmup_steps}), got {self.decay_steps}")

    @property
    def schedule_steps(self) -> int:
        """Steps over which the warmup + cosine schedule runs to its floor (``decay_steps`` or ``steps``)."""
        return self.decay_steps or self.steps

    def to_dict(self) -> dict[str, Any]:
        """Every field, as JSON writes it (a preset's key leaves out the fields added later while at their
        defaults: ``bwt_lite.recipes.key_schema``)."""
        d = asdict(self)
        d["easy_tunnel"] = dict(self.easy_tunnel)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        if set(d) - known:
            raise ValueError(f"unknown train config field(s) {sorted(set(d) - known)}")
        return cls(**d)


@dataclass
class TrainState:
    """Everything needed to continue training exactly where it stopped.

    The learning-rate schedule is a function of ``step`` (:func:`lr_at`), so the step is its state.
    """

    step: int  # optimizer steps done
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    generator: torch.Tensor  # training episode stream RNG state
    history: list[dict[str, float]] = field(default_factory=list)
    elapsed_s: float = 0.0  # training wall time so far
    scaler: dict[str, Any] | None = None  # float16 gradient-scaler state (None without fp16 autocast)
    average: dict[str, torch.Tensor] | None = None  # the weight average (TrainConfig.ema > 0), else None
    # the logged loss is the mean over the steps since the last evaluation: its running sum and count
    # (finite steps only) are state too, so a resumed run logs the same loss as an uninterrupted one
    loss_sum: float = 0.0
    loss_n: float = 0.0


__all__ = ["TARGET_MODES", "TrainConfig", "TrainState"]
