"""Chapter 5 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

import torch

from bwt_lite.exercises.regression import (check_gaussian_entropy, check_gaussian_kl, check_posterior_predictive,
                                           check_prior_baseline_mae)


# ---------------------------------------------------------------- exercise 5.1: posterior predictive

def predictive(X, y, x_new, tau, sigma, prior_prec=None, noise=None, mean_div=True):
    """The textbook formulas with explicit inverses, parametrised to produce typical mistakes."""
    d = X.shape[1]
    prior_prec = 1 / tau ** 2 if prior_prec is None else prior_prec
    noise = sigma ** 2 if noise is None else noise
    Sigma = torch.linalg.inv(prior_prec * torch.eye(d, dtype=torch.float64) + X.T @ X / noise)
    mu = Sigma @ X.T @ y / (noise if mean_div else 1.0)
    return x_new @ mu, noise + x_new @ Sigma @ x_new


def test_predictive_checker_accepts_solutions(capsys):
    assert check_posterior_predictive(predictive)
    assert "Correct!" in capsys.readouterr().out
    # returning Python floats, and float32 arithmetic, are fine too
    assert check_posterior_predictive(lambda *a: tuple(float(t) for t in predictive(*a)))


def test_predictive_checker_rejects_mistakes(capsys):
    def no_noise(X, y, x, tau, sigma):
        m, v = predictive(X, y, x, tau, sigma)
        return m, v - sigma ** 2
    assert not check_posterior_predictive(no_noise)
    assert "add sigma^2" in capsys.readouterr().out

    def sd(X, y, x, tau, sigma):
        m, v = predictive(X, y, x, tau, sigma)
        return m, v.sqrt()
    assert not check_posterior_predictive(sd)
    assert "standard deviation" in capsys.readouterr().out

    assert not check_posterior_predictive(lambda X, y, x, t, s: predictive(X, y, x, t, s, prior_prec=t ** 2))
    assert "I / tau^2" in capsys.readouterr().out

    assert not check_posterior_predictive(lambda X, y, x, t, s: predictive(X, y, x, t, s, mean_div=False))
    assert "1/sigma^2" in capsys.readouterr().out

    assert not check_posterior_predictive(lambda X, y, x, t, s: predictive(X, y, x, s, t))
    assert "swapped" in capsys.readouterr().out

    def least_squares(X, y, x, tau, sigma):  # ignores the prior: fails on an empty context
        w = torch.linalg.inv(X.T @ X) @ X.T @ y
        return x @ w, sigma ** 2
    assert not check_posterior_predictive(least_squares)
    out = capsys.readouterr().out
    assert "raised" in out and "n = 0" in out

    assert not check_posterior_predictive(lambda X, y, x, t, s: (torch.tensor(0.0), torch.tensor(1.0)))
    assert "Not yet" in capsys.readouterr().out
    assert not check_posterior_predictive(lambda *a: None)
    assert "pair" in capsys.readouterr().out
    assert not check_posterior_predictive(lambda *a: (float("nan"), 1.0))
    assert not check_posterior_predictive(lambda *a: (torch.zeros(3), torch.ones(3)))


# ---------------------------------------------------------------- exercise 5.2: entropy and KL

def entropy(var):
    return 0.5 * torch.log2(2 * math.pi * math.e * var)


def kl(mp, vp, mq, vq):
    return 0.5 * (vp / vq - 1 - torch.log(vp / vq) + (mp - mq) ** 2 / vq) / math.log(2)


def test_entropy_checker(capsys):
    assert check_gaussian_entropy(entropy)
    assert "negative" in capsys.readouterr().out
    assert not check_gaussian_entropy(lambda v: entropy(v) * math.log(2))
    assert "nats" in capsys.readouterr().out
    assert not check_gaussian_entropy(lambda v: entropy(v).clamp_min(0))
    assert "negative" in capsys.readouterr().out
    assert not check_gaussian_entropy(lambda v: 0.5 * torch.log2(2 * math.pi * math.e * v.sqrt()))
    assert "standard deviation" in capsys.readouterr().out
    assert not check_gaussian_entropy(lambda v: torch.log2(2 * math.pi * math.e * v))
    assert "1/2" in capsys.readouterr().out
    assert not check_gaussian_entropy(lambda v: 0.5 * torch.log2(2 * math.pi * v))
    assert "missing the e" in capsys.readouterr().out
    assert not check_gaussian_entropy(lambda v: None)
    assert not check_gaussian_entropy(lambda v: entropy(v).mean())
    assert "shape" in capsys.readouterr().out
    assert not check_gaussian_entropy(lambda v: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_kl_checker(capsys):
    assert check_gaussian_kl(kl)
    assert "Correct!" in capsys.readouterr().out
    assert not check_gaussian_kl(lambda *a: kl(*a) * math.log(2))
    assert "nats" in capsys.readouterr().out
    assert not check_gaussian_kl(lambda mp, vp, mq, vq: kl(mq, vq, mp, vp))
    assert "KL(q || p)" in capsys.readouterr().out
    assert not check_gaussian_kl(lambda mp, vp, mq, vq: kl(mp, vp, mp, vq))
    assert "mean term" in capsys.readouterr().out
    assert not check_gaussian_kl(lambda *a: kl(*a) + 0.5 / math.log(2))
    assert "-1" in capsys.readouterr().out
    assert not check_gaussian_kl(lambda mp, vp, mq, vq: kl(mp, vp.sqrt(), mq, vq.sqrt()))
    assert "standard deviations" in capsys.readouterr().out
    assert not check_gaussian_kl(lambda mp, vp, mq, vq: torch.zeros_like(mp))
    assert "Not yet" in capsys.readouterr().out
    assert not check_gaussian_kl(lambda *a: None)


# ---------------------------------------------------------------- exercise 5.3: the MLP's best

def baseline_mae(x, var_bayes, tau, sigma):
    var_prior = sigma ** 2 + tau ** 2 * (x ** 2).sum(-1)
    return float((0.5 * torch.log2(var_prior / var_bayes)).abs().mean())


def test_baseline_checker(capsys):
    assert check_prior_baseline_mae(baseline_mae)
    assert "Correct!" in capsys.readouterr().out
    assert not check_prior_baseline_mae(lambda x, v, t, s: baseline_mae(x, v, t, s) * math.log(2))
    assert "nats" in capsys.readouterr().out

    # (no "difference of means" case: the prior is never sharper than the posterior, so every signed
    # error is >= 0 and the variants coincide for this baseline)
    assert not check_prior_baseline_mae(lambda x, v, t, s: float((0.5 * torch.log2(s ** 2 / v)).abs().mean()))
    assert "noise floor" in capsys.readouterr().out
    assert not check_prior_baseline_mae(lambda x, v, t, s: baseline_mae(x, v, t, 1e-12))
    assert "left out the noise" in capsys.readouterr().out
    assert not check_prior_baseline_mae(lambda x, v, t, s: baseline_mae(x, v, math.sqrt(t), s))
    assert "squares" in capsys.readouterr().out
    assert not check_prior_baseline_mae(lambda x, v, t, s: (0.5 * torch.log2((s ** 2 + t ** 2 * (x ** 2).sum(-1)) / v)).abs().mean(0))
    assert "one number" in capsys.readouterr().out
    assert not check_prior_baseline_mae(lambda x, v, t, s: None)
    assert not check_prior_baseline_mae(lambda x, v, t, s: 0.0)
    assert "expected" in capsys.readouterr().out
