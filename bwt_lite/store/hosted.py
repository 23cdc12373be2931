"""Hosted checkpoints: a registry of published files, downloaded with pooch and verified before use.

Each published preset has two files, ``model.safetensors`` and ``checkpoint.json``, each with a URL,
its SHA-256 and its size in bytes. :func:`bwt_lite.checkpoints.load_or_train` calls
:func:`fetch_checkpoint` when neither the cache nor the package has the checkpoint, before it would
train. A download goes to a temporary folder inside the cache; pooch checks each file's SHA-256
(and removes a file that does not match), then the checkpoint is loaded and verified as a whole
(configuration key, sealed metadata, weights hash) and only then moved into place, the JSON last. A tampered,
truncated or replaced file is refused with an error naming the preset and the expected hash, and
nothing of it stays in the cache.

:data:`REGISTRY` lists only what is published; a new tunnel or architecture adds nothing here.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..recipes.preset import Preset
from .cache import META, WEIGHTS, cache_dir, checkpoint_dir, prepare_root
from .checkpoint import load_checkpoint
from .files import CheckpointError, sha256_bytes


@dataclass(frozen=True)
class HostedFile:
    url: str  # where the file is published
    sha256: str  # hex digest of its bytes
    size: int  # bytes


@dataclass(frozen=True)
class HostedCheckpoint:
    key: str  # the full Preset.key() of the configuration the files were trained from
    weights: HostedFile  # model.safetensors
    meta: HostedFile  # checkpoint.json


REGISTRY: dict[str, HostedCheckpoint] = {}
"""The published checkpoints, by preset name; a preset not listed is simply unpublished (it is trained).

Nothing is published yet. To publish a preset: train it (``bwt train ... --scale paper``), upload the
two files of its cache folder (``make release`` copies them and writes their entries), and add a line
``"<preset name>": HostedCheckpoint(key=..., weights=HostedFile(...), meta=HostedFile(...))``, the output
of :func:`registry_entry`. An entry is used only for the exact configuration whose key it carries.
"""


class HostedDownloadError(CheckpointError):
    """A hosted checkpoint that could not be downloaded or did not verify."""


def hosted_checkpoint(preset: Preset) -> HostedCheckpoint | None:
    """The published checkpoint of exactly this configuration, or None."""
    entry = REGISTRY.get(preset.name)
    if entry is None or entry.key != preset.key():
        return None  # not published, or published for another configuration of the same name
    return entry


def fetch_checkpoint(preset: Preset, *, root: Path | None = None, log: Callable[[str], None] = print,
                     retries: int = 3, timeout_s: float = 60.0, backoff_s: float = 2.0) -> Path | None:
    """Download ``preset``'s hosted checkpoint into the cache (or ``root``); its folder, or None if unpublished.

    Network failures are retried ``retries`` times (waiting ``backoff_s``, then twice as long...);
    a file whose SHA-256 is not the registry's is refused at once. Raises :class:`HostedDownloadError`.
    """
    entry = hosted_checkpoint(preset)
    if entry is None:
        return None
    if retries < 1:
        raise ValueError(f"retries must be >= 1, got {retries}")
    root = cache_dir() if root is None else Path(root)
    target = checkpoint_dir(preset, root)
    prepare_root(root)  # created (and marked as a cache) if it does not exist
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".download-{target.name}-"))
    try:
        log(f"downloading {preset.name} ({(entry.weights.size + entry.meta.size) / 1e6:.1f} MB) "
            f"from {entry.weights.url.rsplit('/', 1)[0]}/")
        for name, hosted in ((WEIGHTS, entry.weights), (META, entry.meta)):
            _download(preset, name, hosted, staging, retries, timeout_s, backoff_s)
        try:
            load_checkpoint(staging, preset)  # the configuration key and the weights hash, as for any checkpoint
        except CheckpointError as e:
            raise HostedDownloadError(f"the hosted checkpoint of {preset.name} does not verify ({e}); "
                                      f"nothing was kept in the cache") from e
        target.mkdir(parents=True, exist_ok=True)
        os.replace(staging / WEIGHTS, target / WEIGHTS)
        os.replace(staging / META, target / META)  # last: its presence marks a complete checkpoint
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _download(preset: Preset, name: str, hosted: HostedFile, staging: Path, retries: int, timeout_s: float,
              backoff_s: float) -> None:
    import pooch
    import requests

    where = f"{name} of {preset.name} from {hosted.url}"
    downloader = pooch.HTTPDownloader(progressbar=False, timeout=timeout_s)
    pooch_log = pooch.get_logger()
    level = pooch_log.level
    pooch_log.setLevel(logging.WARNING)  # our own line says what is downloaded
    try:
        for attempt in range(1, retries + 1):
            try:
                pooch.retrieve(hosted.url, known_hash=f"sha256:{hosted.sha256}", fname=name, path=staging,
                               downloader=downloader, progressbar=False)
                break
            except ValueError as e:  # pooch: the SHA-256 does not match (and it removed the file)
                raise HostedDownloadError(
                    f"refused the download of {where}: its SHA-256 is not the expected {hosted.sha256} "
                    f"(the file is truncated, altered or replaced); nothing was kept in the cache") from e
            except requests.exceptions.HTTPError as e:
                status = e.response.status_code if e.response is not None else None
                if status is not None and status < 500:
                    raise HostedDownloadError(f"could not download {where}: HTTP {status}; "
                                              f"train it here instead with download=False") from e
                last: Exception = e
            except (requests.exceptions.RequestException, OSError) as e:
                last = e
            if attempt < retries:
                time.sleep(backoff_s * 2 ** (attempt - 1))
        else:
            raise HostedDownloadError(
                f"could not download {where} after {retries} attempts ({type(last).__name__}: {last}). "
                f"Are you offline? Connect and run again, or train it here instead: "
                f"load_or_train(preset, download=False) or `bwt train`") from last
    finally:
        pooch_log.setLevel(level)
    size = (staging / name).stat().st_size
    if size != hosted.size:  # the hash matched, so the registry's size is wrong: a maintainer's error
        raise HostedDownloadError(f"{where} has {size} bytes, the registry says {hosted.size}; fix the registry")


def registry_entry(directory: Path | str, base_url: str) -> HostedCheckpoint:
    """The registry entry for a finished checkpoint folder whose two files are published under ``base_url``."""
    directory = Path(directory)
    _, meta = load_checkpoint(directory)  # verify before publishing

    def hosted(name: str) -> HostedFile:
        data = (directory / name).read_bytes()
        return HostedFile(url=f"{base_url.rstrip('/')}/{name}", sha256=sha256_bytes(data), size=len(data))

    return HostedCheckpoint(key=meta["key"], weights=hosted(WEIGHTS), meta=hosted(META))


__all__ = ["REGISTRY", "HostedCheckpoint", "HostedDownloadError", "HostedFile", "fetch_checkpoint",
           "hosted_checkpoint", "registry_entry"]
