"""The exact HMM filters, float64: the forward algorithm (:func:`forward_filter`) and the filter that sees
only the last few symbols (:func:`recent_filter`, the window baselines). :mod:`bwt_lite.tunnels.hmm` draws
the episodes and re-exports these."""
from __future__ import annotations

import math

import torch
from torch import Tensor

from ..arguments import check_int

ROW_TOL = 1e-9  # tolerance of forward_filter's row-sum check

def _check_stochastic(name: str, m: Tensor) -> Tensor:
    if not isinstance(m, Tensor) or not torch.is_floating_point(m):
        raise TypeError(f"{name} must be a floating-point tensor, got {type(m).__name__}"
                        f"{'' if not isinstance(m, Tensor) else ' of dtype ' + str(m.dtype)}")
    m = m.to(torch.float64)
    if not torch.isfinite(m).all():
        raise ValueError(f"{name} must be finite (found nan or inf)")
    if (m < 0).any():
        raise ValueError(f"{name} must have no negative entries (min {m.min().item():.3g})")
    worst = (m.sum(-1) - 1.0).abs().max().item() if m.numel() else 0.0
    if worst > ROW_TOL:
        raise ValueError(f"{name} must be row-stochastic: every row must sum to 1 (within {ROW_TOL:g}); "
                         f"worst row is off by {worst:.3g}")
    return m


def forward_filter(T: Tensor, E: Tensor, obs: Tensor, init: Tensor | None = None) -> Tensor:
    """Filtering posteriors p(s_t | o_0..o_t) by the forward algorithm, float64.

    Shapes: ``T`` (B, S, S) with ``T[b, i, j] = p(s_{t+1} = j | s_t = i)``, ``E`` (B, S, O) with
    ``E[b, i, o] = p(o | s = i)``, ``obs`` (B, K) integer symbols in 0..O-1, ``init`` (S,) or (B, S)
    the distribution of s_0 (uniform if None). Returns (B, K, S) float64. Unbatched inputs (S, S),
    (S, O), (K,) give (K, S). Vectorised over episodes and states; loops over time only.
    Where every emission probability is at least 1e-3 (the tunnel's are >= 0.05) it works in
    probability space (:func:`forward_prob`, nothing can underflow there), otherwise in log space,
    which copes with zeros and tiny probabilities; both are exact up to float64 rounding.
    Raises ValueError naming the argument for bad shapes, negative entries, rows not summing to 1,
    symbols out of range, or observations that have probability 0 under the model.
    """
    if not isinstance(obs, Tensor) or obs.dtype.is_floating_point or obs.dtype.is_complex or obs.dtype == torch.bool:
        raise TypeError(f"obs must be an integer tensor of symbols, got "
                        f"{obs.dtype if isinstance(obs, Tensor) else type(obs).__name__}")
    T, E = _check_stochastic("T", T), _check_stochastic("E", E)
    unbatched = T.dim() == 2
    if unbatched:
        if E.dim() != 2 or obs.dim() != 1:
            raise ValueError(f"unbatched T (S, S) needs E (S, O) and obs (K,); got E {tuple(E.shape)}, "
                             f"obs {tuple(obs.shape)}")
        T, E, obs = T.unsqueeze(0), E.unsqueeze(0), obs.unsqueeze(0)
    if T.dim() != 3 or T.shape[1] != T.shape[2]:
        raise ValueError(f"T must have shape (B, S, S), got {tuple(T.shape)}")
    B, S, _ = T.shape
    if E.dim() != 3 or E.shape[:2] != (B, S):
        raise ValueError(f"E must have shape (B, S, O) = ({B}, {S}, O) to match T, got {tuple(E.shape)}")
    O = E.shape[2]
    if obs.dim() != 2 or obs.shape[0] != B:
        raise ValueError(f"obs must have shape (B, K) = ({B}, K) to match T, got {tuple(obs.shape)}")
    if obs.numel() and (obs.min() < 0 or obs.max() >= O):
        raise ValueError(f"obs must be symbols in 0..{O - 1} (O = {O}), got values in "
                         f"{obs.min().item()}..{obs.max().item()}")
    if init is not None:
        init = _check_stochastic("init", init)
        if init.shape not in ((S,), (B, S)):
            raise ValueError(f"init must have shape (S,) = ({S},) or (B, S) = ({B}, {S}), got {tuple(init.shape)}")
        init = init.to(T.device).expand(B, S)
    K = obs.shape[1]
    obs = obs.to(device=T.device, dtype=torch.int64)
    out = torch.empty(B, K, S, dtype=torch.float64, device=T.device)
    if K == 0:
        return out[0] if unbatched else out
    # Each episode goes by itself to one of the two methods, so that its answer does not depend on
    # the other episodes in the batch.
    fast = (E >= _FAST_MIN_EMIT).flatten(1).all(1)  # (B,)
    for use_fast, idx in ((True, fast.nonzero().squeeze(1)), (False, (~fast).nonzero().squeeze(1))):
        if len(idx) == 0:
            continue
        whole = len(idx) == B  # every episode goes the same way: no copies
        Ti, Ei, oi = (T, E, obs) if whole else (T[idx], E[idx], obs[idx])
        init_i = init if init is None or whole else init[idx]
        if use_fast:
            res = forward_prob(Ti.permute(1, 2, 0).contiguous(), Ei.permute(1, 2, 0).contiguous(),
                                oi.t().contiguous(), None if init_i is None else init_i.t().contiguous())
        else:
            res = _forward_log(Ti, Ei, oi, init_i, idx)
        if whole:
            return res[0] if unbatched else res
        out[idx] = res
    return out[0] if unbatched else out


def _forward_log(T: Tensor, E: Tensor, obs: Tensor, init: Tensor | None, episodes: Tensor) -> Tensor:
    """The forward filter in log space: ``T`` (B, S, S), ``E`` (B, S, O), ``obs`` (B, K) int64, ``init``
    (B, S) or None (uniform), all checked -> (B, K, S) float64. Zeros become -inf, which logsumexp
    handles; an observation of probability 0 raises ValueError naming the episode by its number in
    ``episodes`` (the indices of these episodes in the caller's batch)."""
    B, S, _ = T.shape
    K = obs.shape[1]
    log_init = torch.full((B, S), -math.log(S), dtype=torch.float64, device=T.device) if init is None else init.log()
    log_T = T.log()
    log_emit = E.log().gather(2, obs.unsqueeze(1).expand(B, S, K)).transpose(1, 2)  # (B, K, S)
    out = torch.empty(B, K, S, dtype=torch.float64, device=T.device)
    norms = torch.empty(B, K, dtype=torch.float64, device=T.device)  # log p(o_t | o_<t)
    log_alpha = log_init
    for t in range(K):
        if t > 0:
            log_alpha = torch.logsumexp(log_alpha.unsqueeze(2) + log_T, dim=1)  # predict: (B, S)
        log_alpha = log_alpha + log_emit[:, t]  # update with o_t
        norm = torch.logsumexp(log_alpha, dim=1, keepdim=True)
        norms[:, t] = norm.squeeze(1)
        log_alpha = log_alpha - norm
        out[:, t] = log_alpha.exp()
    impossible = torch.isneginf(norms)  # checked once, after the loop (no device sync per step)
    if impossible.any():
        b, t = (int(i) for i in impossible.nonzero()[0])
        raise ValueError(f"obs has probability 0 under the model (episode {int(episodes[b])}, time {t}): "
                         f"no posterior exists")
    return out


# The probability-space filter: used where every emission probability is at least _FAST_MIN_EMIT.
# Then an observation keeps at least that fraction of the beliefs' total (T only moves mass between
# states), so rescaling the running beliefs every _RESCALE_EVERY steps keeps them above 1e-96 of
# their last total: far from float64's smallest normal number, and no observation is impossible.
_FAST_MIN_EMIT = 1e-3
_RESCALE_EVERY = 32


def forward_prob(T: Tensor, E: Tensor, obs: Tensor, init: Tensor | None = None) -> Tensor:
    """The forward filter in probability space with the episodes last: ``T`` (S, S, B), ``E``
    (S, O, B), ``obs`` (K, B) with K >= 1, ``init`` (S, B) or None (uniform), float64 -> (B, K, S)
    float64, no argument checks (see :data:`_FAST_MIN_EMIT` for when it is safe).

    The running beliefs alpha are left unnormalised (scaling them, or leaving out a uniform initial
    factor, changes no posterior) and normalised once at the end; one step is
    ``alpha_t = alpha_{t-1} (T diag(e_t))`` with the matrices built up front. The episode index is
    the last, contiguous dimension because torch's kernels are slow over innermost dimensions as
    short as S; the shared code makes :meth:`HMM.sample`'s posteriors equal :func:`forward_filter`'s
    on the decoded episodes, bit for bit.
    """
    S, _, B = T.shape
    K = obs.shape[0]
    emit = E.gather(1, obs.unsqueeze(0).expand(S, K, B)).transpose(0, 1)  # (K, S, B): p(o_t | s_t = s)
    steps = T.unsqueeze(0) * emit[1:].unsqueeze(1)  # (K-1, S, S, B): T diag(e_t)
    alpha = torch.empty(K, S, B, dtype=torch.float64, device=T.device)
    if init is None:
        alpha[0] = emit[0]
    else:
        torch.mul(init, emit[0], out=alpha[0])
    prod = torch.empty(S, S, B, dtype=torch.float64, device=T.device)
    # Views of every step's rows made once (a view per step costs about as much as the step's arithmetic).
    alphas, prevs, step_t = alpha.unbind(0), alpha.unsqueeze(2).unbind(0), steps.unbind(0)
    for t in range(1, K):
        prev = prevs[t - 1]  # (S, 1, B)
        if t % _RESCALE_EVERY == 0:
            prev = prev / alphas[t - 1].sum(0)
        torch.mul(prev, step_t[t - 1], out=prod)
        torch.sum(prod, 0, out=alphas[t])
    return (alpha / alpha.sum(1, keepdim=True)).view(K * S, B).t().contiguous().view(B, K, S)


def recent_filter(T: Tensor, E: Tensor, obs: Tensor, window: int, init: Tensor | None = None) -> Tensor:
    """Beliefs from the last ``window`` observations only: p(s_t | o_{t-window+1}..o_t), float64.

    The exact posterior of a filter that forgets everything older than ``window`` symbols: the state
    at the window's start has its prior marginal (``init`` carried through T), not the belief the
    earlier symbols gave. ``window = 0`` is that marginal p(s_t) (T alone, no symbol); a window at
    least K long is :func:`forward_filter` itself. Same shapes and checks as :func:`forward_filter`.
    How fast these approach the exact belief as the window grows says how far back a filter must
    look; chapter 3 compares the lite transformer's training plateaus with them.
    """
    window = check_int("window", window, 0)
    exact = forward_filter(T, E, obs, init)  # validates everything; also the answer for t < window
    unbatched = exact.dim() == 2
    post = exact.unsqueeze(0) if unbatched else exact
    B, K, S = post.shape
    if window >= K:
        return exact
    T = T.to(torch.float64).reshape(B, S, S)
    obs = obs.reshape(B, K).to(device=T.device, dtype=torch.int64)
    marg = torch.empty(B, K, S, dtype=torch.float64, device=T.device)  # p(s_t), no observations
    marg[:, 0] = torch.full((B, S), 1.0 / S, dtype=torch.float64, device=T.device) if init is None \
        else init.to(device=T.device, dtype=torch.float64).expand(B, S)
    for t in range(1, K):
        marg[:, t] = (marg[:, t - 1].unsqueeze(1) @ T).squeeze(1)
    if window == 0:
        out = marg
    else:
        starts = torch.arange(K - window + 1, device=T.device)  # windows ending at t = window-1..K-1
        idx = starts.unsqueeze(1) + torch.arange(window, device=T.device)  # (n, window)
        n = len(starts)

        def per_window(x: Tensor) -> Tensor:  # (B, ...) -> (B * n, ...): one copy per window
            return x.unsqueeze(1).expand(B, n, *x.shape[1:]).reshape(B * n, *x.shape[1:])

        last = forward_filter(per_window(T), per_window(E.to(torch.float64).reshape(B, S, E.shape[-1])),
                              obs[:, idx].reshape(B * n, window),
                              marg[:, starts].reshape(B * n, S))[:, -1].reshape(B, n, S)
        out = torch.cat([post[:, : window - 1], last], dim=1)
    return out[0] if unbatched else out
