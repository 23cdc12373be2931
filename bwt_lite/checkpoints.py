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
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from filelock import FileLock, Timeout

from .models import WindTunnelModel
from .recipes import Preset
from .runtime.device import cpu_model, device_name, precision_name
from .runtime.options import RunOptions
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


# the keywords load_or_train and train_and_save take for the fields of RunOptions (how chapters,
# experiments and tests call them); each call turns them into one RunOptions, resolved once
RUN_KEYWORDS = ("progress", "device", "amp", "compile_model", "ckpt_every", "log_every_s")


def run_options(run: RunOptions | None, log: Callable[[str], None], **keywords: Any) -> RunOptions:
    """``run`` (default: :class:`RunOptions`'s defaults) with the :data:`RUN_KEYWORDS` given replacing its
    fields, resolved once. With ``log_every_s`` (not None), progress lines go to ``log``."""
    unknown = sorted(set(keywords) - set(RUN_KEYWORDS))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)}; the run's keywords are "
                        f"{', '.join(RUN_KEYWORDS)}")
    every = keywords.pop("log_every_s", None)
    if every is not None:
        keywords.update(log=log, log_every_s=every)
    return replace(run or RunOptions(), **keywords).resolved()


def train_and_save(preset: Preset, *, run: RunOptions | None = None, fresh: bool = False, root: Path | None = None,
                   log: Callable[[str], None] = print, **keywords: Any) -> tuple[WindTunnelModel, dict[str, Any]]:
    """Train ``preset`` into the cache (or ``root``), resuming from its last periodic state unless ``fresh``.

    ``run`` says how it trains (:class:`RunOptions`: device, ``"auto"`` the GPU when visible; precision;
    compile; progress bar and lines; ``ckpt_every``); the keywords ``progress``, ``device``, ``amp``,
    ``compile_model``, ``ckpt_every`` and ``log_every_s`` replace its fields (:func:`run_options`). With
    ``log_every_s``, progress lines (steps/s, time left, loss, entropy MAE) go to ``log`` at every
    evaluation and at least that often; what this function itself says always goes to ``log``.

    A state (weights, optimizer, RNG, scaler, logged-loss sums) is saved every ``ckpt_every`` steps; a
    run killed at any moment restarts from the last one and, on CPU, ends with exactly the weights and
    the logged history of an uninterrupted run.

    One run at a time trains a given checkpoint folder: a second one waits for the lock and, when the
    first has written a new checkpoint meanwhile, loads it instead of training again (and logs so).
    """
    run = run_options(run, log, **keywords)
    directory = checkpoint_dir(preset, root)
    prepare_root(directory.parent)
    directory.mkdir(exist_ok=True)
    before = _seal_of(directory)
    with _training_lock(directory, preset.name, log):
        after = _seal_of(directory)
        if after is not None and after != before:
            model, meta = load_checkpoint(directory, preset, device=run.device)
            log(f"{preset.name}: another run finished training it while this one waited; using its checkpoint "
                f"({directory}) instead of training again")
            return model, meta
        return _train_and_save_locked(preset, directory, replace(run, desc=preset.name), fresh=fresh, log=log)


def _train_and_save_locked(preset: Preset, directory: Path, run: RunOptions, *, fresh: bool,
                           log: Callable[[str], None]) -> tuple[WindTunnelModel, dict[str, Any]]:
    dev, dtype = run.device, run.dtype
    if fresh:
        remove_train_states(directory)
    resume = load_train_state(directory, preset)
    how = f"on {device_name(dev)}, {precision_name(dtype)}{', compiled' if run.compile_model else ''}"
    if resume is not None:
        log(f"resuming {preset.name} from step {resume.step} of {preset.train.steps} ({directory}; {how})")
    else:
        log(f"training {preset.name} for {preset.train.steps} steps "
            f"({'soft targets: exact posterior' if preset.train.target == 'soft' else 'sampled targets'}; {how})")
    model, state = fit(preset.tunnel, preset.model, preset.train, run=run, resume=resume,
                       on_checkpoint=lambda s: save_train_state(directory, s, preset))
    trained_on = {"device": dev.type, "device_name": device_name(dev), "precision": precision_name(dtype),
                  "compile": run.compile_model}
    if dev.type == "cpu":
        trained_on["cpu"] = cpu_model()  # one-thread runs repeat bit for bit only on the same kind of CPU
    meta = save_checkpoint(directory, preset, model, state, trained_on)
    remove_train_states(directory)
    return model.eval(), meta


def load_or_train(preset: Preset, *, run: RunOptions | None = None, retrain: bool = False, download: bool = True,
                  log: Callable[[str], None] = print, **keywords: Any) -> tuple[WindTunnelModel, dict[str, Any]]:
    """Load ``preset``'s verified checkpoint (cache, then shipped, then hosted) onto the run's device,
    else train it (:func:`train_and_save`, with ``run`` and the same keywords, e.g. ``device="auto"``).

    With ``download`` (the default), a preset published in :mod:`bwt_lite.store.hosted` is downloaded into
    the cache, hash-verified, before any training; offline, that raises a clear error (pass
    ``download=False`` to train instead). Training resumes from the last periodic state if there is one.
    """
    run = run_options(run, log, **keywords)
    if not retrain:
        found = find_checkpoint(preset)
        if found is not None:
            return load_checkpoint(found, preset, device=run.device)
        if download:
            fetched = fetch_checkpoint(preset, log=log)
            if fetched is not None:
                return load_checkpoint(fetched, preset, device=run.device)
    return train_and_save(preset, run=run, fresh=retrain, log=log)


# the store's names the chapters and the command line use with load_or_train, importable from here too
__all__ = ["CheckpointError", "RUN_KEYWORDS", "RunOptions", "cache_dir", "checkpoint_dir", "find_checkpoint",
           "load_checkpoint", "load_or_train", "run_options", "train_and_save"]
