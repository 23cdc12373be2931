"""The scorecard for a reader who has not read the rules: each verdict's reason as a plain sentence
(:func:`plain_reason`), the verdicts counted by part of the book (:data:`PARTS`, :func:`by_part`), and
the two HTML views the book shows: the short summary of the start page (:func:`summary_html`) and the
full table of the scorecard page (:func:`reader_table_html`).

The plain sentence is built from a row's fields (its verdict, its ``details``, the paper's value and
ours) and, for a claim that is not an architecture cell, from its catalogue entry's plain texts
(:class:`~bwt_lite.claims.catalogue.ClaimInfo`: ``test``, ``partly``, ``failed``); the row's own ``reason``, the exact measurement behind the verdict, is left as it is and shown
beside it. Nothing here decides a verdict: the rules are in :mod:`.rules` and the ``rows_*`` functions.
"""
from __future__ import annotations

import html
from typing import Any, Sequence

from ..tunnels import CARDS, TUNNELS, Tunnel
from .catalogue import CLAIMS, Claim
from .paper_scale import load_paper_scale, models_measured, recorded_rows, trained_text
from .rules import ACCURACY_POINTS, FACTOR, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, VERDICTS
from .scoring import VERDICT_COLOURS, counts

# The parts of the book (the captions of _toc.yml) and the chapters in each; tests/test_claim_reasons.py
# checks them against _toc.yml.
PARTS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("Belief accumulation", (1, 2)),
    ("Three more wind tunnels", (3, 4, 5)),
    ("Three primitives, four architectures", (6,)),
    ("The geometry of Bayesian attention", (7, 8, 9, 10)),
    ("Paper II: why gradients make it Bayesian", (11,)),
    ("Paper III: the same geometry in language models", (12,)),
    ("Where in-context Bayes stops", (13,)),
)

# Each reference baseline in plain words: what a model must beat to show it does more than a shortcut.
BASELINES = {
    "prior": "a predictor that ignores the context",
    "right-entropy": "a predictor that knows how unsure to be but not which values are used up",
    "reader-no-binding": "a reader that knows the keys and values seen but not which key holds which",
    "one-pair": "the exact answer from the last pair alone",
}

# What a verdict means for a claim with a plain test (ClaimInfo.test), unless its entry says more.
ENDINGS = {
    REPRODUCED: "It holds, and by about the paper's amount.",
    PARTLY: "It holds only partly: in direction but not in size, or in some of its parts and not others "
            "(the measurement says which).",
    NOT_REPRODUCED: "It does not hold in our models.",
    NOT_TESTABLE: "It could not be measured here: no pretrained language model can be downloaded where this "
                  "book is built, and the course's small stand-in model never counts as evidence.",
}


def chapter_number(row: Claim) -> int:
    """The number of the chapter that shows the row's measurement (``"02_..."`` -> 2)."""
    return int(row.chapter.split("_")[0])


def part_of(row: Claim) -> str:
    """The caption of the part of the book the row's chapter belongs to."""
    n = chapter_number(row)
    for caption, chapters in PARTS:
        if n in chapters:
            return caption
    raise ValueError(f"chapter {n} of {row.id} is in no part of PARTS")


def chapters_text(chapters: Sequence[int]) -> str:
    """``"chapter 6"``, ``"chapters 1-2"``, ``"chapters 7-10"``."""
    return f"chapter {chapters[0]}" if len(chapters) == 1 else f"chapters {chapters[0]}-{chapters[-1]}"


def by_part(rows: Sequence[Claim]) -> list[dict[str, Any]]:
    """The verdicts counted per part of the book, in book order, for the parts that have rows: dicts with
    ``part`` (caption), ``chapters`` (their numbers), ``claims`` (how many rows) and ``counts``."""
    out = []
    for caption, chapters in PARTS:
        mine = [r for r in rows if part_of(r) == caption]
        if mine:
            out.append({"part": caption, "chapters": chapters, "claims": len(mine), "counts": counts(mine)})
    return out


def counts_text(c: dict[str, int]) -> str:
    """``"3 reproduced, 1 partly"``: the verdicts that occur, in :data:`VERDICTS` order."""
    return ", ".join(f"{n} {v}" for v, n in c.items() if n) or "no claims"


def _factor(ours: float, paper: float) -> str:
    r = ours / paper
    if 0.95 <= r <= 1.05:
        return "about the paper's error"
    if r >= 1:
        return f"{r:.2g}x the paper's error"
    return f"{1 / r:.2g}x smaller than the paper's error"


def baseline_words(name: str) -> str:
    if name.startswith("window-"):
        w = int(name.removeprefix("window-"))
        if w == 0:
            return "a filter that reads no symbol at all"
        return f"an exact filter that reads only the last {'symbol' if w == 1 else f'{w} symbols'}"
    return BASELINES.get(name, name)


def _cell_reason(row: Claim) -> str:
    """An architecture cell (bijection, HMM, recall): does our model do the task, beat the shortcut that
    lacks the mechanism, and come near the paper's number?"""
    d = row.details
    tunnel = row.id.split("-")[0]
    task = TUNNELS[tunnel].task if tunnel in TUNNELS else Tunnel.task  # in plain words, from the tunnel
    is_acc = d.get("paper_unit") == "% accuracy"
    ours = d["ours"]
    paper = d["paper"]
    if is_acc:
        size = (f"its accuracy, {100 * ours['accuracy']:.1f} %, is "
                f"{'within' if d['size_holds'] else 'more than'} {ACCURACY_POINTS:g} points "
                f"{'of' if d['size_holds'] else 'away from'} the paper's {paper:g} %")
    else:
        size = (f"its error is {_factor(ours['entropy_mae_bits'], paper)} "
                f"({'within' if d['size_holds'] else 'outside'} the {FACTOR:g}x allowed)")
    bar = d.get("bars", {}).get("entropy_mae_bits", {}).get("baseline")
    if tunnel in CARDS and CARDS[tunnel].max_window is not None:  # judged against every window filter of the ladder
        top = CARDS[tunnel].max_window
        shortcut = f"every exact filter that reads only the last 0 to {top} symbols (the longest is nearly exact)"
    else:
        shortcut = baseline_words(bar) if bar else "the shortcuts that lack the mechanism"
    if d["paper_succeeds"] and d["ours_realises"]:
        s = f"Our model {task}: it clearly beats {shortcut}, and {size}."
    elif d["paper_succeeds"]:
        s = f"The paper's model {task}; ours does not: it does not clearly beat {shortcut}."
    elif d["ours_passes_threshold"]:
        s = "The paper reports that this model fails at the task, but ours succeeds."
    else:
        s = f"Like the paper's, our model fails at the task, and {size}."
    slow = d.get("slow_hmm")
    if slow is not None:
        s += (" On a slower-mixing HMM, where a short memory is not enough, it "
              f"{'does track the hidden state' if slow.get('realises') else 'does not track the hidden state either'}.")
        if row.verdict == PARTLY and d["paper_succeeds"] and not d["ours_realises"]:
            s += " Succeeding there but not on the paper's HMM counts as partly."
    if d.get("second_size_holds") is False and d["ours_realises"]:
        s += (f" But it is more than {FACTOR:g}x away from the smaller number the paper's abstract gives, "
              "so it counts as partly.")
    elif d.get("seeds_hold") is False:
        s += " Fewer than 4 of 5 training runs from other seeds manage it, so it counts only as partly."
    elif row.verdict == PARTLY and not d["size_holds"] and (d["ours_realises"] or not d["paper_succeeds"]):
        s += " Right direction, different size: partly."
    return s


def plain_reason(row: Claim) -> str:
    """The row's verdict explained in plain words, for a reader who has not read the rules."""
    if "paper_succeeds" in row.details and "ours" in row.details:
        return _cell_reason(row)
    info = CLAIMS[row.id]
    ending = ENDINGS[row.verdict]
    if row.verdict == PARTLY:
        ending = info.partly or ending
    elif row.verdict == NOT_REPRODUCED:
        ending = info.failed or ending
    return f"{info.test} {ending}".strip()


def _link(row: Claim, prefix: str) -> str:
    return f'<a href="{prefix}{html.escape(row.chapter)}.html">chapter {chapter_number(row)}</a>'


def reader_table_html(rows: Sequence[Claim], anchor: str = "claim", chapters: str = "../chapters/") -> str:
    """The rows as an HTML table for a reader: the claim (linked to its chapter), the paper's value and
    ours, the verdict with :func:`plain_reason`, and the measurement behind it (the row's ``reason``)
    folded away. Each row's id is ``<anchor>-<claim id>``; ``chapters``: the relative address of the
    chapters' pages."""
    cells = "".join(
        f'<tr id="{anchor}-{r.id}"><td><b>{html.escape(r.claim)}</b><br><small>{_link(r, chapters)}; '
        f"{html.escape(r.source)}</small></td>"
        f"<td><small>paper:</small> {html.escape(r.paper)}<br><small>ours:</small> {html.escape(r.ours)}</td>"
        f'<td><b style="color:{VERDICT_COLOURS[r.verdict]}">{html.escape(r.verdict)}</b><br>'
        f"{html.escape(plain_reason(r))}<details><summary><small>the measurement</small></summary>"
        f"<small>{html.escape(r.reason)}</small></details></td></tr>"
        for r in rows)
    head = "<thead><tr><th>claim</th><th>the paper and ours</th><th>verdict and why</th></tr></thead>"
    n = f"{len(rows)} claim{'' if len(rows) == 1 else 's'}"
    return f"<p>{n}: {counts_text(counts(rows))}.</p><table>{head}<tbody>{cells}</tbody></table>"


def summary_html(rows: Sequence[Claim]) -> str:
    """The start page's summary: the count of each verdict, then one line per part of the book."""
    c = counts(rows)
    total = "".join(f'<td style="color:{VERDICT_COLOURS[v]}"><b>{c[v]}</b></td>' for v in VERDICTS)
    lines = "".join(
        f"<tr><td>{html.escape(p['part'])} <small>({chapters_text(p['chapters'])})</small></td>"
        + "".join(f"<td>{p['counts'][v] or ''}</td>" for v in VERDICTS) + "</tr>"
        for p in by_part(rows))
    head = "<thead><tr><th>part of the book</th>" + "".join(f"<th>{v}</th>" for v in VERDICTS) + "</tr></thead>"
    return (f"<table>{head}<tbody>{lines}<tr><td><b>all {len(rows)} claims</b></td>{total}</tr></tbody></table>")


def paper_scale_reader_html() -> str:
    """The recorded paper-scale rows as :func:`reader_table_html` (anchors ``paper-scale-<id>``), after a
    list of how the models they measure trained; a sentence instead when no record is shipped."""
    recorded = load_paper_scale()
    if recorded is None:
        return "<p>No paper-scale measurement is recorded in this version of the package.</p>"
    rows = recorded_rows(recorded=recorded)
    trained = "".join(f"<li>{html.escape(trained_text(m))}</li>" for m in models_measured(recorded, rows))
    return f"<ul>{trained}</ul>" + reader_table_html(rows, anchor="paper-scale")


__all__ = ["BASELINES", "ENDINGS", "PARTS", "baseline_words", "by_part", "chapter_number", "chapters_text",
           "counts_text", "paper_scale_reader_html", "part_of", "plain_reason", "reader_table_html", "summary_html"]
