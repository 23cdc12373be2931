"""The :class:`Preset` type: one named, keyed configuration (tunnel, model, training) at a scale.

Its :attr:`Preset.name` reads which recipe it is off the tables it was resolved from; its
:meth:`Preset.key` hashes :func:`bwt_lite.recipes.key_schema.canonical` and keys the checkpoint cache.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..models.config import ModelConfig
from ..train_config import TrainConfig
from ..tunnels import TUNNELS
from .key_schema import canonical, check_format, key_of
from .model_recipes import PAPER_DEPTH_SIZES
from .tunnel_args import TUNNEL_ARGS, VARIANT_ARGS

SCALES = ("lite", "paper")  # lite: CPU, minutes; paper: Paper I's setup


@dataclass(frozen=True)
class Preset:
    scale: str
    tunnel: dict[str, Any]  # make_tunnel(**tunnel)
    model: ModelConfig
    train: TrainConfig

    @property
    def name(self) -> str:
        """e.g. ``hmm-slow-transformer-lite-alibi-soft``: the tunnel, its variant, training length and loss
        horizon where not the default, arch, scale, then the paper's depth, the position scheme and soft
        targets where set."""
        soft = "-soft" if self.train.target == "soft" else ""
        tunnel, variant = self.tunnel["tunnel"], self.tunnel.get("variant")
        if variant is not None and variant != TUNNEL_ARGS.get(tunnel, {}).get("variant"):
            tunnel = f"{tunnel}-{variant}"  # e.g. hmm-slow-transformer-lite-soft
        length_arg = TUNNELS[self.tunnel["tunnel"]].length_arg
        default = {**TUNNEL_ARGS.get(self.tunnel["tunnel"], {}),
                   **VARIANT_ARGS.get((self.tunnel["tunnel"], variant), {})}.get(length_arg)
        if self.tunnel.get(length_arg, default) != default:
            tunnel = f"{tunnel}-L{self.tunnel[length_arg]}"  # another training length: recurrence-L8-...
        if self.tunnel.get("horizon") is not None:
            tunnel = f"{tunnel}-h{self.tunnel['horizon']}"  # a loss horizon: recurrence-h5-transformer-lite
        deep = PAPER_DEPTH_SIZES.get((self.tunnel["tunnel"], self.model.arch))
        is_deep = self.scale == "lite" and deep is not None and all(
            getattr(self.model, k) == v for k, v in deep.items())
        depth = f"-{self.model.n_layers}L" if is_deep else ""
        pos = "" if self.model.positions == "learned" else f"-pos-{self.model.positions}"
        pos += "-alibi" if self.model.alibi else ""  # the learned table with ALiBi's recency bias
        return f"{tunnel}-{self.model.arch}-{self.scale}{depth}{pos}{soft}"  # e.g. hmm-transformer-lite-pos-none-soft

    def to_dict(self) -> dict[str, Any]:
        """The canonical configuration: what the key hashes and a checkpoint stores (the key schema's)."""
        return canonical(self.scale, self.tunnel, self.model, self.train)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Preset":
        """The preset of a :meth:`to_dict` (fields the key schema left out take their defaults)."""
        check_format(d)
        return cls(scale=d["scale"], tunnel=dict(d["tunnel"]), model=ModelConfig.from_dict(d["model"]),
                   train=TrainConfig.from_dict(d["train"]))

    def key(self) -> str:
        """SHA-256 of the canonical JSON of the whole configuration."""
        return key_of(self.to_dict())

    def with_train(self, **changes: Any) -> "Preset":
        """A copy with training fields changed, e.g. ``preset.with_train(steps=100, target="soft")``."""
        return replace(self, train=replace(self.train, **changes))


__all__ = ["SCALES", "Preset"]
