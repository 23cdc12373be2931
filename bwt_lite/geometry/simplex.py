"""The belief simplex (Paper I, Mamba on the HMM): does a model's final representation on the HMM lay the filtering
posteriors out as a simplex, one cluster per most likely hidden state?

At every symbol token the exact posterior over the S hidden states is a point of the probability
simplex; points where one state dominates sit near its corner. A model whose head reads the posterior
linearly from its final representation must carry that geometry, and :func:`belief_simplex`
measures how clearly it does:

- PCA(2) of the representation (the picture), colored by the most likely state and by the entropy;
- a **cluster score**: the mean silhouette of the points against their most likely state
  (:func:`silhouette`, Euclidean, computed here), in the PCA plane and in the full representation,
  beside the same score of the exact posteriors themselves (the ideal simplex: how separable the
  corners are at all, given how often the belief is undecided);
- the same score in the **head's readout subspace** (the representation times the head's weights:
  the logits up to a constant), beside that of the exact log-posteriors (centred), which the logits
  of a perfect model equal; and the silhouette against the **current input token**, which says
  whether the representation is organised by what it reads rather than by what it believes;
- held-out linear R^2 of the Bayes entropy from the representation and from its two PCs, and of the
  whole posterior (a ridge probe, :mod:`bwt_lite.geometry.probes`).

Authors' numbers (their public analysis code for Paper I's Mamba): entropy R^2 0.40 for Mamba and 0.004 for the LSTM (their LSTM's
entropy MAE on the HMM was 0.411 bits, the uniform plateau: a model that learned nothing has no
simplex to show).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..arguments import check_int
from .manifold import Representation, collect_representation, collect_representations, pca
from .probes import heldout_r2, residual_layers


def silhouette(x: Tensor, labels: Tensor, chunk: int = 1024) -> float:
    """Mean silhouette coefficient of the points ``x`` (n, d) against integer ``labels`` (n,).

    For a point in cluster A, ``a`` is its mean Euclidean distance to the other points of A, ``b`` the
    smallest mean distance to the points of another cluster, and its score ``(b - a) / max(a, b)``
    (0 for a point alone in its cluster). Near 1: compact, well-separated clusters; near 0: the labels
    do not match the geometry. Needs at least 2 clusters. Cost O(n^2 d), in chunks of ``chunk`` rows.
    """
    x = torch.as_tensor(x).detach().to("cpu", torch.float64)
    labels = torch.as_tensor(labels).detach().to("cpu").flatten()
    if x.dim() == 1:
        x = x.unsqueeze(1)
    if x.dim() != 2 or x.shape[0] != labels.numel():
        raise ValueError(f"x must be (n, d) with one label per row; got x {tuple(x.shape)} and {labels.numel()} labels")
    if labels.is_floating_point() or labels.dtype == torch.bool:
        raise ValueError(f"labels must be integers, got {labels.dtype}")
    check_int("chunk", chunk, 1)
    _, codes = torch.unique(labels, return_inverse=True)
    k = int(codes.max()) + 1
    if k < 2:
        raise ValueError("labels must name at least 2 clusters")
    onehot = torch.nn.functional.one_hot(codes, k).to(torch.float64)  # (n, k)
    counts = onehot.sum(0)  # (k,)
    scores = torch.empty(x.shape[0], dtype=torch.float64)
    for start in range(0, x.shape[0], chunk):
        rows = slice(start, start + chunk)
        sums = torch.cdist(x[rows], x, compute_mode="donot_use_mm_for_euclid_dist") @ onehot  # (c, k) distance sums to each cluster
        own = codes[rows]
        n_own = counts[own]
        a = sums.gather(1, own.unsqueeze(1)).squeeze(1) / (n_own - 1).clamp_min(1)
        mean_other = sums / counts
        mean_other.scatter_(1, own.unsqueeze(1), float("inf"))
        b = mean_other.min(1).values
        s = (b - a) / torch.maximum(a, b).clamp_min(1e-300)
        scores[rows] = torch.where(n_own > 1, s, torch.zeros_like(s))
    return scores.mean().item()


def _subset(n: int, max_points: int, seed: int) -> Tensor:
    if n <= max_points:
        return torch.arange(n)
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:max_points].sort().values


@dataclass
class SimplexResult:
    """What :func:`belief_simplex` measured (R^2 held out: fit on half the episodes, scored on the rest)."""

    explained: list[float]  # variance fraction of PC1, PC2
    silhouette_pc2: float  # clusters by most likely state, in the PCA plane
    silhouette_full: float  # the same in the whole representation
    silhouette_posterior: float  # the exact posteriors themselves (the ideal simplex)
    silhouette_head: float  # by most likely state in the head's readout subspace (nan without a model)
    silhouette_log_posterior: float  # the centred exact log-posteriors (what a perfect model's logits give)
    silhouette_token: float  # by the current input token, full representation (nan without tokens)
    entropy_r2: float  # Bayes entropy from the representation (ridge)
    entropy_r2_pc2: float  # Bayes entropy from PC1, PC2 (linear)
    posterior_r2: float  # the whole posterior from the representation (ridge probe)
    n_points: int
    n_silhouette: int  # points in the silhouette subsample
    hook: str
    scores: Tensor = field(repr=False)  # (N, 2)
    state: Tensor = field(repr=False)  # (N,) most likely state
    entropy: Tensor = field(repr=False)  # (N,) bits

    def summary(self) -> dict[str, float]:
        return {"pc1_pc2": sum(self.explained), "silhouette_pc2": self.silhouette_pc2,
                "silhouette_full": self.silhouette_full, "silhouette_posterior": self.silhouette_posterior,
                "silhouette_head": self.silhouette_head, "silhouette_log_posterior": self.silhouette_log_posterior,
                "silhouette_token": self.silhouette_token,
                "entropy_r2": self.entropy_r2, "entropy_r2_pc2": self.entropy_r2_pc2, "posterior_r2": self.posterior_r2}


def readout_matrix(model: torch.nn.Module) -> Tensor:
    """(C, d) float64: the matrix the head applies to the final representation (a linear head's
    weight, or the tied embedding rows of the answer tokens)."""
    if getattr(model, "head", None) is not None:
        return model.head.weight.detach().double().cpu()
    return model.embed.tok.weight[model.answer_tokens].detach().double().cpu()


def simplex_of(rep: Representation, max_points: int = 2000, seed: int = 0, ridge: float = 1e-6,
               readout: Tensor | None = None) -> SimplexResult:
    """The belief-simplex numbers of a collected :class:`~bwt_lite.geometry.manifold.Representation`;
    ``readout`` (C, d): the head's matrix, for the readout-subspace silhouette (nan without it)."""
    check_int("max_points", max_points, 2)
    n_ep = int(rep.episode.max()) + 1
    if n_ep < 4:
        raise ValueError(f"need at least 4 episodes (half to fit, half to score), got {n_ep}")
    state = rep.probs.argmax(-1)
    p = pca(rep.x, 2)
    sub = _subset(rep.x.shape[0], max_points, seed)
    fit, test = rep.episode < n_ep // 2, rep.episode >= n_ep // 2
    p_fit = pca(rep.x[fit], 2)
    h = rep.entropy
    log_post = rep.probs.clamp_min(1e-300).log()
    log_post = log_post - log_post.mean(-1, keepdim=True)
    tokens = None if rep.token is None else rep.token[sub]
    return SimplexResult(
        explained=p.explained,
        silhouette_pc2=silhouette(p.scores[sub], state[sub]),
        silhouette_full=silhouette(rep.x[sub], state[sub]),
        silhouette_posterior=silhouette(rep.probs[sub], state[sub]),
        silhouette_head=float("nan") if readout is None else silhouette(rep.x[sub] @ readout.T, state[sub]),
        silhouette_log_posterior=silhouette(log_post[sub], state[sub]),
        silhouette_token=float("nan") if tokens is None or tokens.unique().numel() < 2 else silhouette(rep.x[sub], tokens),
        entropy_r2=heldout_r2(rep.x[fit], h[fit], rep.x[test], h[test], ridge),
        entropy_r2_pc2=heldout_r2(p_fit.scores, h[fit], p_fit.transform(rep.x[test]), h[test], 0.0),
        posterior_r2=heldout_r2(rep.x[fit], rep.probs[fit], rep.x[test], rep.probs[test], ridge),
        n_points=rep.x.shape[0], n_silhouette=int(sub.numel()), hook=rep.hook, scores=p.scores, state=state, entropy=h)


def belief_simplex(model: torch.nn.Module, tunnel, episodes: int = 256, seed: int = 0, hook: str = "final",
                   max_points: int = 2000, ridge: float = 1e-6) -> SimplexResult:
    """PCA(2), silhouette against the most likely state and entropy R^2 of the representation at
    ``hook`` (default: after the final norm) at the symbol tokens of ``episodes`` held-out episodes."""
    check_int("episodes", episodes, 4)
    rep = collect_representation(model, tunnel, episodes, seed, hook)
    readout = readout_matrix(model) if rep.hook == "hook_final" else None
    return simplex_of(rep, max_points, seed, ridge, readout)


def simplex_by_layer(model: torch.nn.Module, tunnel, episodes: int = 256, seed: int = 0, max_points: int = 1500,
                     ridge: float = 1e-6) -> dict[str, SimplexResult]:
    """:func:`belief_simplex` at every layer of the residual stream (embedding, each block, final norm)."""
    check_int("episodes", episodes, 4)
    layers = residual_layers(model)
    reps = collect_representations(model, tunnel, episodes, seed, [hook for _, hook in layers])
    readout = readout_matrix(model)
    return {label: simplex_of(reps[hook], max_points, seed, ridge, readout if hook == "hook_final" else None)
            for label, hook in layers}


__all__ = ["SimplexResult", "belief_simplex", "readout_matrix", "silhouette", "simplex_by_layer", "simplex_of"]
