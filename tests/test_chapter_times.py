"""One table of chapter times (``bwt_lite.chapter_times``): every chapter has its entry, each total is its
parts, the exercises' minutes follow the exercises' own time boxes, and the chapters' first cells and the
instructors' guide read the table instead of typing minutes."""
import json
import re
import sys
import types
from pathlib import Path

import pytest

from bwt_lite.chapter_times import (CHAPTER_TIMES, WEEKS, chapter_time, chapter_time_md, chapter_time_text,
                                    times_table, total_minutes, week_time_text, weekly_load_text)
from prose_words import HIDDEN_TAGS, markdown_words

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
GUIDE = ROOT / "book" / "instructors.md"
# A chapter whose careful first reading is outside an hour to 100 minutes, and why.
OUTSIDE = {5: "the densest chapter: the Bayesian-regression derivation's displayed equations, six figures and "
              "six tables on the core path"}
EXERCISE = re.compile(r"^###\s+Exercise\s+\d+\.\d+(?P<title>.*)$", re.M)
TIME_BOX = re.compile(r"Difficulty:\s*(?P<level>[●○]+).*?about (?P<minutes>\d+) minutes", re.S)
FIRST_TRY = {1: 1.25, 2: 1.5}  # a time box's multiple for a first attempt, by difficulty (chapter_times' docstring)


def number(path: Path) -> int:
    return int(path.name[:2])


def core_cells(path: Path) -> list[dict]:
    """The chapter's cells before its *Going further* section."""
    cells = json.loads(path.read_text())["cells"]
    going = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                  and "".join(c["source"]).lstrip().startswith("## Going further")), len(cells))
    return cells[:going]


def round5(minutes: float) -> int:
    return 5 * int(minutes / 5 + 0.5)


def test_every_chapter_has_an_entry_and_a_week():
    assert sorted(CHAPTER_TIMES) == [number(p) for p in CHAPTERS]
    assert [c for w in sorted(WEEKS) for c in WEEKS[w]] == sorted(CHAPTER_TIMES)


@pytest.mark.parametrize("n", sorted(CHAPTER_TIMES))
def test_each_total_is_its_parts_within_an_hour_to_100_minutes(n):
    t = chapter_time(n)
    parts = (t.reading, t.running, t.exercises)
    assert all(p > 0 and p % 5 == 0 for p in parts), parts
    assert t.total == sum(parts)
    assert 60 <= t.total <= 100 or n in OUTSIDE, f"chapter {n}: {t.total} minutes"
    assert f"About {t.total} minutes: {t.reading} of reading, {t.running} of running the cells, " \
           f"{t.exercises} for the exercises." == chapter_time_text(n)
    assert chapter_time_md(n).data == f"**Estimated time.** {chapter_time_text(n)} *Going further* and any " \
                                      f"optional exercise come on top."


def test_the_course_takes_a_careful_reader_15_to_20_hours_and_unknown_chapters_are_refused():
    assert total_minutes() == sum(t.total for t in CHAPTER_TIMES.values())
    assert 15 * 60 <= total_minutes() <= 20 * 60
    with pytest.raises(ValueError, match="unknown chapter 14"):
        chapter_time(14)
    assert week_time_text(1) == f"About 2.5 hours ({chapter_time(1).total} + {chapter_time(2).total} minutes)"
    assert re.fullmatch(r"[\d.]+ to [\d.]+ hours", weekly_load_text())
    assert "all" in str(times_table()) and f"{total_minutes():,}" in str(times_table())


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_minutes_follow_the_chapter_itself(path):
    """The exercises' minutes are the required exercises' time boxes with room for a first attempt, and
    the reading is at least the core path's words at 150 words a minute (a fast reader of technical text)."""
    cells = core_cells(path)
    boxes = []
    for c in cells:
        text = "".join(c["source"])
        for m in EXERCISE.finditer(text) if c["cell_type"] == "markdown" else ():
            box = TIME_BOX.search(text[m.end():m.end() + 300])
            assert box, f"{path.stem}: no time box under {m.group(0)!r}"
            if "optional" not in m.group("title").lower():
                boxes.append(int(box.group("minutes")) * FIRST_TRY[box.group("level").count("●")])
    t = chapter_time(number(path))
    assert t.exercises == round5(sum(boxes)), (t.exercises, boxes)
    words = sum(markdown_words("".join(c["source"])) for c in cells
                if c["cell_type"] == "markdown" and not HIDDEN_TAGS & set(c.get("metadata", {}).get("tags", [])))
    assert t.reading >= words / 150, (t.reading, words)


def guide_glue() -> tuple[str, dict[str, str]]:
    """The guide's text and what its code cell glues (run with a stand-in for myst_nb's glue)."""
    text = GUIDE.read_text()
    cells = re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, re.S)
    glued: dict[str, str] = {}
    stub = types.ModuleType("myst_nb")
    stub.glue = lambda key, value, display=True: glued.__setitem__(key, value)
    saved = sys.modules.get("myst_nb")
    sys.modules["myst_nb"] = stub
    try:
        for source in cells:
            exec(re.sub(r"^:[\w-]+:.*$", "", source, flags=re.M), {})
    finally:
        if saved is None:
            del sys.modules["myst_nb"]
        else:
            sys.modules["myst_nb"] = saved
    return text, glued


def test_the_instructors_guide_reads_the_table():
    """Its table of times, each chapter's time and each week's load are glued from bwt_lite.chapter_times;
    none is typed."""
    text, glued = guide_glue()
    assert text.startswith("---\njupytext:"), "a MyST notebook page, so that its code cell runs"
    assert "times_table()" in text
    used = set(re.findall(r"\{glue:text\}`([^`]+)`", text))
    assert used <= set(glued), sorted(used - set(glued))
    for n in CHAPTER_TIMES:
        assert glued[f"chapter_{n}_time"] == chapter_time_text(n)
        section = re.search(rf"^### {n}\. .*?(?=^### |^## )", text, re.M | re.S).group(0)
        assert f"{{glue:text}}`chapter_{n}_time`" in section, f"chapter {n}'s section shows its time"
    for w in WEEKS:
        assert glued[f"week_{w}_time"] == week_time_text(w)
        section = re.search(rf"^### Week {w}:.*?(?=^### |^## )", text, re.M | re.S).group(0)
        assert f"- **Time.** {{glue:text}}`week_{w}_time`" in section
    assert glued["weekly_load"] == weekly_load_text() and "weekly_load" in used
    prose = re.sub(r"```\{code-cell\}.*?```", "", text, flags=re.S)
    typed = re.findall(r"Time to read|About [\d.]+ hours \(\d+ \+|\| \d+ min \||hours of reading", prose)
    assert not typed, f"times typed in the guide: {typed}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_shows_its_time_from_the_table(path):
    """A chapter's time is a code cell at its top, ``chapter_time_md(N)``, not minutes typed in its markdown."""
    n = number(path)
    cells = json.loads(path.read_text())["cells"]
    typed = [f"cell {i}: {m.group(0)!r}" for i, c in enumerate(cells) if c["cell_type"] == "markdown"
             for m in re.finditer(r"estimated time.{0,80}?\d+\s*(?:minutes|min\b|of reading)", "".join(c["source"]),
                                  re.I | re.S)]
    assert not typed, f"minutes typed in the markdown: {typed}"
    calls = [i for i, c in enumerate(cells[:4]) if c["cell_type"] == "code"
             and re.search(rf"\bchapter_time_md\({n}\)", "".join(c["source"]))]
    assert calls, f"no code cell among the first four calls chapter_time_md({n})"
