"""The sticky Markov chain of Paper II: predict the next symbol from noisy inputs.

A Markov chain over ``S`` symbols (default 8) with a fixed transition matrix (:func:`transition_matrix`):
off-diagonal weights proportional to 1 / circular distance, the diagonal weighted ``stay`` (0.3), each
row scaled to ``1 - stay`` and ``stay`` added to the diagonal, so the chain stays put with probability
0.3498 for S = 8. An episode is ``y_0, y_1, ..., y_L`` with ``y_0`` uniform (the chain's stationary
distribution: the matrix is circulant, hence doubly stochastic). Token ``t`` (t = 0..L-1) is a noisy
view of the current symbol, ``x_t = mu[y_t] + noise * eps_t`` with ``eps_t ~ N(0, I_d)`` and fixed
symbol means ``mu`` (S x d, default 8 x 20, drawn once from ``means_seed``); its target is the
next symbol ``y_{t+1}``. The inputs are float32 features (no vocabulary); every token is a prediction
position.

What is exact. The chain (``T``), the means ``mu`` and the noise scale are fixed properties of the
tunnel, the same in every episode (a model learns them in its weights; none is in the context). Given
them, the symbols form a hidden Markov model with Gaussian emissions, and the exact predictive of
``y_{t+1}`` given ``x_0..x_t`` is ``sum_s p(y_t = s | x_0..x_t) T[s, :]``, where the filtering
posterior comes from the forward algorithm (:meth:`Sticky.filter`, log space, float64, computed
from the float32 inputs the model sees). Nothing is approximated.

The Bayes floor. If every input identified its symbol perfectly the predictive would be the row
``T[y_t]``, and the best expected cross-entropy would be the mean row entropy: 1.829 nats = 2.639
bits for the default matrix (:func:`row_entropy_floor_nats`). With noisy inputs the symbol is known
only up to the filtering posterior, the predictive is a mixture of rows, and the floor is higher
(by data processing: ``y_{t+1}`` depends on the inputs only through ``y_t``). It has no closed form;
:meth:`Sticky.noisy_floor_nats` estimates it by Monte Carlo over exact predictives. With the default
means (the distance between two means is about 6.2 noise units on average, 4.6 at the closest) the
symbols are almost always identified and the noisy floor is about 0.005 nats above 1.829 (1.834);
``noise = 3`` raises it to about 1.99 nats.

The authors trained and evaluated on one and the same sequence; here every batch is fresh and
evaluation uses its own generator (:mod:`bwt_lite.evaluate`).
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ..arguments import check_choice, check_float_tensor, check_int
from ..metrics import LN2, entropy_bits
from .base import Episodes, Tunnel, check_seed, check_size


# Allowed noise scales. Below 1e-4 the float32 rounding of the inputs (about 6e-8 of |mu| + noise)
# would no longer be negligible next to the noise the posterior assumes; above 1e6 the float32
# inputs and the squared distances in the likelihood would approach overflow.
NOISE_MIN, NOISE_MAX = 1e-4, 1e6


def _check_real(name: str, value: Any, *, probability: bool = False) -> float:
    """A finite float (ints accepted), in [0, 1] if ``probability`` else in [NOISE_MIN, NOISE_MAX],
    naming the argument and the allowed range on error."""
    low, high = (0.0, 1.0) if probability else (NOISE_MIN, NOISE_MAX)
    allowed = f"allowed: {low:g} <= {name} <= {high:g}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a finite float, got {value!r} ({type(value).__name__}); {allowed}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite float, got {value}; {allowed}")
    if probability and not low <= value <= high:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")
    if not probability and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}; {allowed}")
    if not low <= value <= high:
        raise ValueError(f"{name} must lie in [{low:g}, {high:g}], got {value:g}; {allowed}")
    return value


def transition_matrix(S: int = 8, stay: float = 0.3) -> Tensor:
    """The sticky chain's (S, S) float64 transition matrix ``T[i, j] = p(y_{t+1} = j | y_t = i)``.

    Row i: weight ``1 / d(i, j)`` on every j != i (``d`` the circular distance), weight ``stay`` on
    i itself; the row is scaled to sum to ``1 - stay`` and ``stay`` is added to the diagonal. The
    diagonal thus gets ``stay`` plus its share of the rest: 0.3498 for S = 8, stay = 0.3.
    """
    S = check_int("S", S, 2, "at least two symbols")
    stay = _check_real("stay", stay, probability=True)
    check_size("S", 8 * 4 * S * S, "the transition matrix")
    i = torch.arange(S)
    dist = (i[:, None] - i[None, :]).abs()
    dist = torch.minimum(dist, S - dist).to(torch.float64)
    weights = torch.where(dist > 0, 1.0 / dist.clamp_min(1.0), torch.full_like(dist, stay))
    return (1.0 - stay) * weights / weights.sum(1, keepdim=True) + stay * torch.eye(S, dtype=torch.float64)


def symbol_means(S: int = 8, d: int = 20, seed: int = 0) -> Tensor:
    """The fixed symbol means ``mu`` (S, d) float64: standard normal entries drawn from ``seed``."""
    S, d, seed = check_int("S", S, 2), check_int("d", d, 1), check_seed("seed", seed)
    check_size("S and d", 8 * S * d, "the symbol means")
    return torch.randn(S, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def row_entropy_floor_nats(T: Tensor) -> float:
    """Mean row entropy of a transition matrix in nats: the best expected cross-entropy of the next
    symbol when the current one is known exactly (1.829 nats for the default sticky chain)."""
    T = check_float_tensor("T", T)
    if T.dim() != 2 or T.shape[0] != T.shape[1]:
        raise ValueError(f"T must be a square (S, S) matrix, got shape {tuple(T.shape)}")
    return (entropy_bits(T).mean() * LN2).item()


class Sticky(Tunnel):
    """Sticky Markov chain with noisy Gaussian views of the symbols (Paper II's task)."""

    name = "sticky"
    kind = "categorical"
    variants = ("default",)
    length_arg = "L"
    baselines = {}  # the window predictors alone: window-0 is the chain's marginal
    window_baseline = "sticky_window"

    def __init__(self, S: int = 8, d: int = 20, L: int = 64, stay: float = 0.3, noise: float = 1.0,
                 means_seed: int = 0, variant: str = "default"):
        self.S = check_int("S", S, 2, "at least two symbols")
        self.d = check_int("d", d, 1)
        self.L = check_int("L", L, 1)
        self.stay = _check_real("stay", stay, probability=True)
        self.noise = _check_real("noise", noise)
        self.means_seed = check_seed("means_seed", means_seed)
        self.variant = check_choice("variant", variant, self.variants)
        # The fixed tables (T and its cumulative sums, the means), then per episode: the inputs and
        # noise (L x d, several float32/float64 copies), the likelihood's differences to every mean
        # (L x S x d float64, two at a time), and the beliefs, predictive and draws (L x S).
        self.fixed_bytes = 8 * (4 * S * S + 2 * S * d)
        self.episode_bytes = 8 * (2 * L * S * d + 4 * L * d + 6 * L * S + 3 * L + 3)
        check_size("S, d and L", self.fixed_bytes + self.episode_bytes)
        self.T = transition_matrix(S, stay)  # (S, S) float64
        self.means = symbol_means(S, d, means_seed)  # (S, d) float64
        self.seq_len, self.n_features, self.vocab_size = L, d, 0
        self.n_classes, self.answer_tokens = S, None
        self.positions = torch.arange(L)

    def config(self) -> dict[str, Any]:
        return {"tunnel": self.name, "S": self.S, "d": self.d, "L": self.L, "stay": self.stay,
                "noise": self.noise, "means_seed": self.means_seed, "variant": self.variant}

    def sample_symbols(self, batch_size: int, generator: torch.Generator) -> tuple[Episodes, Tensor]:
        """A batch of episodes and the symbols ``y_0..y_{L-1}`` the tokens show (B, L) int64
        (``y_{t+1}``, the target of token t, is ``episodes.target[:, t]``)."""
        (B, g), S, L = self._check_sample_args(batch_size, generator), self.S, self.L
        dev = g.device
        cum = self.T.to(dev).cumsum(1)
        r = torch.rand(B, L, generator=g, device=dev, dtype=torch.float64)
        y = torch.empty(B, L + 1, dtype=torch.int64, device=dev)
        y[:, 0] = torch.randint(0, S, (B,), generator=g, device=dev)
        for t in range(L):  # inverse CDF on the current symbol's row
            y[:, t + 1] = (cum[y[:, t]] <= r[:, t : t + 1]).sum(1).clamp_max(S - 1)
        eps = torch.randn(B, L, self.d, generator=g, device=dev, dtype=torch.float64)
        x = (self.means.to(dev)[y[:, :L]] + self.noise * eps).to(torch.float32)  # what the model sees
        ep = Episodes(inputs=x, positions=self.positions.to(dev), target=y[:, 1:].contiguous(),
                      probs=self.predictive(x))
        return ep, y[:, :L].contiguous()

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        return self.sample_symbols(batch_size, generator)[0]

    def _check_inputs(self, x: Tensor) -> Tensor:
        x = check_float_tensor("x", x)
        if x.dim() != 3 or x.shape[-1] != self.d:
            raise ValueError(f"x must have shape (B, L, d) = (B, L, {self.d}), got {tuple(x.shape)}")
        return x.to(torch.float64)

    def log_likelihoods(self, x: Tensor) -> Tensor:
        """``log p(x_t | y_t = s)`` up to a constant shared by all s: (B, L, S) float64."""
        x = self._check_inputs(x)
        diff = x.unsqueeze(2) - self.means.to(x.device)  # (B, L, S, d)
        return -0.5 * diff.pow(2).sum(-1) / self.noise ** 2

    def filter(self, x: Tensor) -> Tensor:
        """Filtering posterior ``p(y_t | x_0..x_t)`` of the symbol each token shows: (B, L, S) float64,
        by the forward algorithm in log space (y_0 uniform); vectorised over episodes and symbols."""
        ll = self.log_likelihoods(x)
        B, L, S = ll.shape
        log_T = self.T.to(ll.device).log()
        out = torch.empty_like(ll)
        log_belief = torch.full((B, S), -math.log(S), dtype=torch.float64, device=ll.device)
        for t in range(L):
            if t > 0:
                log_belief = torch.logsumexp(log_belief.unsqueeze(2) + log_T, dim=1)  # move with the chain
            log_belief = log_belief + ll[:, t]
            log_belief = log_belief - torch.logsumexp(log_belief, dim=1, keepdim=True)
            out[:, t] = log_belief.exp()
        return out

    def predictive(self, x: Tensor) -> Tensor:
        """Exact predictive ``p(y_{t+1} | x_0..x_t)`` at every token: (B, L, S) float64."""
        return self.filter(x) @ self.T.to(x.device)

    def noisy_floor_nats(self, episodes: int = 4096, seed: int = 0, batch_size: int = 1024) -> tuple[float, float]:
        """Monte Carlo estimate of the Bayes floor with noisy inputs: the mean entropy of the exact
        predictive in nats over ``episodes`` fresh episodes (generator seeded ``seed``), with its
        standard error (episodes are independent; positions within one are not)."""
        check_int("episodes", episodes, 2)
        check_int("batch_size", batch_size, 1)
        g = torch.Generator().manual_seed(check_seed("seed", seed))
        per_episode = []
        left = episodes
        while left > 0:
            n = min(batch_size, left)
            per_episode.append(entropy_bits(self.sample(n, g).probs).mean(1) * LN2)
            left -= n
        h = torch.cat(per_episode)
        return h.mean().item(), (h.std() / math.sqrt(h.numel())).item()
