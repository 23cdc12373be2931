"""The HMM window-filter ladder: the exact filter that sees only the last w symbols, for w = 0, 1, ...

Backs chapter 3 and the primitives table (chapter 6): a model that reads the HMM's symbols must beat
every window filter of a few symbols on the default HMM, and the slow-mixing variant needs a longer
look-back (``bwt_lite.baselines``, built on ``bwt_lite.tunnels.hmm.recent_filter``).
No training; about a minute on 2 CPU cores.

    python experiments/hmm_window_ladder.py [--episodes 2048] [--out experiments/results/hmm_window_ladder.json]
"""
from __future__ import annotations

from bwt_lite.baselines import DEFAULT_MAX_WINDOW, SLOW_MIXING_MAX_WINDOW, evaluate_baselines
from bwt_lite.recipes import get_preset
from bwt_lite.tunnels import make_tunnel

from _common import parser, write


def ladder(variant: str | None, max_window: int, episodes: int) -> dict[str, dict[str, float]]:
    tunnel = make_tunnel(**get_preset("hmm", "transformer", variant=variant).tunnel)
    return {name: {"entropy_mae_bits": r.entropy_mae_bits, "kl_bits": r.kl_bits}
            for name, r in evaluate_baselines(tunnel, episodes=episodes, max_window=max_window).items()}


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0], "hmm_window_ladder.json").parse_args(argv)
    result = {"default": ladder(None, DEFAULT_MAX_WINDOW, args.episodes),
              "slow": ladder("slow", SLOW_MIXING_MAX_WINDOW, args.episodes)}
    for variant, rows in result.items():
        for name, r in rows.items():
            print(f"{variant:8} {name:12} entropy MAE {r['entropy_mae_bits']:.4f} bits  KL {r['kl_bits']:.4f} bits")
    write(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
