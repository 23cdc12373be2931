"""``bwt train``, ``eval``, ``episode`` and ``info``: one preset or one tunnel at a time."""
from __future__ import annotations

import argparse
import contextlib
import json
from typing import Any

import torch

from ..checkpoints import load_or_train, train_and_save
from ..evaluate import evaluate
from ..metrics import entropy_bits, gaussian_entropy_bits
from ..models import build_model
from ..paper import paper_value
from ..recipes import Preset, resolve_tunnel_args
from ..store.cache import checkpoint_dir
from ..store.checkpoint import find_checkpoint
from ..tunnels import TUNNELS, make_tunnel
from .cache import check_cache_dir, check_cache_readable
from .common import (check_paper_on_cpu, log_line, preset_from_args, print_estimates, resumable, run_from_args,
                     would_train)
from .options import UNTABLED_LENGTH_FACTOR, check_variant


def cmd_train(args: argparse.Namespace) -> int:
    preset = preset_from_args(args)
    on_cpu = check_paper_on_cpu(args, [preset])
    check_cache_dir()
    print_estimates(args, on_cpu, fresh=args.fresh)
    with resumable(args, preset):
        model, meta = train_and_save(preset, run=run_from_args(args), fresh=args.fresh, log=log_line)
    last = meta["history"][-1] if meta["history"] else {}
    rate = meta["train_steps"] / meta["train_time_s"] if meta["train_time_s"] > 0 else float("nan")
    print(f"{preset.name}: {meta['train_steps']} steps in {meta['train_time_s']:.1f} s ({rate:.1f} steps/s), "
          f"entropy MAE {last.get('entropy_mae_bits', float('nan')):.4f} bits "
          f"(on {preset.train.eval_episodes} held-out episodes); saved to {checkpoint_dir(preset)}")
    return 0


def eval_tunnel(preset: Preset, length: int | None = None):
    """The preset's tunnel, optionally at another episode length (length generalisation).

    Raises ValueError naming ``--length`` when the tunnel or its variant has no episode length (recall's
    ``mqar`` variant: its length is set by ``n_pairs``, ``gap`` and ``n_queries``, and ``L`` is not part
    of its configuration), when the tunnel refuses the length, or when the episodes would not fit the
    model's learned position table (with the other position schemes: episodes of at most
    :data:`UNTABLED_LENGTH_FACTOR` times its rows in tokens). Nothing is loaded: this runs before the model is.
    """
    args = dict(preset.tunnel)
    if length is None:
        return make_tunnel(**args)
    name = args["tunnel"]
    arg = TUNNELS[name].length_arg
    if arg is None or arg not in args:  # the variant's configuration has no length parameter
        others = ", ".join(k for k in args if k not in ("tunnel", "variant"))
        raise ValueError(f"--length is not supported by tunnel {name!r}, variant {args.get('variant')!r} "
                         f"(its episodes are set by {others})")
    try:
        tunnel = make_tunnel(**{**args, arg: length})
    except (TypeError, ValueError) as e:
        raise ValueError(f"--length {length}: {e}") from None
    learned = preset.model.positions == "learned"
    rows = preset.model.n_positions * (1 if learned else UNTABLED_LENGTH_FACTOR)
    if tunnel.seq_len > rows:
        # an episode has at least one token per unit of length: no length past the table's rows fits
        longest = max((n for n in range(1, min(length, rows + 1)) if _fits(args, arg, n, rows)), default=None)
        limit = (f"the model's position table ({rows} rows)" if learned else
                 f"{rows} tokens ({UNTABLED_LENGTH_FACTOR}x the position table's rows, the most evaluated "
                 f"with positions={preset.model.positions!r})")
        raise ValueError(f"--length {length}: episodes of {tunnel.seq_len} tokens exceed {limit}; "
                         f"at most --length {longest} for {preset.name}")
    return tunnel


def _fits(args: dict[str, Any], arg: str, length: int, rows: int) -> bool:
    try:
        return make_tunnel(**{**args, arg: length}).seq_len <= rows
    except (TypeError, ValueError):
        return False


def cmd_eval(args: argparse.Namespace) -> int:
    preset = preset_from_args(args)
    tunnel = eval_tunnel(preset, args.length)
    trains = would_train(preset, download=not args.no_download)
    on_cpu = check_paper_on_cpu(args, [preset] if trains else [])
    if find_checkpoint(preset) is None:  # it will be downloaded or trained into the cache
        check_cache_dir()
    print_estimates(args, on_cpu)
    with resumable(args, preset) if trains else contextlib.nullcontext():
        model, meta = load_or_train(preset, run=run_from_args(args), log=log_line, download=not args.no_download)
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
    out.update(tunnel.episode_fields(ep))
    return out


def cmd_episode(args: argparse.Namespace) -> int:
    check_variant(args)
    tunnel = make_tunnel(**resolve_tunnel_args(args.tunnel, args.variant))  # as the recipes train on it
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
    preset = preset_from_args(args)
    check_cache_readable()
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
