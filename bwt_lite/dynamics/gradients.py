"""Gradient anatomy of one attention head trained with cross-entropy (Paper II), in closed form and
by autograd.

The head (the paper's single-head model, :class:`SingleHead`): for inputs ``x`` (..., T, d_x),
``q = x W_Q``, ``k = x W_K``, ``v = x W_V``, scores ``s_ij = q_i . k_j / sqrt(d_k)`` (``-inf`` above
the diagonal when causal), attention ``alpha_i = softmax(s_i)``, output ``z_i = sum_j alpha_ij v_j``
and logits ``z_i W_O``; the loss is the cross-entropy of the targets, averaged over all N predictions.

With the upstream error ``u_i = dL/dz_i = (softmax(logits_i) - onehot(y_i)) W_O^T / N``
(:func:`upstream_errors`) and ``b_ij = u_i . v_j``:

- score gradient, the *advantage-based routing law* (:func:`score_gradient`):
  ``dL/ds_ij = alpha_ij (b_ij - E_alpha_i[b])`` with ``E_alpha_i[b] = sum_k alpha_ik b_ik``;
  gradient descent raises ``s_ij`` exactly where ``b_ij`` is *below* its attention-weighted mean, i.e.
  where the value ``v_j`` points further than average along ``-u_i``, the direction that lowers
  the loss. :func:`advantage` returns that ``-(b_ij - E_alpha_i[b])``.
- value gradient, the *responsibility-weighted update* (:func:`value_gradient`):
  ``dL/dv_j = sum_i alpha_ij u_i``: every query that attends to ``j`` pulls ``v_j`` along its own
  error, weighted by how much it attends (its responsibility for ``j``).

:func:`closed_form_gradients` chains these to every weight; :func:`autograd_gradients` lets autograd
differentiate the same forward pass; the two agree to rounding (tested in float64).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..arguments import check_float_tensor, check_int


@dataclass
class HeadForward:
    """Every intermediate of one forward pass of a single head (leading dims ``...`` as in ``x``)."""

    q: Tensor  # (..., T, d_k)
    k: Tensor  # (..., T, d_k)
    v: Tensor  # (..., T, d_v) the value vectors v_j
    scores: Tensor  # (..., T, T) s_ij before the causal mask
    alpha: Tensor  # (..., T, T) attention weights (rows sum to 1; 0 above the diagonal when causal)
    z: Tensor  # (..., T, d_v) attention output z_i = sum_j alpha_ij v_j
    logits: Tensor  # (..., T, C)


def _project(x: Tensor, W: Tensor) -> Tensor:
    """``x @ W`` position-wise as one matrix product (per run when ``W`` has a leading run dim)."""
    if W.dim() == 2:
        return (x.reshape(-1, x.shape[-1]) @ W).reshape(*x.shape[:-1], W.shape[-1])
    if W.dim() != 3 or x.shape[0] != W.shape[0]:
        raise ValueError(f"a weight with a run dimension must be (R, a, b) with x (R, ..., a); got W "
                         f"{tuple(W.shape)}, x {tuple(x.shape)}")
    return torch.bmm(x.reshape(x.shape[0], -1, x.shape[-1]), W).reshape(*x.shape[:-1], W.shape[-1])


def head_forward(x: Tensor, W_Q: Tensor, W_K: Tensor, W_V: Tensor, W_O: Tensor, causal: bool = True) -> HeadForward:
    """One single-head forward pass. ``x`` (..., T, d_x); weights (d_x, d_k), (d_x, d_k), (d_x, d_v),
    (d_v, C); or, to run R independent heads at once, weights (R, d_x, d_k), ... with ``x`` (R, ..., T, d_x)."""
    q, k, v = _project(x, W_Q), _project(x, W_K), _project(x, W_V)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    T = x.shape[-2]
    masked = scores
    if causal:
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        masked = scores.masked_fill(~allowed, float("-inf"))
    alpha = masked.softmax(-1)
    z = alpha @ v
    return HeadForward(q=q, k=k, v=v, scores=scores, alpha=alpha, z=z, logits=_project(z, W_O))


class SingleHead(nn.Module):
    """The single-head model of Paper II: ``W_Q``, ``W_K`` (d_x x d_k), ``W_V`` (d_x x d_v) and the
    readout ``W_O`` (d_v x C), no biases, no position information; weights N(0, init_std^2).
    At the paper's sizes (d_x 20, d_k 10, d_v 15, C 8) it has 820 parameters."""

    def __init__(self, d_x: int = 20, d_k: int = 10, d_v: int = 15, n_classes: int = 8, *, causal: bool = True,
                 init_std: float = 0.1, seed: int = 0, dtype: torch.dtype = torch.float32):
        super().__init__()
        dims = {n: check_int(n, v, 1) for n, v in (("d_x", d_x), ("d_k", d_k), ("d_v", d_v), ("n_classes", n_classes))}
        g = torch.Generator().manual_seed(seed)
        shapes = {"W_Q": (d_x, d_k), "W_K": (d_x, d_k), "W_V": (d_x, d_v), "W_O": (d_v, n_classes)}
        for name, shape in shapes.items():
            self.register_parameter(name, nn.Parameter(torch.randn(*shape, generator=g, dtype=dtype) * init_std))
        self.causal, self.dims = causal, dims

    def parts(self, x: Tensor) -> HeadForward:
        """The forward pass with every intermediate; ``x`` (..., T, d_x)."""
        x = check_float_tensor("x", x)
        if x.dim() < 2 or x.shape[-1] != self.dims["d_x"]:
            raise ValueError(f"x must have shape (..., T, d_x) = (..., T, {self.dims['d_x']}), got {tuple(x.shape)}")
        return head_forward(x.to(self.W_Q.dtype), self.W_Q, self.W_K, self.W_V, self.W_O, self.causal)

    def forward(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        """Logits (..., T, C), or (..., P, C) at ``positions`` (the wind-tunnel model interface)."""
        logits = self.parts(x).logits
        return logits if positions is None else logits[..., positions, :]

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    """Mean cross-entropy (nats) over every prediction: ``logits`` (..., C), ``target`` (...) int64."""
    if logits.shape[:-1] != target.shape:
        raise ValueError(f"target must have shape {tuple(logits.shape[:-1])} (logits without C), got {tuple(target.shape)}")
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def upstream_errors(logits: Tensor, target: Tensor, W_O: Tensor) -> Tensor:
    """``u_i = dL/dz_i = (softmax(logits_i) - onehot(y_i)) W_O^T / N`` for the mean cross-entropy over
    all N predictions: (..., T, d_v). A floating-point ``target`` (..., T, C) is a soft target (a
    distribution per prediction) and replaces the one-hot."""
    if target.is_floating_point():
        if target.shape != logits.shape:
            raise ValueError(f"a soft target must have the shape of the logits {tuple(logits.shape)}, got {tuple(target.shape)}")
        err, n = logits.softmax(-1) - target.to(logits.dtype), target[..., 0].numel()
    else:
        if logits.shape[:-1] != target.shape:
            raise ValueError(f"target must have shape {tuple(logits.shape[:-1])} (logits without C), got {tuple(target.shape)}")
        err, n = logits.softmax(-1) - F.one_hot(target, logits.shape[-1]).to(logits.dtype), target.numel()
    return err @ W_O.transpose(-1, -2) / n


def _centred_b(alpha: Tensor, u: Tensor, v: Tensor | None = None) -> Tensor | None:
    """Check shapes (alpha (..., Tq, Tk), u (..., Tq, d), v (..., Tk, d)); return b - E_alpha[b]."""
    if alpha.dim() < 2 or u.shape[:-1] != alpha.shape[:-1]:
        raise ValueError(f"alpha must be (..., Tq, Tk) and u (..., Tq, d_v) with the same leading dims; "
                         f"got alpha {tuple(alpha.shape)}, u {tuple(u.shape)}")
    if v is None:
        return None
    if v.shape[:-2] != u.shape[:-2] or v.shape[-2] != alpha.shape[-1] or v.shape[-1] != u.shape[-1]:
        raise ValueError(f"v must be (..., Tk, d_v) = {(*u.shape[:-2], alpha.shape[-1], u.shape[-1])}, got {tuple(v.shape)}")
    b = u @ v.transpose(-1, -2)
    return b - (alpha * b).sum(-1, keepdim=True)


def score_gradient(alpha: Tensor, u: Tensor, v: Tensor) -> Tensor:
    """The advantage-based routing law: ``dL/ds_ij = alpha_ij (b_ij - sum_k alpha_ik b_ik)`` with
    ``b_ij = u_i . v_j``. ``alpha`` (..., Tq, Tk), ``u`` (..., Tq, d_v), ``v`` (..., Tk, d_v) -> (..., Tq, Tk)."""
    return alpha * _centred_b(alpha, u, v)


def advantage(alpha: Tensor, u: Tensor, v: Tensor) -> Tensor:
    """``A_ij = -(b_ij - E_alpha_i[b])``: how much better than the attention-weighted average value
    ``v_j`` is for query ``i`` (positive: a gradient step moves attention towards ``j``), (..., Tq, Tk)."""
    return -_centred_b(alpha, u, v)


def value_gradient(alpha: Tensor, u: Tensor) -> Tensor:
    """The responsibility-weighted update: ``dL/dv_j = sum_i alpha_ij u_i``, (..., Tk, d_v)."""
    _centred_b(alpha, u)
    return alpha.transpose(-1, -2) @ u


def _weight_grad(inp: Tensor, grad_out: Tensor) -> Tensor:
    """``sum over every position of inp^T grad_out`` for a linear map applied position-wise."""
    return inp.reshape(-1, inp.shape[-1]).transpose(0, 1) @ grad_out.reshape(-1, grad_out.shape[-1])


def closed_form_gradients(head: SingleHead, x: Tensor, target: Tensor) -> dict[str, Tensor]:
    """Gradients of the mean cross-entropy by the formulas above, chained to every weight.

    Returns ``scores`` (dL/ds, (..., T, T)), ``values`` (dL/dv, (..., T, d_v)), ``upstream`` (u) and
    ``W_Q``, ``W_K``, ``W_V``, ``W_O``.
    """
    with torch.no_grad():
        f = head.parts(x)
        u = upstream_errors(f.logits, target, head.W_O)
        d_scores = score_gradient(f.alpha, u, f.v)
        d_values = value_gradient(f.alpha, u)
        scale = 1.0 / math.sqrt(f.q.shape[-1])
        d_q = d_scores @ f.k * scale  # s_ij = q_i . k_j / sqrt(d_k)
        d_k = d_scores.transpose(-1, -2) @ f.q * scale
        xs = x.to(head.W_Q.dtype)
        err = f.logits.softmax(-1) - F.one_hot(target, f.logits.shape[-1]).to(f.logits.dtype)
        return {
            "scores": d_scores, "values": d_values, "upstream": u,
            "W_Q": _weight_grad(xs, d_q), "W_K": _weight_grad(xs, d_k), "W_V": _weight_grad(xs, d_values),
            "W_O": _weight_grad(f.z, err) / target.numel(),
        }


def autograd_gradients(head: SingleHead, x: Tensor, target: Tensor) -> dict[str, Tensor]:
    """The same gradients as :func:`closed_form_gradients`, by autograd through the same forward pass
    (``scores`` and ``values``: the gradients with respect to those intermediates)."""
    f = head.parts(x)
    loss = cross_entropy(f.logits, target)
    grads = torch.autograd.grad(loss, [head.W_Q, head.W_K, head.W_V, head.W_O, f.scores, f.v])
    return dict(zip(["W_Q", "W_K", "W_V", "W_O", "scores", "values"], grads))


@dataclass
class ScoreDescent:
    """Gradient descent on one query's scores alone (the routing law at work), step by step."""

    alpha: Tensor  # (steps + 1, n_keys) attention weights before each step and after the last
    advantage: Tensor  # (steps + 1, n_keys) advantage of every key at that point
    loss: Tensor  # (steps + 1,) the query's cross-entropy (nats)
    lr: float


def free_score_descent(values: Tensor, W_O: Tensor, target: Tensor, steps: int = 50, lr: float = 1.0,
                       scores: Tensor | None = None) -> ScoreDescent:
    """Descend the cross-entropy of one query on its attention scores only, values and readout fixed.

    ``values`` (n, d_v) are the value vectors of the keys, ``W_O`` (d_v, C) the readout, ``target``
    a class index (int) or a distribution over the C classes (soft target), ``scores`` (n,) the
    starting scores (default 0: uniform attention). Each step is ``s <- s - lr * dL/ds`` with the
    closed-form routing law, so attention flows to the keys whose advantage is positive and the
    advantages re-centre as it moves.
    """
    values, W_O = check_float_tensor("values", values), check_float_tensor("W_O", W_O)
    check_int("steps", steps, 0)
    if values.dim() != 2 or W_O.dim() != 2 or W_O.shape[0] != values.shape[1]:
        raise ValueError(f"values must be (n, d_v) and W_O (d_v, C); got {tuple(values.shape)} and {tuple(W_O.shape)}")
    values, W_O = values.detach().to(torch.float64), W_O.detach().to(torch.float64)
    n, C = values.shape[0], W_O.shape[1]
    if isinstance(target, int) and not isinstance(target, bool):
        if not 0 <= target < C:
            raise ValueError(f"target must be a class in 0..{C - 1}, got {target}")
        target = F.one_hot(torch.tensor(target), C).to(torch.float64)
    target = check_float_tensor("target", target).detach().to(torch.float64)
    if target.shape != (C,) or (target < 0).any() or abs(target.sum().item() - 1) > 1e-9:
        raise ValueError(f"target must be a class index or a distribution over the C = {C} classes")
    s = torch.zeros(n, dtype=torch.float64) if scores is None else check_float_tensor("scores", scores).detach().to(torch.float64).clone()
    if s.shape != (n,):
        raise ValueError(f"scores must have shape (n,) = ({n},), got {tuple(s.shape)}")
    alphas, advs, losses = [], [], []
    for step in range(steps + 1):
        alpha = s.softmax(-1)
        logits = (alpha @ values) @ W_O
        u = upstream_errors(logits.view(1, C), target.view(1, C), W_O).view(-1)  # one prediction: N = 1
        A = advantage(alpha.view(1, n), u.view(1, -1), values)
        alphas.append(alpha)
        advs.append(A.view(-1))
        losses.append(-(target * logits.log_softmax(-1)).sum())
        if step < steps:
            s = s - lr * score_gradient(alpha.view(1, n), u.view(1, -1), values).view(-1)
    return ScoreDescent(alpha=torch.stack(alphas), advantage=torch.stack(advs), loss=torch.stack(losses), lr=lr)
