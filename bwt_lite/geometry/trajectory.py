"""Training trajectories (Paper I, training dynamics): model snapshots over one run, stored and verified.

A **training trajectory** is a set of model snapshots saved densely early in training (steps 0, 25,
50, 100, ...) and sparsely later, plus the trainer's held-out history; :mod:`bwt_lite.geometry.dissociation`
measures the frame and the precision on it.

Storage (``bwt_lite/data/trajectories/<name>-<key[:16]>/``), verified like a checkpoint
(:mod:`bwt_lite.store`): ``snapshots.safetensors`` holds every snapshot's weights as float16
(tensor ``"<step:07d>/<parameter>"``), ``trajectory.json`` the preset and its key, the steps, the
training history, the weights' SHA-256 and size, and a check value: the held-out entropy MAE of the
final snapshot *as stored* (float16 weights). Loading verifies the hash, the key and, with
``check=True``, re-measures that MAE; any mismatch raises :class:`~bwt_lite.store.files.CheckpointError`.

Regenerate the shipped trajectory (about 15 minutes on one CPU core)::

    OMP_NUM_THREADS=1 python -m bwt_lite.geometry.trajectory bijection-d64
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save
from torch import Tensor

from ..paths import TRAJECTORY_DIR
from ..evaluate import evaluate
from ..models import WindTunnelModel, build_model
from ..recipes import FORMAT_VERSION, Preset, get_preset
from ..runtime.options import RunOptions
from ..store.files import CheckpointError, atomic_write, read_json, read_verified, sha256_bytes
from ..train import fit, init_model
from ..tunnels import make_tunnel
from ..version import __version__

SNAPSHOTS, TRAJ_META = "snapshots.safetensors", "trajectory.json"
CHECK_EPISODES = 256  # held-out episodes of the stored check value
CHECK_TOL_BITS = 1e-4  # allowed difference when the check value is re-measured (thread-count rounding)

# The shipped trajectories. "bijection-d64": the lite bijection preset and recipe (10,000 steps) with a
# narrower transformer (d = 64, 2 layers of 4 heads, a quarter of the lite model's parameters), so the run
# fits in minutes on one core and its snapshots in a few MB (lab notes, "Running the chapters").
TRAJECTORIES: dict[str, dict[str, Any]] = {
    "bijection-d64": {
        "tunnel": "bijection", "arch": "transformer",
        "model": {"d_model": 64, "n_heads": 4},
        "train": {"steps": 10_000, "eval_every": 250, "eval_episodes": 512},
        "save_steps": (0, 25, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000, 2500, 3000,
                       4000, 5000, 6000, 7000, 8000, 9000, 10_000),
    },
}


def trajectory_preset(name: str) -> Preset:
    """The full configuration of a registered trajectory (see ``TRAJECTORIES``)."""
    if name not in TRAJECTORIES:
        raise ValueError(f"unknown trajectory {name!r}; known: {', '.join(sorted(TRAJECTORIES))}")
    spec = TRAJECTORIES[name]
    p = get_preset(spec["tunnel"], spec["arch"], "lite", **spec["train"])
    return replace(p, model=replace(p.model, **spec["model"]))


@dataclass
class Trajectory:
    """Model snapshots over one training run. ``states[i]`` holds the weights after ``steps[i]`` steps."""

    name: str
    preset: Preset
    steps: list[int]
    states: list[dict[str, Tensor]] = field(repr=False)
    history: list[dict[str, float]] = field(default_factory=list)  # the trainer's held-out evaluations
    train_time_s: float = 0.0
    dtype: str = "float32"  # storage dtype of the weights

    def model_at(self, step: int) -> WindTunnelModel:
        """A fresh model holding the snapshot of training step ``step`` (eval mode, CPU)."""
        if step not in self.steps:
            raise ValueError(f"step {step} is not a snapshot; snapshots: {self.steps}")
        model = build_model(self.preset.model)
        model.load_state_dict({k: v.float() for k, v in self.states[self.steps.index(step)].items()}, strict=True)
        return model.eval()


def train_trajectory(preset: Preset, save_steps: tuple[int, ...] | list[int], *, name: str = "trajectory",
                     progress: bool = True, log: Callable[[str], None] | None = None) -> Trajectory:
    """Train ``preset`` with :func:`bwt_lite.train.fit` and keep the weights after each of ``save_steps``.

    Step 0 is the initialisation ``fit`` itself starts from. The snapshots are taken through fit's
    ``on_checkpoint`` hook every ``gcd(save_steps)`` steps (a copy of the weights, nothing written).
    """
    steps = sorted({int(s) for s in save_steps})
    if not steps or steps[0] < 0 or steps[-1] > preset.train.steps:
        raise ValueError(f"save_steps must lie in 0..{preset.train.steps} (the preset's steps), got {steps}")
    every = 0
    for s in steps:
        every = math.gcd(every, s)
    every = every or preset.train.steps
    kept: dict[int, dict[str, Tensor]] = {}
    if 0 in steps:
        kept[0] = {k: v.detach().clone() for k, v in init_model(preset.model, preset.train.seed).state_dict().items()}

    def keep(state: Any) -> None:
        if state.step in steps:
            kept[state.step] = {k: v.detach().cpu().clone() for k, v in state.model.items()}

    t0 = time.perf_counter()
    _, final = fit(preset.tunnel, preset.model, preset.train, on_checkpoint=keep,
                   run=RunOptions(ckpt_every=every, progress=progress, desc=name, log=log, log_every_s=60.0))
    missing = [s for s in steps if s not in kept]
    if missing:
        raise RuntimeError(f"no snapshot was taken at step(s) {missing}")
    return Trajectory(name=name, preset=preset, steps=steps, states=[kept[s] for s in steps],
                      history=list(final.history), train_time_s=time.perf_counter() - t0)


def _check_value(traj: Trajectory) -> float:
    tunnel = make_tunnel(**traj.preset.tunnel)
    return evaluate(traj.model_at(traj.steps[-1]), tunnel, episodes=CHECK_EPISODES, seed=0).entropy_mae_bits


def _half(state: dict[str, Tensor]) -> dict[str, Tensor]:
    return {k: (v.to(torch.float16) if v.is_floating_point() else v) for k, v in state.items()}


def save_trajectory(traj: Trajectory, root: Path | str | None = None, command: str = "") -> Path:
    """Store ``traj`` under ``root`` (default: the package's ``data/trajectories``) as
    ``<name>-<key[:16]>/`` with float16 weights; returns the folder. The JSON is written last."""
    directory = Path(TRAJECTORY_DIR if root is None else root) / f"{traj.name}-{traj.preset.key()[:16]}"
    halves = [_half(s) for s in traj.states]
    tensors = {f"{step:07d}/{k}": v.contiguous() for step, s in zip(traj.steps, halves) for k, v in s.items()}
    blob = st_save(tensors)
    stored = replace(traj, states=halves, dtype="float16")
    meta = {
        "format_version": FORMAT_VERSION,
        "kind": "trajectory",
        "name": traj.name,
        "key": traj.preset.key(),
        "preset": traj.preset.to_dict(),
        "steps": traj.steps,
        "dtype": "float16",
        "params": build_model(traj.preset.model).n_params,
        "history": traj.history,
        "train_time_s": traj.train_time_s,
        "check": {"step": traj.steps[-1], "episodes": CHECK_EPISODES, "seed": 0,
                  "entropy_mae_bits": _check_value(stored)},
        "weights_sha256": sha256_bytes(blob),
        "weights_bytes": len(blob),
        "regenerate": command or f"OMP_NUM_THREADS=1 python -m bwt_lite.geometry.dissociation {traj.name}",
        "bwt_lite_version": __version__,
        "torch_version": torch.__version__,
    }
    atomic_write(directory / SNAPSHOTS, blob)
    atomic_write(directory / TRAJ_META, json.dumps(meta, indent=1).encode())
    return directory


def find_trajectory(name: str, root: Path | str | None = None) -> Path:
    """The folder of the registered trajectory ``name`` (keyed by its preset) under ``root``."""
    directory = Path(TRAJECTORY_DIR if root is None else root) / f"{name}-{trajectory_preset(name).key()[:16]}"
    if not (directory / TRAJ_META).exists():
        raise CheckpointError(f"no trajectory {name!r} in {directory}; regenerate it with "
                              f"`OMP_NUM_THREADS=1 python -m bwt_lite.geometry.dissociation {name}`")
    return directory


def load_trajectory(name_or_dir: str | Path, *, check: bool = True) -> Trajectory:
    """Load and verify a stored trajectory: a registered name (the shipped one) or a folder.

    Raises :class:`~bwt_lite.store.files.CheckpointError` if the JSON or the weights were altered,
    truncated or belong to another configuration, or (``check``) if the final snapshot no longer
    gives the entropy MAE recorded when it was stored.
    """
    if isinstance(name_or_dir, str) and name_or_dir in TRAJECTORIES:
        directory, expected = find_trajectory(name_or_dir), trajectory_preset(name_or_dir)
    else:
        directory, expected = Path(name_or_dir), None
    meta = read_json(directory / TRAJ_META)
    if meta.get("format_version") != FORMAT_VERSION or meta.get("kind") != "trajectory":
        raise CheckpointError(f"{directory / TRAJ_META} is not a trajectory of format {FORMAT_VERSION}")
    try:
        preset = Preset.from_dict(meta["preset"])
        steps = [int(s) for s in meta["steps"]]
        sha, size = meta["weights_sha256"], int(meta["weights_bytes"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{directory / TRAJ_META} is incomplete or invalid ({e})") from e
    if preset.key() != meta.get("key"):
        raise CheckpointError(f"{directory / TRAJ_META} was altered: its key does not match its configuration")
    if expected is not None and expected.key() != preset.key():
        raise CheckpointError(f"the trajectory in {directory} belongs to another configuration than "
                              f"TRAJECTORIES[{str(name_or_dir)!r}]")
    tensors = st_load(read_verified(directory / SNAPSHOTS, sha, size))
    names = [k for k, _ in build_model(preset.model).state_dict().items()]
    states = []
    for step in steps:
        try:
            states.append({k: tensors.pop(f"{step:07d}/{k}") for k in names})
        except KeyError as e:
            raise CheckpointError(f"{directory / SNAPSHOTS} lacks tensor {e} of step {step}") from e
    if tensors:
        raise CheckpointError(f"{directory / SNAPSHOTS} holds unexpected tensors, e.g. {next(iter(tensors))}")
    traj = Trajectory(name=meta["name"], preset=preset, steps=steps, states=states, history=meta.get("history", []),
                      train_time_s=float(meta.get("train_time_s", 0.0)), dtype=meta.get("dtype", "float16"))
    if check:
        want = float(meta["check"]["entropy_mae_bits"])
        got = _check_value(traj)
        if not abs(got - want) <= CHECK_TOL_BITS:
            raise CheckpointError(f"the final snapshot in {directory} gives entropy MAE {got:.6f} bits, "
                                  f"not the {want:.6f} recorded when it was stored")
    return traj


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bwt_lite.geometry.trajectory",
                                     description="Train a registered trajectory and store its snapshots.")
    parser.add_argument("name", choices=sorted(TRAJECTORIES))
    parser.add_argument("--out", type=Path, default=None, help=f"parent folder (default {TRAJECTORY_DIR})")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # bit-for-bit reproducible on a given CPU
    spec = TRAJECTORIES[args.name]
    traj = train_trajectory(trajectory_preset(args.name), spec["save_steps"], name=args.name,
                            progress=not args.no_progress, log=print)
    directory = save_trajectory(traj, args.out)
    size = (directory / SNAPSHOTS).stat().st_size
    print(f"stored {len(traj.steps)} snapshots in {directory} ({size / 1e6:.1f} MB, {traj.train_time_s:.0f} s of training)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
