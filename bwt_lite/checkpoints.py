"""Checkpoints keyed by the full configuration: safetensors weights + JSON, atomic, hash-verified.

Layout of one checkpoint folder ``<name>-<key[:16]>/``:
- ``model.safetensors``: the weights;
- ``checkpoint.json``: the preset, its key, the weights' SHA-256 and size, training history, versions.
  Written last, so its presence marks a complete checkpoint;
- ``resume/step-NNNNNNN.{safetensors,json}``: periodic training state (weights, optimizer, RNG),
  removed when training completes.

Lookup order (:func:`load_or_train`): the cache directory (``BWT_CACHE_DIR``; else
``MyDrive/bwt_cache`` when Google Drive is mounted on Colab; else the platform user cache), then the
checkpoints shipped with the package, then the hosted ones (:mod:`bwt_lite.hosted`), and only then
training. A missing, truncated or altered file, or a checkpoint whose configuration is not the one
asked for, raises :class:`CheckpointError`; weights never load silently wrong. Every file is written
to a temporary name and renamed into place, so a killed process never leaves a half-written file
under a name that is read back.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from . import __version__
from .device import amp_dtype, device_name, precision_name, resolve_device
from .models import WindTunnelModel, build_model
from .presets import FORMAT_VERSION, Preset
from .train import TrainState, fit

WEIGHTS, META, RESUME = "model.safetensors", "checkpoint.json", "resume"
SHIPPED_DIR = Path(__file__).parent / "data" / "checkpoints"
DRIVE_ROOT = Path("/content/drive/MyDrive")  # where Colab mounts Google Drive


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be trusted (missing, truncated, altered, or of another model)."""


def cache_dir() -> Path:
    """``$BWT_CACHE_DIR`` if set; else ``MyDrive/bwt_cache`` when Google Drive is mounted (so trained
    models survive a Colab session); else the platform user cache directory for bwt_lite."""
    env = os.environ.get("BWT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if DRIVE_ROOT.is_dir():
        return DRIVE_ROOT / "bwt_cache"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("bwt_lite"))


def checkpoint_dir(preset: Preset, root: Path | None = None) -> Path:
    return (cache_dir() if root is None else Path(root)) / f"{preset.name}-{preset.key()[:16]}"


def _clear_hint(path: Path) -> str:
    return f"delete {path} (or run `bwt cache clear`) and train again"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; checkpoints are shared, not secret
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CheckpointError(f"cannot read {path}: {e}; {_clear_hint(path.parent)}") from e


def _read_verified(path: Path, sha256: str, size: int) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CheckpointError(f"cannot read {path}: {e}; {_clear_hint(path.parent)}") from e
    if len(data) != size:
        raise CheckpointError(f"{path} is truncated or padded ({len(data)} bytes, expected {size}); "
                              f"{_clear_hint(path.parent)}")
    if sha256_bytes(data) != sha256:
        raise CheckpointError(f"{path} was altered: its SHA-256 does not match the one recorded; "
                              f"{_clear_hint(path.parent)}")
    return data


# ------------------------------------------------------------------------------------------------
# Final checkpoints


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
    atomic_write(Path(directory) / WEIGHTS, weights)
    atomic_write(Path(directory) / META, json.dumps(meta, indent=1).encode())
    return meta


def load_checkpoint(directory: Path | str, preset: Preset | None = None,
                    device: str | torch.device = "cpu") -> tuple[WindTunnelModel, dict[str, Any]]:
    """Load and verify a checkpoint; with ``preset``, also check it is that configuration's."""
    directory = Path(directory)
    if not (directory / META).exists():
        raise CheckpointError(f"no checkpoint in {directory} ({META} missing)")
    meta = _read_json(directory / META)
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{directory} has checkpoint format {meta.get('format_version')!r}, this bwt_lite "
                              f"reads format {FORMAT_VERSION}; {_clear_hint(directory)}")
    try:
        stored = Preset.from_dict(meta["preset"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{directory / META} has an invalid configuration ({e}); {_clear_hint(directory)}") from e
    if preset is not None and (meta.get("key") != preset.key() or stored.to_dict() != preset.to_dict()):
        raise CheckpointError(
            f"the checkpoint in {directory} belongs to another configuration ({meta.get('name')}, "
            f"arch {stored.model.arch!r}), not to {preset.name} (arch {preset.model.arch!r}); "
            f"{_clear_hint(directory)}")
    if stored.key() != meta.get("key"):
        raise CheckpointError(f"{directory / META} was altered: its key does not match its configuration; "
                              f"{_clear_hint(directory)}")
    try:
        sha, size = meta["weights_sha256"], int(meta["weights_bytes"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{directory / META} lacks the weights' hash ({e}); {_clear_hint(directory)}") from e
    data = _read_verified(directory / WEIGHTS, sha, size)
    model = build_model(stored.model)
    try:
        model.load_state_dict(st_load(data), strict=True)
    except (RuntimeError, ValueError) as e:
        raise CheckpointError(f"weights in {directory} do not fit the {stored.model.arch} model: {e}; "
                              f"{_clear_hint(directory)}") from e
    return model.to(resolve_device(device)).eval(), meta


def find_checkpoint(preset: Preset) -> Path | None:
    """The folder holding ``preset``'s finished checkpoint: the cache first, then the shipped ones."""
    for root in (cache_dir(), SHIPPED_DIR):
        d = checkpoint_dir(preset, root)
        if (d / META).exists():
            return d
    return None


# ------------------------------------------------------------------------------------------------
# Resumable training state


def save_train_state(directory: Path, state: TrainState) -> None:
    """Write ``resume/step-N.{safetensors,json}`` atomically, then drop older states."""
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
    meta = {"step": state.step, "history": state.history, "elapsed_s": state.elapsed_s,
            "param_groups": state.optimizer["param_groups"], "opt_scalars": opt_state, "scaler": state.scaler,
            "sha256": sha256_bytes(blob), "bytes": len(blob)}
    rdir = Path(directory) / RESUME
    stem = f"step-{state.step:07d}"
    atomic_write(rdir / f"{stem}.safetensors", blob)
    atomic_write(rdir / f"{stem}.json", json.dumps(meta).encode())
    for old in rdir.glob("step-*.json"):
        if old.stem != stem:
            old.unlink(missing_ok=True)
            old.with_suffix(".safetensors").unlink(missing_ok=True)


def load_train_state(directory: Path) -> TrainState | None:
    """The newest complete training state under ``directory/resume``, or None."""
    rdir = Path(directory) / RESUME
    for js in sorted(rdir.glob("step-*.json"), reverse=True):
        meta = _read_json(js)
        tensors = st_load(_read_verified(js.with_suffix(".safetensors"), meta["sha256"], meta["bytes"]))
        opt: dict[int, dict[str, Any]] = {}
        for k, v in tensors.items():
            if k.startswith("opt."):
                _, pid, name = k.split(".", 2)
                opt.setdefault(int(pid), {})[name] = v
        for pid, scalars in meta["opt_scalars"].items():
            opt.setdefault(int(pid), {}).update(scalars)
        return TrainState(
            step=meta["step"],
            model={k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")},
            optimizer={"state": opt, "param_groups": meta["param_groups"]},
            generator=tensors["generator"],
            history=meta["history"],
            elapsed_s=meta["elapsed_s"],
            scaler=meta.get("scaler"),
            average={k[len("average."):]: v for k, v in tensors.items() if k.startswith("average.")} or None,
        )
    return None


# ------------------------------------------------------------------------------------------------
# The one entry point chapters and the CLI use


def train_and_save(preset: Preset, *, progress: bool = True, device: str | torch.device = "cpu",
                   fresh: bool = False, ckpt_every: int = 500, log: Callable[[str], None] = print,
                   root: Path | None = None, amp: str = "auto", compile_model: bool = False,
                   log_every_s: float | None = None) -> tuple[WindTunnelModel, dict[str, Any]]:
    """Train ``preset`` into the cache (or ``root``), resuming from its last periodic state unless ``fresh``.

    A state (weights, optimizer, RNG, scaler) is saved every ``ckpt_every`` steps; a run killed at
    any moment restarts from the last one and, on CPU, ends with exactly the weights of an
    uninterrupted run. ``device`` (``"auto"``: the GPU when visible), ``amp`` and ``compile_model``
    are passed to :func:`bwt_lite.train.fit`. With ``log_every_s``, progress lines (steps/s, time
    left, loss, entropy MAE) go to ``log`` at every evaluation and at least that often.
    """
    directory = checkpoint_dir(preset, root)
    dev = resolve_device(device)
    dtype = amp_dtype(amp, dev)
    if fresh:
        shutil.rmtree(directory / RESUME, ignore_errors=True)
    resume = load_train_state(directory)
    how = f"on {device_name(dev)}, {precision_name(dtype)}{', compiled' if compile_model else ''}"
    if resume is not None:
        log(f"resuming {preset.name} from step {resume.step} of {preset.train.steps} ({directory}; {how})")
    else:
        log(f"training {preset.name} for {preset.train.steps} steps "
            f"({'soft targets: exact posterior' if preset.train.target == 'soft' else 'sampled targets'}; {how})")
    model, state = fit(preset.tunnel, preset.model, preset.train, resume=resume,
                       on_checkpoint=lambda s: save_train_state(directory, s), ckpt_every=ckpt_every,
                       progress=progress, device=dev, desc=preset.name, amp=amp, compile_model=compile_model,
                       log=None if log_every_s is None else log, log_every_s=log_every_s or 0.0)
    trained_on = {"device": dev.type, "device_name": device_name(dev), "precision": precision_name(dtype),
                  "compile": compile_model}
    meta = save_checkpoint(directory, preset, model, state, trained_on)
    shutil.rmtree(directory / RESUME, ignore_errors=True)
    return model.eval(), meta


def load_or_train(preset: Preset, *, retrain: bool = False, progress: bool = True,
                  device: str | torch.device = "cpu", ckpt_every: int = 500, log: Callable[[str], None] = print,
                  download: bool = True, amp: str = "auto",
                  compile_model: bool = False) -> tuple[WindTunnelModel, dict[str, Any]]:
    """Load ``preset``'s verified checkpoint (cache, then shipped, then hosted), else train it.

    With ``download`` (the default), a preset published in :mod:`bwt_lite.hosted` is downloaded into
    the cache, hash-verified, before any training; offline, that raises a clear error (pass
    ``download=False`` to train instead). Training resumes from the last periodic state if there is one.
    """
    if not retrain:
        found = find_checkpoint(preset)
        if found is not None:
            return load_checkpoint(found, preset, device=device)
        if download:
            from .hosted import fetch_checkpoint

            fetched = fetch_checkpoint(preset, log=log)
            if fetched is not None:
                return load_checkpoint(fetched, preset, device=device)
    return train_and_save(preset, progress=progress, device=device, fresh=retrain, ckpt_every=ckpt_every,
                          log=log, amp=amp, compile_model=compile_model)
