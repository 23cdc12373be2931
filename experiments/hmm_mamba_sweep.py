"""The lite default-HMM Mamba against the paper's 0.024 bits: its recipe with one change per run.

Backs chapter 10, section 10.1, which renders ``bwt_lite/data/hmm_mamba_sweep.json``. Each run is the shipped
lite HMM Mamba recipe (``get_preset("hmm", "mamba", "lite")``: 20,000 x 16 = 320,000 training episodes) with
the named fields changed: training fields (``lr``, ``warmup_steps``, ``seed``) or the model's size
(``d_model``, ``n_layers``; Mamba's state grows with both). The run with no change is the shipped checkpoint,
loaded, not trained. Every other run trains into ``--root`` (resumable: rerun to continue) and is scored on
held-out episodes beside the exact window filters w = 0..4, with its held-out learning curve. A run of the
recipe's size takes about 20 min on one core; at ``d_model=160`` about twice that.

    python experiments/hmm_mamba_sweep.py --runs recipe d_model=160 lr=1e-3,warmup_steps=2000 \\
        --out bwt_lite/data/hmm_mamba_sweep.json          # --append adds runs to the file
"""
from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from bwt_lite.baselines import evaluate_baselines
from bwt_lite.capacity import state_numbers
from bwt_lite.checkpoints import load_or_train
from bwt_lite.recipes import Preset, get_preset
from bwt_lite.recipes.key_schema import key_fields
from bwt_lite.tunnels import make_tunnel

from _common import appended, parser, score, shown_args, smoke, train, write

TRAIN_FIELDS = {"lr": float, "warmup_steps": int, "seed": int}
MODEL_FIELDS = {"d_model": int, "n_layers": int}


def parse_change(text: str) -> dict[str, Any]:
    """``"lr=1e-3,warmup_steps=2000"`` -> ``{"lr": 0.001, "warmup_steps": 2000}``; ``"recipe"`` -> ``{}``."""
    if text == "recipe":
        return {}
    change = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        kind = {**TRAIN_FIELDS, **MODEL_FIELDS}.get(name)
        if kind is None or not value:
            raise SystemExit(f"--runs: {item!r} is not NAME=VALUE with NAME one of "
                             f"{', '.join([*TRAIN_FIELDS, *MODEL_FIELDS])}")
        change[name] = kind(value)
    return change


def sweep_preset(change: dict[str, Any], steps: int | None = None) -> Preset:
    """The lite HMM Mamba recipe with ``change`` applied (and a smoke run's ``steps``)."""
    train = {k: v for k, v in change.items() if k in TRAIN_FIELDS}
    preset = get_preset("hmm", "mamba", "lite", **smoke(train, steps))
    model = {k: v for k, v in change.items() if k in MODEL_FIELDS}
    return replace(preset, model=replace(preset.model, **model)) if model else preset


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "hmm_mamba_sweep.json")
    p.add_argument("--runs", nargs="+", default=["recipe"],
                   help="one change per run: 'recipe' (none) or NAME=VALUE[,NAME=VALUE], e.g. d_model=160")
    p.add_argument("--append", action="store_true",
                   help="add these runs to those already in --out (same episodes; a rerun replaces its row)")
    args = p.parse_args(argv)
    recipe = get_preset("hmm", "mamba", "lite")
    windows = {name: {"entropy_mae_bits": r.entropy_mae_bits, "kl_bits": r.kl_bits}
               for name, r in evaluate_baselines(make_tunnel(**recipe.tunnel), episodes=args.episodes,
                                                 max_window=4).items()}
    rows = []
    for text in args.runs:
        change = parse_change(text)
        preset = sweep_preset(change, args.steps)
        shipped = preset.key() == recipe.key()  # the shipped checkpoint: loaded, not trained
        model, meta = load_or_train(preset, download=False, log=print) if shipped else train(preset, args.root)
        m, t = preset.model, preset.train
        row = {"change": text, "d_model": m.d_model, "n_layers": m.n_layers, "params": model.n_params, "lr": t.lr,
               "warmup_steps": t.warmup_steps, "seed": t.seed, "batch_size": t.batch_size,
               "state_numbers": state_numbers(preset), **score(preset, model, meta, args.episodes)}
        rows.append(row)
        print(f"{text}: entropy MAE {row['entropy_mae_bits']:.4f} bits, KL {row['kl_bits']:.4f} bits "
              f"({row['train_time_s'] / 60:.1f} min)")
    words = shown_args(argv if argv is not None else sys.argv[1:], dirs=("--root",), files=("--out",))
    commands = [("python experiments/hmm_mamba_sweep.py " + " ".join(words)).strip()]
    rows, commands = appended(p, args, rows, commands, {"episodes": args.episodes}, lambda r: r["change"])
    write(args.out, {"recipe": key_fields(recipe.train), "model": key_fields(recipe.model), "episodes": args.episodes,
                     "commands": commands, "windows": windows, "runs": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
