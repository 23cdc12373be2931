"""Seeds trained as one stacked model (bwt_lite.fast_stack) checked on the CPU: every seed of a stack
follows a FastRun of that seed (and so the eager trainer) on the same batches, its resume state is a
FastRun's, and the stack refuses what it cannot train."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from bwt_lite.fast_stack import SeedStack
from bwt_lite.fast_train import FastRun, train_together
from bwt_lite.recipes import get_preset


def tiny(tunnel: str, seed: int, steps: int = 6, **train):
    """A lite preset made small enough for a few CPU steps (grad_clip low, so that clipping acts)."""
    p = get_preset(tunnel, "transformer", "lite", seed=seed)
    p = replace(p, model=replace(p.model, d_model=32, n_layers=2, n_heads=2))
    return p.with_train(steps=steps, warmup_steps=2, batch_size=8, eval_every=steps, eval_episodes=16, **train)


def seeds(tunnel: str, steps: int = 6, **train):
    return [tiny(tunnel, s, steps, **train) for s in (0, 1, 2)]


@pytest.mark.parametrize("tunnel", ["bijection", "hmm", "regression"])  # sampled, soft and Gaussian targets
def test_every_seed_of_a_stack_follows_its_own_fast_run(tunnel):
    presets = seeds(tunnel, grad_clip=0.05)
    stack = SeedStack(presets, "cpu", chunk=3)
    alone = [FastRun(p, "cpu", chunk=3) for p in presets]
    for step in range(6):
        stack.step()
        for run in alone:
            run.step()
        for i, run in enumerate(alone):  # the same batch, drawn from the seed's own generator
            assert torch.equal(stack.batch_at(step, i).inputs, run.batch_at(step).inputs)
            assert stack.loss[i].item() == pytest.approx(run.loss.item(), rel=1e-5)
    for i, run in enumerate(alone):  # what is scored: the weights, or the weight average (the lite HMM's ema)
        mine = dict(stack.member_model(i).named_parameters())
        for name, p in run.scored.named_parameters():
            assert torch.allclose(mine[name], p, atol=1e-5), name
    # the seeds really differ, and their weights moved
    w0, w1 = (dict(stack.member_model(i).named_parameters()) for i in (0, 1))
    assert not torch.equal(w0["embed.tok.weight"] if "embed.tok.weight" in w0 else w0["embed.proj.weight"],
                           w1["embed.tok.weight"] if "embed.tok.weight" in w1 else w1["embed.proj.weight"])


def test_a_member_state_resumes_as_a_fast_run_and_a_stack_resumes_from_states():
    presets = seeds("bijection", steps=8, ema=0.5)  # with a weight average, which is state too
    whole = SeedStack(presets, "cpu", chunk=4)
    for _ in range(8):
        whole.step()
    first = SeedStack(presets, "cpu", chunk=4)
    for _ in range(4):
        first.step()
    states = [first.member_state(i) for i in range(3)]
    assert isinstance(states[0].optimizer["param_groups"][0]["lr"], float)
    again = SeedStack(presets, "cpu", chunk=4, resumes=states)
    solo = FastRun(presets[1], "cpu", chunk=4, resume=states[1])  # one seed continued alone
    for _ in range(4):
        again.step()
        solo.step()
    assert again.done and again.step_count == 8
    for i in range(3):
        for a, b in zip(whole.member_model(i).parameters(), again.member_model(i).parameters()):
            assert torch.allclose(a, b, atol=1e-6)
    for a, b in zip(whole.member_model(1).parameters(), solo.scored.parameters()):  # the averages
        assert torch.allclose(a, b, atol=1e-5)
    for a, b in zip(whole._weights(1).parameters(), solo.model.parameters()):  # the weights
        assert torch.allclose(a, b, atol=1e-5)
    assert again.member_state(2).loss_sum == pytest.approx(whole.member_state(2).loss_sum, rel=1e-6)


def test_a_stack_evaluates_saves_and_is_scheduled_like_a_run():
    stack = SeedStack(seeds("recall", steps=4), "cpu", chunk=2)
    logs = []
    finished, stopped = train_together([stack, FastRun(tiny("hmm", 0, steps=4), "cpu", chunk=2)], log=logs.append)
    assert stack in finished and not stopped
    assert [len(stack.member_history(i)) for i in range(3)] == [1, 1, 1]  # eval_every = steps: one row each
    assert any("seeds 0, 1, 2: step 4/4" in line for line in logs)
    rows = [stack.member_history(i)[0] for i in range(3)]
    assert len({r["entropy_mae_bits"] for r in rows}) == 3  # three different models
    scores = stack.member_scores(0, episodes=16)
    assert set(scores) == {"entropy_mae_bits", "kl_bits", "accuracy"}
    assert stack.trained_on()["trainer"] == "seed stack of 3, eager"


def test_a_stack_refuses_what_it_cannot_train():
    presets = seeds("bijection")
    with pytest.raises(ValueError, match="distinct seeds"):
        SeedStack([presets[0], presets[0]], "cpu")
    with pytest.raises(ValueError, match="more than its seed"):
        SeedStack([presets[0], presets[1].with_train(lr=1e-2)], "cpu")
    with pytest.raises(ValueError, match="bf16 or fp32"):
        SeedStack(presets, "cpu", amp="fp16")
    with pytest.raises(ValueError, match="needs a CUDA device"):
        SeedStack(presets, "cpu", graph=True)
    stack = SeedStack(presets, "cpu", chunk=2)
    with pytest.raises(ValueError, match="same step"):
        SeedStack(presets, "cpu", chunk=2, resumes=[stack.member_state(0)])


def test_the_device_check_compares_every_seed_with_its_run():
    from bwt_lite.fast_stack import check_stack

    result = check_stack(seeds("regression")[:2], "cpu", steps=3)
    assert result["seeds"] == [0, 1] and result["graph"] is False
    assert result["loss_rel_diff"] < 1e-5 and result["weight_abs_diff"] < 1e-5, result


def test_the_stack_is_timed_against_one_run():
    from bwt_lite.fast_stack import stack_and_alone

    r = stack_and_alone(tiny("regression", 0, steps=4), "cpu", seeds=(0, 1), steps=4, chunk=2)
    assert r["alone_steps_per_s"] > 0 and r["stack_steps_per_s"] > 0 and r["alone_mfu"] is None
    assert r["seed_speedup"] == pytest.approx(2 * r["stack_steps_per_s"] / r["alone_steps_per_s"], rel=0.02)


def test_the_gradient_check_finds_a_seed_whose_gradient_is_wrong(monkeypatch):
    """The device check compares gradients directly (AdamW's first updates hide their size): a stack whose
    forward scales one seed's output is caught, where the losses after a few steps might not show it."""
    from bwt_lite.fast_stack import check_stack

    presets = seeds("hmm")[:2]
    good = check_stack(presets, "cpu", steps=2)
    assert good["grad_rel_diff"] < 1e-5, good
    real = SeedStack._one

    def skewed(self, params, inputs):  # every seed's logits doubled: its gradients change
        return 2 * real(self, params, inputs)

    monkeypatch.setattr(SeedStack, "_one", skewed)
    bad = check_stack(presets, "cpu", steps=2)
    assert bad["grad_rel_diff"] > 0.1, bad
