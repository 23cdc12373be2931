"""The modular-recurrence tunnel: exact posteriors against an independent enumeration of (a, b, x_0) and the
i.i.d. class, the published class posteriors and entropies, the fixed point, the opaque relabelling, the
loss horizon, and the command line."""
from __future__ import annotations

import json
import math

import pytest
import torch

from bwt_lite.metrics import entropy_bits
from bwt_lite.tunnels import make_tunnel
from bwt_lite.tunnels.recurrence import Recurrence, check_prime, recurrence_posterior


def enumerate_posterior(x: list[int], p: int) -> tuple[list[list[float]], list[float]]:
    """Bayes by brute force: for each t, the joint probability of x_0..x_{t-1} and of each next value under
    every (a, b, x_0) of the recurrence class (prior 1/2, each triple 1/p^3) and under the i.i.d. class."""
    preds, classes = [], []
    for t in range(len(x)):
        joint_next = [0.0] * p
        rec_prefix = 0.0
        for a in range(p):
            for b in range(p):
                for x0 in range(p):
                    seq = [x0]
                    for _ in range(t):
                        seq.append((a * seq[-1] + b) % p)
                    if seq[:t] != x[:t]:
                        continue
                    w = 0.5 / p ** 3
                    rec_prefix += w
                    joint_next[seq[t]] += w
        iid_prefix = 0.5 * p ** (-t)
        total = rec_prefix + iid_prefix
        preds.append([(joint_next[v] + iid_prefix / p) / total for v in range(p)])
        classes.append(rec_prefix / total)
    return preds, classes


@pytest.mark.parametrize("p", [3, 5, 7])
def test_posterior_matches_enumeration_of_every_program(p):
    t = Recurrence(p=p, length=7)
    values, _ = t.sample_values(24, torch.Generator().manual_seed(p))
    extra = torch.tensor([[1] * 7, [2, 2, 1, 1, 1, 1, 1], [0, 1, 2, 0, 1, 2, 0][:7], list(range(7))]) % p
    values = torch.cat([values, extra])
    probs, rec = recurrence_posterior(values, p)
    for i in range(len(values)):
        want, classes = enumerate_posterior(values[i].tolist(), p)
        assert torch.allclose(probs[i], torch.tensor(want, dtype=torch.float64), atol=1e-12, rtol=0)
        assert torch.allclose(rec[i], torch.tensor(classes, dtype=torch.float64), atol=1e-12, rtol=0)
    assert torch.allclose(probs.sum(-1), torch.ones_like(rec)) and probs.dtype == torch.float64


def test_the_published_class_posteriors_and_entropies_for_p_17():
    a, b = 6, 4  # a pair with x_1 != x_0: 6 * 3 + 4 = 22 = 5 (mod 17)
    seq = [3]
    for _ in range(15):
        seq.append((a * seq[-1] + b) % 17)
    x = torch.tensor([seq])
    probs, rec = recurrence_posterior(x, 17)
    assert rec[0, :6].tolist() == pytest.approx([0.5, 0.5, 0.5, 0.5, 17 / 18, 289 / 290], abs=1e-12)
    assert rec[0, 4].item() == pytest.approx(0.944, abs=5e-4) and rec[0, 5].item() == pytest.approx(0.9966, abs=5e-5)
    h = entropy_bits(probs)[0]
    assert h[:5].tolist() == pytest.approx([4.087, 4.087, 4.087, 2.880, 0.505], abs=5e-4)
    assert h[-1].item() < 1e-6  # the program is known


def test_a_standing_value_predicts_a_fixed_point():
    probs, rec = recurrence_posterior(torch.tensor([[5, 5, 5, 5]]), 17)
    assert probs[0, 2].argmax().item() == 5 and probs[0, 2, 5].item() == pytest.approx(0.5 + 0.5 / 17)
    assert rec[0, 3].item() == pytest.approx(17 / 18)  # p pairs stand still after two steps: p^2 / p^3 * p^3


def test_iid_episodes_lose_the_recurrence_once_a_step_breaks_it():
    probs, rec = recurrence_posterior(torch.tensor([[0, 1, 2, 5, 9]]), 17)  # 0,1,2 fit a = 1, b = 1; 5 does not
    assert rec[0, 3].item() == pytest.approx(0.5) and rec[0, 4].item() == 0.0
    assert torch.allclose(probs[0, 4], torch.full((17,), 1 / 17, dtype=torch.float64))


def test_the_opaque_layout_is_the_same_posterior_relabelled():
    t = make_tunnel("recurrence", variant="opaque")
    ep = t.sample(16, torch.Generator().manual_seed(0))
    assert ep.inputs.shape == (16, 17 + 1 + 15) and ep.positions.tolist() == list(range(17, 33))
    perm = ep.inputs[:, :17]
    assert (perm.sort(1).values == torch.arange(17)).all() and (ep.inputs[:, 17] == t.SEP).all()
    values = torch.cat([t.decode(ep.inputs), perm.argsort(1).gather(1, ep.target[:, -1:])], dim=1)
    probs, _ = recurrence_posterior(values, 17)
    assert torch.allclose(ep.probs, probs.gather(2, perm.argsort(1).unsqueeze(1).expand(-1, 16, -1)))
    assert torch.allclose(entropy_bits(ep.probs), entropy_bits(probs))  # a relabelling keeps every entropy
    assert (ep.target == perm.gather(1, values)).all()  # the answer is the token of the next residue


def test_the_integer_layout_and_the_loss_horizon():
    t = make_tunnel("recurrence")
    ep = t.sample(8, torch.Generator().manual_seed(1))
    assert ep.inputs.shape == (8, 16) and (ep.inputs[:, 0] == t.BOS).all()
    assert (ep.inputs[:, 1:] == ep.target[:, :-1]).all()  # the input at position t + 1 is the answer at t
    h = make_tunnel("recurrence", horizon=5)
    short = h.sample(8, torch.Generator().manual_seed(1))
    # the loss horizon counts predictions after x_0, as the authors' does: x_0 .. x_5 are rewarded
    assert short.positions.tolist() == [0, 1, 2, 3, 4, 5] and short.probs.shape == (8, 6, 17)
    assert torch.equal(short.inputs, ep.inputs) and torch.allclose(short.probs, ep.probs[:, :6])
    assert h.config()["horizon"] == 5 and "horizon" not in t.config()


@pytest.mark.parametrize("kwargs, match", [({"p": 15}, "prime"), ({"p": 1}, "p must be"), ({"p": 101}, "prime"),
                                           ({"length": 1}, "length"), ({"horizon": 0}, "horizon"),
                                           ({"horizon": 16}, "horizon must be <= length - 1"),
                                           ({"variant": "hex"}, "variant")])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_tunnel("recurrence", **kwargs)
    assert check_prime(17) == 17 and math.isclose(2 ** 0.5, 2 ** 0.5)


def test_bwt_episode_recurrence_json(capsys):
    from bwt_lite.cli import main

    for variant in ("integer", "opaque"):
        assert main(["episode", "recurrence", "--variant", variant, "--seed", "3", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["p"] == 17 and len(out["values"]) == 16 and len(out["positions"]) == 16
        assert len(out["posterior"]) == 16 and all(len(row) == 17 for row in out["posterior"])
        probs, _ = recurrence_posterior(torch.tensor([out["values"]]), 17)  # residue order, whatever the layout
        assert torch.allclose(torch.tensor(out["posterior"], dtype=torch.float64), probs[0], atol=1e-12)
        assert out["entropy_bits"] == pytest.approx(entropy_bits(probs[0]).tolist(), abs=1e-9)
        assert len(out["tokens"]) == (16 if variant == "integer" else 33)


@pytest.mark.parametrize("variant", ["integer", "opaque"])
def test_window_baselines_are_the_exact_predictive_of_the_last_values(variant):
    from bwt_lite.baselines import baseline_names, recurrence_window

    t = make_tunnel("recurrence", variant=variant, p=7, length=8)
    ep = t.sample(6, torch.Generator().manual_seed(4))
    assert baseline_names(t) == ["prior", "window-1", "window-2", "window-3", "window-4"]
    values = t.decode(ep.inputs)
    got = recurrence_window(t, ep, 3)
    for b in range(6):
        for pos in range(8):
            seen = values[b, max(pos - 3, 0):pos].tolist()
            want, _ = enumerate_posterior(seen + [0], 7)
            row = torch.tensor(want[-1], dtype=torch.float64)
            if variant == "opaque":  # into the order of the answer tokens
                row = torch.zeros(7, dtype=torch.float64).scatter_(0, ep.inputs[b, :7], row)
            assert torch.allclose(got[b, pos], row, atol=1e-12)
    full = recurrence_window(t, ep, 8)
    assert torch.allclose(full, ep.probs, atol=1e-12)  # a window as long as the episode is exact


class ExactModel(torch.nn.Module):
    """The exact predictive as a model (logits), to check the diagnostics on a model that is Bayes."""

    def __init__(self, tunnel):
        super().__init__()
        self.tunnel = tunnel

    def forward(self, inputs, positions):
        from bwt_lite.baselines import recurrence_window

        from bwt_lite.tunnels import Episodes

        ep = Episodes(inputs=inputs, positions=positions, target=inputs.new_zeros(0))
        return recurrence_window(self.tunnel, ep, self.tunnel.length).clamp_min(1e-300).log()


def test_the_boundary_diagnostics_on_the_exact_predictive():
    from bwt_lite.boundary import class_posterior_read, full_length, horizon_scores

    t = make_tunnel("recurrence", p=7, length=8, horizon=3)
    exact = ExactModel(full_length(t))
    s = horizon_scores(exact, t, episodes=64)
    assert s.horizon == 3 and len(s.entropy_mae) == 8 and max(s.entropy_mae) < 1e-9
    assert s.inside["kl_bits"] < 1e-9 and s.beyond["entropy_mae_bits"] < 1e-9
    read = class_posterior_read(exact, t, episodes=128)
    for pos in range(3, 8):
        if read["episodes"][pos]:
            assert read["model"][pos] == pytest.approx(read["exact"][pos], abs=1e-9)
    assert read["exact"][:3] == [None, None, None]
    uniform = horizon_scores(ExactModel(full_length(t)).requires_grad_(False), full_length(t), episodes=16)
    assert uniform.beyond is None and uniform.ratio is None


def test_bwt_horizon_option_names_the_recurrence_preset(capsys):
    from bwt_lite.cli import main

    assert main(["info", "recurrence", "transformer", "--horizon", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "recurrence-h5-transformer-lite-soft" and out["tunnel"]["horizon"] == 5
    for argv, match in ((["info", "hmm", "transformer", "--horizon", "5"], "tunnels that take one (the recurrence)"),
                        (["info", "recurrence", "transformer", "--horizon", "16"], "horizon must be <= length - 1")):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2 and match in capsys.readouterr().err


def test_repeats_previous_and_the_copy_split():
    from bwt_lite.boundary import copy_split, repeats_previous

    values = torch.tensor([[3, 5, 3, 5, 7, 5]])
    # x_{t-1} at t = 2..5 is 5 (not earlier), 3 and 5 (both earlier), 7 (not earlier)
    assert repeats_previous(values).tolist() == [[False, False, False, True, True, False]]
    t = make_tunnel("recurrence", p=7, length=8)
    from bwt_lite.boundary import full_length

    exact = ExactModel(full_length(t))
    split = copy_split(exact, t, episodes=64, start=3)
    assert split["repeat"]["positions"] > 0 and split["new"]["positions"] > 0
    assert split["repeat"]["entropy_mae_bits"] < 1e-9 and split["new"]["entropy_mae_bits"] < 1e-9


def test_horizon_scores_split_as_the_authors_count():
    """Inside a horizon K: the predictions of x_1 .. x_K; beyond: x_{K+1} ..; x_0 (always uniform) in neither."""
    from bwt_lite.baselines import BaselinePredictor
    from bwt_lite.boundary import full_length, horizon_scores

    t = make_tunnel("recurrence", p=7, length=8, horizon=3)
    s = horizon_scores(BaselinePredictor(full_length(t), "prior"), t, episodes=64)
    e = s.entropy_mae
    assert e[3] > 0.1  # the prior misses where the program is pinned down
    assert s.inside["entropy_mae_bits"] == pytest.approx(sum(e[1:4]) / 3)
    assert s.beyond["entropy_mae_bits"] == pytest.approx(sum(e[4:]) / 4)
    assert s.ratio == pytest.approx(s.beyond["entropy_mae_bits"] / s.inside["entropy_mae_bits"])
