"""How a training run is carried out, as one value: :class:`RunOptions`.

Device, precision and ``torch.compile`` change speed (and, for mixed precision, rounding), how often a
resumable state is saved changes nothing, and the progress bar and lines only what is shown: none of
them is part of a preset, so none enters a checkpoint's key. They are resolved once, where a run is
asked for (the command line, a chapter's ``load_or_train``, an experiment), by
:meth:`RunOptions.resolved`; the layers below (:func:`bwt_lite.checkpoints.train_and_save`,
:func:`bwt_lite.train.fit`) take the resolved value as it is.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import torch

from .device import amp_dtype, resolve_device

# the precision each autocast dtype means: what "auto" resolves to on a given device
PRECISIONS: dict[torch.dtype | None, str] = {None: "off", torch.bfloat16: "bf16", torch.float16: "fp16"}


@dataclass(frozen=True)
class RunOptions:
    """The knobs of one training run that are not its recipe.

    ``device``: ``"auto"`` (the GPU when visible), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a torch device;
    ``amp``: mixed precision, one of :data:`bwt_lite.runtime.device.AMP_MODES`; ``compile_model``:
    ``torch.compile`` the training forward; ``progress``: a progress bar labelled ``desc``; ``log``: where
    a progress line goes at every evaluation and, without a bar, at least every ``log_every_s`` seconds
    (None: no lines); ``ckpt_every``: steps between the states handed to ``on_checkpoint``.
    """

    device: str | torch.device = "cpu"
    amp: str = "auto"
    compile_model: bool = False
    progress: bool = True
    desc: str = "train"
    log: Callable[[str], None] | None = None
    log_every_s: float = 60.0
    ckpt_every: int = 500

    @property
    def is_resolved(self) -> bool:
        """True when ``device`` is a torch device and ``amp`` the precision it means there (not ``"auto"``)."""
        return isinstance(self.device, torch.device) and self.amp in PRECISIONS.values()

    def resolved(self) -> RunOptions:
        """These options with the device resolved (``"auto"``: the GPU when visible; an unknown or
        missing device raises ValueError) and ``amp`` the precision it means on it (``"auto"``: bf16 or
        fp16 on CUDA, off on CPU). Options already resolved come back as they are."""
        if self.is_resolved:
            return self
        device = resolve_device(self.device)
        return replace(self, device=device, amp=PRECISIONS[amp_dtype(self.amp, device)])

    @property
    def dtype(self) -> torch.dtype | None:
        """The autocast dtype of resolved options (None: float32 throughout)."""
        if not self.is_resolved:
            raise ValueError("RunOptions.dtype needs resolved options: call .resolved() first")
        return amp_dtype(self.amp, self.device)  # type: ignore[arg-type]  # a torch.device once resolved


__all__ = ["PRECISIONS", "RunOptions"]
