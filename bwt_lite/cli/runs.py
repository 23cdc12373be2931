"""The commands that run many presets or a whole experiment: ``bwt ship``, ``bench``, ``bench-scan``,
``em-vs-sgd``, ``reproduce`` and ``claims``."""
from __future__ import annotations

import argparse
import json
import time

import torch

from .. import recipes
from .. import reproduce as cells
from ..checkpoints import train_and_save
from ..claims import report
from ..dynamics import two_timescale
from ..models import ARCHS
from ..recipes import get_preset
from ..orchestration import bench, pool
from ..store.cache import SHIPPED_DIR, checkpoint_dir
from ..store.checkpoint import find_checkpoint
from ..train import format_duration
from .cache import check_cache_dir
from .common import (CommandExit, check_paper_on_cpu, log_line, print_estimates, run_from_args, show_progress,
                     would_train)
from .options import check_jobs_on_cpu, check_scan_size


def cmd_ship(args: argparse.Namespace) -> int:
    """Train the shipped lite checkpoints that are missing into the package's data folder."""
    check_jobs_on_cpu(args)
    todo = []
    for preset in recipes.shipped_presets():
        if args.only and preset.name not in args.only:
            continue
        target = checkpoint_dir(preset, SHIPPED_DIR)
        if (target / "checkpoint.json").exists() and not args.retrain:
            print(f"{preset.name}: shipped ({target.name})")
            continue
        todo.append(preset)
    if todo:
        check_cache_dir(SHIPPED_DIR, "shipped checkpoints folder")
    if args.jobs > 1:
        pool.train_presets(todo, jobs=args.jobs, fresh=args.retrain, root=SHIPPED_DIR, log=log_line)
    for preset in todo:
        target = checkpoint_dir(preset, SHIPPED_DIR)
        if args.jobs > 1:
            meta = json.loads((target / "checkpoint.json").read_text())
        else:
            _, meta = train_and_save(preset, run=run_from_args(args), fresh=args.retrain, log=log_line,
                                     root=SHIPPED_DIR)
        last = meta["history"][-1]
        print(f"{preset.name}: trained in {meta['train_time_s']:.0f} s, entropy MAE "
              f"{last['entropy_mae_bits']:.4f} bits, KL {last['kl_bits']:.4f} bits ({target.name})")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.target is not None and not args.train:
        raise ValueError("--target is the entropy MAE that --train trains to; without --train it is not used")
    if args.train and "paper" in args.scale:  # bench prints each preset's steps/s before it trains
        check_paper_on_cpu(args, [get_preset("bijection", "transformer", "paper")])
    result = bench.run(scales=args.scale, tunnels=args.tunnels, archs=args.archs, device=args.device, amp=args.amp,
                       compile_model=args.compile, train=args.train, target_bits=args.target, repeat=args.repeat,
                       progress=show_progress(args), log=log_line, threads=args.threads,
                       variants=not args.no_variants)
    print(json.dumps(result) if args.json else bench.format_table(result))
    return 0


def cmd_em_vs_sgd(args: argparse.Namespace) -> int:
    """Paper II's two-timescale experiment on the sticky chain: per-seed steps and the speedup."""
    # the upper bounds are checked by the parser; the lower ones here, one message for both options
    if args.seeds < 1 or args.steps < 1:
        raise ValueError(f"--seeds and --steps must be >= 1, got {args.seeds} and {args.steps}")
    config = two_timescale.EMConfig(seeds=args.seeds, steps=args.steps, controls=args.controls)
    res = two_timescale.em_vs_sgd(config)
    out = res.to_dict()
    if args.json:
        print(json.dumps(out))
        return 0
    paper = out["paper"]
    print(f"single head ({res.n_params} parameters) on the sticky chain, {args.seeds} seed(s), {args.steps} full-batch "
          f"steps, lr {res.config['lr']:g}; losses on held-out sequences (nats)")
    print(f"  Bayes floor: {res.row_floor:.3f} with perfectly identified symbols; held-out exact predictive "
          f"entropy {sum(res.bayes_entropy) / len(res.bayes_entropy):.4f}")
    for arm in res.arms:
        steps = ", ".join("not reached" if n is None else str(n) for n in res.steps_to_sgd_final[arm])
        finals = ", ".join(f"{v:.4f}" for v in out["final_held_out_loss"][arm])
        print(f"  {arm:>12}: steps to SGD's final loss [{steps}] | final loss [{finals}]")
    for arm, summ in out["summary"].items():
        per_seed = ", ".join(f"{v:.2f}" for v in res.speedup[arm])
        ci = "" if summ["low"] != summ["low"] else f", 95% CI [{summ['low']:.2f}, {summ['high']:.2f}]"
        print(f"  speedup of {arm}: mean {summ['mean']:.2f}x{ci} (per seed {per_seed})")
    print(f"  paper: {paper['speedup']['value']:g}x ({paper['em_steps']['value']:g} vs {paper['sgd_steps']['value']:g} "
          f"steps; {paper['speedup']['note']})")
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    """The claims scorecard from the shipped checkpoints (it never trains)."""
    print(report(device=args.device, fast=args.fast, as_json=args.json, network=args.network,
                 log=None if args.json else log_line))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Every architecture on every primitive's tunnel, our numbers beside the paper's."""
    if args.capacity:
        if args.retrain:
            raise CommandExit(2, "error: --retrain trains nothing with --capacity (it counts parameters); "
                                 "drop one of them")
        rows = cells.capacity_table([args.scale])
        print("\n".join(json.dumps(r) for r in rows) if args.json else cells.format_capacity_table(rows))
        return 0

    check_jobs_on_cpu(args)
    seeds = [None] if args.seeds == 1 else list(range(args.seeds))  # one seed: the recipe's (the shipped checkpoint)
    cell_presets = [cells.cell_preset(t, a, args.scale, s)
                    for t in cells.PRIMITIVE_TUNNELS for a in ARCHS for s in seeds]
    writes = [p for p in cell_presets if args.retrain or find_checkpoint(p) is None]
    on_cpu = check_paper_on_cpu(args, [p for p in writes if args.retrain or would_train(p, not args.no_download)])
    if writes:
        check_cache_dir()
    print_estimates(args, on_cpu, fresh=args.retrain)
    t0 = time.perf_counter()
    rows = cells.reproduce(args.scale, retrain=args.retrain, episodes=args.episodes, seed=args.seed_eval,
                           device=args.device, progress=show_progress(args), download=not args.no_download,
                           jobs=args.jobs, train_seeds=seeds, log=log_line)
    log_line(f"{len(rows)} cells in {format_duration(time.perf_counter() - t0)}")
    print("\n".join(json.dumps(r) for r in rows) if args.json else cells.format_primitives_table(rows))
    return 0


def cmd_bench_scan(args: argparse.Namespace) -> int:
    """Mamba's selective scans (sequential, parallel, stepwise), forward + backward, ms per call."""
    check_scan_size(args)
    rows = bench.benchmark_scan(tuple(args.lengths), batch=args.batch, d_inner=args.d_inner, repeat=args.repeat)
    if args.json:
        print(json.dumps(rows))
    else:
        print(f"selective scan, forward + backward, batch {args.batch}, d_inner {args.d_inner}, "
              f"{torch.get_num_threads()} thread(s); median (min-max) of {args.repeat} calls")
        print(bench.format_scan_benchmark(rows))
    return 0
