"""Chapter 1 checkers: a correct answer passes, typical wrong answers fail with a helpful message,
nothing raises; the notebook's solutions pass and its stand-ins fail."""
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from bwt_lite.exercises.bayes_by_hand import (check_entropy_staircase, check_mlp_plateau, check_posterior,
                                              check_replacement_posterior)

NOTEBOOK = Path(__file__).resolve().parent.parent / "chapters" / "01_bayes_by_hand.ipynb"


# Reference solutions ---------------------------------------------------------------------------

def posterior(keys, values, key, V):
    p = torch.ones(V, dtype=torch.float64)
    p[values] = 0.0
    return p / p.sum()


def replacement_posterior(keys, values, key, V):
    if key in keys:
        p = torch.zeros(V, dtype=torch.float64)
        p[values[keys.index(key)]] = 1.0
        return p
    return posterior(keys, values, key, V)


def staircase(V, L):
    return [math.log2(V - t) for t in range(L)]


def plateau(V, L):
    return sum(math.log2(V / (V - t)) for t in range(L)) / L


def run(checker, fn, capsys):
    ok = checker(fn)
    out = capsys.readouterr().out
    assert out.count("\n") == 1, "a checker prints exactly one line"
    return ok, out


def assert_fails(checker, fn, capsys, *fragments):
    ok, out = run(checker, fn, capsys)
    assert ok is False
    assert out.startswith("Not yet: ")
    for f in fragments:
        assert f in out, f"expected {f!r} in the message: {out}"


# Exercise 1.1 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    posterior,
    lambda k, v, key, V: posterior(k, v, key, V).float(),  # float32 is accepted
    lambda k, v, key, V: posterior(k, v, key, V).numpy(),  # numpy
    lambda k, v, key, V: posterior(k, v, key, V).tolist(),  # plain list
    replacement_posterior,  # also right without replacement
])
def test_check_posterior_accepts_correct_answers(fn, capsys):
    ok, out = run(check_posterior, fn, capsys)
    assert ok is True and out.startswith("Correct! ")


def test_check_posterior_uniform_over_all_values(capsys):
    assert_fails(check_posterior, lambda k, v, key, V: torch.full((V,), 1.0 / V), capsys,
                 "at step t = 1", "already revealed", "never maps two keys to the same value")


def test_check_posterior_unfinished_answers(capsys):
    assert_fails(check_posterior, lambda *a: None, capsys, "returned None")
    assert_fails(check_posterior, lambda k, v, key, V: 1 / 0, capsys, "raised ZeroDivisionError")
    assert_fails(check_posterior, lambda k, v, key, V: torch.zeros(V), capsys, "sum to 0")
    assert_fails(check_posterior, lambda k, v, key, V: torch.ones(V + 1) / (V + 1), capsys, "21 entries")
    assert_fails(check_posterior, lambda k, v, key, V: torch.ones(V, V) / V, capsys, "shape (20, 20)")
    assert_fails(check_posterior, lambda k, v, key, V: "uniform", capsys, "could not read")
    assert_fails(check_posterior, lambda k, v, key, V: torch.full((V,), float("nan")), capsys, "NaN")


def test_check_posterior_zero_on_a_possible_value(capsys):
    def forgets_one(keys, values, key, V):  # eliminates the current key's index as if it were a value
        p = torch.ones(V, dtype=torch.float64)
        p[values + [key]] = 0.0
        return p / p.sum()

    assert_fails(check_posterior, forgets_one, capsys, "has not been revealed yet", "you give it 0")


def test_check_posterior_not_uniform(capsys):
    def lopsided(keys, values, key, V):
        p = posterior(keys, values, key, V)
        p[int(p.argmax())] *= 2
        return p / p.sum()

    assert_fails(check_posterior, lopsided, capsys, "equally likely")


def test_check_posterior_negative(capsys):
    def negative(keys, values, key, V):
        p = posterior(keys, values, key, V)
        p[0], p[1] = p[0] - 0.5, p[1] + 0.5
        return p

    assert_fails(check_posterior, negative, capsys, "negative probability")


# Exercise 1.2 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [staircase, lambda V, L: torch.log2(V - torch.arange(L)), lambda V, L: np.log2(V - np.arange(L))])
def test_check_entropy_staircase_accepts(fn, capsys):
    ok, out = run(check_entropy_staircase, fn, capsys)
    assert ok is True and out.startswith("Correct! ")


def test_check_entropy_staircase_wrong(capsys):
    assert_fails(check_entropy_staircase, lambda V, L: [0.0] * L, capsys, "at step t = 0", "4.3219")
    assert_fails(check_entropy_staircase, lambda V, L: [math.log(V - t) for t in range(L)], capsys, "nats")
    assert_fails(check_entropy_staircase, lambda V, L: [math.log2(V - t) for t in range(1, L + 1)], capsys,
                 "one step early")
    assert_fails(check_entropy_staircase, lambda V, L: [1 / (V - t) for t in range(L)], capsys, "log2(n)")
    assert_fails(check_entropy_staircase, lambda V, L: [math.log2(V - t) for t in range(L + 1)], capsys,
                 "20 entries", "L = 19 numbers")
    assert_fails(check_entropy_staircase, lambda V, L: None, capsys, "returned None")
    assert_fails(check_entropy_staircase, lambda V, L: [math.log2(V - L + 1 + t) for t in range(L)], capsys,
                 "at step t = 0", "4.3219 bits, you give 1.0000")


def test_check_mlp_plateau_accepts(capsys):
    ok, out = run(check_mlp_plateau, plateau, capsys)
    assert ok is True and out.startswith("Correct! ") and "1.107 bits" in out
    ok, _ = run(check_mlp_plateau, lambda V, L: torch.tensor(plateau(V, L)), capsys)
    assert ok is True


def test_check_mlp_plateau_wrong(capsys):
    assert_fails(check_mlp_plateau, lambda V, L: 0.0, capsys, "expected 1.1073 bits")
    assert_fails(check_mlp_plateau, lambda V, L: plateau(V, L) * math.log(2), capsys, "nats")
    assert_fails(check_mlp_plateau, lambda V, L: plateau(V, L) * L, capsys, "sum", "mean")
    assert_fails(check_mlp_plateau, lambda V, L: sum(math.log2(V - t) for t in range(L)) / L, capsys,
                 "mean Bayes entropy")
    assert_fails(check_mlp_plateau, lambda V, L: math.log2(V), capsys, "log2 V")
    assert_fails(check_mlp_plateau, lambda V, L: sum(math.log2(V / (V - t)) for t in range(1, L + 1)) / L,
                 capsys, "shifted by one")
    assert_fails(check_mlp_plateau, lambda V, L: None, capsys, "returned NoneType")
    assert_fails(check_mlp_plateau, lambda V, L: [1.0, 2.0], capsys, "return one number")
    assert_fails(check_mlp_plateau, lambda V, L: math.log2(0), capsys, "raised ValueError")


# Exercise 1.3 ----------------------------------------------------------------------------------

def test_check_replacement_posterior(capsys):
    ok, out = run(check_replacement_posterior, replacement_posterior, capsys)
    assert ok is True and out.startswith("Correct! ")
    assert_fails(check_replacement_posterior, posterior, capsys, "recall", "point mass")
    assert_fails(check_replacement_posterior, lambda *a: None, capsys, "returned None")

    def uniform_over_unseen_keys(keys, values, key, V):  # confuses keys with values
        if key in keys:
            return replacement_posterior(keys, values, key, V)
        p = torch.ones(V, dtype=torch.float64)
        p[keys] = 0.0
        return p / p.sum()

    assert_fails(check_replacement_posterior, uniform_over_unseen_keys, capsys, "already revealed")


# The notebook's own exercise cells -------------------------------------------------------------

def _notebook_cells():
    nb = json.loads(NOTEBOOK.read_text())
    return [("".join(c["source"]), c["cell_type"]) for c in nb["cells"]]


def _solutions() -> str:
    blocks = []
    for src, kind in _notebook_cells():
        if kind == "markdown" and "<details><summary>Solution</summary>" in src:
            blocks += re.findall(r"```python\n(.*?)```", src, flags=re.S)
    return "\n".join(blocks)


def _stand_ins() -> str:
    return "\n".join(src for src, kind in _notebook_cells() if kind == "code" and "raise NotImplementedError" in src)


CHECKS = {"my_posterior": check_posterior, "my_staircase": check_entropy_staircase,
          "my_plateau": check_mlp_plateau, "my_replacement_posterior": check_replacement_posterior}


def test_notebook_solutions_pass_and_stand_ins_fail(capsys):
    solutions, stand_ins = {"torch": torch, "math": math}, {"torch": torch, "math": math}
    exec(_solutions(), solutions)
    exec(_stand_ins(), stand_ins)
    for name, checker in CHECKS.items():
        assert checker(solutions[name]) is True, name
        assert checker(stand_ins[name]) is False, name
    out = capsys.readouterr().out
    assert out.count("Correct! ") == 4 and out.count("Your turn: ") == 4 and "Not yet: " not in out


def test_notebook_exercises_are_arena_style():
    cells = _notebook_cells()
    headings = [src for src, kind in cells if kind == "markdown" and src.startswith("### Exercise")]
    assert len(headings) >= 2
    for h in headings:
        assert "Difficulty: " in h and "about" in h and "minutes" in h
    assert all("TODO" not in src for src, kind in cells if kind == "code")
