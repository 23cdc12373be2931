"""The ``bwt`` command line: train, evaluate, inspect episodes and presets, manage the cache."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from typing import Any, Sequence

import torch

from .checkpoints import CheckpointError, cache_dir, checkpoint_dir, find_checkpoint, load_or_train, train_and_save
from .device import AMP_MODES
from .evaluate import evaluate
from .metrics import entropy_bits, gaussian_entropy_bits
from .models import ARCHS, build_model
from .paper import paper_value
from .presets import SCALES, Preset, get_preset
from .train import TARGET_MODES, format_duration
from .tunnels import TUNNELS, make_tunnel


def _preset(args: argparse.Namespace) -> Preset:
    overrides: dict[str, Any] = {}
    for name in ("steps", "seed", "target"):
        if getattr(args, name, None) is not None:
            overrides[name] = getattr(args, name)
    return get_preset(args.tunnel, args.arch, args.scale, variant=args.variant, **overrides)


def _progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def _log(msg: str) -> None:
    print(msg, file=sys.stderr)


def cmd_train(args: argparse.Namespace) -> int:
    preset = _preset(args)
    model, meta = train_and_save(preset, progress=_progress(args), device=args.device,
                                 fresh=args.fresh, ckpt_every=args.ckpt_every, log=_log, amp=args.amp,
                                 compile_model=args.compile, log_every_s=args.log_every)
    last = meta["history"][-1] if meta["history"] else {}
    rate = meta["train_steps"] / meta["train_time_s"] if meta["train_time_s"] > 0 else float("nan")
    print(f"{preset.name}: {meta['train_steps']} steps in {meta['train_time_s']:.1f} s ({rate:.1f} steps/s), "
          f"entropy MAE {last.get('entropy_mae_bits', float('nan')):.4f} bits "
          f"(on {preset.train.eval_episodes} held-out episodes); saved to {checkpoint_dir(preset)}")
    return 0


def eval_tunnel(preset: Preset, length: int | None = None):
    """The preset's tunnel, optionally at another episode length (length generalisation)."""
    args = dict(preset.tunnel)
    if length is not None:
        name = args["tunnel"]
        arg = TUNNELS[name].length_arg
        if arg is None:
            raise ValueError(f"--length is not supported by tunnel {name!r}")
        args[arg] = length
    return make_tunnel(**args)


def cmd_eval(args: argparse.Namespace) -> int:
    preset = _preset(args)
    tunnel = eval_tunnel(preset, args.length)
    model, meta = load_or_train(preset, progress=_progress(args), device=args.device, log=_log,
                                download=not args.no_download)
    res = evaluate(model, tunnel, episodes=args.episodes, seed=args.seed_eval)
    paper = paper_value(preset.tunnel["tunnel"], preset.model.arch)
    out = {
        "tunnel": preset.tunnel["tunnel"], "arch": preset.model.arch, "scale": preset.scale,
        "variant": preset.tunnel.get("variant"), "target": preset.train.target,
        "params": model.n_params, "train_steps": meta["train_steps"], "eval_seed": args.seed_eval,
        "eval_tunnel": tunnel.config(),
        **res.to_dict(), "paper_value": paper.value if paper else None,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{preset.name} ({out['params']:,} parameters, {out['train_steps']} steps, {preset.train.target} targets)")
        print(f"  on {tunnel!r}, {res.episodes} held-out episodes:")
        extra = "" if res.tv is None else f" | TV {res.tv:.4f}"
        extra += "" if res.accuracy is None else f" | accuracy {res.accuracy:.3f}"
        print(f"  entropy MAE {res.entropy_mae_bits:.4f} bits | KL {res.kl_bits:.4f} bits{extra}")
        if paper:
            print(f"  paper: {paper.value} {paper.unit} ({paper.source}; {paper.note})")
    return 0


def episode_json(tunnel, seed: int) -> dict[str, Any]:
    """One sampled episode with its exact answer at every prediction position, as plain JSON."""
    ep = tunnel.sample(1, torch.Generator().manual_seed(seed))
    out: dict[str, Any] = {**tunnel.config(), "seed": seed, "positions": ep.positions.tolist(),
                           "target": ep.target[0].tolist()}
    if ep.probs is None:  # Gaussian tunnel: float inputs, exact predictive mean and variance
        x, y = tunnel.split_inputs(ep)
        out.update({"x": x[0].tolist(), "y": y[0].tolist(), "inputs": ep.inputs[0].tolist(),
                    "mean": ep.mean[0].tolist(), "var": ep.var[0].tolist(),
                    "entropy_bits": gaussian_entropy_bits(ep.var[0]).tolist()})
    else:
        out.update({"tokens": ep.inputs[0].tolist(),
                    "answer_tokens": list(tunnel.answer_tokens) if tunnel.answer_tokens is not None else None,
                    "posterior": ep.probs[0].tolist(), "entropy_bits": entropy_bits(ep.probs[0]).tolist()})
    return out


def cmd_episode(args: argparse.Namespace) -> int:
    kwargs = {} if args.variant is None else {"variant": args.variant}
    tunnel = make_tunnel(args.tunnel, **kwargs)
    out = episode_json(tunnel, args.seed)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{tunnel!r}, seed {args.seed}")
        print("tokens:" if "tokens" in out else "inputs:", out.get("tokens", out.get("inputs")))
        for pos, ans, h in zip(out["positions"], out["target"], out["entropy_bits"]):
            print(f"  position {pos:3d}: answer {ans:8.3f}" if isinstance(ans, float) else
                  f"  position {pos:3d}: answer class {ans:3d}", f"Bayes entropy {h:.4f} bits")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    preset = _preset(args)
    with torch.device("meta"):
        n_params = build_model(preset.model).n_params
    found = find_checkpoint(preset)
    out = {"name": preset.name, "key": preset.key(), **preset.to_dict(), "params": n_params,
           "checkpoint": str(found) if found else None}
    if args.json:
        print(json.dumps(out))
    else:
        print(json.dumps(out, indent=2))
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    root = cache_dir()
    if args.action == "path":
        print(root)
    elif args.action == "list":
        for d in sorted(root.glob("*/")) if root.exists() else []:
            state = "complete" if (d / "checkpoint.json").exists() else "partial (resumable)"
            print(f"{d.name}  {state}")
    elif args.action == "clear":
        shutil.rmtree(root, ignore_errors=True)
        print(f"removed {root}")
    return 0


def cmd_ship(args: argparse.Namespace) -> int:
    """Train the shipped lite checkpoints that are missing into the package's data folder."""
    from .checkpoints import SHIPPED_DIR
    from .presets import shipped_presets

    from .train_pool import train_presets

    todo = []
    for preset in shipped_presets():
        if args.only and preset.name not in args.only:
            continue
        target = checkpoint_dir(preset, SHIPPED_DIR)
        if (target / "checkpoint.json").exists() and not args.retrain:
            print(f"{preset.name}: shipped ({target.name})")
            continue
        todo.append(preset)
    if args.jobs > 1:
        train_presets(todo, jobs=args.jobs, fresh=args.retrain, root=SHIPPED_DIR, log=_log)
    for preset in todo:
        target = checkpoint_dir(preset, SHIPPED_DIR)
        if args.jobs > 1:
            meta = json.loads((target / "checkpoint.json").read_text())
        else:
            _, meta = train_and_save(preset, progress=_progress(args), device=args.device, fresh=args.retrain,
                                     log=_log, root=SHIPPED_DIR)
        last = meta["history"][-1]
        print(f"{preset.name}: trained in {meta['train_time_s']:.0f} s, entropy MAE "
              f"{last['entropy_mae_bits']:.4f} bits, KL {last['kl_bits']:.4f} bits ({target.name})")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import format_table, run

    result = run(scales=args.scale, tunnels=args.tunnels, archs=args.archs, device=args.device, amp=args.amp,
                 compile_model=args.compile, train=args.train, target_bits=args.target, repeat=args.repeat,
                 progress=_progress(args), log=_log)
    print(json.dumps(result) if args.json else format_table(result))
    return 0


def cmd_em_vs_sgd(args: argparse.Namespace) -> int:
    """Paper II's two-timescale experiment on the sticky chain: per-seed steps and the speedup."""
    from .em import EMConfig, em_vs_sgd

    if args.seeds < 1 or args.steps < 1:
        raise ValueError(f"--seeds and --steps must be >= 1, got {args.seeds} and {args.steps}")
    res = em_vs_sgd(EMConfig(seeds=args.seeds, steps=args.steps, controls=args.controls))
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


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Every architecture on every primitive's tunnel, our numbers beside the paper's."""
    from .reproduce import capacity_table, format_capacity_table, format_primitives_table, reproduce

    if args.capacity:
        rows = capacity_table([args.scale])
        print("\n".join(json.dumps(r) for r in rows) if args.json else format_capacity_table(rows))
        return 0
    t0 = time.perf_counter()
    rows = reproduce(args.scale, retrain=args.retrain, episodes=args.episodes, seed=args.seed_eval,
                     device=args.device, progress=_progress(args), download=not args.no_download, jobs=args.jobs,
                     log=_log)
    _log(f"{len(rows)} cells in {format_duration(time.perf_counter() - t0)}")
    print("\n".join(json.dumps(r) for r in rows) if args.json else format_primitives_table(rows))
    return 0


def cmd_bench_scan(args: argparse.Namespace) -> int:
    """Mamba's selective scans (sequential, parallel, stepwise), forward + backward, ms per call."""
    from .models.mamba import benchmark_scan, format_scan_benchmark

    rows = benchmark_scan(tuple(args.lengths), batch=args.batch, d_inner=args.d_inner, repeat=args.repeat)
    if args.json:
        print(json.dumps(rows))
    else:
        print(f"selective scan, forward + backward, batch {args.batch}, d_inner {args.d_inner}, "
              f"{torch.get_num_threads()} thread(s); fastest of {args.repeat} calls")
        print(format_scan_benchmark(rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bwt", description="Bayesian wind tunnels: train, evaluate, inspect.")
    sub = p.add_subparsers(dest="command", required=True)

    def model_args(sp: argparse.ArgumentParser, seed_help: str = "training seed") -> None:
        sp.add_argument("tunnel", choices=sorted(TUNNELS))
        sp.add_argument("arch", choices=ARCHS)
        sp.add_argument("--scale", choices=SCALES, default="lite")
        sp.add_argument("--variant", default=None, help="tunnel variant (bijection: separate, paired, replacement; recall: default, mqar)")
        sp.add_argument("--steps", type=int, default=None, help="training steps (default: the preset's)")
        sp.add_argument("--seed", type=int, default=None, help=seed_help)
        sp.add_argument("--target", choices=TARGET_MODES, default=None,
                        help="sampled answers (default, the paper's objective) or the exact posterior (soft)")
        sp.add_argument("--device", default="auto", help="auto (the GPU when visible), cpu, cuda, cuda:1...")
        sp.add_argument("--no-progress", action="store_true", help="no progress bar")

    def speed_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--amp", choices=AMP_MODES, default="auto",
                        help="mixed precision: auto (bf16 or fp16 on CUDA, off on CPU), bf16, fp16, off")
        sp.add_argument("--compile", action="store_true", help="torch.compile the model for training")

    sp = sub.add_parser("train", help="train a preset into the cache (resumes an interrupted run)")
    model_args(sp)
    sp.add_argument("--fresh", action="store_true", help="ignore any saved partial run and start over")
    sp.add_argument("--ckpt-every", type=int, default=500, help="steps between resumable checkpoints")
    sp.add_argument("--log-every", type=float, default=60.0,
                    help="seconds between progress lines (steps/s, time left) when no progress bar is shown")
    speed_args(sp)
    sp.set_defaults(func=cmd_train)

    sp = sub.add_parser("eval", help="evaluate a preset on held-out episodes (trains it if missing)")
    model_args(sp, seed_help="training seed of the preset to evaluate")
    sp.add_argument("--episodes", type=int, default=2048)
    sp.add_argument("--eval-seed", dest="seed_eval", type=int, default=0, help="seed of the held-out episodes")
    sp.add_argument("--length", type=int, default=None,
                    help="evaluate at another episode length (hmm: K, bijection/recall: L, regression: N)")
    sp.add_argument("--no-download", action="store_true", help="never download a hosted checkpoint; train instead")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_eval)

    sp = sub.add_parser("episode", help="one sampled episode with its exact posterior")
    sp.add_argument("tunnel", choices=sorted(TUNNELS))
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--variant", default=None)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_episode)

    sp = sub.add_parser("info", help="a preset's configuration and exact parameter count")
    model_args(sp)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_info)

    sp = sub.add_parser("bench", help="benchmarks on this device (episodes/s, steps/s per architecture and scale, time to target)")
    sp.add_argument("--scale", nargs="+", choices=SCALES, default=list(SCALES))
    sp.add_argument("--tunnels", nargs="+", choices=sorted(TUNNELS), default=None, help="default: every tunnel with presets")
    sp.add_argument("--archs", nargs="+", choices=ARCHS, default=None, help="default: every architecture")
    sp.add_argument("--device", default="auto")
    speed_args(sp)
    sp.add_argument("--repeat", type=int, default=None, help="timed steps per preset (default: 50 GPU; CPU 20 lite, 3 paper)")
    sp.add_argument("--train", action="store_true", help="also train the bijection transformer until it reaches the target")
    sp.add_argument("--target", type=float, default=None, help="entropy MAE target in bits (default 0.02 lite, 0.01 paper)")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_bench)

    sp = sub.add_parser("ship", help="train the lite checkpoints shipped with the package (maintainers)")
    sp.add_argument("--only", nargs="*", default=None, help="preset names, e.g. hmm-transformer-lite")
    sp.add_argument("--retrain", action="store_true", help="retrain even if shipped")
    sp.add_argument("--device", default="cpu")
    sp.add_argument("--jobs", type=int, default=1, help="presets trained at once on the CPU, each in its own process")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    sp.set_defaults(func=cmd_ship)

    sp = sub.add_parser("em-vs-sgd", help="Paper II: plain SGD against 10x value learning rate (single head, sticky chain)")
    sp.add_argument("--seeds", type=int, default=5, help="seeds (each its own init, training and held-out data)")
    sp.add_argument("--steps", type=int, default=1000, help="full-batch steps per run")
    sp.add_argument("--controls", action="store_true", help="also 10x on the readout, and on the query/key weights")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_em_vs_sgd)

    sp = sub.add_parser("bench-scan", help="Mamba's sequential, parallel and stepwise scans timed on this CPU")
    sp.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    sp.add_argument("--batch", type=int, default=16)
    sp.add_argument("--d-inner", dest="d_inner", type=int, default=64, help="channels (2 x d_model in a block)")
    sp.add_argument("--repeat", type=int, default=7, help="timed calls per method (the fastest is kept)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_bench_scan)

    sp = sub.add_parser("reproduce", help="the primitives table: every architecture on every tunnel, beside the paper")
    sp.add_argument("--scale", choices=SCALES, default="lite")
    sp.add_argument("--retrain", action="store_true", help="train every cell afresh (default: only the missing ones)")
    sp.add_argument("--episodes", type=int, default=2048, help="held-out episodes per cell")
    sp.add_argument("--eval-seed", dest="seed_eval", type=int, default=0, help="seed of the held-out episodes")
    sp.add_argument("--capacity", action="store_true", help="only the parameter counts and how they were matched")
    sp.add_argument("--device", default="auto", help="auto (the GPU when visible), cpu, cuda...")
    sp.add_argument("--no-download", action="store_true", help="train instead of downloading hosted checkpoints")
    sp.add_argument("--jobs", type=int, default=1,
                    help="cells trained at once on the CPU, each in its own process (2 on a 2-core machine)")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    sp.add_argument("--json", action="store_true", help="one JSON object per cell, one per line")
    sp.set_defaults(func=cmd_reproduce)

    sp = sub.add_parser("cache", help="where checkpoints are cached; list or clear them")
    sp.add_argument("action", choices=("path", "list", "clear"))
    sp.set_defaults(func=cmd_cache)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, CheckpointError) as e:
        parser.exit(2, f"bwt: error: {e}\n")


if __name__ == "__main__":
    sys.exit(main())
