"""The options of ``bwt``: their bounds, the typed converters argparse calls (``type=``), and the checks
that need several options (each command calls the ones it needs before any work)."""
from __future__ import annotations

import argparse
import math
import os
from typing import Callable

import torch

from .. import recipes
from ..runtime.device import resolve_device
from ..tunnels import TUNNELS

# ------------------------------------------------------------------------------------------------
# Bounds of the numeric options. Past them a command would not finish in any useful time or would
# not fit in memory, so they are refused when the arguments are parsed; each help text states its bound.

MAX_STEPS = 10_000_000  # training steps (the paper presets train 50,000)
MAX_EPISODES = 1_000_000  # held-out episodes of eval and reproduce (default 2,048)
MAX_LENGTH = 10_000  # eval --length; the preset's position table is the real limit, checked per preset
UNTABLED_LENGTH_FACTOR = 4  # eval --length without a learned table: episodes up to 4x its rows in tokens
# (attention's (T, T) scores at the evaluation batch of 512 grow with the square of the length)
MAX_TRAIN_SEEDS = 20  # training seeds per cell of `bwt reproduce --seeds`
MAX_SEED = 2**63 - 1  # 64-bit generator seeds, with room for the held-out stream's offset (EVAL_SEED_BASE)
MAX_REPEAT = 1_000  # timed steps (bench) or calls (bench-scan)
MAX_JOBS = max(2, os.cpu_count() or 1)  # worker processes: one per CPU core (2 always allowed)
MAX_EM_SEEDS, MAX_EM_STEPS = 1_000, 1_000_000  # em-vs-sgd: each seed trains every arm for --steps steps
SCAN_MAX = {"lengths": 4_096, "batch": 1_024, "d_inner": 4_096}  # bench-scan, each size on its own
SCAN_MAX_ELEMENTS = 2**21  # bench-scan batch x length x d-inner: each element holds 16 state floats, several
# copies with the backward pass (2**21 elements: about 1 GB at the peak; the default sizes use 2**18)



# ------------------------------------------------------------------------------------------------
# Argument converters (argparse ``type=``): one per kind of value. A range error raises
# ArgumentTypeError, which argparse prints as "argument --x: must be ..."; text that is not a number
# raises ValueError, printed as "argument --x: invalid int value: 'abc'" (hence the __name__ below).


def _bounds(low: float | None, high: float | None) -> str:
    if high is None:
        return f">= {low:,}"
    if low is None:
        return f"<= {high:,}"
    return f"between {low:,} and {high:,}"


def int_range(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """A converter to an int in ``[low, high]`` (an end given as None is open)."""
    def convert(text: str) -> int:
        value = int(text)
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {_bounds(low, high)}, got {value}")
        return value

    convert.__name__ = "int"
    return convert


def float_range(low: float, *, inclusive: bool = True) -> Callable[[str], float]:
    """A converter to a finite float ``>= low`` (``> low`` unless ``inclusive``); NaN and inf are refused."""
    def convert(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value < low or (value == low and not inclusive):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>=' if inclusive else '>'} {low:g}, "
                                             f"got {text}")
        return value

    convert.__name__ = "float"
    return convert


positive_int = int_range(1)
seed_int = int_range(0, MAX_SEED)
jobs_int = int_range(1, MAX_JOBS)
finite_nonneg_float = float_range(0.0)
finite_positive_float = float_range(0.0, inclusive=False)


def device_arg(text: str) -> torch.device:
    """A converter to the device to compute on: ``auto`` (the GPU when visible), ``cpu``, ``cuda`` or
    ``cuda:N``. Resolved now, so a device that cannot run the command is refused before any work."""
    try:
        dev = resolve_device(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if dev.type not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"cannot compute on device {text!r}; use auto, cpu, cuda or cuda:N")
    n = torch.cuda.device_count() if dev.type == "cuda" else 0
    if dev.type == "cuda" and dev.index is not None and dev.index >= n:
        raise argparse.ArgumentTypeError(f"no CUDA device {dev.index}: {n} visible (cuda:0 to cuda:{n - 1})")
    return dev


def shipped_preset_name(text: str) -> str:
    """A converter to the name of a preset shipped with the package (``bwt ship --only``)."""
    names = [p.name for p in recipes.shipped_presets()]
    if text not in names:
        raise argparse.ArgumentTypeError(f"unknown shipped preset {text!r}; known: {', '.join(names)}")
    return text


# ------------------------------------------------------------------------------------------------
# Checks that need several options, the presets or the disk. Each command calls the ones it needs
# before it loads or trains anything; they raise ValueError with one line naming the option.


def check_variant(args: argparse.Namespace) -> None:
    """``--variant`` must be one of the tunnel's variants."""
    allowed = TUNNELS[args.tunnel].variants
    if args.variant is not None and args.variant not in allowed:
        raise ValueError(f"--variant: unknown variant {args.variant!r}; allowed: {', '.join(allowed)} "
                         f"(tunnel {args.tunnel})")


def check_scan_size(args: argparse.Namespace) -> None:
    """bench-scan: batch x longest length x d-inner within :data:`SCAN_MAX_ELEMENTS` (memory)."""
    longest = max(args.lengths)
    n = args.batch * longest * args.d_inner
    if n > SCAN_MAX_ELEMENTS:
        raise ValueError(f"--batch x --lengths x --d-inner must be at most {SCAN_MAX_ELEMENTS:,} (each element "
                         f"holds 16 state floats), got {args.batch} x {longest} x {args.d_inner} = {n:,}")


def check_jobs_on_cpu(args: argparse.Namespace) -> None:
    """``--jobs`` > 1 trains in CPU worker processes: a GPU ``--device`` would be ignored."""
    if args.jobs > 1 and args.device.type != "cpu":
        raise ValueError(f"--jobs {args.jobs} trains on the CPU in worker processes; with --device {args.device} "
                         f"use --jobs 1")
