"""The scorecard: every group of rows computed in :data:`~bwt_lite.claims.catalogue.CLAIM_IDS` order,
and the rows as text or JSON (what ``bwt claims`` prints)."""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Iterable, Sequence

import torch

from .catalogue import CLAIM_IDS, FAST, FULL, Claim
from .cells import rows_bijection, rows_hmm, rows_length, rows_recall
from .context import Context
from .dynamics import rows_em
from .geometry import rows_elimination, rows_frame, rows_manifold, rows_simplex, rows_trajectory
from .llm import rows_llm
from .rules import VERDICTS


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
    number bit-for-bit reproducible.
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
    ctx = Context(device, FAST if fast else FULL, fast, log or (lambda line: None))
    groups: list[tuple[tuple[str, ...], Callable[[], list[Claim]]]] = [
        (("bijection-headline", "bijection-mlp", "bijection-lstm", "bijection-mamba"), lambda: rows_bijection(ctx)),
        (("hmm-transformer", "hmm-mlp", "hmm-lstm", "hmm-mamba"), lambda: rows_hmm(ctx)),
        (("hmm-length",), lambda: rows_length(ctx)),
        (("recall-transformer", "recall-mamba", "recall-lstm"), lambda: rows_recall(ctx)),
        (("keys-orthogonal", "frame-head"), lambda: rows_frame(ctx)),
        (("qk-sharpening", "layer-ablation"), lambda: rows_elimination(ctx)),
        (("value-manifold-pc1", "belief-probes"), lambda: rows_manifold(ctx)),
        (("manifold-unfurling", "frame-precision"), lambda: rows_trajectory(ctx)),
        (("mamba-simplex",), lambda: rows_simplex(ctx)),
        (("em-speedup",), lambda: rows_em(ctx)),
        (("llm-keys-orthogonal", "llm-attention-focusing", "llm-value-manifold", "llm-sula"),
         lambda: rows_llm(ctx, network, llm_model)),
    ]
    rows: dict[str, Claim] = {}
    for group_ids, compute in groups:
        if not wanted & set(group_ids):
            continue
        t0 = time.perf_counter()
        produced = compute()
        took = time.perf_counter() - t0
        if [r.id for r in produced] != list(group_ids):
            raise RuntimeError(f"claim group produced {[r.id for r in produced]}, expected {list(group_ids)}")
        for r in produced:
            r.seconds = took / len(produced)
            rows[r.id] = r
        ctx.log(f"{', '.join(group_ids)}: {took:.1f} s")
    return [rows[cid] for cid in CLAIM_IDS if cid in rows]


def counts(rows: Sequence[Claim]) -> dict[str, int]:
    """How many rows have each verdict (every verdict listed, in :data:`VERDICTS` order)."""
    return {v: sum(r.verdict == v for r in rows) for v in VERDICTS}


def to_dict(rows: Sequence[Claim], fast: bool | None = None) -> dict[str, Any]:
    """The scorecard as a JSON-ready dict: ``version``, ``verdicts`` (the allowed ones), ``counts``,
    ``seconds`` (total), ``fast`` (the mode, if given) and ``claims`` (one dict per row)."""
    return {"version": 1, "verdicts": list(VERDICTS), "counts": counts(rows),
            "seconds": sum(r.seconds for r in rows), "fast": fast, "claims": [r.to_dict() for r in rows]}


def to_json(rows: Sequence[Claim], fast: bool | None = None, indent: int | None = 2) -> str:
    """:func:`to_dict` as JSON text (no NaN: non-finite numbers become null)."""
    return json.dumps(to_dict(rows, fast), indent=indent, allow_nan=False)


def format_scorecard(rows: Sequence[Claim]) -> str:
    """The rows as plain text: per claim its id, verdict, chapter, source, the paper's value and ours,
    and the reason; then the count of each verdict and the time taken."""
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
                 + f" ({sum(r.seconds for r in rows):.0f} s)")
    return "\n".join(lines)


def report(device: str | torch.device = "cpu", fast: bool = False, as_json: bool = False, network: bool = False,
           log: Callable[[str], None] | None = None) -> str:
    """The whole scorecard as text (:func:`format_scorecard`) or JSON (:func:`to_json`): what
    ``bwt claims [--json]`` prints."""
    rows = scorecard(device=device, fast=fast, network=network, log=log)
    return to_json(rows, fast=fast) if as_json else format_scorecard(rows)
