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
