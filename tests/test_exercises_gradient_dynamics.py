"""Chapter 11 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

import torch

from bwt_lite.exercises.gradient_dynamics import (
    check_score_gradient,
    check_sticky_predictive,
    check_value_gradient,
)


def score_grad(alpha, u, v):
    b = u @ v.T
    return alpha * (b - (alpha * b).sum(-1, keepdim=True))


def test_score_gradient_accepts_solutions(capsys):
    assert check_score_gradient(score_grad)
    assert "Correct!" in capsys.readouterr().out
    assert check_score_gradient(lambda a, u, v: score_grad(a, u, v).float().numpy())  # float32 is close enough
    # the same law written with the softmax Jacobian, by autograd
    def by_autograd(alpha, u, v):
        s = torch.log(alpha.clamp_min(1e-300)).requires_grad_(True)
        z = s.softmax(-1) @ v
        (g,) = torch.autograd.grad((z * u).sum(), s)
        return g
    assert check_score_gradient(by_autograd)


def test_score_gradient_rejects_typical_mistakes(capsys):
    cases = [
        (lambda a, u, v: a * (u @ v.T), "forgot to centre"),
        (lambda a, u, v: (u @ v.T) - (a * (u @ v.T)).sum(-1, keepdim=True), "forgot the factor alpha_ij"),
        (lambda a, u, v: -score_grad(a, u, v), "sign is flipped"),
        (lambda a, u, v: a * ((u @ v.T) - (u @ v.T).mean(-1, keepdim=True)), "plain mean"),
        (lambda a, u, v: a * ((u @ v.T).T - (a * (u @ v.T).T).sum(-1, keepdim=True)), "transposed"),
        (lambda a, u, v: torch.zeros_like(a), "expected row 0"),
        (lambda a, u, v: None, "returned None"),
        (lambda a, u, v: a[:1], "shape"),
        (lambda a, u, v: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_score_gradient(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def test_value_gradient(capsys):
    assert check_value_gradient(lambda a, u: a.T @ u)
    assert check_value_gradient(lambda a, u: torch.einsum("ij,id->jd", a, u).tolist())
    assert "Correct!" in capsys.readouterr().out
    cases = [
        (lambda a, u: a @ u, "alpha.T @ u"),
        (lambda a, u: -(a.T @ u), "sign is flipped"),
        (lambda a, u: u.sum(0, keepdim=True).expand_as(u), "responsibility"),
        (lambda a, u: u, "expected row 0"),
        (lambda a, u: (a.T @ u)[:, :1], "shape"),
    ]
    for fn, hint in cases:
        assert not check_value_gradient(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def forward_predictive(x, T, means, noise):
    S = T.shape[0]
    loglik = -((x.double().unsqueeze(1) - means) ** 2).sum(-1) / (2 * noise ** 2)  # (L, S)
    log_b = torch.full((S,), -math.log(S), dtype=torch.float64)
    rows = []
    for t in range(x.shape[0]):
        if t > 0:
            log_b = torch.logsumexp(log_b.unsqueeze(1) + T.log(), 0)
        log_b = log_b + loglik[t]
        log_b = log_b - torch.logsumexp(log_b, 0)
        rows.append(log_b.exp() @ T)
    return torch.stack(rows)


def naive_predictive(x, T, means, noise):
    """Probabilities, not logs: fine here (short sequences), normalised at every step."""
    S = T.shape[0]
    b = torch.full((S,), 1.0 / S, dtype=torch.float64)
    rows = []
    for t in range(x.shape[0]):
        if t > 0:
            b = b @ T
        lik = torch.exp(-((x[t].double() - means) ** 2).sum(-1) / (2 * noise ** 2) + 0.0)
        b = b * lik / (b * lik).sum()
        rows.append(b @ T)
    return torch.stack(rows)


def test_sticky_predictive_accepts_solutions(capsys):
    assert check_sticky_predictive(forward_predictive)
    assert check_sticky_predictive(naive_predictive)
    assert "Correct!" in capsys.readouterr().out


def test_sticky_predictive_rejects_typical_mistakes(capsys):
    def filt(x, T, means, noise):
        return forward_predictive(x, T, means, noise) @ torch.linalg.inv(T)

    def current_only(x, T, means, noise):
        lik = (-((x.double().unsqueeze(1) - means) ** 2).sum(-1) / (2 * noise ** 2)).softmax(-1)
        return lik @ T

    def argmax_row(x, T, means, noise):
        lik = -((x.double().unsqueeze(1) - means) ** 2).sum(-1)
        return T[lik.argmax(-1)]

    cases = [
        (filt, "filtering posterior of the *current* symbol"),
        (current_only, "you used only the current token"),
        (lambda x, T, m, n: (-((x.double().unsqueeze(1) - m) ** 2).sum(-1) / (2 * n ** 2)).softmax(-1), "likelihood"),
        (argmax_row, "most likely symbol"),
        (lambda x, T, m, n: 2 * forward_predictive(x, T, m, n), "do not sum to 1"),
        (lambda x, T, m, n: forward_predictive(x, T, m, 2 * n), "first wrong at t ="),
        (lambda x, T, m, n: forward_predictive(x, T, m, n)[:-1], "shape"),
        (lambda x, T, m, n: None, "returned None"),
    ]
    for fn, hint in cases:
        assert not check_sticky_predictive(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)
