"""The claims scorecard: every claim of Papers I-III, the paper's value, ours, and a computed verdict.

Paper I is "The Bayesian Geometry of Transformer Attention" (arXiv 2512.22471), Paper II "Gradient
Dynamics of Attention" (arXiv 2512.22473), Paper III "Geometric Scaling of Bayesian Inference in
LLMs" (arXiv 2512.23752); the construction-boundary rows come from the authors' repository (its
modular-recurrence experiments, chapter 13). :func:`scorecard` measures each claim on the lite checkpoints shipped with
the package (never training: a missing checkpoint raises), the shipped training trajectory, and a
small Paper II run; :func:`format_scorecard` prints the rows and :func:`to_json` gives them as JSON.
Every number in a row is computed by the code that runs; the paper's numbers come from
:mod:`bwt_lite.paper` (``paper_value``, ``paper_figure``), each with its source.

**Verdicts** (one of :data:`VERDICTS`):

- ``"reproduced"``: the direction of the claim holds *and* its size: an error (bits) within
  :data:`FACTOR` (3x, either way) of the paper's, an accuracy within :data:`ACCURACY_POINTS`
  (5 points), a speedup within :data:`SPEEDUP_FACTOR` (1.5x) or with the paper's value inside our 95 %
  interval, or the paper's own criterion where it states one (every single layer's removal raises
  the error more than 10x; PC1 holds more than 80 % of the variance).
- ``"partly"``: the direction holds but the size does not (the reason says which), or a claim made
  of several parts holds in some of them (which ones is said).
- ``"not reproduced"``: the direction is wrong, or an exact baseline that lacks the claimed
  mechanism does as well (a model "realises" a primitive only by the rule of
  :func:`bwt_lite.reproduce.realises`: its tunnel's threshold, and at most half the error of the
  strongest exact baseline lacking the primitive, e.g. the HMM's 2-symbol window filter).
- ``"not testable here"``: the claim needs a model that cannot be had here (a pretrained language
  model without the network); a randomly initialised stand-in never counts for such a claim.

How each row decides is in its function (``rows_*`` of :mod:`.cells`, :mod:`.geometry`,
:mod:`.dynamics` and :mod:`.llm`), built from the rule functions
:func:`within_factor`, :func:`within_points`, :func:`size_verdict`, :func:`cell_verdict`,
:func:`count_verdict`, :func:`trend` and the rules of single claims (:func:`manifold_verdict`,
:func:`unfurling_verdict`, :func:`simplex_verdict`), which tests exercise on constructed numbers. The lite
models are shallow (2 layers on the bijection, 4 on the HMM, against the paper's 6 and 9): a
depth-wise claim is still decided, and its reason says how few layers the trend rests on.

**Paper scale.** :mod:`.paper_scale` measures the same claims, with the same rules, on the
paper-size transformers trained on a GPU; those rows are recorded in ``bwt_lite/data/paper_scale.json``
(the models are too large to ship) and shown after the lite rows (:func:`recorded_rows`).

**Budget.** The full scorecard (:data:`FULL`) takes about a minute on one thread of a shared 2-core
machine, 40 s of it the Paper II run (5 seeds x 1,000 steps); ``fast=True`` (:data:`FAST`) uses tiny
episode counts and a short Paper II run, for tests (about 10 s): its numbers are noisy and some of
its verdicts differ.
"""
from __future__ import annotations

from .catalogue import (CH_BIJECTION, CH_ELIMINATION, CH_FRAME, CH_GRADIENTS, CH_HMM, CH_LLM, CH_MAMBA, CH_MANIFOLD,
                        CH_PRIMITIVES, CH_RECALL, CLAIM_IDS, CLAIMS, FAST, FULL, Budget, Claim, ClaimInfo)
from .llm import llm_measurements, llm_verdicts
from .rules import (ACCURACY_POINTS, EARLY, FACTOR, HEAD_RAISE, KEEPS_FALLING, LEARNED, LENGTHS, NOT_REPRODUCED,
                    NOT_TESTABLE, PARTLY, PROBE_EMBEDDING_MAX, PROBE_FINAL_MIN, REPRODUCED, RISE_TOLERANCE, SETTLED,
                    SIMPLEX_GAP, SPEEDUP_FACTOR, VERDICTS, cell_verdict, count_verdict, manifold_verdict, ratio,
                    simplex_verdict, size_verdict, speedup_verdict, trend, unfurling_verdict, within_factor,
                    within_points)
from .paper_scale import PAPER_SCALE_IDS, load_paper_scale, recorded_rows, trained_text
from .scoring import (counts, format_paper_scale, format_scorecard, html_table, paper_scale_html, report, scorecard,
                      to_dict, to_json)
from .saved import chapter_claims, claim_box, claim_row, saved_scorecard

__all__ = ["ACCURACY_POINTS", "Budget", "CLAIM_IDS", "Claim", "ClaimInfo", "chapter_claims", "claim_box", "claim_row",
           "saved_scorecard", "FACTOR", "FAST", "FULL",
           "CLAIMS", "PAPER_SCALE_IDS", "SPEEDUP_FACTOR", "VERDICTS", "cell_verdict", "count_verdict", "counts",
           "format_paper_scale", "format_scorecard", "html_table", "llm_measurements", "llm_verdicts",
           "load_paper_scale", "manifold_verdict", "paper_scale_html", "ratio", "recorded_rows", "report", "scorecard",
           "simplex_verdict", "size_verdict", "speedup_verdict", "to_dict", "to_json", "trained_text", "trend", "unfurling_verdict",
           "within_factor", "within_points"]
