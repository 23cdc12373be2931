"""The primitives table: every architecture on every tunnel, our numbers beside the paper's.

Each tunnel tests one inference primitive (Paper I): the bijection **accumulation** of evidence,
the HMM **transport** of a belief through known dynamics, associative recall **binding** (retrieve
an arbitrary earlier pair by content), and Bayesian regression continuous accumulation.

When a cell *realises* its tunnel's primitive (:func:`realises`): its held-out score passes the
tunnel's threshold in :data:`THRESHOLDS`, **and** it clearly beats the strongest exact baseline that
lacks the primitive (:mod:`bwt_lite.baselines`, candidates in :data:`REFERENCES`): in both entropy
MAE and KL it must be at most :data:`MARGIN` (half) of that baseline's value, i.e. remove at least
half of the error the baseline leaves; on the HMMs (transport) it must beat every window filter the
table lists, the longest, near-exact one included (the tunnels' cards, :class:`bwt_lite.tunnels.Card`).
A threshold alone is not enough: on the HMM the exact filter of the current symbol alone
(``window-1``, 0.08 bits) passes a 0.2-bit threshold. Every HMM row carries ``equivalent_window``: the
look-back whose window filter scores the same entropy MAE (:func:`bwt_lite.window_ladder.equivalent_window`).

:func:`reproduce` evaluates every (architecture, tunnel) cell from the cache or the shipped
checkpoints (training what is missing) and scores each tunnel's baselines on the same held-out
episodes, as rows of their own (``kind: "baseline"``, ``params`` 0); :func:`capacity_table` lists the
parameter counts and how each architecture was matched to the transformer. ``bwt reproduce`` prints both.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Mapping

import torch

from .baselines import describe, evaluate_baselines
from .cell_seeds import recipe_cells, seed_counts
from .checkpoints import find_checkpoint, load_or_train
from .runtime.device import resolve_device
from .evaluate import evaluate
from .models import ARCHS, build_model
from .paper import paper_value
from .recipes import HOW_MATCHED, SCALES, get_preset
from .store.hosted import hosted_checkpoint
from .train import format_duration
from .verdicts import (HMM_MAX_WINDOW, MARGIN, MARGINS, MAX_WINDOW, METRIC_NAMES, PRIMITIVE_TUNNELS, PRIMITIVES,
                       REFERENCES, SEED_SHARE, THRESHOLDS, VARIANT_CELLS, compare_with_baselines, equivalent_window_of,
                       look_back_text, median_seed, passes_threshold, realises, seed_verdict, threshold_text)
from .orchestration.pool import train_presets
from .tunnels import make_tunnel
from .arguments import check_choice, check_int



def cell_preset(tunnel: str, arch: str, scale: str = "lite", seed: int | None = None) -> Any:
    """The preset of a table cell: ``tunnel`` is a name of :data:`PRIMITIVE_TUNNELS` (a variant such as
    ``"hmm-slow"`` resolves through :data:`VARIANT_CELLS`); ``seed`` is the training seed (None: the
    recipe's, the seed of the shipped checkpoint)."""
    check_choice("tunnel", tunnel, PRIMITIVE_TUNNELS)
    base, variant = VARIANT_CELLS.get(tunnel, (tunnel, None))
    kwargs: dict[str, Any] = {} if variant is None else {"variant": variant}
    if seed is not None:
        kwargs["seed"] = seed
    return get_preset(base, arch, scale, **kwargs)


def _paper_metrics(tunnel: str, arch: str) -> dict[str, float]:
    """The paper's number for a cell as a metrics dict (accuracy as a fraction), for :func:`realises`."""
    paper = paper_value(tunnel, arch)
    if paper is None:
        return {}
    if paper.unit == "% accuracy":
        return {"accuracy": paper.value / 100.0}
    return {"entropy_mae_bits": paper.value}


def _count(preset: Any) -> int:
    with torch.device("meta"):
        return build_model(preset.model).n_params


def capacity_table(scales: Iterable[str] = SCALES, tunnels: Iterable[str] = PRIMITIVE_TUNNELS,
                   archs: Iterable[str] = ARCHS) -> list[dict[str, Any]]:
    """Parameter counts of every (architecture, tunnel, scale) preset, against the transformer's.

    Row keys: arch, tunnel, scale, d_model, n_layers, params, transformer_params, ratio (params /
    transformer_params) and matched (how the size was chosen). Counts are exact (built on the meta device).
    """
    rows = []
    for scale in scales:
        check_choice("scale", scale, SCALES)
        shared = get_preset("bijection", "transformer", scale).model  # the size most tunnels' transformers share
        for tunnel in tunnels:
            ref_preset = cell_preset(tunnel, "transformer", scale)
            reference, ref = _count(ref_preset), ref_preset.model
            for arch in archs:
                p = cell_preset(tunnel, arch, scale)
                n = _count(p)
                if (arch, scale) not in HOW_MATCHED:
                    raise ValueError(f"no HOW_MATCHED line (bwt_lite/recipes/architectures.py) for {arch} at scale {scale}")
                matched = HOW_MATCHED[(arch, scale)]
                if scale == "paper" and arch != "transformer" and (ref.d_model, ref.n_layers) != (shared.d_model,
                                                                                                  shared.n_layers):
                    matched = (f"the other tunnels' paper size ({p.model.d_model} x {p.model.n_layers}), not matched "
                               f"to this tunnel's {ref.d_model} x {ref.n_layers} transformer")
                rows.append({"arch": arch, "tunnel": tunnel, "scale": scale, "d_model": p.model.d_model,
                             "n_layers": p.model.n_layers, "params": n, "transformer_params": reference,
                             "ratio": n / reference, "matched": matched})
    return rows


def format_capacity_table(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`capacity_table` as plain text."""
    head = f"{'scale':<6}{'tunnel':<11}{'arch':<12}{'d x layers':>11}{'params':>12}{'vs transformer':>16}  how matched"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['scale']:<6}{r['tunnel']:<11}{r['arch']:<12}{r['d_model']:>6} x {r['n_layers']:<2}"
                     f"{r['params']:>12,}{r['ratio'] - 1:>+15.1%}  {r['matched']}")
    return "\n".join(lines)


def reproduce(scale: str = "lite", *, retrain: bool = False, episodes: int = 2048, seed: int = 0,
              device: str | torch.device = "cpu", archs: Iterable[str] = ARCHS, tunnels: Iterable[str] = PRIMITIVE_TUNNELS,
              progress: bool = False, download: bool = True, jobs: int = 1, baseline_rows: bool = True,
              train_seeds: Iterable[int | None] = (None,), log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Evaluate every (architecture, tunnel) cell at ``scale`` on ``episodes`` held-out episodes.

    Each model comes from the cache or the shipped checkpoints (hosted ones are downloaded when
    ``download``); a missing one is trained, and with ``retrain`` every one is trained afresh. One
    row per cell, with the keys arch, tunnel, scale, kind ("model"), entropy_mae_bits, kl_bits,
    accuracy (recall: on recalled keys; None for Gaussian tunnels), paper_value (as published, in
    paper_unit), params, primitive, metric, threshold, target, train_steps, episodes (training
    episodes seen: steps x batch size), train_time_s (the checkpoint's recorded training time),
    per_position (evaluate's per-position curves), seconds (loading or training, and evaluating), and
    the verdict: passes_threshold, beats_baselines, compared_with (the reference baselines' names),
    baseline_bars (metric -> {baseline, value}), realises (:func:`realises`), why_not (what failed,
    or ""), paper_realises (the same rule on the paper's published metric).

    Each tunnel's exact baselines (:func:`bwt_lite.baselines.baseline_names`; the HMMs' windows
    0..:data:`MAX_WINDOW`) are scored on the same held-out episodes; with ``baseline_rows`` they
    follow the tunnel's model rows as rows of their own: ``kind`` "baseline", ``arch`` the baseline's
    name, ``params``, ``train_steps``, ``episodes`` and ``train_time_s`` 0, ``lacks`` (what it does
    without), ``reference`` (a candidate bar of :data:`REFERENCES`), and None for the verdict and
    paper fields.

    ``train_seeds``: the training seeds of each cell (None: the recipe's). With several, every cell is
    trained once per seed (``seed`` is the held-out
    episodes' seed, the same for all): the row carries the median seed's numbers (:func:`median_seed`)
    and its ``seed``, ``seeds`` (each seed's metrics and verdict) and ``realised_seeds``; ``realises`` is
    then :func:`seed_verdict` (at least :data:`SEED_SHARE` of the seeds realise). With the recipe's seed
    alone at lite scale, a cell whose recipe's seeds 0-4 were trained (chapter 6's seed table) carries
    ``seed_record``, and realises its primitive only if its recipe does too (:func:`_with_seed_record`).

    With ``jobs`` > 1 the cells to train are first trained on the CPU, ``jobs`` at a time in worker
    processes (:func:`bwt_lite.orchestration.pool.train_presets`), then every cell is evaluated here.
    """
    check_choice("scale", scale, SCALES)
    check_int("jobs", jobs, 1)
    archs, tunnels, train_seeds = list(archs), list(tunnels), list(dict.fromkeys(train_seeds))
    if not train_seeds:
        raise ValueError("train_seeds must name at least one training seed")
    for s in train_seeds:
        if s is not None:
            check_int("train seed", s, 0)
    cells = []
    for tunnel in tunnels:
        cells += [(tunnel, arch, cell_preset(tunnel, arch, scale, s)) for arch in archs for s in train_seeds]
    if jobs > 1:
        if resolve_device(device).type != "cpu":
            raise ValueError("jobs > 1 trains on the CPU; on a GPU train one cell at a time (jobs=1)")
        missing = [p for _, _, p in cells if retrain or (find_checkpoint(p) is None
                                                         and not (download and hosted_checkpoint(p)))]
        train_presets(missing, jobs=jobs, fresh=retrain, log=log)
        retrain = False  # trained just now, into the cache that loading looks at first
    rows = []
    for tunnel in tunnels:
        presets = [(arch, preset) for t, arch, preset in cells if t == tunnel]
        tunnel_config = presets[0][1].tunnel if presets else cell_preset(tunnel, "transformer", scale).tunnel
        base_rows = _baseline_rows(tunnel, tunnel_config, scale, episodes, seed, device)
        bases = {r["arch"]: r for r in base_rows}
        for arch in dict.fromkeys(a for a, _ in presets):
            own = [preset for a, preset in presets if a == arch]
            runs = [_model_row(tunnel, arch, preset, scale, bases, episodes=episodes, seed=seed, retrain=retrain,
                               progress=progress, device=device, log=log, download=download) for preset in own]
            if len(runs) > 1:
                rows.append(_seeds_row(tunnel, runs))
            else:
                rows.append(_with_seed_record(runs[0], own[0]) if train_seeds == [None] and scale == "lite" else runs[0])
        if baseline_rows:
            rows += base_rows
    return rows


def _model_row(tunnel: str, arch: str, preset: Any, scale: str, bases: Mapping[str, Mapping[str, Any]], *,
               episodes: int, seed: int, retrain: bool, progress: bool, device: str | torch.device,
               log: Callable[[str], None], download: bool) -> dict[str, Any]:
    """One model cell of :func:`reproduce`, with its verdict against the tunnel's baselines ``bases``."""
    t0 = time.perf_counter()
    model, meta = load_or_train(preset, retrain=retrain, progress=progress, device=device, log=log,
                                download=download)
    res = evaluate(model, make_tunnel(**preset.tunnel), episodes=episodes, seed=seed)
    paper = paper_value(tunnel, arch)
    metric, kind, value = THRESHOLDS[tunnel]
    batch = meta.get("preset", {}).get("train", {}).get("batch_size", preset.train.batch_size)
    row = {"arch": arch, "tunnel": tunnel, "scale": scale, "kind": "model", "name": preset.name,
           "entropy_mae_bits": res.entropy_mae_bits,
           "kl_bits": res.kl_bits, "accuracy": res.accuracy,
           "paper_value": paper.value if paper else None, "paper_unit": paper.unit if paper else None,
           "params": model.n_params, "primitive": PRIMITIVES[tunnel], "metric": metric, "seed": preset.train.seed,
           "threshold": value, "target": preset.train.target, "train_steps": meta["train_steps"],
           "episodes": meta["train_steps"] * batch, "train_time_s": meta.get("train_time_s"),
           "per_position": res.per_position}
    comparison = compare_with_baselines(tunnel, row, bases)
    row["passes_threshold"] = passes_threshold(tunnel, row)
    row["beats_baselines"] = comparison["beats"]
    row["compared_with"] = comparison["compared_with"]
    row["baseline_bars"] = comparison["bars"]
    row["realises"] = realises(tunnel, row, bases)
    why = [] if row["passes_threshold"] else [f"misses the threshold ({threshold_text(tunnel)})"]
    row["why_not"] = "; ".join(why + ([comparison["why"]] if comparison["why"] else []))
    row["paper_realises"] = realises(tunnel, _paper_metrics(tunnel, arch), bases) if paper else None
    if tunnel in MAX_WINDOW:  # how far back the model reads, on the window ladder of the same episodes
        row["equivalent_window"] = equivalent_window_of(row["entropy_mae_bits"], bases)
        if not row["realises"] and row["passes_threshold"]:
            row["why_not"] += f"; {look_back_text(row['equivalent_window'])}"
    row["seconds"] = time.perf_counter() - t0
    return row


def _with_seed_record(row: dict[str, Any], preset: Any) -> dict[str, Any]:
    """A shipped cell's row judged by its recipe's seeds too, where chapter 6's seed table has them
    (:func:`bwt_lite.cell_seeds.recipe_cells`): ``seed_record`` says how many seeds realise the primitive at
    each thread count, and a run that realises it while its recipe does not (fewer than 4 of 5 seeds at
    some thread count) is not counted as realising it. The row is unchanged when no seeds were trained."""
    cells = recipe_cells(preset.name, preset.train.steps * preset.train.batch_size)
    if not cells:
        return row
    row = dict(row, seed_record=seed_counts(cells))
    if row["realises"] and not all(c["realises"] for c in cells):
        row["realises"] = False
        row["why_not"] = (f"this run realises it, its recipe does not: seeds 0-4 realise it {row['seed_record']}, "
                          f"short of 4 of 5")
    return row


def _seeds_row(tunnel: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One cell over several training seeds: the median seed's row, with every seed's result."""
    row = dict(median_seed(tunnel, runs))
    row["seeds"] = [{k: r[k] for k in ("seed", "entropy_mae_bits", "kl_bits", "accuracy", "realises")} for r in runs]
    row["realised_seeds"] = sum(bool(r["realises"]) for r in runs)
    row["realises"] = seed_verdict(r["realises"] for r in runs)
    row["seconds"] = sum(r["seconds"] for r in runs)
    if not row["realises"]:
        row["why_not"] = f"{row['realised_seeds']} of {len(runs)} seeds realise; " + row["why_not"]
    return row


def _baseline_rows(tunnel: str, config: Mapping[str, Any], scale: str, episodes: int, seed: int,
                   device: str | torch.device) -> list[dict[str, Any]]:
    """The tunnel's exact baselines as rows (see :func:`reproduce`), on the models' held-out episodes."""
    t = make_tunnel(**config)
    t0 = time.perf_counter()
    results = evaluate_baselines(t, episodes=episodes, seed=seed, device=resolve_device(device),
                                 max_window=MAX_WINDOW.get(tunnel, HMM_MAX_WINDOW))
    seconds = (time.perf_counter() - t0) / max(len(results), 1)
    metric, _, value = THRESHOLDS[tunnel]
    references = {c for candidates in REFERENCES[tunnel].values() for c in candidates}
    return [{"arch": name, "tunnel": tunnel, "scale": scale, "kind": "baseline",
             "entropy_mae_bits": res.entropy_mae_bits, "kl_bits": res.kl_bits, "accuracy": res.accuracy,
             "paper_value": None, "paper_unit": None, "params": 0, "primitive": PRIMITIVES[tunnel],
             "metric": metric, "threshold": value, "target": None, "train_steps": 0, "episodes": 0,
             "train_time_s": 0.0, "per_position": res.per_position, "lacks": describe(name),
             "reference": name in references, "passes_threshold": None, "beats_baselines": None,
             "compared_with": [], "realises": None, "why_not": "", "paper_realises": None, "seconds": seconds,
             **({"equivalent_window": float(name.removeprefix("window-"))} if name.startswith("window-") else {})}
            for name, res in results.items()]


def _yes_no(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "no")


def _reference_text(tunnel: str) -> str:
    """``"best of window-0, window-1, window-2"``: the candidate bars of a tunnel, by metric where they differ."""
    by_metric = REFERENCES[tunnel]

    def best(names: tuple[str, ...]) -> str:
        return names[0] if len(names) == 1 else "best of " + ", ".join(names)
    if len(set(by_metric.values())) == 1:
        return best(next(iter(by_metric.values())))
    return "; ".join(f"{METRIC_NAMES.get(m, m)}: {best(c)}" for m, c in by_metric.items())


def format_primitives_table(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`reproduce` as the primitives table (each tunnel's exact baselines under its
    models), with the verdict rule and each architecture's summary."""
    models = [r for r in rows if r.get("kind", "model") == "model"]
    labels = [f"{r['tunnel']} ({r['primitive']})" if r.get("kind", "model") == "model" else "  exact baseline"
              for r in rows]
    w = max([len("tunnel (primitive)")] + [len(label) for label in labels]) + 2
    a = max([len("arch")] + [len(r["arch"]) for r in rows]) + 2
    head = (f"{'tunnel (primitive)':<{w}}{'arch':<{a}}{'params':>10}{'entropy MAE':>13}{'KL bits':>9}"
            f"{'accuracy':>10}{'paper':>9}  {'targets':<9}{'episodes':>10}{'train time':>13}  realised (paper)")
    lines = [head, "-" * len(head)]
    for label, r in zip(labels, rows):
        acc = "-" if r["accuracy"] is None or r["tunnel"] != "recall" else f"{r['accuracy']:.1%}"
        start = f"{label:<{w}}{r['arch']:<{a}}{r['params']:>10,}{r['entropy_mae_bits']:>13.4f}{r['kl_bits']:>9.4f}{acc:>10}"
        if r.get("kind", "model") == "baseline":
            note = r.get("lacks", "") + ("; a reference" if r.get("reference") else "")
            lines.append(f"{start}{'-':>9}  {'-':<9}{'-':>10}{'-':>13}  {note}")
            continue
        paper = "-" if r["paper_value"] is None else (
            f"{r['paper_value']:g}%" if r["paper_unit"] == "% accuracy" else f"{r['paper_value']:g}")
        episodes = "-" if r.get("episodes") is None else f"{r['episodes']:,}"
        took = "-" if r.get("train_time_s") is None else format_duration(r["train_time_s"])
        verdict = f"{_yes_no(r['realises'])} ({_yes_no(r['paper_realises'])})"
        if r.get("seeds"):
            verdict += f" [{r['realised_seeds']}/{len(r['seeds'])} seeds; median seed {r['seed']}]"
        if r.get("compared_with"):
            verdict += f"  {r['why_not']}" if r.get("why_not") else f"  beats {', '.join(r['compared_with'])}"
        if r.get("equivalent_window") is not None:
            verdict += f"  [window-equivalent {r['equivalent_window']}]"
        lines.append(f"{start}{paper:>9}  {r['target']:<9}{episodes:>10}{took:>13}  {verdict}")
    lines.append("")
    tunnels = [t for t in PRIMITIVE_TUNNELS if any(r["tunnel"] == t for r in rows)]
    lines.append("realised when: " + "; ".join(f"{t} {threshold_text(t)}" for t in tunnels))
    lines.append("  and entropy MAE and KL each <= the cell's margin x the strongest exact baseline without the "
                 "primitive: " + "; ".join(f"{t}: {MARGINS[t]:g} x {_reference_text(t)}" for t in tunnels))
    if any(t in MAX_WINDOW for t in tunnels):
        lines.append("  transport: below every window filter listed, the longest (near-exact) one included; a cell "
                     "between two windows reads about that far back (its equivalent window)")
    if any(r.get("seeds") for r in models):
        lines.append(f"  over seeds: at least {SEED_SHARE:.0%} of a cell's training seeds realise; numbers of the median seed")
    lines.append("  paper: the same rule on the published number alone (entropy MAE, or recall accuracy; no KL is "
                 "published, so KL is not compared)")
    for arch in dict.fromkeys(r["arch"] for r in models):
        done = [r["primitive"] for r in models if r["arch"] == arch and r["realises"]]
        paper = [r["primitive"] for r in models if r["arch"] == arch and r["paper_realises"]]
        lines.append(f"  {arch:<12} ours: {', '.join(done) or 'none'}"
                     f" | paper: {', '.join(paper) or 'none'}")
    total = sum(r["seconds"] for r in rows)
    n_base = len(rows) - len(models)
    lines.append(f"({len(models)} cells and {n_base} baselines in {format_duration(total)}; paper values are entropy "
                 f"MAE in bits, or % accuracy on recalled keys for recall; soft targets: trained on the exact "
                 f"posterior; episodes: training episodes seen)")
    return "\n".join(lines)


# The verdict rule lives in bwt_lite.verdicts; its names stay importable from here, where the table uses them.
__all__ = ["HMM_MAX_WINDOW", "HOW_MATCHED", "MARGIN", "MARGINS", "MAX_WINDOW", "METRIC_NAMES", "PRIMITIVES",
           "PRIMITIVE_TUNNELS", "REFERENCES", "SEED_SHARE", "THRESHOLDS", "VARIANT_CELLS", "capacity_table",
           "cell_preset", "compare_with_baselines", "equivalent_window_of", "format_capacity_table",
           "format_primitives_table", "median_seed", "passes_threshold", "realises", "reproduce", "seed_verdict",
           "threshold_text"]
