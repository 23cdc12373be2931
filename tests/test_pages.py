"""What a reader meets on a chapter's page, checked on the notebooks (check_book.py checks the built
pages): a core path of at most 3,000 words of prose on first load with the audit collapsed in a final
"Going further" section, no checker hint printed, visible code within 88 columns, and figures with
alt text and a numbered caption."""
import json
import re
from pathlib import Path

import pytest

import prose_words

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
MAX_COLUMNS = 88
HIDDEN = {"hide-cell", "hide-input", "remove-cell", "remove-input"}


def cells(path):
    return json.loads(path.read_text())["cells"]


def source(cell):
    return "".join(cell["source"])


def outputs_text(cell):
    text = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            text.append("".join(out["text"]))
        else:
            text += ["".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(text)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_first_load_prose_fits_a_sitting(path):
    words = prose_words.chapter_words(path)
    assert words <= prose_words.MAX_WORDS, f"{words} words of prose on first load (at most {prose_words.MAX_WORDS})"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_audit_is_a_final_going_further_section(path):
    headings = [m.group(1) for c in cells(path) if c["cell_type"] == "markdown"
                for m in re.finditer(r"^## (.+)$", source(c), re.M)]
    assert headings and headings[-1].startswith("Going further"), f"last section: {headings[-1:]}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_checker_hint_is_printed(path):
    printed = [i for i, c in enumerate(cells(path)) if "Not yet: " in outputs_text(c)]
    assert not printed, f"cells {printed} print a checker's hint: the template should raise NotImplementedError"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_visible_code_fits_the_column(path):
    long = [f"cell {i}: {line[:50]!r}" for i, c in enumerate(cells(path))
            if c["cell_type"] == "code" and not HIDDEN & set(c["metadata"].get("tags", []))
            for line in source(c).splitlines() if len(line) > MAX_COLUMNS]
    assert not long, f"{len(long)} visible code lines over {MAX_COLUMNS} columns: {long[:3]}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_figures_have_alt_text_and_a_caption(path):
    """Every code cell that draws a figure (a PNG output) says what it shows, for a reader who cannot
    see it, and carries a caption (numbered in the book): cell metadata
    ``mystnb: {image: {alt: ...}, figure: {caption: ..., name: ...}}``."""
    missing = []
    for i, c in enumerate(cells(path)):
        if c["cell_type"] != "code" or not any("image/png" in o.get("data", {}) for o in c.get("outputs", [])):
            continue
        meta = c["metadata"].get("mystnb", {})
        alt = meta.get("image", {}).get("alt", "")
        figure = meta.get("figure", {})
        if len(alt.split()) < 6 or not figure.get("caption") or not figure.get("name"):
            missing.append(i)
    assert not missing, f"figure cells without alt text (6+ words), caption and name: {missing}"
