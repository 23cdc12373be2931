"""The stall guard (tests/nbval_stall.py): a notebook cell that ran about one whole cell timeout
fails, even though its reply arrived in the end."""
from types import SimpleNamespace

import nbval_stall


class IPyNbCell:  # the guard knows nbval's cell items by their class name
    name = "Cell 3"

    def __init__(self, timeout):
        self.config = SimpleNamespace(option=SimpleNamespace(nbval_cell_timeout=timeout))


def report_after(duration: float, timeout, when: str = "call") -> SimpleNamespace:
    report = SimpleNamespace(passed=True, outcome="passed", longrepr=None)
    hook = nbval_stall.pytest_runtest_makereport(IPyNbCell(timeout), SimpleNamespace(when=when, duration=duration))
    next(hook)
    try:
        hook.send(SimpleNamespace(get_result=lambda: report))
    except StopIteration:
        pass
    return report


def test_a_cell_that_ran_a_whole_timeout_fails():
    report = report_after(299.0, "300")
    assert report.outcome == "failed" and "about one cell timeout (300 s)" in report.longrepr


def test_cells_inside_the_timeout_and_other_phases_pass():
    assert report_after(120.0, "300").outcome == "passed"
    assert report_after(299.0, "300", when="setup").outcome == "passed"
    assert report_after(299.0, None).outcome == "passed"
