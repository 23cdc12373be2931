"""pytest plugin (loaded from pytest.ini): a notebook cell that took about one whole cell timeout
fails, even when its reply did arrive in the end.

A stalled kernel or client waits out the cell timeout and then carries on as if nothing had
happened (seen in the book build: a chapter idle for one timeout, then "succeeded"). No chapter
has a cell anywhere near the timeout, so such a cell is taken for a stall and fails loudly.
"""
from __future__ import annotations

import pytest

STALL_SHARE = 0.95  # a cell that ran this share of --nbval-cell-timeout or more


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    limit = getattr(item.config.option, "nbval_cell_timeout", None)
    if call.when != "call" or not report.passed or type(item).__name__ != "IPyNbCell" or not limit:
        return
    if call.duration >= STALL_SHARE * float(limit):
        report.outcome = "failed"
        report.longrepr = (f"{item.name} took {call.duration:.0f} s, about one cell timeout ({limit} s): a stalled "
                           f"kernel or client is likely (no chapter cell takes that long); rerun, and report it "
                           f"if it comes back")


# With BWT_STALL_RECORD set (tests/retry_stalls.py sets it), the files of every failed test and of every
# notebook with a stalled cell are written there at the end of the run, so that a run whose only
# failures are stalls can retry those notebooks once (and say so).
STALL_WORDS = ("Timeout of", "timed out", "about one cell timeout", "CellTimeoutError")
_failed: set[str] = set()
_stalled: set[str] = set()


def pytest_runtest_logreport(report):
    if not report.failed:
        return
    path = report.nodeid.split("::", 1)[0]
    _failed.add(path)
    if path.endswith(".ipynb") and any(w in str(report.longrepr) for w in STALL_WORDS):
        _stalled.add(path)


def pytest_sessionfinish(session, exitstatus):
    import json
    import os
    from pathlib import Path

    target = os.environ.get("BWT_STALL_RECORD")
    if not target or hasattr(session.config, "workerinput"):  # the controller writes it, not each worker
        return
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_text(json.dumps({"failed": sorted(_failed), "stalled": sorted(_stalled)}) + "\n")
