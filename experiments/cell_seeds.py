"""Seeds and threads for the primitives table: chosen cells trained from seeds 0-4 and judged seed by seed.

Backs chapter 6's seed table (``bwt_lite/data/cell_seeds.json``, rendered with ``bwt_lite.cell_seeds``).
Each seed is the cell's shipped recipe with only ``seed`` changed (``bwt_lite.reproduce.cell_preset``),
trained into ``--cache`` (resumable; the recipe's own seed at one thread is the shipped checkpoint,
used when the cache lacks it) and scored on the primitives table's held-out episodes beside the tunnel's exact
baselines, with the table's verdict per seed (``bwt_lite.reproduce.realises``). The thread count is
the one each checkpoint records (``trained_on``): set it with ``OMP_NUM_THREADS``, and give each
thread count its own ``--cache``. A seed takes about this long on one core (two one-thread runs side
by side): bijection LSTM 10 min, bijection Mamba 4, bijection transformer 8, regression transformer 12,
regression LSTM 8, slow-HMM Mamba 22.

    OMP_NUM_THREADS=1 python experiments/cell_seeds.py --cells bijection:lstm bijection:mamba --cache DIR1
    OMP_NUM_THREADS=2 python experiments/cell_seeds.py --cells bijection:lstm --cache DIR2 \\
        --out bwt_lite/data/cell_seeds.json --append
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import fields, replace
from pathlib import Path

import torch

from bwt_lite.baselines import evaluate_baselines
from bwt_lite.cell_seeds import merge_cells
from bwt_lite.checkpoints import load_checkpoint, train_and_save
from bwt_lite.evaluate import evaluate
from bwt_lite.reproduce import HMM_MAX_WINDOW, MAX_WINDOW, cell_preset, median_seed, realises, seed_verdict
from bwt_lite.runtime.device import cpu_threads
from bwt_lite.store.checkpoint import find_checkpoint
from bwt_lite.store.files import read_json
from bwt_lite.train_config import TrainConfig
from bwt_lite.tunnels import make_tunnel

from _common import parser, shown_args, smoke, write


def threads_of_or_none(meta: dict) -> int | None:
    """The CPU thread count a checkpoint was trained with (its ``trained_on.device_name``), if it says."""
    return cpu_threads((meta.get("trained_on") or {}).get("device_name", ""))


def threads_of(meta: dict) -> int:
    """The CPU thread count a checkpoint was trained with (its ``trained_on.device_name``)."""
    n = threads_of_or_none(meta)
    if n is None:
        raise ValueError(f"{meta.get('name')}: no CPU thread count recorded in trained_on")
    return n


def parse_change(text: str | None) -> dict:
    """``"lr=2e-3,decay_steps=0"`` -> ``{"lr": 0.002, "decay_steps": 0}``: training fields of the recipe to change
    (each converted to the type of its default), so that a candidate recipe is judged on the same seeds. A
    curriculum's tunnel arguments are NAME:VALUE pairs joined by "+": ``easy_steps=2000,easy_tunnel=sharpen:3``
    (``easy_steps=0,easy_tunnel=none``: a recipe's curriculum taken away)."""
    if not text:
        return {}
    defaults = TrainConfig()
    change = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name not in {f.name for f in fields(TrainConfig)} or name == "seed" or not value:
            raise SystemExit(f"--change: {item!r} is not NAME=VALUE with NAME a training field other than seed "
                             f"({', '.join(f.name for f in fields(TrainConfig) if f.name != 'seed')})")
        if name == "easy_tunnel":  # "none": no curriculum (with easy_steps=0)
            change[name] = () if value == "none" else tuple(
                (k, float(v)) for k, _, v in (pair.partition(":") for pair in value.split("+")))
        else:
            change[name] = type(getattr(defaults, name))(value)
    return change


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "cell_seeds.json")
    p.add_argument("--cells", nargs="+", required=True, help="tunnel:arch, e.g. bijection:lstm hmm-slow:mamba")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--cache", type=Path, required=True, help="checkpoint cache of these runs (one per thread count)")
    p.add_argument("--append", action="store_true", help="add these cells to those already in --out")
    p.add_argument("--change", default=None, help="a candidate recipe: training fields changed, e.g. lr=2e-3,ema=0")
    p.add_argument("--alibi", action="store_true",
                   help="a candidate recipe: ALiBi's recency bias on the learned position table (transformer)")
    args = p.parse_args(argv)
    change = parse_change(args.change)
    os.environ["BWT_CACHE_DIR"] = str(args.cache)  # where find_checkpoint looks first
    cells = []
    for spec in args.cells:
        tunnel, _, arch = spec.partition(":")
        base = cell_preset(tunnel, arch, "lite")
        base = replace(base, train=replace(base.train, **smoke(change, args.steps)))
        if args.alibi:
            base = replace(base, model=replace(base.model, alibi=True))  # the name gets "-alibi"
        windows = MAX_WINDOW.get(tunnel, HMM_MAX_WINDOW)
        bases = {name: {k: r.to_dict()[k] for k in ("entropy_mae_bits", "kl_bits", "accuracy")} for name, r in
                 evaluate_baselines(make_tunnel(**base.tunnel), episodes=args.episodes, max_window=windows).items()}
        runs = []
        for seed in args.seeds:
            preset = replace(base, train=replace(base.train, seed=seed))
            found = find_checkpoint(preset)  # the cache, then the shipped checkpoints (the recipe's seed)
            threads = None if found is None else threads_of_or_none(read_json(found / "checkpoint.json"))
            if found is not None and threads != torch.get_num_threads():  # e.g. the shipped one-thread run
                print(f"{preset.name} seed {seed}: {found} was trained at {threads or 'an unrecorded number of'} "
                      f"thread(s), not {torch.get_num_threads()}; training it again into {args.cache}")
                found = None
            model, meta = load_checkpoint(found, preset) if found else train_and_save(
                preset, progress=False, root=args.cache, log=print)
            res = evaluate(model, make_tunnel(**preset.tunnel), episodes=args.episodes)
            run = {"seed": seed, "entropy_mae_bits": res.entropy_mae_bits, "kl_bits": res.kl_bits,
                   "accuracy": res.accuracy, "train_time_s": meta["train_time_s"], "threads": threads_of(meta)}
            run["realises"] = bool(realises(tunnel, run, bases))
            runs.append(run)
        threads = {r["threads"] for r in runs}
        if len(threads) != 1:
            raise SystemExit(f"{spec}: seeds trained at different thread counts {sorted(threads)}; "
                             "use one --cache per count")
        cells.append({"tunnel": tunnel, "arch": arch, "name": base.name, "change": args.change or "", "baselines": bases,
                      "threads": threads.pop(), "steps": base.train.steps,
                      "batch_size": base.train.batch_size, "train_episodes": base.train.steps * base.train.batch_size,
                      "realises": bool(seed_verdict(r["realises"] for r in runs)),
                      "realised_seeds": sum(r["realises"] for r in runs),
                      "median_seed": median_seed(tunnel, runs)["seed"], "seeds": runs})
        print(f"{spec} at {cells[-1]['threads']} thread(s): " + ", ".join(
            f"seed {r['seed']} {r['entropy_mae_bits']:.4f}{' realises' if r['realises'] else ''}" for r in runs))
    words = shown_args(argv if argv is not None else sys.argv[1:], dirs=("--cache", "--root"), files=("--out",))
    trained_at = ",".join(str(t) for t in sorted({c["threads"] for c in cells}))  # the training thread count
    command = f"OMP_NUM_THREADS={trained_at} python experiments/cell_seeds.py " + " ".join(words)
    out = {"episodes": args.episodes, "commands": [command], "cells": cells}
    if args.append and args.out.exists():
        old = json.loads(args.out.read_text())
        if old["episodes"] != args.episodes:
            raise SystemExit(f"{args.out} scored {old['episodes']} episodes, not {args.episodes}")
        out = {"episodes": args.episodes, "commands": old["commands"] + [command],
               "cells": merge_cells(old["cells"], cells)}
    write(args.out, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
