"""Chapter 6 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

import torch

from bwt_lite.exercises.primitives import (blind_plateau, check_blind_plateau, check_lstm_params,
                                           lstm_backbone_params)
from bwt_lite.models import ModelConfig, build_model


def right_lstm(d, n):
    return n * (4 * d * (d + d) + 8 * d)


def test_lstm_reference_counts_the_backbone_of_a_real_model():
    cfg = ModelConfig(arch="lstm", d_model=16, n_layers=2, vocab_size=5, n_positions=7, n_outputs=3)
    model = build_model(cfg)
    lstm = sum(p.numel() for m in model.modules() if isinstance(m, torch.nn.LSTM) for p in m.parameters())
    assert lstm_backbone_params(16, 2) == lstm == right_lstm(16, 2)


def test_lstm_checker(capsys):
    assert check_lstm_params(right_lstm)
    assert "per layer" in capsys.readouterr().out
    assert check_lstm_params(lambda d, n: float(right_lstm(d, n)))  # a whole float is accepted
    assert not check_lstm_params(lambda d, n: n * (8 * d * d + 4 * d))
    assert "two bias" in capsys.readouterr().out
    assert not check_lstm_params(lambda d, n: n * (2 * d * d + 2 * d))
    assert "four gates" in capsys.readouterr().out
    assert not check_lstm_params(lambda d, n: 8 * d * d + 8 * d)
    assert "one layer" in capsys.readouterr().out
    assert not check_lstm_params(lambda d, n: n * 8 * d * d)
    assert "biases" in capsys.readouterr().out
    assert not check_lstm_params(lambda d, n: right_lstm(d, n) + 0.5)
    assert "whole number" in capsys.readouterr().out
    assert not check_lstm_params(lambda d, n: None)
    assert not check_lstm_params(lambda d, n: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out


def right_plateau(V):
    return sum(math.log2(V / (V - t)) for t in range(V - 1)) / (V - 1)


def test_blind_plateau_reference():
    assert math.isclose(blind_plateau(20), 1.107, abs_tol=5e-4)  # the 1.107-bit context-blind plateau
    assert blind_plateau(2) == 0.0  # one key position, where Bayes is uniform too
    for V in (3, 7, 20):
        assert math.isclose(blind_plateau(V), right_plateau(V), rel_tol=1e-12)


def test_blind_plateau_checker(capsys):
    assert check_blind_plateau(right_plateau)
    assert "1.1073" in capsys.readouterr().out
    assert not check_blind_plateau(lambda V: sum(math.log2(V / (V - t)) for t in range(V)) / V)
    assert "V - 1 key positions" in capsys.readouterr().out
    assert not check_blind_plateau(lambda V: math.log2(V))
    assert "Subtract" in capsys.readouterr().out
    assert not check_blind_plateau(lambda V: right_plateau(V) * math.log(2))
    assert "nats" in capsys.readouterr().out
    assert not check_blind_plateau(lambda V: "x")
    assert not check_blind_plateau(lambda V: [][0])
    assert "IndexError" in capsys.readouterr().out
