"""The scorecard: every group of rows computed in :data:`~bwt_lite.claims.catalogue.CLAIM_IDS` order,
and the rows as text or JSON (what ``bwt claims`` prints)."""
from __future__ import annotations

import html
import json
import time
from typing import Any, Callable, Iterable, Sequence

import torch

from .catalogue import CLAIM_IDS, CLAIMS, FAST, FULL, Claim, group_ids
from .cells import rows_bijection, rows_hmm, rows_length, rows_recall
from .context import Context
from .dynamics import rows_em
from .geometry import rows_elimination, rows_frame, rows_manifold, rows_simplex, rows_trajectory
from .llm import rows_llm
from .recurrence import rows_recurrence
from .paper_scale import load_paper_scale, models_measured, recorded_rows, trained_text
from .rules import VERDICTS

# The groups of rows, in the order they are computed; a group's claims are those whose catalogue entry
# names it (catalogue.group_ids), and it must produce exactly those rows, in that order.
GROUPS: dict[str, Callable[..., list[Claim]]] = {
    "bijection": rows_bijection, "hmm": rows_hmm, "length": rows_length, "recall": rows_recall,
    "frame": rows_frame, "elimination": rows_elimination, "manifold": rows_manifold, "trajectory": rows_trajectory,
    "simplex": rows_simplex, "em": rows_em, "recurrence": rows_recurrence, "llm": rows_llm,
}
NETWORK_GROUPS = ("llm",)  # groups also given whether the network may be used and which language model


def scorecard(device: str | torch.device = "cpu", fast: bool = False, *, network: bool = False,
              llm_model: str | None = None, ids: Iterable[str] | None = None,
              log: Callable[[str], None] | None = None, threads: int | None = 1) -> list[Claim]:
    """Every claim of :data:`CLAIMS`, measured on the shipped lite checkpoints, in :data:`CLAIM_IDS` order.

    ``fast``: tiny episode counts and a short Paper II run (:data:`FAST`), for tests. ``network``:
    let Paper III's rows fetch the pretrained language model (``llm_model``, default
    :data:`bwt_lite.llm.offline.DEFAULT_MODEL`); without it only the local cache is used. ``ids``:
    compute only the groups of rows that include these claims (all rows of a group are returned).
    ``log``: called with one line per finished group. ``threads``: torch threads during the run
    (restored after; None leaves them): one is the fastest on a shared 2-core machine (the Paper II
    run's small batched steps slow down several-fold with two contended threads) and makes every
    number bit-for-bit reproducible on a given CPU.
    """
    if threads is not None:
        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return scorecard(device, fast, network=network, llm_model=llm_model, ids=ids, log=log, threads=None)
        finally:
            torch.set_num_threads(previous)
    wanted = set(CLAIM_IDS if ids is None else ids)
    unknown = wanted - set(CLAIM_IDS)
    if unknown:
        raise ValueError(f"unknown claim ids {sorted(unknown)}; known: {', '.join(CLAIM_IDS)}")
    unmeasured = {info.group for info in CLAIMS.values()} - set(GROUPS)
    if unmeasured:
        raise RuntimeError(f"claims name groups that GROUPS (bwt_lite/claims/scoring.py) lacks: {sorted(unmeasured)}")
    ctx = Context(device, FAST if fast else FULL, fast, log or (lambda line: None))
    rows: dict[str, Claim] = {}
    for name, compute in GROUPS.items():
        ids = group_ids(name)
        if not wanted & set(ids):
            continue
        t0 = time.perf_counter()
        produced = compute(ctx, network, llm_model) if name in NETWORK_GROUPS else compute(ctx)
        took = time.perf_counter() - t0
        if [r.id for r in produced] != list(ids):
            raise RuntimeError(f"claim group {name} produced {[r.id for r in produced]}, expected {list(ids)}")
        for r in produced:
            r.seconds = took / len(produced)
            rows[r.id] = r
        ctx.log(f"{', '.join(ids)}: {took:.1f} s")
    return [rows[cid] for cid in CLAIM_IDS if cid in rows]


def counts(rows: Sequence[Claim]) -> dict[str, int]:
    """How many rows have each verdict (every verdict listed, in :data:`VERDICTS` order)."""
    return {v: sum(r.verdict == v for r in rows) for v in VERDICTS}


def to_dict(rows: Sequence[Claim], fast: bool | None = None,
            paper_scale: dict[str, Any] | None = None) -> dict[str, Any]:
    """The scorecard as a JSON-ready dict: ``version``, ``verdicts`` (the allowed ones), ``counts``,
    ``seconds`` (total), ``fast`` (the mode, if given) and ``claims`` (one dict per row); with
    ``paper_scale`` (:func:`~bwt_lite.claims.paper_scale.load_paper_scale`), also the recorded rows of
    the paper-size models (``paper_scale``: ``models``, ``claims``, ``counts``)."""
    d = {"version": 1, "verdicts": list(VERDICTS), "counts": counts(rows),
         "seconds": sum(r.seconds for r in rows), "fast": fast, "claims": [r.to_dict() for r in rows]}
    if paper_scale is not None:
        d["paper_scale"] = {"models": paper_scale["models"], "claims": paper_scale["claims"],
                            "counts": counts(recorded_rows(recorded=paper_scale))}
    return d


def to_json(rows: Sequence[Claim], fast: bool | None = None, indent: int | None = 2,
            paper_scale: dict[str, Any] | None = None) -> str:
    """:func:`to_dict` as JSON text (no NaN: non-finite numbers become null)."""
    return json.dumps(to_dict(rows, fast, paper_scale), indent=indent, allow_nan=False)


def format_scorecard(rows: Sequence[Claim], timed: bool = True) -> str:
    """The rows as plain text: per claim its id, verdict, chapter, source, the paper's value and ours,
    and the reason; then the count of each verdict and (``timed``) the time taken."""
    width = max(len(v) for v in VERDICTS) + 2
    lines = []
    for r in rows:
        lines.append(f"{'[' + r.verdict + ']':<{width + 2}} {r.id}  (chapter {r.chapter.split('_')[0]}; {r.source})")
        lines.append(f"    claim:  {r.claim}")
        lines.append(f"    paper:  {r.paper}")
        lines.append(f"    ours:   {r.ours}")
        lines.append(f"    reason: {r.reason}")
    c = counts(rows)
    lines.append("")
    lines.append(f"{len(rows)} claims: " + ", ".join(f"{n} {v}" for v, n in c.items())
                 + (f" ({sum(r.seconds for r in rows):.0f} s)" if timed else ""))
    return "\n".join(lines)


VERDICT_COLOURS = {"reproduced": "#1a7f37", "partly": "#9a6700", "not reproduced": "#cf222e",
                   "not testable here": "#57606a"}


def html_table(rows: Sequence[Claim], anchor: str = "claim") -> str:
    """The rows as an HTML table for the book (claim; the paper's value and ours; verdict and reason),
    after a line counting the verdicts; each row's id is ``<anchor>-<claim id>``, for links."""
    cells = "".join(
        f'<tr id="{anchor}-{r.id}"><td><b>{html.escape(r.claim)}</b><br><small>{html.escape(r.id)}, '
        f"chapter {html.escape(r.chapter.split('_')[0])}</small></td>"
        f"<td><small>paper:</small> {html.escape(r.paper)}<br><small>ours:</small> {html.escape(r.ours)}</td>"
        f'<td><b style="color:{VERDICT_COLOURS[r.verdict]}">{html.escape(r.verdict)}</b><br>'
        f"<small>{html.escape(r.reason)}</small></td></tr>"
        for r in rows)
    summary = ", ".join(f"{n} {v}" for v, n in counts(rows).items() if n)
    head = "<thead><tr><th>claim</th><th>the paper and ours</th><th>verdict and why</th></tr></thead>"
    n = f"{len(rows)} claim{'' if len(rows) == 1 else 's'}"
    return f"<p>{n}: {summary}.</p><table>{head}<tbody>{cells}</tbody></table>"


def paper_scale_html(ids: Iterable[str] | None = None) -> str:
    """The recorded paper-scale rows (those of ``ids``, or all) as HTML: a list of how the models they
    measure trained, then :func:`html_table`; a sentence instead when no record is shipped."""
    recorded = load_paper_scale()
    if recorded is None:
        return "<p>No paper-scale measurement is recorded in this version of the package.</p>"
    wanted = None if ids is None else set(ids)
    rows = [r for r in recorded_rows(recorded=recorded) if wanted is None or r.id in wanted]
    trained = "".join(f"<li>{html.escape(trained_text(m))}</li>" for m in models_measured(recorded, rows))
    return f"<ul>{trained}</ul>" + html_table(rows, anchor="paper-scale")


def format_paper_scale(recorded: dict[str, Any]) -> str:
    """The recorded paper-scale rows as text, after a line per model they measure on how it trained."""
    rows = recorded_rows(recorded=recorded)
    lines = ["At Paper I's scale (recorded: the paper-size transformers, trained on a GPU):"]
    lines += [f"  {trained_text(m)}" for m in models_measured(recorded, rows)]
    lines.append("")
    return "\n".join(lines) + format_scorecard(rows, timed=False)


def report(device: str | torch.device = "cpu", fast: bool = False, as_json: bool = False, network: bool = False,
           log: Callable[[str], None] | None = None) -> str:
    """The whole scorecard as text (:func:`format_scorecard`) or JSON (:func:`to_json`), followed by
    the recorded paper-scale rows (:mod:`bwt_lite.claims.paper_scale`): what ``bwt claims [--json]`` prints."""
    rows = scorecard(device=device, fast=fast, network=network, log=log)
    recorded = load_paper_scale()
    if as_json:
        return to_json(rows, fast=fast, paper_scale=recorded)
    return format_scorecard(rows) + ("" if recorded is None else "\n\n" + format_paper_scale(recorded))
