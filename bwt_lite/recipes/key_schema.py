"""The key schema: which fields of a preset's configuration its key hashes, and how.

A preset's key (:meth:`bwt_lite.recipes.preset.Preset.key`) is the SHA-256 of the canonical JSON (sorted
keys, no spaces) of :func:`canonical`. The first schema hashes every field of :data:`FIRST_FIELDS`. Each
field added to a config type since is a row of :data:`ADDED`: the schema version that added it and the
value at which it is left out of the key. A preset that leaves the field there hashes as it did before the
field existed, so the checkpoints already trained and shipped keep their keys. A new config field needs a
row here (``tests/test_key_schema.py`` fails on a field in neither table).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from ..models.config import ModelConfig
from ..train_config import TrainConfig

FORMAT_VERSION = 1  # bump when the meaning of a stored checkpoint changes (it is hashed into every key)


@dataclass(frozen=True)
class Added:
    """A config field added in key-schema ``version``, left out of the key while it equals ``left_out_at``
    (its default, written as ``to_dict`` writes it)."""

    version: int
    field: str
    left_out_at: Any


# Version 1: the fields every key hashes.
FIRST_FIELDS: dict[type, tuple[str, ...]] = {
    ModelConfig: ("arch", "d_model", "n_layers", "n_heads", "mlp_ratio", "vocab_size", "n_features",
                  "n_positions", "answer_tokens", "n_outputs", "norm_eps"),
    TrainConfig: ("steps", "batch_size", "lr", "weight_decay", "warmup_steps", "min_lr_ratio", "grad_clip",
                  "value_lr_mult", "target", "seed", "eval_every", "eval_episodes"),
}
# Versions 2 and later: the fields each added, hashed only where a preset sets them.
ADDED: dict[type, tuple[Added, ...]] = {
    ModelConfig: (
        Added(2, "rope", False),  # rotary embedding on top of the learned position table
        Added(5, "positions", "learned"),  # the position scheme (the learned table: what version 1 built)
        Added(7, "alibi", False),  # ALiBi's recency bias on top of the learned table
    ),
    TrainConfig: (
        Added(3, "ema", 0.0),  # a moving average of the weights
        Added(4, "decay_steps", 0),  # a schedule longer than the run
        Added(6, "stop_accuracy", 0.0),  # an early stop at a held-out accuracy
        Added(8, "easy_steps", 0),  # a curriculum: its steps on an easier tunnel ...
        Added(8, "easy_tunnel", {}),  # ... and that tunnel's changed arguments
    ),
}
SCHEMA_VERSION = max(a.version for rows in ADDED.values() for a in rows)


def key_fields(config: ModelConfig | TrainConfig) -> dict[str, Any]:
    """``config.to_dict()`` as the key hashes it: each :data:`ADDED` field left out at its default."""
    d = config.to_dict()
    for added in ADDED[type(config)]:
        if d[added.field] == added.left_out_at:
            del d[added.field]
    return d


def canonical(scale: str, tunnel: Mapping[str, Any], model: ModelConfig, train: TrainConfig) -> dict[str, Any]:
    """The dict a preset's key hashes (and a checkpoint stores): format version, scale, tunnel, model, train."""
    return {"format_version": FORMAT_VERSION, "scale": scale, "tunnel": dict(tunnel),
            "model": key_fields(model), "train": key_fields(train)}


def key_of(d: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces) of ``d``, a :func:`canonical` dict."""
    blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def check_format(d: Mapping[str, Any]) -> None:
    """Refuse a stored configuration of another checkpoint format version."""
    if d.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"checkpoint format version {d.get('format_version')!r} is not {FORMAT_VERSION}")


__all__ = ["ADDED", "FIRST_FIELDS", "FORMAT_VERSION", "SCHEMA_VERSION", "Added", "canonical", "check_format",
           "key_fields", "key_of"]
