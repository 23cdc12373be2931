"""Checks a built book (`make book` runs it after `jupyter-book build`): exit 1 with one line per
problem, so a chapter that did not really execute can never pass silently.

- every chapter in the table of contents has an executed record in the execution cache that
  matches the notebook as it is now (a failed or timed-out chapter has none);
- every chapter page exists and shows at least one output;
- Jupyter Book wrote no execution error report (``_build/html/reports``).

Usage: ``python tests/check_book.py [BUILD_DIR]`` (default ``_build``).
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks that the table of contents lists, in order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found: list[Path] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            if "file" in node and (root / f"{node['file']}.ipynb").exists():
                found.append(root / f"{node['file']}.ipynb")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(toc)
    return found


def problems(build: Path, root: Path = ROOT) -> list[str]:
    """Everything wrong with the book built into ``build``; empty when it is sound."""
    from jupyter_cache import get_cache

    out: list[str] = []
    cache_path = build / ".jupyter_cache"
    if not cache_path.is_dir():
        return [f"{cache_path}: no execution cache (was the book built with execute_notebooks: cache?)"]
    cache = get_cache(cache_path)
    for nb in toc_notebooks(root):
        rel = nb.relative_to(root)
        try:
            cache.match_cache_file(str(nb))
        except KeyError:
            out.append(f"{rel}: no successful execution in the cache (failed, timed out or skipped)")
        page = build / "html" / rel.with_suffix(".html")
        if not page.exists():
            out.append(f"{rel}: page {page} missing")
        elif "cell_output" not in page.read_text(encoding="utf-8"):
            out.append(f"{rel}: page {page} shows no output")
    reports = build / "html" / "reports"
    if reports.is_dir():
        out += [f"execution error report: {p}" for p in sorted(reports.rglob("*.log"))]
    return out


def main(argv: list[str]) -> int:
    build = Path(argv[0]) if argv else ROOT / "_build"
    found = problems(build)
    for line in found:
        print(f"check_book: {line}", file=sys.stderr)
    n = len(toc_notebooks())
    print(f"check_book: {n} chapters executed and rendered" if not found
          else f"check_book: {len(found)} problem(s)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
