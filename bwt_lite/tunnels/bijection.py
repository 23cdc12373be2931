"""Bijection elimination (belief accumulation).

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

import threading
from typing import Any

import torch

from ..arguments import check_choice, check_int
from .base import Card, Episodes, Tunnel, check_size


RANK_MAX_V = 64  # _ranks ranks rows up to this long by pairwise comparison (V^2 work a row)
RANK_BUFFER = 1 << 20  # _ranks compares at most this many pairs at a time (4 MB of int32)
_ROWS: dict[tuple[int, str], torch.Tensor] = {}  # arange(V), by (V, device)
_WORK = threading.local()  # _ranks' comparison buffer, per thread


def _arange_rows(n: int, V: int, device: torch.device) -> torch.Tensor:
    """``arange(V)`` as a row expanded to (n, V) (the row cached by V and device)."""
    key = (V, str(device))
    if key not in _ROWS:
        _ROWS[key] = torch.arange(V, device=device)
    return _ROWS[key].expand(n, V)


def _ranks(r: torch.Tensor) -> torch.Tensor:
    """The inverse of ``r.argsort(dim=1)`` for draws ``r`` (n, V) of ``torch.rand``: ``rank`` (n, V)
    int64 with ``rank[b, j]`` the position of entry j of row b in that argsort.

    On a CPU, for V <= :data:`RANK_MAX_V`, each entry's rank is counted by comparing it with every
    other entry of its row: for random rows this short that is several times faster than sorting
    them (a sort's branches are unpredictable). The draws are non-negative floats, whose bit patterns
    read as integers order as the numbers do; the comparisons run with the rows last (V x V x n), where
    torch's kernels are fastest. Rows with two equal entries (about one in 10^5 rows of 20 float32
    draws), which counts cannot order as ``argsort`` does, are sorted by ``argsort`` itself.
    """
    n, V = r.shape
    if r.device.type != "cpu" or V > RANK_MAX_V or r.dtype not in (torch.float32, torch.float64):
        perm = r.argsort(dim=1)
        return torch.empty_like(perm).scatter_(1, perm, _arange_rows(n, V, r.device))
    bits = r.t().contiguous().view(torch.int32 if r.dtype == torch.float32 else torch.int64)  # (V, n)
    # [i, j, b] = bits_i - bits_j, negative iff r_i < r_j, for up to `rows` rows at a time; in a buffer
    # kept from call to call (per thread), as a fresh one of this size costs page faults on first touch
    rows = max(1, min(n, RANK_BUFFER // (V * V)))
    less = getattr(_WORK, "less", None)
    if less is None or less.shape != (V, V, rows) or less.dtype != bits.dtype:
        less = _WORK.less = torch.empty(V, V, rows, dtype=bits.dtype)
    rank = torch.empty(n, V, dtype=torch.int64)
    for s in range(0, n, rows):
        part, out = bits[:, s:s + rows], less[..., :min(rows, n - s)]
        torch.sub(part.unsqueeze(1), part.unsqueeze(0), out=out)
        out >>= bits.element_size() * 8 - 1  # its sign: -1 iff r_i < r_j, else 0
        # rank[b, j] = #{i: r_i < r_j}: the counts, negated, then converted and transposed in one copy
        rank[s:s + rows].copy_(out.sum(0, dtype=bits.dtype).neg_().t())
    # Without ties every row's ranks are 0..V-1, summing to V (V - 1) / 2; a tie lowers the sum.
    if int(rank.sum()) != n * V * (V - 1) // 2:
        tied = (rank.sum(1) != V * (V - 1) // 2).nonzero().squeeze(1)
        rank[tied] = r[tied].argsort(dim=1).argsort(dim=1)  # argsort's order, inverted
    return rank


def _ranked_permutations(r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``perm = r.argsort(dim=1)`` for draws ``r`` (n, V) of ``torch.rand`` (see :func:`_ranks`) and
    its inverse: ``(perm, rank)``, both (n, V) int64, ``rank[b, perm[b, p]] = p``."""
    rank = _ranks(r)
    return torch.empty_like(rank).scatter_(1, rank, _arange_rows(*rank.shape, r.device)), rank


class Bijection(Tunnel):
    name = "bijection"
    task = "rules out the values already used, as the exact posterior does"  # in plain words (the claims' reasons)
    variants = ("separate", "paired", "replacement")
    length_arg = "L"
    baselines = {"prior": "uniform_prior", "right-entropy": "right_entropy"}
    cards = {"bijection": Card(
        "accumulation", ("entropy_mae_bits", "max", 0.1),
        {"entropy_mae_bits": ("prior",), "kl_bits": ("prior", "right-entropy")},
        why="a tenth of the 1.107-bit plateau of a model that ignores the context; the prior (uniform over V) "
            "lacks accumulation, and for KL so does right-entropy, which has Bayes' entropy by construction "
            "(entropy MAE 0) but eliminates nothing")}

    def baseline_functions(self) -> dict[str, str]:
        """right-entropy needs Bayes' entropy log2(V - t) at key t: the ``separate`` variant only."""
        return {k: v for k, v in self.baselines.items() if k != "right-entropy" or self.variant == "separate"}

    def __init__(self, V: int = 20, L: int = 19, variant: str = "separate"):
        self.V = check_int("V", V, 2, "at least two values")
        self.L = check_int("L", L, 1)
        self.variant = check_choice("variant", variant, self.variants)
        if variant != "replacement" and L > V:
            raise ValueError(
                f"L must be <= V when keys are drawn without replacement (variant {variant!r}): "
                f"got L={L}, V={V}; use variant='replacement' for L > V"
            )
        n_pos = L + (variant == "paired")  # prediction positions
        # Per episode: the float64 posterior (three such blocks at a time for the with-replacement
        # posterior, one and its int64 index otherwise) and a few int64 rows of keys, values and
        # tokens. Fixed: the posterior table below and the answer_tokens tuple (about 40 bytes a value).
        self.episode_bytes = (24 if variant == "replacement" else 9) * n_pos * V + 8 * (6 * L + 4 * V)
        self.fixed_bytes = 8 * (L + 1) ** 2 if variant != "replacement" else 0
        check_size("V and L", self.episode_bytes + self.fixed_bytes + 40 * V)
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
        # Keys without replacement: the posterior at key t is 1 / (V - t) on each value revealed at
        # position t or later (or never), 0 on the values revealed before t. _table[t, f] holds that
        # number for a value first revealed at f (f = L: never), so a posterior is one gather; the
        # paired layout's extra row t = L is zeros, for the query's point mass.
        if variant != "replacement":
            t, f = torch.arange(L + 1).unsqueeze(1), torch.arange(L + 1)
            uniform = 1.0 / (V - t.clamp_max(L - 1)).to(torch.float64)
            self._table = torch.where((t <= f) & (t < L), uniform, 0.0)  # (L + 1, L + 1) float64

    def config(self) -> dict[str, Any]:
        return {"tunnel": self.name, "V": self.V, "L": self.L, "variant": self.variant}

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        (B, g), V, L = self._check_sample_args(batch_size, generator), self.V, self.L
        dev = g.device
        # pi = rand(B, V).argsort(1) (pi[b, k] = value of key k) and the keys, rand(B, V).argsort(1)[:, :L]
        # or randint, by way of the permutations' inverses (see _ranks).
        if self.variant == "replacement":
            pi, _ = _ranked_permutations(torch.rand(B, V, generator=g, device=dev))
            keys = torch.randint(0, V, (B, L), generator=g, device=dev)
            values = pi.gather(1, keys)  # (B, L)
            probs = self.posterior(keys, values)  # (B, L, V) float64
        else:
            # Both draws at once (the generator fills a tensor in order: the same numbers), as ranks:
            # pi_rank[v] is the key whose value is v (pi is its inverse), key_rank[k] the position of
            # key k. Then first[v] = key_rank[pi_rank[v]] is the position at which value v is revealed,
            # and the inverses of first and key_rank are the values and the keys in order of position:
            # one scatter for both.
            rank = _ranks(torch.rand(2 * B, V, generator=g, device=dev))
            ranks = torch.empty_like(rank)
            torch.gather(rank[B:], 1, rank[:B], out=ranks[:B])
            ranks[B:] = rank[B:]
            in_order = torch.empty_like(ranks).scatter_(1, ranks, _arange_rows(2 * B, V, dev))
            values, keys = in_order[:B, :L].contiguous(), in_order[B:, :L]  # (B, L)
            first = ranks[:B].clamp_max_(L)  # (B, V); L: never revealed
            probs = self._posterior_from_first(first, extra=self.variant == "paired")
        if self.variant == "paired":
            inputs = torch.empty(B, 2 * L + 1, dtype=torch.int64, device=dev)
            inputs[:, 0:2 * L:2], inputs[:, 1:2 * L:2] = keys, values
            q_idx = torch.randint(0, L, (B, 1), generator=g, device=dev)
            inputs[:, 2 * L:] = keys.gather(1, q_idx)
            q_value = values.gather(1, q_idx)
            target = torch.cat([values, q_value], dim=1)
            probs[:, L].scatter_(1, q_value, 1.0)  # the query's answer is known: a point mass
        else:
            inputs = torch.empty(B, 2 * L - 1, dtype=torch.int64, device=dev)
            inputs[:, 0::2] = keys
            torch.add(values[:, :-1], V, out=inputs[:, 1::2])
            target = values
        return Episodes(inputs=inputs, positions=self.positions.to(dev), target=target, probs=probs)

    def _posterior_distinct(self, values: torch.Tensor, extra: bool = False) -> torch.Tensor:
        """:meth:`posterior` for keys drawn without replacement (no key repeats): at key t, uniform
        over the ``V - t`` values not revealed before t. (B, L, V) float64, or (B, L + 1, V) with
        ``extra`` (the last row zeros, for the caller to fill)."""
        B, L = values.shape
        # first[b, v]: the position at which value v is revealed (L if never); values are distinct.
        first = torch.full((B, self.V), L, dtype=torch.int64, device=values.device)
        first.scatter_(1, values, torch.arange(L, device=values.device).expand(B, L))
        return self._posterior_from_first(first, extra)

    def _posterior_from_first(self, first: torch.Tensor, extra: bool = False) -> torch.Tensor:
        """:meth:`_posterior_distinct` from ``first`` (B, V) int64, the position at which each value
        is revealed (L if never): one gather from a table."""
        B, L = first.shape[0], self.L
        if self._table.device != first.device:  # moved once, then kept on the generator's device
            self._table = self._table.to(first.device)
        P = L + extra
        return self._table[:P].expand(B, P, L + 1).gather(2, first.unsqueeze(1).expand(B, P, self.V))

    def posterior(self, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Exact predictive of ``values[:, t]`` given pairs ``< t`` and ``keys[:, t]``: (B, L, V) float64.

        ``keys`` and ``values`` (B, L) come from one bijection per row (keys may repeat). A key seen
        before has a point mass on its value; otherwise the answer is uniform over the values not
        yet revealed.
        """
        V = self.V
        B, L = values.shape
        dev = values.device
        t = torch.arange(L, device=dev)

        def first_position(x: torch.Tensor) -> torch.Tensor:  # (B, V): first t with x[:, t] == v, else L
            init = torch.full((B, V), L, dtype=torch.int64, device=dev)
            return init.scatter_reduce_(1, x, t.expand(B, L), reduce="amin")

        first_v = first_position(values)
        free = first_v.unsqueeze(1) >= t.unsqueeze(1)  # (B, L, V): value not revealed before t
        # Free values at t: V minus the distinct values revealed before t (a first revelation at s < t).
        is_first = first_v.gather(1, values) == t
        n_free = V - (is_first.cumsum(1) - is_first.to(torch.int64))
        key_seen = first_position(keys).gather(1, keys) < t  # (B, L)
        uniform = torch.where(free, 1.0 / n_free.to(torch.float64).unsqueeze(2), 0.0)
        point = torch.nn.functional.one_hot(values, V).to(torch.float64)
        return torch.where(key_seen.unsqueeze(2), point, uniform)
