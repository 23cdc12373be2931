"""A recipe sweep for the lite HMM transformer: peak learning rates x training seeds, on either HMM.

Backs the HMM recipes (``bwt_lite/recipes/tunnel_train.py``; lab notes, "HMM recipe" and "Seeds on the slow-mixing
HMM") and chapter 6's slow-HMM section, which renders ``bwt_lite/data/hmm_slow_seeds.json``. Each run is
the shipped recipe of the chosen variant with only ``lr`` and ``seed`` changed (``get_preset(..., lr=...,
seed=...)``), trained with ``bwt_lite.checkpoints.train_and_save`` into the experiments' own folder
(resumable: rerun to continue) and scored with ``bwt_lite.evaluate`` on held-out episodes, beside the
exact window filters of ``bwt_lite.baselines`` on the same episodes and the primitives table's verdict
(``bwt_lite.reproduce.realises``), with its held-out learning curve. A run takes about 15-20 min on one
core, so the slow HMM's two rates x five seeds take about 3 h on 2 CPU cores.

    python experiments/hmm_lr_sweep.py [--variant default|slow] [--lrs 1e-3 2e-3 4e-3] [--seeds 0 1 2]
                                       [--steps N] [--episodes 2048] [--out ...]
    python experiments/hmm_lr_sweep.py --variant slow --lrs 2e-3 1e-3 --seeds 0 1 2 3 4 \\
        --out bwt_lite/data/hmm_slow_seeds.json       # --append adds runs to the file
"""
from __future__ import annotations

import sys

from bwt_lite.baselines import evaluate_baselines
from bwt_lite.recipes import get_preset
from bwt_lite.recipes.key_schema import key_fields
from bwt_lite.reproduce import realises
from bwt_lite.tunnels import make_tunnel

from _common import appended, parser, smoke, train_and_score, write

MAX_WINDOW = {"default": 4, "slow": 8}  # the window ladder scored beside the runs


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "hmm_lr_sweep.json")
    p.add_argument("--variant", choices=sorted(MAX_WINDOW), default="default")
    p.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 2e-3, 4e-3])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--append", action="store_true",
                   help="add these runs to those already in --out (same variant and episodes; a rerun replaces its row)")
    args = p.parse_args(argv)
    variant = None if args.variant == "default" else args.variant
    tunnel_name = "hmm" if variant is None else f"hmm-{variant}"
    base = get_preset("hmm", "transformer", "lite", variant=variant)
    windows = {name: {"entropy_mae_bits": r.entropy_mae_bits, "kl_bits": r.kl_bits}
               for name, r in evaluate_baselines(make_tunnel(**base.tunnel), episodes=args.episodes,
                                                 max_window=MAX_WINDOW[args.variant]).items()}
    rows = []
    for lr in args.lrs:
        for seed in args.seeds:
            preset = get_preset("hmm", "transformer", "lite", variant=variant,
                                **smoke({"lr": lr, "seed": seed}, args.steps))
            row = {"lr": lr, "seed": seed, **train_and_score(preset, args.root, args.episodes)}
            row["realises"] = realises(tunnel_name, row, windows)
            rows.append(row)
            print(f"lr {lr:g}, seed {seed}: entropy MAE {row['entropy_mae_bits']:.4f} bits, "
                  f"KL {row['kl_bits']:.4f} bits, realises {row['realises']}")
    command = ("python experiments/hmm_lr_sweep.py " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    commands = [command]
    rows, commands = appended(p, args, rows, commands, {"variant": args.variant, "episodes": args.episodes},
                              lambda r: (r["lr"], r["seed"]))
    write(args.out, {"variant": args.variant, "recipe": key_fields(base.train), "episodes": args.episodes,
                     "commands": commands, "windows": windows, "runs": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
