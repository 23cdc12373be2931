"""Extend the window ladders stored in the shipped HMM records to each card's longest window.

A record (``cell_seeds.json``, ``hmm_slow_seeds.json``, ``hmm_mamba_sweep.json``) stores the window filters
scored on its held-out episodes beside its models, and its models are judged again against them whenever
the record is read. When a card's ladder grows, the windows it lacks are computed here on the same episodes
(seed 0, the record's episode count; windows need no model): the windows it already stores must come out
the same to 1e-9 bits, or the record was scored on other episodes and the script stops without writing.

    python experiments/extend_ladders.py            # rewrite the shipped records in place
    python experiments/extend_ladders.py --check    # only say which records lack windows (exit 1 if any)

Either way it writes what it found to ``--out`` (default ``results/extend_ladders.json``).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from bwt_lite.paths import data_file
from bwt_lite.reproduce import cell_preset
from bwt_lite.verdicts import MAX_WINDOW
from bwt_lite.window_ladder import extended_ladder, missing_windows

from _common import RESULTS, write

def extended(cell: str, stored: dict, episodes: int, where: str) -> dict:
    """``stored`` with the windows ``cell``'s card adds (bwt_lite.window_ladder.extended_ladder); stops on a mismatch."""
    try:
        return extended_ladder(cell, cell_preset(cell, "transformer", "lite").tunnel, stored, episodes)
    except ValueError as e:
        raise SystemExit(f"{where}: {e}") from None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="report the records that lack windows; change nothing")
    p.add_argument("--out", type=Path, default=RESULTS / "extend_ladders.json", help="where the report goes")
    args = p.parse_args(argv)
    lacking = []
    seeds_path = data_file("cell_seeds.json")
    seeds = json.loads(seeds_path.read_text())
    for cell in seeds["cells"]:
        if cell["tunnel"] in MAX_WINDOW and cell.get("baselines") and missing_windows(cell["tunnel"], cell["baselines"]):
            where = f"cell_seeds.json {cell['name']} ({cell['threads']} thread(s), {cell.get('change') or 'recipe'})"
            lacking.append(where)
            if not args.check:
                cell["baselines"] = extended(cell["tunnel"], cell["baselines"], seeds["episodes"], where)
    for name, cell in (("hmm_slow_seeds.json", "hmm-slow"), ("hmm_mamba_sweep.json", "hmm")):
        path = data_file(name)
        record = json.loads(path.read_text())
        if record.get("variant") == "slow":
            cell = "hmm-slow"
        if missing_windows(cell, record["windows"]):
            lacking.append(name)
            if not args.check:
                record["windows"] = extended(cell, record["windows"], record["episodes"], name)
                write(path, record)
    if lacking and not args.check:
        write(seeds_path, seeds)
    print("\n".join(f"{'lacks windows' if args.check else 'extended'}: {w}" for w in lacking) or "every ladder is complete")
    write(args.out, {"check": args.check, "ladders": {cell: MAX_WINDOW[cell] for cell in MAX_WINDOW},
                     ("lacking" if args.check else "extended"): lacking})
    return 1 if (args.check and lacking) else 0


if __name__ == "__main__":
    raise SystemExit(main())
