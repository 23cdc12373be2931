"""The book's wiring: every chapter is in the TOC, has the setup cell, a Colab badge built from
the repository URL in _config.yml, objectives, prerequisites, a time estimate, nbval checks as cell
tags, and exercises in the one format of book/instructors.md whose checkers are all tested; the
course pages are in the TOC and every citation has a BibTeX entry; display math stands in its own
block; the book's stylesheet and widget settings are configured."""
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
    assert re.search(r"learning objectives", first, re.I)  # its time: a code cell (tests/test_chapter_times.py)
    setup = src[1]
    assert cells[1]["cell_type"] == "code" and "setup_notebook(" in setup
    assert f'git+{REPO}@v{bwt_lite.__version__}"' in setup, "install cell must pin this repository at the book's version"
    exercises = [s for s in src if re.match(r"#+ Exercise", s)]
    assert len(exercises) >= 2
    assert sum("<details><summary>Solution</summary>" in s for s in src) >= 2
    assert any("bwt_lite.exercises" in s for s in src)
    # nbval reads the cell tag; a comment marker would show on the book's page.
    assert any("nbval-check-output" in c.get("metadata", {}).get("tags", []) for c in cells)
    assert not any("NBVAL_" in s for c, s in zip(cells, src) if c["cell_type"] == "code"), "use nbval cell tags"
    assert not any("TODO" in s for c, s in zip(cells, src) if c["cell_type"] == "code")


# ------------------------------------------------------------------------------------------------
# The exercise format (documented in book/instructors.md, "The exercise format"):
#   ### Exercise <chapter>.<n>[ (optional)]: <title>
#   *Difficulty: ●○○ · Importance: ●●○ · about 10 minutes.*   (●○○, ●●○ or ●●●; the time box in minutes)
#   ...the task, a template code cell that raises NotImplementedError (so the built book prints
#   no hint), then a code cell that calls a checker from bwt_lite.exercises...
#   <details><summary>Solution</summary> ... </details>   (before the next exercise)

EXERCISE = re.compile(r"^### Exercise (\d+)\.(\d+)( \(optional\))?: \S.*$", re.M)
DIFFICULTY = re.compile(r"^\*Difficulty: (●○○|●●○|●●●) · Importance: (●○○|●●○|●●●) · about (\d+) minutes\.\*$")
CHECKER_CALL = re.compile(r"\b(check_\w+)\(")


def exercise_checkers() -> dict[str, str]:
    """Every public checker function in bwt_lite.exercises: name -> module."""
    import importlib
    import pkgutil

    import bwt_lite.exercises as pkg

    found = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for name, obj in vars(module).items():
            if name.startswith("check_") and callable(obj) and getattr(obj, "__module__", "") == module.__name__:
                found[name] = module.__name__
    return found


HEADING = re.compile(r"^#{1,3} .*$", re.M)


def exercises(cells):
    """Each exercise with the cells (or parts of cells) from its heading to the next heading of
    level 1-3: [(heading match, [(cell_type, text), ...])]."""
    out, current = [], None
    for cell in cells:
        text = "".join(cell["source"])
        if cell["cell_type"] != "markdown":
            if current is not None:
                current.append(("code", text))
            continue
        cuts = list(HEADING.finditer(text))
        if current is not None:
            current.append(("markdown", text[: cuts[0].start() if cuts else len(text)]))
        for i, heading in enumerate(cuts):
            match = EXERCISE.match(heading.group(0))
            current = None
            if match is not None:
                current = [("markdown", text[heading.start(): cuts[i + 1].start() if i + 1 < len(cuts) else len(text)])]
                out.append((match, current))
    return out


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_exercises_follow_the_format(path):
    chapter = int(path.name[:2])
    found = exercises(json.loads(path.read_text())["cells"])
    assert found, "a chapter has exercises"
    checkers = exercise_checkers()
    for n, (match, parts) in enumerate(found, start=1):
        label = match.group(0)
        assert (int(match.group(1)), int(match.group(2))) == (chapter, n), f"{label}: expected Exercise {chapter}.{n}"
        first = [line for line in parts[0][1].splitlines()[1:] if line.strip()][0]
        assert DIFFICULTY.match(first), (f"{label}: the line after the heading must be like "
                                         f"'*Difficulty: ●●○ · Importance: ●●● · about 15 minutes.*', got {first!r}")
        assert 1 <= int(DIFFICULTY.match(first).group(3)) <= 120
        assert any("raise NotImplementedError" in text for kind, text in parts if kind == "code"), (
            f"{label}: the template the student fills in raises NotImplementedError, so the book prints no hint")
        calls = [c for kind, text in parts if kind == "code" for c in CHECKER_CALL.findall(text)]
        assert calls, f"{label}: a code cell must call a checker from bwt_lite.exercises"
        assert all(c in checkers for c in calls), f"{label}: unknown checker(s) {[c for c in calls if c not in checkers]}"
        solution = "".join(text for kind, text in parts if kind == "markdown")
        assert "<details><summary>Solution</summary>" in solution and "</details>" in solution.split(
            "<details><summary>Solution</summary>", 1)[1], f"{label}: needs a collapsible solution before the next exercise"


def test_every_checker_is_tested_in_pytest():
    tests = "".join(p.read_text() for p in (ROOT / "tests").glob("test_exercises_*.py"))
    untested = [name for name in exercise_checkers() if not re.search(rf"\b{name}\b", tests)]
    assert not untested, f"checkers without a test in tests/test_exercises_*.py: {untested}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_states_prerequisites(path):
    first = "".join(json.loads(path.read_text())["cells"][0]["source"])
    assert re.search(r"\*\*Prerequisites\.\*\*", first), "the first cell states the prerequisites"


# ------------------------------------------------------------------------------------------------
# Course pages and citations

BIB_KEYS = set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text(), re.M))
CITE = re.compile(r"\{cite(?::\w+)?\}`([^`]+)`")


def test_course_pages_are_in_the_toc_and_the_bibliography_is_configured():
    listed = set(toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text())))
    for page in ("book/setup", "book/instructors", "book/glossary", "book/bibliography"):
        assert page in listed and (ROOT / f"{page}.md").exists(), page
    assert CONFIG["bibtex_bibfiles"] == ["references.bib"]
    assert "```{bibliography}" in (ROOT / "book" / "bibliography.md").read_text()
    assert {"agarwal2025geometry", "agarwal2025gradient", "agarwal2025scaling"} <= BIB_KEYS


def test_every_citation_has_a_bibtex_entry():
    pages = [p for p in (ROOT / "book").glob("*.md")] + CHAPTERS
    cited = set()
    for page in pages:
        text = page.read_text()
        if page.suffix == ".ipynb":
            text = "".join("".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "markdown")
        for keys in CITE.findall(text):
            cited |= {k.strip() for k in keys.split(",")}
    assert cited and cited <= BIB_KEYS, f"unknown citation keys: {sorted(cited - BIB_KEYS)}"


# ------------------------------------------------------------------------------------------------
# What the rendered page needs from the sources

BARE_CALL = re.compile(r"^check_\w+\(.*\)\s*$")


DISPLAY_MATH = re.compile(r"\$\$.+?\$\$", re.S)


def math_blocks_in_paragraphs(text: str) -> list[str]:
    """The $$...$$ blocks of a markdown text that are not a block of their own (a blank line, or the
    start or end of the text, before and after; an equation label may follow)."""
    bad = []
    for m in DISPLAY_MATH.finditer(text):
        before = text[: m.start()].rstrip(" \t")
        after = re.sub(r"^[ \t]*(\(\w+\))?[ \t]*", "", text[m.end():])
        if not (before == "" or before.endswith("\n\n")) or not (after == "" or re.match(r"\n[ \t]*(\n|$)", after)):
            bad.append(m.group(0)[:50])
    return bad


def test_math_blocks_in_paragraphs_are_found():
    assert math_blocks_in_paragraphs("text\n\n$$x$$\n\nmore") == []
    assert math_blocks_in_paragraphs("$$x$$ (eq)\n") == []
    assert math_blocks_in_paragraphs("a sentence,\n$$x$$\n\nmore") == ["$$x$$"]
    assert math_blocks_in_paragraphs("text\n\n$$x\n= y$$\nso it goes") == ["$$x\n= y$$"]
    assert math_blocks_in_paragraphs("inline $$x$$ here") == ["$$x$$"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_display_math_stands_in_its_own_block(path):
    """MyST parses $$...$$ as display math only as a block of its own: with a line of text right
    before or after it, the page shows the dollar signs."""
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] == "markdown":
            bad = math_blocks_in_paragraphs("".join(cell["source"]))
            assert not bad, f"cell {i}: display math inside a paragraph (blank lines around it): {bad}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_checker_calls_do_not_echo_a_bool(path):
    """A cell ending with a bare checker call shows its True/False on the page: assign it instead."""
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] == "code":
            last = [line for line in "".join(cell["source"]).splitlines() if line.strip()][-1:]
            assert not (last and BARE_CALL.match(last[0])), f"cell {i} ends with {last[0]!r}"


def test_book_stylesheet_and_widget_settings():
    sphinx = CONFIG["sphinx"]["config"]
    static = sphinx["html_static_path"]
    assert all((ROOT / d).is_dir() for d in static)
    assert all(any((ROOT / d / css).is_file() for d in static) for css in sphinx["html_css_files"])
    # no JavaScript but the book's copy of MathJax (loaded through mathjax_path), and no root _static
    # folder, whose every .js Jupyter Book would load on every page (see bwt.css)
    assert not any(p.suffix == ".js" and "mathjax" not in p.parts for d in static for p in (ROOT / d).rglob("*"))
    assert not (ROOT / "_static").exists()
    css = "".join((ROOT / d / c).read_text() for d in static for c in sphinx["html_css_files"]
                  if (ROOT / d / c).is_file())
    assert re.search(r"\.cell_output pre\s*\{[^}]*white-space:\s*pre-wrap", css)
    # widgets: the static view (text/html) instead of a live view that needs JavaScript from a CDN
    assert ["html", "application/vnd.jupyter.widget-view+json", None] in sphinx["nb_mime_priority_overrides"]
    assert sphinx["nb_ipywidgets_js"] == {}


def test_check_book_flags_what_a_student_would_stumble_on(tmp_path):
    """tests/check_book.py on a small page: each problem it looks for, and a clean page."""
    import base64
    import struct
    import sys
    import zlib

    sys.path.insert(0, str(ROOT / "tests"))
    import check_book

    def png(width: int) -> str:
        raw = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">IIBBBBB", width, 10, 8, 2, 0, 0, 0)
        return "data:image/png;base64," + base64.b64encode(raw + struct.pack(">I", zlib.crc32(b"IHDR"))).decode()

    row = "transformer   0.0135 bits   " * 4
    bad = f"""<html><body><article>
      <p>the plateau $</p><div class="math notranslate">\\[x\\]</div><p>$ and more</p>
      <p>see the {{term}}`plateau` entry</p>
      <div class="cell"><div class="cell_input"><pre># NBVAL_CHECK_OUTPUT</pre></div>
        <div class="cell_output"><div class="output text_plain"><pre>False</pre></div>
          <div class="output stream"><pre>{row}\nshort line</pre></div>
          <div class="output text_plain"><pre>interactive(children=(IntSlider(value=5),))</pre></div>
          <div class="output text_html"><img src="{png(1200)}" style="width: 1200px; height: 400px;"></div>
          <div class="output text_html"><table><tr>{"<td>2,677,440</td>" * 12}</tr></table></div>
        </div></div>
      <script src="https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1.0.6/dist/embed-amd.js"></script>
    </article></body></html>"""
    page = tmp_path / "bad.html"
    page.write_text(bad)
    found = "\n".join(check_book.page_problems(page, "bad", strict=True))
    for expected in ("1 output table row(s) wider", "a table needs about", "2 stray '$'", "NBVAL_ marker", "raw MyST role",
                     "bare True/False", "text repr", "widget JavaScript", "shrunk", "fewer than 2 pixels"):
        assert expected in found, expected
    shrunk = [line for line in check_book.page_problems(page, "bad") if "shrunk" in line]
    assert shrunk and not shrunk[0].startswith(check_book.WARNING)  # an error by default
    shrunk = [line for line in check_book.page_problems(page, "bad", strict=False) if "shrunk" in line]
    assert shrunk[0].startswith(check_book.WARNING)

    long_prose = "a long line of prose wraps at the column and reads fine " * 3
    good = f"""<html><body><article><p>costs <span class="math">\\(x\\)</span>; <code>$HOME</code></p>
      <div class="cell"><div class="cell_output"><div class="output stream"><pre>{long_prose}</pre></div>
        <div class="output text_html"><img src="{png(1320)}" width="660"></div></div></div>
    </article></body></html>"""
    page.write_text(good)
    assert check_book.page_problems(page, "good", strict=True) == []


# ------------------------------------------------------------------------------------------------
# The glossary, linked from the chapters

GLOSSARY = (ROOT / "book" / "glossary.md").read_text()
TERM = re.compile(r"\{term\}`([^`]+)`")


def glossary_terms() -> set[str]:
    """The names the glossary defines: the unindented lines inside its {glossary} directive."""
    block = re.search(r"^```\{glossary\}\n(.*?)^```", GLOSSARY, re.S | re.M)
    assert block, "book/glossary.md has no {glossary} directive, so {term} links cannot resolve"
    return {line.strip().lower() for line in block.group(1).splitlines()
            if line.strip() and not line.startswith((" ", ":", "%"))}


def term_targets(text: str) -> list[str]:
    """The glossary entry each {term} role names: the target in `text <target>`, else the text."""
    out = []
    for body in TERM.findall(text):
        m = re.fullmatch(r"(.*?)\s*<([^<>]+)>", body, re.S)
        out.append(" ".join((m.group(2) if m else body).split()).lower())
    return out


def markdown_text(path: Path) -> str:
    if path.suffix == ".ipynb":
        return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown")
    return path.read_text()


def test_every_term_link_names_a_glossary_entry():
    terms = glossary_terms()
    pages = CHAPTERS + sorted((ROOT / "book").glob("*.md"))
    unknown = {f"{p.name}: {t}" for p in pages for t in term_targets(markdown_text(p)) if t not in terms}
    assert not unknown, f"{{term}} links without a glossary entry: {sorted(unknown)}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_links_the_glossary(path):
    """Each chapter links a handful of glossary terms (their first use), not every occurrence."""
    targets = term_targets(markdown_text(path))
    assert 3 <= len(targets) <= 12, f"{len(targets)} glossary links"
    assert len(set(targets)) == len(targets), "a term linked twice in one chapter: link its first use only"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_stored_outputs_have_no_wide_text_tables(path):
    """A comparison printed as aligned text wider than the column is cut or scattered on the page;
    tables belong in bwt_lite.display.table (whose HTML form the book shows)."""
    import check_book

    wide = []
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "text/html" in data:
                continue
            text = "".join(out.get("text", "")) if out["output_type"] == "stream" else "".join(data.get("text/plain", ""))
            wide += [f"cell {i}: {line.strip()[:60]!r}" for line in text.splitlines()
                     if len(line) > check_book.LINE_CHARS and check_book.TABLE_ROW.search(line.strip())]
    assert not wide, f"{len(wide)} printed table row(s) wider than the column: {wide[:3]}"


FIGSIZE = re.compile(r"figsize=\(\s*([\d.]+)")
SUBPLOTS = re.compile(r"subplots\(\s*\d+\s*,\s*(\d+)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_figures_fit_the_column(path):
    """A figure made in a chapter is at most MAX_WIDTH_IN wide with at most two panels a row, as the
    package's own figures (tests/test_plots_widgets.py)."""
    from bwt_lite.display import MAX_WIDTH_IN

    code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    assert all(float(w) <= MAX_WIDTH_IN for w in FIGSIZE.findall(code)), FIGSIZE.findall(code)
    assert all(int(c) <= 2 for c in SUBPLOTS.findall(code)), SUBPLOTS.findall(code)


def test_table_text_columns_stay_left_aligned():
    """A prose column whose cell starts like a number ("2 wide blocks") is not right-aligned."""
    from bwt_lite.display import table

    t = table([["mamba", 404040, "2 wide blocks"], ["lstm", 406400, "width and depth"]], ["arch", "params", "how"],
              text="how")
    assert t.numeric == (False, True, False)
    assert [r[2] for r in t.right] == [False, False]
    assert 'class="bwt-text" style="text-align: left">2 wide blocks' in t._repr_html_()


def test_check_book_finds_every_claim_box_and_its_verdict(tmp_path):
    """tests/check_book.py: each chapter page must show its claims' boxes, with the scorecard page's verdict and
    number; a missing box and a box that disagrees are both reported."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    import check_book
    from bwt_lite.claims import CLAIMS, Claim
    from bwt_lite.claims.reasons import reader_table_html
    from bwt_lite.claims.saved import claim_box_html

    rows = [Claim(id=cid, claim=i.claim, source=i.source, chapter=i.chapter, paper="1 bit", ours="2 bits",
                  verdict="partly", reason="r") for cid, i in CLAIMS.items()]
    (tmp_path / "html" / "book").mkdir(parents=True)
    (tmp_path / "html" / "chapters").mkdir()
    (tmp_path / "html" / "book" / "scorecard.html").write_text(reader_table_html(rows))
    for chapter in {r.chapter for r in rows}:
        boxes = "".join(claim_box_html(r) for r in rows if r.chapter == chapter)
        (tmp_path / "html" / "chapters" / f"{chapter}.html").write_text(f"<html><body>{boxes}</body></html>")
    assert check_book.claim_box_problems(tmp_path) == []
    first = rows[0]
    page = tmp_path / "html" / "chapters" / f"{first.chapter}.html"
    other = Claim(**{**first.to_dict(), "verdict": "reproduced"})
    page.write_text(page.read_text().replace(claim_box_html(first), claim_box_html(other)))
    assert any(f"claim-{first.id} shows ('reproduced', '2 bits')" in p for p in check_book.claim_box_problems(tmp_path))
    page.write_text("<html></html>")
    assert any(f"no claim box claim-{first.id}" in p for p in check_book.claim_box_problems(tmp_path))
