"""bwt_lite: Bayesian wind tunnels, exact posteriors, small transformers, and their geometry."""
from __future__ import annotations

import sys as _sys
import tempfile as _tempfile
from pathlib import Path as _Path

try:  # torch needs a writable temporary folder when it is imported: say so, instead of a traceback from inside it
    _tempfile.gettempdir()
except FileNotFoundError as _e:
    _why = f"{_e.strerror or _e}: set TMPDIR to a writable folder"
    if _Path(_sys.argv[0] if _sys.argv else "").name == "bwt":  # the command line: one line and exit 2
        _sys.stderr.write(f"bwt: error: {_why}\n")
        raise SystemExit(2) from None
    raise ImportError(f"bwt_lite cannot start: {_why}") from None

from .notebook import setup_notebook  # noqa: E402
from .version import __version__  # noqa: E402

__all__ = ["__version__", "setup_notebook"]
