"""The Colab path, end to end on this machine.

A learner on Colab runs a chapter's first cell in a Python that already has torch, numpy and
matplotlib but not bwt_lite; the cell pip-installs the package, then the chapter imports it and
loads a shipped checkpoint. Here: the release's wheel is served from a package index on
127.0.0.1, a fresh virtual environment sees this environment's third-party packages (as Colab's
preinstalled ones) but not bwt_lite, and a kernel of that environment executes chapter 2's install
cell and first cells from a folder outside the repository.
"""
from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import bwt_lite
from bwt_lite import release

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "02_transformer_learns_the_posterior.ipynb"


def test_links_follow_the_one_setting():
    assert release.sync_links(ROOT, write=False) == [], "run `make links`: chapters name another repository"
    repo = release.repository_url(ROOT)
    nb = json.loads(CHAPTER.read_text())
    assert release.colab_url(repo, "chapters/" + CHAPTER.name) in "".join(nb["cells"][0]["source"])
    assert f'"{release.install_spec(repo)}"' in "".join(nb["cells"][1]["source"])


def test_sync_links_rewrites_a_moved_repository(tmp_path):
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "chapters").mkdir()
    shutil.copy(CHAPTER, tmp_path / "chapters" / CHAPTER.name)
    config = (tmp_path / "_config.yml").read_text()
    (tmp_path / "_config.yml").write_text(config.replace(release.repository_url(ROOT), "https://github.com/fork/course"))
    assert release.sync_links(tmp_path, write=False) == [tmp_path / "chapters" / CHAPTER.name]
    release.sync_links(tmp_path)
    text = (tmp_path / "chapters" / CHAPTER.name).read_text()
    assert "github/fork/course/blob/main/chapters/" in text
    assert f"git+https://github.com/fork/course@v{bwt_lite.__version__}" in text
    assert release.repository_url(ROOT) not in text
    assert release.sync_links(tmp_path, write=False) == []


@pytest.mark.parametrize("config, match", [
    ("repository:\n  url: https://example.org/x\n", "repository.url must be"),
    ("repository:\n  url: http://github.com/a/b\n", "repository.url must be"),
    ('repository:\n  url: \'https://github.com/a/b"; import os; os.system("x")\'\n', "repository.url must be"),
    ("repository:\n  url: https://github.com/a/b c\n", "repository.url must be"),
    ("repository:\n  url: https://github.com/a\n", "repository.url must be"),
    ("title: no repository\n", "has no repository.url"),
    ("repository: [unclosed\n", "is not valid YAML"),
])
def test_repository_url_is_checked(tmp_path, config, match):
    (tmp_path / "_config.yml").write_text(config)
    with pytest.raises(ValueError, match=match):
        release.repository_url(tmp_path)


def install_cell_runs(monkeypatch, value):
    """Run chapter 2's install cell with bwt_lite 'missing' and pip replaced: the argument lists pip got."""
    import importlib.util

    calls = []

    class Done:
        stdout, stderr = "", ""

        def check_returncode(self):
            return None

    def fake_run(cmd, **kwargs):
        assert isinstance(cmd, list) and not kwargs.get("shell"), "pip must get an argument list, no shell"
        calls.append(cmd)
        return Done()

    source = "".join(json.loads(CHAPTER.read_text())["cells"][1]["source"])
    source = source.split("import bwt_lite\n")[0]  # the install part, not the setup call
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bwt_lite" else real_find(name, *a))
    monkeypatch.setattr(subprocess, "run", fake_run)
    if value is None:
        monkeypatch.delenv("BWT_INSTALL", raising=False)
    else:
        monkeypatch.setenv("BWT_INSTALL", value)
    exec(compile(source, "install-cell", "exec"), {})
    return calls


@pytest.mark.parametrize("value", ['x"; touch /tmp/pwned; "', "$(touch /tmp/pwned)", "bwt-lite==0.1.0"])
def test_the_install_cell_gives_bwt_install_to_pip_as_one_argument(monkeypatch, value):
    (cmd,) = install_cell_runs(monkeypatch, value)
    assert cmd[1:5] == ["-m", "pip", "install", "--quiet"] and cmd[5] == value


@pytest.mark.parametrize("value", [None, "", "   "])
def test_an_empty_bwt_install_means_the_books_version(monkeypatch, value):
    (cmd,) = install_cell_runs(monkeypatch, value)
    assert cmd[5] == release.install_spec(release.repository_url(ROOT))


def _serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *args: None  # quiet
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _preinstalled(tmp_path: Path) -> Path:
    """This environment's third-party packages without bwt_lite, as one folder of links."""
    site = Path(sysconfig.get_paths()["purelib"])
    out = tmp_path / "preinstalled"
    out.mkdir()
    for entry in site.iterdir():
        name = entry.name.lower()
        if name.startswith(("bwt_lite", "bwt-lite", "__editable__", "_bwt_lite")) or name.endswith(".pth"):
            continue
        (out / entry.name).symlink_to(entry)
    return out


def _fresh_venv(tmp_path: Path, preinstalled: Path) -> Path:
    # Without pip of its own: pip and setuptools come with the preinstalled packages, as on Colab
    # (a new venv's bundled setuptools is older than torch requires).
    venv = tmp_path / "colab"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "colab_preinstalled.pth").write_text(f"{preinstalled}\n")
    return python


def test_install_cell_installs_the_released_wheel_and_runs_a_chapter(tmp_path, monkeypatch):
    wheel = release.build_wheel(tmp_path / "dist")
    assert release.missing_checkpoints(wheel) == []

    index = tmp_path / "index"
    (index / "simple" / "bwt-lite").mkdir(parents=True)
    shutil.copy(wheel, index / wheel.name)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (index / "simple" / "bwt-lite" / "index.html").write_text(
        f'<!DOCTYPE html><html><body><a href="../../{wheel.name}#sha256={digest}">{wheel.name}</a></body></html>\n')
    server, url = _serve(index)
    try:
        python = _fresh_venv(tmp_path, _preinstalled(tmp_path))
        kernels = tmp_path / "jupyter" / "kernels" / "colab"
        kernels.mkdir(parents=True)
        (kernels / "kernel.json").write_text(json.dumps({
            "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "fresh environment", "language": "python"}))
        work = tmp_path / "content"  # Colab's working folder: no repository around it
        work.mkdir()
        for var in ("PYTHONPATH", "VIRTUAL_ENV"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
        monkeypatch.setenv("BWT_INSTALL", f"bwt-lite=={bwt_lite.__version__}")
        monkeypatch.setenv("PIP_INDEX_URL", f"{url}/simple")
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # only the local index
        monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        monkeypatch.setenv("BWT_CACHE_DIR", str(tmp_path / "cache"))

        chapter = nbformat.read(CHAPTER, as_version=4)
        code = [c for c in chapter.cells if c.cell_type == "code"]
        upto = next(i for i, c in enumerate(code) if "load_or_train(" in c.source)
        cells = code[: upto + 1] + [nbformat.v4.new_code_cell(
            "import bwt_lite, torch\n"
            "print('FROM', bwt_lite.__file__)\n"
            "print('TORCH', torch.__file__)")]
        nb = nbformat.v4.new_notebook(cells=cells)
        NotebookClient(nb, timeout=300, kernel_name="colab", resources={"metadata": {"path": str(work)}}).execute()
    finally:
        server.shutdown()

    install_out = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert "error" not in install_out.lower(), install_out
    last = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    installed = next(line for line in last.splitlines() if line.startswith("FROM")).split(" ", 1)[1]
    assert Path(installed).is_relative_to(tmp_path / "colab"), f"bwt_lite imported from {installed}"
    assert not Path(installed).is_relative_to(ROOT)
    assert not list((tmp_path / "cache").rglob("*.safetensors")), "the chapter trained instead of loading the shipped model"
