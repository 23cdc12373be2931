"""The checkpoint file format's building blocks: atomic writes, guarded reads, hashes and the seal.

Everything a stored file needs, whatever it holds (a trained model, a resume state, a training
trajectory): :func:`atomic_write` writes to a temporary name and renames it into place, so a killed
process never leaves a half-written file under a name that is read back; :func:`read_json` and
:func:`read_verified` read only regular files of a bounded size (a device, a FIFO or a folder is
refused unread; a symlink is followed and judged by its target); :func:`seal_sha256` is the SHA-256
of a JSON's other fields, so an edited field is refused like edited weights. A failure is a
:class:`CheckpointError` naming the file and what is wrong. The format itself is described in
``docs/checkpoints.md``.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

SEAL = "meta_sha256"  # the field holding the SHA-256 of the JSON's other fields
MAX_JSON_BYTES = 16 * 2**20  # a checkpoint's JSON has kilobytes; a file this large is not one


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be trusted (missing, truncated, altered, or of another model)."""


def clear_hint(path: Path) -> str:
    """What to do about a checkpoint folder that cannot be trusted: that folder only, never the whole cache."""
    return f"delete the folder {path} and train again (`bwt train ... --fresh` does both)"


def safetensors_load(data: bytes, path: Path, hint: str) -> dict[str, Any]:
    """The tensors in ``data`` (the bytes of ``path``), or :class:`CheckpointError` naming the file when they are
    not a safetensors file (bytes crafted to match a recomputed hash and seal, say)."""
    from safetensors.torch import load

    try:
        return load(data)
    except Exception as e:  # safetensors raises its own error types for malformed headers and data
        raise CheckpointError(f"{path} is not a readable safetensors file ({type(e).__name__}: {e}); {hint}") from e


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
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        if e.filename is None:  # a full disk says "No space left on device" without saying where
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise
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
    hint = clear_hint(path.parent)
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
        raise CheckpointError(f"{path} is not valid JSON ({e}); {clear_hint(path.parent)}") from e
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path} holds a JSON {type(obj).__name__}, not the object a checkpoint's JSON is; "
                              f"{clear_hint(path.parent)}")
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
                              f"refused without reading it; {clear_hint(path.parent)}")
    data = _read_regular(path, size, "bytes recorded for it")
    if len(data) != size:
        raise CheckpointError(f"{path} is truncated or padded ({len(data)} bytes, expected {size}); "
                              f"{clear_hint(path.parent)}")
    if sha256_bytes(data) != sha256:
        raise CheckpointError(f"{path} was altered: its SHA-256 does not match the one recorded; "
                              f"{clear_hint(path.parent)}")
    return data


def seal_sha256(meta: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces) of every field of ``meta`` but the seal."""
    body = {k: v for k, v in meta.items() if k != SEAL}
    return sha256_bytes(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def check_seal(meta: dict[str, Any], path: Path, hint: str) -> None:
    if SEAL not in meta:
        raise CheckpointError(f"{path} has no {SEAL}: it was written by an older bwt_lite that did not seal its "
                              f"metadata, so its fields cannot be verified; {hint}")
    if meta[SEAL] != seal_sha256(meta):
        raise CheckpointError(f"{path} was altered: its fields do not match their {SEAL} (a field such as "
                              f"train_steps, the history or the preset was edited); {hint}")


_TYPES: dict[type, tuple[tuple[type, ...], str]] = {
    int: ((int,), "an integer"), float: ((int, float), "a number"), str: ((str,), "a string"),
    dict: ((dict,), "an object"), list: ((list,), "a list")}


def check_fields(meta: dict[str, Any], path: Path, fields: dict[str, type | tuple[type, None]], hint: str) -> None:
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



__all__ = ["MAX_JSON_BYTES", "SEAL", "CheckpointError", "atomic_write", "check_fields", "check_seal", "clear_hint",
           "safetensors_load",
           "read_json", "read_verified", "seal_sha256", "sha256_bytes"]
