"""A seeds table: one lite preset trained from seeds 0-4, each scored on the same held-out episodes.

Backs the lab notes' "Reproducibility across threads and seeds" and every chapter claim made from one
seed: the spread says how far another seed's model may land. Default: the lite bijection transformer,
whose shipped run took about 48 min on one core, so five seeds take about 4 h run one after the other
(resumable: rerun to continue). Any lite preset: ``--tunnel hmm --arch transformer``.

    python experiments/seeds_table.py [--tunnel bijection] [--arch transformer] [--seeds 0 1 2 3 4] [--steps N]
"""
from __future__ import annotations

from bwt_lite.recipes import get_preset
from bwt_lite.stats import mean_ci

from _common import parser, smoke, train_and_score, write


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "seeds_table.json")
    p.add_argument("--tunnel", default="bijection")
    p.add_argument("--arch", default="transformer")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = p.parse_args(argv)
    rows = [{"seed": s, **train_and_score(get_preset(args.tunnel, args.arch, "lite", **smoke({"seed": s}, args.steps)),
                                          args.root, args.episodes)} for s in args.seeds]
    mean, low, high = mean_ci([r["entropy_mae_bits"] for r in rows])
    for r in rows:
        print(f"seed {r['seed']}: entropy MAE {r['entropy_mae_bits']:.4f} bits, KL {r['kl_bits']:.4f} bits")
    print(f"mean {mean:.4f} bits, 95 % CI [{low:.4f}, {high:.4f}]")
    write(args.out, {"rows": rows, "entropy_mae_bits": {"mean": mean, "ci95": [low, high]}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
