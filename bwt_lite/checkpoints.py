"""Trained models on demand: load a verified checkpoint if there is one, else train and store it.

The one entry point chapters and the command line use is :func:`load_or_train`; it looks in the
cache directory (``BWT_CACHE_DIR``; else ``MyDrive/bwt_cache`` when Google Drive is mounted on Colab;
else the platform user cache), then among the checkpoints shipped with the package, then among the
hosted ones (:mod:`bwt_lite.store.hosted`), and only then trains (:func:`train_and_save`, resumable,
one run per checkpoint folder at a time). The files themselves (format, verification, atomic writes,
the cache folder) are :mod:`bwt_lite.store`'s; this module only joins the store and the trainer
(:func:`bwt_lite.train.fit`). ``docs/checkpoints.md`` describes the format and the lookup order.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from filelock import FileLock, Timeout

from .models import WindTunnelModel
from .presets import Preset
from .runtime.device import amp_dtype, cpu_model, device_name, precision_name, resolve_device
from .store.cache import LOCK, META, cache_dir, checkpoint_dir, prepare_root
from .store.checkpoint import find_checkpoint, load_checkpoint, save_checkpoint
from .store.files import SEAL, CheckpointError, read_json
from .store.hosted import fetch_checkpoint
from .store.resume import load_train_state, remove_train_states, save_train_state
from .train import fit


@contextmanager
def _training_lock(directory: Path, name: str, log: Callable[[str], None]) -> Iterator[None]:
    """Hold ``directory``'s lock file while training into it; say so when another run holds it first.

    The lock is an OS lock (``flock``): the kernel releases it when its process dies, so a killed
    run never leaves a stale lock behind. The file itself stays (removing a lock file others may be
    waiting on would let two runs hold "the" lock at once).
    """
    lock = FileLock(directory / LOCK)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        log(f"{name}: another run is training it into {directory}; waiting for it to finish "
            f"(lock file {directory / LOCK})")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _seal_of(directory: Path) -> str | None:
    """The seal of the finished checkpoint in ``directory`` (which identifies that version of it), or None."""
    try:
        return read_json(directory / META).get(SEAL) if os.path.lexists(directory / META) else None
    except CheckpointError:
        return None


def train_and_save(preset: Preset, *, progress: bool = True, device: str | torch.device = "cpu",
                   fresh: bool = False, ckpt_every: int = 500, log: Callable[[str], None] = print,
                   root: Path | None = None, amp: str = "auto", compile_model: bool = False,
                   log_every_s: float | None = None) -> tuple[WindTunnelModel, dict[str, Any]]:
    """Train ``preset`` into the cache (or ``root``), resuming from its last periodic state unless ``fresh``.

    A state (weights, optimizer, RNG, scaler, logged-loss sums) is saved every ``ckpt_every`` steps; a
    run killed at any moment restarts from the last one and, on CPU, ends with exactly the weights and
    the logged history of an uninterrupted run. ``device`` (``"auto"``: the GPU when visible), ``amp``
    and ``compile_model`` are passed to :func:`bwt_lite.train.fit`. With ``log_every_s``, progress
    lines (steps/s, time left, loss, entropy MAE) go to ``log`` at every evaluation and at least that often.

    One run at a time trains a given checkpoint folder: a second one waits for the lock and, when the
    first has written a new checkpoint meanwhile, loads it instead of training again (and logs so).
    """
    directory = checkpoint_dir(preset, root)
    prepare_root(directory.parent)
    directory.mkdir(exist_ok=True)
    before = _seal_of(directory)
    with _training_lock(directory, preset.name, log):
        after = _seal_of(directory)
        if after is not None and after != before:
            model, meta = load_checkpoint(directory, preset, device=device)
            log(f"{preset.name}: another run finished training it while this one waited; using its checkpoint "
                f"({directory}) instead of training again")
            return model, meta
        return _train_and_save_locked(preset, directory, progress=progress, device=device, fresh=fresh,
                                      ckpt_every=ckpt_every, log=log, amp=amp, compile_model=compile_model,
                                      log_every_s=log_every_s)


def _train_and_save_locked(preset: Preset, directory: Path, *, progress: bool, device: str | torch.device,
                           fresh: bool, ckpt_every: int, log: Callable[[str], None], amp: str,
                           compile_model: bool, log_every_s: float | None) -> tuple[WindTunnelModel, dict[str, Any]]:
    dev = resolve_device(device)
    dtype = amp_dtype(amp, dev)
    if fresh:
        remove_train_states(directory)
    resume = load_train_state(directory, preset)
    how = f"on {device_name(dev)}, {precision_name(dtype)}{', compiled' if compile_model else ''}"
    if resume is not None:
        log(f"resuming {preset.name} from step {resume.step} of {preset.train.steps} ({directory}; {how})")
    else:
        log(f"training {preset.name} for {preset.train.steps} steps "
            f"({'soft targets: exact posterior' if preset.train.target == 'soft' else 'sampled targets'}; {how})")
    model, state = fit(preset.tunnel, preset.model, preset.train, resume=resume,
                       on_checkpoint=lambda s: save_train_state(directory, s, preset), ckpt_every=ckpt_every,
                       progress=progress, device=dev, desc=preset.name, amp=amp, compile_model=compile_model,
                       log=None if log_every_s is None else log, log_every_s=log_every_s or 0.0)
    trained_on = {"device": dev.type, "device_name": device_name(dev), "precision": precision_name(dtype),
                  "compile": compile_model}
    if dev.type == "cpu":
        trained_on["cpu"] = cpu_model()  # one-thread runs repeat bit for bit only on the same kind of CPU
    meta = save_checkpoint(directory, preset, model, state, trained_on)
    remove_train_states(directory)
    return model.eval(), meta


def load_or_train(preset: Preset, *, retrain: bool = False, progress: bool = True,
                  device: str | torch.device = "cpu", ckpt_every: int = 500, log: Callable[[str], None] = print,
                  download: bool = True, amp: str = "auto",
                  compile_model: bool = False) -> tuple[WindTunnelModel, dict[str, Any]]:
    """Load ``preset``'s verified checkpoint (cache, then shipped, then hosted), else train it.

    With ``download`` (the default), a preset published in :mod:`bwt_lite.store.hosted` is downloaded into
    the cache, hash-verified, before any training; offline, that raises a clear error (pass
    ``download=False`` to train instead). Training resumes from the last periodic state if there is one.
    """
    if not retrain:
        found = find_checkpoint(preset)
        if found is not None:
            return load_checkpoint(found, preset, device=device)
        if download:
            fetched = fetch_checkpoint(preset, log=log)
            if fetched is not None:
                return load_checkpoint(fetched, preset, device=device)
    return train_and_save(preset, progress=progress, device=device, fresh=retrain, ckpt_every=ckpt_every,
                          log=log, amp=amp, compile_model=compile_model)


# the store's names the chapters and the command line use with load_or_train, importable from here too
__all__ = ["CheckpointError", "cache_dir", "checkpoint_dir", "find_checkpoint", "load_checkpoint", "load_or_train",
           "train_and_save"]
