"""Recipes for the 9-layer lite HMM transformer (``depth="paper"``), each on the lite budget of
320,000 training episodes, trained side by side (one process each; on a GPU, all at once).

Backs the lab notes' "Lite models at the paper's depth": with the 4-layer model's recipe, 9 layers of
width 64 stop at the exact 1-symbol window filter (0.081 bits), where the 4-layer model gets to 0.047.
Each recipe changes the batch, learning rate, heads or weight averaging (``RECIPES``); every run is
scored on held-out episodes beside the window filters, with its learning curve. A GPU tries them in
minutes; the recipe that works is then trained on the CPU, as the shipped lite models are.

    python experiments/hmm_deep_recipes.py --device cuda --budget-s 200 [--recipes base lr5e-4 ...] [--out ...]
"""
from __future__ import annotations

import json
import time
import traceback
from dataclasses import replace
from pathlib import Path

from bwt_lite.baselines import evaluate_baselines
from bwt_lite.evaluate import evaluate
from bwt_lite.recipes import get_preset
from bwt_lite.runtime.options import RunOptions
from bwt_lite.train import fit
from bwt_lite.tunnels import make_tunnel

from _common import parser, run_parallel, smoke, write

EPISODES = 320_000  # the lite recipe's 10,000 steps x 32
# name: (training fields changed, model fields changed); steps follow from the batch and EPISODES
RECIPES: dict[str, tuple[dict, dict]] = {
    "base": ({}, {}),  # the 4-layer model's recipe: batch 32, peak lr 2e-3, floor 0.1, weight average 0.99
    "lr5e-4": ({"lr": 5e-4}, {}),
    "batch128": ({"batch_size": 128, "lr": 1e-3, "warmup_steps": 100}, {}),
    "heads4": ({}, {"n_heads": 4}),
    "no-average": ({"ema": 0.0}, {}),
    "seed2": ({"seed": 2}, {}),
}


def run(name: str, out: Path, device: str, steps: int | None, episodes: int, deadline: float) -> None:
    """Train and score one recipe, stopping at the first evaluation past ``deadline`` (a time.time());
    write ``out/<name>.json`` (with ``error`` if it failed)."""
    row: dict = {"recipe": name}
    try:
        base = get_preset("hmm", "transformer", "lite", depth="paper")
        train, model = RECIPES[name]
        cfg = replace(base.train, **train)
        cfg = replace(cfg, steps=EPISODES // cfg.batch_size, eval_every=max(EPISODES // cfg.batch_size // 20, 1))
        cfg = replace(cfg, **smoke({}, steps))
        preset = replace(base, train=cfg, model=replace(base.model, **model))
        run = RunOptions(device=device, progress=False).resolved()
        t0 = time.perf_counter()
        net, state = fit(preset.tunnel, preset.model, preset.train, run=run, stop=lambda r: time.time() > deadline)
        res = evaluate(net, make_tunnel(**preset.tunnel), episodes=episodes, device=run.device)
        row.update(changes={**train, **model}, steps=cfg.steps, trained_steps=state.step, batch_size=cfg.batch_size,
                   wall_s=round(time.perf_counter() - t0, 1), entropy_mae_bits=res.entropy_mae_bits,
                   kl_bits=res.kl_bits, history=[{"step": h["step"], "entropy_mae_bits": h["entropy_mae_bits"]}
                                                 for h in state.history])
    except Exception:
        row["error"] = traceback.format_exc()
        print(row["error"], flush=True)
    (out / f"{name}.json").write_text(json.dumps(row, indent=1) + "\n")
    print(f"{name}: {row.get('entropy_mae_bits')}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "hmm_deep_recipes.json")
    p.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    p.add_argument("--device", default="cpu")
    p.add_argument("--budget-s", type=float, default=float("inf"), help="stop every run at its first evaluation after")
    a = p.parse_args(argv)
    deadline = time.time() + a.budget_s
    folder = a.out.parent / "hmm_deep_recipes"
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(n, folder, a.device, a.steps, a.episodes, deadline) for n in a.recipes]
    run_parallel(run, jobs)
    t = make_tunnel(**get_preset("hmm", "transformer", "lite").tunnel)
    windows = {k: v.entropy_mae_bits for k, v in evaluate_baselines(t, episodes=a.episodes, max_window=4).items()}
    runs = [json.loads((folder / f"{n}.json").read_text()) for n in a.recipes]
    write(a.out, {"episodes": a.episodes, "budget_episodes": EPISODES, "windows": windows, "runs": runs})
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
