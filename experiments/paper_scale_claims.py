"""The scorecard's paper-scale rows: the claims measured on the paper-size transformers trained by
``experiments/paper_scale.py`` (on a GPU), written to ``bwt_lite/data/paper_scale.json``.

    python experiments/paper_scale_claims.py --checkpoints DIR --train-command "..." \\
        --out bwt_lite/data/paper_scale.json

Runs on a CPU (one thread: about 3 min for four models). ``--train-command`` records how the checkpoints were trained.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from bwt_lite.claims import FAST, FULL
from bwt_lite.claims.paper_scale import PAPER_SCALE_FILE, measure

from _common import write


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoints", type=Path, required=True, help="folder of the paper-scale checkpoint folders")
    p.add_argument("--train-command", required=True, help="the command that trained them (recorded)")
    p.add_argument("--out", type=Path, default=PAPER_SCALE_FILE)
    p.add_argument("--fast", action="store_true", help="the scorecard's tiny test budget (a smoke run)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    result = measure(a.checkpoints, budget=FAST if a.fast else FULL, log=print)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    result["commands"] = [a.train_command, "python experiments/paper_scale_claims.py --checkpoints DIR "
                          f"--out {a.out.name}"]
    write(a.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
