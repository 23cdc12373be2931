"""Chapter 4 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

import numpy as np
import torch

from bwt_lite.exercises.recall import (check_expected_bayes_entropy, check_expected_recalls, check_mlp_recall,
                                       check_recall_posterior)


def right_posterior(keys, values, V):
    out = torch.full((len(keys), V), 1.0 / V, dtype=torch.float64)
    known = {}
    for t, k in enumerate(keys):
        if k in known:
            out[t] = 0.0
            out[t, known[k]] = 1.0
        known[k] = values[t]
    return out


def peeking_posterior(keys, values, V):
    return torch.nn.functional.one_hot(torch.tensor(values), V).double()


def eliminating_posterior(keys, values, V):
    out = right_posterior(keys, values, V)
    for t, k in enumerate(keys):
        if k not in keys[:t] and values[:t]:
            row = torch.ones(V, dtype=torch.float64)
            row[list(set(values[:t]))] = 0.0
            out[t] = row / row.sum() if row.sum() > 0 else torch.full((V,), 1.0 / V, dtype=torch.float64)
    return out


def test_posterior_checker(capsys):
    assert check_recall_posterior(right_posterior)
    assert "exact" in capsys.readouterr().out
    assert check_recall_posterior(lambda k, v, V: right_posterior(k, v, V).float().numpy())  # float32, numpy
    assert not check_recall_posterior(lambda k, v, V: torch.full((len(k), V), 1.0 / V))
    assert "point mass" in capsys.readouterr().out
    assert not check_recall_posterior(peeking_posterior)
    assert "only after this prediction" in capsys.readouterr().out
    assert not check_recall_posterior(eliminating_posterior)
    assert "bijection" in capsys.readouterr().out
    assert not check_recall_posterior(lambda k, v, V: right_posterior(k, v, V) * 2)
    assert "sum to" in capsys.readouterr().out
    assert not check_recall_posterior(lambda k, v, V: right_posterior(k, v, V)[:-1])
    assert "shape" in capsys.readouterr().out
    assert not check_recall_posterior(lambda k, v, V: None)
    assert not check_recall_posterior(lambda k, v, V: "not numbers")
    assert not check_recall_posterior(lambda k, v, V: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out


def right_recalls(V, L):
    return L - V * (1 - (1 - 1 / V) ** L)


def right_entropy(V, L):
    return math.log2(V) * V * (1 - (1 - 1 / V) ** L) / L


def test_expected_recalls_checker(capsys):
    assert check_expected_recalls(right_recalls)
    assert "sampled episodes average" in capsys.readouterr().out
    assert check_expected_recalls(lambda V, L: np.float32(right_recalls(V, L)))  # a numpy float32 is accepted
    assert not check_expected_recalls(lambda V, L: sum(1 - (1 - 1 / V) ** (t + 1) for t in range(L)))
    assert "Off by one" in capsys.readouterr().out
    assert not check_expected_recalls(lambda V, L: V * (1 - (1 - 1 / V) ** L))
    assert "distinct" in capsys.readouterr().out
    assert not check_expected_recalls(lambda V, L: right_recalls(V, L) / L)
    assert "fraction" in capsys.readouterr().out
    assert not check_expected_recalls(lambda V, L: None)
    assert not check_expected_recalls(lambda V, L: [1, 2])
    assert not check_expected_recalls(lambda V, L: float("nan"))


def test_expected_entropy_checker(capsys):
    assert check_expected_bayes_entropy(right_entropy)
    assert "sampled episodes average" in capsys.readouterr().out
    assert not check_expected_bayes_entropy(lambda V, L: right_entropy(V, L) * math.log(2))
    assert "nats" in capsys.readouterr().out
    assert not check_expected_bayes_entropy(lambda V, L: right_entropy(V, L) * L)
    assert "sum over positions" in capsys.readouterr().out
    assert not check_expected_bayes_entropy(lambda V, L: math.log2(V) - right_entropy(V, L))
    assert "Swapped" in capsys.readouterr().out
    assert not check_expected_bayes_entropy(lambda V, L: math.log2(V))
    assert not check_expected_bayes_entropy(lambda V, L: 1 / 0)


def test_mlp_checker(capsys):
    assert check_mlp_recall(lambda V, L: (1 / V, math.log2(V) - right_entropy(V, L)))
    assert "plateau" in capsys.readouterr().out
    assert not check_mlp_recall(lambda V, L: (0.0, math.log2(V) - right_entropy(V, L)))
    assert "uniform and independent" in capsys.readouterr().out
    assert not check_mlp_recall(lambda V, L: (100 / V, math.log2(V) - right_entropy(V, L)))
    assert "percentage" in capsys.readouterr().out
    assert not check_mlp_recall(lambda V, L: (1 / V, math.log2(V)))
    assert "new keys" in capsys.readouterr().out
    assert not check_mlp_recall(lambda V, L: (1 / V, right_entropy(V, L)))
    assert "mean Bayes entropy" in capsys.readouterr().out
    assert not check_mlp_recall(lambda V, L: 1 / V)
    assert "pair" in capsys.readouterr().out
    assert not check_mlp_recall(lambda V, L: (None, 0.0))
