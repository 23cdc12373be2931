"""The book's wiring: every chapter is in the TOC, has the setup cell, a Colab badge built from
the repository URL in _config.yml, objectives, a time estimate and exercises with checkers."""
import json
import re
from pathlib import Path

import pytest
import yaml

import bwt_lite

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO = CONFIG["repository"]["url"].rstrip("/")
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def toc_files(node):
    if isinstance(node, dict):
        if "file" in node:
            yield node["file"]
        for v in node.values():
            yield from toc_files(v)
    elif isinstance(node, list):
        for v in node:
            yield from toc_files(v)


def test_every_chapter_is_in_the_toc():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    listed = set(toc_files(toc))
    assert {f"chapters/{c.stem}" for c in CHAPTERS} <= listed
    for f in listed | {toc["root"]}:
        assert (ROOT / f"{f}.ipynb").exists() or (ROOT / f"{f}.md").exists(), f


def test_launch_buttons_use_the_repository_url():
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert REPO.startswith("https://github.com/")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_standards(path):
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    src = ["".join(c["source"]) for c in cells]
    first = src[0]
    slug = REPO.removeprefix("https://github.com/")
    badge = f"https://colab.research.google.com/github/{slug}/blob/main/chapters/{path.name}"
    assert badge in first, f"Colab badge should link {badge}"
    assert re.search(r"learning objectives", first, re.I) and re.search(r"estimated time", first, re.I)
    setup = src[1]
    assert cells[1]["cell_type"] == "code" and "setup_notebook(" in setup
    assert f'git+{REPO}@v{bwt_lite.__version__}"' in setup, "install cell must pin this repository at the book's version"
    exercises = [s for s in src if re.match(r"#+ Exercise", s)]
    assert len(exercises) >= 2
    assert sum("<details><summary>Solution</summary>" in s for s in src) >= 2
    assert any("bwt_lite.exercises" in s for s in src)
    assert any(s.startswith("# NBVAL_CHECK_OUTPUT") for s in src)
    assert not any("TODO" in s for c, s in zip(cells, src) if c["cell_type"] == "code")
