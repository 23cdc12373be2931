"""``bwt cache`` and the check that checkpoints can be written under a cache folder before any training."""
from __future__ import annotations

import argparse
import errno
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from ..models import ARCHS
from ..recipes import SCALES
from ..store.cache import MARKER, META, RESUME, CacheError, cache_dir, clear_cache, is_cache_root, prepare_root
from ..store.checkpoint import load_checkpoint
from ..store.files import CheckpointError
from ..tunnels import TUNNELS


# The longest names written under a cache root: a checkpoint folder "<preset name>-<16 hex digits>",
# or the folder a download stages in, ".download-<that name>-<8 random>"; inside it "resume/" holds
# temporary files such as ".step-0000500.safetensors.<8 random>.tmp" (about 40 characters).
_LONGEST_PRESET = max(len(f"{t}-{a}-{s}-soft") for t in TUNNELS for a in ARCHS for s in SCALES)
_PROBE_FOLDER_LEN = len(".download-") + _LONGEST_PRESET + len("-0123456789abcdef-") + 8
_PROBE_FILE_LEN = 64
CHECKPOINT_FOLDER = re.compile(r"[a-z0-9-]+-[0-9a-f]{16}")  # "<preset name>-<key[:16]>", as checkpoint_dir names it


def _short(path: Path) -> str:
    s = str(path)
    return s if len(s) <= 100 else f"{s[:48]}...{s[-40:]} ({len(s):,} characters)"


def check_cache_readable(root: Path | None = None, what: str = "cache directory (BWT_CACHE_DIR)") -> Path:
    """Check that ``root`` (default: :func:`~bwt_lite.store.cache.cache_dir`) can be a cache to read from:
    a name without control characters (a trailing newline from a shell, say) that is a directory if it
    exists. Returns the folder; raises ValueError naming it otherwise."""
    root = cache_dir() if root is None else Path(root)
    where = f"the {what} {_short(root)!r}"
    if any(ord(c) < 32 or ord(c) == 127 for c in str(root)):
        raise ValueError(f"{where} contains a control character (a newline or tab from the shell?); remove it")
    try:
        if root.exists() and not root.is_dir():  # exists() raises for a name too long, among others
            raise ValueError(f"{where} is not a directory")
        above = next((p for p in root.parents if os.path.lexists(p)), None)  # the nearest part that exists
        if not root.exists() and above is not None and not above.is_dir():
            raise ValueError(f"{where} cannot be created: {above} is a file, not a folder")
    except OSError as e:
        raise ValueError(f"{where} cannot be used: {e.strerror or e}") from None
    return root


def check_cache_dir(root: Path | None = None, what: str = "cache directory (BWT_CACHE_DIR)") -> Path:
    """Check that checkpoints can be written under ``root`` (default: :func:`~bwt_lite.store.cache.cache_dir`),
    before any training: a name :func:`check_cache_readable` accepts, created if missing, a directory,
    writable, and its path short enough for the longest file a run writes in it. Tried by creating (and
    removing) a folder and a file of those lengths. Returns the folder; raises ValueError naming it otherwise."""
    root = check_cache_readable(root, what)
    where = f"the {what} {_short(root)}"
    try:
        prepare_root(root)  # created if missing, and marked as a cache when new or empty
        probe = Path(tempfile.mkdtemp(dir=root, prefix=".bwt-probe-", suffix="x" * (_PROBE_FOLDER_LEN - 19)))
        try:
            (probe / RESUME).mkdir()
            (probe / RESUME / ("x" * _PROBE_FILE_LEN)).write_bytes(b"")
        finally:
            shutil.rmtree(probe, ignore_errors=True)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise ValueError(f"{where}: the path is too long for the checkpoint files written in it (they add up "
                             f"to {_PROBE_FOLDER_LEN + len(RESUME) + _PROBE_FILE_LEN + 3} characters to it); "
                             f"choose a shorter one") from None
        if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise ValueError(f"{where} is not writable ({e.strerror})") from None
        raise ValueError(f"{where} cannot be used: {e.strerror or e}") from None
    return root



def cache_listing(root: Path) -> list[str]:
    """One line per checkpoint folder under ``root``: ``complete`` (verified: seal, configuration, weights),
    ``partial (resumable from step N)``, or what is wrong with it; then how many other entries are there
    that bwt_lite did not write, and a note when ``root`` is not marked as a bwt_lite cache."""
    if not root.exists():
        return [f"(no cache yet at {root})"]
    lines, other = [], 0
    for d in sorted(root.iterdir()):
        if not (CHECKPOINT_FOLDER.fullmatch(d.name) and d.is_dir() and not d.is_symlink()):
            other += d.name != MARKER and not d.name.startswith(".bwt-probe-")
            continue
        if (d / META).exists():
            try:
                load_checkpoint(d)
                lines.append(f"{d.name}  complete")
            except CheckpointError as e:
                lines.append(f"{d.name}  damaged or altered: {e}")
        else:
            steps = sorted(int(m.group(1)) for f in (d / RESUME).glob("step-*.json")
                           if (m := re.fullmatch(r"step-(\d+)\.json", f.name)))
            lines.append(f"{d.name}  partial (resumable from step {steps[-1]:,})" if steps
                         else f"{d.name}  empty (a run that stopped before its first saved state)")
    if other:
        lines.append(f"({other} other entr{'y' if other == 1 else 'ies'} in {root} not written by bwt_lite, left out)")
    if not is_cache_root(root):
        lines.append(f"({root} is not marked as a bwt_lite cache; `bwt cache clear` will refuse it)")
    return lines


def cmd_cache(args: argparse.Namespace) -> int:
    root = cache_dir()
    if args.action == "path":
        print(root)
    elif args.action == "list":
        for line in cache_listing(check_cache_readable(root)):
            print(line)
    elif args.action == "clear":
        # only what the cache wrote, in a folder marked as a cache (bwt_lite.store.cache); rc 1 if anything failed
        try:
            report = clear_cache(root)
        except CacheError as e:
            print(f"bwt: error: {e}", file=sys.stderr)
            return 2
        print(report.summary())
        for path, why in report.failures:
            print(f"bwt: could not remove {path}: {why}", file=sys.stderr)
        return 0 if report.ok else 1
    return 0
