"""Paper II's gradient anatomy: the closed-form score and value gradients equal autograd's."""
import pytest
import torch

from bwt_lite.dynamics.gradients import (
    SingleHead,
    advantage,
    autograd_gradients,
    closed_form_gradients,
    cross_entropy,
    free_score_descent,
    head_forward,
    score_gradient,
    upstream_errors,
    value_gradient,
)
from conftest import gen

SHAPES = [  # (leading batch dims, T, d_x, d_k, d_v, C)
    ((), 1, 3, 2, 2, 2),
    ((), 7, 5, 3, 4, 3),
    ((4,), 9, 20, 10, 15, 8),  # the paper's sizes
    ((2, 3), 6, 4, 8, 3, 5),
    ((3,), 16, 6, 1, 1, 4),
]


def instance(lead, T, d_x, d_k, d_v, C, causal, seed):
    g = gen(seed)
    head = SingleHead(d_x, d_k, d_v, C, causal=causal, init_std=0.7, seed=seed, dtype=torch.float64)
    x = torch.randn(*lead, T, d_x, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (*lead, T), generator=g)
    return head, x, y


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, (*s[0], *s[1:]))))
def test_closed_form_equals_autograd(shape, causal):
    for seed in range(3):
        head, x, y = instance(*shape, causal, seed)
        closed, auto = closed_form_gradients(head, x, y), autograd_gradients(head, x, y)
        for name in ("scores", "values", "W_Q", "W_K", "W_V", "W_O"):
            assert closed[name].shape == auto[name].shape, name
            err = (closed[name] - auto[name]).abs().max().item()
            assert err < 1e-6, (name, err)
            assert err < 1e-12 * max(1.0, auto[name].abs().max().item()) + 1e-15, (name, err)  # float64 rounding
        if causal:  # no gradient reaches a score the mask removed
            T = x.shape[-2]
            above = ~torch.ones(T, T, dtype=torch.bool).tril()
            assert (closed["scores"][..., above] == 0).all() and (auto["scores"][..., above] == 0).all()


def test_the_papers_model_has_820_parameters():
    head = SingleHead()
    assert head.n_params == 820 and head.W_Q.dtype == torch.float32
    assert torch.equal(SingleHead(seed=3).W_V, SingleHead(seed=3).W_V)
    assert not torch.equal(SingleHead(seed=3).W_V, SingleHead(seed=4).W_V)


def test_routing_law_properties():
    head, x, y = instance((5,), 12, 6, 4, 5, 3, True, 11)
    f = head.parts(x)
    u = upstream_errors(f.logits, y, head.W_O)
    ds = score_gradient(f.alpha, u, f.v)
    # softmax is shift-invariant: each row of the score gradient sums to zero
    assert ds.sum(-1).abs().max() < 1e-15
    # the advantage is minus the centred b: attention grows (ds < 0) exactly where the advantage is > 0
    A = advantage(f.alpha, u, f.v)
    assert torch.allclose(ds, -f.alpha * A, atol=1e-18, rtol=0)
    assert ((f.alpha * A).sum(-1).abs() < 1e-15).all()  # zero-mean under alpha
    # a small descent step on the scores alone moves attention mass towards positive advantage
    eta = 1e-3
    s_new = f.scores - eta * ds
    allowed = torch.ones(12, 12, dtype=torch.bool).tril()
    alpha_new = s_new.masked_fill(~allowed, float("-inf")).softmax(-1)
    gain = ((alpha_new - f.alpha) * A).sum(-1)
    assert (gain >= -1e-18).all() and gain.sum() > 0
    # the responsibility-weighted value gradient, written as a loop
    dv = value_gradient(f.alpha, u)
    loop = torch.stack([sum(f.alpha[..., i, j, None] * u[..., i, :] for i in range(12)) for j in range(12)], -2)
    assert torch.allclose(dv, loop, atol=1e-15, rtol=0)


def test_functional_forward_matches_the_module_and_broadcasts_over_runs():
    head, x, y = instance((3,), 5, 4, 2, 3, 2, True, 1)
    f = head_forward(x, head.W_Q, head.W_K, head.W_V, head.W_O)
    assert torch.equal(f.logits, head(x))
    # two runs at once: weights with a leading run dim against inputs (runs, batch, T, d_x)
    W = [torch.stack([w, 2 * w]) for w in (head.W_Q, head.W_K, head.W_V, head.W_O)]
    both = head_forward(torch.stack([x, x]), *W)
    assert torch.allclose(both.logits[0], f.logits, atol=1e-14, rtol=0)
    second = head_forward(x, *(w[1] for w in W))
    assert torch.allclose(both.logits[1], second.logits, atol=1e-14, rtol=0)
    assert both.alpha.shape == (2, 3, 5, 5) and torch.allclose(both.alpha.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match="run dimension"):
        head_forward(torch.stack([x, x, x]), *W)


def test_cross_entropy_and_errors():
    head, x, y = instance((2,), 4, 3, 2, 2, 3, True, 0)
    logits = head(x)
    assert logits.shape == (2, 4, 3) and head(x, torch.tensor([1, 3])).shape == (2, 2, 3)
    assert torch.allclose(cross_entropy(logits, y),
                          torch.nn.functional.cross_entropy(logits.reshape(-1, 3), y.reshape(-1)))
    with pytest.raises(ValueError, match="target must have shape"):
        cross_entropy(logits, y[:, :2])
    with pytest.raises(ValueError, match="target must have shape"):
        upstream_errors(logits, y[0], head.W_O)
    with pytest.raises(ValueError, match=r"x must have shape \(..., T, d_x\)"):
        head(torch.zeros(2, 4, 5, dtype=torch.float64))
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        head(torch.zeros(2, 4, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="alpha must be"):
        score_gradient(torch.zeros(4, 3), torch.zeros(5, 2), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="v must be"):
        score_gradient(torch.zeros(4, 4), torch.zeros(4, 2), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="a soft target must have the shape"):
        upstream_errors(logits, torch.full((2, 4, 2), 0.5), head.W_O)
    with pytest.raises(ValueError, match="d_k must be >= 1"):
        SingleHead(d_k=0)


def test_soft_target_upstream_error():
    head, x, y = instance((2,), 5, 3, 2, 2, 4, True, 2)
    logits = head(x)
    onehot = torch.nn.functional.one_hot(y, 4).double()
    assert torch.allclose(upstream_errors(logits, onehot, head.W_O), upstream_errors(logits, y, head.W_O))


def test_free_score_descent_moves_attention_to_positive_advantage():
    g = gen(5)
    values = torch.randn(6, 4, generator=g, dtype=torch.float64)
    W_O = torch.randn(4, 3, generator=g, dtype=torch.float64)
    target = torch.tensor([0.7, 0.2, 0.1], dtype=torch.float64)
    tr = free_score_descent(values, W_O, target, steps=200, lr=2.0)
    assert tr.alpha.shape == tr.advantage.shape == (201, 6) and tr.loss.shape == (201,)
    assert torch.allclose(tr.alpha[0], torch.full((6,), 1 / 6, dtype=torch.float64))
    assert (tr.loss[1:] <= tr.loss[:-1] + 1e-12).all() and tr.loss[-1] < tr.loss[0]  # descent
    step = tr.alpha[1] - tr.alpha[0]
    assert (torch.sign(step) == torch.sign(tr.advantage[0])).all()  # first step: mass moves with the advantage
    # the advantage is centred under the current attention at every step
    assert (tr.alpha * tr.advantage).sum(-1).abs().max() < 1e-12
    # the same loss by autograd on the scores: its gradient is the law's
    s = torch.zeros(6, dtype=torch.float64, requires_grad=True)
    loss = -(target * ((s.softmax(-1) @ values) @ W_O).log_softmax(-1)).sum()
    (grad,) = torch.autograd.grad(loss, s)
    assert torch.allclose(-grad, tr.alpha[0] * tr.advantage[0], atol=1e-15, rtol=0)
    hard = free_score_descent(values, W_O, 2, steps=3, lr=1.0)
    assert hard.loss[-1] < hard.loss[0]
    with pytest.raises(ValueError, match="target must be a class"):
        free_score_descent(values, W_O, 3)
    with pytest.raises(ValueError, match="distribution over the C = 3 classes"):
        free_score_descent(values, W_O, torch.tensor([0.5, 0.1, 0.1], dtype=torch.float64))
    with pytest.raises(ValueError, match="values must be"):
        free_score_descent(values, W_O.T, 0)
