"""Chapter 8 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

from bwt_lite.exercises.progressive_elimination import check_position_roles, check_uniform_attention


def roles(keys, values, t):
    out = []
    for j in range(2 * t + 1):
        if j == 2 * t:
            out.append("self")
        elif j % 2 == 0:
            out.append("key")
        else:
            i = j // 2
            out.append("consistent" if keys[i] == keys[t] else "eliminated")
    return out


def test_position_roles(capsys):
    assert check_position_roles(roles)
    assert check_position_roles(lambda k, v, t: tuple(roles(k, v, t)))
    assert "Correct!" in capsys.readouterr().out

    def all_eliminated(keys, values, t):  # right for keys without replacement, wrong for repeats
        return ["self" if j == 2 * t else "key" if j % 2 == 0 else "eliminated" for j in range(2 * t + 1)]

    def by_value(keys, values, t):  # "consistent" when the value differs from... the wrong test
        return ["self" if j == 2 * t else "key" if j % 2 == 0 else
                ("eliminated" if keys[j // 2] == keys[t] else "consistent") for j in range(2 * t + 1)]

    cases = [
        (all_eliminated, "point-mass"),
        (by_value, "ruled out"),
        (lambda k, v, t: roles(k, v, t)[:-1] + ["key"], "query itself"),
        (lambda k, v, t: roles(k, v, t)[:-1], "one role"),
        (lambda k, v, t: ["eliminated" if x == "key" else x for x in roles(k, v, t)], "key token"),
        (lambda k, v, t: None, "None"),
        (lambda k, v, t: 3, "list of role names"),
        (lambda k, v, t: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_position_roles(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def test_uniform_attention(capsys):
    assert check_uniform_attention(lambda t: (t / (2 * t + 1), math.log2(2 * t + 1)))
    assert "Correct!" in capsys.readouterr().out
    cases = [
        (lambda t: (t / (2 * t) if t else 0.0, math.log2(2 * t + 1)), "2t + 1"),
        (lambda t: ((t + 1) / (2 * t + 1), math.log2(2 * t + 1)), "key positions"),
        (lambda t: (t / (2 * t + 1), math.log(2 * t + 1)), "nats"),
        (lambda t: (t / (2 * t + 1), 0.0), "entropy of uniform"),
        (lambda t: (0.3, 1.0), "should be"),
        (lambda t: None, "pair"),
        (lambda t: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_uniform_attention(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)
