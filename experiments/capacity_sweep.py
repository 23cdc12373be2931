"""Re-run the binding-capacity sweep of chapter 6 and write bwt_lite/data/capacity_sweep.json.

MQAR recall accuracy for 4, 8 and 16 stored pairs; transformer (with the learned position table alone
and with ALiBi's recency bias added), LSTM and Mamba at d_model 64 and 128; at most 8,000 steps x 32
episodes each, ending at the first held-out evaluation with 99 % accuracy (bwt_lite.capacity). About
115 min of CPU, one cell after the other; --jobs 2 halves the wall time.

    python experiments/capacity_sweep.py --jobs 2
    python experiments/capacity_sweep.py --archs transformer+alibi --append   # add one architecture's rows
    python experiments/capacity_sweep.py --steps 20 --pairs 4 --widths 64 --out /tmp/smoke.json   # a smoke run, seconds
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bwt_lite import capacity

from _common import RESULTS, shown_args


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1, help="cells trained at once on the CPU")
    p.add_argument("--steps", type=int, default=capacity.STEPS, help="training steps per cell")
    p.add_argument("--episodes", type=int, default=1024, help="held-out episodes per cell")
    p.add_argument("--out", default=str(capacity.DATA_FILE), help="where the rows go (JSON)")
    p.add_argument("--archs", nargs="+", choices=capacity.ARCHS, default=list(capacity.ARCHS),
                   help="architectures to train (default: all)")
    p.add_argument("--append", action="store_true", help="add these rows to those already in --out")
    p.add_argument("--pairs", nargs="+", type=int, default=list(capacity.PAIRS), help="stored pairs per cell")
    p.add_argument("--widths", nargs="+", type=int, default=list(capacity.WIDTHS), help="d_model of each cell")
    p.add_argument("--root", type=Path, default=RESULTS / "checkpoints",
                   help="checkpoint folder of these runs (never your cache)")
    args = p.parse_args(argv)
    rows = capacity.run_sweep(args.pairs, args.archs, args.widths, steps=args.steps, episodes=args.episodes,
                              jobs=args.jobs, root=args.root)
    words = shown_args(argv if argv is not None else sys.argv[1:], files=("--out",))
    command = ("python experiments/capacity_sweep.py " + " ".join(words)).strip()
    if args.append and Path(args.out).exists():
        old = capacity.load_sweep(args.out)
        rows, command = capacity.merge_rows(old["rows"], rows), f"{old['command']}; {command}"
    print(f"wrote {capacity.save_sweep(rows, args.out, command=command)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
