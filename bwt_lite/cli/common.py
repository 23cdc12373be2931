"""What the commands share: the one-line exit, the preset named by the options, the paper-on-CPU refusal
with its time estimate, Ctrl-C during training, progress and log lines."""
from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..models.config import ATTENTION_ONLY_POSITIONS
from ..recipes import PAPER_DEPTH_SIZES, Preset, get_preset
from ..orchestration import bench
from ..runtime.device import device_name
from ..runtime.options import RunOptions
from ..store.cache import RESUME, checkpoint_dir
from ..store.checkpoint import find_checkpoint
from ..store.hosted import hosted_checkpoint
from ..train import format_duration
from ..tunnels import TUNNELS
from .options import check_variant


class CommandExit(Exception):
    """End the command with this one-line message and exit code (caught in :func:`main`, no traceback)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def debug_mode() -> bool:
    """``BWT_DEBUG=1``: let errors and interrupts propagate with their traceback (for developers)."""
    return os.environ.get("BWT_DEBUG", "") not in ("", "0")


def resume_step(directory: Path) -> int:
    """The step of the newest periodic training state saved in a checkpoint folder (0: none)."""
    try:
        steps = [p.stem.split("-", 1)[1] for p in (directory / RESUME).glob("step-*.json")]
    except OSError:
        return 0
    return max((int(s) for s in steps if s.isdigit()), default=0)


def check_paper_on_cpu(args: argparse.Namespace, presets: Sequence[Preset]) -> list[Preset]:
    """Training a paper preset on a CPU takes days: refused unless ``--allow-cpu-paper``. Returns the
    paper presets that will train on the CPU (for :func:`print_estimates`)."""
    paper = [p for p in presets if p.scale == "paper"]
    if not paper or args.device.type != "cpu":
        return []
    if not args.allow_cpu_paper:
        names = ", ".join(p.name for p in paper[:2]) + (f" and {len(paper) - 2} more" if len(paper) > 2 else "")
        first = paper[0].train
        raise ValueError(f"--scale paper on a CPU: training {names} ({first.steps:,} steps of {first.batch_size} "
                         f"episodes) takes days here; use a GPU (--device cuda), or pass --allow-cpu-paper to see "
                         f"the estimated time and train anyway")
    return paper


def print_estimates(args: argparse.Namespace, presets: Sequence[Preset], fresh: bool = False) -> None:
    """Time two training steps of each preset here and print how long its (remaining) run would take."""
    total = 0.0
    for p in presets:
        left = p.train.steps - (0 if fresh else resume_step(checkpoint_dir(p)))
        row = bench.steps_per_second(p, args.device, getattr(args, "amp", "auto"), getattr(args, "compile", False),
                                     repeat=2, warmup=0)
        seconds = left * row["ms_per_step"] / 1000.0
        total += seconds
        log_line(f"{p.name}: {row['ms_per_step'] / 1000.0:.2f} s per step on {device_name(args.device)} "
                 f"(2 steps timed); "
                 f"{left:,} steps: about {format_duration(seconds)}, evaluations excluded")
    if len(presets) > 1:
        log_line(f"estimated training time of the {len(presets)} paper presets here: about {format_duration(total)}")


@contextlib.contextmanager
def resumable(args: argparse.Namespace, preset: Preset) -> Iterator[None]:
    """Ctrl-C while ``preset`` trains: say where the run resumes from and exit with 130 (no traceback)."""
    try:
        yield
    except KeyboardInterrupt:
        if debug_mode():
            raise
        again = shlex.join(["bwt", *(a for a in args.argv if a != "--fresh")])
        directory = checkpoint_dir(preset)
        step = resume_step(directory)
        if step:
            msg = f"interrupted; the run resumes from {directory / RESUME} (step {step:,}) on the next '{again}'"
        else:
            msg = f"interrupted before the first periodic checkpoint; the next '{again}' starts over"
        raise CommandExit(130, msg) from None


def would_train(preset: Preset, download: bool) -> bool:
    """Whether loading ``preset`` finds no checkpoint (cache, shipped, or hosted when ``download``) and trains."""
    return find_checkpoint(preset) is None and not (download and hosted_checkpoint(preset) is not None)


def preset_from_args(args: argparse.Namespace) -> Preset:
    check_variant(args)
    overrides: dict[str, Any] = {}
    for name in ("steps", "seed", "target"):
        if getattr(args, name, None) is not None:
            overrides[name] = getattr(args, name)
    depth = getattr(args, "depth", "default")
    if depth != "default" and (args.scale != "lite" or (args.tunnel, args.arch) not in PAPER_DEPTH_SIZES):
        have = ", ".join(f"{t} {a}" for t, a in PAPER_DEPTH_SIZES)
        raise ValueError(f"--depth paper: exists for the lite {have} only")
    positions = getattr(args, "positions", "learned")
    if positions in ATTENTION_ONLY_POSITIONS and args.arch != "transformer":
        raise ValueError(f"--positions {positions}: it acts in attention, for the transformer only, "
                         f"not {args.arch}")
    alibi = getattr(args, "alibi", None)  # None: the recipe's choice
    if alibi and (args.arch != "transformer" or positions != "learned"):
        raise ValueError(f"--alibi adds a recency bias to the learned table's attention: transformer and "
                         f"--positions learned only, not {args.arch} with --positions {positions}")
    horizon = getattr(args, "horizon", None)
    if horizon is not None and "horizon" not in inspect.signature(TUNNELS[args.tunnel]).parameters:
        raise ValueError(f"--horizon: a loss horizon exists for tunnels that take one (the recurrence), "
                         f"not {args.tunnel}")
    return get_preset(args.tunnel, args.arch, args.scale, variant=args.variant, depth=depth, positions=positions,
                      alibi=alibi, horizon=horizon, length=getattr(args, "train_length", None), **overrides)


def run_from_args(args: argparse.Namespace) -> RunOptions:
    """How a command trains (:class:`RunOptions`), from its options, resolved once here for everything below:
    ``--device`` (checked when parsed), ``--amp``, ``--compile``, ``--ckpt-every`` where the command has
    them, the progress bar, and progress lines to stderr every ``--log-every`` seconds where it has that."""
    every = getattr(args, "log_every", None)
    lines: dict[str, Any] = {} if every is None else {"log": log_line, "log_every_s": every}
    return RunOptions(device=args.device, amp=getattr(args, "amp", "auto"), compile_model=getattr(args, "compile", False),
                      progress=show_progress(args), ckpt_every=getattr(args, "ckpt_every", 500), **lines).resolved()


def show_progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def log_line(msg: str) -> None:
    print(msg, file=sys.stderr)
