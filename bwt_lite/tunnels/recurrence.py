"""Modular recurrence: where in-context Bayes stops (the "construction boundary").

Each episode is, with probability 1/2, a recurrence ``x_{t+1} = a x_t + b (mod p)`` with ``a``, ``b``
and ``x_0`` drawn uniformly from Z_p (``a = 0`` allowed), and otherwise ``length`` i.i.d. uniform
residues. The model predicts every value from the ones before it. The exact predictive of ``x_t``
given ``x_0 .. x_{t-1}`` mixes the two classes by their posterior:

- after t values the i.i.d. class has likelihood ``p^-t``; the recurrence class ``(1/p) C_t / p^2``,
  where ``C_t`` counts the pairs (a, b) consistent with the ``t - 1`` steps seen (``p^2`` before any
  step, ``p`` after one, usually 1 after two, and ``p`` again when the values stand still);
- the recurrence class predicts ``x_t`` as the share of consistent pairs with ``a x_{t-1} + b = x_t``
  (a point mass once the pair is known; a fixed point when ``x_1 = x_0``);
- so the class posterior is 0.5 after 0-3 values and ``p / (p + 1)``, ``p^2 / (p^2 + 1)`` ... once
  the fourth and fifth values confirm the pair (0.944, 0.9966 for p = 17), and the predictive
  entropies of x_0 .. x_4 are 4.087, 4.087, 4.087, 2.880 and 0.505 bits.

Layouts (``variant``):

- ``"integer"`` (the default): the token of a value is the residue itself; the input is ``[BOS,
  x_0, .., x_{L-2}]`` and the answer at position t is ``x_t`` (answer classes: the residue tokens).
- ``"opaque"``: a fresh permutation ``s`` of the residues per episode; the header lists ``s(0) ..
  s(p-1)`` (the token of each residue, in residue order), then SEP, then ``s(x_0) .. s(x_{L-2})``;
  the answer at each position is the token ``s(x_t)``. The posterior is the same, relabelled: the
  arithmetic can only be done after reading the header.
- ``"shuffled"``: the values in a random order with their times, as (time, value) pairs: the input is
  ``T(t_0), x_{t_0}, T(t_1), x_{t_1}, .., T(t_{L-1})`` with ``T(t) = p + t`` a time token, and the answer at
  each time token is the value at that time. The exact predictive is the same mixture, now over every
  (a, b, x_0) consistent with the pairs seen so far (:func:`shuffled_posterior`): which values are
  adjacent in time changes from episode to episode, so the model must route by the time tokens.

``horizon`` K (training only): the loss rewards the predictions of x_1 .. x_K (and of x_0, which is
always uniform), so the episode's prediction positions are 0 .. K; a tunnel without it scores every
position (what evaluation uses). K counts as the authors' loss horizon does: their models predict x_1
.. x_{L-1}, and theirs rewards the first K of those.
Every posterior is float64 and exact (tests check it against enumerating (a, b, x_0)).
"""
from __future__ import annotations

import functools
from typing import Any

import torch
from torch import Tensor

from ..arguments import check_choice, check_int
from .base import Card, Episodes, Tunnel, check_size

MAX_P = 97  # the (a, b) table is p^2 wide per episode and position: kept small enough for a sampler call


def check_prime(p: Any) -> int:
    """``p``: a prime in 2..:data:`MAX_P` (the recurrence lives in the field Z_p)."""
    check_int("p", p, 2, f"a prime 2 <= p <= {MAX_P}")
    if p > MAX_P or any(p % d == 0 for d in range(2, int(p ** 0.5) + 1)):
        raise ValueError(f"p must be a prime 2 <= p <= {MAX_P} (the recurrence needs the field Z_p), got {p}")
    return p


SHUFFLED_CHUNK = 64  # episodes per pass of shuffled_posterior (about 2.5 MB each at p = 17, length 16)


@functools.lru_cache(maxsize=8)
def _program_table(p: int, length: int, device: torch.device) -> Tensor:
    """(length, p^3): :func:`programs` transposed, int8 while p fits; built once per shape (the sampler
    calls :func:`shuffled_posterior` at every training step)."""
    with torch.inference_mode(False), torch.no_grad():
        return programs(p, length, device).to(torch.int8 if p <= 127 else torch.int64).T.contiguous()


def programs(p: int, length: int, device: torch.device | str = "cpu") -> Tensor:
    """(p^3, length): the values x_0 .. x_{length-1} of every program (a, b, x_0), row ``(a p + b) p + x_0``."""
    abx = torch.cartesian_prod(*(torch.arange(p, device=device),) * 3)  # (p^3, 3): a, b, x_0
    out = torch.empty(p ** 3, length, dtype=torch.int64, device=device)
    out[:, 0] = abx[:, 2]
    for t in range(1, length):
        out[:, t] = (abx[:, 0] * out[:, t - 1] + abx[:, 1]) % p
    return out


def shuffled_posterior(values: Tensor, order: Tensor, p: int, window: int | None = None
                       ) -> tuple[Tensor, Tensor]:
    """The exact predictive when the values come in the order ``order`` (B, L) (a permutation of the times
    per episode): (probs (B, L, p) float64, row k the predictive of ``x_{order[k]}`` from the pairs
    ``(order[j], x_{order[j]})`` for j < k, over the residues; class posterior (B, L) float64).

    Every program (a, b, x_0) is enumerated (p^3 of them), so this is for small p. ``window`` w: only the
    last w pairs seen count (the window baselines of this layout); None: every pair seen."""
    B, L = values.shape
    if B > SHUFFLED_CHUNK:  # the program tables are p^3 x L per episode: a chunk at a time
        parts = [shuffled_posterior(v, o, p, window) for v, o in
                 zip(values.split(SHUFFLED_CHUNK), order.split(SHUFFLED_CHUNK))]
        return torch.cat([a for a, _ in parts]), torch.cat([b for _, b in parts])
    dev = values.device
    # said[b, k, j]: the value program j gives the time shown k-th (int8 while p fits: a tenth of the traffic)
    table = _program_table(p, L, torch.device(dev))
    said = table[order]  # (B, L, p^3)
    seen = values.gather(1, order)  # the values in the order shown
    wrong = (said != seen.to(table.dtype).unsqueeze(-1)).cumsum(1, dtype=torch.int16)  # mistakes, first k + 1 shown
    before = torch.cat([torch.zeros_like(wrong[:, :1]), wrong], dim=1)  # before[:, m]: among the first m
    n_seen = torch.arange(L, device=dev)
    start = torch.zeros_like(n_seen) if window is None else (n_seen - check_int("window", window, 0)).clamp_min(0)
    consistent = before[:, :-1] == before[:, start]  # (B, L, p^3): no mistake among pairs start .. k-1
    n_seen = n_seen - start  # the pairs counted
    count = consistent.sum(-1).to(torch.float64)  # (B, L)
    logp = torch.log(torch.tensor(float(p), dtype=torch.float64, device=dev))
    # recurrence : i.i.d. likelihood of the k pairs counted = (count / p^3) / p^-k
    ratio = count * torch.exp((n_seen.to(torch.float64) - 3) * logp)
    rec = ratio / (1.0 + ratio)  # 0 once no program explains the pairs
    b, k, j = consistent.nonzero(as_tuple=True)  # few after three pairs: count them, not the table
    cell = (b * L + k) * p + said[b, k, j].long()
    hist = torch.bincount(cell, minlength=B * L * p).view(B, L, p).to(torch.float64)
    hist /= count.clamp_min(1.0).unsqueeze(-1)
    probs = rec.unsqueeze(-1) * hist + (1.0 - rec).unsqueeze(-1) / p
    return probs, rec


def recurrence_posterior(values: Tensor, p: int) -> tuple[Tensor, Tensor]:
    """The exact predictive of every value from the ones before it: ``values`` (B, L) residues ->
    (probs (B, L, p) float64 over the residues in residue order, class posterior (B, L) float64: the
    probability that the episode is a recurrence after the values before each position)."""
    B, L = values.shape
    dev = values.device
    a = torch.arange(p, device=dev).repeat_interleave(p)  # (p^2,) every pair (a, b)
    b = torch.arange(p, device=dev).repeat(p)
    # pred[:, k, t]: what pair k predicts for x_t from the actual x_{t-1} (t >= 1)
    pred = (a.view(1, -1, 1) * values[:, None, :-1] + b.view(1, -1, 1)) % p  # (B, p^2, L-1)
    match = pred == values[:, None, 1:]  # does pair k explain step t-1 -> t?
    # consistent[:, k, t]: pair k explains every step before position t (all pairs at t = 0 and 1)
    consistent = torch.ones(B, p * p, L, dtype=torch.bool, device=dev)
    if L > 2:
        consistent[:, :, 2:] = match[:, :, :-1].to(torch.int8).cumprod(2).bool()
    count = consistent.sum(1).to(torch.float64)  # (B, L): C_t
    t = torch.arange(L, device=dev, dtype=torch.float64)
    # likelihood ratio recurrence : i.i.d. after t values = (C_t / p^3) / p^-t = C_t p^(t - 3)
    ratio = count * torch.exp((t - 3) * torch.log(torch.tensor(float(p), dtype=torch.float64, device=dev)))
    rec = torch.where(count > 0, ratio / (1.0 + ratio), torch.zeros_like(ratio))
    rec[:, 0] = 0.5  # before any value: the prior (x_0 is uniform under both classes)
    # the recurrence class's prediction at t >= 1: its consistent pairs' next values
    onehot = torch.zeros(B, L, p, dtype=torch.float64, device=dev)
    if L > 1:
        w = consistent[:, :, 1:].to(torch.float64)  # (B, p^2, L-1): the pairs still standing at positions 1..L-1
        onehot[:, 1:].scatter_add_(2, pred.transpose(1, 2), w.transpose(1, 2))
        onehot[:, 1:] /= count[:, 1:].clamp_min(1.0).unsqueeze(-1)
    onehot[:, 0] = 1.0 / p
    probs = rec.unsqueeze(-1) * onehot + (1.0 - rec).unsqueeze(-1) / p
    return probs, rec


class Recurrence(Tunnel):
    """Modular recurrences against i.i.d. residues; see the module docstring."""

    name = "recurrence"
    kind = "categorical"
    variants = ("integer", "opaque", "shuffled")
    length_arg = "length"
    # the prior, then the exact predictive of the last 1-4 values (window-0 would be the prior again)
    window_baseline = "recurrence_window"
    window_range = (1, 4)
    cards = {"recurrence": Card(
        "program identification", ("entropy_mae_bits", "max", 0.1),
        {"entropy_mae_bits": ("prior", "window-2"), "kl_bits": ("prior", "window-2")},
        why="a tenth of a bit, a small fraction of the prior's error; the prior and the exact predictive of the "
            "last two values alone (which can only spot a fixed point) lack the program; a row of the "
            "primitives table: every architecture is shipped (the controls on the transformer's "
            "episodes, the Mamba on those that fit the transformer's training time)")}

    def __init__(self, p: int = 17, length: int = 16, variant: str = "integer", horizon: int | None = None):
        self.p = check_prime(p)
        self.length = check_int("length", length, 2, "at least two values")
        self.variant = check_choice("variant", variant, self.variants)
        if horizon is not None:
            check_int("horizon", horizon, 1, f"1 <= horizon <= length - 1 ({length - 1})")
            if horizon > length - 1:
                raise ValueError(f"horizon must be <= length - 1 ({length - 1}): it counts the predictions "
                                 f"after x_0, got {horizon}")
        if horizon is not None and variant == "shuffled":
            raise ValueError("horizon counts the first K values in time order; the shuffled layout has none")
        self.horizon = horizon
        self.n_classes = p
        self.answer_tokens = tuple(range(p))
        if variant == "shuffled":  # (time, value) pairs: the answers at the time tokens 0, 2, 4 ..
            self.header_len, self.TIME = 0, p
            self.seq_len, self.vocab_size = 2 * length - 1, p + length
            self.positions = 2 * torch.arange(length)
            # per episode: the program table (p^3 x length, int64, int32 and bool twice) and the posteriors
            self.episode_bytes = p ** 3 * length * 22 + length * p * 24 + self.seq_len * 16
        else:
            self.header_len = p + 1 if variant == "opaque" else 1  # the permutation and SEP, or BOS
            self.BOS = self.SEP = p
            self.seq_len = self.header_len + length - 1
            self.vocab_size = p + 1
            shown = length if horizon is None else horizon + 1  # x_0 .. x_K
            self.positions = self.header_len - 1 + torch.arange(shown)
            # per episode: the (a, b) table (p^2 x length, int64 and bool) and the float64 posteriors
            self.episode_bytes = p * p * length * 18 + length * p * 24 + self.seq_len * 16
        check_size("p and length", self.episode_bytes)

    def config(self) -> dict[str, Any]:
        out = {"tunnel": self.name, "p": self.p, "length": self.length, "variant": self.variant}
        if self.horizon is not None:
            out["horizon"] = self.horizon
        return out

    def sample_values(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """(values (B, L) residues, is_recurrence (B,) bool): half recurrences, half i.i.d. on average."""
        (B, g), p, L = self._check_sample_args(batch_size, generator), self.p, self.length
        dev = g.device
        is_rec = torch.rand(B, generator=g, device=dev) < 0.5
        ab = torch.randint(0, p, (B, 2), generator=g, device=dev)
        noise = torch.randint(0, p, (B, L), generator=g, device=dev)
        values = noise.clone()
        for t in range(1, L):  # the recurrence from the same x_0 (noise[:, 0]); i.i.d. rows keep the noise
            values[:, t] = torch.where(is_rec, (ab[:, 0] * values[:, t - 1] + ab[:, 1]) % p, noise[:, t])
        return values, is_rec

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        values, _ = self.sample_values(batch_size, generator)
        return self.episodes(values, generator)

    def episodes(self, values: Tensor, generator: torch.Generator | None = None) -> Episodes:
        """The episodes of given ``values`` (B, L) residues: tokens, positions, targets and the exact
        posterior in the answer tokens' order (the opaque layout draws its permutations from ``generator``)."""
        B, p = values.shape[0], self.p
        dev = values.device
        if self.variant == "shuffled":
            return self._shuffled_episodes(values, generator)
        probs, _ = recurrence_posterior(values, p)
        if self.variant == "opaque":
            if generator is None:
                raise ValueError("the opaque layout draws a permutation per episode: pass a generator")
            perm = torch.rand(B, p, generator=generator, device=dev).argsort(dim=1)  # perm[b, v]: token of v
            shown = perm.gather(1, values)
            probs = torch.zeros_like(probs).scatter_(2, perm.unsqueeze(1).expand(-1, self.length, -1), probs)
            head = torch.cat([perm, torch.full((B, 1), self.SEP, device=dev, dtype=torch.int64)], dim=1)
        else:
            shown = values
            head = torch.full((B, 1), self.BOS, device=dev, dtype=torch.int64)
        inputs = torch.cat([head, shown[:, :-1]], dim=1)
        n = len(self.positions)
        return Episodes(inputs=inputs, positions=self.positions.to(dev), target=shown[:, :n].contiguous(),
                        probs=probs[:, :n].contiguous())

    def _shuffled_episodes(self, values: Tensor, generator: torch.Generator | None) -> Episodes:
        """(time, value) pairs in a random order per episode, drawn from ``generator``."""
        if generator is None:
            raise ValueError("the shuffled layout draws an order per episode: pass a generator")
        B, L = values.shape
        order = torch.rand(B, L, generator=generator, device=values.device).argsort(dim=1)
        probs, _ = shuffled_posterior(values, order, self.p)
        seen = values.gather(1, order)
        inputs = torch.empty(B, self.seq_len, dtype=torch.int64, device=values.device)
        inputs[:, 0::2] = self.TIME + order
        inputs[:, 1::2] = seen[:, :-1]
        return Episodes(inputs=inputs, positions=self.positions.to(values.device), target=seen, probs=probs)

    def shown_pairs(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """Shuffled layout: (times (B, L) in the order shown, the values shown with them (B, L - 1))."""
        if self.variant != "shuffled":
            raise ValueError(f"shown_pairs reads the shuffled layout, not {self.variant!r}")
        return tokens[:, 0::2] - self.TIME, tokens[:, 1::2]

    def time_ordered(self, tokens: Tensor, last: Tensor) -> tuple[Tensor, Tensor]:
        """Shuffled layout: (times (B, L) in the order shown, values (B, L) in time order), with ``last``
        (B, 1) the value at the last time shown, which the tokens never show."""
        times, seen = self.shown_pairs(tokens)
        seen = torch.cat([seen, last], dim=1)
        return times, torch.empty_like(seen).scatter_(1, times, seen)

    def episode_fields(self, episodes: Episodes) -> dict[str, Any]:
        """The residues ``values`` x_0 .. x_{L-1} (before any relabelling), ``p``, and the ``posterior`` over the
        residues in residue order (the episode's own probabilities are over the answer tokens); shuffled: the
        ``times`` in the order shown, and a posterior row per pair shown."""
        if self.variant == "shuffled":
            times, values = self.time_ordered(episodes.inputs[:1], episodes.target[:1, -1:])
            probs, rec = shuffled_posterior(values, times, self.p)
            return {"p": self.p, "values": values[0].tolist(), "times": times[0].tolist(),
                    "posterior": probs[0].tolist(), "class_posterior": rec[0].tolist()}
        shown = self.decode(episodes.inputs[:1])
        last = episodes.target[:1, -1:]
        if self.variant == "opaque":
            last = episodes.inputs[:1, :self.p].argsort(dim=1).gather(1, last)
        values = torch.cat([shown, last], dim=1)[:, : len(self.positions)]
        probs, rec = recurrence_posterior(torch.cat([shown, last], dim=1), self.p)
        n = len(self.positions)
        return {"p": self.p, "values": values[0].tolist(), "posterior": probs[0, :n].tolist(),
                "class_posterior": rec[0, :n].tolist()}

    def decode(self, tokens: Tensor) -> Tensor:
        """The residues x_0 .. x_{L-2} that ``tokens`` (B, T) show (the opaque header undone)."""
        if self.variant == "shuffled":
            raise ValueError("the shuffled layout shows the values out of order: read them with shown_pairs")
        body = tokens[:, self.header_len:]
        if self.variant == "integer":
            return body.clone()
        inverse = tokens[:, :self.p].argsort(dim=1)  # inverse[b, token] = residue
        return inverse.gather(1, body)


__all__ = ["MAX_P", "Recurrence", "check_prime", "programs", "recurrence_posterior", "shuffled_posterior"]
