"""Chapter 2 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

import torch

from bwt_lite.exercises.learning import check_entropy_mae, check_kl_bits, check_leak_entropy


def test_entropy_mae_checker(capsys):
    assert check_entropy_mae(lambda hm, hb: float((hm - hb).abs().mean()))
    assert not check_entropy_mae(lambda hm, hb: float((hm.mean(0) - hb.mean(0)).abs().mean()))
    assert "difference of means" in capsys.readouterr().out
    assert not check_entropy_mae(lambda hm, hb: float((hm - hb).mean()))
    assert "absolute value" in capsys.readouterr().out
    assert not check_entropy_mae(lambda hm, hb: None)
    assert not check_entropy_mae(lambda hm, hb: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out


def right_kl(p, logits):
    lq = torch.log_softmax(logits.double(), -1) / math.log(2)
    lp = torch.log2(torch.where(p > 0, p, torch.ones_like(p)))
    return (p * (lp - lq)).sum(-1)


def test_kl_checker(capsys):
    assert check_kl_bits(right_kl)
    assert not check_kl_bits(lambda p, l: right_kl(p, l) * math.log(2))
    assert "nats" in capsys.readouterr().out
    assert not check_kl_bits(lambda p, l: (p * (p.log2() - torch.log_softmax(l.double(), -1) / math.log(2))).sum(-1))
    assert "NaN" in capsys.readouterr().out
    assert not check_kl_bits(lambda p, l: torch.zeros(p.shape[:-1]))
    assert not check_kl_bits(lambda p, l: 0.0)


def right_leak(n_ok, n_bad, eps):
    h = -(1 - eps) * math.log2((1 - eps) / n_ok)
    return h - (eps * math.log2(eps / n_bad) if eps > 0 else 0.0)


def test_leak_checker(capsys):
    assert check_leak_entropy(right_leak)
    assert not check_leak_entropy(lambda a, b, e: math.log2(a))
    assert not check_leak_entropy(lambda a, b, e: right_leak(a, b, e) * math.log(2))
    assert "nats" in capsys.readouterr().out
    assert not check_leak_entropy(lambda a, b, e: None)
