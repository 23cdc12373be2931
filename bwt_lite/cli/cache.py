"""``bwt cache`` and the check that checkpoints can be written under a cache folder before any training."""
from __future__ import annotations

import argparse
import errno
import shutil
import sys
import tempfile
from pathlib import Path

from ..models import ARCHS
from ..presets import SCALES
from ..store.cache import RESUME, CacheError, cache_dir, clear_cache, prepare_root
from ..tunnels import TUNNELS


# The longest names written under a cache root: a checkpoint folder "<preset name>-<16 hex digits>",
# or the folder a download stages in, ".download-<that name>-<8 random>"; inside it "resume/" holds
# temporary files such as ".step-0000500.safetensors.<8 random>.tmp" (about 40 characters).
_LONGEST_PRESET = max(len(f"{t}-{a}-{s}-soft") for t in TUNNELS for a in ARCHS for s in SCALES)
_PROBE_FOLDER_LEN = len(".download-") + _LONGEST_PRESET + len("-0123456789abcdef-") + 8
_PROBE_FILE_LEN = 64


def _short(path: Path) -> str:
    s = str(path)
    return s if len(s) <= 100 else f"{s[:48]}...{s[-40:]} ({len(s):,} characters)"


def check_cache_dir(root: Path | None = None, what: str = "cache directory (BWT_CACHE_DIR)") -> Path:
    """Check that checkpoints can be written under ``root`` (default: :func:`~bwt_lite.store.cache.cache_dir`),
    before any training: created if missing, it must be a directory, writable, and its path short enough
    for the longest file a run writes in it. Tried by creating (and removing) a folder and a file of
    those lengths. Returns the folder; raises ValueError naming it otherwise."""
    root = cache_dir() if root is None else Path(root)
    where = f"the {what} {_short(root)}"
    try:
        if root.exists() and not root.is_dir():  # exists() raises for a name too long, among others
            raise ValueError(f"{where} is not a directory")
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



def cmd_cache(args: argparse.Namespace) -> int:
    root = cache_dir()
    if args.action == "path":
        print(root)
    elif args.action == "list":
        for d in sorted(root.glob("*/")) if root.exists() else []:
            state = "complete" if (d / "checkpoint.json").exists() else "partial (resumable)"
            print(f"{d.name}  {state}")
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
