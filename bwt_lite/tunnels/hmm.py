"""HMM filtering (belief transport).

A fresh hidden Markov model per episode: S hidden states, O symbols. Each row of the transition matrix
T (S x S) and of the emission matrix E (S x O) is drawn from Dirichlet(1), floored at 0.05 and
renormalised, then discretised to exact hundredths: every entry is an integer number of hundredths
>= 5 and every row sums to exactly 100 hundredths (see :func:`round_to_hundredths`). The initial state
distribution is uniform, fixed, and not in the context. Hidden states s_0..s_{K-1} follow the chain
(s_0 uniform) and each emits a symbol o_t ~ E[s_t].

T and E are given in the context, so the model filters with known parameters. Token layout (the
authors' tokenizer; vocabulary 100 + O, 105 for O = 5):

- ids 0..95: probabilities 0.05..1.00 (id = hundredths - 5);
- 96 TRANS, 97 EMIT, 98 SEP, 99 OBS; 100..100+O-1 the symbols.

``[TRANS, T row-major (S*S), EMIT, E row-major (S*O), SEP, OBS, o_0, OBS, o_1, ..., OBS, o_{K-1}]``:
a header of 3 + S*S + S*O tokens (53 for S = O = 5), then K (OBS, symbol) pairs; length header + 2K.

Variant ``"slow"``: a chain that forgets slowly, so that filtering must carry the belief across
many steps (a window of the last few symbols is not enough). Each state keeps itself with
probability drawn within 2 hundredths of the most the 0.05 floor allows (``1 - 0.05 (S - 1)``;
0.88-0.90 for S = 3, then 0.83-0.90 after the floor and rounding, median 0.87) and moves to the others
in Dirichlet(1) shares of the rest; emission rows are 0.2 of the uniform plus 0.8 of a Dirichlet(1) row.
Floor, rounding and tokens are the default's. With S = 3, O = 5, K = 30 (its preset) the exact filter of
the last 8 symbols is still 0.016 bits from the full filter (0.0001 on the default variant).

The prediction positions are the K symbol tokens. At symbol t the exact answer is the filtering
posterior p(s_t | o_0..o_t) over the S hidden states (:func:`forward_filter`, float64); the
states are not tokens (``answer_tokens`` is None: the model reads them out with a linear head). The
target is the sampled hidden state s_t. :meth:`HMM.decode` recovers (T, E, obs) from the tokens.
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ..arguments import check_choice, check_int
from .base import Card, Episodes, Tunnel, check_size, window_references
from .hmm_filter import ROW_TOL, forward_filter, forward_prob, recent_filter  # noqa: F401 (re-exported)

FLOOR_HUNDREDTHS = 5  # every probability is at least 0.05
MAX_DIM = 20  # S, O <= 20 so that a row of S (or O) floors of 0.05 fits in 1.00
SLOW_STAY_RANGE = 0.02  # "slow" variant: self-transitions within this of the largest the floor allows
SLOW_EMIT_UNIFORM = 0.2  # "slow" variant: the uniform's share of every emission row
SLOW_MAX_S = 9  # "slow" variant: 1 - 0.05 (S - 1) - 0.02 >= 0.5
MAX_SHARPEN = 16.0  # the largest power of the Exponential(1) draws behind the rows (see HMM._exponentials)


def _check_dim(name: str, value: Any) -> int:
    check_int(name, value, 2, f"2 <= {name} <= {MAX_DIM}")
    if value > MAX_DIM:
        raise ValueError(
            f"{name} must be <= {MAX_DIM} (2 <= {name} <= {MAX_DIM}: a row of floors of 0.05 must fit "
            f"in 1.00), got {value}"
        )
    return value


def round_to_hundredths(p: Tensor) -> Tensor:
    """Probability rows (last dim n, 2 <= n <= 20) -> int64 hundredths, each >= 5, rows summing to 100.

    Largest-remainder rounding of ``100 * p`` under the floor of 5: every entry first gets 5, and the
    remaining ``100 - 5n`` hundredths are shared out in proportion to ``max(100 p - 5, 0)``, floors
    first, then one more to the entries with the largest fractional parts (ties to the lower index).
    Where every ``p >= 0.05`` this is plain largest-remainder rounding of ``100 p``. Integer arithmetic
    makes the row sums exact.
    """
    if not torch.is_floating_point(p):
        raise TypeError(f"p must be a floating-point tensor of probabilities, got dtype {p.dtype}")
    n = p.shape[-1] if p.dim() else 0
    if not 2 <= n <= MAX_DIM:
        raise ValueError(f"p must have a last dimension of 2..{MAX_DIM} entries, got shape {tuple(p.shape)}")
    if not torch.isfinite(p).all() or (p < 0).any():
        raise ValueError("p must be finite and >= 0")
    return _round_to_hundredths(p)


def _round_to_hundredths(p: Tensor, rows_sum_to_one: bool = False) -> Tensor:
    """:func:`round_to_hundredths` without the argument checks (rows of 2..20 finite entries >= 0).
    ``rows_sum_to_one`` promises rows summing to 1 (up to rounding), hence a positive excess total."""
    n = p.shape[-1]
    rest = 100 - FLOOR_HUNDREDTHS * n  # hundredths above the floors, >= 0
    excess, total = _excess(p)
    if rows_sum_to_one and rest > 0:  # total = 100 - 5n > 0 up to rounding: the same numbers, cheaper
        share = rest * excess / total
    else:
        share = torch.where(total > 0, rest * excess / total.clamp_min(1e-300), torch.full_like(excess, rest / n))
    if n > 8:
        base = share.floor()
        missing = rest - base.to(torch.int64).sum(-1, keepdim=True)  # in 0..n-1
        order = (share - base).argsort(dim=-1, descending=True, stable=True)
        rank = order.argsort(dim=-1, stable=True)  # rank of each entry's fractional part
        return FLOOR_HUNDREDTHS + base.to(torch.int64) + (rank < missing).to(torch.int64)
    # Short rows (the HMM's S, O = 5): the same rounding with the rows last, so that every operation
    # runs over all rows at once.
    share = share.reshape(-1, n).t().contiguous()  # (n, rows)
    return _round_shares(share, 0).t().contiguous().view(p.shape)


def _excess(p: Tensor) -> tuple[Tensor, Tensor]:
    """``max(100 p - 5, 0)`` (float64) and its row sums (last dim, kept): the hundredths above the floors
    that :func:`round_to_hundredths` shares out, and their totals."""
    excess = (100.0 * p.to(torch.float64) - FLOOR_HUNDREDTHS).clamp_min(0.0)
    return excess, excess.sum(-1, keepdim=True)


_BEFORE: dict[tuple[int, int, str], Tensor] = {}  # _round_shares' [k < j] tables, by (n, trailing dims, device)


def _round_shares(share: Tensor, dim: int) -> Tensor:
    """Largest-remainder rounding of rows of 2..8 shares (whole numbers in total) along ``dim`` (not the
    last), float64 -> int64 hundredths: ``5 + floor(share)``, plus one for the entries with the
    largest fractional parts (ties to the lower index) until the row holds its total.

    Ranks by pairwise comparison (much faster than sorting rows this short). Entry k comes before
    entry j when its fractional part is larger, or equal with k < j. Fractional parts are >= +0.0, so
    the float64 difference d = f_j - f_k is negative exactly when f_k > f_j and +0.0 exactly on a tie
    (rounding never flips a sign, and distinct numbers never round to zero); read as int64, its bits
    are then < 0 and == 0. So k comes first iff bits(d) - [k < j] < 0, which the arithmetic shift by
    63 turns into -1 (else 0).
    """
    n, trailing = share.shape[dim], share.dim() - dim - 1
    key = (n, trailing, str(share.device))
    if key not in _BEFORE:
        before = torch.ones(n, n, dtype=torch.int64, device=share.device).tril(-1)  # [j, k] = [k < j]
        _BEFORE[key] = before.view(n, n, *(1,) * trailing)
    base = share.floor()
    minus_missing = base.sum(dim, keepdim=True).sub_(100 - FLOOR_HUNDREDTHS * n).to(torch.int64)  # -(0..n-1), exact
    frac = share - base
    d = (frac.unsqueeze(dim + 1) - frac.unsqueeze(dim)).view(torch.int64)  # [.., j, k, ..] = bits(f_j - f_k)
    d -= _BEFORE[key]
    d >>= 63
    minus_rank = d.sum(dim + 1)  # -(the number of entries before each one)
    # The same whole numbers in float64, the extra hundredth (rank < missing) added, then one conversion.
    return base.add_(minus_rank > minus_missing).add_(FLOOR_HUNDREDTHS).to(torch.int64)


def tokenize(T_hundredths: Tensor, E_hundredths: Tensor, obs: Tensor) -> Tensor:
    """Token ids of episodes: ``T_hundredths`` (B, S, S) and ``E_hundredths`` (B, S, O) integer
    hundredths (each >= 5, rows summing to 100), ``obs`` (B, K) symbols in 0..O-1 -> (B, 3 + S*S +
    S*O + 2K) int64. Unbatched inputs (S, S), (S, O), (K,) give a 1-D sequence."""
    for name, x in (("T_hundredths", T_hundredths), ("E_hundredths", E_hundredths), ("obs", obs)):
        if not isinstance(x, Tensor) or x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise TypeError(f"{name} must be an integer tensor")
    unbatched = T_hundredths.dim() == 2
    if unbatched:
        T_hundredths, E_hundredths, obs = T_hundredths.unsqueeze(0), E_hundredths.unsqueeze(0), obs.unsqueeze(0)
    if T_hundredths.dim() != 3 or T_hundredths.shape[1] != T_hundredths.shape[2]:
        raise ValueError(f"T_hundredths must have shape (B, S, S), got {tuple(T_hundredths.shape)}")
    B, S, _ = T_hundredths.shape
    if E_hundredths.dim() != 3 or E_hundredths.shape[:2] != (B, S):
        raise ValueError(f"E_hundredths must have shape (B, S, O) = ({B}, {S}, O), got {tuple(E_hundredths.shape)}")
    O = E_hundredths.shape[2]
    _check_dim("S", S), _check_dim("O", O)
    if obs.dim() != 2 or obs.shape[0] != B:
        raise ValueError(f"obs must have shape (B, K) = ({B}, K), got {tuple(obs.shape)}")
    for name, h in (("T_hundredths", T_hundredths), ("E_hundredths", E_hundredths)):
        if (h < FLOOR_HUNDREDTHS).any() or (h.sum(-1) != 100).any():
            raise ValueError(f"{name} must have every entry >= {FLOOR_HUNDREDTHS} and every row summing to 100")
    if obs.numel() and (obs.min() < 0 or obs.max() >= O):
        raise ValueError(f"obs must be symbols in 0..{O - 1}")
    dev = T_hundredths.device

    def marker(tok: int) -> Tensor:
        return torch.full((B, 1), tok, dtype=torch.int64, device=dev)

    pairs = torch.stack([torch.full_like(obs, HMM.OBS, dtype=torch.int64), obs.to(torch.int64) + HMM.SYMBOL0], dim=2)
    tokens = torch.cat([
        marker(HMM.TRANS), (T_hundredths.to(torch.int64) - FLOOR_HUNDREDTHS).reshape(B, S * S),
        marker(HMM.EMIT), (E_hundredths.to(torch.int64) - FLOOR_HUNDREDTHS).reshape(B, S * O),
        marker(HMM.SEP), pairs.reshape(B, -1),
    ], dim=1)
    return tokens[0] if unbatched else tokens


class HMM(Tunnel):
    name, kind, variants = "hmm", "categorical", ("default", "slow")
    task = "tracks the hidden state as the exact filter does"  # in plain words (the claims' reasons)
    length_arg = "K"  # observations per episode (K = 30, 50 for length generalisation)
    # Transport: below every window listed, the longest included. Each ladder reaches near-exact: its longest
    # window scores at most a tenth of the best model's entropy MAE on that cell, paper-scale models included
    # (default: window-8, 5e-5 bits, against the paper-scale transformer's 1.4e-3; slow: window-18, 4.8e-4,
    # against the best lite seed's 9e-3), so a model between two windows is read as that window, never as
    # transport (tests/test_window_ladder.py checks the rule on the shipped records). Thresholds: half the MLP
    # control's 0.41 bits; half the slow HMM's uniform plateau (0.37).
    baselines, window_baseline = {}, "window_filter"  # the window filters alone (window-0: the marginal)
    cards = {"hmm": Card("transport", ("entropy_mae_bits", "max", 0.2), window_references(8), 1.0, 8),
             "hmm-slow": Card("transport", ("entropy_mae_bits", "max", 0.18), window_references(18), 1.0, 18, "slow")}
    train_target = "soft"  # the exact filtering posterior: every architecture's recipe trains on it
    TRANS, EMIT, SEP, OBS = 96, 97, 98, 99
    SYMBOL0 = 100  # symbol o has token SYMBOL0 + o

    def __init__(self, S: int = 5, O: int = 5, K: int = 20, variant: str = "default", sharpen: float = 1.0):
        self.S = _check_dim("S", S)
        if isinstance(sharpen, bool) or not isinstance(sharpen, (int, float)) or not 0 < sharpen <= MAX_SHARPEN:
            raise ValueError(f"sharpen must be a number in (0, {MAX_SHARPEN}] (1: the tunnel's own draws), got {sharpen!r}")
        self.sharpen = float(sharpen)
        self.O = _check_dim("O", O)
        self.K = check_int("K", K, 1, "at least one observation")
        self.variant = check_choice("variant", variant, self.variants)
        if variant == "slow" and S > SLOW_MAX_S:
            raise ValueError(f"S must be <= {SLOW_MAX_S} for the slow variant (its self-transitions stay >= 0.5 "
                             f"only while the other states' 0.05 floors leave room), got {S}")
        self.header_len = 3 + S * S + S * O
        self.seq_len = self.header_len + 2 * K
        self.vocab_size = self.SYMBOL0 + O
        self.n_classes = S
        self.answer_tokens = None
        # Per episode, int64/float64 words: the step maps and filter matrices (K x S x S each), the
        # beliefs, draws, states and symbols (a few K x S, K x O), the parameters and their rounding
        # (S x (S + O) rows, pairwise rank comparisons), and the tokens.
        self.episode_bytes = 8 * (K * (2 * S * S + 6 * S + 2 * O + 6) + S * (S + O) * (8 + max(S, O))
                                  + self.seq_len)
        check_size("K", self.episode_bytes)
        self.positions = self.header_len + 1 + 2 * torch.arange(K)  # the symbol tokens
        # A token row with every marker in place (the numbers are written over it): see _tokenize.
        self._template = torch.full((self.seq_len,), self.OBS, dtype=torch.int64)
        self._template[0], self._template[1 + S * S], self._template[2 + S * S + S * O] = \
            self.TRANS, self.EMIT, self.SEP

    def config(self) -> dict[str, Any]:
        cfg = {"tunnel": self.name, "S": self.S, "O": self.O, "K": self.K, "variant": self.variant}
        if self.sharpen != 1.0:
            cfg["sharpen"] = self.sharpen
        return cfg

    def _exponentials(self, shape: tuple[int, ...], g: torch.Generator) -> Tensor:
        """Exponential(1) draws (normalised rows of them are Dirichlet(1)), raised to ``sharpen``: above 1
        the normalised rows are more peaked than Dirichlet(1), so each symbol (and each transition) says
        more about the state; an easier task for the first steps of a curriculum."""
        u = torch.rand(*shape, generator=g, device=g.device, dtype=torch.float64)
        gam = u.neg_().log1p_().neg_()  # -log(1 - u): Exponential(1)
        return gam if self.sharpen == 1.0 else gam.pow_(self.sharpen)

    def sample_params(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """Fresh (T, E) in integer hundredths: (B, S, S) and (B, S, O) int64, Dirichlet(1) rows,
        floored at 0.05, renormalised, rounded by :func:`round_to_hundredths`."""
        B, g = self._check_sample_args(batch_size, generator)
        TE = self._sample_params(B, g)
        return TE[..., :self.S].contiguous(), TE[..., self.S:].contiguous()

    def _sample_params(self, B: int, g: torch.Generator) -> Tensor:
        """:meth:`sample_params` as one (B, S, S + O) int64 tensor ``[T | E]``, possibly a view of
        (S, S + O, B) memory."""
        if self.variant == "slow":
            return self._sample_slow_params(B, g)
        S, O, dev = self.S, self.O, g.device
        gam = self._exponentials((B, S, S + O), g)  # normalised rows are Dirichlet(1) (sharpen = 1)
        if S == O and dev.type == "cpu" and S < MAX_DIM:
            # T's and E's rows side by side: each operation below does both at once. On the CPU these
            # are the same numbers as normalising the two halves separately (each row sum adds the
            # same S entries in the same order); other devices keep the separate operations below,
            # whose reductions may associate differently for the two memory layouts. These are the
            # operations below, _excess's and _round_to_hundredths's (rows summing to one, 100 - 5S > 0),
            # done in place where they can be. The row sums stay in this layout (their order of
            # addition depends on it); the shares are then written with the episodes last, [i, T|E, j, b],
            # where the rounding runs over all episodes at once and where sample() wants the result:
            # the (B, S, 2S) returned is a view of that memory.
            p = gam.view(B, S, 2, S)
            p.div_(p.sum(-1, keepdim=True)).clamp_min_(FLOOR_HUNDREDTHS / 100)
            excess = p.div_(p.sum(-1, keepdim=True)).mul_(100.0).sub_(FLOOR_HUNDREDTHS).clamp_min_(0.0)
            total = excess.sum(-1, keepdim=True)
            share = torch.mul(excess.permute(1, 2, 3, 0), 100 - FLOOR_HUNDREDTHS * S,
                              out=torch.empty(S, 2, S, B, dtype=torch.float64, device=dev))
            share /= total.permute(1, 2, 3, 0)
            return _round_shares(share, 2).view(S, 2 * S, B).permute(2, 0, 1)
        p = torch.cat([gam[..., :S] / gam[..., :S].sum(-1, keepdim=True),
                       gam[..., S:] / gam[..., S:].sum(-1, keepdim=True)], dim=-1)
        p = p.clamp_min(FLOOR_HUNDREDTHS / 100)
        T_p = p[..., :S] / p[..., :S].sum(-1, keepdim=True)
        E_p = p[..., S:] / p[..., S:].sum(-1, keepdim=True)
        return torch.cat([_round_to_hundredths(T_p, rows_sum_to_one=True),
                          _round_to_hundredths(E_p, rows_sum_to_one=True)], dim=-1)

    def _sample_slow_params(self, B: int, g: torch.Generator) -> Tensor:
        """``[T | E]`` hundredths of the ``"slow"`` variant (see the module docstring)."""
        S, O, dev = self.S, self.O, g.device
        most = 1.0 - FLOOR_HUNDREDTHS / 100 * (S - 1)  # the largest self-transition the floor allows
        stay = most - SLOW_STAY_RANGE * torch.rand(B, S, 1, generator=g, device=dev, dtype=torch.float64)
        gam = self._exponentials((B, S, S + O), g)  # normalised rows are Dirichlet(1) (sharpen = 1)
        eye = torch.eye(S, dtype=torch.float64, device=dev)
        off = gam[..., :S] * (1 - eye)
        T_p = stay * eye + (1 - stay) * off / off.sum(-1, keepdim=True)
        E_p = SLOW_EMIT_UNIFORM / O + (1 - SLOW_EMIT_UNIFORM) * gam[..., S:] / gam[..., S:].sum(-1, keepdim=True)
        return torch.cat([round_to_hundredths(T_p), round_to_hundredths(E_p)], dim=-1)

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        (B, g), S, O, K = self._check_sample_args(batch_size, generator), self.S, self.O, self.K
        dev = g.device
        TE_h = self._sample_params(B, g)  # (B, S, S + O) int64 hundredths: [T | E]
        # The draws for the states and the symbols, (B, K) each, in one call (the generator fills a
        # tensor in order: the same numbers as two calls), then the first state.
        r_draws = torch.randint(0, 100, (2, B, K), generator=g, device=dev)
        s0 = torch.randint(0, S, (B,), generator=g, device=dev)
        # From here on the episode index is the last (contiguous) dimension: torch's kernels are slow
        # over innermost dimensions as short as S and O, fast over the B episodes.
        TE_h_last = TE_h.permute(1, 2, 0).contiguous()  # (a no-op when _sample_params made it so)
        # Exact inverse-CDF sampling on the integer hundredths: a draw r in 0..99 picks the state
        # (symbol) whose cumulative hundredths first exceed r, i.e. the number of them <= r (the last
        # cumulative sum is 100 > r, so it is left out). All these numbers fit in uint8, where torch's
        # comparisons and counts are several times faster than in int64.
        TE_u8 = TE_h_last.to(torch.uint8)
        T_cum = TE_u8[:, :S - 1].cumsum(1, dtype=torch.uint8)  # (S, S-1, B)
        E_cum = TE_u8[:, S:S + O - 1].cumsum(1, dtype=torch.uint8)  # (S, O-1, B)
        r = torch.empty(2, K, B, dtype=torch.uint8, device=dev).copy_(r_draws.transpose(1, 2))
        # step[t - 1, i, b]: the state at t if the state at t - 1 is i; following it is one gather a step.
        # (Counts of a comparison's bool result read as uint8: the same numbers without a converted copy.)
        step = (T_cum.unsqueeze(0) <= r[0, 1:, None, None, :]).view(torch.uint8).sum(2, dtype=torch.uint8)
        step = step.to(torch.int64)
        states = torch.empty(K, B, dtype=torch.int64, device=dev)
        states[0] = s0
        rows, maps = states.split(1), step.unbind(0)  # views made once: (1, B) and (S, B) per step
        for t in range(1, K):
            torch.gather(maps[t - 1], 0, rows[t - 1], out=rows[t])
        e_cum = E_cum.gather(0, states.unsqueeze(1).expand(K, O - 1, B))  # (K, O-1, B): cum. of s_t's row
        obs = (e_cum <= r[1].unsqueeze(1)).view(torch.uint8).sum(1, dtype=torch.uint8).to(torch.int64)  # (K, B)
        TE = TE_h_last.to(torch.float64) / 100
        probs = forward_prob(TE[:, :S], TE[:, S:], obs)  # every probability is >= 0.05: see hmm_filter._FAST_MIN_EMIT
        return Episodes(inputs=self._tokenize(TE_h, obs.t()), positions=self.positions.to(dev),
                        target=states.t().contiguous(), probs=probs)

    def _tokenize(self, TE_h: Tensor, obs: Tensor) -> Tensor:
        """:func:`tokenize` without the argument checks, for ``[T | E]`` hundredths (B, S, S + O) this
        tunnel drew and symbols (B, K)."""
        B, S, O = obs.shape[0], self.S, self.O
        e, sep = 1 + S * S, 2 + S * S + S * O  # positions of EMIT and SEP
        if S == O:  # fewer operations: the markers from a template row, then T and E in one go
            if self._template.device != obs.device:
                self._template = self._template.to(obs.device)
            x = self._template.expand(B, self.seq_len).clone()
            # T[i, j] is at 1 + i S + j and E[i, o] at e + 1 + i S + o: [b, T|E, i, j] at 1 + (T|E) e + i S + j.
            TE_view = x.as_strided((B, 2, S, S), (self.seq_len, e, S, 1), x.storage_offset() + 1)
            torch.sub(TE_h.unflatten(2, (2, S)).transpose(1, 2), FLOOR_HUNDREDTHS, out=TE_view)
            torch.add(obs, self.SYMBOL0, out=x[:, sep + 2::2])
            return x
        x = torch.empty(B, self.seq_len, dtype=torch.int64, device=obs.device)
        x[:, 0], x[:, e], x[:, sep] = self.TRANS, self.EMIT, self.SEP
        torch.sub(TE_h[..., :S], FLOOR_HUNDREDTHS, out=x[:, 1:e].view(B, S, S))
        torch.sub(TE_h[..., S:], FLOOR_HUNDREDTHS, out=x[:, e + 1:sep].view(B, S, O))
        x[:, sep + 1::2] = self.OBS
        torch.add(obs, self.SYMBOL0, out=x[:, sep + 2::2])
        return x

    @classmethod
    def decode(cls, tokens: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Recover (T, E, obs) from token ids (B, L) or (L,): T (B, S, S) and E (B, S, O) float64
        (hundredths / 100), obs (B, K) int64 symbols; S and O are read off the marker positions."""
        if not isinstance(tokens, Tensor) or tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
            raise TypeError("tokens must be an integer tensor of token ids")
        unbatched = tokens.dim() == 1
        x = tokens.unsqueeze(0) if unbatched else tokens
        if x.dim() != 2 or x.shape[0] == 0:
            raise ValueError(f"tokens must have shape (B, L) or (L,), got {tuple(tokens.shape)}")
        x = x.to(torch.int64)
        B, L = x.shape
        emit_at = (x[0] == cls.EMIT).nonzero()
        sep_at = (x[0] == cls.SEP).nonzero()
        if L == 0 or x[0, 0] != cls.TRANS or len(emit_at) != 1 or len(sep_at) != 1:
            raise ValueError("tokens must start with TRANS and hold one EMIT and one SEP marker")
        e, s = int(emit_at[0]), int(sep_at[0])
        S = math.isqrt(e - 1)
        O = (s - e - 1) // S if S else 0
        if S * S != e - 1 or S * O != s - e - 1 or (L - s - 1) % 2:
            raise ValueError(f"tokens do not follow the HMM layout (EMIT at {e}, SEP at {s}, length {L})")
        _check_dim("S", S), _check_dim("O", O)
        head = 3 + S * S + S * O
        t_ids, e_ids = x[:, 1 : 1 + S * S], x[:, e + 1 : s]
        sym = x[:, head + 1 :: 2] - cls.SYMBOL0
        if ((x[:, 0] != cls.TRANS) | (x[:, e] != cls.EMIT) | (x[:, s] != cls.SEP)).any() \
                or (x[:, head::2] != cls.OBS).any():
            raise ValueError("tokens: markers (TRANS, EMIT, SEP, OBS) are not where the layout puts them")
        if (t_ids < 0).any() or (t_ids > 95).any() or (e_ids < 0).any() or (e_ids > 95).any():
            raise ValueError("tokens: a T or E entry is not a probability token (0..95)")
        if sym.numel() and ((sym < 0).any() or (sym >= O).any()):
            raise ValueError(f"tokens: an observation is not a symbol token ({cls.SYMBOL0}..{cls.SYMBOL0 + O - 1})")
        T = (t_ids + FLOOR_HUNDREDTHS).reshape(B, S, S).to(torch.float64) / 100
        E = (e_ids + FLOOR_HUNDREDTHS).reshape(B, S, O).to(torch.float64) / 100
        return (T[0], E[0], sym[0]) if unbatched else (T, E, sym)
