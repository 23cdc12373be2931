"""A trained model's checkpoint: save it, load and verify it, find it.

One checkpoint folder ``<name>-<key[:16]>/`` (:func:`~bwt_lite.store.cache.checkpoint_dir`) holds
``model.safetensors`` (the weights) and ``checkpoint.json``: the preset, its key, the weights' SHA-256
and size, the training history, versions, and ``meta_sha256``, the seal over every other field
(:func:`~bwt_lite.store.files.seal_sha256`), so an edited field (``train_steps``, a score) is refused
like edited weights. The seal detects edits and corruption; it is not a signature (anyone can compute
it). The JSON is written last, so its presence marks a complete checkpoint.

A missing, truncated or altered file, a JSON of the wrong shape, a file that is not a regular file, or
a checkpoint whose configuration is not the one asked for, raises
:class:`~bwt_lite.store.files.CheckpointError` naming the file and what is wrong; weights never load
silently wrong. ``docs/checkpoints.md`` describes the format and the lookup order.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save as st_save

from ..models import WindTunnelModel, build_model
from ..recipes.key_schema import FORMAT_VERSION
from ..recipes.preset import Preset
from ..runtime.device import resolve_device
from ..train_config import TrainState
from ..version import __version__
from .cache import META, SHIPPED_DIR, WEIGHTS, cache_dir, checkpoint_dir
from .files import (SEAL, CheckpointError, atomic_write, check_fields, check_seal, clear_hint, read_json,
                    read_verified, safetensors_load, seal_sha256, sha256_bytes)

CHECKPOINT_FIELDS: dict[str, type | tuple[type, None]] = {
    "format_version": int, "name": str, "key": str, "preset": dict, "params": int, "train_steps": int,
    "target": str, "train_time_s": float, "history": list, "weights_sha256": str, "weights_bytes": int}


def save_checkpoint(directory: Path, preset: Preset, model: WindTunnelModel, state: TrainState,
                    trained_on: dict[str, Any] | None = None) -> dict[str, Any]:
    """Store a trained model (weights first, the JSON that vouches for them last).

    ``trained_on`` (device, GPU name, precision, compile) is recorded as provenance, not part of the key.
    """
    weights = st_save({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()})
    meta = {
        "format_version": FORMAT_VERSION,
        "name": preset.name,
        "key": preset.key(),
        "preset": preset.to_dict(),
        "params": model.n_params,
        "train_steps": state.step,
        "target": preset.train.target,
        "train_time_s": state.elapsed_s,
        "history": state.history,
        "weights_sha256": sha256_bytes(weights),
        "weights_bytes": len(weights),
        "bwt_lite_version": __version__,
        "torch_version": torch.__version__,
    }
    if trained_on is not None:
        meta["trained_on"] = trained_on
    meta[SEAL] = seal_sha256(meta)
    atomic_write(Path(directory) / WEIGHTS, weights)
    atomic_write(Path(directory) / META, json.dumps(meta, indent=1).encode())
    return meta


def load_checkpoint(directory: Path | str, preset: Preset | None = None,
                    device: str | torch.device = "cpu") -> tuple[WindTunnelModel, dict[str, Any]]:
    """Load and verify a checkpoint; with ``preset``, also check it is that configuration's."""
    directory = Path(directory)
    if not os.path.lexists(directory / META):
        raise CheckpointError(f"no checkpoint in {directory} ({META} missing)")
    meta = read_json(directory / META)
    model = verified_model(directory, meta, preset)
    return model.to(resolve_device(device)).eval(), meta


def verified_model(directory: Path, meta: dict[str, Any], preset: Preset | None) -> WindTunnelModel:
    """The model of the checkpoint in ``directory`` described by ``meta``, after checking every field,
    the seal, the configuration (``preset``'s if given) and the weights' hash and shapes."""
    path, hint = directory / META, clear_hint(directory)
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{directory} has checkpoint format {meta.get('format_version')!r}, this bwt_lite "
                              f"reads format {FORMAT_VERSION}; {hint}")
    check_fields(meta, path, CHECKPOINT_FIELDS, hint)
    try:
        stored = Preset.from_dict(meta["preset"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"{path} has an invalid configuration ({e}); {hint}") from e
    if preset is not None and (meta["key"] != preset.key() or stored.to_dict() != preset.to_dict()):
        raise CheckpointError(
            f"the checkpoint in {directory} belongs to another configuration ({meta['name']}, "
            f"arch {stored.model.arch!r}), not to {preset.name} (arch {preset.model.arch!r}); {hint}")
    if stored.key() != meta["key"]:
        raise CheckpointError(f"{path} was altered: its key does not match its configuration; {hint}")
    check_seal(meta, path, hint)
    named = re.fullmatch(r".+-([0-9a-f]{16})", directory.name)  # a folder named as the cache names them
    if named is not None and named.group(1) != meta["key"][:16]:
        raise CheckpointError(f"{path} is the checkpoint of the configuration with key {meta['key'][:16]} "
                              f"({meta['name']}), not of the folder {directory.name}; {hint}")
    data = read_verified(directory / WEIGHTS, meta["weights_sha256"], meta["weights_bytes"])
    _check_sense(meta, stored, path, hint)
    tensors = safetensors_load(data, directory / WEIGHTS, hint)
    model = build_model(stored.model)
    try:
        model.load_state_dict(tensors, strict=True)
    except (RuntimeError, ValueError) as e:
        raise CheckpointError(f"weights in {directory} do not fit the {stored.model.arch} model: {e}; {hint}") from e
    return model


def _check_sense(meta: dict[str, Any], stored: Preset, path: Path, hint: str) -> None:
    """Fields a trained model's checkpoint can hold: a positive step count no larger than its schedule, a
    non-negative training time, and finite, non-negative held-out scores in its history."""
    problems = []
    if not 0 < meta["train_steps"] <= max(stored.train.steps, stored.train.schedule_steps):
        problems.append(f"train_steps = {meta['train_steps']} (its preset trains {stored.train.steps:,})")
    if not (math.isfinite(meta["train_time_s"]) and meta["train_time_s"] >= 0):
        problems.append(f"train_time_s = {meta['train_time_s']}")
    if meta["params"] <= 0:
        problems.append(f"params = {meta['params']}")
    for row in meta["history"]:
        for name in ("entropy_mae_bits", "kl_bits"):
            value = row.get(name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                problems.append(f"history step {row['step']}: {name} = {value}")
    if problems:
        raise CheckpointError(f"{path} holds values no trained model has: {'; '.join(problems[:3])}; {hint}")


def reseal_checkpoint(directory: Path | str) -> dict[str, Any]:
    """Maintainers: give a checkpoint written before the metadata was sealed its ``meta_sha256``.

    Everything else is verified first as on loading (fields, configuration key, the weights' hash);
    a checkpoint already sealed is left as it is, and one whose seal does not match is refused (a
    reseal must not bless an edit). Only ``checkpoint.json`` is rewritten; the weights are not
    touched. The shipped ones were resealed with::

        python -c "from bwt_lite.store.checkpoint import *; [reseal_checkpoint(d) for d in sorted(SHIPPED_DIR.iterdir())]"
    """
    directory = Path(directory)
    meta = read_json(directory / META)
    if SEAL in meta:
        verified_model(directory, meta, None)
        return meta
    meta[SEAL] = seal_sha256(meta)
    verified_model(directory, meta, None)
    atomic_write(directory / META, json.dumps(meta, indent=1).encode())
    return meta


def find_checkpoint(preset: Preset) -> Path | None:
    """The folder holding ``preset``'s finished checkpoint: the cache first, then the shipped ones."""
    for root in (cache_dir(), SHIPPED_DIR):
        d = checkpoint_dir(preset, root)
        if (d / META).exists():
            return d
    return None


__all__ = ["CHECKPOINT_FIELDS", "SHIPPED_DIR", "find_checkpoint", "load_checkpoint", "reseal_checkpoint", "save_checkpoint",
           "verified_model"]
