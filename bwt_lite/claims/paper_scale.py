"""The scorecard at Paper I's scale: the claims re-measured on the paper-size transformers.

Those models (6 layers of width 192 on the bijection and recall, 9 of width 256 on the HMM: 2.7-7.2
million parameters) train on a GPU, and at 10-29 MB each they are not shipped with the package. So
their rows are measured once, by :func:`measure` on the checkpoints ``experiments/paper_scale.py``
trains, with the same row functions and verdict rules as the lite scorecard; the rows, with where,
how long and for how many steps each model trained, are stored in ``bwt_lite/data/paper_scale.json``
and read back by :func:`recorded_rows` (what ``bwt claims`` and the book's start page show beside
the lite rows). ``experiments/paper_scale_claims.py`` writes the file.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Callable, Iterable

import torch

from ..paper import paper_figure
from ..paths import data_file
from ..recipes import Preset, get_preset
from ..store.checkpoint import load_checkpoint
from ..store.files import read_json
from ..window_ladder import extended_ladder, missing_windows
from ..verdicts import MAX_WINDOW, PRIMITIVES, compare_with_baselines, equivalent_window_of, look_back_text, realises
from .catalogue import FULL, Budget, Claim
from .cells import headline_row, hmm_transformer_row, recall_transformer_row, rows_length
from .context import Context
from .rules import PARTLY, REPRODUCED, cell_verdict, manifold_verdict, pct
from .geometry import row_belief_probes, row_layer_ablation, row_qk_sharpening, row_value_manifold, rows_frame

PAPER_SCALE_FILE = data_file("paper_scale.json")

# The claims measured at paper scale, by the row functions of the lite scorecard, with the tunnels whose
# models they measure. The rows that need the other architectures at paper scale, dense training
# snapshots, a Mamba or a language model are not here.
GROUPS: tuple[tuple[tuple[str, ...], tuple[str, ...], Callable[[Context], list[Claim]]], ...] = (
    (("bijection-headline",), ("bijection",), lambda ctx: [headline_row(ctx)]),
    (("hmm-transformer",), ("hmm",), lambda ctx: [hmm_transformer_row(ctx)]),
    (("hmm-length",), ("hmm",), rows_length),
    (("recall-transformer",), ("recall",), lambda ctx: [recall_transformer_row(ctx)]),
    (("keys-orthogonal", "frame-head"), ("bijection",), rows_frame),
    (("qk-sharpening",), ("bijection",), lambda ctx: [row_qk_sharpening(ctx)]),
    (("layer-ablation",), ("bijection", "hmm"), lambda ctx: [row_layer_ablation(ctx)]),
    (("value-manifold-pc1",), ("bijection",), lambda ctx: [row_value_manifold(ctx)]),
    (("belief-probes",), ("bijection", "hmm"), lambda ctx: [row_belief_probes(ctx)]),
)
PAPER_SCALE_IDS: tuple[str, ...] = tuple(cid for ids, _, _ in GROUPS for cid in ids)


def tunnels_of(ids: Iterable[str]) -> set[str]:
    """The tunnels whose paper-scale models the rows of ``ids`` measure."""
    wanted = set(ids)
    return {t for group, tunnels, _ in GROUPS if wanted & set(group) for t in tunnels}


class PaperScaleContext(Context):
    """A scorecard context whose transformers are the paper-scale checkpoints in ``directory`` (one
    ``<tunnel>-transformer-paper*`` folder per tunnel), each loaded with the preset it records."""

    def __init__(self, directory: Path | str, device: str | torch.device = "cpu", budget: Budget = FULL,
                 log: Callable[[str], None] | None = None):
        super().__init__(device, budget, False, log or (lambda line: None))
        self.found: dict[str, tuple[Path, Preset, dict[str, Any]]] = {}
        for meta_file in sorted(Path(directory).glob("*-transformer-paper*/checkpoint.json")):
            meta = read_json(meta_file)
            preset = Preset.from_dict(meta["preset"])
            self.found[preset.tunnel["tunnel"]] = (meta_file.parent, preset, meta)
        if not self.found:
            raise FileNotFoundError(f"no paper-scale transformer checkpoints in {directory}")

    def preset(self, tunnel: str, arch: str) -> Preset:
        if arch != "transformer" or tunnel not in self.found:
            raise KeyError(f"no paper-scale {tunnel} {arch}: have the transformer on {', '.join(self.found)}")
        return self.found[tunnel][1]

    def model(self, tunnel: str, arch: str) -> torch.nn.Module:
        preset = self.preset(tunnel, arch)  # raises for a model not trained at paper scale
        if (tunnel, arch) not in self._models:
            model, _ = load_checkpoint(self.found[tunnel][0], preset, device=self.device)
            self._models[(tunnel, arch)] = model.eval()
        return self._models[(tunnel, arch)]

    def deep(self, tunnel: str) -> bool:
        return tunnel in self.found

    def geometry_model(self, tunnel: str) -> tuple[torch.nn.Module, str]:
        model = self.model(tunnel, "transformer")
        return model, f"the {model.cfg.n_layers}-layer paper-scale model"

    def provenance(self, tunnel: str) -> dict[str, Any]:
        """Where and how the tunnel's model trained: parameters, steps (and the schedule's length), time, device."""
        _, preset, meta = self.found[tunnel]
        return {"tunnel": tunnel, "name": meta["name"], "key": meta["key"][:16], "parameters": meta["params"],
                "layers": preset.model.n_layers, "d_model": preset.model.d_model, "steps": meta["train_steps"],
                "schedule_steps": preset.train.schedule_steps, "batch_size": preset.train.batch_size,
                "target": preset.train.target, "seed": preset.train.seed, "train_time_s": meta["train_time_s"],
                "trained_on": meta["trained_on"], "history": meta["history"]}


def measure(directory: Path | str, device: str | torch.device = "cpu", budget: Budget = FULL,
            log: Callable[[str], None] | None = None, earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """The paper-scale rows measured on the checkpoints in ``directory``: ``{"models": [provenance per
    tunnel], "claims": [row dicts]}``. A group whose tunnel has no checkpoint there is left out, or, given
    ``earlier`` (a previous record), its rows are carried over from it unchanged, each marked in its
    details (``"carried": true``) and its reason, and the earlier models they measured are listed under
    ``"earlier_models"`` (see :func:`models_measured`)."""
    ctx = PaperScaleContext(directory, device, budget, log)
    rows: list[dict[str, Any]] = []
    earlier_models: dict[str, dict[str, Any]] = {}  # by key: the models carried rows were measured on
    old_rows = {r["id"]: r for r in (earlier or {}).get("claims", [])}
    for ids, tunnels, compute in GROUPS:
        try:
            produced = [r.to_dict() for r in compute(ctx)]
        except KeyError as missing:  # that tunnel's paper-scale model was not trained
            produced = [_carried(old_rows[i]) for i in ids if i in old_rows and not _is_carried(old_rows[i])] \
                + [old_rows[i] for i in ids if i in old_rows and _is_carried(old_rows[i])]
            ctx.log(f"{', '.join(ids)}: {'carried over from the earlier record' if produced else 'skipped'} "
                    f"({missing})")
            for row in produced:  # each keeps the models it was measured on, and says which rows they serve
                for m in models_measured(earlier, [Claim(**old_rows[row["id"]])]):  # as the earlier record had it
                    kept = earlier_models.setdefault(m["key"], {**m, "earlier": True, "rows": []})
                    kept["rows"] = sorted(set(kept["rows"]) | {row["id"]})
            rows += produced
            continue
        rows += produced
        ctx.log(f"{', '.join(ids)}: {', '.join(r['verdict'] for r in produced)}")
    result = {"episodes": budget.eval, "models": [ctx.provenance(t) for t in ctx.found], "claims": rows}
    if earlier_models:
        result["earlier_models"] = list(earlier_models.values())
    return result


@functools.lru_cache(maxsize=4)
def _window_probes(episodes: int) -> tuple[tuple[str, float], ...]:
    from ..geometry.probes import probe_window_beliefs
    from ..recipes import get_preset
    from ..tunnels import make_tunnel

    tunnel = make_tunnel(**get_preset("hmm", "transformer", "paper").tunnel)
    return tuple(probe_window_beliefs(tunnel, (1, 2), episodes=episodes, seed=0).items())


def _rejudged_probes(row: dict[str, Any]) -> dict[str, Any]:
    """A belief-probes row recorded before the rule compared it with the same probe on the exact belief of the
    last 1 and 2 symbols: that baseline needs no model, so it is measured now and the verdict judged again."""
    d = row["details"]
    windows = dict(_window_probes(int(d.get("episodes", 1024))))
    best = max(windows, key=windows.get)
    final = d["hmm"]["r2"][-1]
    if final > windows[best] or row["verdict"] != REPRODUCED:
        return row
    return {**row, "verdict": PARTLY,
            "reason": (f"judged again by the rule as it is now: the HMM model's final R^2 {final:.2f} does not beat "
                       f"the same probe on the exact belief of the last symbols alone ("
                       + ", ".join(f"{w} {v:.2f}" for w, v in windows.items()) + f"; first recorded: {row['reason']})"),
            "details": {**d, "window_probes": windows, "beats_window_probes": False, "rejudged": True}}


def within_position_bound(all_points: float, position_means: float) -> float:
    """The most PC1's share within position can be, given its shares over all points and over the per-position
    means of the same representation (every episode at every position). The covariance over all points is the
    within-position covariance plus that of the position means, so with ``w`` the within-position fraction of
    the variance, ``all >= within * w`` and ``all >= means * (1 - w)``: ``within <= all / (1 - all / means)``
    (1 when that says nothing)."""
    if not 0 < all_points < position_means:
        return 1.0
    return min(1.0, all_points / (1 - all_points / position_means))


def _rejudged_manifold(row: dict[str, Any]) -> dict[str, Any]:
    """A value-manifold-pc1 row recorded before the rule was decided over all points and within position (when
    the per-position means could earn a verdict): within position was not recorded, so it counts as not shown,
    with the bound the recorded shares put on it (:func:`within_position_bound`)."""
    d = row["details"]
    all_points, means = d["pc1_all_points"], d["pc1_position_means"]
    verdict, rule = manifold_verdict(all_points, float("nan"), paper_figure("value_manifold_pc1").value)
    if verdict == row["verdict"]:
        return row
    bound = within_position_bound(all_points, means)
    return {**row, "verdict": verdict,
            "reason": (f"judged again by the rule as it is now: {rule}. PC1 over all points {pct(all_points)}; within "
                       f"position not recorded, at most {pct(bound)} given the recorded shares; the per-position "
                       f"means' {pct(means)} is context only (first recorded: {row['reason']})"),
            "details": {**d, "pc1_within_position_max": bound, "rule": rule, "rejudged": True}}


CARRIED_NOTE = ("measured in an earlier GPU window, on the models listed as earlier (the latest window did not bring "
                "back a model of every tunnel it needs)")


def _is_carried(row: dict[str, Any]) -> bool:
    return bool(row.get("details", {}).get("carried"))


def _carried(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` as carried over from an earlier record: marked in its details and its reason."""
    return {**row, "reason": f"{row['reason']} [{CARRIED_NOTE}]", "details": {**row.get("details", {}), "carried": True}}


def load_paper_scale(path: Path | str = PAPER_SCALE_FILE) -> dict[str, Any] | None:
    """The recorded paper-scale measurement (:func:`measure`'s dict and the command), or None if none is shipped;
    every architecture-cell row judged again by the rule as it is now (:func:`rejudged`)."""
    path = Path(path)
    if not path.exists():
        return None
    recorded = json.loads(path.read_text())
    return {**recorded, "claims": [rejudged(r) for r in recorded["claims"]]}


def rejudged(row: dict[str, Any]) -> dict[str, Any]:
    """An architecture-cell row (it stores ``ours``, the exact ``baselines`` and what the paper claims) judged
    again by :func:`bwt_lite.verdicts.realises` as it is now, so that a stricter rule never leaves a stale
    verdict in the record (so are belief-probes and value-manifold-pc1 rows recorded under an older rule);
    other rows, and rows the rule still judges the same, are returned unchanged."""
    d = row.get("details") or {}
    if row["id"] == "belief-probes" and "window_probes" not in d and "hmm" in d:
        return _rejudged_probes(row)
    if row["id"] == "value-manifold-pc1" and "pc1_within_position" not in d and "pc1_all_points" in d:
        return _rejudged_manifold(row)
    tunnels = sorted(tunnels_of([row["id"]]))
    if not {"ours", "baselines", "paper_succeeds", "ours_realises"} <= set(d) or len(tunnels) != 1:
        return row
    tunnel = tunnels[0]
    if tunnel in MAX_WINDOW and missing_windows(tunnel, d["baselines"]):  # a ladder grown since it was recorded
        args = get_preset(tunnel, "transformer", "paper").tunnel
        d = {**d, "baselines": extended_ladder(tunnel, args, d["baselines"], int(d.get("episodes", FULL.eval)))}
        d["bars"] = compare_with_baselines(tunnel, d["ours"], d["baselines"])["bars"]
        row = {**row, "details": d}
    now = bool(realises(tunnel, d["ours"], d["baselines"]))
    if now == d["ours_realises"]:
        return row
    size = bool(d.get("size_holds")) and d.get("second_size_holds") is not False
    why = compare_with_baselines(tunnel, d["ours"], d["baselines"])["why"]
    looks = ""
    if tunnel in MAX_WINDOW:
        looks = f"; {look_back_text(equivalent_window_of(d['ours']['entropy_mae_bits'], d['baselines']))}"
    return {**row, "verdict": cell_verdict(d["paper_succeeds"], now if d["paper_succeeds"] else
                                           d.get("ours_passes_threshold", now), size),
            "reason": (f"judged again by the rule as it is now: {'realises' if now else 'does not realise'} "
                       f"{PRIMITIVES[tunnel]}{': ' + why if why else ''}{looks} (first recorded: {row['reason']})"),
            "details": {**d, "ours_realises": now, "rejudged": True}}


def recorded_rows(path: Path | str = PAPER_SCALE_FILE, recorded: dict[str, Any] | None = None) -> list[Claim]:
    """The recorded paper-scale rows as :class:`Claim` objects (of ``recorded``, else of the file at
    ``path``; empty if none are shipped)."""
    found = recorded if recorded is not None else load_paper_scale(path)
    return [] if found is None else [Claim(**row) for row in found["claims"]]


def models_measured(recorded: dict[str, Any], rows: Iterable[Claim]) -> list[dict[str, Any]]:
    """The recorded models (provenance dicts) that ``rows`` measure: the current ones for measured rows,
    the earlier ones (``recorded["earlier_models"]``) for rows carried over from an earlier record: those
    listing the row among theirs (``"rows"``), or, in a record from before models listed their rows,
    those of the row's tunnels."""
    rows = list(rows)
    now = tunnels_of(r.id for r in rows if not (r.details or {}).get("carried"))
    carried = [r for r in rows if (r.details or {}).get("carried")]
    then = tunnels_of(r.id for r in carried)
    ids = {r.id for r in carried}
    found = [m for m in recorded["models"] if m["tunnel"] in now]
    for m in recorded.get("earlier_models", []):
        serves = bool(ids & set(m["rows"])) if "rows" in m else m["tunnel"] in then
        if serves and m not in found:
            found.append(m)
    return found


def trained_text(model: dict[str, Any]) -> str:
    """One line on how a paper-scale model trained, e.g. for a table's caption."""
    on = model["trained_on"]
    steps, schedule = model["steps"], model["schedule_steps"]
    cut = "" if steps >= schedule else f" (stopped at {steps / schedule:.0%} of its {schedule:,}-step schedule)"
    text = (f"{model['tunnel']}: {model['layers']} layers x {model['d_model']}, {model['parameters']:,} parameters, "
            f"{model['steps']:,} steps x {model['batch_size']} episodes{cut}, {model['train_time_s'] / 60:.1f} min on "
            f"{on['device_name']} ({on['precision']}{', torch.compile' if on.get('compile') else ''})")
    gpu = model.get("gpu") or {}
    if gpu.get("runs_together", 1) > 1:
        text += f", {gpu['runs_together']} runs side by side, {gpu['steps_per_s']:g} steps/s each"
    seeds = model.get("seeds") or []
    if len(seeds) > 1:
        # five decimals: seeds of one recipe can lie within a ten-thousandth of a bit of each other
        others = ", ".join(f"seed {s['seed']} {s['entropy_mae_bits']:.5f}" for s in seeds if s["seed"] != model["seed"])
        ordered = sorted(seeds, key=lambda s: s["entropy_mae_bits"])
        median = ordered[len(ordered) // 2]  # of two, the worse
        if median["seed"] == model["seed"]:
            text += f"; seed {model['seed']}, the median of {len(seeds)} seeds by entropy MAE (the others: {others} bits)"
        else:  # the median's checkpoint was not brought back from its GPU window
            mine = next((s["entropy_mae_bits"] for s in seeds if s["seed"] == model["seed"]), None)
            text += (f"; seed {model['seed']}" + (f" ({mine:.5f} bits)" if mine is not None else "")
                     + f", not the median of the {len(seeds)} seeds, seed {median['seed']}, whose checkpoint was not "
                     f"kept (the others: {others} bits)")
    elif seeds:
        text += f"; one seed ({model['seed']})"
    if model.get("earlier"):
        text += "; from an earlier GPU window: only the rows that need it are from it"
    return text
