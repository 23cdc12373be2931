"""Associative recall (random-access binding).

A hidden random *function* f on {0..V-1}, fresh per episode: each key's value is uniform on
{0..V-1}, independently of the others (values may repeat, unlike the bijection). The model sees
(key, value) pairs and at every key predicts that key's value. Keys carry no information about f, so
the exact posterior at a key depends only on whether the key was revealed before: if it was, a point
mass on its value (0 bits: recall, which needs retrieving an arbitrary earlier position by content);
if not, uniform over all V values (log2 V bits; nothing is eliminated, f is not a bijection).

Variants (token layouts; keys are tokens 0..V-1, values are tokens V..2V-1, so a tied head reads the
value slice and ``n_classes = V``):

- ``default``: the bijection's canonical separate-vocabulary layout
  ``[k1, V+v1, k2, V+v2, ..., k_{L-1}, V+v_{L-1}, k_L]`` (length 2L-1, vocabulary 2V), keys drawn
  uniformly **with replacement** (L may exceed V). Every key position predicts f(key). The position
  t (0-based) is a recall with probability 1 - (1 - 1/V)^t. Defaults V = 16, L = 32: 56.3 % of the
  prediction positions are recalls on average (about 14 distinct keys per episode), so the task is
  mostly about retrieval yet keeps plenty of genuinely uncertain (log2 16 = 4 bit) positions; the mean
  Bayes entropy is 1.746 bits. The bijection's V = 20, L = 19 would give only 34 % recalls. The
  episode (63 tokens, vocabulary 32) stays close in size to the bijection's (37 tokens, vocabulary 40).
- ``mqar`` (multi-query associative recall, where a fixed-size recurrent state must run out):
  ``[k1, V+v1, ..., k_n, V+v_n, FILL x gap, q1, V+f(q1), ..., q_m]`` with n = ``n_pairs`` stored
  pairs (distinct keys, drawn without replacement, so n_pairs <= V), ``gap`` filler tokens
  FILL = 2V (vocabulary 2V+1), then m = ``n_queries`` queries, each a stored key drawn uniformly with
  replacement and followed by its value token, except the last one, which ends the sequence
  (length 2n + gap + 2m - 1). Every key token is a prediction position: stored keys are new (uniform),
  queries are recalls (point mass); a repeated query is a recall too.

:meth:`Recall.seen_mask` marks the recall positions, so evaluation can score top-1 accuracy on
recalled keys only. Since V >= 2, "the posterior is a point mass" is an equivalent criterion.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..arguments import check_choice, check_int
from .base import Card, Episodes, Tunnel, check_size


# Largest V whose posterior rows are tabulated ((V + 1) x V float64: 264 KiB at V = 181).
_MAX_ROWS_V = 181


def _seen_before(keys: Tensor, V: int) -> Tensor:
    """(B, P) bool: ``keys[:, t]`` occurs among ``keys[:, :t]``."""
    B, P = keys.shape
    t = torch.arange(P, device=keys.device).expand(B, P)
    # first[b, k]: the first position of key k (P if it never occurs)
    first = torch.full((B, V), P, dtype=torch.int64, device=keys.device).scatter_reduce_(1, keys, t, reduce="amin")
    return first.gather(1, keys) < t


class Recall(Tunnel):
    """Associative recall of a random function; see the module docstring for layouts."""

    name = "recall"
    task = "recalls the value stored under each key"  # in plain words (the claims' reasons)
    kind = "categorical"
    variants = ("default", "mqar")
    length_arg = "L"  # episode length of the default variant (mqar's is set by n_pairs, gap, n_queries)
    accuracy_on = "certain"  # top-1 accuracy is scored on recalls: point-mass posteriors (seen keys)
    baselines = {"prior": "uniform_prior", "reader-no-binding": "reader_no_binding"}
    cards = {"recall": Card(
        "binding", ("accuracy", "min", 0.9),
        {"entropy_mae_bits": ("prior", "reader-no-binding"), "kl_bits": ("prior", "reader-no-binding")},
        why="90 % top-1 on recalled keys (chance is 1/16; the paper: transformer 100 %, Mamba 97.8 %, LSTM 0.5 %); "
            "the reader-no-binding knows the revealed values but not which key holds which")}

    def __init__(self, V: int = 16, L: int = 32, variant: str = "default",
                 n_pairs: int = 8, gap: int = 0, n_queries: int = 8):
        self.V = check_int("V", V, 2, "at least two values")
        self.L = check_int("L", L, 1)
        self.variant = check_choice("variant", variant, self.variants)
        self.n_pairs = check_int("n_pairs", n_pairs, 1)
        self.gap = check_int("gap", gap, 0)
        self.n_queries = check_int("n_queries", n_queries, 1)
        if variant == "mqar" and n_pairs > V:
            raise ValueError(
                f"n_pairs must be <= V (stored keys are distinct, drawn without replacement): "
                f"got n_pairs={n_pairs}, V={V}"
            )
        n, m = n_pairs, n_queries
        seq_len = 2 * n + gap + 2 * m - 1 if variant == "mqar" else 2 * L - 1
        n_pos = n + m if variant == "mqar" else L
        # Per episode: the float64 posterior (with two more such blocks of temporaries when V is too
        # large for the table below), the function f, keys, values, tokens and bookkeeping rows.
        # Fixed: the answer_tokens tuple (about 40 bytes a value).
        self.episode_bytes = 8 * ((1 if V <= _MAX_ROWS_V else 3) * n_pos * V + seq_len + 6 * n_pos + 3 * V)
        check_size("V, L, n_pairs, gap and n_queries", self.episode_bytes + 40 * V)
        self.seq_len = seq_len
        if variant == "mqar":
            self.vocab_size = 2 * V + 1
            self.fill_token: int | None = 2 * V
            self.positions = torch.cat([torch.arange(0, 2 * n, 2), torch.arange(2 * n + gap, seq_len, 2)])
        else:
            self.vocab_size = 2 * V
            self.fill_token = None
            self.positions = torch.arange(0, 2 * L, 2)
        self.n_classes = V
        self.answer_tokens = tuple(range(V, 2 * V))
        # For small V, posterior rows are looked up by code: one-hot rows 0..V-1 (a recalled key: a
        # point mass on its value) and the uniform row V (a new key: every value has probability 1/V).
        self._rows = None if V > _MAX_ROWS_V else torch.cat(
            [torch.eye(V, dtype=torch.float64), torch.full((1, V), 1.0 / V, dtype=torch.float64)])

    def config(self) -> dict[str, Any]:
        """The parameters that matter for this variant (``L`` for default; pairs, gap, queries for mqar)."""
        if self.variant == "mqar":
            return {"tunnel": self.name, "V": self.V, "variant": self.variant,
                    "n_pairs": self.n_pairs, "gap": self.gap, "n_queries": self.n_queries}
        return {"tunnel": self.name, "V": self.V, "L": self.L, "variant": self.variant}

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        (B, g), V = self._check_sample_args(batch_size, generator), self.V
        dev = g.device
        f = torch.randint(0, V, (B, V), generator=g, device=dev)  # f[b, k] = value of key k
        if self.variant == "mqar":
            n, m = self.n_pairs, self.n_queries
            stored = torch.rand(B, V, generator=g, device=dev).argsort(dim=1)[:, :n]
            queries = stored.gather(1, torch.randint(0, n, (B, m), generator=g, device=dev))
            s_val, q_val = f.gather(1, stored), f.gather(1, queries)
            s_pairs = torch.stack([stored, s_val + V], dim=2).reshape(B, 2 * n)
            q_pairs = torch.stack([queries, q_val + V], dim=2).reshape(B, 2 * m)[:, :-1]
            fill = torch.full((B, self.gap), 2 * V, dtype=torch.long, device=dev)
            inputs = torch.cat([s_pairs, fill, q_pairs], dim=1)
            keys, target = torch.cat([stored, queries], dim=1), torch.cat([s_val, q_val], dim=1)
        else:
            keys = torch.randint(0, V, (B, self.L), generator=g, device=dev)
            target = f.gather(1, keys)
            inputs = torch.stack([keys, target + V], dim=2).reshape(B, 2 * self.L)[:, :-1]
        probs = self.posterior(keys, target)
        return Episodes(inputs=inputs.contiguous(), positions=self.positions.to(dev), target=target, probs=probs)

    def posterior(self, keys: Tensor, values: Tensor) -> Tensor:
        """Exact predictive of ``values[:, t]`` given pairs ``< t`` and ``keys[:, t]``: (B, P, V) float64.

        ``keys``/``values`` (B, P) list the pairs in sequence order, one per prediction position.
        """
        V = self.V
        if self._rows is None:
            seen = _seen_before(keys, V).unsqueeze(2)
            point = torch.nn.functional.one_hot(values, V).to(torch.float64)
            return torch.where(seen, point, 1.0 / V)
        if self._rows.device != keys.device:  # moved once, then kept on the episodes' device
            self._rows = self._rows.to(keys.device)
        rows = self._rows
        code = torch.where(_seen_before(keys, V), values, V)  # the value if recalled, else V (uniform)
        return rows.index_select(0, code.view(-1)).view(*code.shape, V)

    def seen_mask(self, episodes: Episodes) -> Tensor:
        """(B, P) bool: the key at each prediction position appeared earlier in its episode (a recall).

        Equivalent (V >= 2) to ``episodes.probs.amax(-1) == 1``: a point-mass posterior.
        """
        keys = episodes.inputs[:, episodes.positions.to(episodes.inputs.device)]
        return _seen_before(keys, self.V)

    def expected_seen(self) -> Tensor:
        """(P,) float64 probability that each prediction position is a recall."""
        if self.variant == "mqar":
            return torch.cat([torch.zeros(self.n_pairs, dtype=torch.float64),
                              torch.ones(self.n_queries, dtype=torch.float64)])
        t = torch.arange(self.L, dtype=torch.float64)
        return 1.0 - (1.0 - 1.0 / self.V) ** t
