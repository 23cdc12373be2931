"""The selective scan of Mamba's state-space blocks: the recurrence ``h_t = a_t h_{t-1} + b_t``.

The recurrence ``h_t = a_t h_{t-1} + b_t`` is computed by one of four scans (all tested equal), chosen by
:func:`selective_scan`'s ``method``:
- ``"sequential"``: the reference, a Python loop over time under autograd;
- ``"parallel"``: a chunked scan (:func:`_chunked_scan`): the local scans of all chunks of
  ``SCAN_CHUNK`` steps side by side, a short loop carrying the state across the ``T / SCAN_CHUNK``
  chunk boundaries, then every state at once; its backward pass is the same scan run backwards in
  time (a custom autograd function that stores ``log2 a``, the states and one work buffer);
- ``"stepwise"``: the whole selective SSM one step at a time with a hand-written backward pass
  (:class:`_Stepwise`): in training it keeps only every ``SCAN_BLOCK``-th state and recomputes the
  others block by block in the backward pass;
- ``"cuda"``: ``selective_scan_fn`` from the ``mamba-ssm`` package (not testable on CPU machines).
``"auto"`` (the default) takes ``"cuda"`` when that package imports, the tensors are on a GPU and
nobody reads the state hook (the fused kernel never materialises the states); else ``"parallel"``
on an accelerator, where a loop over time is bound by kernel launches; and ``"stepwise"`` on a CPU.
On a CPU the work is memory-bound: each time step is a handful of passes over a (batch, N, d_inner)
state, and what costs is every pass over memory and every fresh (batch, T, d_inner, N) tensor (the
first touch of a new allocation of that size costs more than the arithmetic on it). The stepwise
scan makes the fewest passes and allocates no such tensor; the chunked form needs several passes
over all the states (and its closed form from cumulative sums of ``log a`` would need ``1 / a``,
which overflows under strong decay). Forward + backward at the lite Mamba's sizes on one CPU thread
(``bwt bench`` lists them), the stepwise scan measured about 5x faster than the sequential loop at
batch 16 and 10x at batch 64 (T = 37, d_inner = 336), the chunked scan 1.0-1.7x.
"""
from __future__ import annotations

import math
import threading
from typing import Any

import torch

from ..arguments import check_choice

SCAN_METHODS = ("auto", "parallel", "sequential", "stepwise", "cuda")
LOG2_E = 1.0 / math.log(2.0)  # every scan takes exp(x) as exp2(x log2 e): several times faster on CPUs


# ------------------------------------------------------------------------------------------------
# Scans of the linear recurrence h_t = a_t * h_{t-1} + b_t along dim 1 (h_{-1} = 0)


def scan_sequential(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Reference scan: one step at a time (differentiable by autograd)."""
    h = torch.zeros_like(b[:, 0])
    out = []
    for a_t, b_t in zip(a.unbind(1), b.unbind(1)):  # unbind: one backward op, not one per step
        h = a_t * h + b_t
        out.append(h)
    return torch.stack(out, 1)


def _scan_steps(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, start: int, stop: int,
                reverse: bool = False) -> None:
    """Steps ``start..stop-1`` of the recurrence one at a time, written into ``out``; time is dim 0.

    Forward: ``out_t = a_t out_{t-1} + b_t``; reverse (the adjoint recurrence of the backward pass):
    ``out_t = a_{t+1} out_{t+1} + b_t``, from ``stop - 1`` down to ``start``. The state before the
    first step is ``out[start - 1]`` (reverse: ``out[stop]``) where that exists, else 0."""
    for t in (range(stop - 1, start - 1, -1) if reverse else range(start, stop)):
        prev = t + 1 if reverse else t - 1
        if 0 <= prev < out.shape[0]:
            torch.addcmul(b[t], a[prev if reverse else t], out[prev], out=out[t])
        else:
            out[t] = b[t]


@torch.no_grad()
def _chunked_scan(a: torch.Tensor, b: torch.Tensor, chunk: int, reverse: bool = False) -> torch.Tensor:
    """``h_t = a_t h_{t-1} + b_t`` (``h_{-1} = 0``) along dim 0 (time-major tensors) by chunks of
    ``chunk`` steps. Overwrites ``a`` (with running products of decays).

    Three phases, each a handful of tensor operations on all ``T / chunk`` chunks at once:
    1. every chunk's local scan from a zero state, ``l_c = a_c l_{c-1} + b_c`` (``chunk`` vectorised
       steps, all chunks side by side), and its running decay ``P_c = a_0 a_1 ... a_c``;
    2. the states entering the chunks, ``h_in' = P_last h_in + l_last``: a loop over the chunks;
    3. every state at once, ``h_c = l_c + P_c h_in``.
    Only products of decays in ``[0, 1]`` appear, never their inverses, so nothing can overflow
    whatever ``dt >= 0`` and ``A <= 0`` are, and the rounding is that of the sequential loop. Time
    first, every vectorised step reads and writes whole (batch, ...) blocks, in place (no state-sized
    temporaries). The steps after the last full chunk run one at a time. (The closed form from
    cumulative sums of ``log a``, ``h_c = e^(L_c) (h_in + sum_s e^(-L_s) b_s)``, needs ``e^(-L)``, which
    overflows float32 once a chunk decays below ``e^-88``; rescaled per chunk it stays finite but
    loses precision in the exponent, and on a CPU it made more passes over memory than this.)

    ``reverse``: the backward pass's recurrence ``g_t = a_{t+1} g_{t+1} + b_t`` (``g_T = 0``), the
    same three phases mirrored in time (suffix products ``a_{c+1} ... a_last`` carry the gradient
    entering a chunk to its steps).
    """
    T, C = b.shape[0], chunk
    K = T // C
    out = torch.empty_like(b, memory_format=torch.contiguous_format)
    if reverse:
        _scan_steps(a, b, out, K * C, T, reverse=True)
    if K:
        av, bv, ov = (t[:K * C].unflatten(0, (K, C)) for t in (a, b, out))  # (K, C, batch, ...)
        first, last = (C - 1, 0) if reverse else (0, C - 1)
        ov[:, first] = bv[:, first]
        for c in (range(C - 2, -1, -1) if reverse else range(1, C)):  # 1. local scans
            prev = c + 1 if reverse else c - 1
            torch.addcmul(bv[:, c], av[:, prev if reverse else c], ov[:, prev], out=ov[:, c])
            if not reverse:
                av[:, c] *= av[:, prev]  # prefix products a_0 ... a_c
        if reverse:
            a_first = av[:, 0].clone()  # a of each chunk's first step
            for c in range(C - 2, -1, -1):
                av[:, c] *= av[:, c + 1]  # suffix products a_c ... a_last
        decay = av[:, last]  # (K, batch, ...): each chunk's total decay
        h_in = torch.zeros_like(decay, memory_format=torch.contiguous_format)  # the state entering each chunk
        if reverse:  # h_in: a g of the next chunk's first step
            local = ov[:, 0] * a_first
            if K * C < T:
                h_in[-1] = a[K * C] * out[K * C]
            for k in range(K - 2, -1, -1):  # 2. the loop over the chunks
                torch.addcmul(local[k + 1], decay[k + 1], h_in[k + 1], out=h_in[k])
            ov[:, :-1].addcmul_(av[:, 1:], h_in.unsqueeze(1))  # 3. g_c = l_c + a_{c+1} ... a_last h_in
            ov[:, -1] += h_in
        else:
            local = ov[:, -1]
            for k in range(1, K):  # 2. the loop over the chunks
                torch.addcmul(local[k - 1], decay[k - 1], h_in[k - 1], out=h_in[k])
            ov.addcmul_(av, h_in.unsqueeze(1))  # 3. h_c = l_c + a_0 ... a_c h_in
    if not reverse:
        _scan_steps(a, b, out, K * C, T)
    return out


class _ChunkedScan(torch.autograd.Function):
    """``h = scan(x, b)`` along dim 0 by :func:`_chunked_scan`, with ``x = log2 a`` (``log2=True``)
    or ``x = a``.

    Backward: ``g_t = dL/dh_t + a_{t+1} g_{t+1}`` is the same chunked scan run backwards in time;
    ``dL/db_t = g_t`` and ``dL/da_t = g_t h_{t-1}`` (times ``a_t ln 2`` for ``log2 a``). Saves ``x``
    and ``h``; ``a = 2^x`` is recomputed, into the forward pass's work buffer, which is kept (one
    state-sized tensor) because on a CPU a fresh allocation of that size costs more than the pass."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, b: torch.Tensor, log2: bool, chunk: int) -> torch.Tensor:
        a = torch.exp2(x) if log2 else x.clone()
        h = _chunked_scan(a, b, chunk)
        ctx.log2, ctx.chunk = log2, chunk
        ctx.save_for_backward(x, h)
        ctx.work = a  # scratch memory for the backward pass's a
        return h

    @staticmethod
    def backward(ctx: Any, grad_h: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, h = ctx.saved_tensors
        a = ctx.work
        if ctx.log2:
            torch.exp2(x, out=a)
        else:
            a.copy_(x)
        grad_x = None
        if ctx.needs_input_grad[0]:  # g_t h_{t-1} dh_t/dx_t, with dh_t/dx_t = h_{t-1} (a_t ln 2 for log2 a)
            grad_x = torch.empty_like(h)
            grad_x[0] = 0
            if ctx.log2:
                torch.mul(h[:-1], a[1:], out=grad_x[1:])
            else:
                grad_x[1:] = h[:-1]
        g = _chunked_scan(a, grad_h, ctx.chunk, reverse=True)
        if grad_x is not None:
            grad_x *= g
            if ctx.log2:
                grad_x *= math.log(2.0)
        return grad_x, g, None, None


SCAN_CHUNK = 16  # steps per chunk of the parallel scan: 8, 16 and 32 measured alike on CPU (bwt bench-scan)


def scan_parallel(a: torch.Tensor, b: torch.Tensor, chunk: int | None = None) -> torch.Tensor:
    """Chunked parallel scan of ``h_t = a_t h_{t-1} + b_t`` along dim 1 (see :func:`_chunked_scan`);
    equal to :func:`scan_sequential` up to float rounding, with gradients by the same scan run backwards."""
    return _ChunkedScan.apply(a.transpose(0, 1), b.transpose(0, 1), False, chunk or SCAN_CHUNK).transpose(0, 1)


def scan_parallel_log2(la2: torch.Tensor, b: torch.Tensor, chunk: int | None = None) -> torch.Tensor:
    """:func:`scan_parallel` of time-major tensors (time is dim 0: contiguous blocks per step) with
    the decay given as ``la2 = log2 a`` (``a = 2^la2`` is recomputed forward and backward, not stored)."""
    return _ChunkedScan.apply(la2, b, True, chunk or SCAN_CHUNK)


_CUDA_SCAN: Any = None  # mamba_ssm's selective_scan_fn once imported; False when unavailable


def cuda_scan_available() -> bool:
    """True when ``mamba_ssm``'s fused selective-scan kernel imports (it needs CUDA)."""
    global _CUDA_SCAN
    if _CUDA_SCAN is None:
        try:
            from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
            _CUDA_SCAN = selective_scan_fn
        except Exception:  # not installed, or built for another torch/CUDA
            _CUDA_SCAN = False
    return _CUDA_SCAN is not False


def auto_scan_method(x: torch.Tensor, states_wanted: bool = False) -> str:
    """The scan ``"auto"`` picks for tensors like ``x``: the ``mamba-ssm`` kernel on a GPU when it
    imports and nobody reads the states; else ``"parallel"`` on an accelerator (a step-by-step loop
    there is bound by kernel launches) and ``"stepwise"`` on a CPU (see :func:`benchmark_scan`)."""
    if x.device.type == "cpu":
        return "stepwise"
    if x.is_cuda and not states_wanted and cuda_scan_available():
        return "cuda"
    return "parallel"


def _float32(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """Half-precision tensors (autocast) upcast to float32; float32 and float64 kept."""
    return [t.float() if t.dtype in (torch.float16, torch.bfloat16) else t for t in tensors]


def ssm_states(u: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor,
               method: str = "parallel") -> torch.Tensor:
    """The states ``h_t = exp(dt_t A) h_{t-1} + dt_t B_t u_t``: (batch, T, d_inner, N), at least float32.

    Shapes: ``u``, ``dt`` (batch, T, d_inner); ``A`` (d_inner, N); ``B`` (batch, T, N).
    ``method``: ``"parallel"`` or ``"sequential"`` (both differentiable). The parallel scan works
    time-major and returns a (batch, T, ...) view of (T, batch, ...) memory.
    """
    check_choice("method", method, ("parallel", "sequential"))
    with torch.autocast(u.device.type, enabled=False):
        u, dt, A, B = _float32(u, dt, A, B)
        if method == "sequential":
            a = torch.exp2(dt.unsqueeze(-1) * (A * LOG2_E))  # exp(dt A), (batch, T, d_inner, N)
            return scan_sequential(a, (dt * u).unsqueeze(-1) * B.unsqueeze(2))
        dt_, du, B_ = _time_major(dt, dt * u, B)  # (T, batch, .): each time step one contiguous block
        la2 = dt_.unsqueeze(-1) * (A * LOG2_E)  # log2 exp(dt A), (T, batch, d_inner, N)
        return scan_parallel_log2(la2, du.unsqueeze(-1) * B_.unsqueeze(2)).transpose(0, 1)


def ssm_readout(h: torch.Tensor, C: torch.Tensor, u: torch.Tensor, D: torch.Tensor) -> torch.Tensor:
    """``y_t = C_t . h_t + D u_t``: (batch, T, d_inner), at least float32."""
    with torch.autocast(u.device.type, enabled=False):
        h, C, u, D = _float32(h, C, u, D)
        if h.transpose(0, 1).is_contiguous() and not h.is_contiguous():  # time-major states (the parallel scan's)
            y = torch.matmul(h.transpose(0, 1), C.transpose(0, 1).unsqueeze(-1).contiguous())  # (T, batch, d_inner, 1)
            return y.squeeze(-1).transpose(0, 1) + u * D
        return torch.einsum("btdn,btn->btd", h, C) + u * D


def _time_major(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """(batch, T, ...) -> contiguous (T, batch, ...), so that each time step is one block of memory."""
    return [t.transpose(0, 1).contiguous() for t in tensors]


def _batch_major(t: torch.Tensor) -> torch.Tensor:
    """(T, batch, ...) -> contiguous (batch, T, ...): elementwise operations on mixed layouts are slow."""
    return t.transpose(0, 1).contiguous()


SCAN_BLOCK = 8  # steps between the states the stepwise scan keeps for its backward pass (4-16 measured alike)
_SCRATCH = threading.local()  # the stepwise scan's reusable CPU buffers, per thread (see _scratch)


def _scratch(name: str, like: torch.Tensor, *shape: int) -> torch.Tensor:
    """An uninitialised (``shape``) buffer of ``like``'s dtype and device, for use within one call only.

    On a CPU the stepwise scan's work buffers (megabytes each) are kept from call to call, one per
    name and thread: memory of that size freed goes back to the system, and touching it again after
    a fresh allocation costs page faults, which measured about a tenth of a lite Mamba's training
    step. On other devices (whose caching allocators already reuse memory) a new tensor."""
    if like.device.type != "cpu":
        return like.new_empty(shape)
    buf = getattr(_SCRATCH, name, None)
    if buf is None or buf.shape != shape or buf.dtype != like.dtype:
        buf = like.new_empty(shape)
        setattr(_SCRATCH, name, buf)
    return buf


def _time_major_scratch(name: str, t: torch.Tensor) -> torch.Tensor:
    """:func:`_time_major` into the scratch buffer ``name``."""
    return _scratch(name, t, t.shape[1], t.shape[0], *t.shape[2:]).copy_(t.transpose(0, 1))


class _Stepwise(torch.autograd.Function):
    """The selective SSM one time step at a time, with a hand-written backward pass.

    Every per-step tensor is a contiguous (batch, N, d_inner) block that stays in cache; each step is
    a handful of in-place operations on it (``a_t = 2^(dt_t A log2 e)``, ``h = a_t h + B_t (dt_t u_t)``,
    ``y_t = C_t . h``), written into preallocated buffers. Without ``keep_states`` only the state at
    the end of every block of ``block`` steps is kept; the backward pass recomputes a block's states
    and decays from the one before it, then runs the adjoint recurrence through the block. Nothing of
    size (batch, T, d_inner, N) is allocated, which on a CPU would cost more in fresh memory (page
    faults) than the arithmetic: at a training size this is several times faster than keeping every
    state (``benchmark_scan``). Backward, with G_t = dL/dh_t = C_t dy_t + a_{t+1} G_{t+1}:
    dL/d(dt_t u_t) = G_t . B_t, dL/dB_t = G_t . (dt_t u_t), dL/dC_t = h_t . dy_t and
    dL/d(dt_t A) = a_t G_t h_{t-1}, whose sums over N (times A) and over batch and time (times dt)
    are dL/d dt_t and dL/dA.
    """

    @staticmethod
    def forward(ctx: Any, u: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                D: torch.Tensor, keep_states: bool, block: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        batch, T, di = u.shape
        N = A.shape[1]
        # (T, batch, .): every tensor in one layout. Buffers used only within this call are scratch.
        u_, dt_, B_, C_ = (_time_major_scratch("f_" + k, t) for k, t in zip(("u", "dt", "B", "C"), (u, dt, B, C)))
        du = torch.mul(dt_, u_, out=_scratch("f_du", u, T, batch, di))
        A2 = (A.T * LOG2_E).contiguous()  # (N, d_inner): a_t = 2^(dt_t A2)
        hs = u.new_empty(T if keep_states else (T - 1) // block, batch, N, di)  # every state, or the block ends
        h, a = _scratch("f_h", u, batch, N, di), _scratch("f_a", u, batch, N, di)
        ys = _scratch("f_ys", u, T, batch, 1, di)
        # Every step's slices as views made once (indexing per step costs about a tenth of the step):
        # dt_t and du_t (batch, 1, d_inner), B_t (batch, N, 1), C_t (batch, 1, N), y_t (batch, 1, d_inner).
        dts, dus, Bs, Cs = dt_.unsqueeze(2).unbind(0), du.unsqueeze(2).unbind(0), B_.unsqueeze(3).unbind(0), \
            C_.unsqueeze(2).unbind(0)
        y_rows = ys.unbind(0)
        for t in range(T):
            if keep_states:
                h = hs[t]
            if t == 0:
                torch.mul(Bs[0], dus[0], out=h)
            else:
                torch.mul(dts[t], A2, out=a)
                a.exp2_()
                if keep_states:
                    torch.mul(hs[t - 1], a, out=h)
                else:
                    h.mul_(a)
                h.addcmul_(Bs[t], dus[t])
            torch.bmm(Cs[t], h, out=y_rows[t])
            if not keep_states and t % block == block - 1 and t + 1 < T:
                hs[t // block].copy_(h)
        y = _batch_major(ys.squeeze(2).addcmul_(u_, D))  # + D u_t
        ctx.keep_states, ctx.block = keep_states, block
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(u, dt, A, B, C, D, hs)
        if not keep_states:
            return y, None
        states = hs.permute(1, 0, 3, 2)  # (batch, T, d_inner, N), as every scan returns them
        ctx.mark_non_differentiable(states)
        return y, states

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor | None, _states: Any) -> tuple[torch.Tensor | None, ...]:
        u, dt, A, B, C, D, hs = ctx.saved_tensors
        if dy is None:
            return (None,) * 8
        keep, K = ctx.keep_states, ctx.block
        batch, T, di = u.shape
        N = A.shape[1]
        dy_, u_, dt_, B_, C_ = (_time_major_scratch("b_" + k, t) for k, t in zip(("dy", "u", "dt", "B", "C"),
                                                                                 (dy, u, dt, B, C)))
        du = torch.mul(dt_, u_, out=_scratch("b_du", u, T, batch, di))
        A2, At = (A.T * LOG2_E).contiguous(), A.T.contiguous()
        g, x = _scratch("b_g", u, batch, N, di), _scratch("b_x", u, batch, N, di)  # G_t; scratch
        # dL/dA: total, this block's
        g_A, g_A_block = _scratch("b_gA", u, batch, N, di).zero_(), _scratch("b_gAb", u, batch, N, di).zero_()
        g_du, g_B, g_C = _scratch("b_gdu", u, T, batch, 1, di), _scratch("b_gB", u, T, batch, 1, N), \
            _scratch("b_gC", u, T, batch, 1, N)
        g_dt = _scratch("b_gdt", u, T, batch, di)
        g_dt[0] = 0  # h_{-1} = 0: dt_0 enters through dt_0 u_0 only
        L = min(K, T)
        a = _scratch("b_a", u, L, batch, N, di)  # the block's decays
        hb = None if keep else _scratch("b_hb", u, L, batch, N, di)  # the block's states, recomputed

        # Every step's slices as views made once (see forward): dt_t, du_t, dy_t (batch, 1, d_inner); B_t
        # and C_t (batch, N, 1) and (batch, 1, N); the outputs' rows; the block buffers' and states' steps.
        dts, dus, dys = dt_.unsqueeze(2).unbind(0), du.unsqueeze(2).unbind(0), dy_.unsqueeze(2).unbind(0)
        B_cols, B_rows, C_cols = B_.unsqueeze(3).unbind(0), B_.unsqueeze(2).unbind(0), C_.unsqueeze(3).unbind(0)
        g_dus, g_Bs, g_Cs, g_dts = g_du.unbind(0), g_B.unbind(0), g_C.unbind(0), g_dt.unbind(0)
        a_s, hb_s, hs_s = a.unbind(0), None if keep else hb.unbind(0), hs.unbind(0)
        g_mT = g.mT

        def state(t: int, s: int) -> torch.Tensor:  # h_t, t >= s - 1, in the block starting at s
            return hs_s[t] if keep else (hb_s[t - s] if t >= s else hs_s[t // K])

        torch.mul(C_cols[T - 1], dys[T - 1], out=g)  # G_{T-1}
        for s in range(((T - 1) // K) * K, -1, -K):  # blocks, the last first
            e = min(s + K, T)
            if s == 0 and not keep:
                torch.mul(B_cols[0], dus[0], out=hb_s[0])
            for t in range(max(s, 1), e):  # the block's decays and (unless kept) states, step by step
                torch.mul(dts[t], A2, out=a_s[t - s])
                a_s[t - s].exp2_()
                if not keep:
                    torch.mul(state(t - 1, s), a_s[t - s], out=hb_s[t - s])
                    hb_s[t - s].addcmul_(B_cols[t], dus[t])
            for t in range(e - 1, s - 1, -1):  # g holds G_t
                torch.bmm(B_rows[t], g, out=g_dus[t])
                torch.bmm(dus[t], g_mT, out=g_Bs[t])  # (this product form is the fast one)
                torch.bmm(dys[t], state(t, s).mT, out=g_Cs[t])
                if t > 0:
                    g.mul_(a_s[t - s])  # a_t G_t
                    torch.mul(g, state(t - 1, s), out=x)  # dL/d(dt_t A)
                    g_A_block.addcmul_(x, dts[t])
                    torch.sum(x.mul_(At), 1, out=g_dts[t])
                    g.addcmul_(C_cols[t - 1], dys[t - 1])  # G_{t-1}
            g_A += g_A_block  # summed block by block: rounding grows with T / block + block, not T
            g_A_block.zero_()
        g_du = g_du.squeeze(2)  # (T, batch, d_inner)
        g_D = torch.mul(dy_, u_, out=_scratch("b_dyu", u, T, batch, di)).sum((0, 1))
        g_u = torch.mul(dy_, D, out=_scratch("b_gu", u, T, batch, di)).addcmul_(g_du, dt_)
        return (_batch_major(g_u), _batch_major(g_dt.addcmul_(g_du, u_)),
                g_A.sum(0).T, _batch_major(g_B.squeeze(2)), _batch_major(g_C.squeeze(2)), g_D,
                None, None)


def cuda_selective_scan(u: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                        D: torch.Tensor) -> torch.Tensor:
    """``y`` from ``mamba-ssm``'s fused CUDA kernel (which never materialises the states); float32."""
    if not (cuda_scan_available() and u.is_cuda):
        raise ValueError("method='cuda' needs the mamba-ssm package and tensors on a CUDA device")
    y = _CUDA_SCAN(*(t.float().transpose(1, 2).contiguous() for t in (u, dt)), A.float().contiguous(),
                   *(t.float().transpose(1, 2).contiguous() for t in (B, C)), D.float())
    return y.transpose(1, 2)


INFERENCE_CHUNK = 64  # episodes per pass of the inference loop (keeps a step's tensors in cache)


@torch.no_grad()
def _stepwise_inference(u: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                        D: torch.Tensor) -> torch.Tensor:
    """``y`` of the selective SSM without gradients or stored states: the stepwise loop over chunks
    of :data:`INFERENCE_CHUNK` episodes, ``exp(dt A)`` computed per step (all in cache)."""
    At2 = A.T * LOG2_E
    out = []
    for s in range(0, u.shape[0], INFERENCE_CHUNK):
        dt_, du, B_, C_ = _time_major(*(t[s:s + INFERENCE_CHUNK] for t in (dt, dt * u, B, C)))
        h = u.new_zeros(dt_.shape[1], A.shape[1], A.shape[0])
        ys = []
        for t in range(dt_.shape[0]):
            h = torch.addcmul(B_[t, :, :, None] * du[t, :, None, :], torch.exp2(dt_[t, :, None, :] * At2), h)
            ys.append(torch.bmm(C_[t, :, None, :], h))
        out.append(torch.stack(ys).squeeze(2).transpose(0, 1))
    return torch.cat(out) + u * D


def selective_scan(u: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                   D: torch.Tensor, method: str = "parallel", return_states: bool = True,
                   block: int | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The selective SSM: ``y_t = C_t . h_t + D u_t`` with ``h_t = exp(dt_t A) h_{t-1} + dt_t B_t u_t``.

    Shapes: ``u``, ``dt`` (batch, T, d_inner); ``A`` (d_inner, N); ``B``, ``C`` (batch, T, N);
    ``D`` (d_inner,). ``method``: ``"sequential"``, ``"parallel"``, ``"stepwise"`` or ``"cuda"``.
    Returns ``y`` (batch, T, d_inner) and the states (batch, T, d_inner, N), in float32 (float64
    inputs stay float64), also under autocast. The states are None for ``"cuda"``, and for
    ``"stepwise"`` with ``return_states=False`` (which then keeps only every ``block``-th state for
    its backward pass, default :data:`SCAN_BLOCK`, or without gradients runs a lighter loop).
    """
    check_choice("method", method, SCAN_METHODS[1:])
    if method == "cuda":
        return cuda_selective_scan(u, dt, A, B, C, D), None
    if method == "stepwise":
        with torch.autocast(u.device.type, enabled=False):
            inputs = _float32(u, dt, A, B, C, D)
            if not (return_states or torch.is_grad_enabled()):
                return _stepwise_inference(*inputs), None
            return _Stepwise.apply(*inputs, return_states, block or SCAN_BLOCK)
    h = ssm_states(u, dt, A, B, method)
    return ssm_readout(h, C, u, D), h
