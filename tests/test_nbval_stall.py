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


def test_a_run_whose_only_failures_are_stalls_retries_those_notebooks_once(tmp_path, monkeypatch):
    import json

    import retry_stalls

    calls = []

    def fake_pytest(cmd, env):
        calls.append(cmd[3:])
        if len(calls) == 1:  # the first run: one notebook stalled, nothing else failed
            record = {"failed": ["chapters/03_x.ipynb"], "stalled": ["chapters/03_x.ipynb"]}
            (tmp_path / "stalls.json").write_text(json.dumps(record))
            return 1
        return 0

    monkeypatch.setattr(retry_stalls, "STALL_RECORD", tmp_path / "stalls.json")
    monkeypatch.setattr(retry_stalls, "RETRIES", tmp_path / "retries.json")
    monkeypatch.setattr(retry_stalls.subprocess, "call", fake_pytest)
    assert retry_stalls.run_tests(["-n", "2"]) == 0
    assert calls == [["-n", "2"], ["-n", "2", "chapters/03_x.ipynb"]]
    (entry,) = json.loads((tmp_path / "retries.json").read_text())
    assert entry["items"] == ["chapters/03_x.ipynb"] and entry["passed_on_retry"] and entry["kind"] == "make test"


def test_a_real_failure_beside_a_stall_is_not_retried(tmp_path, monkeypatch):
    import json

    import retry_stalls

    def fake_pytest(cmd, env):
        record = {"failed": ["chapters/03_x.ipynb", "tests/test_y.py"], "stalled": ["chapters/03_x.ipynb"]}
        (tmp_path / "stalls.json").write_text(json.dumps(record))
        return 1

    monkeypatch.setattr(retry_stalls, "STALL_RECORD", tmp_path / "stalls.json")
    monkeypatch.setattr(retry_stalls, "RETRIES", tmp_path / "retries.json")
    monkeypatch.setattr(retry_stalls.subprocess, "call", fake_pytest)
    assert retry_stalls.run_tests([]) == 1 and not (tmp_path / "retries.json").exists()
