"""The ``bwt`` command line: train, evaluate, inspect episodes and presets, manage the cache.

Every option is checked before any work starts: numeric options by the typed converters below
(:func:`int_range`, :func:`float_range`, :func:`device_arg`...), which argparse turns into one
``argument --x: ...`` line; checks that need several options or the disk (a tunnel's variants and
length, the cache directory, a paper preset on a CPU) by the ``_check_*`` helpers each command calls
first. Errors of the expected kinds end in one ``bwt: error: ...`` line and a non-zero exit code
(``BWT_DEBUG=1`` re-raises them with their traceback); Ctrl-C exits with 130 and says what was kept.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import torch

from .checkpoints import load_or_train, train_and_save
from .evaluate import evaluate
from .metrics import entropy_bits, gaussian_entropy_bits
from .models import ARCHS, build_model
from .paper import paper_value
from .presets import DEPTHS, PAPER_DEPTH_SIZES, SCALES, Preset, get_preset
from .runtime.device import AMP_MODES, device_name, resolve_device
from .store.cache import RESUME, SHIPPED_DIR, CacheError, cache_dir, checkpoint_dir, clear_cache, prepare_root
from .store.checkpoint import find_checkpoint
from .store.files import CheckpointError
from .store.hosted import hosted_checkpoint
from .train import TARGET_MODES, format_duration
from .tunnels import TUNNELS, make_tunnel

# ------------------------------------------------------------------------------------------------
# Bounds of the numeric options. Past them a command would not finish in any useful time or would
# not fit in memory, so they are refused when the arguments are parsed; each help text states its bound.

MAX_STEPS = 10_000_000  # training steps (the paper presets train 50,000)
MAX_EPISODES = 1_000_000  # held-out episodes of eval and reproduce (default 2,048)
MAX_LENGTH = 10_000  # eval --length; the preset's position table is the real limit, checked per preset
MAX_TRAIN_SEEDS = 20  # training seeds per cell of `bwt reproduce --seeds`
MAX_SEED = 2**63 - 1  # 64-bit generator seeds, with room for the held-out stream's offset (EVAL_SEED_BASE)
MAX_REPEAT = 1_000  # timed steps (bench) or calls (bench-scan)
MAX_JOBS = max(2, os.cpu_count() or 1)  # worker processes: one per CPU core (2 always allowed)
MAX_EM_SEEDS, MAX_EM_STEPS = 1_000, 1_000_000  # em-vs-sgd: each seed trains every arm for --steps steps
SCAN_MAX = {"lengths": 4_096, "batch": 1_024, "d_inner": 4_096}  # bench-scan, each size on its own
SCAN_MAX_ELEMENTS = 2**21  # bench-scan batch x length x d-inner: each element holds 16 state floats, several
# copies with the backward pass (2**21 elements: about 1 GB at the peak; the default sizes use 2**18)


class _Exit(Exception):
    """End the command with this one-line message and exit code (caught in :func:`main`, no traceback)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _debug() -> bool:
    """``BWT_DEBUG=1``: let errors and interrupts propagate with their traceback (for developers)."""
    return os.environ.get("BWT_DEBUG", "") not in ("", "0")


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
    from . import presets

    names = [p.name for p in presets.shipped_presets()]
    if text not in names:
        raise argparse.ArgumentTypeError(f"unknown shipped preset {text!r}; known: {', '.join(names)}")
    return text


# ------------------------------------------------------------------------------------------------
# Checks that need several options, the presets or the disk. Each command calls the ones it needs
# before it loads or trains anything; they raise ValueError with one line naming the option.


def _check_variant(args: argparse.Namespace) -> None:
    """``--variant`` must be one of the tunnel's variants."""
    allowed = TUNNELS[args.tunnel].variants
    if args.variant is not None and args.variant not in allowed:
        raise ValueError(f"--variant: unknown variant {args.variant!r}; allowed: {', '.join(allowed)} "
                         f"(tunnel {args.tunnel})")


def _check_scan_size(args: argparse.Namespace) -> None:
    """bench-scan: batch x longest length x d-inner within :data:`SCAN_MAX_ELEMENTS` (memory)."""
    longest = max(args.lengths)
    n = args.batch * longest * args.d_inner
    if n > SCAN_MAX_ELEMENTS:
        raise ValueError(f"--batch x --lengths x --d-inner must be at most {SCAN_MAX_ELEMENTS:,} (each element "
                         f"holds 16 state floats), got {args.batch} x {longest} x {args.d_inner} = {n:,}")


def _check_jobs_on_cpu(args: argparse.Namespace) -> None:
    """``--jobs`` > 1 trains in CPU worker processes: a GPU ``--device`` would be ignored."""
    if args.jobs > 1 and args.device.type != "cpu":
        raise ValueError(f"--jobs {args.jobs} trains on the CPU in worker processes; with --device {args.device} "
                         f"use --jobs 1")


# The longest names written under a cache root: a checkpoint folder "<preset name>-<16 hex digits>",
# or the folder a download stages in, ".download-<that name>-<8 random>"; inside it "resume/" holds
# temporary files such as ".step-0000500.safetensors.<8 random>.tmp" (about 40 characters).
_LONGEST_PRESET = max(len(f"{t}-{a}-{s}-soft") for t in TUNNELS for a in ARCHS for s in SCALES)
_PROBE_FOLDER_LEN = len(".download-") + _LONGEST_PRESET + len("-0123456789abcdef-") + 8
_PROBE_FILE_LEN = 64


def _short(path: Path) -> str:
    s = str(path)
    return s if len(s) <= 100 else f"{s[:48]}...{s[-40:]} ({len(s):,} characters)"


def check_cache_dir(root: Path | None = None, what: str = "cache directory (BWT_CACHE_DIR)") -> Path:
    """Check that checkpoints can be written under ``root`` (default: :func:`~bwt_lite.store.cache.cache_dir`),
    before any training: created if missing, it must be a directory, writable, and its path short enough
    for the longest file a run writes in it. Tried by creating (and removing) a folder and a file of
    those lengths. Returns the folder; raises ValueError naming it otherwise."""
    root = cache_dir() if root is None else Path(root)
    where = f"the {what} {_short(root)}"
    try:
        if root.exists() and not root.is_dir():  # exists() raises for a name too long, among others
            raise ValueError(f"{where} is not a directory")
        prepare_root(root)  # created if missing, and marked as a cache when new or empty
        probe = Path(tempfile.mkdtemp(dir=root, prefix=".bwt-probe-", suffix="x" * (_PROBE_FOLDER_LEN - 19)))
        try:
            (probe / RESUME).mkdir()
            (probe / RESUME / ("x" * _PROBE_FILE_LEN)).write_bytes(b"")
        finally:
            shutil.rmtree(probe, ignore_errors=True)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise ValueError(f"{where}: the path is too long for the checkpoint files written in it (they add up "
                             f"to {_PROBE_FOLDER_LEN + len(RESUME) + _PROBE_FILE_LEN + 3} characters to it); "
                             f"choose a shorter one") from None
        if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise ValueError(f"{where} is not writable ({e.strerror})") from None
        raise ValueError(f"{where} cannot be used: {e.strerror or e}") from None
    return root


def _resume_step(directory: Path) -> int:
    """The step of the newest periodic training state saved in a checkpoint folder (0: none)."""
    try:
        steps = [p.stem.split("-", 1)[1] for p in (directory / RESUME).glob("step-*.json")]
    except OSError:
        return 0
    return max((int(s) for s in steps if s.isdigit()), default=0)


def _check_paper_on_cpu(args: argparse.Namespace, presets: Sequence[Preset]) -> list[Preset]:
    """Training a paper preset on a CPU takes days: refused unless ``--allow-cpu-paper``. Returns the
    paper presets that will train on the CPU (for :func:`_print_estimates`)."""
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


def _print_estimates(args: argparse.Namespace, presets: Sequence[Preset], fresh: bool = False) -> None:
    """Time two training steps of each preset here and print how long its (remaining) run would take."""
    from .runtime.bench import steps_per_second

    total = 0.0
    for p in presets:
        left = p.train.steps - (0 if fresh else _resume_step(checkpoint_dir(p)))
        row = steps_per_second(p, args.device, getattr(args, "amp", "auto"), getattr(args, "compile", False),
                               repeat=2, warmup=0)
        seconds = left * row["ms_per_step"] / 1000.0
        total += seconds
        _log(f"{p.name}: {row['ms_per_step'] / 1000.0:.2f} s per step on {device_name(args.device)} (2 steps timed); "
             f"{left:,} steps: about {format_duration(seconds)}, evaluations excluded")
    if len(presets) > 1:
        _log(f"estimated training time of the {len(presets)} paper presets here: about {format_duration(total)}")


@contextlib.contextmanager
def _resumable(args: argparse.Namespace, preset: Preset) -> Iterator[None]:
    """Ctrl-C while ``preset`` trains: say where the run resumes from and exit with 130 (no traceback)."""
    try:
        yield
    except KeyboardInterrupt:
        if _debug():
            raise
        again = shlex.join(["bwt", *(a for a in args.argv if a != "--fresh")])
        directory = checkpoint_dir(preset)
        step = _resume_step(directory)
        if step:
            msg = f"interrupted; the run resumes from {directory / RESUME} (step {step:,}) on the next '{again}'"
        else:
            msg = f"interrupted before the first periodic checkpoint; the next '{again}' starts over"
        raise _Exit(130, msg) from None


def _would_train(preset: Preset, download: bool) -> bool:
    """Whether loading ``preset`` finds no checkpoint (cache, shipped, or hosted when ``download``) and trains."""
    return find_checkpoint(preset) is None and not (download and hosted_checkpoint(preset) is not None)


def _preset(args: argparse.Namespace) -> Preset:
    _check_variant(args)
    overrides: dict[str, Any] = {}
    for name in ("steps", "seed", "target"):
        if getattr(args, name, None) is not None:
            overrides[name] = getattr(args, name)
    depth = getattr(args, "depth", "default")
    if depth != "default" and (args.scale != "lite" or (args.tunnel, args.arch) not in PAPER_DEPTH_SIZES):
        have = ", ".join(f"{t} {a}" for t, a in PAPER_DEPTH_SIZES)
        raise ValueError(f"--depth paper: exists for the lite {have} only")
    return get_preset(args.tunnel, args.arch, args.scale, variant=args.variant, depth=depth, **overrides)


def _progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def _log(msg: str) -> None:
    print(msg, file=sys.stderr)


def cmd_train(args: argparse.Namespace) -> int:
    preset = _preset(args)
    on_cpu = _check_paper_on_cpu(args, [preset])
    check_cache_dir()
    _print_estimates(args, on_cpu, fresh=args.fresh)
    with _resumable(args, preset):
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
    """The preset's tunnel, optionally at another episode length (length generalisation).

    Raises ValueError naming ``--length`` when the tunnel or its variant has no episode length (recall's
    ``mqar`` variant: its length is set by ``n_pairs``, ``gap`` and ``n_queries``, and ``L`` is not part
    of its configuration), when the tunnel refuses the length, or when the episodes would not fit the
    model's position table. Nothing is loaded: this runs before the model is.
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
    rows = preset.model.n_positions
    if tunnel.seq_len > rows:
        # an episode has at least one token per unit of length: no length past the table's rows fits
        longest = max((n for n in range(1, min(length, rows + 1)) if _fits(args, arg, n, rows)), default=None)
        raise ValueError(f"--length {length}: episodes of {tunnel.seq_len} tokens exceed the model's position "
                         f"table ({rows} rows); at most --length {longest} for {preset.name}")
    return tunnel


def _fits(args: dict[str, Any], arg: str, length: int, rows: int) -> bool:
    try:
        return make_tunnel(**{**args, arg: length}).seq_len <= rows
    except (TypeError, ValueError):
        return False


def cmd_eval(args: argparse.Namespace) -> int:
    preset = _preset(args)
    tunnel = eval_tunnel(preset, args.length)
    trains = _would_train(preset, download=not args.no_download)
    on_cpu = _check_paper_on_cpu(args, [preset] if trains else [])
    if find_checkpoint(preset) is None:  # it will be downloaded or trained into the cache
        check_cache_dir()
    _print_estimates(args, on_cpu)
    with _resumable(args, preset) if trains else contextlib.nullcontext():
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
    _check_variant(args)
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
        # only what the cache wrote, in a folder marked as a cache (bwt_lite.store.cache); rc 1 if anything failed
        try:
            report = clear_cache(root)
        except CacheError as e:
            print(f"bwt: error: {e}", file=sys.stderr)
            return 2
        print(report.summary())
        for path, why in report.failures:
            print(f"bwt: could not remove {path}: {why}", file=sys.stderr)
        return 0 if report.ok else 1
    return 0


def cmd_ship(args: argparse.Namespace) -> int:
    """Train the shipped lite checkpoints that are missing into the package's data folder."""
    from .presets import shipped_presets

    from .runtime.pool import train_presets

    _check_jobs_on_cpu(args)
    todo = []
    for preset in shipped_presets():
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
    from .runtime.bench import format_table, run

    if args.target is not None and not args.train:
        raise ValueError("--target is the entropy MAE that --train trains to; without --train it is not used")
    if args.train and "paper" in args.scale:  # bench prints each preset's steps/s before it trains
        _check_paper_on_cpu(args, [get_preset("bijection", "transformer", "paper")])
    result = run(scales=args.scale, tunnels=args.tunnels, archs=args.archs, device=args.device, amp=args.amp,
                 compile_model=args.compile, train=args.train, target_bits=args.target, repeat=args.repeat,
                 progress=_progress(args), log=_log, threads=args.threads, variants=not args.no_variants)
    print(json.dumps(result) if args.json else format_table(result))
    return 0


def cmd_em_vs_sgd(args: argparse.Namespace) -> int:
    """Paper II's two-timescale experiment on the sticky chain: per-seed steps and the speedup."""
    from .dynamics.two_timescale import EMConfig, em_vs_sgd

    # the upper bounds are checked by the parser; the lower ones here, one message for both options
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


def cmd_claims(args: argparse.Namespace) -> int:
    """The claims scorecard from the shipped checkpoints (it never trains)."""
    from .claims import report

    print(report(device=args.device, fast=args.fast, as_json=args.json, network=args.network,
                 log=None if args.json else _log))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Every architecture on every primitive's tunnel, our numbers beside the paper's."""
    from .reproduce import capacity_table, format_capacity_table, format_primitives_table, reproduce

    if args.capacity:
        rows = capacity_table([args.scale])
        print("\n".join(json.dumps(r) for r in rows) if args.json else format_capacity_table(rows))
        return 0
    from . import reproduce as cells

    _check_jobs_on_cpu(args)
    seeds = range(args.seeds)
    presets = [cells.cell_preset(t, a, args.scale, s) for t in cells.PRIMITIVE_TUNNELS for a in ARCHS for s in seeds]
    writes = [p for p in presets if args.retrain or find_checkpoint(p) is None]
    on_cpu = _check_paper_on_cpu(args, [p for p in writes if args.retrain or _would_train(p, not args.no_download)])
    if writes:
        check_cache_dir()
    _print_estimates(args, on_cpu, fresh=args.retrain)
    t0 = time.perf_counter()
    rows = reproduce(args.scale, retrain=args.retrain, episodes=args.episodes, seed=args.seed_eval,
                     device=args.device, progress=_progress(args), download=not args.no_download, jobs=args.jobs,
                     train_seeds=seeds, log=_log)
    _log(f"{len(rows)} cells in {format_duration(time.perf_counter() - t0)}")
    print("\n".join(json.dumps(r) for r in rows) if args.json else format_primitives_table(rows))
    return 0


def cmd_bench_scan(args: argparse.Namespace) -> int:
    """Mamba's selective scans (sequential, parallel, stepwise), forward + backward, ms per call."""
    from .runtime.bench import benchmark_scan, format_scan_benchmark

    _check_scan_size(args)
    rows = benchmark_scan(tuple(args.lengths), batch=args.batch, d_inner=args.d_inner, repeat=args.repeat)
    if args.json:
        print(json.dumps(rows))
    else:
        print(f"selective scan, forward + backward, batch {args.batch}, d_inner {args.d_inner}, "
              f"{torch.get_num_threads()} thread(s); median (min-max) of {args.repeat} calls")
        print(format_scan_benchmark(rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bwt", description="Bayesian wind tunnels: train, evaluate, inspect.")
    sub = p.add_subparsers(dest="command", required=True)

    def preset_args(sp: argparse.ArgumentParser, seed_help: str = "training seed") -> None:
        """The options that name a preset (they all enter its checkpoint key)."""
        sp.add_argument("tunnel", choices=sorted(TUNNELS))
        sp.add_argument("arch", choices=ARCHS)
        sp.add_argument("--scale", choices=SCALES, default="lite")
        sp.add_argument("--variant", default=None, help="tunnel variant (bijection: separate, paired, replacement; hmm: default, slow; recall: default, mqar)")
        sp.add_argument("--depth", choices=DEPTHS, default="default",
                        help="paper: the lite model with the paper's number of layers (bijection and HMM transformers)")
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

    episodes_help = f"held-out episodes, 1 to {MAX_EPISODES:,}"

    sp = sub.add_parser("train", help="train a preset into the cache (resumes an interrupted run)")
    preset_args(sp)
    run_args(sp)
    sp.add_argument("--fresh", action="store_true", help="ignore any saved partial run and start over")
    sp.add_argument("--ckpt-every", type=positive_int, default=500, help="steps between resumable checkpoints (>= 1)")
    sp.add_argument("--log-every", type=finite_nonneg_float, default=60.0,
                    help="seconds between progress lines (steps/s, time left) when no progress bar is shown (>= 0)")
    speed_args(sp)
    sp.set_defaults(func=cmd_train)

    sp = sub.add_parser("eval", help="evaluate a preset on held-out episodes (trains it if missing)")
    preset_args(sp, seed_help="training seed of the preset to evaluate")
    run_args(sp)
    sp.add_argument("--episodes", type=int_range(1, MAX_EPISODES), default=2048, help=f"{episodes_help} (default 2048)")
    sp.add_argument("--eval-seed", dest="seed_eval", type=seed_int, default=0,
                    help="seed of the held-out episodes, 0 to 2**63 - 1")
    sp.add_argument("--length", type=int_range(1, MAX_LENGTH), default=None,
                    help="evaluate at another episode length (hmm: K, bijection/recall: L, regression: N), "
                         "within the model's position table")
    sp.add_argument("--no-download", action="store_true", help="never download a hosted checkpoint; train instead")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_eval)

    sp = sub.add_parser("episode", help="one sampled episode with its exact posterior")
    sp.add_argument("tunnel", choices=sorted(TUNNELS))
    sp.add_argument("--seed", type=seed_int, default=0, help="0 to 2**63 - 1")
    sp.add_argument("--variant", default=None)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_episode)

    sp = sub.add_parser("info", help="a preset's configuration and exact parameter count")
    preset_args(sp)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_info)

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

    sp = sub.add_parser("ship", help="train the lite checkpoints shipped with the package (maintainers)")
    sp.add_argument("--only", nargs="*", type=shipped_preset_name, default=None,
                    help="shipped preset names, e.g. hmm-transformer-lite-soft")
    sp.add_argument("--retrain", action="store_true", help="retrain even if shipped")
    run_args(sp, device="cpu", paper=False)
    sp.add_argument("--jobs", type=jobs_int, default=1,
                    help=f"presets trained at once on the CPU, each in its own process "
                         f"(1 to {MAX_JOBS}, the CPU cores)")
    sp.set_defaults(func=cmd_ship)

    sp = sub.add_parser("em-vs-sgd", help="Paper II: plain SGD against 10x value learning rate (single head, sticky chain)")
    sp.add_argument("--seeds", type=int_range(None, MAX_EM_SEEDS), default=5,
                    help=f"seeds, 1 to {MAX_EM_SEEDS:,} (each its own init, training and held-out data)")
    sp.add_argument("--steps", type=int_range(None, MAX_EM_STEPS), default=1000,
                    help=f"full-batch steps per run, 1 to {MAX_EM_STEPS:,}")
    sp.add_argument("--controls", action="store_true", help="also 10x on the readout, and on the query/key weights")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_em_vs_sgd)

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

    sp = sub.add_parser("reproduce", help="the primitives table: every architecture on every tunnel, beside the paper")
    sp.add_argument("--scale", choices=SCALES, default="lite")
    sp.add_argument("--retrain", action="store_true", help="train every cell afresh (default: only the missing ones)")
    sp.add_argument("--episodes", type=int_range(1, MAX_EPISODES), default=2048,
                    help=f"{episodes_help} per cell (default 2048)")
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
    return p


def _stdout_broken() -> bool:
    """Whether standard output cannot take what is written to it (a closed pipe, a full disk)."""
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return False


def _detach_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush at exit cannot fail again
    (and print a second error) after a closed pipe or a full disk."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a stream without a file (tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _describe(e: OSError) -> str:
    """``No space left on device: /path`` rather than ``[Errno 28] ...``."""
    files = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
    return f"{e.strerror or e}{': ' + files if files else ''}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bwt`` with ``argv`` (default: the process's arguments); returns 0, or raises SystemExit
    with the exit code after one ``bwt: error: ...`` line (2: bad input, 1: a failure while running,
    130: interrupted, 141: standard output was closed)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv  # to say which command resumes an interrupted run
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe or a full disk shows here, inside the handlers below
        return code
    except _Exit as e:
        parser.exit(e.code, f"bwt: {e}\n")
    except KeyboardInterrupt:
        if _debug():
            raise
        parser.exit(130, "bwt: interrupted\n")
    except BrokenPipeError:  # the reader went away (`bwt ... | head`): nothing to say to it
        if _debug():
            raise
        _detach_stdout()
        raise SystemExit(141) from None
    except (ValueError, TypeError, CheckpointError) as e:
        if _debug():
            raise
        parser.exit(2, f"bwt: error: {e}\n")
    except (OSError, FloatingPointError) as e:  # I/O while running; a training run that diverged
        if _debug():
            raise
        if isinstance(e, OSError) and _stdout_broken():
            _detach_stdout()
            parser.exit(1, f"bwt: error: cannot write to standard output: {e.strerror or e}\n")
        parser.exit(1, f"bwt: error: {_describe(e) if isinstance(e, OSError) else e}\n")
    return 0  # not reached: every handler exits


if __name__ == "__main__":
    sys.exit(main())
