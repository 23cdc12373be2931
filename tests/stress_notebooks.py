"""Stress check for kernel stalls: execute every chapter several times in a row, each in a fresh
kernel with the book's per-cell timeout, and report the time of every run. A stall shows as a
run far slower than the others or as a cell timeout; either fails the check (exit 1).

Usage: ``python tests/stress_notebooks.py [--repeat N] [--timeout S] [--json] [NOTEBOOK ...]``
(default: every chapter, 3 times; ``make stress N=3`` runs it with an empty model cache).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parents[1]
# A run slower than this multiple of the chapter's median run counts as a stall even if no
# cell reached the timeout.
STALL_FACTOR = 3.0


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def timings(nb) -> tuple[int, float, float, float, float]:
    """From the timestamps nbclient records: the slowest cell (index, seconds), the seconds spent in
    cells (each request's arrival to its reply), and the first arrival and last reply (epoch s)."""
    best, total, first, last = (-1, 0.0), 0.0, float("inf"), float("-inf")
    for i, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        if "shell.execute_reply" in timing and "iopub.execute_input" in timing:
            began, ended = _seconds(timing["iopub.execute_input"]), _seconds(timing["shell.execute_reply"])
            total += ended - began
            first, last = min(first, began), max(last, ended)
            best = max(best, (i, ended - began), key=lambda x: x[1])
    return best[0], best[1], total, first, last


def execute(path: Path, timeout: int) -> tuple[float, str | None, str]:
    """Seconds to execute ``path`` in a fresh kernel, the error (None when it ran clean), and where
    the time went (kernel start, cells, the slowest cell, waits between cells, shutdown)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.time()
    error = None
    try:
        client.execute()
    except CellTimeoutError as exc:
        error = f"cell timeout: {str(exc).splitlines()[0]}"
    except (CellExecutionError, DeadKernelError) as exc:
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    end = time.time()
    cell, cell_s, cells_s, first, last = timings(nb)
    where = ""
    if error is None and cell >= 0:
        where = (f"start {first - t0:.1f} s, cells {cells_s:.1f} s (slowest: cell {cell}, {cell_s:.1f} s), "
                 f"between cells {last - first - cells_s:.1f} s, shutdown {end - last:.1f} s")
    return end - t0, error, where


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell (the book's)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.timeout < 1:
        ap.error("--repeat and --timeout must be >= 1")
    notebooks = args.notebooks or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    runs: dict[str, list[float]] = {p.stem: [] for p in notebooks}
    failures: list[str] = []
    for r in range(args.repeat):
        for path in notebooks:
            seconds, error, where = execute(path, args.timeout)
            runs[path.stem].append(seconds)
            status = f"ok ({where})" if error is None else error
            print(f"run {r + 1}/{args.repeat} {path.stem}: {seconds:.1f} s {status}", file=sys.stderr, flush=True)
            if error is not None:
                failures.append(f"{path.stem} run {r + 1}: {error}")
    rows = []
    for name, times in runs.items():
        med = statistics.median(times)
        slow = [t for t in times if t > STALL_FACTOR * med]
        failures += [f"{name}: a run took {t:.0f} s, over {STALL_FACTOR}x the median {med:.0f} s" for t in slow]
        rows.append({"chapter": name, "runs": len(times), "min_s": min(times), "median_s": med, "max_s": max(times)})
    if args.json:
        print(json.dumps({"rows": rows, "failures": failures}))
    else:
        print(f"{'chapter':40s} {'runs':>4s} {'min s':>7s} {'median s':>9s} {'max s':>7s}")
        for row in rows:
            print(f"{row['chapter']:40s} {row['runs']:4d} {row['min_s']:7.1f} {row['median_s']:9.1f} {row['max_s']:7.1f}")
        total = sum(len(t) for t in runs.values())
        print(f"{total} executions, {len(failures)} stalls or failures")
        for line in failures:
            print(f"  {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
