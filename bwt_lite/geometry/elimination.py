"""Progressive elimination on the bijection tunnel (Paper I, QK sharpening): where does each query
look, layer by layer?

**Which context positions count as what.** At a prediction position (a key, or the paired variant's
final query) with token position ``i``, every position ``j`` of the sequence gets one *role*:

- ``self``: ``j == i``, the query token itself;
- ``key``: an earlier key position (a key token; it names no answer);
- ``consistent``: an earlier *value* position whose value still has positive exact posterior
  probability as this query's answer: it is evidence *for* a hypothesis still alive;
- ``eliminated``: an earlier value position whose value has posterior probability zero for this
  query: a hypothesis the evidence has ruled out;
- ``future``: ``j > i``, invisible under causal attention.

The exact posterior decides consistent vs eliminated, so the definition is the same in every
variant. In the canonical ``separate`` layout (keys without replacement) every revealed value is
ruled out for the next key, so all ``t`` earlier value positions of query ``t`` are ``eliminated``
and none is ``consistent``: elimination is the whole job, and the scalar that measures it is the
attention mass on the eliminated positions. In the ``replacement`` variant a repeated key's earlier
value is ``consistent`` (the answer) and every other value ``eliminated``; in the ``paired`` variant
the final query's matching value is ``consistent``.

Per layer, head and prediction position the diagnostics are: the attention mass on each role
(and the mass uniform causal attention would give it), the attention entropy in bits (beside
log2 of the number of visible positions), how evenly the mass on eliminated positions is spread
over them (entropy / log2 count: 1 = evenly), query-key cosines (a (T, T) heatmap per layer), and
the mean weight on a revealed value's position by the value's identity (which hypotheses a head watches).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ..arguments import check_int
from ..evaluate import EVAL_SEED_BASE
from ..models import run_with_cache
from ..tunnels import Episodes
from ..tunnels.bijection import Bijection

ROLES = ("self", "key", "consistent", "eliminated", "future")
SELF, KEY, CONSISTENT, ELIMINATED, FUTURE = range(len(ROLES))


def bijection_roles(tunnel: Bijection, episodes: Episodes) -> torch.Tensor:
    """The role (an index into ``ROLES``) of every position for every prediction position: (B, P, T) int64."""
    if not isinstance(tunnel, Bijection):
        raise ValueError(f"tunnel must be a Bijection tunnel, got {type(tunnel).__name__}")
    x, pos, probs = episodes.inputs, episodes.positions, episodes.probs
    if x.dim() != 2 or probs is None or x.shape[1] != tunnel.seq_len:
        raise ValueError(f"episodes do not come from this bijection tunnel (inputs of shape (B, {tunnel.seq_len}) "
                         f"with probs expected, got {tuple(x.shape)})")
    B, T = x.shape
    V = tunnel.V
    j = torch.arange(T, device=x.device)
    is_value = j % 2 == 1
    if tunnel.variant == "paired":
        is_value &= j < 2 * tunnel.L
    value = _value_ids(tunnel, x)
    # the posterior probability, at each query, of the value each position shows: (B, P, T)
    p_of_value = probs.gather(2, value.unsqueeze(1).expand(B, pos.numel(), T))
    roles = torch.full((B, pos.numel(), T), KEY, dtype=torch.long, device=x.device)
    val = is_value.view(1, 1, T).expand_as(roles)
    roles[val & (p_of_value > 0)] = CONSISTENT
    roles[val & (p_of_value == 0)] = ELIMINATED
    qpos = pos.view(1, -1, 1)
    roles[(j.view(1, 1, T) == qpos).expand_as(roles)] = SELF
    roles[(j.view(1, 1, T) > qpos).expand_as(roles)] = FUTURE
    return roles


def _value_ids(tunnel: Bijection, inputs: torch.Tensor) -> torch.Tensor:
    """The value each position shows (meaningful at value positions only): (B, T) int64."""
    V = tunnel.V
    return (inputs if tunnel.variant == "paired" else inputs - V).clamp(0, V - 1)


def _query_rows(pattern: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    if pattern.dim() == 3:
        pattern = pattern.unsqueeze(1)
    if pattern.dim() != 4 or pattern.shape[-1] != pattern.shape[-2]:
        raise ValueError(f"pattern must have shape (B, H, T, T) or (B, T, T), got {tuple(pattern.shape)}")
    return pattern[:, :, positions].to(torch.float64)  # (B, H, P, T)


def attention_mass_split(pattern: torch.Tensor, roles: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Attention mass each prediction position puts on each role, averaged over episodes: (H, P, len(ROLES)).

    ``pattern``: attention weights (B, H, T, T) (or (B, T, T) for one head); ``roles``: (B, P, T) from
    :func:`bijection_roles`; ``positions``: the (P,) token positions of the queries.
    """
    rows = _query_rows(pattern, positions)
    if roles.shape != (rows.shape[0], rows.shape[2], rows.shape[3]):
        raise ValueError(f"roles must have shape (B, P, T) = {(rows.shape[0], rows.shape[2], rows.shape[3])}, "
                         f"got {tuple(roles.shape)}")
    onehot = torch.nn.functional.one_hot(roles, len(ROLES)).to(torch.float64)  # (B, P, T, R)
    return torch.einsum("bhpt,bptr->bhpr", rows, onehot).mean(0)


def role_counts(roles: torch.Tensor) -> torch.Tensor:
    """Mean number of positions of each role per prediction position: (P, len(ROLES))."""
    return torch.nn.functional.one_hot(roles, len(ROLES)).to(torch.float64).sum(2).mean(0)


def _entropy_bits(w: torch.Tensor) -> torch.Tensor:
    w = w.clamp_min(0)
    return -(torch.where(w > 0, w * torch.log2(w), torch.zeros_like(w))).sum(-1)


def attention_entropy(pattern: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Mean entropy (bits) of each query's attention row over episodes: (H, P). A zero row has entropy 0."""
    return _entropy_bits(_query_rows(pattern, positions)).mean(0)


def _attention_layers(model: nn.Module) -> int:
    """The number of attention blocks of ``model``; a clear error for an architecture without attention."""
    blocks = getattr(model.backbone, "blocks", None)
    if blocks is None or not hasattr(blocks[0], "attn"):
        raise ValueError(f"architecture {model.cfg.arch!r} has no attention to read")
    return len(blocks)


def entropy_by_layer(model: nn.Module, tunnel, *, episodes: int = 512, seed: int = 0) -> tuple[list[float], float]:
    """Any tunnel: each layer's attention entropy (bits) at the prediction positions, averaged over heads,
    positions and held-out episodes (generator seeded ``EVAL_SEED_BASE + seed``), and that of uniform causal
    attention over the same positions (log2 of the visible count, averaged)."""
    check_int("episodes", episodes, 1)
    names = [f"backbone.blocks.{i}.attn.hook_pattern" for i in range(_attention_layers(model))]
    device = next(model.parameters()).device
    ep = tunnel.sample(episodes, torch.Generator(device=device).manual_seed(EVAL_SEED_BASE + seed))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            _, cache = run_with_cache(model, ep.inputs, ep.positions, names=names)
    finally:
        model.train(was_training)
    entropy = [attention_entropy(cache[n], ep.positions).mean().item() for n in names]
    return entropy, torch.log2(ep.positions.to(torch.float64) + 1).mean().item()


def _evenness(pattern: torch.Tensor, roles: torch.Tensor, positions: torch.Tensor, role: int) -> torch.Tensor:
    rows = _query_rows(pattern, positions)
    sel = (roles == role).unsqueeze(1)  # (B, 1, P, T)
    w = rows * sel
    total = w.sum(-1)  # (B, H, P)
    n = sel.sum(-1).to(torch.float64)  # (B, 1, P)
    h = _entropy_bits(w / total.unsqueeze(-1).clamp_min(1e-300))
    return torch.where((n >= 2) & (total > 0), h / torch.log2(n.clamp_min(2)), torch.nan)  # (B, H, P)


def role_evenness(pattern: torch.Tensor, roles: torch.Tensor, positions: torch.Tensor,
                  role: int = ELIMINATED) -> torch.Tensor:
    """How evenly each query spreads the mass it gives ``role`` over those positions: (H, P).

    The entropy of the attention restricted to the role's positions and renormalised, divided by
    log2 of their number (1: evenly, 0: on one position), averaged over the episodes where at least
    two positions have the role and get some mass (NaN where none does).
    """
    return _evenness(pattern, roles, positions, role).nanmean(0)


def qk_cosine(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Cosine between every query and key vector, averaged over episodes: (B, H, T, dh) x2 -> (H, T, T).

    Entries above the diagonal (keys a causal query cannot see) are NaN.
    """
    if q.shape != k.shape or q.dim() != 4:
        raise ValueError(f"q and k must both have shape (B, H, T, dh), got {tuple(q.shape)} and {tuple(k.shape)}")
    qn = torch.nn.functional.normalize(q.to(torch.float64), dim=-1)
    kn = torch.nn.functional.normalize(k.to(torch.float64), dim=-1)
    cos = (qn @ kn.transpose(-2, -1)).mean(0)
    T = q.shape[2]
    return cos.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=cos.device).tril(), float("nan"))


@dataclass
class EliminationResult:
    """Progressive-elimination diagnostics of one model on held-out bijection episodes."""

    positions: list[int]  # token positions of the P queries
    mass: torch.Tensor  # (n_layers, H, P, R) attention mass on each role (R = len(ROLES))
    counts: torch.Tensor  # (P, R) mean number of positions of each role
    entropy: torch.Tensor  # (n_layers, H, P) attention entropy, bits
    evenness: torch.Tensor  # (n_layers, H, P) spread of the mass over eliminated positions (1 = even)
    qk_cos: torch.Tensor  # (n_layers, H, T, T) mean query-key cosine (NaN above the diagonal)
    cos_by_role: torch.Tensor  # (n_layers, H, P, R) mean query-key cosine to the positions of each role
    # (NaN where a role has no position, and for "future")
    value_mass: torch.Tensor  # (n_layers, H, V) mean attention weight a query gives the position of a revealed
    # value v (over all queries that can see v), by the value's identity
    value_counts: torch.Tensor  # (V,) how many (episode, query) pairs saw each value
    episodes: int
    roles: tuple[str, ...] = ROLES
    example: dict = field(default_factory=dict, repr=False)  # one episode: inputs (T,), patterns (n_layers, H, T, T)

    @property
    def n_layers(self) -> int:
        return self.mass.shape[0]

    def layer_mass(self, role: str = "eliminated") -> torch.Tensor:
        """Mass on ``role`` per layer and prediction position, mean over heads: (n_layers, P)."""
        return self.mass[..., self._role(role)].mean(1)

    def uniform_mass(self, role: str = "eliminated") -> torch.Tensor:
        """The mass uniform causal attention would give ``role``: count / visible positions, (P,)."""
        visible = torch.tensor(self.positions, dtype=torch.float64) + 1
        return self.counts[:, self._role(role)] / visible

    def uniform_entropy(self) -> torch.Tensor:
        """log2 of the number of visible positions, the entropy of uniform causal attention: (P,)."""
        return torch.log2(torch.tensor(self.positions, dtype=torch.float64) + 1)

    def summary(self, role: str = "eliminated", first: int = 1) -> list[dict[str, float]]:
        """Per layer, means over heads and over prediction positions ``first``.. : mass on ``role``,
        its uniform-attention value, attention entropy and its uniform value, evenness."""
        sl = slice(first, None)
        out = []
        for layer in range(self.n_layers):
            out.append({
                "layer": layer,
                "mass": self.layer_mass(role)[layer, sl].mean().item(),
                "uniform_mass": self.uniform_mass(role)[sl].mean().item(),
                "entropy_bits": self.entropy[layer, :, sl].mean().item(),
                "uniform_entropy_bits": self.uniform_entropy()[sl].mean().item(),
                "evenness": self.evenness[layer, :, sl].nanmean().item(),
            })
        return out

    def _role(self, role: str) -> int:
        if role not in self.roles:
            raise ValueError(f"unknown role {role!r}; roles: {', '.join(self.roles)}")
        return self.roles.index(role)


@torch.no_grad()
def progressive_elimination(model: nn.Module, tunnel: Bijection, *, episodes: int = 256, seed: int = 0,
                            batch_size: int = 256) -> EliminationResult:
    """Attention mass by role, attention entropy, evenness and QK cosines per layer and head, on
    held-out episodes (generator seeded ``EVAL_SEED_BASE + seed``, as in :func:`bwt_lite.evaluate.evaluate`)."""
    check_int("episodes", episodes, 1)
    check_int("batch_size", batch_size, 1)
    n_layers = _attention_layers(model)
    names = [f"backbone.blocks.{i}.attn.hook_{n}" for i in range(n_layers) for n in ("pattern", "q", "k")]
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(EVAL_SEED_BASE + seed)
    was_training = model.training
    model.eval()
    sums: dict[str, torch.Tensor] = {}
    example: dict = {}
    try:
        left = episodes
        while left > 0:
            n = min(batch_size, left)
            ep = tunnel.sample(n, gen)
            roles = bijection_roles(tunnel, ep)
            onehot = torch.nn.functional.one_hot(roles, len(ROLES)).to(torch.float64)  # (B, P, T, R)
            _, cache = run_with_cache(model, ep.inputs, ep.positions, names=names)
            parts: dict[str, list[torch.Tensor]] = {k: [] for k in ("mass", "entropy", "even", "even_n", "cos", "cos_role",
                                                                   "value")}
            visible = ((roles == CONSISTENT) | (roles == ELIMINATED)).to(torch.float64)  # (B, P, T)
            vocab = torch.nn.functional.one_hot(_value_ids(tunnel, ep.inputs), tunnel.V).to(torch.float64)  # (B, T, V)
            for i in range(n_layers):
                pat = cache[f"backbone.blocks.{i}.attn.hook_pattern"]
                q, k = cache[f"backbone.blocks.{i}.attn.hook_q"], cache[f"backbone.blocks.{i}.attn.hook_k"]
                parts["mass"].append(attention_mass_split(pat, roles, ep.positions) * n)
                parts["entropy"].append(attention_entropy(pat, ep.positions) * n)
                ev = _evenness(pat, roles, ep.positions, ELIMINATED)  # (B, H, P), NaN where undefined
                parts["even"].append(torch.nan_to_num(ev).sum(0))
                parts["even_n"].append((~ev.isnan()).sum(0).to(torch.float64))
                parts["cos"].append(qk_cosine(q, k) * n)
                qn = torch.nn.functional.normalize(q.to(torch.float64), dim=-1)
                kn = torch.nn.functional.normalize(k.to(torch.float64), dim=-1)
                cos = (qn[:, :, ep.positions] @ kn.transpose(-2, -1))  # (B, H, P, T)
                parts["cos_role"].append(torch.einsum("bhpt,bptr->hpr", cos, onehot))
                rows = pat[:, :, ep.positions].to(torch.float64)
                parts["value"].append(torch.einsum("bhpt,bpt,btv->hv", rows, visible, vocab))
            if not example:
                example = {"inputs": ep.inputs[0].cpu(), "roles": roles[0].cpu(),
                           "patterns": torch.stack([cache[f"backbone.blocks.{i}.attn.hook_pattern"][0]
                                                    for i in range(n_layers)]).cpu()}
            for key, v in parts.items():
                sums[key] = sums.get(key, 0) + torch.stack(v).cpu()
            sums["counts"] = sums.get("counts", 0) + onehot.sum((0, 2)).cpu()  # (P, R)
            sums["value_n"] = sums.get("value_n", 0) + torch.einsum("bpt,btv->v", visible, vocab).cpu()
            left -= n
    finally:
        model.train(was_training)
    counts = sums["counts"] / episodes
    cos_role = sums["cos_role"] / (counts * episodes).clamp_min(1e-12)
    cos_role = torch.where(counts > 0, cos_role, torch.nan)
    cos_role[..., FUTURE] = torch.nan  # a causal query never sees these
    even = torch.where(sums["even_n"] > 0, sums["even"] / sums["even_n"].clamp_min(1), torch.nan)
    return EliminationResult(
        positions=[int(p) for p in tunnel.positions.tolist()],
        mass=sums["mass"] / episodes, counts=counts, entropy=sums["entropy"] / episodes,
        evenness=even, qk_cos=sums["cos"] / episodes, cos_by_role=cos_role,
        value_mass=torch.where(sums["value_n"] > 0, sums["value"] / sums["value_n"].clamp_min(1), torch.nan),
        value_counts=sums["value_n"], episodes=episodes, example=example,
    )


def format_summary(result: EliminationResult, role: str = "eliminated", first: int = 1) -> str:
    """One line per layer: mass on ``role`` vs uniform attention, entropy vs uniform, evenness."""
    lines = []
    for row in result.summary(role, first):
        lines.append(f"layer {row['layer']}: mass on {role} {row['mass']:.3f} (uniform attention "
                     f"{row['uniform_mass']:.3f}), attention entropy {row['entropy_bits']:.2f} bits (uniform "
                     f"{row['uniform_entropy_bits']:.2f}), evenness over {role} {row['evenness']:.3f}")
    return "\n".join(lines)
