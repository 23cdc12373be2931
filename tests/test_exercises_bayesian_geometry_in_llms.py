"""Chapter 12 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

import torch

from bwt_lite.exercises.bayesian_geometry_in_llms import (
    check_mean_abs_cosine,
    check_participation_ratio,
    check_sula_posterior,
)


def posterior(shown, a):
    m, n = shown.count(0), shown.count(1)
    return 1 / (1 + math.exp(-(m - n) * math.log(a / (1 - a))))


def test_sula_posterior_checker(capsys):
    assert check_sula_posterior(posterior)
    assert check_sula_posterior(lambda s, a: torch.tensor([posterior(s, a)]))
    assert "Correct!" in capsys.readouterr().out
    cases = [
        (lambda s, a: a * posterior(s, a) + (1 - a) * (1 - posterior(s, a)), "predictive"),
        (lambda s, a: 1 - posterior(s, a), "P(hidden label = 1)"),
        (lambda s, a: s.count(0) / len(s) if s else 0.5, "frequency"),
        (lambda s, a: 0.5 * a ** s.count(0) * (1 - a) ** s.count(1), "not normalised"),
        (lambda s, a: 0.5, "expected"),
        (lambda s, a: None, "returned None"),
        (lambda s, a: [0.1, 0.9], "shape"),
        (lambda s, a: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_sula_posterior(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def mean_abs_cos(k):
    u = k / k.norm(dim=-1, keepdim=True)
    c = (u @ u.T).abs()
    n = k.shape[0]
    return (c.sum() - c.diagonal().sum()) / (n * (n - 1))


def test_mean_abs_cosine_checker(capsys):
    assert check_mean_abs_cosine(mean_abs_cos)
    assert check_mean_abs_cosine(lambda k: float(mean_abs_cos(k)))
    assert "Correct!" in capsys.readouterr().out
    def signed(k):
        u = k / k.norm(dim=-1, keepdim=True)
        c = u @ u.T
        return c[~torch.eye(len(k), dtype=torch.bool)].mean()
    cases = [
        (lambda k: (torch.nn.functional.normalize(k, dim=-1) @ torch.nn.functional.normalize(k, dim=-1).T).abs().mean(), "diagonal"),
        (signed, "absolute value"),
        (lambda k: (k @ k.T).abs()[~torch.eye(len(k), dtype=torch.bool)].mean(), "normalise"),
        (lambda k: 0.0, "expected"),
        (lambda k: k, "shape"),
    ]
    for fn, hint in cases:
        assert not check_mean_abs_cosine(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def pr(x):
    lam = torch.linalg.svdvals(x - x.mean(0)) ** 2
    return lam.sum() ** 2 / (lam ** 2).sum()


def test_participation_ratio_checker(capsys):
    assert check_participation_ratio(pr)
    # the same through the covariance matrix's eigenvalues
    assert check_participation_ratio(lambda x: (lambda e: e.sum() ** 2 / (e ** 2).sum())(torch.linalg.eigvalsh(torch.cov(x.T))))
    assert "Correct!" in capsys.readouterr().out
    cases = [
        (lambda x: (lambda s: (s ** 2).sum() ** 2 / (s ** 4).sum())(torch.linalg.svdvals(x)), "centre"),
        (lambda x: (lambda s: s.sum() ** 2 / (s ** 2).sum())(torch.linalg.svdvals(x - x.mean(0))), "squared singular"),
        (lambda x: (lambda s: s[0] ** 2 / (s ** 2).sum())(torch.linalg.svdvals(x - x.mean(0))), "PC1"),
        (lambda x: 1.0, "expected"),
        (lambda x: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_participation_ratio(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)
