"""Checkpoints keyed by the full configuration: safetensors weights + JSON, atomic, hash-verified.

Layout of one checkpoint folder ``<name>-<key[:16]>/``:
- ``model.safetensors``: the weights;
- ``checkpoint.json``: the preset, its key, the weights' SHA-256 and size, training history, versions,
  and ``meta_sha256``, the SHA-256 of the canonical JSON of every other field (:func:`seal_sha256`),
  so an edited field (``train_steps``, a score) is refused like edited weights. The seal detects
  edits and corruption; it is not a signature (anyone can compute it). Written last, so its
  presence marks a complete checkpoint;
- ``resume/step-NNNNNNN.{safetensors,json}``: periodic training state (weights, optimizer, RNG, the
  running sums of the logged loss), sealed the same way and tied to its folder and preset; removed
  when training completes;
- ``.train.lock``: held by the run training into the folder (:mod:`filelock`), so a second identical
  run waits, then uses the first one's checkpoint instead of training again.

The cache root and its clearing are in :mod:`bwt_lite.cache`.

Lookup order (:func:`load_or_train`): the cache directory (``BWT_CACHE_DIR``; else
``MyDrive/bwt_cache`` when Google Drive is mounted on Colab; else the platform user cache), then the
checkpoints shipped with the package, then the hosted ones (:mod:`bwt_lite.hosted`), and only then
training. A missing, truncated or altered file, a JSON of the wrong shape, a file that is not a
regular file (a device, a FIFO, a folder; a symlink is followed and judged by its target), or a
checkpoint whose configuration is not the one asked for, raises :class:`CheckpointError` naming the
file and what is wrong; weights never load silently wrong. Every file is written to a temporary name
and renamed into place, so a killed process never leaves a half-written file under a name that is
read back.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from . import __version__
from .cache import LOCK, META, RESUME, RESUME_NAME, WEIGHTS, prepare_root
from .device import amp_dtype, device_name, precision_name, resolve_device
from .models import WindTunnelModel, build_model
from .presets import FORMAT_VERSION, Preset
from .train import TrainState, fit

SEAL = "meta_sha256"  # the field holding the SHA-256 of the JSON's other fields
RESUME_FORMAT = 2  # 2: resume states carry the logged loss's running sums, their folder, preset key and seal
MAX_JSON_BYTES = 16 * 2**20  # a checkpoint's JSON has kilobytes; a file this large is not one
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


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "of an unknown kind"


def _read_regular(path: Path, limit: int, expected: str) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; anything else is refused unread.

    A symlink is followed: a link to a regular file is read, a link to a device, FIFO or folder is not.
    The type and size are checked before opening (a FIFO's open would wait for a writer, a device's read
    never ends) and again on the open file, which is opened non-blocking in case it was swapped meanwhile.
    """
    hint = _clear_hint(path.parent)
    try:
        st = os.stat(path)
    except OSError as e:
        raise CheckpointError(f"cannot read {path}: {e.strerror or e}; {hint}") from e
    link = f" (a symlink to {os.readlink(path)})" if os.path.islink(path) else ""
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointError(f"{path}{link} is {_kind(st.st_mode)}, not a regular file: refused without reading it; "
                              f"{hint}")
    if st.st_size > limit:
        raise CheckpointError(f"{path}{link} has {st.st_size:,} bytes, more than the {limit:,} {expected}: "
                              f"refused without reading it; {hint}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise CheckpointError(f"{path} changed into a non-regular file while being opened: refused; {hint}")
            data = f.read(limit + 1)
    except OSError as e:
        raise CheckpointError(f"cannot read {path}: {e.strerror or e}; {hint}") from e
    if len(data) > limit:
        raise CheckpointError(f"{path} grew past the {limit:,} {expected} while being read: refused; {hint}")
    return data


def read_json(path: Path | str, max_bytes: int | None = None) -> dict[str, Any]:
    """The JSON object in ``path``, a regular file of at most ``max_bytes`` (default :data:`MAX_JSON_BYTES`),
    or :class:`CheckpointError`."""
    path = Path(path)
    data = _read_regular(path, MAX_JSON_BYTES if max_bytes is None else max_bytes,
                         "bytes a checkpoint's JSON may have")
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise CheckpointError(f"{path} is not valid JSON ({e}); {_clear_hint(path.parent)}") from e
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path} holds a JSON {type(obj).__name__}, not the object a checkpoint's JSON is; "
                              f"{_clear_hint(path.parent)}")
    return obj


def read_verified(path: Path | str, sha256: str, size: int) -> bytes:
    """The bytes of ``path`` if it has exactly ``size`` bytes with this SHA-256, else :class:`CheckpointError`.

    The size is checked before reading, so a file far larger than recorded is never read.
    """
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError:
        st = None  # _read_regular words the error
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size != size:
        raise CheckpointError(f"{path} is truncated or padded ({st.st_size:,} bytes, expected {size:,}): "
                              f"refused without reading it; {_clear_hint(path.parent)}")
    data = _read_regular(path, size, "bytes recorded for it")
    if len(data) != size:
        raise CheckpointError(f"{path} is truncated or padded ({len(data)} bytes, expected {size}); "
                              f"{_clear_hint(path.parent)}")
    if sha256_bytes(data) != sha256:
        raise CheckpointError(f"{path} was altered: its SHA-256 does not match the one recorded; "
                              f"{_clear_hint(path.parent)}")
    return data


def seal_sha256(meta: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces) of every field of ``meta`` but the seal."""
    body = {k: v for k, v in meta.items() if k != SEAL}
    return sha256_bytes(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _check_seal(meta: dict[str, Any], path: Path, hint: str) -> None:
    if SEAL not in meta:
        raise CheckpointError(f"{path} has no {SEAL}: it was written by an older bwt_lite that did not seal its "
                              f"metadata, so its fields cannot be verified; {hint}")
    if meta[SEAL] != seal_sha256(meta):
        raise CheckpointError(f"{path} was altered: its fields do not match their {SEAL} (a field such as "
                              f"train_steps, the history or the preset was edited); {hint}")


_TYPES: dict[type, tuple[tuple[type, ...], str]] = {
    int: ((int,), "an integer"), float: ((int, float), "a number"), str: ((str,), "a string"),
    dict: ((dict,), "an object"), list: ((list,), "a list")}


def _check_fields(meta: dict[str, Any], path: Path, fields: dict[str, type | tuple[type, None]], hint: str) -> None:
    """Every field present with its type (``(type, None)``: that type or null); bools are not numbers."""
    for name, want in fields.items():
        if name not in meta:
            raise CheckpointError(f"{path} lacks the field {name!r}; {hint}")
        typ, nullable = (want[0], True) if isinstance(want, tuple) else (want, False)
        value = meta[name]
        if value is None and nullable:
            continue
        allowed, words = _TYPES[typ]
        if isinstance(value, bool) or not isinstance(value, allowed):
            raise CheckpointError(f"{path}: the field {name!r} should be {words}"
                                  f"{' or null' if nullable else ''}, not {type(value).__name__}; {hint}")
    history = meta.get("history")
    if isinstance(history, list):
        for i, row in enumerate(history):
            if not isinstance(row, dict) or isinstance(row.get("step"), bool) or not isinstance(row.get("step"), int):
                raise CheckpointError(f"{path}: history entry {i} should be an object with an integer 'step', "
                                      f"not {json.dumps(row)[:80]}; {hint}")


CHECKPOINT_FIELDS: dict[str, type | tuple[type, None]] = {
    "format_version": int, "name": str, "key": str, "preset": dict, "params": int, "train_steps": int,
    "target": str, "train_time_s": float, "history": list, "weights_sha256": str, "weights_bytes": int}
RESUME_FIELDS: dict[str, type | tuple[type, None]] = {
    "resume_format": int, "folder": str, "step": int, "history": list, "elapsed_s": float,
    "param_groups": list, "opt_scalars": dict, "scaler": (dict, None), "loss_sum": float, "loss_n": float,
    "sha256": str, "bytes": int}


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
    model = _verified_model(directory, meta, preset)
    return model.to(resolve_device(device)).eval(), meta


def _verified_model(directory: Path, meta: dict[str, Any], preset: Preset | None) -> WindTunnelModel:
    """The model of the checkpoint in ``directory`` described by ``meta``, after checking every field,
    the seal, the configuration (``preset``'s if given) and the weights' hash and shapes."""
    path, hint = directory / META, _clear_hint(directory)
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{directory} has checkpoint format {meta.get('format_version')!r}, this bwt_lite "
                              f"reads format {FORMAT_VERSION}; {hint}")
    _check_fields(meta, path, CHECKPOINT_FIELDS, hint)
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
    _check_seal(meta, path, hint)
    data = read_verified(directory / WEIGHTS, meta["weights_sha256"], meta["weights_bytes"])
    model = build_model(stored.model)
    try:
        model.load_state_dict(st_load(data), strict=True)
    except (RuntimeError, ValueError) as e:
        raise CheckpointError(f"weights in {directory} do not fit the {stored.model.arch} model: {e}; {hint}") from e
    return model


def reseal_checkpoint(directory: Path | str) -> dict[str, Any]:
    """Maintainers: give a checkpoint written before the metadata was sealed its ``meta_sha256``.

    Everything else is verified first as on loading (fields, configuration key, the weights' hash);
    a checkpoint already sealed is left as it is, and one whose seal does not match is refused (a
    reseal must not bless an edit). Only ``checkpoint.json`` is rewritten; the weights are not
    touched. The shipped ones were resealed with::

        python -c "import bwt_lite.checkpoints as c; [c.reseal_checkpoint(d) for d in sorted(c.SHIPPED_DIR.iterdir())]"
    """
    directory = Path(directory)
    meta = read_json(directory / META)
    if SEAL in meta:
        _verified_model(directory, meta, None)
        return meta
    meta[SEAL] = seal_sha256(meta)
    _verified_model(directory, meta, None)
    atomic_write(directory / META, json.dumps(meta, indent=1).encode())
    return meta


def find_checkpoint(preset: Preset) -> Path | None:
    """The folder holding ``preset``'s finished checkpoint: the cache first, then the shipped ones."""
    for root in (cache_dir(), SHIPPED_DIR):
        d = checkpoint_dir(preset, root)
        if (d / META).exists():
            return d
    return None


# ------------------------------------------------------------------------------------------------
# Resumable training state


def save_train_state(directory: Path, state: TrainState, preset: Preset | None = None) -> None:
    """Write ``resume/step-N.{safetensors,json}`` atomically, then drop older states.

    The JSON records the folder it belongs to and, given ``preset`` (as :func:`train_and_save` does),
    the preset's key, so a state copied from another checkpoint is refused on loading.
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
    meta: dict[str, Any] = {"resume_format": RESUME_FORMAT, "folder": Path(directory).name}
    if preset is not None:
        meta["key"] = preset.key()
    meta.update({"step": state.step, "history": state.history, "elapsed_s": state.elapsed_s,
                 "param_groups": state.optimizer["param_groups"], "opt_scalars": opt_state, "scaler": state.scaler,
                 "loss_sum": state.loss_sum, "loss_n": state.loss_n, "sha256": sha256_bytes(blob), "bytes": len(blob)})
    meta[SEAL] = seal_sha256(meta)
    rdir = Path(directory) / RESUME
    stem = f"step-{state.step:07d}"
    atomic_write(rdir / f"{stem}.safetensors", blob)
    atomic_write(rdir / f"{stem}.json", json.dumps(meta).encode())
    for old in rdir.glob("step-*.json"):
        if old.stem != stem:
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
        meta = read_json(js)
        if meta.get("resume_format") != RESUME_FORMAT:
            raise CheckpointError(f"{js} is a resume state of format {meta.get('resume_format', 1)!r}, this bwt_lite "
                                  f"resumes format {RESUME_FORMAT} only; {hint}")
        _check_fields(meta, js, RESUME_FIELDS, hint)
        if meta["folder"] != directory.name:
            raise CheckpointError(f"{js} is the resume state of {meta['folder']}, not of {directory.name} "
                                  f"(copied from another checkpoint folder?); {hint}")
        if preset is not None and meta.get("key", preset.key()) != preset.key():
            raise CheckpointError(f"{js} is the resume state of another configuration than {preset.name} "
                                  f"(its preset key differs); {hint}")
        if js.name != f"step-{meta['step']:07d}.json":
            raise CheckpointError(f"{js} says it is the state of step {meta['step']}; {hint}")
        _check_seal(meta, js, hint)
        tensors = st_load(read_verified(js.with_suffix(".safetensors"), meta["sha256"], meta["bytes"]))
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


# ------------------------------------------------------------------------------------------------
# The one entry point chapters and the CLI use


@contextmanager
def _training_lock(directory: Path, name: str, log: Callable[[str], None]) -> Iterator[None]:
    """Hold ``directory``'s lock file while training into it; say so when another run holds it first.

    The lock is an OS lock (``flock``): the kernel releases it when its process dies, so a killed
    run never leaves a stale lock behind. The file itself stays (removing a lock file others may be
    waiting on would let two runs hold "the" lock at once).
    """
    from filelock import FileLock, Timeout

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
        shutil.rmtree(directory / RESUME, ignore_errors=True)
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
