"""How long each chapter takes a careful first reader who runs the code: the book's one table of times.

Each chapter's first cells (:func:`chapter_time_md`) and the instructors' guide (its table of times and
the loads of its six weeks) read :data:`CHAPTER_TIMES`, so a chapter's time reads the same everywhere.
Each part covers the chapter's core path (*Going further* and the optional exercises come on top) and is
rounded to 5 minutes:

- **reading**: the words of the chapter's markdown before *Going further* (collapsed solutions left out)
  at 130 words a minute, plus 2 minutes to study each figure, 1 each table and 1 each displayed equation;
- **running the cells**: the notebook's measured run on a 2-core CPU with the shipped checkpoints (the
  instructors' guide), plus 20 seconds to read each code cell and its output;
- **exercises**: each required exercise's stated time box (what a prepared student needs), times 1.25
  for difficulty ●○○ and 1.5 for ●●○, for a first attempt, the checker's hint and the solution.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .arguments import check_choice


@dataclass(frozen=True)
class ChapterTime:
    """Minutes of one chapter's core path: reading, running the cells, exercises."""

    reading: int
    running: int
    exercises: int

    @property
    def total(self) -> int:
        return self.reading + self.running + self.exercises


# Chapter number -> its minutes (reading, running the cells, exercises), estimated as the docstring says.
CHAPTER_TIMES: dict[int, ChapterTime] = {
    1: ChapterTime(reading=25, running=5, exercises=30),
    2: ChapterTime(reading=25, running=10, exercises=50),
    3: ChapterTime(reading=35, running=10, exercises=50),
    4: ChapterTime(reading=40, running=10, exercises=50),
    5: ChapterTime(reading=45, running=10, exercises=50),  # the densest chapter: 7 displayed equations
    6: ChapterTime(reading=45, running=10, exercises=35),
    7: ChapterTime(reading=25, running=5, exercises=65),
    8: ChapterTime(reading=30, running=5, exercises=35),
    9: ChapterTime(reading=30, running=5, exercises=50),
    10: ChapterTime(reading=40, running=5, exercises=35),
    11: ChapterTime(reading=30, running=10, exercises=40),  # the run trains its own small models (3 min)
    12: ChapterTime(reading=30, running=10, exercises=40),
    13: ChapterTime(reading=40, running=5, exercises=35),
}

# The instructors' guide's six-week plan: the chapters of each week, in the book's order.
WEEKS: dict[int, tuple[int, ...]] = {1: (1, 2), 2: (3, 4), 3: (5, 6), 4: (7, 8, 9), 5: (10, 11), 6: (12, 13)}


def chapter_time(chapter: int) -> ChapterTime:
    """The minutes of one chapter (a ValueError names the chapters there are)."""
    check_choice("chapter", chapter, list(CHAPTER_TIMES))
    return CHAPTER_TIMES[chapter]


def chapter_time_text(chapter: int) -> str:
    """The chapter's time in one line: "About 85 minutes: 25 of reading, 10 of running the cells, 50 for
    the exercises." """
    t = chapter_time(chapter)
    return (f"About {t.total} minutes: {t.reading} of reading, {t.running} of running the cells, "
            f"{t.exercises} for the exercises.")


def chapter_time_md(chapter: int) -> Any:
    """The chapter's time as the line under its prerequisites (an IPython ``Markdown``), for a code cell
    at the top of the chapter: ``chapter_time_md(3)``."""
    from IPython.display import Markdown

    return Markdown(f"**Estimated time.** {chapter_time_text(chapter)} *Going further* and any optional "
                    f"exercise come on top.")


def hours_text(minutes: int) -> str:
    """Minutes as hours to the quarter: 145 -> "2.5 hours"."""
    hours = round(minutes / 15) / 4
    return f"{hours:g} hour{'' if hours == 1 else 's'}"


def week_minutes(week: int) -> int:
    check_choice("week", week, list(WEEKS))
    return sum(CHAPTER_TIMES[c].total for c in WEEKS[week])


def week_time_text(week: int) -> str:
    """A week's load: "About 2.5 hours (60 + 85 minutes)", each chapter's total in the week's order."""
    parts = " + ".join(str(CHAPTER_TIMES[c].total) for c in WEEKS[week])
    return f"About {hours_text(week_minutes(week))} ({parts} minutes)"


def weekly_load_text() -> str:
    """The range of the weeks' loads: "2.5 to 4.25 hours"."""
    loads = sorted(week_minutes(w) for w in WEEKS)
    return f"{hours_text(loads[0]).split()[0]} to {hours_text(loads[-1])}"


def total_minutes() -> int:
    return sum(t.total for t in CHAPTER_TIMES.values())


def times_table() -> Any:
    """Every chapter's minutes and the course's total, as a :func:`bwt_lite.display.table`."""
    from .display import table

    rows = [{"chapter": str(n), "reading": t.reading, "running the cells": t.running, "exercises": t.exercises,
             "total": t.total} for n, t in CHAPTER_TIMES.items()]
    parts = [sum(getattr(t, k) for t in CHAPTER_TIMES.values()) for k in ("reading", "running", "exercises")]
    rows.append({"chapter": "all", "reading": parts[0], "running the cells": parts[1], "exercises": parts[2],
                 "total": total_minutes()})
    return table(rows, caption="Minutes for a careful first reading with the code run (the core path of "
                               "each chapter)",
                 note=f"In all about {hours_text(total_minutes())}; the chapters' first cells show the same "
                      f"numbers. Going further and the optional exercises come on top.")


__all__ = ["CHAPTER_TIMES", "ChapterTime", "WEEKS", "chapter_time", "chapter_time_md", "chapter_time_text",
           "hours_text", "times_table", "total_minutes", "week_minutes", "week_time_text", "weekly_load_text"]
