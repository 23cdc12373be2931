"""Chapter 13 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import numpy as np

from bwt_lite.exercises.construction_boundary import (check_class_posterior, check_consistent_pairs,
                                                      count_pairs)


def right_pairs(values, p):
    if len(values) < 2:
        return p * p
    return sum(all((a * x + b) % p == y for x, y in zip(values, values[1:])) for a in range(p) for b in range(p))


def right_posterior(values, p):
    n = len(values)
    if n == 0:
        return 0.5
    ratio = right_pairs(values, p) * float(p) ** (n - 3)  # recurrence likelihood over i.i.d. likelihood
    return ratio / (ratio + 1)


def test_count_pairs_by_hand():
    assert count_pairs([], 5) == 25 and count_pairs([3], 5) == 25
    assert count_pairs([1, 2], 5) == 5          # one b for each a
    assert count_pairs([4, 4, 4], 7) == 7       # a value that stands still: every a, with b = x (1 - a)
    assert count_pairs([0, 1, 2], 7) == 1       # x -> x + 1
    assert count_pairs([0, 1, 2, 5], 7) == 0    # the last step breaks it


def test_pairs_checker(capsys):
    assert check_consistent_pairs(right_pairs)
    assert "fixed point" in capsys.readouterr().out
    assert check_consistent_pairs(lambda v, p: np.int64(right_pairs(v, p)))  # numpy integers are accepted
    assert not check_consistent_pairs(lambda v, p: right_pairs(v, p) if len(v) >= 2 else 0)
    assert "no pair is ruled out" in capsys.readouterr().out
    assert not check_consistent_pairs(lambda v, p: right_pairs(v, p) * p)
    assert "x_0 is seen" in capsys.readouterr().out
    no_zero = lambda v, p: sum(all((a * x + b) % p == y for x, y in zip(v, v[1:]))  # noqa: E731
                               for a in range(1, p) for b in range(p))
    assert not check_consistent_pairs(no_zero)
    assert "a = 0 is allowed" in capsys.readouterr().out
    assert not check_consistent_pairs(lambda v, p: None)
    assert not check_consistent_pairs(lambda v, p: "many")
    assert not check_consistent_pairs(lambda v, p: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_class_posterior_checker(capsys):
    assert check_class_posterior(right_posterior)
    assert "Bayes'" in capsys.readouterr().out
    assert not check_class_posterior(lambda v, p: 0.5)
    assert "fourth value" in capsys.readouterr().out
    wrong_powers = lambda v, p: (right_pairs(v, p) / p ** 2) / (right_pairs(v, p) / p ** 2 + 1) if v else 0.5  # noqa: E731
    assert not check_class_posterior(wrong_powers)
    assert "powers of p" in capsys.readouterr().out
    assert not check_class_posterior(lambda v, p: None)
    assert not check_class_posterior(lambda v, p: float("nan"))
    assert not check_class_posterior(lambda v, p: [0.5])
