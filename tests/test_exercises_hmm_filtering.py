"""Chapter 3 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

import numpy as np
import torch

from bwt_lite.exercises.hmm_filtering import (
    check_context_free_prediction,
    check_decode,
    check_filter,
    check_forward_step,
)


def step(belief, T, E, o):
    p = (belief @ T) * E[:, o]
    return p / p.sum()


def test_forward_step_accepts_the_solution(capsys):
    assert check_forward_step(step)
    assert "Correct!" in capsys.readouterr().out
    # float32, numpy and list answers are fine
    assert check_forward_step(lambda b, T, E, o: step(b, T, E, o).float())
    assert check_forward_step(lambda b, T, E, o: step(b, T, E, o).numpy())
    assert check_forward_step(lambda b, T, E, o: step(b, T, E, o).tolist())
    assert check_forward_step(lambda b, T, E, o: step(b, T, E, o).unsqueeze(0))


def test_forward_step_rejects_typical_mistakes(capsys):
    cases = [
        (lambda b, T, E, o: (b @ T) * E[:, o], "normalise"),
        (lambda b, T, E, o: step(b, T.T, E, o), "wrong way round"),
        (lambda b, T, E, o: b * E[:, o] / (b * E[:, o]).sum(), "skipped the transition"),
        (lambda b, T, E, o: b @ T, "forgot the observation"),
        (lambda b, T, E, o: ((b * E[:, o]) @ T) / ((b * E[:, o]) @ T).sum(), "before the transition"),
        (lambda b, T, E, o: ((b @ T) * E[o]) / ((b @ T) * E[o]).sum(), "column E[:, o]"),
        (lambda b, T, E, o: torch.full_like(b, 1 / b.numel()), "expected"),
        (lambda b, T, E, o: None, "returned None"),
        (lambda b, T, E, o: b[:2], "shape"),
        (lambda b, T, E, o: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_forward_step(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def my_filter(T, E, obs):
    S = T.shape[0]
    belief = E[:, obs[0]] / S
    rows = [belief / belief.sum()]
    for o in obs[1:]:
        rows.append(step(rows[-1], T, E, int(o)))
    return torch.stack(rows)


def log_filter(T, E, obs):
    """A log-space solution (zeros in T and E become -inf)."""
    S = T.shape[0]
    la = torch.log(E[:, obs[0]]) - math.log(S)
    rows = [la - torch.logsumexp(la, 0)]
    for o in obs[1:]:
        la = torch.logsumexp(rows[-1].unsqueeze(1) + torch.log(T), 0) + torch.log(E[:, o])
        rows.append(la - torch.logsumexp(la, 0))
    return torch.stack(rows).exp()


def unnormalised_filter(T, E, obs):
    """Normalises only at the end: underflows on long episodes."""
    S = T.shape[0]
    alphas = [E[:, obs[0]] / S]
    for o in obs[1:]:
        alphas.append((alphas[-1] @ T) * E[:, o])
    A = torch.stack(alphas)
    return A / A.sum(-1, keepdim=True)


def test_filter_accepts_solutions(capsys):
    assert check_filter(my_filter)
    assert check_filter(log_filter)
    assert "600-step" in capsys.readouterr().out
    assert check_filter(lambda T, E, o: my_filter(T, E, o).numpy())


def test_filter_rejects_typical_mistakes(capsys):
    def transition_first(T, E, obs):
        S = T.shape[0]
        belief = torch.full((S,), 1.0 / S, dtype=torch.float64)
        rows = []
        for o in obs:
            belief = step(belief, T, E, int(o))
            rows.append(belief)
        return torch.stack(rows)

    def predictive(T, E, obs):
        f = my_filter(T, E, obs)
        S = T.shape[0]
        pred = torch.cat([torch.full((1, S), 1.0 / S, dtype=torch.float64), f[:-1] @ T])
        return pred / pred.sum(-1, keepdim=True)

    def with_prior_row(T, E, obs):
        S = T.shape[0]
        return torch.cat([torch.full((1, S), 1.0 / S, dtype=torch.float64), my_filter(T, E, obs)])

    def transposed_later(T, E, obs):
        S = T.shape[0]
        belief = E[:, obs[0]] / S
        rows = [belief / belief.sum()]
        for o in obs[1:]:
            rows.append(step(rows[-1], T.T, E, int(o)))
        return torch.stack(rows)

    cases = [
        (unnormalised_filter, "underflow"),
        (transition_first, "transition before the first observation"),
        (predictive, "uniform prior"),  # its first row is the prior
        (lambda T, E, o: torch.cat([my_filter(T, E, o)[:1], predictive(T, E, o)[1:]]), "prediction"),
        (with_prior_row, "One row too many"),
        (transposed_later, "wrong way round"),
        (lambda T, E, o: my_filter(T, E, o)[:-1], "shape"),
        (lambda T, E, o: None, "returned None"),
    ]
    for fn, hint in cases:
        assert not check_filter(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def my_decode(tokens, S, O):
    T = (tokens[1:1 + S * S] + 5).reshape(S, S) / 100
    start = 2 + S * S
    E = (tokens[start:start + S * O] + 5).reshape(S, O) / 100
    obs = tokens[3 + S * S + S * O + 1::2] - 100
    return T, E, obs


def test_decode_checker(capsys):
    assert check_decode(my_decode)
    assert "Correct!" in capsys.readouterr().out
    assert check_decode(lambda tok, S, O: tuple(np.asarray(x) for x in my_decode(tok, S, O)))

    def no_offset(tok, S, O):
        T, E, obs = my_decode(tok, S, O)
        return T - 0.05, E, obs

    def hundredths(tok, S, O):
        T, E, obs = my_decode(tok, S, O)
        return T * 100, E, obs

    def raw_ids(tok, S, O):
        T, E, obs = my_decode(tok, S, O)
        return T * 100 - 5, E, obs

    def transposed(tok, S, O):
        T, E, obs = my_decode(tok, S, O)
        return T.T, E, obs

    def symbol_tokens(tok, S, O):
        T, E, obs = my_decode(tok, S, O)
        return T, E, obs + 100

    def with_markers(tok, S, O):
        T, E, _ = my_decode(tok, S, O)
        return T, E, tok[3 + S * S + S * O:]

    def off_by_one(tok, S, O):
        T, _, obs = my_decode(tok, S, O)
        E = (tok[1 + S * S:1 + S * S + S * O] + 5).reshape(S, O) / 100
        return T, E, obs

    cases = [(no_offset, "add 5"), (hundredths, "divide by 100"), (raw_ids, "raw token ids"),
             (transposed, "transposed"), (symbol_tokens, "subtract 100"), (with_markers, "OBS marker"),
             (off_by_one, "count the markers"), (lambda tok, S, O: None, "tuple"),
             (lambda tok, S, O: my_decode(tok, S, O)[:2], "tuple")]
    for fn, hint in cases:
        assert not check_decode(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def test_context_free_checker(capsys):
    assert check_context_free_prediction(lambda S, O, t, sym: torch.full((S,), 1.0 / S))
    out = capsys.readouterr().out
    assert "Correct!" in out and "uniform" in out
    assert check_context_free_prediction(lambda S, O, t, sym: [1.0 / S] * S)

    assert not check_context_free_prediction(lambda S, O, t, sym: torch.eye(S)[sym % S])
    assert "is not state" in capsys.readouterr().out
    assert not check_context_free_prediction(
        lambda S, O, t, sym: torch.softmax(torch.arange(S, dtype=torch.float64), 0))
    out = capsys.readouterr().out
    assert "Relabel" in out and "averaged over" in out
    assert not check_context_free_prediction(lambda S, O, t, sym: torch.ones(S))
    assert "not a probability vector" in capsys.readouterr().out
    assert not check_context_free_prediction(lambda S, O, t, sym: None)
