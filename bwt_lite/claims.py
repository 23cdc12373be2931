"""The claims scorecard: every claim of Papers I-III, the paper's value, ours, and a computed verdict.

Paper I is "The Bayesian Geometry of Transformer Attention" (arXiv 2512.22471), Paper II "Gradient
Dynamics of Attention" (arXiv 2512.22473), Paper III "Geometric Scaling of Bayesian Inference in
LLMs" (arXiv 2512.23752). :func:`scorecard` measures each claim on the lite checkpoints shipped with
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

How each row decides is in its function (``_rows_*``), built from the rule functions
:func:`within_factor`, :func:`within_points`, :func:`size_verdict`, :func:`cell_verdict`,
:func:`count_verdict` and :func:`trend`, which tests exercise on constructed numbers. The lite
models are shallow (2 layers on the bijection, 4 on the HMM, against the paper's 6 and 9): a
depth-wise claim is still decided, and its reason says how few layers the trend rests on.

**Budget.** The full scorecard (:data:`FULL`) takes about a minute on one thread of a shared 2-core
machine, 40 s of it the Paper II run (5 seeds x 1,000 steps); ``fast=True`` (:data:`FAST`) uses tiny
episode counts and a short Paper II run, for tests (about 10 s): its numbers are noisy and some of
its verdicts differ.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import torch

from .baselines import evaluate_baselines
from .checkpoints import find_checkpoint, load_or_train
from .dynamics.two_timescale import EMConfig, em_vs_sgd
from .evaluate import EvalResult, evaluate
from .models import build_model
from .paper import Published, paper_figure, paper_value
from .presets import TUNNEL_ARGS, Preset, get_preset
from .reproduce import (MARGIN, MAX_WINDOW, PRIMITIVES, cell_preset, compare_with_baselines, passes_threshold, realises,
                        threshold_text)
from .tunnels import Tunnel, make_tunnel

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "partly", "not reproduced", "not testable here"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE)

FACTOR = 3.0  # an error in bits "has the paper's size" within 3x of it, either way
ACCURACY_POINTS = 5.0  # an accuracy has the paper's size within 5 percentage points
SPEEDUP_FACTOR = 1.5  # a speedup has the paper's size within 1.5x (or with the paper's value in our 95 % interval)
HEAD_RAISE = 1.1  # removing a head "raises the error" when the MAE grows by more than 10 % (same episodes)
PROBE_EMBEDDING_MAX = 0.1  # a belief probe reads ~nothing at the embedding: held-out R^2 below this
PROBE_FINAL_MIN = 0.8  # ... and most of the posterior after the last block: R^2 at least this
RISE_TOLERANCE = 0.02  # a per-layer series "rises" when no layer falls below the previous by more than this
SIMPLEX_GAP = 0.05  # Mamba's entropy R^2 must exceed the LSTM's (and 0) by this to count as "higher"
SETTLED = 0.9  # the key frame has "formed" once its similarity to the final frame stays >= this
EARLY = 0.5  # ... within this fraction of training
KEEPS_FALLING = 3.0  # and the error "keeps falling" when it drops at least this factor afterwards
LENGTHS = (30, 50)  # the lengths of the paper's length-generalisation figures


# Where each claim is shown: the chapter notebook (chapters/<name>.ipynb).
CH_BIJECTION, CH_HMM, CH_RECALL = "02_transformer_learns_the_posterior", "03_hmm_filtering", "04_associative_recall"
CH_PRIMITIVES, CH_FRAME, CH_ELIMINATION = "06_three_primitives", "07_hypothesis_frame", "08_progressive_elimination"
CH_MANIFOLD, CH_MAMBA, CH_GRADIENTS, CH_LLM = ("09_value_manifold", "10_mamba_geometry", "11_gradient_dynamics",
                                               "12_bayesian_geometry_in_llms")


@dataclass(frozen=True)
class ClaimInfo:
    """What a row claims, where the paper makes it, and which chapter shows it (fixed, not measured)."""

    claim: str
    source: str
    chapter: str


def _src(*names: str) -> str:
    """The sources of published figures (paper_value or paper_figure names), deduplicated."""
    out = []
    for n in names:
        if "/" in n:
            pub = paper_value(*n.split("/"))
            out.append(pub.source if pub else n)
        else:
            out.append(paper_figure(n).source)
    return "; ".join(dict.fromkeys(out))


# The claims, in scorecard order. The ids are stable: chapters link to them.
CLAIMS: dict[str, ClaimInfo] = {
    "bijection-headline": ClaimInfo(
        "a small transformer matches the Bayes posterior on the bijection to "
        f"{paper_figure('bijection_text_high').value:g} - {paper_figure('bijection_text_low').value:g} bits "
        "of entropy MAE",
        _src("bijection_text_low", "bijection/transformer"), CH_BIJECTION),
    "bijection-mlp": ClaimInfo(
        "a capacity-matched MLP fails on the bijection by orders of magnitude", _src("bijection/mlp"), CH_BIJECTION),
    "bijection-lstm": ClaimInfo("an LSTM accumulates evidence on the bijection", _src("bijection/lstm"), CH_PRIMITIVES),
    "bijection-mamba": ClaimInfo("Mamba accumulates evidence on the bijection", _src("bijection/mamba"), CH_PRIMITIVES),
    "hmm-transformer": ClaimInfo(
        "a transformer tracks the HMM filtering posterior (belief transport)",
        _src("hmm/transformer", "hmm_transformer_table"), CH_HMM),
    "hmm-mlp": ClaimInfo("an MLP fails on the HMM", _src("hmm/mlp"), CH_HMM),
    "hmm-lstm": ClaimInfo("an LSTM fails to transport beliefs on the HMM", _src("hmm/lstm"), CH_PRIMITIVES),
    "hmm-mamba": ClaimInfo("Mamba transports beliefs on the HMM", _src("hmm/mamba"), CH_PRIMITIVES),
    "hmm-length": ClaimInfo(
        f"the HMM transformer trained at K = {TUNNEL_ARGS['hmm']['K']} generalises to K = "
        f"{' and '.join(str(k) for k in LENGTHS)}", _src("hmm_length_k30"), CH_HMM),
    "recall-transformer": ClaimInfo("a transformer binds keys to values (associative recall)",
                                    _src("recall/transformer"), CH_RECALL),
    "recall-mamba": ClaimInfo("Mamba recalls almost as well", _src("recall/mamba"), CH_PRIMITIVES),
    "recall-lstm": ClaimInfo("an LSTM cannot recall", _src("recall/lstm"), CH_PRIMITIVES),
    "keys-orthogonal": ClaimInfo(
        "training makes the layer-0 keys of the hypothesis tokens more orthogonal than at random init",
        _src("key_cosine_layer0"), CH_FRAME),
    "frame-head": ClaimInfo("zero-ablating any layer-0 head raises the error (the hypothesis frame needs every one)",
                            _src("head_ablation_layer0_low"), CH_FRAME),
    "qk-sharpening": ClaimInfo(
        "query-key alignment sharpens progressively with depth", _src("qk_alignment"), CH_ELIMINATION),
    "layer-ablation": ClaimInfo(
        f"removing any single layer raises the error more than {paper_figure('layer_ablation_ratio').value:g}x",
                                _src("layer_ablation_ratio"), CH_ELIMINATION),
    "value-manifold-pc1": ClaimInfo(
        f"the final representation lies on a manifold whose PC1 holds > {paper_figure('value_manifold_pc1').value:.0%}"
        " of the variance",
        _src("value_manifold_pc1"), CH_MANIFOLD),
    "manifold-unfurling": ClaimInfo("during training the value manifold unfurls", _src("unfurling"), CH_MANIFOLD),
    "frame-precision": ClaimInfo(
        "the frame forms early while the error keeps falling (frame-precision dissociation)",
        _src("frame_overlap_early", "dissociation_mae_2500"), CH_MANIFOLD),
    "belief-probes": ClaimInfo("the residual stream is the belief substrate: the posterior becomes linearly readable "
                               "layer by layer", _src("belief_substrate"), CH_MANIFOLD),
    "mamba-simplex": ClaimInfo("Mamba's final representation carries the HMM belief's entropy; the LSTM's does not",
                               _src("mamba_simplex_entropy_r2"), CH_MAMBA),
    "em-speedup": ClaimInfo(
        f"EM-like training ({EMConfig().mult:g}x the learning rate on the values) reaches SGD's final loss "
        f"{paper_figure('em_vs_sgd_speedup').value:g}x faster",
        _src("em_vs_sgd_speedup"), CH_GRADIENTS),
    "llm-keys-orthogonal": ClaimInfo("pretrained LMs have near-orthogonal keys in every layer",
                                     _src("llm_key_orthogonality_low"), CH_LLM),
    "llm-attention-focusing": ClaimInfo("attention entropy falls across depth in pretrained LMs",
                                        _src("llm_focusing"), CH_LLM),
    "llm-value-manifold": ClaimInfo("last-layer values of pretrained LMs lie on a low-dimensional manifold (PC1+PC2)",
                                    _src("llm_value_pc12_pythia_mixed"), CH_LLM),
    "llm-sula": ClaimInfo(
        "on SULA prompts the model's entropy tracks the Bayes posterior's to "
        f"{paper_figure('llm_sula_mae_low').value:g}-{paper_figure('llm_sula_mae_high').value:g} bits",
        _src("llm_sula_mae_low"), CH_LLM),
}
CLAIM_IDS: tuple[str, ...] = tuple(CLAIMS)


@dataclass
class Claim:
    """One row of the scorecard. ``paper_value`` / ``ours_value``: the headline numbers (None where a
    claim has none); ``paper`` / ``ours``: the same as text with units and context; ``details``: every
    number the verdict used (JSON-ready); ``seconds``: time to compute the row (a group's time is
    shared evenly by the rows it produces)."""

    id: str
    claim: str
    source: str
    chapter: str
    paper: str
    ours: str
    verdict: str
    reason: str
    paper_value: float | None = None
    ours_value: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


@dataclass(frozen=True)
class Budget:
    """Episode counts and run sizes of one scorecard mode."""

    eval: int  # held-out episodes of every model and baseline evaluation
    long: int  # HMM length generalisation, per length
    ablation: int  # head and layer ablation
    geometry: int  # elimination, value manifold, probes
    simplex: int  # belief simplex
    trajectory: int  # frame_precision episodes per snapshot
    pattern: int  # frame_precision attention-pattern episodes
    em_seeds: int  # Paper II: seeds x steps of the single-head run
    em_steps: int
    llm_prompts: int  # Paper III: prompts per value-manifold set (pretrained model only)
    sula_per_k: int  # SULA prompts per k


FULL = Budget(eval=1024, long=512, ablation=512, geometry=512, simplex=256, trajectory=256, pattern=64,
              em_seeds=5, em_steps=1000, llm_prompts=24, sula_per_k=16)
FAST = Budget(eval=64, long=32, ablation=32, geometry=16, simplex=16, trajectory=16, pattern=8,
              em_seeds=2, em_steps=200, llm_prompts=4, sula_per_k=2)


# ------------------------------------------------------------------------------------------------
# Verdict rules (pure functions of numbers)


def ratio(ours: float, paper: float) -> float:
    """How far apart two positive numbers are, as a factor >= 1 (inf when either is <= 0 or NaN)."""
    if not (ours > 0 and paper > 0):
        return math.inf
    return max(ours / paper, paper / ours)


def within_factor(ours: float, paper: float, factor: float = FACTOR) -> bool:
    """Is ``ours`` within ``factor`` of ``paper``, either way (both positive)?"""
    return ratio(ours, paper) <= factor


def within_points(ours: float, paper: float, points: float = ACCURACY_POINTS) -> bool:
    """Are two percentages within ``points`` percentage points?"""
    return abs(ours - paper) <= points


def size_verdict(direction_holds: bool, size_holds: bool) -> str:
    """The basic rule: wrong direction -> not reproduced; right direction and size -> reproduced;
    right direction, wrong size -> partly."""
    if not direction_holds:
        return NOT_REPRODUCED
    return REPRODUCED if size_holds else PARTLY


def cell_verdict(paper_succeeds: bool, ours_succeeds: bool, size_holds: bool) -> str:
    """An (architecture, tunnel) cell. The paper claims success (its number passes the tunnel's
    threshold) or failure; ours must do the same (success: realise the primitive, baselines
    included), then :func:`size_verdict` on the size."""
    return size_verdict(ours_succeeds == paper_succeeds, size_holds)


def count_verdict(parts: Sequence[bool]) -> str:
    """A claim of several parts: all hold -> reproduced, some -> partly, none -> not reproduced."""
    parts = list(parts)
    if not parts:
        raise ValueError("count_verdict needs at least one part")
    return REPRODUCED if all(parts) else (PARTLY if any(parts) else NOT_REPRODUCED)


def trend(values: Sequence[float], tolerance: float = 0.0) -> str:
    """``"up"`` when no step falls by more than ``tolerance`` and the last value is above the first,
    ``"down"`` for the mirror image, ``"flat"`` when no step moves by more than ``tolerance`` (or there
    is a single value), else ``"mixed"``."""
    v = [float(x) for x in values]
    if len(v) < 2:
        return "flat"
    steps = [b - a for a, b in zip(v, v[1:])]
    if all(s >= -tolerance for s in steps) and v[-1] > v[0]:
        return "up"
    if all(s <= tolerance for s in steps) and v[-1] < v[0]:
        return "down"
    return "flat" if all(abs(s) <= tolerance for s in steps) else "mixed"


def speedup_verdict(mean: float, low: float, high: float, paper: float) -> str:
    """Paper II's speedup: slower or equal -> not reproduced; the paper's value within our interval
    or within :data:`SPEEDUP_FACTOR` of our mean -> reproduced; faster but not by that much -> partly."""
    size = (low <= paper <= high) or within_factor(mean, paper, SPEEDUP_FACTOR)
    return size_verdict(mean > 1.0, size)


# ------------------------------------------------------------------------------------------------
# Formatting helpers


def _g(x: float | None, digits: int = 3) -> str:
    """A number for a reason line: 3 significant digits, plain where short."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 1e-3 and abs(x) < 1e5:
        return f"{x:.{digits}g}"
    return f"{x:.{max(digits - 1, 1)}e}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _x(r: float) -> str:
    return f"x{r:.1f}" if r < 100 else f"x{r:.0f}"


def _jsonable(obj: Any) -> Any:
    """Tensors to lists, NaN/inf to None, tuples to lists, recursively."""
    if isinstance(obj, torch.Tensor):
        return _jsonable(obj.tolist())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def _published(pub: Published) -> str:
    return f"{pub.value:g} {pub.unit}".strip()


# ------------------------------------------------------------------------------------------------
# Shared state of one scorecard run: models and baselines are loaded and scored once


class _Context:
    def __init__(self, device: str | torch.device, budget: Budget, fast: bool, log: Callable[[str], None]):
        self.device, self.budget, self.fast, self.log = device, budget, fast, log
        self._models: dict[tuple[str, str], Any] = {}
        self._evals: dict[tuple[str, str], EvalResult] = {}
        self._bases: dict[str, dict[str, dict[str, Any]]] = {}

    def preset(self, tunnel: str, arch: str) -> Preset:
        return cell_preset(tunnel, arch, "lite")  # tunnel: a name of the primitives table ("hmm-slow" too)

    def tunnel(self, tunnel: str) -> Tunnel:
        return make_tunnel(**self.preset(tunnel, "transformer").tunnel)

    def model(self, tunnel: str, arch: str) -> torch.nn.Module:
        """The shipped (or cached) lite checkpoint, in eval mode; never trains."""
        key = (tunnel, arch)
        if key not in self._models:
            preset = self.preset(tunnel, arch)
            if find_checkpoint(preset) is None:
                raise RuntimeError(f"no checkpoint of {preset.name} in the cache or the package: the scorecard "
                                   "measures shipped checkpoints and never trains (run `bwt ship`)")
            model, _ = load_or_train(preset, device=self.device, progress=False, download=False,
                                     log=lambda line: None)
            self._models[key] = model.eval()
        return self._models[key]

    def deep(self, tunnel: str) -> bool:
        """Whether the lite transformer at the paper's depth (``depth="paper"``) is shipped or cached."""
        return find_checkpoint(get_preset(tunnel, "transformer", "lite", depth="paper")) is not None

    def geometry_model(self, tunnel: str) -> tuple[torch.nn.Module, str]:
        """The transformer the geometry claims measure, and a label: the lite model at the paper's depth
        when its checkpoint is there (the per-layer claims need the paper's number of layers), else
        the default lite transformer."""
        key = (tunnel, "transformer-deep")
        if not self.deep(tunnel):
            model = self.model(tunnel, "transformer")
            return model, f"the {model.cfg.n_layers}-layer lite model"
        if key not in self._models:
            model, _ = load_or_train(get_preset(tunnel, "transformer", "lite", depth="paper"), device=self.device,
                                     progress=False, download=False, log=lambda line: None)
            self._models[key] = model.eval()
        model = self._models[key]
        return model, f"the {model.cfg.n_layers}-layer lite model (the paper's depth)"

    def evaluate(self, tunnel: str, arch: str) -> EvalResult:
        key = (tunnel, arch)
        if key not in self._evals:
            self._evals[key] = evaluate(self.model(tunnel, arch), self.tunnel(tunnel), episodes=self.budget.eval,
                                        seed=0, device=self.device)
        return self._evals[key]

    def baselines(self, tunnel: str) -> dict[str, dict[str, Any]]:
        """The tunnel's exact baselines on the models' held-out episodes, as metrics dicts."""
        if tunnel not in self._bases:
            results = evaluate_baselines(self.tunnel(tunnel), episodes=self.budget.eval, seed=0, device=self.device,
                                         max_window=MAX_WINDOW.get(tunnel, 4))
            self._bases[tunnel] = {name: _metrics(r) for name, r in results.items()}
        return self._bases[tunnel]


def _paper_layers(tunnel: str) -> int:
    """Depth of the paper's transformer on ``tunnel`` (the paper preset)."""
    return get_preset(tunnel, "transformer", "paper").model.n_layers


def _metrics(r: EvalResult) -> dict[str, Any]:
    return {"entropy_mae_bits": r.entropy_mae_bits, "kl_bits": r.kl_bits, "accuracy": r.accuracy}


def _row(cid: str, *, paper: str, ours: str, verdict: str, reason: str, paper_value: float | None = None,
         ours_value: float | None = None, details: dict[str, Any] | None = None) -> Claim:
    info = CLAIMS[cid]
    return Claim(id=cid, claim=info.claim, source=info.source, chapter=info.chapter, paper=paper, ours=ours,
                 verdict=verdict, reason=reason, paper_value=paper_value, ours_value=ours_value,
                 details=_jsonable(details or {}))


# ------------------------------------------------------------------------------------------------
# Paper I: the architecture cells (bijection, HMM, recall)


def _cell(ctx: _Context, cid: str, tunnel: str, arch: str, note: Callable[[dict[str, Any]], str] | None = None,
          also: Callable[[float], bool] | None = None, paper_text: str | None = None) -> Claim:
    """One (tunnel, architecture) cell: the paper's number against ours, with the tunnel's baselines.

    ``note(details)``: a clause appended to the reason; ``also(ours_value)``: a second published size
    that ours must match too (e.g. the abstract's beside the table's); ``paper_text``: the paper column.
    """
    pub = paper_value(tunnel, arch)
    res = ctx.evaluate(tunnel, arch)
    ours = _metrics(res)
    bases = ctx.baselines(tunnel)
    is_acc = pub.unit == "% accuracy"
    paper_metrics = {"accuracy": pub.value / 100.0} if is_acc else {"entropy_mae_bits": pub.value}
    paper_succeeds = bool(passes_threshold(tunnel, paper_metrics))
    comparison = compare_with_baselines(tunnel, ours, bases)
    ours_realises = bool(realises(tunnel, ours, bases))
    ours_passes = bool(passes_threshold(tunnel, ours))
    # a success claim needs the primitive realised (baselines included); a failure claim is contradicted
    # as soon as ours passes the tunnel's threshold
    ours_succeeds = ours_realises if paper_succeeds else ours_passes
    if is_acc:
        ours_value = 100.0 * res.accuracy
        size = within_points(ours_value, pub.value)
        gap = f"{ours_value - pub.value:+.1f} points from the paper's {pub.value:g} %"
        ours_text = f"{ours_value:.1f} % (entropy MAE {_g(res.entropy_mae_bits)} bits)"
    else:
        ours_value = res.entropy_mae_bits
        size = within_factor(ours_value, pub.value)
        gap = f"{_g(ours_value / pub.value)}x the paper's {pub.value:g}"
        ours_text = f"{_g(ours_value)} bits (KL {_g(res.kl_bits)})"
    size_also = True if also is None else bool(also(ours_value))
    verdict = cell_verdict(paper_succeeds, ours_succeeds, size and size_also)
    outside = f", outside the {FACTOR:g}x" if not is_acc else f", outside {ACCURACY_POINTS:g} points"
    primitive, rule = PRIMITIVES[tunnel], threshold_text(tunnel)
    bars = ", ".join(comparison["compared_with"])
    if paper_succeeds and not ours_succeeds:
        why = comparison["why"] or f"misses the threshold ({rule})"
        reason = f"does not realise {primitive}: {why}"
    elif paper_succeeds:
        reason = f"realises {primitive} ({rule}, <= {MARGIN:g}x {bars}); {gap}" + ("" if size else outside)
    elif ours_succeeds:
        reason = f"the paper's fails but ours passes the threshold ({rule}): {ours_text}"
    else:
        reason = f"fails as the paper's does (misses {rule}); {gap}" + ("" if size else outside)
    details = {"ours": ours, "paper": pub.value, "paper_unit": pub.unit, "paper_succeeds": paper_succeeds,
               "ours_realises": ours_realises, "ours_passes_threshold": ours_passes, "size_holds": size,
               "second_size_holds": None if also is None else size_also,
               "baselines": bases, "bars": comparison["bars"], "episodes": ctx.budget.eval}
    if note is not None:
        reason += "; " + note(details)
    return _row(cid, paper=paper_text or f"{_published(pub)} ({pub.source})", ours=ours_text, verdict=verdict,
                reason=reason, paper_value=pub.value, ours_value=ours_value, details=details)


def _rows_bijection(ctx: _Context) -> list[Claim]:
    t = ctx.tunnel("bijection")
    V, L = t.V, t.L
    plateau = sum(math.log2(V / (V - k)) for k in range(L)) / L  # a context-blind model's entropy MAE
    lo, hi = paper_figure("bijection_text_low").value, paper_figure("bijection_text_high").value

    def headline(d: dict[str, Any]) -> str:
        mae = d["ours"]["entropy_mae_bits"]
        paper_preset = get_preset("bijection", "transformer", "paper")
        with torch.device("meta"):  # count the paper model's parameters without allocating its weights
            n_paper = build_model(paper_preset.model).n_params
        ours = ctx.model("bijection", "transformer")
        where = "within" if within_factor(mae, hi) else "outside"
        return (f"the abstract's {lo:g}-{hi:g} bits is {_g(mae / hi)}x-{_g(mae / lo)}x below ours, {where} the "
                f"{FACTOR:g}x (the paper's "
                f"{n_paper:,}-parameter model, {paper_preset.train.steps:,} steps; ours {ours.n_params:,} parameters, "
                f"{ctx.preset('bijection', 'transformer').train.steps:,} steps)")

    def mlp(d: dict[str, Any]) -> str:
        return (f"ours sits at the context-blind plateau {plateau:.3f} bits (the authors' own control measures it "
                f"too); the published {d['paper']:g} lies above that plateau")

    table = paper_value("bijection", "transformer")
    return [_cell(ctx, "bijection-headline", "bijection", "transformer", headline,
                  also=lambda mae: within_factor(mae, hi),  # the abstract's range, at its nearer end
                  paper_text=f"{lo:g}-{hi:g} bits ({paper_figure('bijection_text_low').source}); "
                             f"{_published(table)} ({table.source})"),
            _cell(ctx, "bijection-mlp", "bijection", "mlp", mlp),
            _cell(ctx, "bijection-lstm", "bijection", "lstm"),
            _cell(ctx, "bijection-mamba", "bijection", "mamba")]


def _window(bases: dict[str, dict[str, Any]], name: str = "window-2") -> str:
    b = bases[name]
    return f"{name} scores {_g(b['entropy_mae_bits'])} bits (KL {_g(b['kl_bits'])})"


def _rows_hmm(ctx: _Context) -> list[Claim]:
    table = paper_figure("hmm_transformer_table")

    def transformer(d: dict[str, Any]) -> str:
        bases = d["baselines"]
        two = {"window-2": bases["window-2"]}
        beats = compare_with_baselines("hmm", d["ours"], two)["beats"] is True
        table_beats = compare_with_baselines("hmm", {"entropy_mae_bits": table.value}, two)["beats"] is True
        return (f"beats window-2: {'yes' if beats else 'no'} ({_window(bases)}; needs <= {MARGIN:g}x in both); "
                f"the architecture table's {table.value:g} "
                f"{'would beat it' if table_beats else 'would not beat it either'}")

    def mamba(d: dict[str, Any]) -> str:
        paper_beats = compare_with_baselines("hmm", {"entropy_mae_bits": d["paper"]}, d["baselines"])["beats"] is True
        mae, w0 = d["ours"]["entropy_mae_bits"], d["baselines"]["window-0"]["entropy_mae_bits"]
        where = ("stays near the uniform belief" if mae > 0.9 * w0 else
                 f"leaves the uniform belief (window-0: {_g(w0)} bits)")
        return (f"ours {where}; the paper's {d['paper']:g} "
                f"{'would beat' if paper_beats else 'would not beat'} window-2 either ({_window(d['baselines'])})")

    text = paper_value("hmm", "transformer")
    rows = [_cell(ctx, "hmm-transformer", "hmm", "transformer", transformer,
                  paper_text=f"{_published(text)} (text: {text.source}); {_published(table)} ({table.source})"),
            _cell(ctx, "hmm-mlp", "hmm", "mlp"),
            _cell(ctx, "hmm-lstm", "hmm", "lstm"),
            _cell(ctx, "hmm-mamba", "hmm", "mamba", mamba)]
    return [_with_slow_hmm(ctx, row, arch) for row, arch in zip(rows, ("transformer", "mlp", "lstm", "mamba"))]


def _with_slow_hmm(ctx: _Context, row: Claim, arch: str) -> Claim:
    """Add the slow-mixing HMM's evidence to an HMM cell: there a window needs 8 symbols to come within
    0.01 bits of the exact filter, so beating the 4-symbol window tests transport where the default
    HMM cannot. A success claim that our model misses on the default HMM but realises on the slow
    one is "partly" reproduced. No-op when the slow variant's checkpoint is not there."""
    if find_checkpoint(ctx.preset("hmm-slow", arch)) is None:
        return row
    ours, bases = _metrics(ctx.evaluate("hmm-slow", arch)), ctx.baselines("hmm-slow")
    done = bool(realises("hmm-slow", ours, bases))
    w4 = bases["window-4"]
    reason = (f"{row.reason}; slow-mixing HMM (no published number): {_g(ours['entropy_mae_bits'])} bits "
              f"(KL {_g(ours['kl_bits'])}) against window-4 {_g(w4['entropy_mae_bits'])} "
              f"(KL {_g(w4['kl_bits'])}): transport {'realised' if done else 'not realised'} there")
    partly = row.details.get("paper_succeeds") and not row.details.get("ours_realises") and done
    return replace(row, reason=reason, verdict=PARTLY if partly else row.verdict,
                   details={**row.details, "slow_hmm": _jsonable({"ours": ours, "realises": done, "window-4": w4})})


def _rows_recall(ctx: _Context) -> list[Claim]:
    V = ctx.tunnel("recall").V

    def lstm(d: dict[str, Any]) -> str:
        return f"chance is 1/V = {100 / V:.2f} % in our task (V = {V}); the paper's task sizes are unpublished"

    return [_cell(ctx, "recall-transformer", "recall", "transformer"),
            _cell(ctx, "recall-mamba", "recall", "mamba"),
            _cell(ctx, "recall-lstm", "recall", "lstm", lstm)]


def _rows_length(ctx: _Context) -> list[Claim]:
    """HMM length generalisation: means over all K positions (the paper's), and past position 20
    against the window filters' errors at the same positions (does it still transport?)."""
    from .baselines import evaluate_baseline

    model = ctx.model("hmm", "transformer")
    base_cfg = ctx.preset("hmm", "transformer").tunnel
    trained = int(base_cfg["K"])  # the training length; positions past it were never seen in training
    n = ctx.budget.long
    per: dict[int, dict[str, Any]] = {}
    for K in LENGTHS:
        t = make_tunnel(**{**base_cfg, "K": K})
        res = evaluate(model, t, episodes=n, seed=0, device=ctx.device)
        e, kl = res.per_position["entropy_mae"], res.per_position["kl"]
        past = slice(trained, None)
        mean = lambda v: sum(v) / len(v)  # noqa: E731
        windows = {}
        for w in range(3):  # the reference windows of the transport rule (bwt_lite.reproduce.REFERENCES)
            b = evaluate_baseline(t, f"window-{w}", episodes=n, seed=0, device=ctx.device)
            windows[f"window-{w}"] = {"mae_past": mean(b.per_position["entropy_mae"][past]),
                                      "kl_past": mean(b.per_position["kl"][past])}
        best_mae = min(windows.values(), key=lambda r: r["mae_past"])
        best_kl = min(windows.values(), key=lambda r: r["kl_past"])
        best_name = min(windows, key=lambda w: windows[w]["mae_past"])
        past_mae, past_kl = mean(e[past]), mean(kl[past])
        per[K] = {"mae_all": res.entropy_mae_bits, "mae_in_range": mean(e[:trained]), "mae_past": past_mae,
                  "kl_past": past_kl, "windows_past": windows, "paper": paper_figure(f"hmm_length_k{K}").value,
                  "transports": past_mae <= MARGIN * best_mae["mae_past"] and past_kl <= MARGIN * best_kl["kl_past"],
                  "best_window": best_name, "best_window_mae_past": best_mae["mae_past"]}
    direction = all(p["transports"] for p in per.values())
    size = all(within_factor(p["mae_all"], p["paper"]) for p in per.values())
    verdict = size_verdict(direction, size)
    k_hi = LENGTHS[-1]
    p = per[k_hi]
    parts = [f"K={K}: all positions {_g(v['mae_all'])} bits ({_g(v['mae_all'] / v['paper'])}x the paper's)"
             for K, v in per.items()]
    reason = "; ".join(parts) + (
        f"; past position {trained} at K={k_hi}: {_g(p['mae_past'])} bits per position vs "
        f"{_g(p['mae_in_range'])} in range; the window filters there: "
        + ", ".join(f"{w} {_g(v['mae_past'])}" for w, v in p["windows_past"].items())
        + f" (to still transport, ours must be <= {MARGIN:g}x {p['best_window']}'s, MAE and KL: "
        f"{'it is' if p['transports'] else 'it is not'})")
    paper_text = ", ".join(f"K={K}: {per[K]['paper']:g} bits" for K in LENGTHS) + " (means over all positions)"
    ours_text = ", ".join(f"K={K}: {_g(per[K]['mae_all'])}" for K in LENGTHS) + (
        f" bits; past {trained}: {_g(p['mae_past'])} bits/position at K={k_hi}")
    return [_row("hmm-length", paper=paper_text, ours=ours_text, verdict=verdict, reason=reason,
                 paper_value=per[k_hi]["paper"], ours_value=per[k_hi]["mae_all"],
                 details={"per_length": per, "episodes": n, "trained_length": trained})]


# ------------------------------------------------------------------------------------------------
# Paper I: geometry of the bijection transformer


def _rows_frame(ctx: _Context) -> list[Claim]:
    from .geometry.ablation import head_ablation
    from .geometry.frame import analytic_abs_cosine, key_orthogonality

    (model, which), t = ctx.geometry_model("bijection"), ctx.tunnel("bijection")
    seed = ctx.preset("bijection", "transformer").train.seed
    # key orthogonality: the layer-0 keys of the value tokens, per head, beside the same model at init
    ko = key_orthogonality(model, "projected/per_head/abs", seed=seed)
    trained, rand = ko.trained_mean, ko.random_mean
    chance = analytic_abs_cosine(ko.dim)
    p_tr, p_rand = paper_figure("key_cosine_layer0").value, paper_figure("key_cosine_layer0_random").value
    paper_drop, our_drop = 1 - p_tr / p_rand, 1 - trained / rand
    verdict = size_verdict(trained < rand, our_drop >= 0.5 * paper_drop)
    re_lo, re_hi = paper_figure("key_cosine_remeasured_low").value, paper_figure("key_cosine_remeasured_high").value
    rr_lo, rr_hi = (paper_figure("key_cosine_remeasured_random_low").value,
                    paper_figure("key_cosine_remeasured_random_high").value)
    reason = (f"trained {_g(trained)} vs random init {_g(rand)} ({_g(trained / rand)}x) and chance "
              f"sqrt(2/(pi d_head)) = {_g(chance)} (d_head {ko.dim}); the paper's: {_g(1 - paper_drop)}x "
              f"({paper_drop:.0%} lower; needs ours lower than at init by at least half that). "
              f"{'More' if trained < rand else 'Less'} orthogonal than at init"
              + ("" if trained < rand else f", as in the authors' re-measurement ({re_lo:g}-{re_hi:g} vs "
                                           f"{rr_lo:g}-{rr_hi:g} at init)") + f"; {which}")
    keys = _row("keys-orthogonal", paper=f"{p_tr:g} trained vs {p_rand:g} random init (mean |cos|)",
                ours=f"{_g(trained)} trained vs {_g(rand)} random init; chance {_g(chance)}", verdict=verdict,
                reason=reason, paper_value=p_tr, ours_value=trained,
                details={"trained_per_head": ko.trained, "random_per_head": ko.random_init, "trained": trained,
                         "random_init": rand, "chance": chance, "d_head": ko.dim,
                         "definition": ko.definition, "paper_reduction": paper_drop, "our_reduction": our_drop})

    # frame head: zero-ablate each layer-0 head
    ha = head_ablation(model, t, layers=(0,), episodes=ctx.budget.ablation, seed=0)
    r0 = ha.ratio()[0]
    base, lo, hi = (paper_figure(k).value for k in ("head_ablation_baseline", "head_ablation_layer0_low",
                                                    "head_ablation_layer0_high"))
    paper_min = lo / base
    all_raise = bool((r0 > HEAD_RAISE).all())
    verdict = size_verdict(all_raise, float(r0.min()) >= paper_min / FACTOR)
    frame = ha.frame_head(0)
    weak = [h for h in range(len(r0)) if r0[h] <= HEAD_RAISE]
    reason = (f"removing a layer-0 head multiplies the MAE by {_x(float(r0.min()))}-{_x(float(r0.max()))} "
              f"(frame head {frame}: {_x(float(r0[frame]))}); the authors' production checkpoint "
              f"{_x(lo / base)}-{_x(hi / base)}; needs every head > {_x(HEAD_RAISE)}, and the weakest >= "
              f"{_x(paper_min / FACTOR)} for the size" + (f"; heads {weak} do not raise it" if weak else "")
              + f"; {which}")
    head = _row("frame-head", paper=f"{lo:g}-{hi:g} bits with one layer-0 head removed vs {base:g} intact",
                ours=f"{_g(float(ha.mae[0].min()))}-{_g(float(ha.mae[0].max()))} bits vs {_g(ha.baseline_mae)} intact",
                verdict=verdict, reason=reason, paper_value=paper_min, ours_value=float(r0.min()),
                details={"ratios": r0, "mae": ha.mae[0], "intact_mae": ha.baseline_mae, "frame_head": frame,
                         "paper_ratio_low": lo / base, "paper_ratio_high": hi / base,
                         "episodes": ctx.budget.ablation})
    return [keys, head]


def _rows_elimination(ctx: _Context) -> list[Claim]:
    from .geometry.ablation import layer_ablation
    from .geometry.elimination import ELIMINATED, KEY, progressive_elimination

    (model, which), t = ctx.geometry_model("bijection"), ctx.tunnel("bijection")
    n_layers = model.cfg.n_layers
    paper_layers = _paper_layers("bijection")
    pe = progressive_elimination(model, t, episodes=ctx.budget.geometry, seed=0)
    summary = pe.summary("eliminated", first=1)
    entropy = [r["entropy_bits"] for r in summary]
    uniform = summary[0]["uniform_entropy_bits"]
    cos = pe.cos_by_role[:, :, 1:].nanmean((1, 2))  # (layers, roles): mean over heads and query steps t >= 1
    cos_elim, cos_key = cos[:, ELIMINATED].tolist(), cos[:, KEY].tolist()
    sharpens, aligns = trend(entropy) == "down", trend(cos_elim) == "up"
    verdict = count_verdict([sharpens, aligns])
    reason = (f"attention entropy by layer {', '.join(_g(v) for v in entropy)} bits (uniform {_g(uniform)}): "
              f"{'falls' if sharpens else 'does not fall'} with depth; query-key cosine to the eliminated values' "
              f"keys {', '.join(f'{v:+.2f}' for v in cos_elim)}: {'rises' if aligns else 'does not rise'} "
              f"(separate layout: every revealed value is eliminated, none still consistent); "
              f"{which}, against the paper's {paper_layers} layers: a {n_layers}-point trend")
    sharp = _row("qk-sharpening", paper="sharper with depth (no number)",
                 ours=(f"entropy {' -> '.join(_g(v) for v in entropy)} bits; "
                       f"cos {' -> '.join(f'{v:+.2f}' for v in cos_elim)}"),
                 verdict=verdict, reason=reason, ours_value=entropy[-1] - entropy[0],
                 details={"entropy_bits": entropy, "uniform_entropy_bits": uniform, "cos_eliminated": cos_elim,
                          "cos_key": cos_key, "mass_eliminated": [r["mass"] for r in summary],
                          "uniform_mass_eliminated": summary[0]["uniform_mass"], "layers": n_layers,
                          "paper_layers": paper_layers, "episodes": ctx.budget.geometry})

    # layer ablation: bypass every block of the shipped bijection model (the HMM model's, for the reason)
    claim = paper_figure("layer_ablation_ratio").value
    la = layer_ablation(model, t, episodes=ctx.budget.ablation, seed=0)
    ratios = la.error_ratio
    hmm_model, hmm_which = ctx.geometry_model("hmm")
    la_hmm = layer_ablation(hmm_model, ctx.tunnel("hmm"), episodes=ctx.budget.ablation, seed=0)
    hmm_beats = compare_with_baselines("hmm", _metrics(evaluate(hmm_model, ctx.tunnel("hmm"), episodes=ctx.budget.eval,
                                                                seed=0, device=ctx.device)),
                                       ctx.baselines("hmm"))["beats"] is True
    verdict = size_verdict(all(r > 1 for r in ratios), all(r > claim for r in ratios))
    failing = [i for i, r in enumerate(ratios) if r <= claim]
    reason = (f"bypassing each of the {len(ratios)} blocks: {', '.join(_x(r) for r in ratios)} (criterion > "
              f"{claim:g}x{'; blocks ' + str(failing) + ' fail it' if failing else ''}); "
              f"{which}, against the paper's {paper_layers} layers; the HMM's {hmm_which}, "
              f"which {'beats' if hmm_beats else 'does not beat'} window-2, gives "
              f"{', '.join(_x(r) for r in la_hmm.error_ratio)}")
    layers = _row("layer-ablation", paper=f"> {claim:g}x for every layer",
                  ours=f"{', '.join(_x(r) for r in ratios)} (intact {_g(la.baseline_mae)} bits)", verdict=verdict,
                  reason=reason, paper_value=claim, ours_value=min(ratios),
                  details={"ratios": ratios, "kl_ratios": la.kl_ratio, "intact_mae": la.baseline_mae,
                           "hmm_ratios": la_hmm.error_ratio, "hmm_kl_ratios": la_hmm.kl_ratio,
                           "episodes": ctx.budget.ablation})
    return [sharp, layers]


def _rows_manifold(ctx: _Context) -> list[Claim]:
    from .geometry.manifold import collect_representation, manifold_of
    from .geometry.probes import probe_layers

    (model, which), t = ctx.geometry_model("bijection"), ctx.tunnel("bijection")
    n = ctx.budget.geometry
    man = manifold_of(collect_representation(model, t, episodes=n, seed=0))
    claim = paper_figure("value_manifold_pc1").value
    lo, hi = paper_figure("value_manifold_pc1_recap_low").value, paper_figure("value_manifold_pc1_recap_high").value
    parts = {"all points": man.pc1, "per-position means": man.pc1_position_means}
    verdict = count_verdict([v > claim for v in parts.values()])
    held = [k for k, v in parts.items() if v > claim]
    reason = (f"PC1 over all {man.n_points:,} (episode, position) points {_pct(man.pc1)}, over the "
              f"{t.L} per-position means {_pct(man.pc1_position_means)} (|r| with the entropy "
              f"{_g(man.position_means_r)}); > {claim:.0%} holds for {', '.join(held) if held else 'neither'}; "
              f"the paper does not say over which points; {which}")
    pc1 = _row("value-manifold-pc1", paper=f"> {claim:.0%} (Paper III's recap: {lo:.0%}-{hi:.0%})",
               ours=f"{_pct(man.pc1)} all points; {_pct(man.pc1_position_means)} per-position means",
               verdict=verdict, reason=reason, paper_value=claim, ours_value=man.pc1,
               details={"pc1_all_points": man.pc1, "pc1_position_means": man.pc1_position_means,
                        "pc1_single_episode": man.pc1_single_episode, "pearson_r": man.pearson_r,
                        "position_means_r": man.position_means_r, "episodes": n})

    # belief probes: ridge probes from every residual layer to the exact posterior (bijection and HMM)
    probes = {name: probe_layers(ctx.geometry_model(name)[0], ctx.tunnel(name), episodes=n, seed=0)
              for name in ("bijection", "hmm")}
    direction, size, text = [], [], []
    for name, p in probes.items():
        rising = p.r2[0] < PROBE_EMBEDDING_MAX and trend(p.r2, RISE_TOLERANCE) == "up"
        direction.append(rising)
        size.append(p.r2[-1] >= PROBE_FINAL_MIN)
        text.append(f"{name} {' -> '.join(f'{v:.2f}' for v in p.r2)}")
    verdict = size_verdict(all(direction), all(size))
    reason = (f"held-out R^2 of the posterior, embedding to final norm: {'; '.join(text)}; needs < "
              f"{PROBE_EMBEDDING_MAX:g} at the embedding, rising with depth (tolerance {RISE_TOLERANCE:g}) and >= "
              f"{PROBE_FINAL_MIN:g} at the end; lite depth {len(probes['bijection'].layers) - 2} and "
              f"{len(probes['hmm'].layers) - 2} blocks (paper: {_paper_layers('bijection')} and "
              f"{_paper_layers('hmm')})")
    probe_row = _row("belief-probes", paper="the posterior is linearly present in the residual stream (no number)",
                     ours="; ".join(text), verdict=verdict, reason=reason,
                     ours_value=min(p.r2[-1] for p in probes.values()),
                     details={name: {"layers": p.layers, "r2": p.r2, "r2_fit": p.r2_fit} for name, p in probes.items()}
                     | {"episodes": n})
    return [pc1, probe_row]


def _rows_trajectory(ctx: _Context) -> list[Claim]:
    from .geometry.dissociation import frame_precision, load_trajectory
    from .geometry.manifold import collect_representation, pca

    traj = load_trajectory("bijection-d64", check=not ctx.fast)
    t = make_tunnel(**traj.preset.tunnel)
    d = frame_precision(traj, episodes=ctx.budget.trajectory, seed=0, pattern_episodes=ctx.budget.pattern)
    final = d.steps[-1]

    # unfurling: PC1's share of the final representation at every snapshot, over all points (as
    # frame_precision measures it) and over the per-position means
    means = []
    for step in traj.steps:
        rep = collect_representation(traj.model_at(step), t, episodes=ctx.budget.trajectory, seed=0)
        P = int(rep.position.max()) + 1
        counts = torch.bincount(rep.position, minlength=P).clamp_min(1).unsqueeze(1).to(torch.float64)
        pos_means = torch.zeros(P, rep.x.shape[1], dtype=torch.float64).index_add_(0, rep.position, rep.x) / counts
        means.append(pca(pos_means, 1).explained[0])
    series = {"all points": d.pc1, "per-position means": means}
    ups = {k: v[-1] > v[0] for k, v in series.items()}
    verdict = count_verdict(list(ups.values()))

    def describe(v: list[float]) -> str:
        i = max(range(len(v)), key=lambda j: v[j])
        return f"{_pct(v[0])} at init -> peak {_pct(v[i])} (step {d.steps[i]:,}) -> {_pct(v[-1])} at step {final:,}"

    r_peak = max(range(len(d.steps)), key=lambda j: d.pc1_entropy_r[j])
    reason = ("; ".join(f"{k}: {describe(v)} ({'up' if ups[k] else 'down'} from init)" for k, v in series.items())
              + f"; |r(PC1, entropy)| peaks at {_g(d.pc1_entropy_r[r_peak])} (step {d.steps[r_peak]:,}) and ends at "
              f"{_g(d.pc1_entropy_r[-1])}: ours first rolls into an entropy staircase, then spreads into many "
              f"directions (the paper's end state is a dominant, entropy-ordered PC1, so 'unfurls' is read as the "
              f"PC1 share rising from init)")
    unfurl = _row("manifold-unfurling", paper="unfurls (no number)",
                  ours="; ".join(f"{k} {_pct(v[0])} -> {_pct(v[-1])}" for k, v in series.items()),
                  verdict=verdict, reason=reason, ours_value=d.pc1[-1] - d.pc1[0],
                  details={"steps": d.steps, "pc1_all_points": d.pc1, "pc1_position_means": means,
                           "pc1_entropy_r": d.pc1_entropy_r, "trajectory": traj.name,
                           "episodes": ctx.budget.trajectory})

    # frame-precision dissociation: the key frame settles, then the error keeps falling
    settled = d.settled_step(SETTLED, "key_frame")
    early = settled is not None and settled <= EARLY * final
    drops = {}
    if settled is not None:
        at = d.at(settled)
        drops = {"entropy MAE": at["entropy_mae"] / d.entropy_mae[-1], "KL": at["kl"] / d.kl[-1]}
    falling = [k for k, v in drops.items() if v >= KEEPS_FALLING]
    verdict = NOT_REPRODUCED if not early else count_verdict([v >= KEEPS_FALLING for v in drops.values()])
    p_2500, p_50k = paper_figure("dissociation_mae_2500").value, paper_figure("dissociation_mae_50k").value
    s_early = int(paper_figure("frame_overlap_early_step").value)
    s_plateau = int(paper_figure("frame_overlap_plateau_step").value)
    s_mae = int(paper_figure("dissociation_step_early").value)
    s_final = int(paper_figure("dissociation_step_final").value)
    ov = {s: d.at(s)["key_overlap"] / d.overlap_null for s in (s_early, s_plateau) if s in d.steps}
    if settled is None:
        reason = f"the key frame never stays within {SETTLED:g} of its final form"
    else:
        reason = (f"the key frame stays within {SETTLED:g} of its final form from step {settled:,} "
                  f"({settled / final:.0%} of training; needs <= {EARLY:.0%}); afterwards the entropy MAE falls "
                  f"{_g(drops['entropy MAE'])}x and the KL {_g(drops['KL'])}x (needs >= {KEEPS_FALLING:g}x: "
                  f"{', '.join(falling) if falling else 'neither'} does); key-subspace overlap "
                  + ", ".join(f"{_g(v)}x null at step {s:,}" for s, v in ov.items())
                  + f" (paper: {paper_figure('frame_overlap_early').value:g}x by {s_early:,}, "
                  f"{paper_figure('frame_overlap_plateau').value:g}x by {s_plateau:,}; definitions differ)")
    frame = _row("frame-precision",
                 paper=f"entropy MAE {p_2500:g} bits at step {s_mae:,} -> {p_50k:g} at {s_final:,} "
                       f"({_g(p_2500 / p_50k)}x) after the frame formed",
                 ours=(f"frame settled at step {settled:,}; then MAE {_g(drops['entropy MAE'])}x, KL "
                       f"{_g(drops['KL'])}x lower" if settled is not None else "the frame never settles"),
                 verdict=verdict, reason=reason, paper_value=p_2500 / p_50k,
                 ours_value=drops.get("entropy MAE"),
                 details={"steps": d.steps, "entropy_mae": d.entropy_mae, "kl": d.kl, "key_frame": d.key_frame,
                          "pattern": d.pattern, "key_overlap": d.key_overlap, "overlap_null": d.overlap_null,
                          "settled_step": settled, "drops": drops, "trajectory": traj.name,
                          "episodes": ctx.budget.trajectory})
    return [unfurl, frame]


def _rows_simplex(ctx: _Context) -> list[Claim]:
    from .geometry.simplex import belief_simplex

    n = ctx.budget.simplex

    def r2_of(tunnel: str) -> dict[str, float]:
        return {arch: belief_simplex(ctx.model(tunnel, arch), ctx.tunnel(tunnel), episodes=n, seed=0).entropy_r2
                for arch in ("mamba", "lstm", "transformer")}

    def filters(tunnel: str) -> str:
        ours = _metrics(ctx.evaluate(tunnel, "mamba"))
        done = realises(tunnel, ours, ctx.baselines(tunnel))
        return (f"the Mamba {'realises' if done else 'does not realise'} transport there (entropy MAE "
                f"{_g(ours['entropy_mae_bits'])} bits)")

    r2 = r2_of("hmm")
    pm, pl = paper_figure("mamba_simplex_entropy_r2").value, paper_figure("lstm_simplex_entropy_r2").value
    direction = r2["mamba"] > max(r2["lstm"], 0.0) + SIMPLEX_GAP  # carries some entropy, and more than the LSTM
    verdict = size_verdict(direction, within_factor(r2["mamba"], pm))
    reason = (f"held-out entropy R^2 from the final representation: Mamba {_g(r2['mamba'])}, LSTM {_g(r2['lstm'])} "
              f"(needs Mamba > max(LSTM, 0) + {SIMPLEX_GAP:g}); {filters('hmm')}; the lite transformer reaches "
              f"{_g(r2['transformer'])}")
    details: dict[str, Any] = {"entropy_r2": r2, "mamba_entropy_mae": ctx.evaluate("hmm", "mamba").entropy_mae_bits,
                               "episodes": n}
    if all(find_checkpoint(ctx.preset("hmm-slow", a)) is not None for a in ("mamba", "lstm", "transformer")):
        slow = r2_of("hmm-slow")
        slow_direction = slow["mamba"] > max(slow["lstm"], 0.0) + SIMPLEX_GAP
        reason += (f"; slow-mixing HMM (3 states, no published number): Mamba {_g(slow['mamba'])}, LSTM "
                   f"{_g(slow['lstm'])}, transformer {_g(slow['transformer'])}; {filters('hmm-slow')}")
        if slow_direction and not direction:
            verdict = PARTLY
        details["slow_hmm_entropy_r2"] = slow
    return [_row("mamba-simplex", paper=f"entropy R^2 {pm:g} (Mamba) vs {pl:g} (LSTM)",
                 ours=f"{_g(r2['mamba'])} (Mamba) vs {_g(r2['lstm'])} (LSTM)", verdict=verdict, reason=reason,
                 paper_value=pm, ours_value=r2["mamba"], details=details)]


# ------------------------------------------------------------------------------------------------
# Paper II: EM-like training


def _rows_em(ctx: _Context) -> list[Claim]:
    cfg = EMConfig(seeds=ctx.budget.em_seeds, steps=ctx.budget.em_steps)
    em = em_vs_sgd(cfg)
    s = em.summary()
    paper = paper_figure("em_vs_sgd_speedup").value
    verdict = speedup_verdict(s["mean"], s["low"], s["high"], paper)
    per_seed = em.speedup[s["arm"]]
    reason = (f"{cfg.seeds} seeds x {cfg.steps:,} full-batch steps: {_g(s['mean'])}x faster to SGD's final loss, 95 % "
              f"interval [{_g(s['low'])}, {_g(s['high'])}] (per seed {', '.join(_g(v) for v in per_seed)}); "
              f"losses on held-out sequences (the authors scored the training sequence)")
    if ctx.fast:
        reason += "; fast mode: a short run, the full run (5 seeds x 1,000 steps) may decide differently"
    return [_row("em-speedup", paper=f"{paper:g}x ({paper_figure('em_vs_sgd_em_steps').value:g} vs "
                                     f"{paper_figure('em_vs_sgd_sgd_steps').value:g} steps)",
                 ours=f"{_g(s['mean'])}x [{_g(s['low'])}, {_g(s['high'])}]", verdict=verdict, reason=reason,
                 paper_value=paper, ours_value=s["mean"],
                 details={"speedup_per_seed": per_seed, "mean": s["mean"], "low": s["low"], "high": s["high"],
                          "seeds": cfg.seeds, "steps": cfg.steps, "arm": s["arm"]})]


# ------------------------------------------------------------------------------------------------
# Paper III: pretrained language models


def llm_measurements(model: torch.nn.Module, tokenizer: Any, n_prompts: int = 24, sula_per_k: int = 16
                     ) -> dict[str, Any]:
    """Paper III's four signatures on one causal LM, as chapter 12 measures them, each beside the same
    architecture at random init: key orthogonality per layer (with the chance value for d_head),
    the final query's attention entropy per layer, PC1+PC2 of the last-layer values (mixed and single
    domain prompts), and the SULA entropy MAE against the Bayes posterior (with a 50/50 predictor's)."""
    from .llm import diagnostics as D
    from .llm import sula as S
    from .llm.offline import random_init_like
    from .llm.probe import encode, probe
    from .llm.prompts import DOMAINS, domain_prompts

    mixed = domain_prompts(list(DOMAINS), n_prompts, seed=0)
    single = domain_prompts(["cooking"], n_prompts, seed=1)
    random_model = random_init_like(model, seed=1)
    probes = [probe(model, encode(tokenizer, s)) for s in mixed]
    probes_random = [probe(random_model, encode(tokenizer, s)) for s in mixed]
    probes_single = [probe(model, encode(tokenizer, s)) for s in single]
    d_head = probes[0].keys.shape[-1]
    orth, orth_random = D.key_orthogonality(probes), D.key_orthogonality(probes_random)
    focus, focus_random = D.attention_focusing(probes), D.attention_focusing(probes_random)
    pc12 = {name: D.pca_summary(torch.stack([D.last_layer_values(p) for p in ps])).pc12
            for name, ps in (("mixed", probes), ("single", probes_single), ("random_init", probes_random))}
    labels, label_ids = S.pick_labels(tokenizer)
    prompts = S.generate(labels, k_values=S.K_VALUES, per_k=sula_per_k, accuracy=0.9, seed=0)
    run = S.run_model(model, tokenizer, prompts, label_ids)
    met = S.evaluate(run)
    return {"n_layers": len(orth), "d_head": d_head, "key_orthogonality": orth.tolist(),
            "key_orthogonality_random": orth_random.tolist(), "chance": D.random_cosine_baseline(d_head),
            "attention_entropy": focus.per_layer.tolist(), "attention_entropy_random": focus_random.per_layer.tolist(),
            "drop_bits": focus.drop_bits, "drop_bits_random": focus_random.drop_bits, "uniform_bits": focus.max_bits,
            "pc12": pc12, "sula_mae": met.mae_posterior, "sula_rho_pc1": met.rho_pc1,
            "sula_flat_mae": (1 - run.h_bayes).mean().item(), "prompts": n_prompts, "sula_prompts": len(prompts)}


def _llm_pc12_figures() -> list[float]:
    """Paper III's PC1+PC2 shares (%) of every model and prompt set."""
    return [paper_figure(f"llm_value_pc12_{f}_{s}").value
            for f in ("pythia", "phi2", "llama") for s in ("mixed", "single")]


def llm_verdicts(m: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """Claim id -> (verdict, ours as text, reason) for the Paper III rows, from :func:`llm_measurements`."""
    k_lo, k_hi = paper_figure("llm_key_orthogonality_low").value, paper_figure("llm_key_orthogonality_high").value
    mean_k = sum(m["key_orthogonality"]) / m["n_layers"]
    mean_r = sum(m["key_orthogonality_random"]) / m["n_layers"]
    keys = size_verdict(mean_k < mean_r, within_factor(mean_k, k_lo) or within_factor(mean_k, k_hi)
                        or k_lo <= mean_k <= k_hi)
    pcs = _llm_pc12_figures()
    ours_pc = 100 * m["pc12"]["mixed"]
    manifold = size_verdict(m["pc12"]["mixed"] > m["pc12"]["random_init"], min(pcs) <= ours_pc <= max(pcs))
    s_lo, s_hi = paper_figure("llm_sula_mae_low").value, paper_figure("llm_sula_mae_high").value
    sula = size_verdict(m["sula_mae"] < m["sula_flat_mae"], within_factor(m["sula_mae"], s_lo)
                        or within_factor(m["sula_mae"], s_hi) or s_lo <= m["sula_mae"] <= s_hi)
    focus = size_verdict(m["drop_bits"] > 0, m["drop_bits"] > m["drop_bits_random"])
    return {
        "llm-keys-orthogonal": (keys, f"{_g(mean_k)} mean |cos| over {m['n_layers']} layers (random init "
                                f"{_g(mean_r)}, chance {_g(m['chance'])})",
                                f"needs below random init and within {FACTOR:g}x of {k_lo:g}-{k_hi:g}"),
        "llm-attention-focusing": (focus, f"drop {_g(m['drop_bits'])} bits first -> last layer (random init "
                                   f"{_g(m['drop_bits_random'])})", "needs a drop, larger than at random init"),
        "llm-value-manifold": (manifold, f"PC1+PC2 {ours_pc:.1f} % mixed, {100 * m['pc12']['single']:.1f} % single "
                               f"(random init {100 * m['pc12']['random_init']:.1f} %)",
                               f"needs above random init and within the published {min(pcs):g}-{max(pcs):g} %"),
        "llm-sula": (sula, f"{_g(m['sula_mae'])} bits (50/50 predictor {_g(m['sula_flat_mae'])})",
                     f"needs below the 50/50 predictor and within {FACTOR:g}x of {s_lo:g}-{s_hi:g}"),
    }


def _rows_llm(ctx: _Context, network: bool, name: str | None) -> list[Claim]:
    from .llm.offline import DEFAULT_MODEL, load_model

    name = name or DEFAULT_MODEL
    k_lo, k_hi = paper_figure("llm_key_orthogonality_low").value, paper_figure("llm_key_orthogonality_high").value
    s_lo, s_hi = paper_figure("llm_sula_mae_low").value, paper_figure("llm_sula_mae_high").value
    pythia = paper_figure("llm_value_pc12_pythia_mixed")
    pcs = _llm_pc12_figures()
    paper = {"llm-keys-orthogonal": (f"{k_lo:g}-{k_hi:g} mean |cos| (Pythia-410M)", k_lo),
             "llm-attention-focusing": ("falls with depth (no number stored)", None),
             "llm-value-manifold": (f"PC1+PC2 {pythia.value:g} % (Pythia-410M, mixed prompts; {min(pcs):g}-{max(pcs):g}"
                                    " over models)", pythia.value),
             "llm-sula": (f"{s_lo:g}-{s_hi:g} bits", s_lo)}
    try:
        lm = load_model(name, offline=None if network else True)
    except ImportError as err:  # transformers is an optional dependency
        lm, why = None, f"transformers is not installed ({err})"
    else:
        where = "the hub cannot be reached and it is not" if network else "the network is off and it is not"
        why = (f"{where} in the local Hugging Face cache, so only a randomly initialised stand-in of its family "
               f"can be built") if not lm.pretrained else ""
    if lm is None or not lm.pretrained:
        reason = (f"needs the pretrained {name}: {why}; a stand-in never counts for a pretrained-model claim "
                  "(run with network=True where the hub is reachable, e.g. on Colab)")
        return [_row(cid, paper=p, ours="n/a", verdict=NOT_TESTABLE, reason=reason, paper_value=v,
                     details={"model": name, "pretrained": False}) for cid, (p, v) in paper.items()]
    m = llm_measurements(lm.model, lm.tokenizer, ctx.budget.llm_prompts, ctx.budget.sula_per_k)
    verdicts = llm_verdicts(m)
    ours_values = {"llm-keys-orthogonal": sum(m["key_orthogonality"]) / m["n_layers"],
                   "llm-attention-focusing": m["drop_bits"], "llm-value-manifold": 100 * m["pc12"]["mixed"],
                   "llm-sula": m["sula_mae"]}
    rows = []
    for cid, (p, v) in paper.items():
        verdict, ours, rule = verdicts[cid]
        rows.append(_row(cid, paper=p, ours=ours, verdict=verdict,
                         reason=f"{name} ({lm.source}, {m['prompts']} prompts); {rule}", paper_value=v,
                         ours_value=ours_values[cid], details={"model": name, "pretrained": True, **m}))
    return rows


# ------------------------------------------------------------------------------------------------
# The scorecard


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
    ctx = _Context(device, FAST if fast else FULL, fast, log or (lambda line: None))
    groups: list[tuple[tuple[str, ...], Callable[[], list[Claim]]]] = [
        (("bijection-headline", "bijection-mlp", "bijection-lstm", "bijection-mamba"), lambda: _rows_bijection(ctx)),
        (("hmm-transformer", "hmm-mlp", "hmm-lstm", "hmm-mamba"), lambda: _rows_hmm(ctx)),
        (("hmm-length",), lambda: _rows_length(ctx)),
        (("recall-transformer", "recall-mamba", "recall-lstm"), lambda: _rows_recall(ctx)),
        (("keys-orthogonal", "frame-head"), lambda: _rows_frame(ctx)),
        (("qk-sharpening", "layer-ablation"), lambda: _rows_elimination(ctx)),
        (("value-manifold-pc1", "belief-probes"), lambda: _rows_manifold(ctx)),
        (("manifold-unfurling", "frame-precision"), lambda: _rows_trajectory(ctx)),
        (("mamba-simplex",), lambda: _rows_simplex(ctx)),
        (("em-speedup",), lambda: _rows_em(ctx)),
        (("llm-keys-orthogonal", "llm-attention-focusing", "llm-value-manifold", "llm-sula"),
         lambda: _rows_llm(ctx, network, llm_model)),
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


__all__ = ["ACCURACY_POINTS", "Budget", "CLAIM_IDS", "Claim", "ClaimInfo", "FACTOR", "FAST", "FULL",
           "CLAIMS", "SPEEDUP_FACTOR", "VERDICTS", "cell_verdict", "count_verdict", "counts", "format_scorecard",
           "llm_measurements", "llm_verdicts", "ratio", "report", "scorecard", "size_verdict", "speedup_verdict",
           "to_dict", "to_json", "trend", "within_factor", "within_points"]
