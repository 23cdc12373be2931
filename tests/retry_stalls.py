"""Run `make test` and `make book` with one retry of a chapter that stalled, reported, never hidden.

About one chapter execution in a hundred sits idle for one cell timeout (a kernel or client stall
whose root cause is still open: the maintainers' notes, "Kernel stalls"). Until it is fixed, a
chapter that stalled is executed once more; anything else that fails is not retried. Every retry is
printed (``RETRIED: ...``) and recorded in ``_build/timings/retries.json``, which
``tests/check_book.py`` prints again at the end of the build.

    python tests/retry_stalls.py test PYTEST_ARGS...   # pytest, then the stalled notebooks once more
    python tests/retry_stalls.py book                  # jupyter-book build, then the stalled chapters once more

A stall is a notebook cell that timed out, or that took about one whole timeout
(``tests/nbval_stall.py``), and, in the book, a chapter whose execution timed out or took longer than
one timeout. In the tests a retry happens only when every failure is in a stalled notebook.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
RETRIES = BUILD / "timings" / "retries.json"
STALL_RECORD = BUILD / "timings" / "stalls.json"  # written by tests/nbval_stall.py during a pytest run
TIMEOUT_WORDS = ("CellTimeoutError", "Timeout of", "timed out", "about one cell timeout")


def record_retry(kind: str, items: list[str], why: str, passed: bool) -> None:
    """Append one retry to :data:`RETRIES` and print it."""
    RETRIES.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(RETRIES.read_text()) if RETRIES.exists() else []
    old.append({"kind": kind, "items": items, "why": why, "passed_on_retry": passed,
                "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    RETRIES.write_text(json.dumps(old, indent=1) + "\n")
    print(f"RETRIED ({kind}): {', '.join(items)} stalled ({why}); "
          f"{'passed on the retry' if passed else 'failed again'}", flush=True)


def forget_retries(kind: str) -> None:
    """Drop the retries an earlier ``kind`` run recorded (this run records its own)."""
    if RETRIES.exists():
        RETRIES.write_text(json.dumps([r for r in json.loads(RETRIES.read_text()) if r["kind"] != kind], indent=1))


def run_tests(args: list[str]) -> int:
    """pytest ``args``; when it fails only in stalled notebooks, those notebooks once more."""
    forget_retries("make test")
    STALL_RECORD.unlink(missing_ok=True)
    env = {**os.environ, "BWT_STALL_RECORD": str(STALL_RECORD)}
    rc = subprocess.call([sys.executable, "-m", "pytest", *args], env=env)
    if rc == 0 or not STALL_RECORD.exists():
        return rc
    found = json.loads(STALL_RECORD.read_text())
    stalled, failed = set(found["stalled"]), set(found["failed"])
    if not stalled or not failed <= stalled:  # a real failure somewhere: no retry
        return rc
    print(f"retry_stalls: {len(stalled)} notebook(s) stalled and nothing else failed: running them once more",
          flush=True)
    # ``args`` are options only (the test paths come from pytest.ini): the same options, the stalled notebooks
    again = subprocess.call([sys.executable, "-m", "pytest", *args, *sorted(stalled)], env=env)
    record_retry("make test", sorted(stalled), "a cell waited out the cell timeout", again == 0)
    return again


def _cache_timeout() -> float:
    return float(yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"])


def book_stalls() -> list[tuple[str, str]]:
    """Chapters of the last build that stalled: (path relative to the root, why)."""
    from jupyter_cache import get_cache

    from check_book import toc_notebooks

    out = []
    reports = BUILD / "html" / "reports"
    for report in sorted(reports.rglob("*.log")) if reports.is_dir() else []:
        text = report.read_text(errors="replace")
        if any(w in text for w in TIMEOUT_WORDS):
            out.append((report.relative_to(reports).with_suffix("").with_suffix("").as_posix(), "a cell timed out"))
    cache_path = BUILD / ".jupyter_cache"
    if cache_path.is_dir():
        cache, timeout = get_cache(cache_path), _cache_timeout()
        for nb in toc_notebooks(ROOT):
            try:
                record = cache.match_cache_file(str(nb))
            except KeyError:
                continue
            took = (record.data or {}).get("execution_seconds")
            if took is not None and took >= timeout:
                out.append((nb.relative_to(ROOT).with_suffix("").as_posix(),
                            f"executed in {took:.0f} s, longer than one cell timeout"))
    return out


def forget(chapters: list[str]) -> None:
    """Drop the stalled chapters' cache records and move their error reports aside, so a build runs them again."""
    from jupyter_cache import get_cache

    cache_path = BUILD / ".jupyter_cache"
    if cache_path.is_dir():
        cache = get_cache(cache_path)
        for rel in chapters:
            try:
                cache.remove_cache(cache.match_cache_file(str(ROOT / f"{rel}.ipynb")).pk)
            except KeyError:
                pass
    reports, aside = BUILD / "html" / "reports", BUILD / "timings" / "stalled-reports"
    if reports.is_dir():
        aside.mkdir(parents=True, exist_ok=True)
        for report in reports.rglob("*.log"):
            shutil.move(str(report), aside / report.name)


def build_book() -> int:
    """``jupyter-book build . -W --keep-going``; stalled chapters once more; then ``tests/check_book.py``
    and ``tests/check_browser.py``."""
    build = [str(Path(sys.executable).with_name("jupyter-book")), "build", ".", "-W", "--keep-going"]
    forget_retries("make book")
    rc = subprocess.call(build, cwd=ROOT)
    stalls = book_stalls()
    if stalls:
        chapters = sorted({rel for rel, _ in stalls})
        why = "; ".join(f"{rel}: {w}" for rel, w in stalls)
        print(f"retry_stalls: {why}: building once more", flush=True)
        forget(chapters)
        rc = subprocess.call(build, cwd=ROOT)
        record_retry("make book", chapters, why, rc == 0 and not book_stalls())
    if rc != 0:
        return rc
    rc = subprocess.call([sys.executable, str(ROOT / "tests" / "check_book.py")], cwd=ROOT)
    # the pages rendered in headless Chromium, offline: math typeset, code within the column
    browser = subprocess.call([sys.executable, str(ROOT / "tests" / "check_browser.py")], cwd=ROOT)
    return rc or browser


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("test", "book"):
        print("usage: python tests/retry_stalls.py test PYTEST_ARGS... | book", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT / "tests"))
    return run_tests(argv[1:]) if argv[0] == "test" else build_book()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
