"""The scorecard computed once and saved, so that every page shows the same result: the scorecard page,
the start page and each chapter's claim box (:func:`claim_box`) read the rows saved here, never a
measurement of their own.

The rows are saved per group of claims (:data:`~bwt_lite.claims.scoring.GROUPS`) in the cache
(``<cache>/scorecard/<fingerprint>/<group>.json``), so a chapter that shows one claim computes only its
group, and only if no earlier page of the same build did. The fingerprint covers everything a row
depends on: every file of the package (code, shipped checkpoints and records) and torch's version. A
scorecard row is the same whichever page computes it first: each group seeds its own episodes and runs
on one thread (:func:`~bwt_lite.claims.scoring.scorecard`), and the full scorecard is the groups in order.
Two pages that need a group at once wait for each other (a file lock), so it is computed once.
"""
from __future__ import annotations

import hashlib
import html
import json
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import torch

from ..paths import PACKAGE_DIR
from ..store.cache import cache_dir
from ..store.files import atomic_write
from .catalogue import CLAIM_IDS, CLAIMS, Claim, group_ids
from .reasons import baseline_words, plain_reason
from .scoring import GROUPS, VERDICT_COLOURS, scorecard

PACKAGE = PACKAGE_DIR
SUFFIXES = (".py", ".json", ".safetensors")  # what a row can depend on (code, records, shipped weights)
FORMAT = 1  # bumped when the saved file's layout changes


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """16 hex digits naming this package's files and torch's version: saved rows are reused only under the
    same fingerprint."""
    h = hashlib.sha256(f"format {FORMAT}; torch {torch.__version__}\n".encode())
    for path in sorted(p for p in PACKAGE.rglob("*") if p.suffix in SUFFIXES and p.is_file()
                       and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(PACKAGE)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def saved_dir(root: Path | None = None) -> Path:
    """Where the rows of this fingerprint are saved (``root``: the cache, by default :func:`cache_dir`)."""
    return (cache_dir() if root is None else Path(root)) / "scorecard" / fingerprint()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (where the platform has one), so one process computes a group
    while another that needs it waits and then reads it."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks: two pages may both compute the group, with the same result
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path, group: str) -> list[Claim] | None:
    """The rows saved in ``path``, or None when it is missing or is not this group's complete record."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if (not isinstance(data, dict) or data.get("format") != FORMAT or data.get("fingerprint") != fingerprint()
            or [r.get("id") for r in data.get("claims", [])] != list(group_ids(group))):
        return None
    return [Claim(**r) for r in data["claims"]]


def saved_group(group: str, *, root: Path | None = None, log: Callable[[str], None] | None = None) -> list[Claim]:
    """The rows of one group of :data:`GROUPS`, computed (full budget, CPU, no network) the first time
    and read from the cache after."""
    if group not in GROUPS:
        raise ValueError(f"unknown claim group {group!r}; known: {', '.join(GROUPS)}")
    path = saved_dir(root) / f"{group}.json"
    rows = _read(path, group)
    if rows is not None:
        return rows
    with _locked(path.with_suffix(".lock")):
        rows = _read(path, group)  # another process may have written it while this one waited
        if rows is None:
            ids = group_ids(group)
            rows = [r for r in scorecard(ids=ids, log=log) if r.id in ids]
            record = {"format": FORMAT, "fingerprint": fingerprint(), "group": group,
                      "claims": [r.to_dict() for r in rows]}
            atomic_write(path, json.dumps(record, indent=1, allow_nan=False).encode())
    return rows


def saved_scorecard(ids: Iterable[str] | None = None, *, root: Path | None = None,
                    log: Callable[[str], None] | None = None) -> list[Claim]:
    """The scorecard's rows (those of ``ids``, or all), in :data:`CLAIM_IDS` order, from the saved groups
    (each computed once: :func:`saved_group`)."""
    wanted = list(CLAIM_IDS if ids is None else ids)
    unknown = [cid for cid in wanted if cid not in CLAIMS]
    if unknown:
        raise ValueError(f"unknown claim ids {unknown}; known: {', '.join(CLAIM_IDS)}")
    rows: dict[str, Claim] = {}
    for group in dict.fromkeys(CLAIMS[cid].group for cid in wanted):
        rows.update((r.id, r) for r in saved_group(group, root=root, log=log))
    return [rows[cid] for cid in CLAIM_IDS if cid in wanted]


def claim_row(cid: str, *, root: Path | None = None) -> Claim:
    """The saved scorecard row of one claim (what its chapter's box shows and its numbers come from)."""
    return saved_scorecard([cid], root=root)[0]


def _bar_text(row: Claim) -> str:
    """The exact baseline an architecture row had to beat, in words ("" for a claim with its own test)."""
    by_baseline: dict[str, list[str]] = {}
    for metric, bar in (row.details.get("bars") or {}).items():
        if isinstance(bar, dict) and bar.get("baseline") is not None and bar.get("value") is not None:
            name = {"entropy_mae_bits": "entropy MAE", "kl_bits": "KL"}.get(metric, metric)
            by_baseline.setdefault(bar["baseline"], []).append(f"{name} {bar['value']:.3g}")
    return "; ".join(f"{baseline_words(b)} ({b}: {', '.join(v)})" for b, v in by_baseline.items())


def claim_box_html(row: Claim, scorecard_page: str = "../book/scorecard.html") -> str:
    """One claim as a box for the chapter that teaches it (HTML element id ``claim-<id>``): the claim,
    the paper's value and ours, the verdict, the rule in plain words, the baseline it had to beat, and
    the exact measurement folded away; the same row the scorecard page shows."""
    colour = VERDICT_COLOURS[row.verdict]
    bar = _bar_text(row)
    bar_html = f"<br><small>the bar it had to clear: {html.escape(bar)}</small>" if bar else ""
    return (
        f'<div id="claim-{html.escape(row.id)}" class="bwt-claim" style="border-left:4px solid {colour};'
        f'padding:0.4em 0.8em;margin:0.8em 0;background:#f6f8fa">'
        f"<p style=\"margin:0\"><small>Claim <code>{html.escape(row.id)}</code> ({html.escape(row.source)}), "
        f'as on <a href="{scorecard_page}#claim-{html.escape(row.id)}">the scorecard</a></small><br>'
        f"<b>{html.escape(row.claim)}</b></p>"
        f'<p style="margin:0.3em 0"><small>paper:</small> {html.escape(row.paper)}<br>'
        f"<small>ours:</small> {html.escape(row.ours)}</p>"
        f'<p style="margin:0.3em 0"><b style="color:{colour}">{html.escape(row.verdict)}</b>: '
        f"{html.escape(plain_reason(row))}{bar_html}</p>"
        f"<details><summary><small>the measurement</small></summary><small>{html.escape(row.reason)}</small>"
        f"</details></div>")


def claim_box(*cids: str) -> Any:
    """The saved rows of ``cids`` as claim boxes, for a notebook cell (an IPython HTML object)."""
    from IPython.display import HTML

    rows = saved_scorecard(cids)
    return HTML("".join(claim_box_html(r) for r in rows))


def chapter_claims(chapter: str | int) -> list[str]:
    """The ids of the claims a chapter shows (``chapter``: its number or notebook name)."""
    n = chapter if isinstance(chapter, int) else int(str(chapter).split("_")[0])
    return [cid for cid, info in CLAIMS.items() if int(info.chapter.split("_")[0]) == n]


def main(argv: list[str] | None = None) -> int:
    """``python -m bwt_lite.claims``: compute and save every group not yet saved (the book build runs it
    before the chapters, so no chapter waits on another)."""
    import argparse
    import time

    p = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    p.parse_args(argv)
    t0 = time.perf_counter()
    rows = saved_scorecard(log=lambda line: print(f"  {line}", flush=True))
    print(f"scorecard saved in {saved_dir()}: {len(rows)} claims ({time.perf_counter() - t0:.0f} s)")
    return 0


__all__ = ["chapter_claims", "claim_box", "claim_box_html", "claim_row", "fingerprint", "saved_dir", "saved_group",
           "saved_scorecard"]
