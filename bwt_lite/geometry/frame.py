"""The hypothesis frame: how orthogonal are the keys of the hypothesis tokens? (Paper I, the hypothesis frame)

The canonical measurement takes the layer-0 key of every hypothesis token from its token
embedding alone, ``k_v = W_K^(h) RMSNorm(e_v)`` (the block's own pre-attention norm and key
projection, no position embedding), and reports per head the mean absolute cosine between the keys
of different tokens. Published numbers disagree by a factor of ten (0.052 in Paper I, 0.43-0.49 when
the authors re-measured their own checkpoint), and the definition is what moves them, so every
variant is offered under a name:

- ``source``: ``"projected"`` (``W_K^(h) RMSNorm(e_v)``) or ``"raw"`` (the embedding rows ``e_v``
  themselves, no norm, no projection);
- ``heads``: ``"per_head"`` (one d_head-dimensional key per head) or ``"concat"`` (all heads
  concatenated, one d_model-dimensional key; the only choice for ``"raw"``);
- ``statistic``: ``"abs"`` (mean |cos| over off-diagonal pairs) or ``"signed"`` (mean cos).

Every measurement comes with the same measurement on the random-initialised model (same config,
same seed: the weights training started from) and with the analytic value for independent
isotropic Gaussian vectors of the same dimension d: E|cos| = Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2)),
about sqrt(2 / (pi d)) (0.141 for d = 32), and E cos = 0.

The hypothesis tokens default to the model's answer tokens (the V value tokens of the bijection:
one token per hypothesis about the answer); pass ``tokens`` for another set, e.g. the key tokens.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..arguments import check_choice, check_int
from ..train import init_model

SOURCES = ("projected", "raw")
HEADS = ("per_head", "concat")
STATISTICS = ("abs", "signed")


@dataclass(frozen=True)
class FrameDefinition:
    """One way of measuring key orthogonality (see the module docstring)."""

    source: str = "projected"
    heads: str = "per_head"
    statistic: str = "abs"

    def __post_init__(self) -> None:
        check_choice("source", self.source, SOURCES)
        check_choice("heads", self.heads, HEADS)
        check_choice("statistic", self.statistic, STATISTICS)
        if self.source == "raw" and self.heads != "concat":
            raise ValueError("heads must be 'concat' for source='raw' (raw embeddings have no heads)")

    @property
    def name(self) -> str:
        return f"{self.source}/{self.heads}/{self.statistic}"

    @classmethod
    def parse(cls, spec: "str | FrameDefinition") -> "FrameDefinition":
        """A definition from its name ``"source/heads/statistic"`` (or a definition, returned as is)."""
        if isinstance(spec, FrameDefinition):
            return spec
        parts = str(spec).split("/")
        if len(parts) != 3:
            raise ValueError(f"definition must be 'source/heads/statistic', e.g. 'projected/per_head/abs'; "
                             f"got {spec!r}; known: {', '.join(d.name for d in DEFINITIONS)}")
        return cls(*parts)


# Every valid definition; the first is the canonical one.
DEFINITIONS: tuple[FrameDefinition, ...] = (
    FrameDefinition("projected", "per_head", "abs"),
    FrameDefinition("projected", "per_head", "signed"),
    FrameDefinition("projected", "concat", "abs"),
    FrameDefinition("projected", "concat", "signed"),
    FrameDefinition("raw", "concat", "abs"),
    FrameDefinition("raw", "concat", "signed"),
)


def analytic_abs_cosine(d: int) -> float:
    """The analytic baseline sqrt(2 / (pi d)): E|cos| of two independent isotropic vectors, large d."""
    check_int("d", d, 1)
    return math.sqrt(2.0 / (math.pi * d))


def expected_abs_cosine(d: int) -> float:
    """Exact E|cos| of two independent isotropic vectors in R^d: Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2))."""
    check_int("d", d, 2, "at least 2 dimensions")
    return math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi)


def abs_cosine_std(d: int) -> float:
    """Standard deviation of |cos| for two independent isotropic vectors in R^d (E cos^2 = 1/d)."""
    return math.sqrt(max(1.0 / d - expected_abs_cosine(d) ** 2, 0.0))


def cosine_matrix(keys: torch.Tensor) -> torch.Tensor:
    """Pairwise cosines of the last-dimension vectors: (..., n, d) -> (..., n, n), float64."""
    if keys.dim() < 2:
        raise ValueError(f"keys must have shape (..., n, d), got {tuple(keys.shape)}")
    k = F.normalize(keys.detach().to(torch.float64), dim=-1)
    return k @ k.transpose(-2, -1)


def off_diagonal_cosine(keys: torch.Tensor, statistic: str = "abs") -> torch.Tensor:
    """Mean off-diagonal cosine of the key set(s) ``keys`` (..., n, d) -> (...,): |cos| or signed cos."""
    check_choice("statistic", statistic, STATISTICS)
    n = keys.shape[-2] if keys.dim() >= 2 else 0
    if n < 2:
        raise ValueError(f"keys needs at least 2 vectors (shape (..., n, d) with n >= 2), got {tuple(keys.shape)}")
    c = cosine_matrix(keys)
    off = ~torch.eye(n, dtype=torch.bool, device=c.device)
    vals = c[..., off]  # (..., n (n - 1))
    return (vals.abs() if statistic == "abs" else vals).mean(-1)


def effective_dimension(cosines: torch.Tensor) -> torch.Tensor:
    """Participation ratio of a cosine matrix's eigenvalues, (sum l)^2 / sum l^2 = n^2 / ||C||_F^2:
    (..., n, n) -> (...,). n orthogonal keys give n, collinear keys 1."""
    n = cosines.shape[-1]
    return n ** 2 / cosines.to(torch.float64).pow(2).sum((-2, -1))


def hypothesis_tokens(model: nn.Module) -> list[int]:
    """The model's answer tokens (one per hypothesis about the answer), e.g. the V value tokens."""
    tokens = getattr(model.cfg, "answer_tokens", None)
    if tokens is None:
        raise ValueError("the model has no answer tokens (a linear head): pass tokens=... explicitly")
    return list(tokens)


@torch.no_grad()
def hypothesis_keys(model: nn.Module, tokens: Sequence[int] | None = None, *, layer: int = 0,
                    source: str = "projected", heads: str = "per_head") -> torch.Tensor:
    """The keys of ``tokens`` from their token embeddings alone: (H, n, d_head), or (1, n, d).

    ``source="projected"``: block ``layer``'s key projection of its pre-attention RMSNorm of each
    embedding row, split per head (``heads="per_head"``) or whole (``"concat"``). At ``layer`` > 0
    this is the direct path only (what the block would make of the bare embedding). ``"raw"``: the
    embedding rows. Float64.
    """
    check_choice("source", source, SOURCES)
    check_choice("heads", heads, HEADS)
    tokens = hypothesis_tokens(model) if tokens is None else [int(t) for t in tokens]
    emb = model.embed.tok.weight
    bad = [t for t in tokens if not 0 <= t < emb.shape[0]]
    if bad:
        raise ValueError(f"tokens {bad} outside the vocabulary 0..{emb.shape[0] - 1}")
    e = emb[torch.tensor(tokens, device=emb.device)]
    if source == "raw":
        if heads != "concat":
            raise ValueError("heads must be 'concat' for source='raw' (raw embeddings have no heads)")
        return e.to(torch.float64).unsqueeze(0).cpu()
    blocks = getattr(model.backbone, "blocks", None)
    if blocks is None or not hasattr(blocks[0], "attn"):
        raise ValueError(f"architecture {model.cfg.arch!r} has no key projections; use source='raw'")
    check_int("layer", layer, 0)
    if layer >= len(blocks):
        raise ValueError(f"layer must be in 0..{len(blocks) - 1}, got {layer}")
    block = blocks[layer]
    k = block.attn.k(block.ln1(e))  # (n, d)
    if heads == "concat":
        return k.to(torch.float64).unsqueeze(0).cpu()
    H, dh = block.attn.n_heads, block.attn.d_head
    return k.view(len(tokens), H, dh).transpose(0, 1).to(torch.float64).cpu()


@dataclass
class FrameResult:
    """Key orthogonality under one definition, beside the random-init model and the analytic value."""

    definition: str  # "source/heads/statistic"
    layer: int
    tokens: list[int]
    dim: int  # dimension of each key vector (d_head per head, d_model otherwise)
    trained: list[float]  # the statistic per head (one entry for "concat" and "raw")
    random_init: list[float]  # the same on the model at initialisation (same config and seed)
    analytic: float  # sqrt(2 / (pi dim)) for "abs", 0 for "signed"
    analytic_exact: float  # the exact E|cos| for "abs", 0 for "signed"
    cosines: torch.Tensor = field(repr=False)  # (H, n, n) trained cosine matrices
    cosines_random: torch.Tensor = field(repr=False)  # (H, n, n) at initialisation

    @property
    def effective_dim(self) -> list[float]:
        """Per head: the participation ratio of the trained keys' cosine matrix (see :func:`effective_dimension`)."""
        return effective_dimension(self.cosines).tolist()

    @property
    def effective_dim_random(self) -> list[float]:
        return effective_dimension(self.cosines_random).tolist()

    @property
    def trained_mean(self) -> float:
        return sum(self.trained) / len(self.trained)

    @property
    def random_mean(self) -> float:
        return sum(self.random_init) / len(self.random_init)

    def to_dict(self) -> dict:
        return {"definition": self.definition, "layer": self.layer, "dim": self.dim, "trained": self.trained,
                "random_init": self.random_init, "analytic": self.analytic, "analytic_exact": self.analytic_exact}


def random_init_model(model: nn.Module, seed: int) -> nn.Module:
    """The model as training started: the same config, weights drawn from ``seed``."""
    check_int("seed", seed, 0)
    return init_model(model.cfg, seed).to(next(model.parameters()).device).eval()


def key_orthogonality(model: nn.Module, definition: str | FrameDefinition = "projected/per_head/abs", *,
                      seed: int, tokens: Sequence[int] | None = None, layer: int = 0,
                      reference: nn.Module | None = None) -> FrameResult:
    """Key orthogonality of the hypothesis tokens under ``definition``, beside the random-init model.

    ``seed``: the training seed of ``model`` (its initial weights are rebuilt from it), unless the
    random-init ``reference`` model is passed directly.
    """
    d = FrameDefinition.parse(definition)
    ref = reference if reference is not None else random_init_model(model, seed)
    keys = hypothesis_keys(model, tokens, layer=layer, source=d.source, heads=d.heads)
    keys0 = hypothesis_keys(ref, tokens, layer=layer, source=d.source, heads=d.heads)
    dim = keys.shape[-1]
    abs_stat = d.statistic == "abs"
    return FrameResult(
        definition=d.name, layer=layer,
        tokens=hypothesis_tokens(model) if tokens is None else [int(t) for t in tokens],
        dim=dim,
        trained=off_diagonal_cosine(keys, d.statistic).tolist(),
        random_init=off_diagonal_cosine(keys0, d.statistic).tolist(),
        analytic=analytic_abs_cosine(dim) if abs_stat else 0.0,
        analytic_exact=expected_abs_cosine(dim) if abs_stat else 0.0,
        cosines=cosine_matrix(keys), cosines_random=cosine_matrix(keys0),
    )


def frame_table(model: nn.Module, *, seed: int, tokens: Sequence[int] | None = None, layer: int = 0,
                definitions: Sequence[str | FrameDefinition] = DEFINITIONS) -> list[FrameResult]:
    """:func:`key_orthogonality` under every definition (the random-init model is built once)."""
    ref = random_init_model(model, seed)
    return [key_orthogonality(model, d, seed=seed, tokens=tokens, layer=layer, reference=ref) for d in definitions]


def format_frame_table(results: Sequence[FrameResult]) -> str:
    """One line per definition: trained (mean and range over heads), random init, analytic."""
    lines = [f"{'definition':28s} {'dim':>4s} {'trained':>22s} {'random init':>22s} {'analytic':>9s}"]
    for r in results:
        def cell(v: list[float]) -> str:
            m = sum(v) / len(v)
            return f"{m:+.3f}" if len(v) == 1 else f"{m:+.3f} [{min(v):+.3f},{max(v):+.3f}]"
        lines.append(f"{r.definition:28s} {r.dim:4d} {cell(r.trained):>22s} {cell(r.random_init):>22s} "
                     f"{r.analytic_exact:9.3f}")
    return "\n".join(lines)
