"""Named configurations ``(tunnel, arch, scale)``: ``lite`` (CPU, minutes) and ``paper`` (Paper I's setup).

A :class:`Preset` (``preset.py``) holds the full tunnel, model and training configuration; its
:meth:`Preset.key` (a SHA-256 of all of it plus the checkpoint format version, through ``key_schema.py``)
keys the checkpoint cache. :func:`get_preset` (``resolve.py``, beside :func:`resolve_tunnel_args`, a tunnel's
arguments alone) resolves a recipe from the tables:
``tunnel_args.py`` (the tunnels' arguments), ``architectures.py`` (each architecture's size and training at each scale),
``model_recipes.py`` (a tunnel's own sizes and model options) and ``tunnel_train.py`` (a tunnel's or a
variant's own training). ``shipped.py`` lists the shipped lite checkpoints; ``targets.py`` the lite targets.

Each recipe's comment says what it is and why, in a line; the runs that chose it (scores, timings,
reruns) are in the maintainers' lab notes (``docs/lab_notes.md``), and ``experiments/`` re-runs the
sweeps behind them.
"""
from __future__ import annotations

from .key_schema import FORMAT_VERSION
from .model_recipes import (DEPTHS, PAPER_DEPTH_SIZES, TUNNEL_ARCH_SIZES, TUNNEL_MODEL,
                            VARIANT_MODEL)
from .preset import SCALES, Preset
from .resolve import get_preset, resolve_tunnel_args
from .shipped import SHIPPED, shipped_presets
from .targets import LITE_TARGETS, lite_target_status, meets_lite_target
from .architectures import ARCH_SIZES, HOW_MATCHED, PAPER_DEPTH_TRAIN, TRAIN, equal_budget
from .tunnel_args import EVAL_LENGTH, TUNNEL_ARGS, VARIANT_ARGS
from .tunnel_train import (EQUAL_EPISODES, HMM_EPISODES, RECURRENCE_EPISODES, TIME_CAPPED_EPISODES, TUNNEL_TRAIN,
                           VARIANT_TRAIN)

__all__ = [
    "ARCH_SIZES", "DEPTHS", "EQUAL_EPISODES", "EVAL_LENGTH", "FORMAT_VERSION", "HMM_EPISODES", "HOW_MATCHED",
    "LITE_TARGETS", "PAPER_DEPTH_SIZES", "PAPER_DEPTH_TRAIN", "Preset", "RECURRENCE_EPISODES", "SCALES", "SHIPPED",
    "TIME_CAPPED_EPISODES", "TRAIN", "TUNNEL_ARCH_SIZES", "TUNNEL_ARGS", "TUNNEL_MODEL", "TUNNEL_TRAIN",
    "VARIANT_ARGS", "VARIANT_MODEL", "VARIANT_TRAIN", "equal_budget", "get_preset", "lite_target_status",
    "meets_lite_target", "resolve_tunnel_args", "shipped_presets",
]
