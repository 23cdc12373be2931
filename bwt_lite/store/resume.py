"""Resumable training state: ``resume/step-NNNNNNN.{safetensors,json}`` inside a checkpoint folder.

A state holds the weights, the optimizer, the episode stream's RNG, the gradient scaler, the weight
average and the running sums of the logged loss, so a run killed at any moment continues to the same
result. Its JSON is sealed like a checkpoint's and records the folder and preset key it belongs to,
so a state copied from elsewhere is refused. Written atomically; older states are dropped once a
newer one is complete; the trainer removes the folder when training completes.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save as st_save

from ..models import build_model
from ..recipes.preset import Preset
from ..train_config import TrainState
from .cache import RESUME, RESUME_NAME
from .files import (SEAL, CheckpointError, atomic_write, check_fields, check_seal, read_json, read_verified,
                    safetensors_load, seal_sha256, sha256_bytes)

RESUME_FORMAT = 2  # 2: resume states carry the logged loss's running sums, their folder, preset key and seal
RESUME_FIELDS: dict[str, type | tuple[type, None]] = {
    "resume_format": int, "folder": str, "key": str, "step": int, "history": list, "elapsed_s": float,
    "param_groups": list, "opt_scalars": dict, "scaler": (dict, None), "loss_sum": float, "loss_n": float,
    "sha256": str, "bytes": int}


def remove_train_states(directory: Path) -> None:
    """Delete ``directory/resume`` so that no moment of the deletion leaves a state that cannot load: every
    state's JSON (which vouches for its weights) goes first, then the weights and anything else, then the folder.
    A run killed half-way through leaves at most weights without a JSON, which :func:`load_train_state` ignores."""
    rdir = Path(directory) / RESUME
    if not rdir.is_dir() or rdir.is_symlink():
        return
    for pattern in ("step-*.json", "*"):
        for f in sorted(rdir.glob(pattern)):
            if f.is_file() or f.is_symlink():
                f.unlink(missing_ok=True)
    try:
        rdir.rmdir()
    except OSError:  # something that is not ours is in it: left alone
        pass


def save_train_state(directory: Path, state: TrainState, preset: Preset) -> None:
    """Write ``resume/step-N.{safetensors,json}`` atomically, then drop older states.

    The JSON records the folder it belongs to and the preset's key, so a state copied from another
    checkpoint or configuration is refused on loading.
    """
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in state.model.items()}
    opt_state: dict[str, dict[str, Any]] = {}
    for pid, pstate in state.optimizer["state"].items():
        for name, value in pstate.items():
            if isinstance(value, torch.Tensor):
                tensors[f"opt.{pid}.{name}"] = value.detach().cpu().contiguous()
            else:
                opt_state.setdefault(str(pid), {})[name] = value
    tensors["generator"] = state.generator.cpu().contiguous()
    for k, v in (state.average or {}).items():
        tensors[f"average.{k}"] = v.detach().cpu().contiguous()
    blob = st_save(tensors)
    meta: dict[str, Any] = {"resume_format": RESUME_FORMAT, "folder": Path(directory).name, "key": preset.key()}
    meta.update({"step": state.step, "history": state.history, "elapsed_s": state.elapsed_s,
                 "param_groups": state.optimizer["param_groups"], "opt_scalars": opt_state, "scaler": state.scaler,
                 "loss_sum": state.loss_sum, "loss_n": state.loss_n, "sha256": sha256_bytes(blob), "bytes": len(blob)})
    meta[SEAL] = seal_sha256(meta)
    rdir = Path(directory) / RESUME
    stem = f"step-{state.step:07d}"
    atomic_write(rdir / f"{stem}.safetensors", blob)
    atomic_write(rdir / f"{stem}.json", json.dumps(meta).encode())
    for old in rdir.glob("step-*.json"):
        if old.stem != stem:  # the JSON first: a state is never left with a JSON whose weights are gone
            old.unlink(missing_ok=True)
            old.with_suffix(".safetensors").unlink(missing_ok=True)


def load_train_state(directory: Path, preset: Preset | None = None) -> TrainState | None:
    """The newest complete training state under ``directory/resume``, or None.

    Raises :class:`CheckpointError` for a state that is damaged, of another format, of another
    checkpoint folder, or (given ``preset``) of another configuration or architecture.
    """
    directory = Path(directory)
    rdir = directory / RESUME
    states = [js for js in rdir.glob("step-*.json") if RESUME_NAME.fullmatch(js.name)]
    for js in sorted(states, reverse=True):
        hint = f"delete {rdir} (or train afresh: fresh=True, `bwt train --fresh`) to start over"
        if not js.with_suffix(".safetensors").exists():  # weights deleted by an interrupted clean-up: no state
            continue
        meta = read_json(js)
        if meta.get("resume_format") != RESUME_FORMAT:
            raise CheckpointError(f"{js} is a resume state of format {meta.get('resume_format', 1)!r}, this bwt_lite "
                                  f"resumes format {RESUME_FORMAT} only; {hint}")
        check_fields(meta, js, RESUME_FIELDS, hint)
        if meta["folder"] != directory.name:
            raise CheckpointError(f"{js} is the resume state of {meta['folder']}, not of {directory.name} "
                                  f"(copied from another checkpoint folder?); {hint}")
        if preset is not None and meta["key"] != preset.key():
            raise CheckpointError(f"{js} is the resume state of another configuration than {preset.name} "
                                  f"(its preset key differs); {hint}")
        named = re.fullmatch(r".+-([0-9a-f]{16})", directory.name)  # a folder named as the cache names them
        if named is not None and named.group(1) != meta["key"][:16]:
            raise CheckpointError(f"{js} belongs to the configuration with key {meta['key'][:16]}, not to the "
                                  f"folder {directory.name}; {hint}")
        if js.name != f"step-{meta['step']:07d}.json":
            raise CheckpointError(f"{js} says it is the state of step {meta['step']}; {hint}")
        check_seal(meta, js, hint)
        if preset is not None and not 0 < meta["step"] < max(preset.train.steps, 1) + 1:
            raise CheckpointError(f"{js} is at step {meta['step']:,}, outside the {preset.train.steps:,} steps of "
                                  f"{preset.name}; {hint}")
        tensors = safetensors_load(read_verified(js.with_suffix(".safetensors"), meta["sha256"], meta["bytes"]),
                                   js.with_suffix(".safetensors"), hint)
        model = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
        if preset is not None:
            _check_architecture(model, preset, js, hint)
        try:
            opt: dict[int, dict[str, Any]] = {}
            for k, v in tensors.items():
                if k.startswith("opt."):
                    _, pid, name = k.split(".", 2)
                    opt.setdefault(int(pid), {})[name] = v
            for pid, scalars in meta["opt_scalars"].items():
                opt.setdefault(int(pid), {}).update(scalars)
            return TrainState(
                step=meta["step"],
                model=model,
                optimizer={"state": opt, "param_groups": meta["param_groups"]},
                generator=tensors["generator"],
                history=meta["history"],
                elapsed_s=meta["elapsed_s"],
                scaler=meta["scaler"],
                average={k[len("average."):]: v for k, v in tensors.items() if k.startswith("average.")} or None,
                loss_sum=float(meta["loss_sum"]),
                loss_n=float(meta["loss_n"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CheckpointError(f"{js} is not a valid resume state ({type(e).__name__}: {e}); {hint}") from e
    return None


def _check_architecture(model: dict[str, torch.Tensor], preset: Preset, path: Path, hint: str) -> None:
    """Refuse a state whose weights are not, name for name and shape for shape, those of ``preset``'s model."""
    with torch.device("meta"):
        want = {k: tuple(v.shape) for k, v in build_model(preset.model).state_dict().items()}
    got = {k: tuple(v.shape) for k, v in model.items()}
    if got != want:
        diff = sorted(set(got) ^ set(want)) or [k for k in want if got[k] != want[k]]
        raise CheckpointError(f"{path} holds the weights of another model than {preset.name} "
                              f"(arch {preset.model.arch!r}; first difference: {diff[0]}); {hint}")


__all__ = ["RESUME_FIELDS", "RESUME_FORMAT", "load_train_state", "save_train_state"]
