"""Words of prose a reader sees when a chapter page first loads, counted from the notebook.

What counts: the text of markdown cells, as a reader sees it (link text, inline code and inline
math count as words; markup does not). What does not: code cells and their outputs, display math,
fenced code, and everything collapsed on first load: ``{dropdown}`` and ``{toggle}`` blocks,
``<details>`` blocks (solutions), and cells tagged ``hide-cell``, ``hide-input``, ``remove-cell``
or ``remove-input``. A chapter's "Going further" audit is collapsed, so it does not count.

``tests/check_book.py`` counts the same on the built pages and fails a chapter over
:data:`MAX_WORDS`. Usage: ``python tests/prose_words.py [NOTEBOOK ...]`` (default: every chapter)
prints words and an estimated reading time (:data:`WORDS_PER_MINUTE`).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
MAX_WORDS = 3000
WORDS_PER_MINUTE = 200
HIDDEN_TAGS = {"hide-cell", "hide-input", "remove-cell", "remove-input"}

# Blocks a reader does not see on first load, or that are not prose.
_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})(?P<info>[^\n]*)\n.*?^(?P=fence)[ \t]*$", re.M | re.S)
_DETAILS = re.compile(r"<details\b.*?</details>", re.S | re.I)
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"<[^>]+>")
_ROLE = re.compile(r"\{[\w:+-]+\}`([^`]*)`")  # {term}`text`, {cite:p}`key`: the text
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")  # [text](url): the text
_LABEL = re.compile(r"^\([\w:-]+\)=\s*$", re.M)  # (label)= targets
_WORD = re.compile(r"[A-Za-z0-9][\w'’.,-]*")

# Fenced directives whose content shows on first load (admonitions, figures' captions): counted.
_COLLAPSED = ("{dropdown}", "{toggle}", "{admonition-dropdown}")


def _visible_fences(match: re.Match) -> str:
    info = match.group("info").strip()
    if any(info.startswith(d) for d in _COLLAPSED) or ":class: dropdown" in match.group(0):
        return ""
    if match.group("fence").startswith("`") and not info.startswith("{"):
        return ""  # fenced code
    if info.startswith("{math}") or info.startswith("{code"):
        return ""
    body = match.group(0).split("\n", 1)[1].rsplit("\n", 1)[0]
    body = re.sub(r"^:[\w-]+:.*$", "", body, flags=re.M)  # directive options
    return body


def markdown_words(source: str) -> int:
    """Words a reader sees of one markdown cell's source."""
    text = _COMMENT.sub(" ", source)
    text = _DETAILS.sub(" ", text)
    previous = None
    while previous != text:  # nested fences: the outer collapsed block goes with what is inside
        previous = text
        text = _FENCE.sub(_visible_fences, text)
    text = _DISPLAY_MATH.sub(" ", text)
    text = _LABEL.sub(" ", text)
    text = _ROLE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    return len(_WORD.findall(text))


def chapter_words(path: Path | str) -> int:
    """First-load prose words of a chapter notebook."""
    nb = nbformat.read(str(path), as_version=4)
    return sum(markdown_words(c.source) for c in nb.cells
               if c.cell_type == "markdown" and not HIDDEN_TAGS & set(c.metadata.get("tags", [])))


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    over = 0
    for path in paths:
        words = chapter_words(path)
        over += words > MAX_WORDS
        flag = "  over" if words > MAX_WORDS else ""
        print(f"{path.name:45s} {words:5d} words  {words / WORDS_PER_MINUTE:4.0f} min reading{flag}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
