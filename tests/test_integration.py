"""Every tunnel with every architecture through the same presets, trainer, metrics and CLI."""
import json
import math
from dataclasses import replace

import pytest
import torch

from bwt_lite.cli import main
from bwt_lite.evaluate import evaluate
from bwt_lite.metrics import gaussian_entropy_bits
from bwt_lite.models import ARCHS, build_model
from bwt_lite.recipes import get_preset
from bwt_lite.train import RunOptions, fit, loss_fn
from bwt_lite.tunnels import TUNNELS, make_tunnel
from conftest import gen


def tiny(tunnel: str, arch: str, **train):
    """The lite preset shrunk to a few steps of a narrow model (wiring, not learning)."""
    p = get_preset(tunnel, arch, "lite", steps=3, batch_size=4, eval_every=3, eval_episodes=8, warmup_steps=1, **train)
    return replace(p, model=replace(p.model, d_model=16, n_heads=2, n_layers=1))


@pytest.mark.parametrize("target", ["sampled", "soft"])
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("tunnel", sorted(TUNNELS))
def test_every_tunnel_trains_and_evaluates_with_every_arch(tunnel, arch, target):
    p = tiny(tunnel, arch, target=target)
    model, state = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    assert state.step == 3 and len(state.history) == 1
    t = make_tunnel(**p.tunnel)
    res = evaluate(model, t, episodes=16)
    P = len(t.positions)
    assert len(res.per_position["h_bayes"]) == len(res.per_position["entropy_mae"]) == P
    assert math.isfinite(res.entropy_mae_bits) and res.kl_bits >= 0
    if t.kind == "gaussian":
        assert res.tv is None and res.accuracy is None and "accuracy" not in res.per_position
    else:
        assert 0 <= res.tv <= 1 and 0 <= res.accuracy <= 1


def test_gaussian_soft_loss_is_the_expected_nll():
    """Soft target = E_y[NLL] under the exact predictive: at the exact answer, 0.5 (log 2 pi e var)."""
    t = make_tunnel("regression")
    ep = t.sample(64, gen(3))
    out = torch.stack([ep.mean, ep.var.log()], -1)
    expected = 0.5 * (torch.log(2 * math.pi * math.e * ep.var)).mean()
    assert loss_fn(out, ep, "soft").item() == pytest.approx(expected.item(), rel=1e-12)
    # and the sampled loss averages to it over many draws of y
    big = t.sample(4096, gen(4))
    sampled = loss_fn(torch.stack([big.mean, big.var.log()], -1), big, "sampled").item()
    soft = loss_fn(torch.stack([big.mean, big.var.log()], -1), big, "soft").item()
    assert sampled == pytest.approx(soft, abs=0.03)


class Oracle(torch.nn.Module):
    """Returns the log of the exact posterior (categorical) or the exact predictive (Gaussian)."""

    def __init__(self, tunnel, episodes_seed: int):
        super().__init__()
        self.tunnel, self.w = tunnel, torch.nn.Parameter(torch.zeros(1))
        self.gen = torch.Generator().manual_seed(episodes_seed)

    def forward(self, inputs, positions):  # replays the same generator as evaluate()
        ep = self.tunnel.sample(inputs.shape[0], self.gen)
        assert torch.equal(ep.inputs, inputs)
        if ep.probs is None:
            return torch.stack([ep.mean, ep.var.log()], -1)
        return torch.log(ep.probs.clamp_min(1e-300))


@pytest.mark.parametrize("tunnel", sorted(TUNNELS))
def test_an_oracle_scores_zero_error(tunnel):
    from bwt_lite.evaluate import EVAL_SEED_BASE

    t = make_tunnel(tunnel)
    res = evaluate(Oracle(t, EVAL_SEED_BASE + 5), t, episodes=64, seed=5, batch_size=64)
    assert res.entropy_mae_bits < 1e-9 and res.kl_bits < 1e-9


def test_recall_accuracy_counts_seen_keys_only():
    from bwt_lite.evaluate import EVAL_SEED_BASE

    t = make_tunnel("recall")
    oracle = evaluate(Oracle(t, EVAL_SEED_BASE), t, episodes=256, batch_size=256)
    assert oracle.accuracy == 1.0  # every recall is right; new keys (uniform) are not scored
    assert oracle.per_position["accuracy"][0] is None  # position 0 is never a recall
    assert all(a == 1.0 for a in oracle.per_position["accuracy"][1:] if a is not None)


def test_hmm_position_table_covers_length_generalisation():
    p = get_preset("hmm", "transformer", "lite")
    assert p.model.n_positions >= make_tunnel("hmm", K=50).seq_len
    assert p.train.target == "soft" and p.name.endswith("-soft")


def test_paper_hmm_transformer_parameter_count():
    with torch.device("meta"):
        n = build_model(get_preset("hmm", "transformer", "paper").model).n_params
    assert 7_000_000 < n < 8_000_000  # 9 layers, 8 heads, d = 256: about 7.4M as built (the paper says 2.68M)


def test_cli_episode_regression_json(capsys):
    assert main(["episode", "regression", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    t = make_tunnel("regression")
    assert {"x", "y", "tau", "sigma", "mean", "var", "positions"} <= set(out)
    assert len(out["x"]) == len(out["y"]) == len(out["mean"]) == len(out["var"]) == t.N
    assert len(out["x"][0]) == t.d and all(v > 0 for v in out["var"])
    ent = gaussian_entropy_bits(torch.tensor(out["var"], dtype=torch.float64))
    assert torch.allclose(ent, torch.tensor(out["entropy_bits"], dtype=torch.float64))


@pytest.mark.parametrize("tunnel", ["hmm", "recall"])
def test_cli_episode_categorical_json(tunnel, capsys):
    assert main(["episode", tunnel, "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    t = make_tunnel(tunnel)
    assert len(out["tokens"]) == t.seq_len and len(out["posterior"]) == len(out["positions"])
    assert all(abs(sum(p) - 1) < 1e-12 for p in out["posterior"])


def test_cli_eval_at_another_length(capsys):
    """`bwt eval hmm ... --length 30` evaluates a K=20-trained model on K=30 episodes."""
    assert main(["eval", "hmm", "transformer", "--steps", "2", "--episodes", "8", "--length", "30", "--json",
                 "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["eval_tunnel"]["K"] == 30 and len(out["per_position"]["h_bayes"]) == 30
    assert {"entropy_mae_bits", "kl_bits", "tv", "accuracy", "params", "train_steps"} <= set(out)


def test_cli_length_beyond_the_position_table_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["eval", "hmm", "transformer", "--steps", "2", "--length", "60", "--no-progress"])
    assert e.value.code == 2 and "position table" in capsys.readouterr().err


def test_lite_target_status_says_within_or_outside_and_is_no_verdict():
    from bwt_lite.evaluate import EvalResult
    from bwt_lite.recipes import LITE_TARGETS, lite_target_status

    assert set(LITE_TARGETS) == set(TUNNELS)

    def result(mae=0.0, acc=None):
        return EvalResult(mae, 0.0, None, acc, 0.0, 1, {})
    assert "is within the recipe's training target" in lite_target_status("hmm", result(0.04))
    missed = lite_target_status("hmm", result(0.136))
    assert "is outside" in missed and "0.1360" in missed and "paper preset on a GPU" in missed
    assert "not a verdict" in missed and "meets" not in missed
    assert "within" in lite_target_status("recall", result(acc=0.995))
    assert "outside" in lite_target_status("recall", result(acc=0.5))
    with pytest.raises(ValueError, match="unknown tunnel"):
        lite_target_status("nope", result())


@pytest.mark.parametrize("tunnel, arch", [("regression", "mamba"), ("recall", "lstm")])
def test_cli_trains_and_evaluates_the_recurrent_archs(tunnel, arch, capsys):
    """`bwt train regression mamba`, `bwt eval recall lstm --json`: the same CLI for every architecture."""
    assert main(["train", tunnel, arch, "--steps", "2", "--no-progress", "--device", "cpu"]) == 0
    assert f"{tunnel}-{arch}-lite" in capsys.readouterr().out
    assert main(["eval", tunnel, arch, "--steps", "2", "--episodes", "8", "--json", "--no-progress", "--device", "cpu"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["arch"], out["tunnel"], out["train_steps"]) == (arch, tunnel, 2)
    with torch.device("meta"):
        assert out["params"] == build_model(get_preset(tunnel, arch).model).n_params
