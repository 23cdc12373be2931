"""What the experiment scripts share: the command line (--steps for a smoke run, --out, --root) and
training one preset into the experiments' own checkpoint folder (never the user's cache)."""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
from pathlib import Path
from typing import Any, Callable

from bwt_lite.checkpoints import checkpoint_dir, load_checkpoint, train_and_save
from bwt_lite.evaluate import evaluate
from bwt_lite.recipes import Preset
from bwt_lite.tunnels import make_tunnel

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"  # outputs and the experiments' checkpoints (git-ignored)


def parser(description: str, out: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=None, help="override the training steps (a smoke run: --steps 2)")
    p.add_argument("--episodes", type=int, default=2048, help="held-out episodes per score")
    p.add_argument("--out", type=Path, default=RESULTS / out, help="where the JSON result goes")
    p.add_argument("--root", type=Path, default=RESULTS / "checkpoints", help="checkpoint folder of these runs")
    return p


def shown_args(argv: list[str], dirs: tuple[str, ...] = (), files: tuple[str, ...] = ()) -> list[str]:
    """``argv`` as a result file records it: the value of each option in ``dirs`` shown as ``DIR`` and of
    each in ``files`` as its file name (those paths are this machine's)."""
    words = list(argv)
    for i, w in enumerate(words[:-1]):
        if w in dirs:
            words[i + 1] = "DIR"
        elif w in files:
            words[i + 1] = Path(words[i + 1]).name
    return words


def smoke(overrides: dict[str, Any], steps: int | None) -> dict[str, Any]:
    """``overrides`` with ``steps`` (and evaluations short enough for it) when a smoke run asks for it."""
    if steps is None:
        return overrides
    return {**overrides, "steps": steps, "eval_every": steps, "eval_episodes": 16, "warmup_steps": min(steps, 1)}


def train(preset: Preset, root: Path) -> tuple[Any, dict[str, Any]]:
    """Train ``preset`` into ``root`` (resuming if interrupted; a finished checkpoint there is loaded,
    verified against ``preset``, instead of trained again): (model, meta)."""
    directory = checkpoint_dir(preset, root)
    if (directory / "checkpoint.json").exists():
        return load_checkpoint(directory, preset)
    return train_and_save(preset, progress=False, root=root, log=print)


def train_and_score(preset: Preset, root: Path, episodes: int) -> dict[str, Any]:
    """Train ``preset`` into ``root`` (see :func:`train`) and :func:`score` it."""
    return score(preset, *train(preset, root), episodes)


def score(preset: Preset, model: Any, meta: dict[str, Any], episodes: int) -> dict[str, Any]:
    """A trained model of ``preset`` scored on its own tunnel, with its training history (held-out
    entropy MAE at each evaluation)."""
    result = evaluate(model, make_tunnel(**preset.tunnel), episodes=episodes)
    return {"name": preset.name, "key": preset.key()[:16], "train_steps": meta["train_steps"],
            "train_time_s": meta["train_time_s"], "entropy_mae_bits": result.entropy_mae_bits,
            "kl_bits": result.kl_bits, "accuracy": result.accuracy,
            "history": [{"step": h["step"], "entropy_mae_bits": h["entropy_mae_bits"]} for h in meta["history"]]}


def run_parallel(target: Callable[..., None], jobs: list[tuple]) -> None:
    """``target(*job)`` for every job: in this process when there is one, else one spawned process each,
    all at once (on a GPU they share the one device)."""
    if len(jobs) == 1:
        target(*jobs[0])
        return
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=job) for job in jobs]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()


def appended(p: argparse.ArgumentParser, args: argparse.Namespace, rows: list[dict[str, Any]], commands: list[str],
             same: dict[str, Any], run_id: Callable[[dict[str, Any]], Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """``--append``: the runs already in ``args.out`` that this call did not rerun (``run_id`` names a run), then
    ``rows``; its commands, then ``commands``. The file must hold the same ``same`` fields (else a usage error)."""
    if not (args.append and args.out.exists()):
        return rows, commands
    old = json.loads(args.out.read_text())
    if any(old[k] != v for k, v in same.items()):
        held = ", ".join(f"{k} {old[k]!r}" for k in same)
        p.error(f"--append: {args.out} holds {held}, not " + ", ".join(f"{k} {v!r}" for k, v in same.items()))
    done = {run_id(r) for r in rows}
    return [r for r in old["runs"] if run_id(r) not in done] + rows, old["commands"] + commands


def write(out: Path, result: Any) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
