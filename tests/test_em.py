"""Two-timescale (EM-like) training: the single-head experiment, its statistics, the dynamics
diagnostics and the bijection wiring (tiny sizes: wiring and invariants, not the science)."""
import math

import pytest
import torch

from bwt_lite.dynamics.two_timescale import (
    BIJECTION_SIZES,
    EMConfig,
    attention_stability,
    bijection_preset,
    em_vs_sgd,
    head_dynamics,
    paper_em_figures,
    routing_demo,
    same_symbol_attention,
    snapshot_head,
    sticky_sets,
    value_lr_on_bijection,
)
from bwt_lite.dynamics.gradients import SingleHead, cross_entropy
from bwt_lite.evaluate import EVAL_SEED_BASE
from bwt_lite.stats import first_step_at_or_below, mean_ci, t_quantile
from bwt_lite.tunnels.sticky import Sticky

TINY = EMConfig(seeds=2, steps=30, train_episodes=8, held_out_episodes=8, L=8, track_every=10, controls=True)


@pytest.fixture(scope="module")
def tiny():
    return em_vs_sgd(TINY)


def test_t_quantiles_and_intervals():
    for df, q in ((1, 12.706205), (2, 4.302653), (4, 2.776445), (10, 2.228139), (30, 2.042272)):
        assert t_quantile(0.975, df) == pytest.approx(q, abs=2e-5)
    assert t_quantile(0.95, 4) == pytest.approx(2.131847, abs=2e-5)
    m, lo, hi = mean_ci([2.0, 3.0, 4.0, 3.0, 3.0])
    half = 2.776445 * math.sqrt(0.5) / math.sqrt(5)
    assert m == 3.0 and lo == pytest.approx(3 - half, abs=1e-5) and hi == pytest.approx(3 + half, abs=1e-5)
    m, lo, hi = mean_ci([2.5])
    assert m == 2.5 and math.isnan(lo) and math.isnan(hi)
    with pytest.raises(ValueError, match="values must not be empty"):
        mean_ci([])
    with pytest.raises(ValueError, match="p must lie in"):
        t_quantile(0.4, 3)
    with pytest.raises(ValueError, match="df must be >= 1"):
        t_quantile(0.9, 0)


def test_first_step_at_or_below():
    curve = torch.tensor([3.0, 2.5, 2.0, 2.1, 1.9])
    assert first_step_at_or_below(curve, 2.0) == 2
    assert first_step_at_or_below(curve, 3.0) == 1  # step 0 (the initial model) never counts
    assert first_step_at_or_below(curve, 1.0) is None


def test_config_validation_and_arms():
    assert list(EMConfig().arms()) == ["sgd", "values x10"]
    assert EMConfig(controls=True, mult=3.0).arms()["routing x3"] == {"W_Q": 3.0, "W_K": 3.0}
    with pytest.raises(ValueError, match="seeds must be >= 1"):
        EMConfig(seeds=0)
    with pytest.raises(ValueError, match="lr must be > 0"):
        EMConfig(lr=0.0)
    with pytest.raises(ValueError, match="tunnel must be a sticky chain"):
        em_vs_sgd(TINY, tunnel="bijection")


def test_held_out_and_training_sets_are_apart():
    tr, ho, shown = sticky_sets(TINY, 0)
    assert tr.inputs.shape == ho.inputs.shape == (8, 8, 20) and shown.shape == (8, 8)
    assert not torch.equal(tr.inputs, ho.inputs)
    again = Sticky(L=8).sample(8, torch.Generator().manual_seed(EVAL_SEED_BASE))
    assert torch.equal(again.inputs, ho.inputs)


def test_batched_runs_equal_single_runs(tiny):
    """Every run of the batched computation is the plain SGD run of its own head, step by step."""
    cfg = TINY
    tr, ho, _ = sticky_sets(cfg, 1)
    for arm, boost in cfg.arms().items():
        head = SingleHead(seed=1)
        losses = []
        for step in range(cfg.steps + 1):
            with torch.no_grad():
                losses.append(cross_entropy(head(ho.inputs), ho.target).item())
            if step == cfg.steps:
                break
            loss = cross_entropy(head(tr.inputs), tr.target)
            grads = torch.autograd.grad(loss, list(head.parameters()))
            with torch.no_grad():
                for (name, p), g in zip(head.named_parameters(), grads):
                    p -= cfg.lr * boost.get(name, 1.0) * g
        assert torch.allclose(tiny.held_out[arm][1].float(), torch.tensor(losses), atol=2e-6, rtol=0), arm
        final = snapshot_head(tiny, arm, 1, len(tiny.snapshot_steps) - 1)
        assert torch.allclose(final.W_V, head.W_V, atol=1e-6) and torch.allclose(final.W_Q, head.W_Q, atol=1e-6)


def test_result_fields(tiny):
    assert tiny.arms == ["sgd", "values x10", "readout x10", "routing x10"] and tiny.n_params == 820
    assert tiny.held_out["sgd"].shape == tiny.train["sgd"].shape == (2, 31)
    assert tiny.snapshot_steps == [0, 10, 20, 30]
    assert all(torch.equal(tiny.held_out[a][:, 0], tiny.held_out["sgd"][:, 0]) for a in tiny.arms)  # same init
    for s in range(2):
        sgd_steps = tiny.steps_to_sgd_final["sgd"][s]
        assert 1 <= sgd_steps <= 30
        for a in tiny.arms:
            n = tiny.steps_to_sgd_final[a][s]
            assert (n is None and tiny.speedup[a][s] == 0.0) or tiny.speedup[a][s] == pytest.approx(sgd_steps / n)
    assert all(abs(f - 1.834) < 0.1 for f in tiny.bayes_entropy) and tiny.row_floor == pytest.approx(1.8292, abs=1e-4)
    d = tiny.to_dict()
    assert d["summary"]["values x10"]["arm"] == "values x10" and set(d["paper"]) == {"speedup", "em_steps", "sgd_steps"}
    assert paper_em_figures()["speedup"].value == 2.3
    import json

    json.dumps(d)  # JSON-ready


def test_dynamics_diagnostics(tiny):
    dyn = head_dynamics(tiny, "values x10", 0)
    assert dyn["steps"] == tiny.snapshot_steps
    assert dyn["pattern"][-1] == pytest.approx(1.0) and dyn["values"][-1] == 0 and dyn["routing"][-1] == 0
    assert all(0 <= p <= 1 for p in dyn["pattern"])
    same = same_symbol_attention(tiny, "sgd", 0)
    assert 0 < same["uniform"] < 1 and len(same["mass"]) == 4 and all(0 <= m <= 1 for m in same["mass"])
    # at a zero-score head attention is uniform over the causal keys: the mass is exactly the uniform share
    flat = em_vs_sgd(EMConfig(seeds=1, steps=1, train_episodes=4, held_out_episodes=4, L=6, init_std=1e-12))
    z = same_symbol_attention(flat, "sgd", 0)
    assert z["mass"][0] == pytest.approx(z["uniform"], abs=1e-6)  # float32 attention
    trace, symbols = routing_demo(tiny, "values x10", 0, episode=1, position=5, steps=10, lr=5.0)
    assert trace.alpha.shape == (11, 6) and len(symbols) == 6 and trace.loss[-1] < trace.loss[0]
    with pytest.raises(ValueError, match="position must be in 0..7"):
        routing_demo(tiny, "sgd", 0, position=8)
    with pytest.raises(ValueError, match="unknown arm 'nope'"):
        snapshot_head(tiny, "nope", 0, 0)


def test_bijection_presets():
    small = bijection_preset("small", mult=10.0, seed=3)
    assert small.tunnel["V"] == 10 and small.tunnel["L"] == 9 and small.model.d_model == 64
    assert small.model.answer_tokens == tuple(range(10, 20)) and small.model.n_positions == 18
    assert small.train.value_lr_mult == 10.0 and small.train.seed == 3 and small.train.steps == 600
    lite = bijection_preset("lite")
    assert lite.tunnel["V"] == 20 and lite.model.d_model == 128 and lite.train.steps == BIJECTION_SIZES["lite"]["train"]["steps"]
    with pytest.raises(ValueError, match="unknown size 'huge'"):
        bijection_preset("huge")


def test_bijection_run_wiring(monkeypatch):
    monkeypatch.setitem(BIJECTION_SIZES, "tiny", {"V": 4, "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                                                  "train": {"steps": 6, "warmup_steps": 1, "eval_every": 2,
                                                            "eval_episodes": 8, "batch_size": 4},
                                                  "target_bits": 10.0, "track_every": 3})
    runs = value_lr_on_bijection((1.0, 10.0), (0,), size="tiny")
    assert [r.mult for r in runs] == [1.0, 10.0]
    for r in runs:
        assert r.steps_to_target == 2  # any MAE is below 10 bits: the first evaluation
        assert [h["step"] for h in r.history] == [2, 4, 6]
        st = r.stability
        assert st["steps"] == [0, 3, 6] and st["pattern"][-1] == pytest.approx(1.0) and st["values"][-1] == 0
    # the initial snapshot is fit's own initialisation: the two multipliers start from the same weights
    assert runs[0].stability["routing"][0] > 0
    preset = bijection_preset("tiny")
    from bwt_lite.train import init_model

    same = attention_stability(preset, [(0, init_model(preset.model, 0).state_dict())] * 2)
    assert same["pattern"] == [1.0, 1.0] and same["values"] == [0.0, 0.0]
