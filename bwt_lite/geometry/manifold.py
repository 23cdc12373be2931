"""The value manifold (Paper I; Paper III's recap): PCA of the final-layer representation at the prediction positions.

:func:`value_manifold` collects one representation per (held-out episode, prediction position), by
default the residual stream after the final norm (what the head reads; ``hook="attn_out"`` takes
the last block's attention output instead), and reports

- the share of the variance along each principal component (the paper's claim: PC1 > 80 %, 84-90 %
  in Paper III's recap);
- Pearson and Spearman r of PC1 with the Bayes entropy (the sign of a principal component is
  arbitrary: PC1 is oriented so that its Pearson r is >= 0);
- held-out linear R^2 of the entropy from the whole representation and from PC1 alone (ridge fit
  on the first half of the episodes, scored on the second);
- PC1's share **within position** (``pc1_within_position``, :func:`pc1_shares`): the PCA of
  ``x_i - m_{p(i)}``, each point minus the mean ``m_p`` of the points at its position over all
  episodes, i.e. of the spread among episodes at the same position, pooled over the positions (its
  covariance is the pooled within-position covariance). The total covariance is this plus the
  between-position covariance of the means, so PC1 over all points can be high only if one direction
  dominates both; ``within_position_r`` is ``|r|`` of this PC1 with the entropy minus its position's
  mean (nan where the entropy is a function of the position, as on the bijection);
- PC1's share for two ways of taking the PCA that discard the episode-specific content: over the
  P per-position **mean** representations (``pc1_position_means``, with ``|r|`` of its PC1 with the mean
  entropy per position; the means are confounded with the position itself, so this share says nothing
  on its own about how the episodes spread), and within **one episode** at a time (``pc1_single_episode``,
  averaged over episodes; a PCA of many copies of one sequence, as in one of the authors' scripts,
  measures this);
- a **position baseline**: the held-out R^2 of predicting the entropy by its mean at each position.
  On the bijection the Bayes entropy log2(V - t) is a function of the position alone (baseline 1),
  so a representation that tracks the position also "tracks the entropy"; the HMM's entropy varies
  within a position, and ``r2_within_position`` (the held-out R^2 of the entropy's deviation from its
  position mean) says how much of that the representation carries.

Helpers: :func:`pca` (float64 SVD), :func:`position_means`, :func:`pearson`, :func:`spearman` (average ranks for ties).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..arguments import check_int
from ..metrics import entropy_bits
from ..tunnels import Tunnel
from .probes import collect_hooks, heldout_r2, ridge_fit, r2_score


def _vector(name: str, x: Tensor) -> Tensor:
    x = torch.as_tensor(x).detach().to("cpu", torch.float64).flatten()
    if x.numel() < 2:
        raise ValueError(f"{name} needs at least 2 values, got {x.numel()}")
    return x


def pearson(x: Tensor, y: Tensor) -> float:
    """Pearson correlation of two equally long vectors (nan if either is constant)."""
    x, y = _vector("x", x), _vector("y", y)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.numel()} and {y.numel()}")
    x, y = x - x.mean(), y - y.mean()
    den = (x.norm() * y.norm()).item()
    if den == 0.0:
        return float("nan")
    return max(-1.0, min(1.0, (x @ y).item() / den))


def rankdata(x: Tensor) -> Tensor:
    """Ranks 1..n of ``x`` (float64), ties sharing their average rank."""
    x = _vector("x", x)
    order = torch.argsort(x, stable=True)
    xs = x[order]
    new = torch.ones(x.numel(), dtype=torch.bool)
    new[1:] = xs[1:] != xs[:-1]
    group = torch.cumsum(new.long(), 0) - 1
    pos = torch.arange(1, x.numel() + 1, dtype=torch.float64)
    n_groups = int(group[-1]) + 1
    avg = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, group, pos) / torch.bincount(group, minlength=n_groups)
    ranks = torch.empty_like(x)
    ranks[order] = avg[group]
    return ranks


def spearman(x: Tensor, y: Tensor) -> float:
    """Spearman rank correlation: the Pearson correlation of the ranks (average ranks for ties)."""
    return pearson(rankdata(x), rankdata(y))


@dataclass
class PCA:
    """Principal components of a point cloud (float64)."""

    mean: Tensor  # (d,)
    components: Tensor  # (k, d) orthonormal rows, by decreasing variance
    explained: list[float]  # variance fraction of each of the k components
    scores: Tensor  # (n, k) coordinates of the fitted points

    def transform(self, x: Tensor) -> Tensor:
        """Coordinates of new points ``x`` (m, d) on the components."""
        return (torch.as_tensor(x).to(torch.float64) - self.mean) @ self.components.T


def pca(x: Tensor, k: int = 2) -> PCA:
    """The top-``k`` principal components of ``x`` (n, d), by SVD of the centred data in float64."""
    x = torch.as_tensor(x).detach().to("cpu", torch.float64)
    if x.dim() != 2 or x.shape[0] < 2:
        raise ValueError(f"x must be a 2-D (points, features) tensor with at least 2 points, got shape {tuple(x.shape)}")
    check_int("k", k, 1)
    if k > min(x.shape):
        raise ValueError(f"k must be at most min(points, features) = {min(x.shape)}, got {k}")
    mean = x.mean(0)
    xc = x - mean
    _, s, vh = torch.linalg.svd(xc, full_matrices=False)
    var = s ** 2
    total = var.sum().item()
    explained = (var[:k] / total).tolist() if total > 0 else [float("nan")] * k
    return PCA(mean=mean, components=vh[:k], explained=explained, scores=xc @ vh[:k].T)


@dataclass
class Representation:
    """One row per (episode, prediction position) of held-out episodes."""

    x: Tensor  # (N, d) float64 representation
    probs: Tensor  # (N, C) exact posterior
    entropy: Tensor  # (N,) Bayes entropy, bits
    position: Tensor  # (N,) prediction index 0..P-1
    episode: Tensor  # (N,) episode index
    hook: str = ""
    token: Tensor | None = None  # (N,) input token at the position (token tunnels), else None


HOOK_ALIASES = {"final": "hook_final"}


def resolve_hook(model: torch.nn.Module, hook: str) -> str:
    """A hook name, or ``"final"`` (after the final norm) or ``"attn_out"`` (last block's attention output)."""
    if hook == "attn_out":
        blocks = getattr(model.backbone, "blocks", None)
        if blocks is None or not hasattr(blocks[-1], "hook_attn_out"):
            raise ValueError(f"hook 'attn_out' needs attention blocks; architecture {model.cfg.arch!r} has none")
        return f"backbone.blocks.{len(blocks) - 1}.hook_attn_out"
    return HOOK_ALIASES.get(hook, hook)


def collect_representations(model: torch.nn.Module, tunnel: Tunnel, episodes: int = 512, seed: int = 0,
                            hooks: list[str] | tuple[str, ...] = ("final",)) -> dict[str, Representation]:
    """The representation at each of ``hooks`` at every prediction position of ``episodes`` held-out
    episodes (one forward pass per batch for all of them), keyed by the hooks as given."""
    names = {h: resolve_hook(model, h) for h in hooks}
    acts, probs, tokens = collect_hooks(model, tunnel, sorted(set(names.values())), episodes, seed)
    B, P = probs.shape[:2]
    flat, h = probs.flatten(0, 1), entropy_bits(probs).flatten()
    pos, epi = torch.arange(P).repeat(B), torch.arange(B).repeat_interleave(P)
    tok = None if tokens is None else tokens.flatten()
    return {hook: Representation(x=acts[name].flatten(0, 1), probs=flat, entropy=h, position=pos, episode=epi, hook=name,
                                 token=tok)
            for hook, name in names.items()}


def collect_representation(model: torch.nn.Module, tunnel: Tunnel, episodes: int = 512, seed: int = 0,
                           hook: str = "final") -> Representation:
    """The representation at ``hook`` at every prediction position of ``episodes`` held-out episodes."""
    return collect_representations(model, tunnel, episodes, seed, (hook,))[hook]


@dataclass
class ManifoldResult:
    """What :func:`value_manifold` measured (all R^2 held out: fit on half the episodes, scored on the rest)."""

    explained: list[float]  # variance fraction of PC1, PC2, ...
    pearson_r: float  # PC1 (oriented) vs the Bayes entropy
    spearman_r: float
    r2: float  # entropy from the whole representation (ridge)
    r2_pc1: float  # entropy from PC1 alone (PCA and fit on the fitting half)
    position_r2: float  # baseline: entropy from its per-position mean
    r2_within_position: float  # the entropy's deviation from its position mean, from the representation (nan if none)
    pc1_position_means: float  # PC1's variance fraction of the P per-position mean representations
    position_means_r: float  # |Pearson r| of that PC1 with the mean Bayes entropy per position
    pc1_single_episode: float  # PC1's variance fraction within one episode (its P points), mean over episodes
    n_points: int
    dim: int
    hook: str
    scores: Tensor = field(repr=False)  # (N, 2) PC1, PC2 coordinates of every point
    entropy: Tensor = field(repr=False)  # (N,) Bayes entropy of every point
    position: Tensor = field(repr=False)  # (N,)
    # position controlled: PCA of the representation minus its position's mean (what varies between episodes
    # at one position), PC1's variance fraction and |Pearson r| with the entropy minus its position's mean
    pc1_within_position: float = float("nan")
    within_position_r: float = float("nan")

    @property
    def pc1(self) -> float:
        return self.explained[0]

    def summary(self) -> dict[str, float]:
        return {"pc1": self.pc1, "pc1_pc2": sum(self.explained[:2]), "pearson_r": self.pearson_r,
                "spearman_r": self.spearman_r, "r2": self.r2, "r2_pc1": self.r2_pc1, "position_r2": self.position_r2,
                "r2_within_position": self.r2_within_position, "pc1_position_means": self.pc1_position_means,
                "position_means_r": self.position_means_r, "pc1_single_episode": self.pc1_single_episode,
                "pc1_within_position": self.pc1_within_position, "within_position_r": self.within_position_r}


def _position_means(y: Tensor, pos: Tensor, n_pos: int) -> Tensor:
    sums = torch.zeros(n_pos, dtype=torch.float64).index_add_(0, pos, y)
    return sums / torch.bincount(pos, minlength=n_pos).clamp_min(1)


def position_means(x: Tensor, position: Tensor) -> Tensor:
    """(P, d) float64: the mean of the rows of ``x`` (N, d) at each position 0..P-1 of ``position`` (N,)
    (zero for a position with no row)."""
    x = torch.as_tensor(x).to(torch.float64)
    n_pos = int(position.max()) + 1
    counts = torch.bincount(position, minlength=n_pos).clamp_min(1).unsqueeze(1).to(torch.float64)
    return torch.zeros(n_pos, x.shape[1], dtype=torch.float64).index_add_(0, position, x) / counts


@dataclass(frozen=True)
class PC1Shares:
    """PC1's share of the variance of one representation, three ways (:func:`pc1_shares`)."""

    all_points: float  # over every (episode, position) point
    within_position: float  # over each point minus its position's mean: the spread among episodes at a position
    position_means: float  # over the P per-position means (nan with a single position)


def pc1_shares(rep: Representation) -> PC1Shares:
    """PC1's variance fraction of ``rep.x`` over all points, within position (PCA of ``x_i - m_{p(i)}``,
    ``m_p`` the mean of the points at position ``p``; see the module docstring) and over the per-position
    means ``m_p``."""
    means = position_means(rep.x, rep.position)
    return PC1Shares(all_points=pca(rep.x, 1).explained[0],
                     within_position=pca(rep.x - means[rep.position], 1).explained[0],
                     position_means=pca(means, 1).explained[0] if means.shape[0] >= 2 else float("nan"))


def manifold_of(rep: Representation, ridge: float = 1e-6, k: int = 5) -> ManifoldResult:
    """The value-manifold numbers of a collected :class:`Representation` (see :func:`value_manifold`)."""
    n_ep = int(rep.episode.max()) + 1
    if n_ep < 4:
        raise ValueError(f"need at least 4 episodes (half to fit, half to score), got {n_ep}")
    k = min(k, *rep.x.shape)
    p = pca(rep.x, k)
    pc1 = p.scores[:, 0]
    sign = 1.0 if pearson(pc1, rep.entropy) >= 0 else -1.0
    fit, test = rep.episode < n_ep // 2, rep.episode >= n_ep // 2
    h = rep.entropy
    r2 = heldout_r2(rep.x[fit], h[fit], rep.x[test], h[test], ridge)
    p_fit = pca(rep.x[fit], 1)
    r2_pc1 = heldout_r2(p_fit.scores, h[fit], p_fit.transform(rep.x[test]), h[test], 0.0)
    n_pos = int(rep.position.max()) + 1
    means = _position_means(h[fit], rep.position[fit], n_pos)
    position_r2 = r2_score(h[test], means[rep.position[test]])
    dev_fit, dev_test = h[fit] - means[rep.position[fit]], h[test] - means[rep.position[test]]
    if dev_test.abs().max().item() < 1e-12:
        within = float("nan")  # the entropy is a function of the position: nothing left to explain
    else:
        within = r2_score(dev_test, ridge_fit(rep.x[fit], dev_fit, ridge).predict(rep.x[test]))
    # PCA of the per-position means (the episode-specific content averaged away) and within single episodes
    pos_means = position_means(rep.x, rep.position)
    pm = pca(pos_means, 1) if n_pos >= 2 else None
    single = [pca(rep.x[rep.episode == e], 1).explained[0] for e in range(min(n_ep, 64))] if n_pos >= 2 else []
    scores = p.scores[:, :2].clone()
    scores[:, 0] *= sign
    # within position: each point minus its position's mean (what varies among episodes at one position)
    pw = pca(rep.x - pos_means[rep.position], 1)
    h_dev = h - _position_means(h, rep.position, n_pos)[rep.position]
    within_r = abs(pearson(pw.scores[:, 0], h_dev)) if h_dev.abs().max().item() > 1e-12 else float("nan")
    return ManifoldResult(pc1_within_position=pw.explained[0], within_position_r=within_r, explained=p.explained,
                          pearson_r=sign * pearson(pc1, h), spearman_r=sign * spearman(pc1, h),
                          r2=r2, r2_pc1=r2_pc1, position_r2=position_r2, r2_within_position=within,
                          pc1_position_means=pm.explained[0] if pm else float("nan"),
                          position_means_r=abs(pearson(pm.scores[:, 0], _position_means(h, rep.position, n_pos)))
                          if pm else float("nan"),
                          pc1_single_episode=sum(single) / len(single) if single else float("nan"),
                          n_points=rep.x.shape[0], dim=rep.x.shape[1], hook=rep.hook, scores=scores, entropy=h,
                          position=rep.position)


def value_manifold(model: torch.nn.Module, tunnel: Tunnel, episodes: int = 1024, seed: int = 0,
                   hook: str = "final", ridge: float = 1e-6) -> ManifoldResult:
    """PCA of the representation at ``hook`` over ``episodes`` held-out episodes (generator
    ``EVAL_SEED_BASE + seed``), PC1's correlation with the Bayes entropy and held-out linear R^2."""
    check_int("episodes", episodes, 4)
    return manifold_of(collect_representation(model, tunnel, episodes, seed, hook), ridge)


__all__ = ["HOOK_ALIASES", "ManifoldResult", "PC1Shares", "PCA", "Representation", "collect_representation",
           "collect_representations", "manifold_of", "pc1_shares", "pca", "pearson", "position_means", "rankdata",
           "resolve_hook", "spearman", "value_manifold"]
