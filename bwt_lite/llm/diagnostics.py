"""Paper III's geometric diagnostics on language models (Paper III), computed from :class:`~bwt_lite.llm.probe.Probe`s.

- Key orthogonality: mean |cosine| between the keys of the *distinct* tokens of a prompt, per layer
  (averaged over key heads and prompts), with the analytic baseline for random Gaussian vectors,
  sqrt(2 / (pi d_head)), and the same measurement on a randomly initialised copy of the model.
- The authors' shipped probe measured cosines of raw token embeddings (no key projection):
  :func:`embedding_orthogonality` computes that quantity so both can be shown side by side.
- Dynamic focusing: entropy (bits) of the final query's attention per layer, and its drop with depth.
- Value manifold: centred PCA of one vector per prompt (PC1, PC1+PC2, participation ratio) with
  bootstrap intervals over prompts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .probe import Probe


def mean_abs_cosine(x: torch.Tensor) -> torch.Tensor:
    """Mean |cos| over the off-diagonal pairs of the rows of ``x`` (..., N, d), N >= 2 -> (...)."""
    if x.shape[-2] < 2:
        raise ValueError(f"need at least 2 vectors, got {x.shape[-2]}")
    u = torch.nn.functional.normalize(x.double(), dim=-1)
    c = (u @ u.transpose(-1, -2)).abs()
    n = x.shape[-2]
    return (c.sum((-1, -2)) - c.diagonal(dim1=-2, dim2=-1).sum(-1)) / (n * (n - 1))


def random_cosine_baseline(d: int, exact: bool = False) -> float:
    """E|cos| of two independent isotropic Gaussian vectors in ``d`` dimensions: sqrt(2 / (pi d)) (the
    large-d approximation), or with ``exact`` Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2))."""
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if exact:
        return math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi)
    return math.sqrt(2 / (math.pi * d))


def distinct_positions(input_ids: torch.Tensor, skip_first: bool = True) -> torch.Tensor:
    """Positions of the first occurrence of each distinct token (optionally without position 0, which
    many models use as an attention sink with outlying keys)."""
    seen, out = set(), []
    for t, tok in enumerate(input_ids.tolist()):
        if tok not in seen:
            seen.add(tok)
            if t > 0 or not skip_first:
                out.append(t)
    return torch.tensor(out, dtype=torch.long)


def key_orthogonality(probes: list[Probe], rotary: bool = False, skip_first: bool = True) -> torch.Tensor:
    """Mean |cos| between the keys of a prompt's distinct tokens, per layer (L,), averaged over key heads
    and prompts. ``rotary=False`` uses the key projections before the rotary embedding (content only)."""
    if not probes:
        raise ValueError("probes must be a non-empty list")
    per = []
    for p in probes:
        pos = distinct_positions(p.input_ids, skip_first)
        k = (p.keys if rotary else p.keys_pre)[:, :, pos]  # (L, H_kv, N, d)
        per.append(mean_abs_cosine(k).mean(1))
    return torch.stack(per).mean(0)


def embedding_orthogonality(model, probes: list[Probe], skip_first: bool = True) -> float:
    """The authors' shipped measurement: mean |cos| between the raw input-embedding rows of each prompt's
    distinct tokens (no norm, no key projection), averaged over prompts."""
    emb = model.get_input_embeddings().weight.detach().cpu()
    vals = [mean_abs_cosine(emb[p.input_ids[distinct_positions(p.input_ids, skip_first)]]).item() for p in probes]
    return sum(vals) / len(vals)


def entropy_bits(p: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in bits along the last dimension (0 log 0 = 0)."""
    p = p.double()
    return -(torch.where(p > 0, p * p.log2(), torch.zeros_like(p))).sum(-1)


def final_query_entropy(probe: Probe) -> torch.Tensor:
    """Entropy (bits) of the last position's attention distribution, per layer and head (L, H)."""
    return entropy_bits(probe.attention[:, :, -1, :])


@dataclass
class Focusing:
    per_layer: torch.Tensor  # (L,) mean over heads and prompts of the final query's attention entropy, bits
    max_bits: float  # log2 of the mean prompt length: the entropy of uniform attention
    drop_bits: float  # first layer minus last layer
    drop_fraction: float  # drop_bits / first layer


def attention_focusing(probes: list[Probe]) -> Focusing:
    """Dynamic focusing: how the final query's attention entropy changes from the first to the last layer."""
    if not probes:
        raise ValueError("probes must be a non-empty list")
    per = torch.stack([final_query_entropy(p).mean(1) for p in probes]).mean(0)
    max_bits = sum(math.log2(p.input_ids.numel()) for p in probes) / len(probes)
    drop = (per[0] - per[-1]).item()
    return Focusing(per, max_bits, drop, drop / per[0].item() if per[0] > 0 else float("nan"))


def qk_alignment(probe: Probe) -> torch.Tensor:
    """Cosine between the final query and every key it can see, per layer and query head (L, H, T),
    with rotary applied to both (the geometry behind the attention score)."""
    k = probe.keys.repeat_interleave(probe.group, dim=1)
    q = torch.nn.functional.normalize(probe.queries[:, :, -1:].double(), dim=-1)
    return (q * torch.nn.functional.normalize(k.double(), dim=-1)).sum(-1)


@dataclass
class PCASummary:
    pc1: float  # fraction of variance on PC1
    pc12: float  # on PC1 + PC2
    participation_ratio: float  # (sum lambda)^2 / sum lambda^2: the effective number of dimensions
    explained: torch.Tensor  # every component's fraction, descending
    scores: torch.Tensor  # (N, 2) coordinates on PC1, PC2
    ci: dict | None = None  # bootstrap 95 % intervals of pc1, pc12, participation_ratio


def _spectrum(x: torch.Tensor):
    x = x.double() - x.double().mean(0)
    _, s, vt = torch.linalg.svd(x, full_matrices=False)
    lam = s ** 2
    return lam, vt, x


def pca_summary(x: torch.Tensor, n_boot: int = 0, seed: int = 0, standardize: bool = False) -> PCASummary:
    """Centred PCA of the rows of ``x`` (N, d), N >= 3; ``n_boot`` > 0 adds percentile intervals from
    resampling the rows with replacement. ``standardize`` scales every coordinate to unit variance first
    (a few outlier coordinates with huge variance then no longer dominate the spectrum)."""
    if x.dim() != 2 or x.shape[0] < 3:
        raise ValueError(f"x must be (N, d) with N >= 3, got {tuple(x.shape)}")
    if standardize:
        sd = x.double().std(0)
        x = x.double()[:, sd > 0] / sd[sd > 0]
    lam, vt, xc = _spectrum(x)
    frac = lam / lam.sum()
    out = PCASummary(frac[0].item(), frac[:2].sum().item(), (lam.sum() ** 2 / (lam ** 2).sum()).item(), frac,
                     xc @ vt[:2].T)
    if n_boot > 0:
        g = torch.Generator().manual_seed(seed)
        stats = []
        for _ in range(n_boot):
            idx = torch.randint(0, x.shape[0], (x.shape[0],), generator=g)
            lam_b = _spectrum(x[idx])[0]
            f = lam_b / lam_b.sum()
            stats.append([f[0].item(), f[:2].sum().item(), (lam_b.sum() ** 2 / (lam_b ** 2).sum()).item()])
        s = torch.tensor(stats, dtype=torch.float64)
        lo, hi = s.quantile(0.025, dim=0), s.quantile(0.975, dim=0)
        out.ci = {k: (lo[i].item(), hi[i].item()) for i, k in enumerate(("pc1", "pc12", "participation_ratio"))}
    return out


def last_layer_values(probe: Probe) -> torch.Tensor:
    """The last layer's value vectors at the final position, all key heads concatenated (H_kv * d_head,)."""
    return probe.values[-1, :, -1].reshape(-1)
