"""A Mamba-1 backbone (spec 1.7): selective state-space blocks in pure PyTorch.

Each pre-norm residual block is ``x + out_proj(SSM(x) * SiLU(z))`` (Gu and Dao 2023, "Mamba:
Linear-Time Sequence Modeling with Selective State Spaces"):

    x, z   = in_proj(RMSNorm(x)).chunk(2)           # (B, T, d) -> 2 x (B, T, d_inner)
    x      = SiLU(causal depthwise conv1d(x))        # kernel D_CONV, one filter per channel
    dt, B, C = x_proj(x).split(dt_rank, N, N)        # input-dependent ("selective") parameters
    dt     = softplus(dt_proj(dt))                   # (B, T, d_inner): one step size per channel
    A      = -exp(A_log)                             # (d_inner, N), real and negative (S4D-real init)
    h_t    = exp(dt_t A) h_{t-1} + dt_t B_t x_t      # zero-order hold for A, Euler for B
    y_t    = C_t . h_t + D x_t

The fixed hyperparameters are module constants (they are not in :class:`ModelConfig`, so adding
this architecture changed no existing checkpoint key): ``d_inner = EXPAND * d_model``, state size
``D_STATE``, conv width ``D_CONV``, ``dt_rank = ceil(d_model / 16)``.

The recurrence ``h_t = a_t h_{t-1} + b_t`` is computed by one of four scans (all tested equal):
- ``"sequential"``: the reference, a Python loop over time under autograd;
- ``"parallel"``: a chunked scan (:func:`_chunked_scan`): the local scans of all chunks of
  ``SCAN_CHUNK`` steps side by side, a short loop carrying the state across the ``T / SCAN_CHUNK``
  chunk boundaries, then every state at once; its backward pass is the same scan run backwards in
  time (a custom autograd function that stores ``log2 a``, the states and one work buffer);
- ``"stepwise"``: the whole selective SSM one step at a time with a hand-written backward pass,
  every per-step tensor in cache;
- ``"cuda"``: ``selective_scan_fn`` from the ``mamba-ssm`` package (not testable on CPU machines).
``"auto"`` (the default) takes ``"cuda"`` when that package imports, the tensors are on a GPU and
nobody reads the state hook (the fused kernel never materialises the states); else ``"parallel"``
on an accelerator, where a loop over time is bound by kernel launches; and ``"stepwise"`` on a CPU.
Measured on 2 shared CPU cores (``bwt bench-scan``, forward + backward), the chunked parallel scan
beats the sequential loop from T = 64 on; the stepwise loop, which fuses the readout and keeps every
per-step tensor in cache, stays the fastest at training sizes, hence the CPU default.
Hook points: ``hook_x`` (conv output), ``hook_dt`` (per-step dt), ``hook_ssm_state`` (B, T, d_inner,
N), ``hook_y`` (SSM output before the gate) in each mixer; ``hook_resid_pre``/``hook_resid_post``
per block.
"""
from __future__ import annotations

import math
import time
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..validation import check_choice
from .config import ModelConfig
from .hooks import HookPoint
from .model import BlockStack
from .transformer import RMSNorm

EXPAND = 2  # d_inner = EXPAND * d_model
D_STATE = 16  # N: state size per channel
D_CONV = 4  # width of the causal depthwise convolution
DT_MIN, DT_MAX, DT_FLOOR = 1e-3, 1e-1, 1e-4  # initial step sizes: log-uniform on [DT_MIN, DT_MAX]
SCAN_METHODS = ("auto", "parallel", "sequential", "stepwise", "cuda")
LOG2_E = 1.0 / math.log(2.0)  # every scan takes exp(x) as exp2(x log2 e): several times faster on CPUs


def dt_rank(d_model: int) -> int:
    """Rank of the low-rank dt projection: ceil(d_model / 16), as in Mamba."""
    return math.ceil(d_model / 16)


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
    return [t.transpose(0, 1).contiguous() for t in tensors]


class _Stepwise(torch.autograd.Function):
    """The selective SSM one time step at a time, with a hand-written backward pass.

    Every per-step tensor is a contiguous (batch, N, d_inner) block that stays in cache; the
    products with B and C are batched matrix products in that layout, and ``a = exp(dt A)`` is
    computed once and kept for the backward pass. On a CPU this is the fastest of the pure-PyTorch
    scans at training sizes, where the others stream many (batch, T, d_inner, N) tensors through
    memory (see :func:`benchmark_scan`). Backward, with G_t = dL/dh_t = dy_t C_t + a_{t+1} G_{t+1}:
    dL/d(dt_t u_t) = G_t B_t, dL/dB_t = G_t (dt_t u_t), dL/d(dt_t A) = G_t h_{t-1} a_t, dL/dC_t = h_t dy_t.
    """

    @staticmethod
    def forward(ctx: Any, u: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                D: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dt_, du, B_, C_ = _time_major(dt, dt * u, B, C)  # (T, batch, .)
        a = torch.exp2(dt_.unsqueeze(2) * (A.T * LOG2_E))  # exp(dt A), (T, batch, N, d_inner)
        h = u.new_zeros(a.shape[1:])
        hs, ys = [], []
        for t in range(a.shape[0]):
            h = torch.addcmul(B_[t, :, :, None] * du[t, :, None, :], a[t], h)
            hs.append(h)
            ys.append(torch.bmm(C_[t, :, None, :], h))
        hs = torch.stack(hs)  # (T, batch, N, d_inner)
        y = torch.stack(ys).squeeze(2).transpose(0, 1) + u * D
        ctx.save_for_backward(u, dt, A, B, C, D, a, hs)
        states = hs.permute(1, 0, 3, 2)  # (batch, T, d_inner, N), as every scan returns them
        ctx.mark_non_differentiable(states)
        return y, states

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor, _states: Any) -> tuple[torch.Tensor, ...]:
        u, dt, A, B, C, D, a, hs = ctx.saved_tensors
        dy_, dt_, du, B_, C_ = _time_major(dy, dt, dt * u, B, C)
        At = A.T.contiguous()
        g_du, g_B, g_C, g_dt = [], [], [], []
        g_At = torch.zeros_like(At)
        g = None
        for t in range(a.shape[0] - 1, -1, -1):
            outer = C_[t, :, :, None] * dy_[t, :, None, :]
            g = outer if g is None else torch.addcmul(outer, a[t + 1], g)  # G_t
            g_du.append(torch.bmm(B_[t, :, None, :], g))
            g_B.append(torch.bmm(g, du[t, :, :, None]))
            g_C.append(torch.bmm(hs[t], dy_[t, :, :, None]))
            if t > 0:
                x = g * hs[t - 1]
                x *= a[t]  # dL/d(dt_t A), (batch, N, d_inner)
                g_dt.append((x * At).sum(1))
                g_At += (x * dt_[t, :, None, :]).sum(0)
            else:
                g_dt.append(torch.zeros_like(dt_[0]))

        def batch_major(parts: list[torch.Tensor]) -> torch.Tensor:  # collected backwards in time -> (batch, T, ...)
            return torch.stack(parts[::-1], 1)

        g_du = batch_major(g_du).squeeze(2)
        g_u = dy * D + g_du * dt
        g_dt = batch_major(g_dt) + g_du * u
        return g_u, g_dt, g_At.T, batch_major(g_B).squeeze(3), batch_major(g_C).squeeze(3), (dy * u).sum((0, 1))


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
                   D: torch.Tensor, method: str = "parallel",
                   return_states: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The selective SSM: ``y_t = C_t . h_t + D u_t`` with ``h_t = exp(dt_t A) h_{t-1} + dt_t B_t u_t``.

    Shapes: ``u``, ``dt`` (batch, T, d_inner); ``A`` (d_inner, N); ``B``, ``C`` (batch, T, N);
    ``D`` (d_inner,). ``method``: ``"sequential"``, ``"parallel"``, ``"stepwise"`` or ``"cuda"``.
    Returns ``y`` (batch, T, d_inner) and the states (batch, T, d_inner, N), in float32 (float64
    inputs stay float64), also under autocast. The states are None for ``"cuda"``, and for
    ``"stepwise"`` without gradients and ``return_states=False`` (a faster inference loop).
    """
    check_choice("method", method, SCAN_METHODS[1:])
    if method == "cuda":
        return cuda_selective_scan(u, dt, A, B, C, D), None
    if method == "stepwise":
        with torch.autocast(u.device.type, enabled=False):
            inputs = _float32(u, dt, A, B, C, D)
            if not (return_states or torch.is_grad_enabled()):
                return _stepwise_inference(*inputs), None
            return _Stepwise.apply(*inputs)
    h = ssm_states(u, dt, A, B, method)
    return ssm_readout(h, C, u, D), h


# ------------------------------------------------------------------------------------------------
# The model


class MambaMixer(nn.Module):
    """The selective SSM mixer: (B, T, d) -> (B, T, d)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, di, r = cfg.d_model, EXPAND * cfg.d_model, dt_rank(cfg.d_model)
        self.d_inner, self.dt_rank = di, r
        self.in_proj = nn.Linear(d, 2 * di, bias=False)
        self.conv1d = nn.Conv1d(di, di, D_CONV, groups=di, padding=D_CONV - 1)  # causal: trimmed to T
        self.x_proj = nn.Linear(di, r + 2 * D_STATE, bias=False)
        self.dt_proj = nn.Linear(r, di)
        # log(-A), stored flat: the optimizer decays only matrices, and Mamba exempts A from weight decay
        self.A_log = nn.Parameter(torch.empty(di * D_STATE))
        self.D = nn.Parameter(torch.empty(di))
        self.out_proj = nn.Linear(di, d, bias=False)
        self.scan_method = "auto"  # see SCAN_METHODS; a runtime choice, not part of the config
        self.hook_x = HookPoint()  # (B, T, d_inner) after conv and SiLU
        self.hook_dt = HookPoint()  # (B, T, d_inner) step sizes after softplus
        self.hook_ssm_state = HookPoint()  # (B, T, d_inner, N) the state h_t
        self.hook_y = HookPoint()  # (B, T, d_inner) SSM output before the gate
        self.reset_ssm_parameters()

    @torch.no_grad()
    def reset_ssm_parameters(self) -> None:
        """Mamba's SSM initialisation: S4D-real A = -(1..N) per channel, D = 1, dt_proj weights
        uniform in +-dt_rank^-0.5 and its bias the inverse softplus of dt ~ log-uniform[DT_MIN, DT_MAX]."""
        self.A_log.copy_(torch.log(torch.arange(1, D_STATE + 1, dtype=torch.float32)).repeat(self.d_inner))
        self.D.fill_(1.0)
        nn.init.uniform_(self.dt_proj.weight, -self.dt_rank ** -0.5, self.dt_rank ** -0.5)
        dt = torch.exp(torch.rand(self.d_inner) * (math.log(DT_MAX) - math.log(DT_MIN)) + math.log(DT_MIN))
        dt = dt.clamp_min(DT_FLOOR)
        self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))

    @property
    def A(self) -> torch.Tensor:
        """The state matrix's diagonal per channel, (d_inner, N), negative."""
        return -torch.exp(self.A_log.view(self.d_inner, D_STATE))

    def _method(self, x: torch.Tensor) -> str:
        if self.scan_method != "auto":
            return self.scan_method
        return auto_scan_method(x, states_wanted=bool(self.hook_ssm_state._forward_hooks))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T = x.shape[1]
        xi, z = self.in_proj(x).chunk(2, dim=-1)  # (B, T, d_inner) each
        xi = self.hook_x(F.silu(self.conv1d(xi.transpose(1, 2))[..., :T].transpose(1, 2)))
        dt, B, C = self.x_proj(xi).split([self.dt_rank, D_STATE, D_STATE], dim=-1)
        dt = self.hook_dt(F.softplus(self.dt_proj(dt)))
        A = self.A
        method = self._method(x)
        if method in ("parallel", "sequential"):  # a hook that edits the state changes the output
            y = ssm_readout(self.hook_ssm_state(ssm_states(xi, dt, A, B, method)), C, xi, self.D)
        else:
            y, h = selective_scan(xi, dt, A, B, C, self.D, method,
                                  return_states=bool(self.hook_ssm_state._forward_hooks))
            if h is not None:  # read-only here: the output is already computed
                self.hook_ssm_state(h)
        return self.out_proj(self.hook_y(y.to(xi.dtype)) * F.silu(z))


class MambaBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm, self.mixer = RMSNorm(cfg.d_model, cfg.norm_eps), MambaMixer(cfg)
        self.hook_resid_pre, self.hook_mixer_out, self.hook_resid_post = HookPoint(), HookPoint(), HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        return self.hook_resid_post(x + self.hook_mixer_out(self.mixer(self.norm(x))))


class Mamba(BlockStack):
    """(B, T, d) -> (B, T, d): a stack of pre-norm residual Mamba blocks."""

    residual_projections = ("mixer.out_proj",)  # scaled at init, as in GPT-2 and Mamba

    def __init__(self, cfg: ModelConfig):
        super().__init__(MambaBlock(cfg) for _ in range(cfg.n_layers))

    def reset_parameters(self) -> None:
        """Re-apply the SSM initialisation after the adapter's generic one (which zeroes dt_proj's bias)."""
        for block in self.blocks:
            block.mixer.reset_ssm_parameters()

    def set_scan_method(self, method: str) -> None:
        """Choose the scan of every block: one of :data:`SCAN_METHODS`."""
        check_choice("method", method, SCAN_METHODS)
        for block in self.blocks:
            block.mixer.scan_method = method


# ------------------------------------------------------------------------------------------------
# Benchmark (run by hand, never as a timed test)


def benchmark_scan(lengths: tuple[int, ...] = (16, 32, 64, 128, 256), batch: int = 16, d_inner: int = 64,
                   d_state: int = D_STATE, methods: tuple[str, ...] = ("sequential", "parallel", "stepwise"),
                   repeat: int = 7, backward: bool = True, seed: int = 0) -> list[dict[str, float]]:
    """Milliseconds per :func:`selective_scan` call of each method on CPU, one row per length.

    With ``backward``, a call is forward + backward with respect to every input. Each call is timed
    on its own and the fastest of ``repeat`` is kept (robust to other jobs sharing the CPU). Row
    keys: ``length``, ``<method>_ms`` for each method, and ``speedup`` = sequential / parallel.
    """
    g = torch.Generator().manual_seed(seed)
    rows = []
    for T in lengths:
        u, B, C = (torch.randn(batch, T, n, generator=g) for n in (d_inner, d_state, d_state))
        dt = F.softplus(torch.randn(batch, T, d_inner, generator=g) - 2)
        A = -torch.arange(1, d_state + 1.0).repeat(d_inner, 1)
        D = torch.randn(d_inner, generator=g)
        inputs = [t.requires_grad_(backward) for t in (u, dt, A, B, C, D)]
        row: dict[str, float] = {"length": T}
        for method in methods:
            def call() -> None:
                y, _ = selective_scan(*inputs, method=method)
                if backward:
                    y.square().sum().backward()
            call()  # warm-up
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                call()
                times.append(time.perf_counter() - t0)
            row[f"{method}_ms"] = 1000 * min(times)
        if "sequential_ms" in row and "parallel_ms" in row:
            row["speedup"] = row["sequential_ms"] / row["parallel_ms"]
        rows.append(row)
    return rows


def format_scan_benchmark(rows: list[dict[str, float]]) -> str:
    """The rows of :func:`benchmark_scan` as plain text."""
    methods = [k[:-3] for k in rows[0] if k.endswith("_ms")] if rows else []
    lines = [f"{'T':>5}" + "".join(f"{m + ' ms':>15}" for m in methods) + "  parallel vs sequential"]
    for r in rows:
        lines.append(f"{r['length']:>5}" + "".join(f"{r[m + '_ms']:>15.2f}" for m in methods)
                     + (f"  {r['speedup']:.2f}x" if "speedup" in r else ""))
    return "\n".join(lines)
