"""Binding capacity: recall accuracy as the number of stored pairs grows (chapter 6).

Paper I reports that Mamba "struggles as stored pairs grow"; Zoology's multi-query associative recall
(MQAR; Arora et al. 2023) shows attention near 100 % while recurrent models fall with the number of
pairs at a fixed state size. This module measures it on the recall tunnel's ``mqar`` variant
(``n_pairs`` distinct key-value pairs, then ``n_queries`` queries of stored keys): every architecture
with a recurrent or attention memory (transformer, LSTM, Mamba) at two widths, for several pair
counts, each with the same training budget (:data:`STEPS` x :data:`BATCH` episodes, same recipe).

The sweep's results ship as ``bwt_lite/data/capacity_sweep.json`` (:func:`load_sweep`);
``experiments/capacity_sweep.py`` re-runs it (:func:`run_sweep`).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .paths import data_file
from .checkpoints import checkpoint_dir, load_checkpoint, load_or_train, train_and_save
from .evaluate import evaluate
from .recipes import Preset, get_preset
from .reproduce import THRESHOLDS
from .orchestration.pool import train_presets
from .models import state_numbers as count_state
from .tunnels import make_tunnel
from .arguments import check_choice, check_int

PAIRS = (4, 8, 16)  # stored pairs per episode (<= V = 16 keys)
# The architectures with a memory (the MLP has none); "transformer+alibi" is the transformer with ALiBi's
# recency bias on its learned position table (the lite recall recipe, chapter 4, section 4.3).
ARCHS = ("transformer", "transformer+alibi", "lstm", "mamba")
WIDTHS = (64, 128)  # d_model; d_head 16 for the transformer (128: the lite recall transformer's width)
N_QUERIES = 8
STEPS, BATCH = 8_000, 32  # the same budget for every cell: at most 256,000 training episodes
STOP_ACCURACY = 0.99  # a cell ends at the first held-out evaluation at or above this accuracy
EVAL_EVERY = 500
LR = 2e-3
N_LAYERS = 2
DATA_FILE = data_file("capacity_sweep.json")


def sweep_preset(arch: str, n_pairs: int, d_model: int, *, steps: int = STEPS, seed: int = 0) -> Preset:
    """The lite recall preset on MQAR with ``n_pairs`` pairs, at width ``d_model`` and :data:`N_LAYERS` layers
    (``arch``: one of :data:`ARCHS`)."""
    check_choice("arch", arch, ARCHS)
    check_int("n_pairs", n_pairs, 1)
    check_int("d_model", d_model, 16)
    if d_model % 16:
        raise ValueError(f"d_model must be a multiple of 16 (the transformer's d_head), got {d_model}")
    base = get_preset("recall", arch.removesuffix("+alibi"), "lite", alibi=arch.endswith("+alibi"), steps=steps,
                      batch_size=BATCH, lr=LR, warmup_steps=100, min_lr_ratio=0.1,
                      eval_every=min(EVAL_EVERY, steps), seed=seed, stop_accuracy=STOP_ACCURACY)
    tunnel = make_tunnel(**{**base.tunnel, "variant": "mqar", "n_pairs": n_pairs, "n_queries": N_QUERIES})
    model = replace(base.model, d_model=d_model, n_layers=N_LAYERS, n_heads=max(d_model // 16, 1),
                    vocab_size=tunnel.vocab_size, n_positions=tunnel.seq_len + 1)
    return replace(base, tunnel=tunnel.config(), model=model)


def sweep_arch(preset: Preset) -> str:
    """The name in :data:`ARCHS` of a sweep preset's architecture ("transformer+alibi" with ALiBi)."""
    return preset.model.arch + ("+alibi" if preset.model.alibi else "")


def state_numbers(preset: Preset) -> int:
    """Numbers a model carries from one token to the next by the end of an episode (each architecture's
    own count, :func:`bwt_lite.models.state_numbers`: the LSTM's and Mamba's fixed states, the
    transformer's key-value cache, which grows with the sequence)."""
    return count_state(preset.model, make_tunnel(**preset.tunnel).seq_len)


def no_binding_accuracy(n_pairs: int, V: int = 16, episodes: int = 4096, seed: int = 0) -> float:
    """Query accuracy of the best reader without binding on MQAR with ``n_pairs`` pairs (the
    ``reader-no-binding`` baseline of :mod:`bwt_lite.baselines`, scored like a model)."""
    from .baselines import evaluate_baseline

    tunnel = make_tunnel("recall", V=V, variant="mqar", n_pairs=n_pairs, n_queries=N_QUERIES)
    return float(evaluate_baseline(tunnel, "reader-no-binding", episodes=episodes, seed=seed).accuracy)


BINDS = THRESHOLDS["recall"][2]  # query accuracy at which a cell binds: the primitives table's recall threshold
NO_BETTER = 0.05  # within this of the reader without binding: no binding shown


def verdict(row: dict[str, Any], no_binding: float) -> str:
    """"binds" (accuracy >= :data:`BINDS`), "no" (within :data:`NO_BETTER` of the reader without
    binding, ``no_binding``, or below it) or "partly" (in between)."""
    if row["accuracy"] >= BINDS:
        return "binds"
    return "no" if row["accuracy"] < no_binding + NO_BETTER else "partly"


def summary_lines(rows: Sequence[dict[str, Any]], no_binding: dict[int, float]) -> list[str]:
    """One line per (architecture, width): accuracy at each pair count, where it binds, episodes used."""
    lines = []
    for arch, d in dict.fromkeys((r["arch"], r["d_model"]) for r in rows):
        cells = sorted((r for r in rows if (r["arch"], r["d_model"]) == (arch, d)), key=lambda r: r["n_pairs"])
        accs = ", ".join(f"{r['n_pairs']} pairs {100 * r['accuracy']:.1f} %" for r in cells)
        verdicts = [(r["n_pairs"], verdict(r, no_binding[r["n_pairs"]])) for r in cells]
        binds = [n for n, v in verdicts if v == "binds"]
        flat = [n for n, v in verdicts if v == "no"]
        where = (f"binds at {', '.join(map(str, binds))} pairs" if binds else "binds at no pair count")
        if flat:
            where += f"; at or below the reader without binding at {', '.join(map(str, flat))}"
        used = ", ".join(f"{r['episodes']:,}" for r in cells)
        lines.append(f"{arch} d={d}: {accs}; {where} (episodes used: {used})")
    return lines


def sweep_presets(pairs: Iterable[int] = PAIRS, archs: Iterable[str] = ARCHS, widths: Iterable[int] = WIDTHS,
                  steps: int = STEPS) -> list[Preset]:
    return [sweep_preset(a, n, d, steps=steps) for n in pairs for a in archs for d in widths]


def run_sweep(pairs: Iterable[int] = PAIRS, archs: Iterable[str] = ARCHS, widths: Iterable[int] = WIDTHS, *,
              steps: int = STEPS, episodes: int = 1024, jobs: int = 1, root: Path | None = None,
              log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Train (into ``root``, else the cache; ``jobs`` at a time on the CPU) and evaluate every cell; one row
    per cell. A cell already trained there is loaded, verified, not trained again."""
    presets = sweep_presets(pairs, archs, widths, steps)
    if jobs > 1:
        train_presets(presets, jobs=jobs, root=root, log=log)
    rows = []
    for p in presets:
        folder = checkpoint_dir(p, root)
        if root is not None and (folder / "checkpoint.json").exists():
            model, meta = load_checkpoint(folder, p)
        elif root is not None:
            model, meta = train_and_save(p, progress=False, root=root, log=log)
        else:
            model, meta = load_or_train(p, progress=False, download=False, log=log)
        res = evaluate(model, make_tunnel(**p.tunnel), episodes=episodes, seed=0)
        rows.append({"arch": sweep_arch(p), "n_pairs": p.tunnel["n_pairs"], "d_model": p.model.d_model,
                     "n_layers": p.model.n_layers, "params": model.n_params, "state_numbers": state_numbers(p),
                     "accuracy": res.accuracy, "entropy_mae_bits": res.entropy_mae_bits, "kl_bits": res.kl_bits,
                     "steps": meta["train_steps"], "episodes": meta["train_steps"] * p.train.batch_size,
                     "train_time_s": meta.get("train_time_s"),
                     "curve": [[h["step"] * p.train.batch_size, h["accuracy"]] for h in meta["history"]]})
        log(f"{sweep_arch(p)} d={p.model.d_model} pairs={p.tunnel['n_pairs']}: accuracy {res.accuracy:.3f}")
    return rows


def merge_rows(old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``old`` with each row of ``new`` added, replacing the row of the same architecture, width and pairs."""
    key = lambda r: (r["arch"], r["d_model"], r["n_pairs"])  # noqa: E731
    merged = {key(r): r for r in old}
    merged.update({key(r): r for r in new})
    return list(merged.values())


def save_sweep(rows: Sequence[dict[str, Any]], path: Path | str = DATA_FILE, command: str = "") -> Path:
    """Write the rows with the sweep's recipe and the reader without binding's accuracy at each pair count
    (``command``: what produced them, several joined by ``; ``)."""
    path = Path(path)
    pairs = sorted({r["n_pairs"] for r in rows})
    path.write_text(json.dumps({"command": command, "steps": STEPS, "batch_size": BATCH, "lr": LR,
                                "stop_accuracy": STOP_ACCURACY, "n_queries": N_QUERIES,
                                "no_binding_accuracy": {str(n): no_binding_accuracy(n) for n in pairs},
                                "rows": list(rows)}, indent=1) + "\n")
    return path


def load_sweep(path: Path | str = DATA_FILE) -> dict[str, Any]:
    """The shipped sweep: ``{"command", "steps", "batch_size", "lr", "stop_accuracy", "n_queries",
    "no_binding_accuracy": {pairs: accuracy}, "rows": [...]}``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run experiments/capacity_sweep.py to create it")
    return json.loads(path.read_text())
