"""Frame-precision dissociation (Paper I, training dynamics): does attention settle long before the predictions do?

A **training trajectory** is a set of model snapshots saved densely early in training (steps 0, 25,
50, 100, ...) and sparsely later, plus the trainer's held-out history. From it,
:func:`frame_precision` measures at every snapshot

- the **precision**: held-out entropy MAE and KL (bits) against the exact posterior;
- the **attention pattern's stability**: similarity of every layer's pattern to the final
  snapshot's (1 - mean total variation per query row; :func:`bwt_lite.dynamics.two_timescale.attention_stability`, which
  also gives the relative distance of the value and of the query/key weights to their final values);
- the **key frame's stability**: the layer-0 keys of the hypothesis tokens,
  ``k_v = W_K^(h) RMSNorm(e_v)`` from the token embeddings alone, compared with the final model's:
  (a) the correlation between the two matrices of pairwise key cosines (off-diagonal entries, per
  head, averaged over heads; 1 = the same geometry), and (b) the overlap of their top-``k`` principal
  subspaces, ``||U_s^T U_f||_F^2 / k``, beside its value for random subspaces, ``k / d_head`` (the
  authors report a "frame overlap" as a multiple of a null; their exact definition is unpublished);
- the **value manifold** at that step: PC1's share of the variance of the final representation at
  prediction positions and ``|r|`` of PC1 with the Bayes entropy (:mod:`bwt_lite.geometry.manifold`).

The paper's claim: the frame forms early (overlap 3x null by step ~400, ~6x by 2.5k) while the MAE
keeps falling (0.032 bits at 2.5k to 0.00078 at 50k).
The snapshots are stored and loaded by :mod:`bwt_lite.geometry.trajectory`.

Regenerate the shipped trajectory (about 15 minutes on one CPU core)::

    OMP_NUM_THREADS=1 python -m bwt_lite.geometry.trajectory bijection-d64
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..arguments import check_int
from ..dynamics.two_timescale import attention_stability
from ..evaluate import EVAL_SEED_BASE, evaluate
from ..models import WindTunnelModel, run_with_cache
from ..tunnels import make_tunnel
from .frame import cosine_matrix, hypothesis_keys
from .manifold import collect_representation, manifold_of, pca, pearson
# chapter 9 imports the trajectory's names from here, beside the measurements
from .trajectory import TRAJECTORIES, Trajectory, load_trajectory, train_trajectory  # noqa: F401

# ------------------------------------------------------------------------------------------------
# Diagnostics over a trajectory


def layer0_keys(model: WindTunnelModel, tokens: list[int] | tuple[int, ...] | None = None) -> Tensor:
    """Layer-0 keys of ``tokens`` (default: the answer tokens, the hypotheses) from their embeddings
    alone: ``k_v = W_K^(h) RMSNorm(e_v)``, shape (heads, tokens, d_head), float64
    (:func:`bwt_lite.geometry.frame.hypothesis_keys` at layer 0, per head)."""
    return hypothesis_keys(model, tokens, layer=0, source="projected", heads="per_head")


def key_frame_similarity(keys: Tensor, final: Tensor) -> float:
    """Mean over heads of the Pearson correlation between the off-diagonal key cosines of ``keys``
    and of ``final`` (both (heads, n, d_head)): 1 when the frame has its final geometry."""
    a, b = cosine_matrix(keys), cosine_matrix(final)
    n = a.shape[-1]
    off = ~torch.eye(n, dtype=torch.bool)
    a, b = a[:, off], b[:, off]
    a, b = a - a.mean(-1, keepdim=True), b - b.mean(-1, keepdim=True)
    r = (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-12)
    return r.mean().item()


def subspace_overlap(keys: Tensor, final: Tensor, k: int = 4) -> float:
    """Mean over heads of ``||U^T U_f||_F^2 / k`` for the top-``k`` principal subspaces (uncentred)
    of the key sets: 1 for the same subspace; ``k / d_head`` on average for random ones."""
    check_int("k", k, 1)
    if k > keys.shape[-1]:
        raise ValueError(f"k must be at most d_head = {keys.shape[-1]}, got {k}")
    u = torch.linalg.svd(keys, full_matrices=False).Vh[:, :k]  # (H, k, dh)
    uf = torch.linalg.svd(final, full_matrices=False).Vh[:, :k]
    return ((u @ uf.transpose(-1, -2)) ** 2).sum((-1, -2)).div(k).mean().item()


@dataclass
class Dissociation:
    """What :func:`frame_precision` measured, one entry per snapshot step."""

    steps: list[int]
    entropy_mae: list[float]  # held-out, bits
    kl: list[float]  # held-out KL(Bayes || model), bits
    pattern: list[float]  # attention pattern similarity to the final snapshot (1 - mean TV)
    values: list[float]  # relative distance of the value weights to their final values
    routing: list[float]  # the same for the query/key weights
    key_frame: list[float]  # correlation of the layer-0 key-cosine matrices with the final ones
    key_overlap: list[float]  # top-k subspace overlap of the layer-0 keys with the final ones
    overlap_null: float  # k / d_head: the overlap of random subspaces
    pc1: list[float]  # PC1's variance fraction of the final representation
    pc1_entropy_r: list[float]  # |Pearson r| of PC1 with the Bayes entropy
    episodes: int

    def settled_step(self, threshold: float = 0.9, what: str = "pattern") -> int | None:
        """The first step from which ``what`` (``"pattern"`` or ``"key_frame"``) stays >= ``threshold``."""
        if what not in ("pattern", "key_frame"):
            raise ValueError(f"what must be 'pattern' or 'key_frame', got {what!r}")
        series = getattr(self, what)
        for i in range(len(series)):
            if all(v >= threshold for v in series[i:]):
                return self.steps[i]
        return None

    def at(self, step: int) -> dict[str, float]:
        """Every measurement at snapshot ``step``."""
        if step not in self.steps:
            raise ValueError(f"step {step} is not a snapshot; snapshots: {self.steps}")
        i = self.steps.index(step)
        return {k: getattr(self, k)[i] for k in ("entropy_mae", "kl", "pattern", "values", "routing", "key_frame",
                                                 "key_overlap", "pc1", "pc1_entropy_r")} | {"step": step}


def frame_precision(traj: Trajectory, episodes: int = 512, seed: int = 0, overlap_k: int = 4,
                    pattern_episodes: int = 64) -> Dissociation:
    """Precision, attention and key-frame stability, and the value manifold at every snapshot of
    ``traj`` (held-out episodes from generator ``EVAL_SEED_BASE + seed``)."""
    check_int("episodes", episodes, 2)
    preset = traj.preset
    tunnel = make_tunnel(**preset.tunnel)
    states = [(s, {k: v.float() for k, v in st.items()}) for s, st in zip(traj.steps, traj.states)]
    stab = attention_stability(preset, states, episodes=pattern_episodes, seed=seed)
    final_keys = layer0_keys(traj.model_at(traj.steps[-1]))
    mae, kl, frame, overlap, pc1, pc1_r = [], [], [], [], [], []
    for step in traj.steps:
        model = traj.model_at(step)
        res = evaluate(model, tunnel, episodes=episodes, seed=seed)
        mae.append(res.entropy_mae_bits)
        kl.append(res.kl_bits)
        keys = layer0_keys(model)
        frame.append(key_frame_similarity(keys, final_keys))
        overlap.append(subspace_overlap(keys, final_keys, overlap_k))
        rep = collect_representation(model, tunnel, episodes=min(episodes, 256), seed=seed)
        p = pca(rep.x, 1)
        pc1.append(p.explained[0])
        pc1_r.append(abs(pearson(p.scores[:, 0], rep.entropy)))
    return Dissociation(steps=list(traj.steps), entropy_mae=mae, kl=kl, pattern=stab["pattern"], values=stab["values"],
                        routing=stab["routing"], key_frame=frame, key_overlap=overlap,
                        overlap_null=overlap_k / final_keys.shape[-1], pc1=pc1, pc1_entropy_r=pc1_r, episodes=episodes)


# ------------------------------------------------------------------------------------------------
# What the widget shows at each snapshot


@dataclass
class SnapshotView:
    """One snapshot's attention pattern on one episode and its value manifold (for scrubbing)."""

    step: int
    pattern: Tensor  # (T, T) attention of head ``head`` of layer ``layer`` on the episode
    layer: int
    head: int
    scores: Tensor  # (N, 2) PC1, PC2 of the final representation (PC1 oriented with the entropy, PC2 with the position)
    entropy: Tensor  # (N,) Bayes entropy, bits
    explained: list[float]  # variance fractions of PC1, PC2


def snapshot_views(traj: Trajectory, layer: int = 0, head: int = 0, episodes: int = 128, seed: int = 0,
                   episode: int = 0) -> list[SnapshotView]:
    """For every snapshot: the attention pattern of (``layer``, ``head``) on held-out episode
    ``episode`` and PCA(2) of the final representation over ``episodes`` held-out episodes."""
    tunnel = make_tunnel(**traj.preset.tunnel)
    n_layers, n_heads = traj.preset.model.n_layers, traj.preset.model.n_heads
    if not 0 <= layer < n_layers or not 0 <= head < n_heads:
        raise ValueError(f"layer must be in 0..{n_layers - 1} and head in 0..{n_heads - 1}, got {layer}, {head}")
    check_int("episode", episode, 0)
    ep = tunnel.sample(episode + 1, torch.Generator().manual_seed(EVAL_SEED_BASE + seed))
    name = f"backbone.blocks.{layer}.attn.hook_pattern"
    views = []
    for step in traj.steps:
        model = traj.model_at(step)
        with torch.no_grad():
            _, cache = run_with_cache(model, ep.inputs[episode:episode + 1], ep.positions, names=[name])
        rep = collect_representation(model, tunnel, episodes, seed)
        m = manifold_of(rep)
        scores = m.scores.clone()
        if pearson(scores[:, 1], rep.position.double()) < 0:
            scores[:, 1] *= -1
        views.append(SnapshotView(step=step, pattern=cache[name][0, head].double(), layer=layer, head=head,
                                  scores=scores, entropy=m.entropy, explained=m.explained[:2]))
    return views
