"""The GitHub Actions workflows parse and have what they need (they cannot run here: validated only)."""
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"


def load(name):
    wf = yaml.safe_load((WORKFLOWS / name).read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
    return wf


def steps(wf, job):
    return wf["jobs"][job]["steps"]


def runs(wf, job):
    return "\n".join(s.get("run", "") for s in steps(wf, job))


# The torch every CI install pins: the constraints file's (bumping it there is the one edit).
TORCH = re.search(r"^torch==\S+", (ROOT / "constraints.txt").read_text(), re.M).group(0)


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_workflow_is_well_formed(name):
    wf = load(name)
    assert isinstance(wf["name"], str) and wf["on"] and wf["jobs"]
    for job_id, job in wf["jobs"].items():
        assert "runs-on" in job and isinstance(job["steps"], list) and job["steps"], job_id
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), f"{name}/{job_id}: a step has exactly one of uses, run"
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", step["uses"]), step["uses"]
        for need in [job.get("needs")] if isinstance(job.get("needs"), str) else job.get("needs", []):
            assert need in wf["jobs"], f"{job_id} needs unknown job {need}"


def test_book_workflow_builds_with_make_book_and_deploys_to_pages():
    wf = load("book.yml")
    assert wf["on"]["push"]["branches"] == ["main"] and "workflow_dispatch" in wf["on"]
    assert "make book" in runs(wf, "build")
    assert "download.pytorch.org/whl/cpu" in runs(wf, "build")  # never the multi-GB CUDA wheels
    assert TORCH in runs(wf, "build")
    uses = [s.get("uses", "") for s in steps(wf, "build")]
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    artifact = next(s for s in steps(wf, "build") if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert artifact["with"]["path"] == "_build/html"
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])
    assert "push" in deploy["if"] and "refs/heads/main" in deploy["if"]


def test_book_workflow_uses_the_makefile_build_and_the_units_python(monkeypatch):
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^book:", makefile, re.M) and "tests/retry_stalls.py book" in makefile
    import retry_stalls  # builds with warnings as errors, every chapter even after a failure

    assert retry_stalls.main([]) == 2
    calls = []
    monkeypatch.setattr(retry_stalls.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or 1)
    monkeypatch.setattr(retry_stalls, "forget_retries", lambda *a: None)
    monkeypatch.setattr(retry_stalls, "book_stalls", lambda: [])
    assert retry_stalls.build_book() == 1 and calls[0][1:] == ["build", ".", "-W", "--keep-going"]

    def pythons(name):
        return {s["with"]["python-version"] for s in steps(load(name), "build" if name == "book.yml" else "units")
                if s.get("uses", "").startswith("actions/setup-python@")}
    assert len(pythons("book.yml")) == 1 and pythons("book.yml") == pythons("check.yml")  # one Python for both


def test_notebook_tests_are_scheduled_and_run_nbval_on_every_chapter():
    wf = load("notebooks.yml")
    crons = [s["cron"] for s in wf["on"]["schedule"]]
    assert crons and all(len(c.split()) == 5 for c in crons)
    minute, hour, dom, month, dow = crons[0].split()
    assert 0 <= int(minute) < 60 and 0 <= int(hour) < 24 and dow in {str(d) for d in range(7)}
    assert "workflow_dispatch" in wf["on"]
    cmd = runs(wf, "nbval")
    assert "pytest chapters" in cmd and "--nbval-lax" in cmd and "--dist loadfile" in cmd
    assert "--nbval-sanitize-with tests/sanitize.cfg" in cmd and (ROOT / "tests" / "sanitize.cfg").exists()
    matrix = wf["jobs"]["nbval"]["strategy"]["matrix"]["include"]
    assert {m["versions"] for m in matrix} == {"pinned", "latest"}
    pinned = next(m for m in matrix if m["versions"] == "pinned")
    assert "-c constraints.txt" in pinned["constraints"] and pinned["torch"] == TORCH


def test_the_unit_tests_run_on_every_push():
    wf = load("check.yml")
    assert "push" in wf["on"] and "pull_request" in wf["on"]
    assert "make check" in runs(wf, "units") and TORCH in runs(wf, "units")
    assert re.search(r"^check: venv\n\t.*pytest tests .*-p no:nbval", (ROOT / "Makefile").read_text(), re.M)
