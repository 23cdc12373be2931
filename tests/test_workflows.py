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
    uses = [s.get("uses", "") for s in steps(wf, "build")]
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    artifact = next(s for s in steps(wf, "build") if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert artifact["with"]["path"] == "_build/html"
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])
    assert "push" in deploy["if"] and "refs/heads/main" in deploy["if"]


def test_book_workflow_uses_the_makefile_python_and_build():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^book:", makefile, re.M) and "tests/retry_stalls.py book" in makefile
    import retry_stalls  # builds with warnings as errors, every chapter even after a failure

    assert '"build", ".", "-W", "--keep-going"' in (ROOT / "tests" / "retry_stalls.py").read_text()
    assert retry_stalls.main([]) == 2
    wf = load("book.yml")
    assert wf["jobs"]["build"]["steps"][1]["with"]["python-version"] == "3.11"


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
    assert "-c constraints.txt" in pinned["constraints"] and "torch==2.13.0" in pinned["torch"]
    assert "torch==2.13.0" in (ROOT / "constraints.txt").read_text()


def test_the_unit_tests_run_on_every_push():
    wf = load("check.yml")
    assert "push" in wf["on"] and "pull_request" in wf["on"]
    assert "make check" in runs(wf, "units") and "torch==2.13.0" in runs(wf, "units")
    assert re.search(r"^check: venv\n\t.*pytest tests .*-p no:nbval", (ROOT / "Makefile").read_text(), re.M)
