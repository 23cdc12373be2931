"""Chapter 6: the tables of the primitives chapter, built from the rows of
:func:`bwt_lite.reproduce.reproduce`, :func:`bwt_lite.reproduce.capacity_table` and
:func:`bwt_lite.cell_seeds.load_cell_seeds`. They format results and compute no science.

- :func:`tunnel_tables`: one table per tunnel (scores, the paper's number, the verdict and why);
- :func:`realised_summary`: which primitives each architecture realises, ours and the paper's;
- :func:`training_table`: how each cell was trained (episodes, share of the budget, time);
- :func:`capacity_tables`: parameters per architecture and how each size was matched;
- :func:`seed_lines`: one line per seeded recipe under the seed table.

Used in chapter 6.
"""
from __future__ import annotations

import textwrap
from typing import Any, Mapping, Sequence

from ..cell_seeds import RULE_THREADS, cell_label, threads_label
from ..display import Table, table
from ..reproduce import PRIMITIVES, threshold_text
from ..train import format_duration

RULE = ("realised: passes the tunnel's threshold, and entropy MAE and KL are each at most half the "
        "strongest exact baseline that lacks the primitive, or, for transport, below every window "
        "filter listed (the reasons under each table); the paper: the same rule on its published "
        "number alone (no KL is published).")


def yes_no(flag: bool | None) -> str:
    """``"yes"``, ``"no"``, or ``"-"`` where there is no verdict."""
    return "-" if flag is None else ("yes" if flag else "no")


def _paper_text(r: Mapping[str, Any]) -> str | None:
    if r["paper_value"] is None:
        return None
    return f"{r['paper_value']:g}%" if r["paper_unit"] == "% accuracy" else f"{r['paper_value']:g}"


def _models(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if r.get("kind", "model") == "model"]


def tunnel_tables(rows: Sequence[Mapping[str, Any]]) -> list[Table]:
    """One table per tunnel: entropy MAE, KL (and accuracy on recall), whether the cell passes the
    threshold, whether it beats the strongest baseline lacking the primitive, the verdict (both must
    hold), and the paper's number with the same rule's verdict on it; the reasons below. The
    threshold and the baseline are named in the caption, so the columns stay narrow enough for the
    book's column."""
    rows = _models(rows)
    out = []
    for tunnel in dict.fromkeys(r["tunnel"] for r in rows):
        cells = [r for r in rows if r["tunnel"] == tunnel]
        bar = ", ".join(dict.fromkeys(b for r in cells for b in r["compared_with"])) or "-"
        scores = ["entropy MAE", "KL"] + (["accuracy"] if tunnel == "recall" else [])
        out.append(table(
            [{"arch": r["arch"], "entropy MAE": r["entropy_mae_bits"], "KL": r["kl_bits"],
              "accuracy": f"{r['accuracy']:.1%}" if tunnel == "recall" else None,
              "passes": yes_no(r["passes_threshold"]), "beats": yes_no(r["beats_baselines"]),
              "realised": yes_no(r["realises"]),
              "paper": "-" if _paper_text(r) is None else f"{_paper_text(r)}: {yes_no(r['paper_realises'])}"}
             for r in cells],
            ["arch", *scores, "passes", "beats", "realised", "paper"],
            paper_column=["paper"], formats={"entropy MAE": ".4f", "KL": ".4f"},
            caption=(f"{tunnel} ({PRIMITIVES[tunnel]}): realised when it passes {threshold_text(tunnel)} "
                     f"and beats the baseline {bar}; paper: its number and the same rule's verdict"),
            note=[f"{r['arch']}: " + (r["why_not"] or f"beats {', '.join(r['compared_with'])}")
                  for r in cells]))
    return out


def realised_summary(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Which primitives each architecture realises, by our numbers and by the paper's."""
    rows = _models(rows)
    archs = list(dict.fromkeys(r["arch"] for r in rows))

    def done(arch: str, key: str) -> str:
        return ", ".join(r["primitive"] for r in rows if r["arch"] == arch and r[key]) or "none"

    return table([[a, done(a, "realises"), done(a, "paper_realises")] for a in archs],
                 ["arch", "realises (ours)", "realises (paper)"], paper_column="realises (paper)",
                 note=textwrap.wrap(RULE, 76))


def training_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """How each cell was trained: parameters, targets, training episodes, their share of the
    tunnel's transformer's, and the training time."""
    rows = _models(rows)
    budget = {r["tunnel"]: r["episodes"] for r in rows if r["arch"] == "transformer"}
    return table([[r["tunnel"], r["arch"], r["params"], r["target"], r["episodes"],
                   f"{r['episodes'] / budget[r['tunnel']]:.0%}", format_duration(r["train_time_s"])]
                  for r in rows],
                 ["tunnel", "arch", "params", "targets", "episodes", "share", "train time"],
                 caption="how each cell was trained (episodes: training episodes seen; share: of the "
                         "tunnel's transformer's; soft: the exact posterior)")


def _how_matched(r: Mapping[str, Any], ref: Mapping[tuple[str, str], Mapping[str, Any]]) -> str:
    """How the row's size was chosen, said of this row's own tunnel."""
    t = ref[(r["scale"], r["tunnel"])]
    if r["arch"] == "transformer" and r["scale"] == "paper":
        return (f"reference: this tunnel's paper-scale transformer ({t['n_layers']} layers, "
                f"d = {t['d_model']})")
    other = ref[(r["scale"], "bijection")]  # the size the other tunnels' paper presets share
    if r["scale"] == "paper" and (t["d_model"], t["n_layers"]) != (other["d_model"], other["n_layers"]):
        return (f"the other tunnels' paper size ({r['d_model']} x {r['n_layers']}), not matched to this "
                f"tunnel's {t['d_model']} x {t['n_layers']} transformer")
    return r["matched"]


def capacity_tables(capacity: Sequence[Mapping[str, Any]]) -> list[Table]:
    """One table per scale of :func:`bwt_lite.reproduce.capacity_table`'s rows: parameters, the
    difference from the tunnel's transformer, and how each size was matched."""
    ref = {(r["scale"], r["tunnel"]): r for r in capacity if r["arch"] == "transformer"}
    return [table([[r["tunnel"], r["arch"], f"{r['d_model']} x {r['n_layers']}", r["params"],
                    f"{r['ratio'] - 1:+.1%}", _how_matched(r, ref)]
                   for r in capacity if r["scale"] == scale],
                  ["tunnel", "arch", "d x layers", "params", "difference", "how matched"],
                  caption=f"{scale} scale: parameters, and the difference from the tunnel's transformer",
                  text="how matched")
            for scale in dict.fromkeys(r["scale"] for r in capacity)]


def seed_lines(seed_table: Mapping[str, Any], cell: Mapping[tuple[str, str], Mapping[str, Any]],
               width: int = 100) -> list[str]:
    """The lines under the seed table: for each seeded recipe, how many seeds realise the primitive
    at each thread count, how far the thread counts move a seed, whether it is the shipped recipe
    and, if so, whether its verdict holds and which seed is shipped and which is the median; then
    the cells that realise their primitive without five seeds at both thread counts.

    ``cell``: the shipped rows of :func:`bwt_lite.reproduce.reproduce`, by (tunnel, arch)."""
    runs_of: dict[tuple, dict[int, Mapping[str, Any]]] = {}
    for c in seed_table["cells"]:
        key = (c["tunnel"], c["arch"], c["name"], c["train_episodes"], c.get("change", ""))
        runs_of.setdefault(key, {})[c["threads"]] = c
    lines = []
    for (t, a, name, n, change), by_threads in runs_of.items():
        shipped = cell[(t, a)]
        first = next(iter(by_threads.values()))
        counts = {th: f"{c['realised_seeds']} of {len(c['seeds'])}" for th, c in sorted(by_threads.items())}
        at = {th: threads_label(th) for th in counts}
        seeds = (f"{next(iter(counts.values()))} seeds realise {PRIMITIVES[t]} at {' and '.join(at.values())}"
                 if len(set(counts.values())) == 1 else
                 f"seeds realising {PRIMITIVES[t]}: " + ", ".join(f"{k} at {at[th]}" for th, k in counts.items()))
        line = f"{cell_label(first)}, {n:,} episodes: {seeds}"
        if len(by_threads) > 1:
            one, two = ([s["entropy_mae_bits"] for s in c["seeds"]] for c in by_threads.values())
            diff = max(abs(x - y) for x, y in zip(one, two))
            line += f" (largest difference between thread counts: {diff:.1e} bits)"
        if change:
            line += "; not the shipped recipe"
        elif shipped["name"] == name and shipped["episodes"] == n:
            medians = {th: c["median_seed"] for th, c in sorted(by_threads.items())}
            median = (str(first["median_seed"]) if len(set(medians.values())) == 1 else
                      ", ".join(f"{m} at {at[th]}" for th, m in medians.items()))
            holds = all(c["realises"] for c in by_threads.values())
            where = "" if len(by_threads) > 1 else f" at {next(iter(at.values()))} (the only thread count trained)"
            line += (f"; the verdict {'holds' if holds else 'does not hold'}{where}; the shipped checkpoint "
                     f"is seed {shipped['seed']}, the median seed is {median}")
        elif shipped["name"] != name:
            line += f"; not the shipped recipe, which is {shipped['name']}"
        else:
            line += f"; not the shipped recipe, which trains on {shipped['episodes']:,} episodes"
        lines.append(textwrap.fill(line, width, subsequent_indent="  "))
    seeded = {(c["name"], c["threads"]) for c in seed_table["cells"]}
    unseeded = [cell_label(r) for r in cell.values() if r["realises"] and
                not {(r["name"], n) for n in RULE_THREADS} <= seeded]
    lines.append("\n" + textwrap.fill("Cells that realise their primitive without five seeds at both thread "
                                      "counts: " + (", ".join(unseeded) if unseeded else "none"),
                                      width, subsequent_indent="  "))
    return lines
