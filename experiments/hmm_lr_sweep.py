"""A recipe sweep for one tunnel: the lite HMM transformer's peak learning rate.

Backs the HMM recipe (``bwt_lite/presets.py``; lab notes, "HMM recipe"): peak learning rate 2e-3 with
a floor, 10,000 steps on soft targets. Each run is the shipped recipe with only ``lr`` changed
(``get_preset(..., lr=...)``), trained with ``bwt_lite.checkpoints.train_and_save`` into the
experiments' own folder and scored with ``bwt_lite.evaluate``. The shipped run took about 20 min on one
core, so the default three rates take about 1 h on 2 CPU cores, one run after the other (resumable:
rerun to continue).

    python experiments/hmm_lr_sweep.py [--lrs 1e-3 2e-3 4e-3] [--seed 0] [--steps N] [--out ...]
"""
from __future__ import annotations

from bwt_lite.presets import get_preset

from _common import parser, smoke, train_and_score, write


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "hmm_lr_sweep.json")
    p.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 2e-3, 4e-3])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rows = []
    for lr in args.lrs:
        preset = get_preset("hmm", "transformer", "lite", **smoke({"lr": lr, "seed": args.seed}, args.steps))
        rows.append({"lr": lr, **train_and_score(preset, args.root, args.episodes)})
        print(f"lr {lr:g}: entropy MAE {rows[-1]['entropy_mae_bits']:.4f} bits")
    write(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
