"""The model configuration shared by every architecture (one flat dataclass, JSON round-trip)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# How position enters a model: a learned table added to the inputs (rows 0..n_positions-1), a fixed
# sin/cos table (defined at any length), rotary embedding in attention only (transformer), a linear
# recency bias on the attention scores only (ALiBi, transformer), or nothing (causal attention alone
# tells positions apart).
POSITIONS = ("learned", "sinusoidal", "rotary", "alibi", "none")
ATTENTION_ONLY_POSITIONS = ("rotary", "alibi")  # schemes that act inside attention: transformer only


@dataclass(frozen=True)
class ModelConfig:
    arch: str = "transformer"  # backbone: see bwt_lite.models.ARCHS
    d_model: int = 192  # residual stream width
    n_layers: int = 6  # blocks (attention blocks; residual MLP blocks for the MLP control)
    n_heads: int = 6  # attention heads (transformer only); head dim = d_model / n_heads
    mlp_ratio: int = 4  # MLP hidden width = mlp_ratio * d_model
    vocab_size: int = 40  # input token vocabulary (ignored when n_features > 0)
    n_features: int = 0  # float input features per position (0: token inputs)
    n_positions: int = 38  # rows of the learned position table (>= sequence length; read by "learned" only)
    answer_tokens: tuple[int, ...] | None = None  # tied head over these token ids; None: linear head
    n_outputs: int = 0  # outputs of a linear head (used when answer_tokens is None)
    norm_eps: float = 1e-5  # RMSNorm / LayerNorm epsilon
    rope: bool = False  # transformer only: rotary positions in attention, on top of the learned table
    positions: str = "learned"  # one of POSITIONS; "rotary" is rotary embedding without the learned table
    alibi: bool = False  # transformer only: ALiBi's recency bias in attention, on top of the learned table

    def __post_init__(self) -> None:
        if self.answer_tokens is not None and self.n_features > 0:
            raise ValueError("a tied head (answer_tokens) needs token inputs; float-feature models use n_outputs")
        if self.answer_tokens is not None:
            object.__setattr__(self, "answer_tokens", tuple(int(t) for t in self.answer_tokens))
            bad = [t for t in self.answer_tokens if not 0 <= t < self.vocab_size]
            if bad:
                raise ValueError(f"answer_tokens {bad} outside the vocabulary 0..{self.vocab_size - 1}")
        elif self.n_outputs < 1:
            raise ValueError("a model needs answer_tokens (tied head) or n_outputs >= 1 (linear head)")
        for name in ("d_model", "n_layers", "mlp_ratio", "n_positions"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.positions not in POSITIONS:
            raise ValueError(f"unknown positions {self.positions!r}; allowed: {', '.join(POSITIONS)}")
        if self.rope and self.positions != "learned":
            raise ValueError(f"rope=True adds rotary embedding to the learned table; with positions="
                             f"{self.positions!r} leave rope False (positions='rotary' is rotary alone)")
        if self.alibi and self.positions != "learned":
            raise ValueError(f"alibi=True adds ALiBi's recency bias to the learned table; with positions="
                             f"{self.positions!r} leave alibi False (positions='alibi' is the bias alone)")
        if self.alibi and self.arch != "transformer":
            raise ValueError(f"alibi=True (a recency bias in attention) is for the transformer, not arch={self.arch!r}")
        if self.positions in ATTENTION_ONLY_POSITIONS and self.arch != "transformer":
            raise ValueError(f"positions={self.positions!r} acts in attention: it is for the transformer, "
                             f"not arch={self.arch!r}")

    @property
    def rotary(self) -> bool:
        """Are queries and keys rotated by position (``rope`` or ``positions="rotary"``)?"""
        return self.rope or self.positions == "rotary"

    @property
    def recency_bias(self) -> bool:
        """Does attention add ALiBi's recency bias (``alibi`` or ``positions="alibi"``)?"""
        return self.alibi or self.positions == "alibi"

    @property
    def n_classes(self) -> int:
        return len(self.answer_tokens) if self.answer_tokens is not None else self.n_outputs

    def to_dict(self) -> dict[str, Any]:
        """Every field, as JSON writes it (a preset's key leaves out the fields added later while at their
        defaults: ``bwt_lite.recipes.key_schema``)."""
        d = asdict(self)
        if d["answer_tokens"] is not None:
            d["answer_tokens"] = list(d["answer_tokens"])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        extra = set(d) - known
        if extra:
            raise ValueError(f"unknown model config field(s) {sorted(extra)}; known: {sorted(known)}")
        return cls(**d)
