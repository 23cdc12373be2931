"""The GPU fast path (bwt_lite.fast_train) checked on the CPU: the same step body as the eager trainer,
exact resumption at a chunk boundary, the scheduler of several runs, and the FLOP count."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from bwt_lite.fast_train import FastRun, check_against_eager, peak_tflops, train_flops_per_step, train_together
from bwt_lite.recipes import get_preset
from bwt_lite.train import init_model, loss_fn


def tiny(tunnel: str, steps: int = 12, **train):
    """A lite preset made small enough for a few CPU steps."""
    p = get_preset(tunnel, "transformer", "lite")
    p = replace(p, model=replace(p.model, d_model=32, n_layers=2, n_heads=2))
    return p.with_train(steps=steps, warmup_steps=2, batch_size=8, eval_every=steps, eval_episodes=16, **train)


@pytest.mark.parametrize("tunnel", ["bijection", "hmm", "regression"])  # sampled, soft and Gaussian targets
def test_fast_path_follows_the_eager_trainer_on_the_same_batches(tunnel):
    result = check_against_eager(tiny(tunnel), "cpu", steps=5, chunk=2)
    assert result["graph"] is False and result["graph_error"] is None  # no graph on a CPU: the same body, eager
    assert result["grad_rel_diff"] < 1e-6, result  # the gradients on one batch, before any step
    assert result["loss_rel_diff"] < 1e-5, result
    assert result["weight_abs_diff"] < 1e-5, result
    assert len(set(result["fast_losses"])) == 5  # the weights really moved between steps


def test_a_run_resumed_at_a_chunk_boundary_ends_where_an_uninterrupted_one_does():
    preset = tiny("bijection", steps=8)
    whole = FastRun(preset, "cpu", chunk=4)
    for _ in range(8):
        whole.step()
    first = FastRun(preset, "cpu", chunk=4)
    for _ in range(4):
        first.step()
    state = first.state()
    assert isinstance(state.optimizer["param_groups"][0]["lr"], float)  # stored as the eager trainer stores it
    second = FastRun(preset, "cpu", chunk=4, resume=state)
    for _ in range(4):
        second.step()
    assert second.done and second.step_count == 8
    for a, b in zip(whole.model.parameters(), second.model.parameters()):
        assert torch.equal(a, b)
    assert second.losses.sum.item() == pytest.approx(whole.losses.sum.item(), rel=1e-12)
    with pytest.raises(ValueError, match="multiple of chunk"):
        FastRun(preset, "cpu", chunk=3, resume=state)
    with pytest.raises(RuntimeError, match="all 8 steps are done"):
        second.step()


def test_the_schedule_and_the_weight_average_follow_the_recipe():
    preset = tiny("bijection", steps=6, ema=0.5)
    run = FastRun(preset, "cpu", chunk=3)
    for _ in range(6):
        run.step()
    assert run.schedule[0].item() == pytest.approx(preset.train.lr / 2)  # warm-up: step 1 of 2
    assert run.opt.param_groups[0]["lr"].item() == pytest.approx(run.schedule[5].item())
    assert run.scored is run.average and run.state().average is not None
    assert any(not torch.equal(a, b) for a, b in zip(run.average.parameters(), run.model.parameters()))


def test_bad_requests_are_refused_with_the_reason():
    preset = tiny("bijection")
    with pytest.raises(ValueError, match="bf16 or fp32"):
        FastRun(preset, "cpu", amp="fp16")
    with pytest.raises(ValueError, match="needs a CUDA device"):
        FastRun(preset, "cpu", graph=True)
    with pytest.raises(ValueError, match="chunk must be >= 1"):
        FastRun(preset, "cpu", chunk=0)


def test_runs_side_by_side_finish_start_the_waiting_and_stop_at_the_deadline():
    built, done, states, logs = [], [], [], []

    def make(tunnel: str, steps: int):
        def build() -> FastRun:
            run = FastRun(tiny(tunnel, steps=steps), "cpu", chunk=2)
            built.append(tunnel)
            return run
        return build

    finished, stopped = train_together([make("bijection", 4), make("recall", 4), make("hmm", 4)], max_active=2,
                                       admit=lambda i: i != 1, on_done=lambda r: done.append(r.step_count),
                                       log=logs.append)
    assert built == ["bijection", "hmm"] and done == [4, 4] and not stopped  # recall was not admitted
    assert all(len(r.history) == 1 for r in finished)  # one evaluation at the end (eval_every = steps)
    run = FastRun(tiny("bijection", steps=1000), "cpu", chunk=4)
    finished, stopped = train_together([run], deadline=0.0, on_state=lambda r: states.append(r.step_count), log=logs.append)
    assert not finished and stopped == [run] and states == [0]  # stopped at once, at a chunk boundary, saved


def test_the_flop_count_is_the_palm_formula_and_close_to_torch_count():
    preset = tiny("bijection")
    model = init_model(preset.model, 0)
    n = sum(p.numel() for p in model.parameters())
    formula = train_flops_per_step(preset, n)
    from bwt_lite.tunnels import make_tunnel

    episodes = make_tunnel(**preset.tunnel).sample(preset.train.batch_size, torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as counter:
        loss_fn(model(episodes.inputs, episodes.positions), episodes, "sampled").backward()
    counted = counter.get_total_flops()
    assert 0.5 < counted / formula < 1.5, (counted, formula)  # the formula counts every position of every block


def test_peak_of_known_and_unknown_gpus():
    assert peak_tflops("NVIDIA H200") == 989.0 and peak_tflops("Tesla T4") == 65.0
    assert peak_tflops("cpu (2 threads)") is None


def test_a_held_run_waits_until_hold_lets_it_go():
    first = FastRun(tiny("bijection", steps=4), "cpu", chunk=2)
    second = FastRun(tiny("regression", steps=4), "cpu", chunk=2)
    seen = []

    def hold(active):  # the second run waits while the first trains
        seen.append((first.step_count, second.step_count))
        return {id(second)} if not first.done else set()

    finished, _ = train_together([first, second], hold=hold, hold_every_s=0.0, log=lambda line: None)
    assert finished == [first, second]
    assert all(s == 0 for f, s in seen if f < 4)  # never stepped before the first was done


def test_a_run_that_fails_is_set_aside_and_the_others_go_on():
    good = FastRun(tiny("bijection", steps=4), "cpu", chunk=2)
    bad = FastRun(tiny("regression", steps=4), "cpu", chunk=2)
    with torch.no_grad():  # a diverged run: NaN weights, so its evaluation fails
        next(bad.model.parameters()).fill_(float("nan"))
    failed = []
    finished, stopped = train_together([bad, good], on_fail=lambda r, e: failed.append((r, e)),
                                       log=lambda line: None)
    assert finished == [good] and not stopped
    assert failed[0][0] is bad and isinstance(failed[0][1], FloatingPointError)
    assert "regression-transformer-lite" in str(failed[0][1]) and "diverged by step 4" in str(failed[0][1])
    bad = FastRun(tiny("regression", steps=4), "cpu", chunk=2)
    with torch.no_grad():
        next(bad.model.parameters()).fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="outputs are not finite"):  # without on_fail: raised
        train_together([bad], log=lambda line: None)


def test_eager_and_fast_times_both_paths():
    from bwt_lite.fast_train import eager_and_fast

    r = eager_and_fast(tiny("regression", steps=4), "cpu", steps=2, chunk=2)
    assert r["eager_steps_per_s"] > 0 and r["fast_steps_per_s"] > 0 and r["fast_mfu"] is None
    assert "compiled_steps_per_s" not in r  # compile only when asked (it takes a while)
