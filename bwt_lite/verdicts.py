"""The rule that decides whether a model realises its tunnel's primitive, in one place.

A cell of the primitives table *realises* the primitive (:func:`realises`) when its held-out score passes
the cell's threshold and beats the strongest exact baseline that lacks the primitive by the cell's
margin, in entropy MAE and KL (:func:`compare_with_baselines`); the facts of each cell (primitive,
threshold, references, margin, window ladder) are read off the tunnels' cards
(:class:`bwt_lite.tunnels.Card`). Over several training seeds a cell realises it when 4 of 5 seeds do
(:func:`seed_verdict`). :mod:`bwt_lite.reproduce` (the table), :mod:`bwt_lite.cell_seeds` (the seed
table) and the scorecard all judge with these functions.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from .arguments import check_choice
from .tunnels import CARDS, CELL_TUNNEL

def equivalent_window(value: float, ws: Sequence[int], values: Sequence[float]) -> float | str:
    """The look-back length whose exact window filter would score ``value`` (entropy MAE, same episodes):
    interpolated between the two windows that bracket it, linearly in w and in the log of the error
    (the ladder falls about geometrically); 0.0 at or above window-0's error; ``"> W"`` below the
    longest window listed (W), where the ladder cannot say how much further the model reads."""
    if len(ws) != len(values) or not ws:
        raise ValueError("ws and values must be non-empty and of the same length")
    if value >= values[0]:
        return float(ws[0])
    for (w0, v0), (w1, v1) in zip(zip(ws, values), zip(ws[1:], values[1:])):
        if v1 <= value < v0:
            if v1 <= 0:
                return float(w1)
            return round(w0 + (w1 - w0) * (math.log(v0) - math.log(value)) / (math.log(v0) - math.log(v1)), 1)
    return f"> {ws[-1]}"


def look_back_text(equivalent: float | str) -> str:
    """``"a look-back of about 6.6 symbols"``, ``"more than 12 symbols (past the ladder)"``, ``"no look-back"``."""
    if isinstance(equivalent, str):
        return f"more than {equivalent.removeprefix('> ')} symbols (past the longest window listed)"
    if equivalent <= 0:
        return "no better than a filter that reads no symbol"
    return f"a look-back of about {equivalent:g} symbol{'' if equivalent == 1 else 's'}"


# The table's cells, in order, and what each tests: read off the tunnels' cards (bwt_lite.tunnels.Card,
# beside each tunnel's class: primitive, threshold, reference baselines, margin, window ladder). "hmm-slow"
# is the HMM's slow-mixing variant, where a window needs 12 symbols to come within 0.004 bits of the
# exact filter (on the default HMM 4 are enough).
PRIMITIVE_TUNNELS = tuple(cell for cell, c in CARDS.items() if c.in_table)  # the rows of the primitives table
VARIANT_CELLS: dict[str, tuple[str, str]] = {cell: (CELL_TUNNEL[cell], c.variant) for cell, c in CARDS.items()
                                             if c.variant is not None}  # table name -> (tunnel, variant)
PRIMITIVES: dict[str, str] = {cell: c.primitive for cell, c in CARDS.items()}
# (metric, "max" or "min", value): a cell passes its tunnel's threshold when metric <= / >= value; lax
# enough for lite models trained for minutes, far from what a context-blind model can reach (each
# card's ``why`` gives the reason). To realise the primitive a cell must also beat the baselines.
THRESHOLDS: dict[str, tuple[str, str, float]] = {cell: c.threshold for cell, c in CARDS.items()}
# A cell must score at most MARGIN x the strongest reference baseline, in each compared metric. Half:
# the model removes at least half of the error the baseline leaves. The factor is far above the
# evaluation noise of 2,048 episodes (the HMM transformer: 0.0482 +- 0.0002 bits over 16 such sets;
# the window filters move by about 3 % between sets) and it is scale-free, so one rule serves
# tunnels whose baselines sit at 0.02 and at 1.6 bits. Transport cells use margin 1 against their
# longest window instead (see the HMM's cards): that window is already near-exact.
MARGIN = 0.5
MARGINS: dict[str, float] = {cell: c.margin for cell, c in CARDS.items()}
# The reference baselines of each cell: for each compared metric, the candidates lacking the primitive;
# the bar is the strongest candidate (lowest value) on that metric.
REFERENCES: dict[str, dict[str, tuple[str, ...]]] = {cell: dict(c.references) for cell, c in CARDS.items()}
# The window ladder in the table: 0..4 on the default HMM (it mixes within a few steps), 0..12 on hmm-slow.
MAX_WINDOW: dict[str, int] = {cell: c.max_window for cell, c in CARDS.items() if c.max_window is not None}
HMM_MAX_WINDOW = MAX_WINDOW["hmm"]
METRIC_NAMES = {"entropy_mae_bits": "entropy MAE", "kl_bits": "KL"}

METRIC_NAMES = {"entropy_mae_bits": "entropy MAE", "kl_bits": "KL"}

# With several training seeds, a cell realises its primitive when at least this share of its seeds does
# (4 of 5); its printed numbers are those of its median seed.
SEED_SHARE = 0.8


def median_seed(tunnel: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row of the median seed by the tunnel's threshold metric (the lower middle one of an even count);
    seeds that tie on it (e.g. several at 100 % accuracy) are ranked by entropy MAE."""
    metric, kind, _ = THRESHOLDS[tunnel]
    ranked = sorted(rows, key=lambda r: (r[metric] if kind == "max" else -r[metric], r["entropy_mae_bits"]))
    return ranked[(len(ranked) - 1) // 2]


def seed_verdict(realised: Iterable[bool | None], share: float = SEED_SHARE) -> bool | None:
    """Realised across seeds: at least ``share`` of them realise (None if none could be judged)."""
    flags = [f for f in realised if f is not None]
    return None if not flags else sum(flags) >= math.ceil(share * len(flags) - 1e-9)


def passes_threshold(tunnel: str, metrics: Mapping[str, Any],
                     thresholds: Mapping[str, tuple[str, str, float]] = THRESHOLDS) -> bool | None:
    """Does a cell with these ``metrics`` pass the tunnel's threshold? None if the metric is missing."""
    check_choice("tunnel", tunnel, sorted(thresholds))
    metric, kind, value = thresholds[tunnel]
    got = metrics.get(metric)
    if got is None:
        return None
    return got <= value if kind == "max" else got >= value


def compare_with_baselines(tunnel: str, metrics: Mapping[str, Any], baselines: Mapping[str, Mapping[str, Any]],
                           margin: float | None = None) -> dict[str, Any]:
    """Does a cell beat the tunnel's reference baselines (:data:`REFERENCES`) by ``margin`` (None: the
    cell's own, :data:`MARGINS`)?

    ``baselines`` maps a baseline's name to its metrics (a row of :func:`reproduce`, or
    ``EvalResult.to_dict()``). For each metric in :data:`REFERENCES`, the bar is the candidate with
    the lowest value, and the cell must score ``<= margin x bar``. A metric the cell lacks (the
    paper publishes no KL) is skipped. Returns ``beats`` (True, False, or None if no metric could be
    compared), ``compared_with`` (the bars' baseline names), ``bars`` (metric -> {baseline, value})
    and ``why`` (the failed comparisons, or "").
    """
    check_choice("tunnel", tunnel, sorted(REFERENCES))
    margin = MARGINS[tunnel] if margin is None else margin
    bars, failed = {}, []
    for metric, candidates in REFERENCES[tunnel].items():
        present = [(baselines[c][metric], c) for c in candidates if baselines.get(c, {}).get(metric) is not None]
        if not present:
            raise ValueError(f"{tunnel}: no reference baseline for {metric} among {sorted(baselines)}; "
                             f"need one of {', '.join(candidates)}")
        value, name = min(present)
        bars[metric] = {"baseline": name, "value": value}
        got = metrics.get(metric)
        if got is not None and not got <= margin * value:
            bar = f"{value:.3g} ({name})" if margin == 1 else f"{margin:g} x {value:.3g} ({name})"
            failed.append(f"{METRIC_NAMES.get(metric, metric)} {got:.3g} > {bar}")
    judged = [m for m in bars if metrics.get(m) is not None]
    return {"beats": (not failed) if judged else None,
            "compared_with": list(dict.fromkeys(bars[m]["baseline"] for m in bars)),
            "bars": bars, "why": "; ".join(failed)}


def realises(tunnel: str, metrics: Mapping[str, Any], baselines: Mapping[str, Mapping[str, Any]] | None = None,
             thresholds: Mapping[str, tuple[str, str, float]] = THRESHOLDS, margin: float | None = None) -> bool | None:
    """Does a cell with these ``metrics`` realise the tunnel's primitive?

    The rule: it passes the tunnel's threshold (:data:`THRESHOLDS`) and, given its ``baselines``
    (name -> metrics), scores at most ``margin`` (the cell's: half, or on a transport cell the longest
    window itself) of the strongest reference baseline lacking the primitive (:data:`REFERENCES`) in
    both entropy MAE and KL (:func:`compare_with_baselines`;
    a metric the cell lacks is not compared). Without ``baselines``: the threshold alone. None if the
    threshold's metric is missing.
    """
    passed = passes_threshold(tunnel, metrics, thresholds)
    if passed is None or baselines is None:
        return passed
    return passed and compare_with_baselines(tunnel, metrics, baselines, margin)["beats"] is not False


def threshold_text(tunnel: str, thresholds: Mapping[str, tuple[str, str, float]] = THRESHOLDS) -> str:
    """``"entropy MAE <= 0.1 bits"``, ``"accuracy >= 90 %"``."""
    metric, kind, value = thresholds[tunnel]
    op = "<=" if kind == "max" else ">="
    return f"accuracy {op} {value:.0%}" if metric == "accuracy" else f"entropy MAE {op} {value:g} bits"


def equivalent_window_of(mae: float, bases: Mapping[str, Mapping[str, Any]]) -> float | str:
    """:func:`bwt_lite.window_ladder.equivalent_window` of an entropy MAE on the window rows in ``bases``."""
    ws = sorted(int(n.removeprefix("window-")) for n in bases if n.startswith("window-"))
    return equivalent_window(mae, ws, [bases[f"window-{w}"]["entropy_mae_bits"] for w in ws])


__all__ = ["HMM_MAX_WINDOW", "MARGIN", "MARGINS", "MAX_WINDOW", "METRIC_NAMES", "PRIMITIVES", "PRIMITIVE_TUNNELS",
           "REFERENCES", "SEED_SHARE", "THRESHOLDS", "VARIANT_CELLS", "compare_with_baselines", "equivalent_window_of",
           "equivalent_window", "look_back_text", "median_seed", "passes_threshold", "realises", "seed_verdict",
           "threshold_text"]
