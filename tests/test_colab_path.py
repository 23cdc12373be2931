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


def test_repository_url_is_checked(tmp_path):
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://example.org/x\n")
    with pytest.raises(ValueError, match="repository.url"):
        release.repository_url(tmp_path)


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
