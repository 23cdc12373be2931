"""Bijection elimination (belief accumulation), spec 1.2.

A hidden bijection pi of {0..V-1}, fresh per episode. The model sees (key, value) pairs and at every
key predicts that key's value. Exact posterior: uniform over the values not yet revealed (a key seen
before, possible only with replacement, has a point mass on its value).

Variants (token layouts):
- ``separate`` (canonical, the paper's production format): ``[k1, V+v1, ..., k_{L-1}, V+v_{L-1}, k_L]``,
  vocabulary 2V, keys without replacement, each key position predicts the value that follows.
- ``paired``: shared vocabulary V, ``[k1, v1, ..., kL, vL, q]``, keys without replacement; key
  positions predict the next value, the final query q (a context key) predicts pi(q), entropy 0.
  Value positions are never supervised (supervising a value with its own token teaches copying).
- ``replacement``: the separate layout with keys drawn with replacement; L may exceed V.
"""
from __future__ import annotations

from typing import Any

import torch

from ..validation import check_choice, check_int
from .base import Episodes, Tunnel


class Bijection(Tunnel):
    name = "bijection"
    variants = ("separate", "paired", "replacement")
    length_arg = "L"

    def __init__(self, V: int = 20, L: int = 19, variant: str = "separate"):
        self.V = check_int("V", V, 2, "at least two values")
        self.L = check_int("L", L, 1)
        self.variant = check_choice("variant", variant, self.variants)
        if variant != "replacement" and L > V:
            raise ValueError(
                f"L must be <= V when keys are drawn without replacement (variant {variant!r}): "
                f"got L={L}, V={V}; use variant='replacement' for L > V"
            )
        key_pos = torch.arange(0, 2 * L, 2)
        if variant == "paired":
            self.seq_len, self.vocab_size = 2 * L + 1, V
            self.answer_tokens = tuple(range(V))
            self.positions = torch.cat([key_pos, torch.tensor([2 * L])])
        else:
            self.seq_len, self.vocab_size = 2 * L - 1, 2 * V
            self.answer_tokens = tuple(range(V, 2 * V))
            self.positions = key_pos
        self.n_classes = V

    def config(self) -> dict[str, Any]:
        return {"tunnel": self.name, "V": self.V, "L": self.L, "variant": self.variant}

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        B, V, L = check_int("batch_size", batch_size, 1), self.V, self.L
        g, dev = generator, generator.device
        pi = torch.rand(B, V, generator=g, device=dev).argsort(dim=1)  # pi[b, k] = value of key k
        if self.variant == "replacement":
            keys = torch.randint(0, V, (B, L), generator=g, device=dev)
        else:
            keys = torch.rand(B, V, generator=g, device=dev).argsort(dim=1)[:, :L]
        values = pi.gather(1, keys)  # (B, L)
        probs = self.posterior(keys, values)  # (B, L, V) float64

        if self.variant == "paired":
            pairs = torch.stack([keys, values], dim=2).reshape(B, 2 * L)
            q_idx = torch.randint(0, L, (B, 1), generator=g, device=dev)
            q = keys.gather(1, q_idx)
            inputs = torch.cat([pairs, q], dim=1)
            q_value = values.gather(1, q_idx)
            target = torch.cat([values, q_value], dim=1)
            q_probs = torch.nn.functional.one_hot(q_value, V).to(torch.float64)
            probs = torch.cat([probs, q_probs], dim=1)
        else:
            pairs = torch.stack([keys, values + V], dim=2).reshape(B, 2 * L)
            inputs, target = pairs[:, :-1], values
        return Episodes(inputs=inputs.contiguous(), positions=self.positions.to(dev), target=target, probs=probs)

    def posterior(self, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Exact predictive of ``values[:, t]`` given pairs ``< t`` and ``keys[:, t]``: (B, L, V) float64."""
        V = self.V
        onehot_v = torch.nn.functional.one_hot(values, V).to(torch.float64)  # (B, L, V)
        onehot_k = torch.nn.functional.one_hot(keys, V).to(torch.float64)
        seen_v = (onehot_v.cumsum(1) - onehot_v) > 0  # value revealed strictly before t
        seen_k_counts = onehot_k.cumsum(1) - onehot_k
        key_seen = seen_k_counts.gather(2, keys.unsqueeze(2)).squeeze(2) > 0  # (B, L)
        free = (~seen_v).to(torch.float64)
        uniform = free / free.sum(dim=2, keepdim=True)
        return torch.where(key_seen.unsqueeze(2), onehot_v, uniform)
