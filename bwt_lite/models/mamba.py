"""A Mamba-1 backbone: selective state-space blocks in pure PyTorch.

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

The recurrence ``h_t = a_t h_{t-1} + b_t`` is computed by one of four scans, in
:mod:`bwt_lite.models.scan` (``selective_scan``, ``method="auto"`` by default).
Hook points: ``hook_x`` (conv output), ``hook_dt`` (per-step dt), ``hook_ssm_state`` (B, T, d_inner,
N), ``hook_y`` (SSM output before the gate) in each mixer; ``hook_resid_pre``/``hook_resid_post``
per block.
"""
from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..arguments import check_choice
from .config import ModelConfig
from .hooks import HookPoint
from .model import BlockStack
from .scan import SCAN_METHODS, auto_scan_method, selective_scan, ssm_readout, ssm_states
from .transformer import RMSNorm

EXPAND = 2  # d_inner = EXPAND * d_model
D_STATE = 16  # N: state size per channel
D_CONV = 4  # width of the causal depthwise convolution
DT_MIN, DT_MAX, DT_FLOOR = 1e-3, 1e-1, 1e-4  # initial step sizes: log-uniform on [DT_MIN, DT_MAX]


def dt_rank(d_model: int) -> int:
    """Rank of the low-rank dt projection: ceil(d_model / 16), as in Mamba."""
    return math.ceil(d_model / 16)


# ------------------------------------------------------------------------------------------------
# The model


class _CausalConv(torch.autograd.Function):
    """The depthwise causal convolution of (batch, T, channels) inputs: ``nn.Conv1d``'s own forward
    (``padding = K - 1``, trimmed to T) and a backward pass written out as one more depthwise
    convolution and K reductions, because PyTorch's CPU backward of a depthwise convolution
    measured several times slower than the rest of a Mamba block's backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        T, K = x.shape[1], weight.shape[-1]
        y = F.conv1d(x.transpose(1, 2), weight, bias, padding=K - 1, groups=weight.shape[0])[..., :T]
        return y.transpose(1, 2).contiguous()  # (batch, T, channels) in memory too: the ops after it run faster

    @staticmethod
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        gy = gy.to(x.dtype)  # under autocast the forward ran in lower precision
        (_, T, d), K = x.shape, weight.shape[-1]
        # y_t = bias + sum_k w_k x_{t-K+1+k}: x_s reaches y_{s+j} through w_{K-1-j}
        gx = F.conv1d(F.pad(gy.transpose(1, 2), (0, K - 1)), weight.flip(-1), groups=d).transpose(1, 2)
        gw = torch.stack([(gy[:, K - 1 - k:] * x[:, :T - (K - 1 - k)]).sum((0, 1)) if K - 1 - k < T
                          else gy.new_zeros(d) for k in range(K)], -1)
        return gx, gw.unsqueeze(1).to(weight.dtype), gy.sum((0, 1)).to(weight.dtype)


THIN = 64  # _mm: a product with fewer columns than this (and at least as many rows) is computed transposed


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b``, computed as ``(b^T a^T)^T`` when the product is tall and thin (fewer than :data:`THIN`
    columns, at least that many rows): on a CPU, MKL measured three to four times slower on such
    products than on their transposes (the lite Mamba's dt and x projections and their gradients)."""
    if b.shape[1] < THIN <= a.shape[0]:
        return (b.t() @ a.t()).t()
    return a @ b


class _Linear(torch.autograd.Function):
    """``F.linear(x, weight, bias)`` with its three products (forward, and the gradients of x and of
    the weight) by :func:`_mm`: the same numbers up to float rounding, faster on a CPU for the mixer's
    thin projections. The output and gradients may be transposed views."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        y = _mm(x.reshape(-1, x.shape[-1]), weight.t())
        if bias is not None:
            y = y + bias
        return y.unflatten(0, x.shape[:-1])

    @staticmethod
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        g = gy.reshape(-1, gy.shape[-1])
        gx = _mm(g, weight).unflatten(0, x.shape[:-1]) if ctx.needs_input_grad[0] else None
        gw = _mm(g.t(), x.reshape(-1, x.shape[-1])) if ctx.needs_input_grad[1] else None
        gb = g.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return gx, gw, gb


def _linear(x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
    """``layer(x)``, by :class:`_Linear` on a CPU outside autocast (elsewhere the layer itself)."""
    if x.device.type == "cpu" and not torch.is_autocast_enabled("cpu"):
        return _Linear.apply(x, layer.weight, layer.bias)
    return layer(x)


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
        return auto_scan_method(x, states_wanted=self.hook_ssm_state.hooked)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xi, z = self.in_proj(x).chunk(2, dim=-1)  # (B, T, d_inner) each
        xi = self.hook_x(F.silu(_CausalConv.apply(xi, self.conv1d.weight, self.conv1d.bias)))
        dt, B, C = _linear(xi, self.x_proj).split([self.dt_rank, D_STATE, D_STATE], dim=-1)
        dt = self.hook_dt(F.softplus(_linear(dt, self.dt_proj)))
        y = self.ssm(xi, dt, B, C)
        return self.out_proj(self.hook_y(y.to(xi.dtype)) * F.silu(z))

    @torch.compiler.disable  # torch.compile would unroll the scans' loops over time: they run eagerly
    def ssm(self, xi: torch.Tensor, dt: torch.Tensor, B: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
        """The selective SSM's output y (B, T, d_inner), by the chosen scan, through ``hook_ssm_state``."""
        A, method = self.A, self._method(xi)
        if method in ("parallel", "sequential"):  # a hook that edits the state changes the output
            return ssm_readout(self.hook_ssm_state(ssm_states(xi, dt, A, B, method)), C, xi, self.D)
        y, h = selective_scan(xi, dt, A, B, C, self.D, method, return_states=self.hook_ssm_state.hooked)
        if h is not None:  # read-only here: the output is already computed
            self.hook_ssm_state(h)
        return y


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
    # how every figure draws it: dotted, hollow markers, so it stays visible where it meets the transformer
    plot_color = "C3"
    plot_style = {"marker": "D", "linestyle": ":", "markerfacecolor": "none", "markersize": 5, "zorder": 3}

    @staticmethod
    def state_numbers(cfg: ModelConfig, seq_len: int) -> int:
        """Numbers carried from token to token, fixed in size: per block the SSM state (d_inner x
        D_STATE) and the convolution's last D_CONV - 1 inputs (d_inner each)."""
        return EXPAND * cfg.d_model * (D_STATE + D_CONV - 1) * cfg.n_layers

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
