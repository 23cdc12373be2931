"""Re-run the binding-capacity sweep of chapter 6 and write bwt_lite/data/capacity_sweep.json.

MQAR recall accuracy for 4, 8 and 16 stored pairs; transformer, LSTM and Mamba at d_model 64 and 128;
at most 8,000 steps x 32 episodes each, ending at the first held-out evaluation with 99 % accuracy
(bwt_lite.capacity). About 75 min of CPU, one cell after the other; --jobs 2 halves the wall time.

    python experiments/capacity_sweep.py --jobs 2
    python experiments/capacity_sweep.py --steps 20 --out /tmp/smoke.json   # a smoke run, seconds
"""
from __future__ import annotations

import argparse
import sys

from bwt_lite import capacity


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1, help="cells trained at once on the CPU")
    p.add_argument("--steps", type=int, default=capacity.STEPS, help="training steps per cell")
    p.add_argument("--episodes", type=int, default=1024, help="held-out episodes per cell")
    p.add_argument("--out", default=str(capacity.DATA_FILE), help="where the rows go (JSON)")
    args = p.parse_args(argv)
    rows = capacity.run_sweep(steps=args.steps, episodes=args.episodes, jobs=args.jobs)
    command = "python experiments/capacity_sweep.py " + " ".join(argv if argv is not None else sys.argv[1:])
    print(f"wrote {capacity.save_sweep(rows, args.out, command=command.strip())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
