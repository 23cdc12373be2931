"""The ``bwt`` argument parser: one helper per command, each naming the function that runs it."""
from __future__ import annotations

import argparse

import torch

from ..models import ARCHS, POSITIONS
from ..recipes import DEPTHS, SCALES
from ..runtime.device import AMP_MODES
from ..train import TARGET_MODES
from ..tunnels import TUNNELS
from ..version import __version__
from .cache import cmd_cache
from .options import (MAX_EM_SEEDS, MAX_EM_STEPS, MAX_EPISODES, MAX_JOBS, MAX_LENGTH, MAX_REPEAT, MAX_STEPS,
                      MAX_TRAIN_SEEDS, SCAN_MAX, SCAN_MAX_ELEMENTS, device_arg, finite_nonneg_float,
                      finite_positive_float, int_range, jobs_int, positive_int, seed_int, shipped_preset_name)
from .runs import cmd_bench, cmd_bench_scan, cmd_claims, cmd_em_vs_sgd, cmd_reproduce, cmd_ship
from .train_eval import cmd_episode, cmd_eval, cmd_info, cmd_train

EPISODES_HELP = f"held-out episodes, 1 to {MAX_EPISODES:,}"


# ------------------------------------------------------------------------------------------------
# Options shared by several commands

# Each tunnel's variants, read from its class so a new tunnel or variant is listed without editing this file.
VARIANTS_HELP = "; ".join(f"{name}: {', '.join(cls.variants)}" for name, cls in sorted(TUNNELS.items())
                          if len(cls.variants) > 1)


def preset_args(sp: argparse.ArgumentParser, seed_help: str = "training seed") -> None:
    """The options that name a preset (they all enter its checkpoint key)."""
    sp.add_argument("tunnel", choices=sorted(TUNNELS))
    sp.add_argument("arch", choices=ARCHS)
    sp.add_argument("--scale", choices=SCALES, default="lite")
    sp.add_argument("--variant", default=None, help=f"tunnel variant ({VARIANTS_HELP})")
    sp.add_argument("--horizon", type=int_range(1, 10_000), default=None,
                    help="loss horizon K: the training loss only on the predictions of x_1 .. x_K (recurrence "
                         "only; evaluation scores every position)")
    sp.add_argument("--train-length", dest="train_length", type=int_range(2, 10_000), default=None,
                    help="train on episodes of this length instead of the tunnel's default (its length "
                         "argument: L, K or N; e.g. recurrence --train-length 8 --positions sinusoidal)")
    sp.add_argument("--depth", choices=DEPTHS, default="default",
                    help="paper: the lite model with the paper's number of layers (bijection and HMM transformers)")
    sp.add_argument("--positions", choices=POSITIONS, default="learned",
                    help="position scheme: learned table (default), fixed sinusoidal table, rotary in attention "
                         "(transformer only), alibi (a linear recency bias on attention scores; transformer "
                         "only), or none")
    sp.add_argument("--alibi", action=argparse.BooleanOptionalAction, default=None,
                    help="add (or, --no-alibi, leave out) ALiBi's recency bias in attention on the learned position "
                         "table (transformer only; default: the recipe's, on for the lite recall transformer)")
    sp.add_argument("--steps", type=int_range(1, MAX_STEPS), default=None,
                    help=f"training steps, 1 to {MAX_STEPS:,} (default: the preset's)")
    sp.add_argument("--seed", type=seed_int, default=None, help=f"{seed_help}, 0 to 2**63 - 1")
    sp.add_argument("--target", choices=TARGET_MODES, default=None,
                    help="sampled answers (default, the paper's objective) or the exact posterior (soft)")


def run_args(sp: argparse.ArgumentParser, device: str = "auto", paper: bool = True) -> None:
    """Where a command that may train runs, and whether it shows a progress bar."""
    sp.add_argument("--device", type=device_arg, default=device,
                    help=f"auto (the GPU when visible), cpu, cuda, cuda:1... (default {device})")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    if paper:
        sp.add_argument("--allow-cpu-paper", action="store_true",
                        help="train a paper preset on a CPU anyway (days); the estimated time is printed first")


def speed_args(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--amp", choices=AMP_MODES, default="auto",
                    help="mixed precision: auto (bf16 or fp16 on CUDA, off on CPU), bf16, fp16, off")
    sp.add_argument("--compile", action="store_true", help="torch.compile the model for training")


# ------------------------------------------------------------------------------------------------
# One helper per command


def add_train(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("train", help="train a preset into the cache (resumes an interrupted run)")
    preset_args(sp)
    run_args(sp)
    sp.add_argument("--fresh", action="store_true", help="ignore any saved partial run and start over")
    sp.add_argument("--ckpt-every", type=positive_int, default=500, help="steps between resumable checkpoints (>= 1)")
    sp.add_argument("--log-every", type=finite_nonneg_float, default=60.0,
                    help="seconds between progress lines (steps/s, time left) when no progress bar is shown (>= 0)")
    speed_args(sp)
    sp.set_defaults(func=cmd_train)


def add_eval(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("eval", help="evaluate a preset on held-out episodes (trains it if missing)")
    preset_args(sp, seed_help="training seed of the preset to evaluate")
    run_args(sp)
    sp.add_argument("--episodes", type=int_range(1, MAX_EPISODES), default=2048, help=f"{EPISODES_HELP} (default 2048)")
    sp.add_argument("--eval-seed", dest="seed_eval", type=seed_int, default=0,
                    help="seed of the held-out episodes, 0 to 2**63 - 1")
    sp.add_argument("--length", type=int_range(1, MAX_LENGTH), default=None,
                    help="evaluate at another episode length (hmm: K, bijection/recall: L, regression: N), "
                         "within the model's position table (other --positions: 4x its rows in tokens)")
    sp.add_argument("--no-download", action="store_true", help="never download a hosted checkpoint; train instead")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_eval)


def add_episode_and_info(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("episode", help="one sampled episode with its exact posterior (the tunnel the recipes "
                                        "train on: a variant's own sizes, e.g. the slow HMM's 3 states over 30 steps)")
    sp.add_argument("tunnel", choices=sorted(TUNNELS))
    sp.add_argument("--seed", type=seed_int, default=0, help="0 to 2**63 - 1")
    sp.add_argument("--variant", default=None, help=f"tunnel variant ({VARIANTS_HELP})")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_episode)

    sp = sub.add_parser("info", help="a preset's configuration and exact parameter count")
    preset_args(sp)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_info)


def add_bench(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("bench", help="benchmarks on this device (episodes/s, steps/s per architecture and scale, time to target)")
    sp.add_argument("--scale", nargs="+", choices=SCALES, default=list(SCALES))
    sp.add_argument("--tunnels", nargs="+", choices=sorted(TUNNELS), default=None, help="default: every tunnel with presets")
    sp.add_argument("--archs", nargs="+", choices=ARCHS, default=None, help="default: every architecture")
    run_args(sp)
    speed_args(sp)
    sp.add_argument("--repeat", type=int_range(1, MAX_REPEAT), default=None,
                    help=f"timed steps per preset, 1 to {MAX_REPEAT:,} (default: 50 GPU; CPU 20 lite, 3 paper)")
    sp.add_argument("--train", action="store_true", help="also train the bijection transformer until it reaches the target")
    sp.add_argument("--target", type=finite_positive_float, default=None,
                    help="with --train: entropy MAE target in bits, > 0 (default 0.02 lite, 0.01 paper)")
    sp.add_argument("--threads", nargs="+", type=int_range(1, 1024), default=None,
                    help="CPU threads to time every preset at (default: 1 and 2 on a CPU)")
    sp.add_argument("--no-variants", action="store_true", help="skip the Mamba scan and attention variants")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_bench)


def add_ship(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("ship", help="train the lite checkpoints shipped with the package (maintainers)")
    sp.add_argument("--only", nargs="*", type=shipped_preset_name, default=None,
                    help="shipped preset names, e.g. hmm-transformer-lite-soft")
    sp.add_argument("--retrain", action="store_true", help="retrain even if shipped")
    run_args(sp, device="cpu", paper=False)
    sp.add_argument("--jobs", type=jobs_int, default=1,
                    help=f"presets trained at once on the CPU, each in its own process "
                         f"(1 to {MAX_JOBS}, the CPU cores)")
    sp.set_defaults(func=cmd_ship)


def add_em_vs_sgd(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("em-vs-sgd", help="Paper II: plain SGD against 10x value learning rate (single head, sticky chain)")
    sp.add_argument("--seeds", type=int_range(None, MAX_EM_SEEDS), default=5,
                    help=f"seeds, 1 to {MAX_EM_SEEDS:,} (each its own init, training and held-out data)")
    sp.add_argument("--steps", type=int_range(None, MAX_EM_STEPS), default=1000,
                    help=f"full-batch steps per run, 1 to {MAX_EM_STEPS:,}")
    sp.add_argument("--controls", action="store_true", help="also 10x on the readout, and on the query/key weights")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_em_vs_sgd)


def add_bench_scan(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("bench-scan", help="Mamba's sequential, parallel and stepwise scans timed on this CPU")
    sp.add_argument("--lengths", type=int_range(1, SCAN_MAX["lengths"]), nargs="+", default=[16, 32, 64, 128, 256],
                    help=f"sequence lengths, each 1 to {SCAN_MAX['lengths']:,}")
    sp.add_argument("--batch", type=int_range(1, SCAN_MAX["batch"]), default=16, help=f"1 to {SCAN_MAX['batch']:,}")
    sp.add_argument("--d-inner", dest="d_inner", type=int_range(1, SCAN_MAX["d_inner"]), default=64,
                    help=f"channels (2 x d_model in a block), 1 to {SCAN_MAX['d_inner']:,}; batch x longest length "
                         f"x d-inner at most {SCAN_MAX_ELEMENTS:,}")
    sp.add_argument("--repeat", type=int_range(1, MAX_REPEAT), default=7,
                    help=f"timed calls per method, 1 to {MAX_REPEAT:,} (median, min and max are shown)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_bench_scan)


def add_reproduce(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("reproduce", help="the primitives table: every architecture on every tunnel, beside the paper")
    sp.add_argument("--scale", choices=SCALES, default="lite")
    sp.add_argument("--retrain", action="store_true", help="train every cell afresh (default: only the missing ones)")
    sp.add_argument("--episodes", type=int_range(1, MAX_EPISODES), default=2048,
                    help=f"{EPISODES_HELP} per cell (default 2048)")
    sp.add_argument("--eval-seed", dest="seed_eval", type=seed_int, default=0,
                    help="seed of the held-out episodes, 0 to 2**63 - 1")
    sp.add_argument("--capacity", action="store_true", help="only the parameter counts and how they were matched")
    sp.add_argument("--seeds", type=int_range(1, MAX_TRAIN_SEEDS), default=1,
                    help=f"training seeds per cell, 1 to {MAX_TRAIN_SEEDS} (seeds 0..N-1; a cell realises its "
                         "primitive when 4 of 5 seeds do; the median seed's numbers are printed)")
    run_args(sp)
    sp.add_argument("--no-download", action="store_true", help="train instead of downloading hosted checkpoints")
    sp.add_argument("--jobs", type=jobs_int, default=1,
                    help=f"cells trained at once on the CPU, each in its own process (1 to {MAX_JOBS}, the CPU cores)")
    sp.add_argument("--json", action="store_true", help="one JSON object per cell, one per line")
    sp.set_defaults(func=cmd_reproduce)


def add_claims_and_cache(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("claims", help="the papers' claims, each with the paper's value, ours and a verdict")
    sp.add_argument("--fast", action="store_true", help="small episode counts and seeds (seconds; for a quick look)")
    sp.add_argument("--network", action="store_true",
                    help="let the Paper III claims download their pretrained model (otherwise: not testable here)")
    sp.add_argument("--device", type=device_arg, default="cpu", help="cpu (default), cuda, cuda:1...")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_claims)

    sp = sub.add_parser("cache", help="where checkpoints are cached; list or clear them")
    sp.add_argument("action", choices=("path", "list", "clear"))
    sp.set_defaults(func=cmd_cache)


COMMANDS = (add_train, add_eval, add_episode_and_info, add_bench, add_ship, add_em_vs_sgd, add_bench_scan, add_reproduce,
            add_claims_and_cache)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command, in the order ``bwt --help`` lists them."""
    p = argparse.ArgumentParser(prog="bwt", description="Bayesian wind tunnels: train, evaluate, inspect.")
    p.add_argument("--version", action="version", version=f"bwt_lite {__version__} (torch {torch.__version__})")
    sub = p.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return p
