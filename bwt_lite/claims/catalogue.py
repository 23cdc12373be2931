"""What each row of the scorecard claims, where the paper makes it and which chapter shows it; the row
type (:class:`Claim`) and the budgets of the two modes (:data:`FULL`, :data:`FAST`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..dynamics.two_timescale import EMConfig
from ..paper import paper_figure, paper_value
from ..presets import TUNNEL_ARGS
from .rules import LENGTHS, VERDICTS, jsonable


# Where each claim is shown: the chapter notebook (chapters/<name>.ipynb).
CH_BIJECTION, CH_HMM, CH_RECALL = "02_transformer_learns_the_posterior", "03_hmm_filtering", "04_associative_recall"
CH_PRIMITIVES, CH_FRAME, CH_ELIMINATION = "06_three_primitives", "07_hypothesis_frame", "08_progressive_elimination"
CH_MANIFOLD, CH_MAMBA, CH_GRADIENTS, CH_LLM = ("09_value_manifold", "10_mamba_geometry", "11_gradient_dynamics",
                                               "12_bayesian_geometry_in_llms")
CH_BOUNDARY = "13_construction_boundary"


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
    "recurrence-integer": ClaimInfo(
        "on modular recurrences with integer tokens a transformer identifies the program near Bayes "
        f"({paper_figure('recurrence_integer').value:g} bits)", _src("recurrence_integer"), CH_BOUNDARY),
    "recurrence-opaque": ClaimInfo(
        "with a fresh relabelling of the residues in every episode (opaque tokens) it fails "
        f"({paper_figure('recurrence_opaque').value:g} bits)", _src("recurrence_opaque"), CH_BOUNDARY),
    "recurrence-horizon-5": ClaimInfo(
        "trained with the loss on the predictions of x_1 .. x_5 only, it is near Bayes there and fails beyond "
        f"({paper_figure('recurrence_k5_inside').value:g} bits inside, "
        f"{paper_figure('recurrence_k5_beyond').value:g} beyond)",
        _src("recurrence_k5_inside"), CH_BOUNDARY),
    "recurrence-horizon-3": ClaimInfo(
        "trained with the loss on the predictions of x_1 .. x_3 only, it is near Bayes there and fails beyond "
        f"({paper_figure('recurrence_k3_inside').value:g} bits inside, "
        f"{paper_figure('recurrence_k3_beyond').value:g} beyond)",
        _src("recurrence_k3_inside"), CH_BOUNDARY),
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
        return jsonable(asdict(self))


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
