"""HMM length generalisation by position scheme: trained at K = 20, scored per position up to K = 50.

Backs chapter 3 and the scorecard's hmm-length row: the paper's HMM transformer, trained at K = 20,
generalises to K = 30 and 50; the lite one, with a learned position table whose rows past the training
length are never trained, errs about 3.9x more past position 20 than before it. Each scheme of
``bwt_lite.models.POSITIONS`` (learned table, fixed sinusoidal table, rotary embedding in attention,
ALiBi's recency bias in attention, none) trains the lite HMM transformer's recipe with only ``positions`` changed
(``get_preset(..., positions=...)``), into the experiments' own folder (resumable: rerun to continue).
Each model is scored with ``bwt_lite.evaluate`` on tunnels made at K = 20, 30 and 50 (seed 0 for
every model, so all see the same episodes), and its per-position errors are averaged over the
positions inside the training length (< 20) and past it (>= 20); past it, the exact window filters of
0-2 symbols (``bwt_lite.baselines``) are scored on the same episodes. A scheme transports past the
training length when its past errors are at most ``MARGIN`` (``bwt_lite.reproduce``) times the best
window's, both entropy MAE and KL: the scorecard's rule. The shipped HMM run took about 20 min on one
core, so the five schemes take about 1 h 40 min on 2 CPU cores, one run after the other.

    python experiments/hmm_positions.py [--schemes learned sinusoidal rotary alibi none] [--lengths 20 30 50]
        [--seed 0] [--alibi] [--warmup-steps N] [--steps N] [--episodes 2048] [--out ...] [--append]

``--alibi`` (with ``--schemes learned``) trains the learned table with ALiBi's recency bias added;
``--warmup-steps`` changes the recipe's learning-rate warm-up. Each run is a row of ``runs``, named by its
scheme, ALiBi, seed and warm-up; ``--append`` adds the rows to those already in ``--out`` (a rerun
replaces its row). The run that is the shipped HMM transformer's recipe is the shipped checkpoint, loaded.
Chapter 3, section 3.6, renders ``bwt_lite/data/hmm_positions.json``.
"""
from __future__ import annotations

import sys
from typing import Any

from bwt_lite.baselines import evaluate_baseline
from bwt_lite.checkpoints import load_or_train
from bwt_lite.evaluate import evaluate
from bwt_lite.models import POSITIONS
from bwt_lite.recipes import get_preset
from bwt_lite.recipes.key_schema import key_fields
from bwt_lite.reproduce import MARGIN
from bwt_lite.tunnels import make_tunnel

from _common import appended, parser, shown_args, smoke, train, write

WINDOWS = ("window-0", "window-1", "window-2")  # the reference windows of the scorecard's transport rule


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def split(per_position: dict[str, list[float]], trained: int) -> dict[str, dict[str, float | None]]:
    """Mean entropy MAE and KL over the positions before ``trained`` and from it on (None: no such position)."""
    e, kl = per_position["entropy_mae"], per_position["kl"]
    return {"in_range": {"entropy_mae_bits": mean(e[:trained]), "kl_bits": mean(kl[:trained])},
            "past": {"entropy_mae_bits": mean(e[trained:]), "kl_bits": mean(kl[trained:])}}


def windows_past(tunnel_args: dict[str, Any], lengths: list[int], trained: int, episodes: int
                 ) -> dict[int, dict[str, dict[str, float | None]]]:
    """Per length past the training one: each reference window's mean errors past position ``trained``."""
    out = {}
    for K in (k for k in lengths if k > trained):
        tunnel = make_tunnel(**{**tunnel_args, "K": K})
        out[K] = {w: split(evaluate_baseline(tunnel, w, episodes=episodes, seed=0).per_position, trained)["past"]
                  for w in WINDOWS}
    return out


def transports(past: dict[str, float | None], windows: dict[str, dict[str, float | None]]) -> bool:
    """Past the training length, within ``MARGIN`` times the best window's entropy MAE and KL?"""
    return all(past[m] <= MARGIN * min(w[m] for w in windows.values()) for m in ("entropy_mae_bits", "kl_bits"))


def score(model: Any, tunnel_args: dict[str, Any], K: int, trained: int, episodes: int,
          windows: dict[str, dict[str, float | None]] | None) -> dict[str, Any]:
    tunnel, cfg = make_tunnel(**{**tunnel_args, "K": K}), model.cfg
    if cfg.positions == "learned" and tunnel.seq_len > cfg.n_positions:  # no table rows for these positions
        return {"skipped": f"episodes of {tunnel.seq_len} tokens exceed the learned table's {cfg.n_positions} rows"}
    res = evaluate(model, tunnel, episodes=episodes, seed=0)
    row: dict[str, Any] = {"all": {"entropy_mae_bits": res.entropy_mae_bits, "kl_bits": res.kl_bits},
                           **split(res.per_position, trained),
                           "per_position": {k: res.per_position[k] for k in ("entropy_mae", "kl")}}
    if windows is not None:
        row["past_over_in_range"] = row["past"]["entropy_mae_bits"] / row["in_range"]["entropy_mae_bits"]
        row["transports"] = transports(row["past"], windows)
    return row


def run_id(row: dict[str, Any]) -> tuple:
    """What names a run: its scheme, ALiBi, seed and warm-up."""
    return row["scheme"], row["alibi"], row["seed"], row["warmup_steps"]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "hmm_positions.json")
    p.add_argument("--schemes", nargs="+", choices=POSITIONS, default=list(POSITIONS))
    p.add_argument("--lengths", type=int, nargs="+", default=[20, 30, 50])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alibi", action="store_true", help="add ALiBi's recency bias to the learned table (schemes: learned)")
    p.add_argument("--warmup-steps", type=int, default=None, help="learning-rate warm-up steps (default: the recipe's)")
    p.add_argument("--append", action="store_true",
                   help="add these runs to those already in --out (same episodes and lengths; a rerun replaces its row)")
    args = p.parse_args(argv)
    if args.alibi and args.schemes != ["learned"]:
        p.error("--alibi goes with --schemes learned (ALiBi alone is the scheme 'alibi')")
    base = get_preset("hmm", "transformer", "lite")
    trained = int(base.tunnel["K"])  # positions from here on were never seen in training
    windows = windows_past(base.tunnel, args.lengths, trained, args.episodes)
    changes = {"seed": args.seed} | ({} if args.warmup_steps is None else {"warmup_steps": args.warmup_steps})
    runs = []
    for scheme in args.schemes:
        preset = get_preset("hmm", "transformer", "lite", positions=scheme, alibi=args.alibi, **smoke(changes, args.steps))
        shipped = preset.key() == base.key()  # the shipped checkpoint: loaded, not trained
        model, meta = load_or_train(preset, download=False, log=print) if shipped else train(preset, args.root)
        per_length = {K: score(model, preset.tunnel, K, trained, args.episodes, windows.get(K)) for K in args.lengths}
        runs.append({"scheme": scheme, "alibi": preset.model.alibi, "seed": preset.train.seed,
                     "warmup_steps": preset.train.warmup_steps, "shipped": shipped, "name": preset.name,
                     "key": preset.key()[:16], "params": model.n_params, "train_steps": meta["train_steps"],
                     "train_time_s": meta["train_time_s"], "per_length": per_length})
        for K, r in per_length.items():
            if "skipped" in r:
                print(f"{scheme:10} K={K}: skipped, {r['skipped']}")
                continue
            past = r["past"]["entropy_mae_bits"]
            print(f"{scheme:10} K={K}: entropy MAE {r['in_range']['entropy_mae_bits']:.4f} bits before position "
                  f"{trained}" + ("" if past is None else f", {past:.4f} past it (transports: {r['transports']})"))
    words = shown_args(argv if argv is not None else sys.argv[1:], dirs=("--root",), files=("--out",))
    commands = [("python experiments/hmm_positions.py " + " ".join(words)).strip()]
    runs, commands = appended(p, args, runs, commands, {"episodes": args.episodes, "lengths": args.lengths}, run_id)
    write(args.out, {"recipe": key_fields(base.train), "trained_length": trained, "lengths": args.lengths,
                     "episodes": args.episodes, "margin": MARGIN, "commands": commands, "windows_past": windows,
                     "runs": runs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
