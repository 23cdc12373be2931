"""Held-out evaluation of a model on a tunnel with the canonical metrics (spec 1.9).

Evaluation episodes come from their own generator, seeded ``EVAL_SEED_BASE + seed``, never from
the training stream (which is seeded ``seed``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from .metrics import categorical_scores, entropy_mae, entropy_mae_of_means
from .tunnels import Tunnel
from .validation import check_int

EVAL_SEED_BASE = 1_000_000_007


@dataclass
class EvalResult:
    entropy_mae_bits: float  # canonical: mean over episodes and positions of |H_model - H_Bayes|
    kl_bits: float  # mean KL(Bayes || model)
    tv: float  # mean total variation distance
    accuracy: float  # top-1 accuracy against the sampled answer
    entropy_mae_of_means_bits: float  # the "difference of means" variant (not a headline)
    episodes: int
    per_position: dict[str, list[float]]  # h_model, h_bayes, entropy_mae, kl, accuracy: one value per position

    def to_dict(self) -> dict:
        return asdict(self)


@torch.no_grad()
def evaluate(model: torch.nn.Module, tunnel: Tunnel, episodes: int = 2048, seed: int = 0,
             batch_size: int = 512, device: str | torch.device | None = None) -> EvalResult:
    """Evaluate on ``episodes`` fresh held-out episodes (generator seeded ``EVAL_SEED_BASE + seed``)."""
    check_int("episodes", episodes, 1)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(EVAL_SEED_BASE + seed)
    was_training = model.training
    model.eval()
    parts: dict[str, list[torch.Tensor]] = {}
    left = episodes
    while left > 0:
        n = min(batch_size, left)
        ep = tunnel.sample(n, gen)
        scores = categorical_scores(model(ep.inputs, ep.positions), ep.probs, ep.target)
        for k, v in scores.items():
            parts.setdefault(k, []).append(v.cpu())
        left -= n
    model.train(was_training)
    s = {k: torch.cat(v) for k, v in parts.items()}
    mae, mae_curve = entropy_mae(s["h_model"], s["h_bayes"])
    return EvalResult(
        entropy_mae_bits=mae,
        kl_bits=s["kl"].mean().item(),
        tv=s["tv"].mean().item(),
        accuracy=s["correct"].mean().item(),
        entropy_mae_of_means_bits=entropy_mae_of_means(s["h_model"], s["h_bayes"]),
        episodes=episodes,
        per_position={
            "h_model": s["h_model"].mean(0).tolist(),
            "h_bayes": s["h_bayes"].mean(0).tolist(),
            "entropy_mae": mae_curve.tolist(),
            "kl": s["kl"].mean(0).tolist(),
            "accuracy": s["correct"].mean(0).tolist(),
        },
    )
