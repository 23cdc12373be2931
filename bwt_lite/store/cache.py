"""The checkpoint cache: where it is, the marker that says bwt_lite made it, and clearing it.

Where (:func:`cache_dir`): ``$BWT_CACHE_DIR`` if set; else ``MyDrive/bwt_cache`` when Google Drive
is mounted on Colab; else the platform user cache. Checkpoints shipped inside the package are in
:data:`SHIPPED_DIR`, laid out the same way.

A cache root holds one folder per checkpoint, named ``<preset name>-<key[:16]>``
(:func:`checkpoint_dir`), and a marker file ``.bwt-cache``: a small JSON saying
what wrote it and the layout's format. :func:`prepare_root` writes the marker when it creates the
root, or when it finds the root existing but empty (adopted). A root that already holds other
files and has no marker (``BWT_CACHE_DIR`` pointed at a folder of one's own, or a cache made by an
older bwt_lite) is still used for reading and writing checkpoints, but is never cleared.

:func:`clear_cache` deletes only what the cache writes. In a marked root: inside each folder named
like a checkpoint, its weights, its JSON, its resume states, its lock file and the temporary files
of interrupted writes, then the folder if nothing else is left in it; and the download folders
:mod:`bwt_lite.store.hosted` leaves when killed. Anything else (another file, a folder of another name, a
symlink) stays and is reported, a checkpoint folder whose lock a training run holds is skipped, and
every file that could not be removed is reported with the reason.
"""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..paths import SHIPPED_CHECKPOINTS
from ..version import __version__
from .files import atomic_write

if TYPE_CHECKING:
    from ..recipes.preset import Preset

WEIGHTS, META, RESUME = "model.safetensors", "checkpoint.json", "resume"
LOCK = ".train.lock"  # inside a checkpoint folder: held while a run trains into it
MARKER = ".bwt-cache"
MARKER_FORMAT = 1  # the layout described above

# What the cache writes, by name. The key part is the first 16 hex digits of Preset.key().
ENTRY_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*-[0-9a-f]{16}")
DOWNLOAD_NAME = re.compile(r"\.download-[a-z0-9][a-z0-9._-]*-[0-9a-f]{16}-[a-z0-9_]+")  # tempfile.mkdtemp
RESUME_NAME = re.compile(r"step-\d{7,}\.(?:safetensors|json)")
RESUME_TEMP = re.compile(r"\.step-\d{7,}\.(?:safetensors|json)\.[a-z0-9_]+\.tmp")
POOCH_TEMP = re.compile(r"tmp[a-z0-9_]+")  # pooch downloads into a NamedTemporaryFile first
# `bwt` checks that the cache is writable by creating (and removing) a folder like this one; an
# interrupted check can leave it behind.
PROBE_NAME = re.compile(r"\.bwt-probe-[a-z0-9_]+x+")
SHIPPED_DIR = SHIPPED_CHECKPOINTS  # inside the package
DRIVE_ROOT = Path("/content/drive/MyDrive")  # where Colab mounts Google Drive


def temp_name(name: str) -> re.Pattern[str]:
    """The names of the temporary files :func:`~bwt_lite.store.files.atomic_write` writes on the way to ``name``."""
    return re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]+\.tmp")


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


class CacheError(RuntimeError):
    """A folder that is not a bwt_lite cache, asked to be cleared."""


def is_cache_root(root: Path) -> bool:
    """Whether ``root`` holds the marker bwt_lite writes (a regular file, not a link, with its JSON)."""
    path = Path(root) / MARKER
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
            return False
        marker = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("written_by") == "bwt_lite"


def prepare_root(root: Path) -> bool:
    """Create ``root`` if needed, marking it as a cache when it is new or empty; whether it is marked.

    An existing folder that holds anything and no marker is left unmarked: checkpoints can be read
    from and written to it, but :func:`clear_cache` refuses it.
    """
    root = Path(root)
    if is_cache_root(root):
        return True
    root.mkdir(parents=True, exist_ok=True)
    with os.scandir(root) as it:
        if any(True for _ in it):
            return False
    marker = {"written_by": "bwt_lite", "bwt_lite_version": __version__, "format": MARKER_FORMAT,
              "about": "a bwt_lite checkpoint cache; `bwt cache clear` removes only the checkpoint folders it wrote"}
    # written under a temporary name and renamed, so a killed process never leaves half a marker
    atomic_write(root / MARKER, json.dumps(marker, indent=1).encode())
    return True


@dataclass
class ClearReport:
    """What :func:`clear_cache` did."""

    root: Path
    existed: bool = True
    folders: int = 0  # checkpoint (and download) folders removed entirely
    files: int = 0  # files removed
    kept: list[Path] = field(default_factory=list)  # things the cache did not write, left in place
    busy: list[Path] = field(default_factory=list)  # checkpoint folders a training run holds, skipped
    failures: list[tuple[Path, str]] = field(default_factory=list)  # (path, why) for what could not be removed

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        """One line for a person: what was removed, left, skipped, and how many removals failed."""
        if not self.existed:
            return f"nothing to clear: {self.root} does not exist"
        text = f"removed {self.folders} checkpoint folder(s) ({self.files} file(s)) from {self.root}"
        if self.busy:
            text += f"; skipped {len(self.busy)} in use by a training run: {_names(self.busy, self.root)}"
        if self.kept:
            text += f"; left {len(self.kept)} item(s) bwt_lite did not write: {_names(self.kept, self.root)}"
        if self.failures:
            text += f"; could not remove {len(self.failures)} item(s)"
        return text


def _names(paths: list[Path], root: Path, most: int = 5) -> str:
    shown = [str(p.relative_to(root)) for p in paths[:most]]
    return ", ".join(shown) + (f" and {len(paths) - most} more" if len(paths) > most else "")


def clear_cache(root: Path) -> ClearReport:
    """Remove the checkpoints the cache wrote under ``root`` (see the module's docstring for what).

    Raises :class:`CacheError` when ``root`` exists but has no cache marker: then nothing is removed.
    Removal failures (a permission error...) do not stop the rest; they are in the report.
    """
    root = Path(root)
    report = ClearReport(root)
    if not os.path.lexists(root):
        report.existed = False
        return report
    if not is_cache_root(root):
        raise CacheError(
            f"refusing to clear {root}: it has no {MARKER} marker, so it was not created by bwt_lite as a cache "
            f"(BWT_CACHE_DIR may point at a folder of your own, or an older bwt_lite made it) and it may hold "
            f"other files; nothing was removed. Delete the checkpoint folders in it yourself if you mean to")
    for path in _listing(root, report):
        name = path.name
        if name == MARKER:
            continue  # the root stays a cache
        if ENTRY_NAME.fullmatch(name) and _is_dir(path):
            _clear_checkpoint(path, report)
        elif DOWNLOAD_NAME.fullmatch(name) and _is_dir(path):
            _clear_folder(path, lambda n: n in (WEIGHTS, META) or POOCH_TEMP.fullmatch(n) is not None, report)
        elif temp_name(MARKER).fullmatch(name) and _is_file(path):
            _remove(path, report)
        elif PROBE_NAME.fullmatch(name) and _is_dir(path):
            if _is_dir(path / RESUME):
                _clear_folder(path / RESUME, lambda n: set(n) == {"x"}, report, count=False)
            _rmdir_if_empty(path, report, count=False)
        else:
            report.kept.append(path)
    return report


def _clear_checkpoint(folder: Path, report: ClearReport) -> None:
    """Empty one checkpoint folder of what the cache wrote, unless a training run holds its lock."""
    from filelock import FileLock, Timeout

    lock = None
    if os.path.lexists(folder / LOCK):
        lock = FileLock(folder / LOCK)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            report.busy.append(folder)
            return
        except OSError:
            lock = None  # an unreadable lock file: the removal below reports it
    try:
        own = {WEIGHTS, META, LOCK}
        temps = [temp_name(n) for n in (WEIGHTS, META)]
        # the JSON first: a clear that stops half-way never leaves a checkpoint.json without its weights
        meta_first = _is_file(folder / META)
        if meta_first:
            _remove(folder / META, report)
        for path in _listing(folder, report):
            if path.name == META and meta_first:
                continue  # removed above, or its failure reported
            if path.name == RESUME and _is_dir(path):
                _clear_folder(path, lambda n: RESUME_NAME.fullmatch(n) is not None
                              or RESUME_TEMP.fullmatch(n) is not None, report, count=False)
            elif (path.name in own or any(t.fullmatch(path.name) for t in temps)) and _is_file(path):
                _remove(path, report)
            else:
                report.kept.append(path)
    finally:
        if lock is not None:
            lock.release()
    _rmdir_if_empty(folder, report)


def _clear_folder(folder: Path, ours: Callable[[str], bool], report: ClearReport, count: bool = True) -> None:
    """Remove the regular files of ``folder`` whose names ``ours`` accepts, then the folder if empty."""
    for path in _listing(folder, report):
        if ours(path.name) and _is_file(path):
            _remove(path, report)
        else:
            report.kept.append(path)
    _rmdir_if_empty(folder, report, count=count)


def _listing(folder: Path, report: ClearReport) -> list[Path]:
    try:
        with os.scandir(folder) as it:
            return sorted(Path(e.path) for e in it)
    except OSError as e:
        report.failures.append((folder, e.strerror or str(e)))
        return []


def _is_dir(path: Path) -> bool:  # a real folder, not a link to one
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_file(path: Path) -> bool:  # a regular file, not a link, device or FIFO
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _remove(path: Path, report: ClearReport) -> None:
    try:
        os.unlink(path)
        report.files += 1
    except FileNotFoundError:
        pass  # removed meanwhile by someone else: gone, as asked
    except OSError as e:
        report.failures.append((path, e.strerror or str(e)))


def _rmdir_if_empty(folder: Path, report: ClearReport, count: bool = True) -> None:
    """Remove ``folder`` if nothing is left in it (what was kept or failed stays, and so does the folder)."""
    try:
        with os.scandir(folder) as it:
            if any(True for _ in it):
                return
        os.rmdir(folder)
        if count:
            report.folders += 1
    except FileNotFoundError:
        pass
    except OSError as e:
        report.failures.append((folder, e.strerror or str(e)))


__all__ = ["DRIVE_ROOT", "LOCK", "MARKER", "META", "RESUME", "SHIPPED_DIR", "WEIGHTS", "CacheError", "ClearReport",
           "cache_dir", "checkpoint_dir", "clear_cache", "is_cache_root", "prepare_root"]
