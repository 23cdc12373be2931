"""The recurrence's controls. The shuffled layout: (time, value) pairs in a random order, its exact posterior
against brute-force enumeration of every (a, b, x_0), its window baselines, the layout and the command line.
Length extrapolation: a preset trained on another episode length, named for it."""
from __future__ import annotations

import json

import pytest
import torch

from bwt_lite.tunnels import make_tunnel
from bwt_lite.tunnels.recurrence import programs, recurrence_posterior, shuffled_posterior


def run(a: int, b: int, x0: int, length: int, p: int) -> list[int]:
    seq = [x0]
    for _ in range(length - 1):
        seq.append((a * seq[-1] + b) % p)
    return seq


def enumerate_pairs(pairs: list[tuple[int, int]], t_next: int, p: int) -> tuple[list[float], float]:
    """Bayes by brute force from (time, value) pairs: the predictive of x at ``t_next`` and P(recurrence)."""
    joint = [0.0] * p
    rec = 0.0
    for a in range(p):
        for b in range(p):
            for x0 in range(p):
                seq = run(a, b, x0, t_next + 1 + max((t for t, _ in pairs), default=0), p)
                if all(seq[t] == v for t, v in pairs):
                    w = 0.5 / p ** 3
                    rec += w
                    joint[seq[t_next]] += w
    iid = 0.5 * p ** (-len(pairs))
    total = rec + iid
    return [(joint[v] + iid / p) / total for v in range(p)], rec / total


def test_the_program_table_runs_every_recurrence():
    table = programs(5, 6)
    assert table.shape == (125, 6)
    assert table[(3 * 5 + 2) * 5 + 4].tolist() == run(3, 2, 4, 6, 5)


@pytest.mark.parametrize("p", [3, 5, 7])
@pytest.mark.parametrize("window", [None, 1, 2, 3])
def test_shuffled_posterior_matches_enumeration(p, window):
    t = make_tunnel("recurrence", p=p, length=6, variant="shuffled")
    g = torch.Generator().manual_seed(p)
    values, _ = t.sample_values(10, g)
    values = torch.cat([values, torch.tensor([[2, 2, 2, 2, 2, 2], [0, 1, 2, 0, 1, 2]]) % p])
    order = torch.rand(len(values), 6, generator=g).argsort(1)
    probs, rec = shuffled_posterior(values, order, p, window=window)
    for i in range(len(values)):
        for k in range(6):
            lo = 0 if window is None else max(k - window, 0)
            pairs = [(int(order[i, j]), int(values[i, order[i, j]])) for j in range(lo, k)]
            want, cls = enumerate_pairs(pairs, int(order[i, k]), p)
            assert torch.allclose(probs[i, k], torch.tensor(want, dtype=torch.float64), atol=1e-12, rtol=0)
            assert rec[i, k].item() == pytest.approx(cls, abs=1e-12)


def test_in_time_order_it_is_the_sequential_posterior():
    values, _ = make_tunnel("recurrence").sample_values(100, torch.Generator().manual_seed(0))
    order = torch.arange(16).expand(100, -1)
    probs, rec = shuffled_posterior(values, order, 17)
    want, want_rec = recurrence_posterior(values, 17)
    assert torch.allclose(probs, want, atol=1e-12) and torch.allclose(rec, want_rec, atol=1e-12)


def test_large_batches_are_chunked_without_changing_the_answer():
    from bwt_lite.tunnels import recurrence

    values, _ = make_tunnel("recurrence", p=5, length=6).sample_values(150, torch.Generator().manual_seed(2))
    order = torch.rand(150, 6, generator=torch.Generator().manual_seed(3)).argsort(1)
    whole, _ = shuffled_posterior(values[:10], order[:10], 5)
    assert recurrence.SHUFFLED_CHUNK < 150
    chunked, _ = shuffled_posterior(values, order, 5)
    assert torch.allclose(chunked[:10], whole)


def test_the_shuffled_layout():
    t = make_tunnel("recurrence", variant="shuffled")
    assert t.seq_len == 31 and t.vocab_size == 17 + 16 and t.positions.tolist() == list(range(0, 31, 2))
    ep = t.sample(12, torch.Generator().manual_seed(5))
    times, seen = t.shown_pairs(ep.inputs)
    assert (times.sort(1).values == torch.arange(16)).all()  # every time shown once
    assert torch.equal(seen, ep.target[:, :-1])  # the value after each time token is the answer there
    values = torch.empty_like(ep.target).scatter_(1, times, ep.target)
    probs, _ = shuffled_posterior(values, times, 17)
    assert torch.allclose(ep.probs, probs) and torch.allclose(ep.probs.sum(-1), torch.ones(12, 16, dtype=torch.float64))
    with pytest.raises(ValueError, match="shown_pairs"):
        t.decode(ep.inputs)
    with pytest.raises(ValueError, match="shuffled layout has none"):
        make_tunnel("recurrence", variant="shuffled", horizon=5)
    with pytest.raises(ValueError, match="pass a generator"):
        t.episodes(values)


def test_window_baselines_of_the_shuffled_layout():
    from bwt_lite.baselines import baseline_names, recurrence_window

    t = make_tunnel("recurrence", variant="shuffled", p=7, length=8)
    ep = t.sample(5, torch.Generator().manual_seed(6))
    assert baseline_names(t) == ["prior", "window-1", "window-2", "window-3", "window-4"]
    times, seen = t.shown_pairs(ep.inputs)
    got = recurrence_window(t, ep, 2)
    for b in range(5):
        for k in range(8):
            pairs = [(int(times[b, j]), int(seen[b, j])) for j in range(max(k - 2, 0), k)]
            want, _ = enumerate_pairs(pairs, int(times[b, k]), 7)
            assert torch.allclose(got[b, k], torch.tensor(want, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(recurrence_window(t, ep, 8), ep.probs, atol=1e-12)


def test_bwt_episode_recurrence_shuffled_json(capsys):
    from bwt_lite.cli import main

    assert main(["episode", "recurrence", "--variant", "shuffled", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["variant"] == "shuffled" and sorted(out["times"]) == list(range(16))
    assert len(out["tokens"]) == 31 and len(out["posterior"]) == 16
    values, times = torch.tensor([out["values"]]), torch.tensor([out["times"]])
    probs, _ = shuffled_posterior(values, times, 17)
    assert torch.allclose(torch.tensor(out["posterior"], dtype=torch.float64), probs[0], atol=1e-12)
    assert [out["values"][t] for t in out["times"]] == out["target"]


def test_a_preset_trained_on_another_length_is_named_for_it(capsys):
    from bwt_lite.cli import main
    from bwt_lite.recipes import get_preset

    short = get_preset("recurrence", "transformer", "lite", length=8, positions="sinusoidal")
    assert short.name == "recurrence-L8-transformer-lite-pos-sinusoidal-soft" and short.tunnel["length"] == 8
    assert short.key() != get_preset("recurrence", "transformer", "lite", positions="sinusoidal").key()
    # a variant's own length (the slow HMM's 30 symbols) is its default, not a change of length
    assert get_preset("hmm", "transformer", "lite", variant="slow").name.startswith("hmm-slow-transformer")
    assert get_preset("hmm", "transformer", "lite", length=30).name == "hmm-L30-transformer-lite-soft"
    assert main(["info", "recurrence", "transformer", "--train-length", "8", "--positions", "sinusoidal",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == short.name
    with pytest.raises(SystemExit):
        main(["info", "recurrence", "transformer", "--train-length", "1"])
    assert "between 2 and" in capsys.readouterr().err


def test_length_scores_split_at_the_trained_length():
    from bwt_lite.baselines import BaselinePredictor
    from bwt_lite.boundary import length_scores

    short = make_tunnel("recurrence", p=7, length=4)
    prior = BaselinePredictor(make_tunnel("recurrence", p=7, length=10), "prior")  # any length: no positions
    rows = length_scores(prior, short, lengths=(4, 10), episodes=64)
    assert [(r.length, r.trained) for r in rows] == [(4, 4), (10, 4)]
    assert rows[0].beyond is None and len(rows[1].entropy_mae) == 10
    e = rows[1].entropy_mae
    assert rows[1].inside == pytest.approx(sum(e[1:4]) / 3) and rows[1].beyond == pytest.approx(sum(e[4:]) / 6)
    assert rows[1].baselines["prior"] == pytest.approx((rows[1].inside, rows[1].beyond))  # it is the prior
    assert rows[1].baselines["window-4"][1] < 0.5 * rows[1].beyond  # four values name the program
