"""One number, one source: a measured number written in the prose of a chapter or a book page is one
that code prints somewhere in the book (a chapter's stored outputs), a published number from the
papers (``bwt_lite.paper``, the claim modules, the hosted registry), or a run recorded in the
maintainers' notes (``docs/lab_notes.md``), quoted as recorded. A number typed by hand that no
code prints drifts when a model is retrained, and the same quantity then reads differently on two
pages (an HMM score as 0.0480 on one page and 0.0471 on another). Numbers inside collapsed solutions,
code, and math are not prose and are not checked."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
PAGES = sorted((ROOT / "book").glob("*.md"))
# A measured-looking decimal: three or more digits after the point (0.0471, 2.012), not part of a
# version, a word or a longer number.
DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d{3,})(?![\d.])")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|```.*?```|<details.*?</details>|`[^`\n]*`", re.S)


def printed_by_code() -> str:
    text = []
    for path in CHAPTERS:
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                text.append("".join(out.get("text", "")))
                text += ["".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(text)


def published() -> str:
    files = [ROOT / "bwt_lite" / "paper.py", ROOT / "bwt_lite" / "store" / "hosted.py", ROOT / "docs" / "lab_notes.md",
             *sorted((ROOT / "bwt_lite" / "claims").glob("*.py"))]
    return "\n".join(p.read_text() for p in files)


SOURCES = printed_by_code() + published()


def prose(path: Path) -> list[tuple[str, str]]:
    if path.suffix == ".ipynb":
        blocks = [("cell %d" % i, "".join(c["source"])) for i, c in enumerate(json.loads(path.read_text())["cells"])
                  if c["cell_type"] == "markdown"]
    else:  # a MyST page: its text outside code cells
        blocks = [("page", re.sub(r"```\{code-cell\}.*?```", "", path.read_text(), flags=re.S))]
    return [(where, MATH.sub(" ", text)) for where, text in blocks]


@pytest.mark.parametrize("path", CHAPTERS + PAGES, ids=lambda p: p.stem)
def test_numbers_in_prose_come_from_code_or_the_papers(path):
    typed = [f"{where}: {m.group(1)} in {text[max(0, m.start() - 50):m.end()].strip()!r}"
             for where, text in prose(path) for m in DECIMAL.finditer(text) if m.group(1) not in SOURCES]
    assert not typed, f"{len(typed)} number(s) no code prints: {typed[:4]}"
