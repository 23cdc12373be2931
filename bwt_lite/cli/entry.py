"""``main``: parse, run the command, and turn the expected errors into one ``bwt: error: ...`` line and an
exit code."""
from __future__ import annotations

import os
import sys
from typing import Sequence

from ..store.files import CheckpointError
from .common import CommandExit, debug_mode
from .parser import build_parser


class TolerantStream:
    """A text stream that drops what cannot be written (a closed pipe, a full disk) instead of raising, and
    remembers the first such error: a training run whose log reader went away (`bwt train ... | head`)
    goes on to its checkpoint, and ``main`` says at the end what happened to the output."""

    def __init__(self, stream):
        self._stream = stream
        self.error: OSError | None = None

    def write(self, text: str) -> int:
        if self.error is None:
            try:
                return self._stream.write(text)
            except OSError as e:
                self.error = e
        return len(text)

    def flush(self) -> None:
        if self.error is None:
            try:
                self._stream.flush()
            except OSError as e:
                self.error = e

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _stdout_broken() -> bool:
    """Whether standard output cannot take what is written to it (a closed pipe, a full disk)."""
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return False


def _detach_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush at exit cannot fail again
    (and print a second error) after a closed pipe or a full disk."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a stream without a file (tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _describe(e: OSError) -> str:
    """``No space left on device: /path`` rather than ``[Errno 28] ...``."""
    files = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
    return f"{e.strerror or e}{': ' + files if files else ''}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bwt`` with ``argv`` (default: the process's arguments); returns 0, or raises SystemExit
    with the exit code after one ``bwt: error: ...`` line (2: bad input, 1: a failure while running,
    130: interrupted, 141: standard output was closed)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv  # to say which command resumes an interrupted run
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TolerantStream(out), TolerantStream(err)
    try:
        code = args.func(args)
        sys.stdout.flush()
        if sys.stdout.error is not None:  # the work is done; now say what became of its output
            raise sys.stdout.error
        return code
    except CommandExit as e:
        parser.exit(e.code, f"bwt: {e}\n")
    except KeyboardInterrupt:
        if debug_mode():
            raise
        parser.exit(130, "bwt: interrupted\n")
    except BrokenPipeError:  # the reader went away (`bwt ... | head`): nothing to say to it
        if debug_mode():
            raise
        _detach_stdout()
        raise SystemExit(141) from None
    except (ValueError, TypeError, CheckpointError) as e:
        if debug_mode():
            raise
        parser.exit(2, f"bwt: error: {e}\n")
    except (OSError, FloatingPointError) as e:  # I/O while running; a training run that diverged
        if debug_mode():
            raise
        if isinstance(e, OSError) and (e is sys.stdout.error or _stdout_broken()):
            _detach_stdout()
            parser.exit(1, f"bwt: error: cannot write to standard output: {e.strerror or e}\n")
        parser.exit(1, f"bwt: error: {_describe(e) if isinstance(e, OSError) else e}\n")
    finally:
        sys.stdout, sys.stderr = out, err
