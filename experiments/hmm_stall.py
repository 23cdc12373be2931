"""Why HMM transformer runs stall: the first steps of a run, watched every few steps.

A lite HMM transformer run either leaves the uniform belief (the loss at ln S) early or never does. This
script replays the first ``--steps`` steps of a recipe exactly as :func:`bwt_lite.train.fit` trains them
(the same initial weights, optimizer, episode stream and step; the weight average plays no part in
training) and every ``--every`` steps records, on a fixed batch of held-out episodes:

- the training loss (mean over the interval) and the global gradient norm before clipping (mean);
- the raw model's entropy MAE against the exact filter (the uniform belief scores the first row of
  the window ladder, ``uniform``);
- for every head at the symbol tokens (the prediction positions): the share of attention on the
  emission entries of the current symbol (``E[:, o_t]``, the S header tokens that say what o_t means:
  reading them is the first step of filtering), on the whole emission block, on the transition block,
  on earlier symbols, and the entropy of the attention row (bits).

``--change`` takes the training fields as ``experiments/cell_seeds.py`` does (a curriculum included), so
a stalled seed and an escaping one, or a recipe and its candidate, can be compared step by step.

    python experiments/hmm_stall.py --variant slow --seeds 1 3 --steps 3000 --every 100 --out stall.json
    python experiments/hmm_stall.py --variant slow --seeds 1 --change easy_steps=2000,easy_tunnel=sharpen:3
"""
from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import Any

import torch

from bwt_lite.metrics import entropy_bits, entropy_from_logits_bits
from bwt_lite.models import run_with_cache
from bwt_lite.recipes import get_preset
from bwt_lite.train import easy_tunnel, init_model, make_optimizer, train_step
from bwt_lite.tunnels import HMM, make_tunnel

from _common import parser, write
from cell_seeds import parse_change


def attention_shares(model: torch.nn.Module, tunnel: HMM, episodes: Any) -> list[list[dict[str, float]]]:
    """Per layer, per head: where the symbol tokens' attention goes (shares of 1) and its entropy (bits)."""
    names = [n for n, _ in model.named_modules() if n.endswith("attn.hook_pattern")]
    with torch.no_grad():
        _, cache = run_with_cache(model, episodes.inputs, episodes.positions, names=names)
    S, O, L = tunnel.S, tunnel.O, tunnel.seq_len
    q = tunnel.positions  # the symbol tokens, (K,)
    obs = episodes.inputs[:, q] - HMM.SYMBOL0  # (B, K)
    e0 = 2 + S * S  # first emission entry
    right = e0 + torch.arange(S)[None, None, :] * O + obs[:, :, None]  # (B, K, S): E[s, o_t] for every s
    keys = torch.arange(L)
    symbol_keys = (keys > tunnel.header_len) & ((keys - tunnel.header_len) % 2 == 1)
    earlier = symbol_keys[None, :] & (keys[None, :] < q[:, None])  # (K, L): the symbols before each query
    layers = []
    for name in names:
        pat = cache[name][:, :, q, :]  # (B, H, K, L)
        heads = []
        for h in range(pat.shape[1]):
            a = pat[:, h]  # (B, K, L)
            heads.append({
                "right_E": a.gather(2, right).sum(-1).mean().item(),
                "E_block": a[..., e0:e0 + S * O].sum(-1).mean().item(),
                "T_block": a[..., 1:1 + S * S].sum(-1).mean().item(),
                "earlier_symbols": (a * earlier[None]).sum(-1).mean().item(),
                "entropy_bits": entropy_bits(a).mean().item(),
            })
        layers.append(heads)
    return layers


def replay(preset: Any, steps: int, every: int, probe_episodes: int) -> list[dict[str, Any]]:
    """The first ``steps`` steps of ``preset``'s run, as fit trains them, probed every ``every`` steps."""
    cfg, tunnel = preset.train, make_tunnel(**preset.tunnel)
    easy = easy_tunnel(preset.tunnel, cfg)
    model = init_model(preset.model, cfg.seed)
    opt = make_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    probe = tunnel.sample(probe_episodes, torch.Generator().manual_seed(10_000 + cfg.seed))
    h_bayes = entropy_bits(probe.probs)
    rows, losses, norms, stats, t0 = [], [], [], {}, time.perf_counter()
    for step in range(steps + 1):
        if step % every == 0:
            model.eval()
            with torch.no_grad():
                h_model = entropy_from_logits_bits(model(probe.inputs, probe.positions))
            mae = (h_model - h_bayes).abs().mean().item()
            rows.append({"step": step, "loss": sum(losses) / len(losses) if losses else None,
                         "grad_norm": sum(norms) / len(norms) if norms else None, "entropy_mae_bits": mae,
                         "heads": attention_shares(model, tunnel, probe), "elapsed_s": time.perf_counter() - t0})
            losses, norms = [], []
            model.train()
        if step == steps:
            break
        source = easy if easy is not None and step < cfg.easy_steps else tunnel
        loss = train_step(model, model, opt, source.sample(cfg.batch_size, gen), cfg, step,
                          device=torch.device("cpu"), stats=stats)
        losses.append(loss.item())
        norms.append(stats["grad_norm"].item())
    return rows


def summary(row: dict[str, Any]) -> str:
    best = max((h["right_E"], i, j) for i, layer in enumerate(row["heads"]) for j, h in enumerate(layer))
    look = max(h["earlier_symbols"] for layer in row["heads"] for h in layer)
    loss = "" if row["loss"] is None else f"{row['loss']:.4f}"
    norm = "" if row["grad_norm"] is None else f"{row['grad_norm']:.3f}"
    return (f"{row['step']:>6} {loss:>8} {norm:>7} {row['entropy_mae_bits']:>7.4f} "
            f"{best[0]:>7.3f} L{best[1]}H{best[2]} {look:>9.3f}")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], "hmm_stall.json")
    p.add_argument("--variant", choices=["default", "slow"], default="slow")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 3])
    p.add_argument("--every", type=int, default=100, help="steps between probes")
    p.add_argument("--probe-episodes", type=int, default=256)
    p.add_argument("--change", default=None, help="training fields changed, as in cell_seeds.py")
    args = p.parse_args(argv)
    steps = args.steps or 3000
    variant = None if args.variant == "default" else args.variant
    runs = []
    for seed in args.seeds:
        base = get_preset("hmm", "transformer", "lite", variant=variant)
        preset = replace(base, train=replace(base.train, seed=seed, **parse_change(args.change)))
        print(f"{preset.name} seed {seed} ({args.change or 'the recipe'}): step, loss, grad norm, entropy MAE, "
              f"largest share on E[:, o_t] (head), largest share on earlier symbols", flush=True)
        rows = replay(preset, steps, args.every, args.probe_episodes)
        for row in rows:
            print(summary(row), flush=True)
        runs.append({"seed": seed, "change": args.change, "preset": preset.name, "key": preset.key(),
                     "rows": rows})
    write(args.out, {"command": ["python", "experiments/hmm_stall.py", *(argv or sys.argv[1:])],
                     "variant": args.variant, "steps": steps, "every": args.every,
                     "probe_episodes": args.probe_episodes, "runs": runs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
