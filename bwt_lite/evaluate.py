"""Held-out evaluation of a model on a tunnel with the canonical metrics (bwt_lite.metrics).

Evaluation episodes come from their own generator, seeded ``EVAL_SEED_BASE + seed``, never from
the training stream (which is seeded ``seed``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterator

import torch

from .arguments import check_int
from .metrics import categorical_scores, entropy_mae, entropy_mae_of_means, gaussian_scores
from .tunnels import Episodes, Recall, Tunnel

EVAL_SEED_BASE = 1_000_000_007


@dataclass
class EvalResult:
    entropy_mae_bits: float  # canonical: mean over episodes and positions of |H_model - H_Bayes|
    kl_bits: float  # mean KL(Bayes || model)
    tv: float | None  # mean total variation distance (categorical tunnels; None for Gaussian ones)
    accuracy: float | None  # top-1 accuracy against the sampled answer, over the positions the tunnel
    # scores (all, or for recall only the keys seen before: where Bayes is certain); None for Gaussian
    entropy_mae_of_means_bits: float  # the "difference of means" variant (not a headline)
    episodes: int
    per_position: dict[str, list[float]]  # h_model, h_bayes, entropy_mae, kl (and accuracy): one value per position

    def to_dict(self) -> dict:
        return asdict(self)


@torch.no_grad()
def held_out_batches(model: torch.nn.Module, tunnel: Tunnel, episodes: int, seed: int = 0, batch_size: int = 512,
                     device: str | torch.device | None = None) -> Iterator[tuple[Episodes, torch.Tensor]]:
    """Yield ``(episodes, model output)`` batches of ``episodes`` held-out episodes in eval mode.

    The generator is seeded ``EVAL_SEED_BASE + seed`` (never the training stream); the device is the
    model's (CPU for a model without parameters) unless given; the training flag is restored after.
    """
    check_int("episodes", episodes, 1)
    check_int("batch_size", batch_size, 1)
    if device is None:
        first = next(model.parameters(), None)
        device = first.device if first is not None else torch.device("cpu")
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(EVAL_SEED_BASE + seed)
    was_training = model.training
    model.eval()
    try:
        left = episodes
        while left > 0:
            n = min(batch_size, left)
            ep = tunnel.sample(n, gen)
            yield ep, model(ep.inputs, ep.positions)
            left -= n
    finally:
        model.train(was_training)


@torch.no_grad()
def evaluate(model: torch.nn.Module, tunnel: Tunnel, episodes: int = 2048, seed: int = 0,
             batch_size: int = 512, device: str | torch.device | None = None) -> EvalResult:
    """Evaluate on ``episodes`` fresh held-out episodes (generator seeded ``EVAL_SEED_BASE + seed``)."""
    parts: dict[str, list[torch.Tensor]] = {}
    for ep, out in held_out_batches(model, tunnel, episodes, seed, batch_size, device):
        if not torch.isfinite(out).all():
            raise FloatingPointError("the model's outputs are not finite (NaN or inf): its training diverged")
        if ep.probs is None:
            scores = gaussian_scores(out, ep.mean, ep.var)
        else:
            scores = categorical_scores(out, ep.probs, ep.target)
            scored = ep.probs.amax(-1) == 1.0 if tunnel.accuracy_on == "certain" else torch.ones_like(ep.target, dtype=torch.bool)
            scores["scored"] = scored.to(torch.float64)
        for k, v in scores.items():
            parts.setdefault(k, []).append(v.cpu())
    s = {k: torch.cat(v) for k, v in parts.items()}
    mae, mae_curve = entropy_mae(s["h_model"], s["h_bayes"])
    per_position = {
        "h_model": s["h_model"].mean(0).tolist(),
        "h_bayes": s["h_bayes"].mean(0).tolist(),
        "entropy_mae": mae_curve.tolist(),
        "kl": s["kl"].mean(0).tolist(),
    }
    tv = accuracy = None
    if "correct" in s:
        tv = s["tv"].mean().item()
        hits, scored = s["correct"] * s["scored"], s["scored"]
        accuracy = (hits.sum() / scored.sum()).item() if scored.sum() > 0 else None
        per_pos = hits.sum(0) / scored.sum(0)  # NaN where no episode has a scored position
        per_position["accuracy"] = [None if v != v else v for v in per_pos.tolist()]
    return EvalResult(
        entropy_mae_bits=mae,
        kl_bits=s["kl"].mean().item(),
        tv=tv,
        accuracy=accuracy,
        entropy_mae_of_means_bits=entropy_mae_of_means(s["h_model"], s["h_bayes"]),
        episodes=episodes,
        per_position=per_position,
    )


# ------------------------------------------------------------------------------------------------
# Associative recall (chapter 4): accuracy on recalled keys by memory load and by distance


def recall_key_stats(keys: torch.Tensor, V: int) -> dict[str, torch.Tensor]:
    """Facts about the key sequence of recall episodes, per (episode, position); ``keys`` is (B, P).

    - ``seen`` (bool): the key occurred earlier in its episode (a recall position);
    - ``stored`` (int64): distinct keys among the pairs before position ``t``, i.e. the number of
      distinct (key, value) pairs held in memory when the key at ``t`` is asked (the map is a
      function, so a repeated key repeats its pair);
    - ``previous`` (int64): index of the key's most recent earlier occurrence, -1 for a new key;
    - ``distance`` (int64): ``t - previous`` in pairs for a recall (1 = the pair just before), 0 for a new key.
    """
    if not isinstance(keys, torch.Tensor) or keys.dim() != 2 or keys.dtype != torch.int64:
        raise ValueError(f"keys must be a (B, P) int64 tensor, got {getattr(keys, 'dtype', type(keys).__name__)} "
                         f"of shape {tuple(getattr(keys, 'shape', ()))}")
    V = check_int("V", V, 2)
    if keys.numel() and (keys.min() < 0 or keys.max() >= V):
        raise ValueError(f"keys must lie in 0..V-1 = 0..{V - 1}, got values {keys.min().item()}..{keys.max().item()}")
    P = keys.shape[1]
    onehot = torch.nn.functional.one_hot(keys, V).to(torch.int64)  # (B, P, V)
    before = onehot.cumsum(1) - onehot  # occurrences of each key strictly before t
    seen = before.gather(2, keys.unsqueeze(2)).squeeze(2) > 0
    stored = (before > 0).sum(2)
    t = torch.arange(P, device=keys.device).view(1, P, 1)
    last = torch.where(onehot.bool(), t, torch.full_like(onehot, -1)).cummax(1).values  # last occurrence <= t
    last = torch.cat([torch.full_like(last[:, :1], -1), last[:, :-1]], 1)  # last occurrence < t
    previous = last.gather(2, keys.unsqueeze(2)).squeeze(2)
    distance = torch.where(seen, t.view(1, P) - previous, torch.zeros_like(previous))
    return {"seen": seen, "stored": stored, "previous": previous, "distance": distance}


@dataclass
class RecallBreakdown:
    """Scores on recall positions (seen keys) of held-out recall episodes, overall and grouped.

    ``by_stored`` groups by the number of distinct pairs stored before the query, ``by_distance``
    by the distance in pairs back to the key's most recent occurrence. Each is a dict of equal-length
    lists: ``bucket`` (ascending, only non-empty buckets), ``count`` (recall positions in it),
    ``accuracy`` (top-1 against the answer), ``entropy_mae`` (|H_model - H_Bayes| in bits, where
    H_Bayes = 0: the model's own entropy) and ``kl`` (KL(Bayes || model) in bits = -log2 q(answer)).
    """

    accuracy: float | None  # over all recall positions (evaluate()'s accuracy on the same seed)
    entropy_mae_bits: float | None  # over all recall positions
    kl_bits: float | None  # over all recall positions
    recalls: int  # recall positions scored
    episodes: int
    chance: float  # 1/V: top-1 accuracy of a prediction that ignores the context
    by_stored: dict[str, list]
    by_distance: dict[str, list]

    def to_dict(self) -> dict:
        return asdict(self)


def _group(bucket: torch.Tensor, scores: dict[str, torch.Tensor]) -> dict[str, list]:
    """Mean of each score per distinct value of ``bucket`` (1-D tensors of equal length)."""
    values, inverse, counts = torch.unique(bucket, sorted=True, return_inverse=True, return_counts=True)
    out: dict[str, list] = {"bucket": values.tolist(), "count": counts.tolist()}
    for name, s in scores.items():
        sums = torch.zeros(len(values), dtype=torch.float64).index_add_(0, inverse, s.to(torch.float64))
        out[name] = (sums / counts.to(torch.float64)).tolist()
    return out


@torch.no_grad()
def recall_breakdown(model: torch.nn.Module, tunnel: Tunnel, episodes: int = 2048, seed: int = 0,
                     batch_size: int = 512, device: str | torch.device | None = None) -> RecallBreakdown:
    """Top-1 accuracy, entropy error and KL on the recall positions of ``episodes`` held-out episodes
    of a recall tunnel (any variant), overall and grouped by stored pairs and by distance.

    The episodes are the ones :func:`evaluate` uses for the same ``seed`` and ``batch_size``
    (generator seeded ``EVAL_SEED_BASE + seed``), so the overall accuracy equals its accuracy.
    """
    if not isinstance(tunnel, Recall):
        raise ValueError(f"tunnel must be a recall tunnel (make_tunnel('recall', ...)), got {type(tunnel).__name__}")
    parts: dict[str, list[torch.Tensor]] = {}
    for ep, logits in held_out_batches(model, tunnel, episodes, seed, batch_size, device):
        scores = categorical_scores(logits, ep.probs, ep.target)
        stats = recall_key_stats(ep.inputs[:, ep.positions], tunnel.V)
        seen = stats["seen"]
        for name, v in (("stored", stats["stored"]), ("distance", stats["distance"]), ("correct", scores["correct"]),
                        ("entropy_mae", scores["abs_err"]), ("kl", scores["kl"])):
            parts.setdefault(name, []).append(v[seen].cpu())
    s = {k: torch.cat(v) for k, v in parts.items()}
    per = {"accuracy": s["correct"], "entropy_mae": s["entropy_mae"], "kl": s["kl"]}
    recalls = int(s["correct"].numel())
    mean = (lambda x: x.mean().item()) if recalls else (lambda x: None)
    return RecallBreakdown(
        accuracy=mean(s["correct"]), entropy_mae_bits=mean(s["entropy_mae"]), kl_bits=mean(s["kl"]),
        recalls=recalls, episodes=episodes, chance=1.0 / tunnel.V,
        by_stored=_group(s["stored"], per), by_distance=_group(s["distance"], per),
    )
