"""The claims, one :class:`ClaimInfo` each (what a row claims, where the paper makes it, which chapter
shows it, which group measures it and its plain-words texts); the row type (:class:`Claim`) and the
budgets of the two modes (:data:`FULL`, :data:`FAST`).

Adding a claim: its entry here, its row in a ``rows_*`` function (of the group it names), and its
published number in :mod:`bwt_lite.paper`; a new group also adds a line to
:data:`bwt_lite.claims.scoring.GROUPS`."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..dynamics.two_timescale import EMConfig
from ..paper import paper_figure, paper_value
from ..recipes import TUNNEL_ARGS
from .rules import LENGTHS, VERDICTS, jsonable


# Where each claim is shown: the chapter notebook (chapters/<name>.ipynb).
CH_BIJECTION, CH_HMM, CH_RECALL = "02_transformer_learns_the_posterior", "03_hmm_filtering", "04_associative_recall"
CH_PRIMITIVES, CH_FRAME, CH_ELIMINATION = "06_three_primitives", "07_hypothesis_frame", "08_progressive_elimination"
CH_MANIFOLD, CH_MAMBA, CH_GRADIENTS, CH_LLM = ("09_value_manifold", "10_mamba_geometry", "11_gradient_dynamics",
                                               "12_bayesian_geometry_in_llms")
CH_BOUNDARY = "13_construction_boundary"


@dataclass(frozen=True)
class ClaimInfo:
    """Everything fixed about a claim (nothing measured): what it claims, where the paper makes it, which
    chapter shows it, which group of the scorecard measures it, and, for a claim that is not an
    architecture cell, how it is tested and what "partly" and "not reproduced" mean, in plain words for a
    reader who has not read the rules (:func:`bwt_lite.claims.reasons.plain_reason`)."""

    claim: str
    source: str
    chapter: str
    group: str  # the group of rows that measures it: a name in bwt_lite.claims.scoring.GROUPS
    test: str = ""  # how it is tested (empty for an architecture cell, explained from its row's details)
    partly: str = ""  # which part held and which did not, when the verdict is "partly"
    failed: str = ""  # which part failed, when the verdict is "not reproduced"


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


# The claims, in scorecard order. The ids are stable: the book's scorecard anchors and the JSON use them.
CLAIMS: dict[str, ClaimInfo] = {
    "bijection-headline": ClaimInfo(
        "a small transformer matches the Bayes posterior on the bijection to "
        f"{paper_figure('bijection_text_high').value:g} - {paper_figure('bijection_text_low').value:g} bits "
        "of entropy MAE",
        _src("bijection_text_low", "bijection/transformer"), CH_BIJECTION, "bijection"),
    "bijection-mlp": ClaimInfo("a capacity-matched MLP fails on the bijection by orders of magnitude",
                               _src("bijection/mlp"), CH_BIJECTION, "bijection"),
    "bijection-lstm": ClaimInfo("an LSTM accumulates evidence on the bijection", _src("bijection/lstm"), CH_PRIMITIVES,
                                "bijection"),
    "bijection-mamba": ClaimInfo("Mamba accumulates evidence on the bijection", _src("bijection/mamba"), CH_PRIMITIVES,
                                 "bijection"),
    "hmm-transformer": ClaimInfo(
        "a transformer tracks the HMM filtering posterior (belief transport)",
        _src("hmm/transformer", "hmm_transformer_table"), CH_HMM, "hmm"),
    "hmm-mlp": ClaimInfo("an MLP fails on the HMM", _src("hmm/mlp"), CH_HMM, "hmm"),
    "hmm-lstm": ClaimInfo("an LSTM fails to transport beliefs on the HMM", _src("hmm/lstm"), CH_PRIMITIVES, "hmm"),
    "hmm-mamba": ClaimInfo("Mamba transports beliefs on the HMM", _src("hmm/mamba"), CH_PRIMITIVES, "hmm"),
    "hmm-length": ClaimInfo(
        f"the HMM transformer trained at K = {TUNNEL_ARGS['hmm']['K']} generalises to K = "
        f"{' and '.join(str(k) for k in LENGTHS)}", _src("hmm_length_k30"), CH_HMM, "length",
        test="We run the HMM model on episodes longer than those it was trained on (30 and 50 steps instead "
             "of 20) and ask whether it still beats every short-memory filter past step 20, and whether "
             "its error stays within 3x of the paper's.",
        partly="Past step 20 it still beats the short-memory filters, but its error is not within 3x of the "
               "paper's at every length: partly.",
        failed="Past step 20 it no longer beats the short-memory filters."),
    "recall-transformer": ClaimInfo("a transformer binds keys to values (associative recall)",
                                    _src("recall/transformer"), CH_RECALL, "recall"),
    "recall-mamba": ClaimInfo("Mamba recalls almost as well", _src("recall/mamba"), CH_PRIMITIVES, "recall"),
    "recall-lstm": ClaimInfo("an LSTM cannot recall", _src("recall/lstm"), CH_PRIMITIVES, "recall"),
    "keys-orthogonal": ClaimInfo(
        "training makes the layer-0 keys of the hypothesis tokens more orthogonal than at random init",
        _src("key_cosine_layer0"), CH_FRAME, "frame",
        test="We compare the keys of the trained model with those of the same model before training: "
             "they must be more orthogonal after training, and by at least half the paper's drop.",
        partly="The keys do become more orthogonal, but by less than half the paper's drop: partly.",
        failed="After training the keys are no more orthogonal than before it."),
    "frame-head": ClaimInfo(
        "zero-ablating any layer-0 head raises the error (the hypothesis frame needs every one)",
        _src("head_ablation_layer0_low"), CH_FRAME, "frame",
        test="We switch off each first-layer attention head in turn: every one must raise the error by "
             "more than 10 %, and the weakest by at least a third of the paper's amount.",
        partly="Every head matters, but the weakest far less than in the paper: partly.",
        failed="Some heads can be switched off without raising the error."),
    "qk-sharpening": ClaimInfo(
        "query-key alignment sharpens progressively with depth", _src("qk_alignment"), CH_ELIMINATION, "elimination",
        test="We measure, layer by layer, how spread out each query's attention is and how well it "
             "lines up with the values already ruled out: attention should narrow and alignment grow "
             "with depth.",
        partly="One of the two trends holds and the other does not: partly.",
        failed="Neither trend holds."),
    "layer-ablation": ClaimInfo(
        f"removing any single layer raises the error more than {paper_figure('layer_ablation_ratio').value:g}x",
        _src("layer_ablation_ratio"), CH_ELIMINATION, "elimination",
        test="We skip each layer in turn: the paper's own criterion is that every removal raises the "
             "error more than tenfold.",
        partly="Every layer matters, but not every one tenfold: partly.",
        failed="Skipping some layer does not raise the error at all."),
    "value-manifold-pc1": ClaimInfo(
        f"the final representation lies on a manifold whose PC1 holds > {paper_figure('value_manifold_pc1').value:.0%}"
        " of the variance",
        _src("value_manifold_pc1"), CH_MANIFOLD, "manifold",
        test="We take the main direction (PC1) of the last layer's representation and ask whether it "
             "holds more than 80 % of the variance, the paper's criterion, two ways: over all points, and "
             "within position (each point minus the average of its position, which leaves only how the "
             "sequences differ at the same position). PC1 of the averages per position is shown too, as "
             "context only: the averages follow the position itself, so they never earn a verdict.",
        partly="PC1 holds more than 80 % over all points or within position, but not both: partly.",
        failed="PC1 holds less than 80 % both over all points and within position; a high share of the "
               "averages per position alone does not count."),
    "manifold-unfurling": ClaimInfo(
        "during training the value manifold unfurls", _src("unfurling"), CH_MANIFOLD, "trajectory",
        test="We follow PC1's share of the variance through training, over all points and within "
             "position: it should be larger at the end of training than at the start, both ways. The "
             "averages per position are shown as context only.",
        partly="The share grows over all points or within position, but not both: partly.",
        failed="The share grows neither over all points nor within position; growth of the averages per "
               "position alone does not count."),
    "frame-precision": ClaimInfo(
        "the frame forms early while the error keeps falling (frame-precision dissociation)",
        _src("frame_overlap_early", "dissociation_mae_2500"), CH_MANIFOLD, "trajectory",
        test="We follow a training run: the pattern of keys should settle in the first half of "
             "training while the error keeps falling at least threefold afterwards.",
        partly="The frame settles early, but the error does not keep falling threefold on every "
               "measure: partly.",
        failed="The frame does not settle early, or the error stops falling once it has."),
    "belief-probes": ClaimInfo(
        "the residual stream is the belief substrate: the posterior becomes linearly readable layer by layer",
        _src("belief_substrate"), CH_MANIFOLD, "manifold",
        test="We fit a linear read-out of the exact posterior at every layer: it should read almost "
             "nothing at the input, rise with depth, and read most of it at the end, better than a "
             "read-out of the last one or two symbols.",
        partly="The read-out rises with depth, but does not end high enough, or does no better than a "
               "read-out of the last symbols: partly.",
        failed="The read-out does not start near zero and rise with depth."),
    "mamba-simplex": ClaimInfo(
        "Mamba's final representation carries the HMM belief's entropy; the LSTM's does not",
        _src("mamba_simplex_entropy_r2"), CH_MAMBA, "simplex",
        test="We ask how well the uncertainty of the exact belief can be read from Mamba's final "
             "representation. It must be read clearly better than from the exact belief given only the "
             "last one or two symbols, and clearly better than from an LSTM's, but the LSTM comparison "
             "counts only if that LSTM learned the task (its error well below that of always saying every "
             "hidden state is equally likely). The authors' score of "
             f"{paper_figure('mamba_simplex_entropy_r2').value:.2f} is not a target: their script read the "
             "representation at the wrong token positions.",
        partly="Mamba carries more than the last symbols do, but the LSTM never learned the task or carries "
               "as much, or Mamba does so only on a slower-mixing HMM: partly.",
        failed="Mamba's representation carries no more of the uncertainty than the exact belief from the "
               "last one or two symbols."),
    "em-speedup": ClaimInfo(
        f"EM-like training ({EMConfig().mult:g}x the learning rate on the values) reaches SGD's final loss "
        f"{paper_figure('em_vs_sgd_speedup').value:g}x faster",
        _src("em_vs_sgd_speedup"), CH_GRADIENTS, "em",
        test="We train small attention heads from five seeds with plain gradient descent and with a ten "
             "times larger learning rate on the values, and time how soon each reaches plain training's "
             "final loss. The speed-up must be near the paper's (the paper's inside our 95 % interval, or "
             "within 1.5x), and, since the claim is about the values, it must beat two controls that put the "
             "same larger learning rate on other weights (the readout, the routing) by more than their "
             "intervals.",
        partly="The larger learning rate on the values is faster than plain training, but not every condition "
               "holds (the measurement says which): where the controls are about as fast, the speed-up is not "
               "shown to come from the values; where it is far from the paper's factor, its size does not "
               "match. Either counts as partly.",
        failed="The larger learning rate on the values is not faster than plain training."),
    "llm-keys-orthogonal": ClaimInfo(
        "pretrained LMs have near-orthogonal keys in every layer", _src("llm_key_orthogonality_low"), CH_LLM, "llm",
        test="On a pretrained language model, the keys of every layer should be nearly "
             "orthogonal, more so than in the same network at random initialisation."),
    "llm-attention-focusing": ClaimInfo(
        "attention entropy falls across depth in pretrained LMs", _src("llm_focusing"), CH_LLM, "llm",
        test="On a pretrained language model, attention should narrow with depth."),
    "llm-value-manifold": ClaimInfo(
        "last-layer values of pretrained LMs lie on a low-dimensional manifold (PC1+PC2)",
        _src("llm_value_pc12_pythia_mixed"), CH_LLM, "llm",
        test="On a pretrained language model, the last layer's values should lie close to a plane."),
    "llm-sula": ClaimInfo(
        "on SULA prompts the model's entropy tracks the Bayes posterior's to "
        f"{paper_figure('llm_sula_mae_low').value:g}-{paper_figure('llm_sula_mae_high').value:g} bits",
        _src("llm_sula_mae_low"), CH_LLM, "llm",
        test="On a pretrained language model, the model's uncertainty should follow the exact posterior's on "
             "prompts built for the purpose (SULA)."),
    "recurrence-integer": ClaimInfo(
        "on modular recurrences with integer tokens a transformer identifies the program near Bayes "
        f"({paper_figure('recurrence_integer').value:g} bits)", _src("recurrence_integer"), CH_BOUNDARY, "recurrence",
        test="The model must predict the next value clearly better than the best shortcuts (the "
             "prior, and the exact answer from the last two values alone), and within 3x of the "
             "authors' error.",
        partly="It beats the shortcuts, but its error is not within 3x of the authors': partly.",
        failed="It does not clearly beat the shortcuts."),
    "recurrence-opaque": ClaimInfo(
        "with a fresh relabelling of the residues in every episode (opaque tokens) it fails "
        f"({paper_figure('recurrence_opaque').value:g} bits)", _src("recurrence_opaque"), CH_BOUNDARY, "recurrence",
        test="With the numbers relabelled afresh in every episode, the model should fail to do "
             "better than the shortcuts, as the authors' did.",
        partly="It fails as the authors' did, but its error is not within 3x of theirs: partly.",
        failed="Unlike the authors' model, it clearly beats the shortcuts."),
    "recurrence-horizon-5": ClaimInfo(
        "trained with the loss on the predictions of x_1 .. x_5 only, it is near Bayes there and fails beyond "
        f"({paper_figure('recurrence_k5_inside').value:g} bits inside, "
        f"{paper_figure('recurrence_k5_beyond').value:g} beyond)",
        _src("recurrence_k5_inside"), CH_BOUNDARY, "recurrence",
        test="Trained to predict only the first 5 values, the model should be near the exact "
             "answer there (under 0.1 bits) and close to knowing nothing beyond them.",
        partly="Only one of the two halves holds, or the error beyond the horizon is not within "
               "3x of the authors': partly.",
        failed="Neither half holds."),
    "recurrence-horizon-3": ClaimInfo(
        "trained with the loss on the predictions of x_1 .. x_3 only, it is near Bayes there and fails beyond "
        f"({paper_figure('recurrence_k3_inside').value:g} bits inside, "
        f"{paper_figure('recurrence_k3_beyond').value:g} beyond)",
        _src("recurrence_k3_inside"), CH_BOUNDARY, "recurrence",
        test="Trained to predict only the first 3 values, the model should be near the exact "
             "answer there (under 0.1 bits) and close to knowing nothing beyond them.",
        partly="Only one of the two halves holds, or the error beyond the horizon is not within "
               "3x of the authors': partly.",
        failed="Neither half holds."),
}
CLAIM_IDS: tuple[str, ...] = tuple(CLAIMS)


def group_ids(group: str) -> tuple[str, ...]:
    """The ids of the claims a group of rows measures, in :data:`CLAIM_IDS` order."""
    return tuple(cid for cid, info in CLAIMS.items() if info.group == group)


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
