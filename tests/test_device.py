"""Device, mixed precision and torch.compile options of the trainer (CUDA choices checked with mocks:
this project's machines have no GPU; the fp16 scaler and bf16 autocast paths run for real on CPU)."""
import math

import pytest
import torch

from bwt_lite.runtime import device
from bwt_lite.checkpoints import cache_dir, train_and_save
from bwt_lite.store import cache
from bwt_lite.store.resume import load_train_state
from bwt_lite.runtime.device import amp_dtype, cpu_model, resolve_device
from bwt_lite.recipes import get_preset
from bwt_lite.train import RunOptions, Throughput, fit, format_duration
from conftest import fit_until_killed


def tiny(**kw):
    base = dict(steps=8, batch_size=8, eval_every=4, eval_episodes=16, warmup_steps=2)
    return get_preset("bijection", "transformer", "lite", **{**base, **kw})


def same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


@pytest.mark.parametrize("capability, want", [((7, 5), torch.float16), ((8, 0), torch.bfloat16), ((9, 0), torch.bfloat16)])
def test_auto_precision_on_cuda_follows_the_gpu(monkeypatch, capability, want):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: capability)
    assert amp_dtype("auto", torch.device("cuda")) == want  # a T4 (7.5) only emulates bf16: fp16 + scaler
    assert amp_dtype("off", torch.device("cuda")) is None
    assert (device.grad_scaler(torch.device("cpu"), want) is None) == (want == torch.bfloat16)


def test_precision_choices_on_cpu():
    cpu = torch.device("cpu")
    assert amp_dtype("auto", cpu) is None and amp_dtype("off", cpu) is None
    assert amp_dtype("bf16", cpu) == torch.bfloat16 and amp_dtype("fp16", cpu) == torch.float16
    with pytest.raises(ValueError, match="unknown amp 'half'; allowed: auto, bf16, fp16, off"):
        amp_dtype("half", cpu)
    with pytest.raises(ValueError, match="amp='bf16' is supported on cuda and cpu"):
        amp_dtype("bf16", torch.device("meta"))


def test_resolve_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu") and resolve_device(None) == torch.device("cpu")
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="unknown device 'gpu0'"):
        resolve_device("gpu0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")


def test_auto_precision_on_cpu_is_plain_fp32():
    p = tiny()
    a, _ = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    b, _ = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False, amp="off", device="auto"))
    assert same_weights(a, b)


@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_mixed_precision_trains_and_keeps_fp32_weights(amp):
    p = tiny()
    ref, _ = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    model, state = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False, amp=amp))
    assert all(v.dtype == torch.float32 for v in model.state_dict().values())
    assert not same_weights(ref, model)  # it did run in lower precision
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["entropy_mae_bits"]) for r in state.history)
    assert (state.scaler is not None) == (amp == "fp16")
    if amp == "fp16":
        assert state.scaler["scale"] > 0 and "_growth_tracker" in state.scaler


def test_fp16_run_resumes_exactly_with_its_scaler_state(isolated_cache):
    p = tiny(steps=12)
    full, _ = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False, amp="fp16"))
    directory = fit_until_killed(p, 8, amp="fp16")
    assert load_train_state(directory).scaler is not None
    resumed, meta = train_and_save(p, progress=False, ckpt_every=4, log=lambda _: None, amp="fp16")
    assert same_weights(full, resumed)
    assert meta["trained_on"]["precision"] == "fp16 autocast" and meta["trained_on"]["device"] == "cpu"
    # a CPU run names the processor and torch's kernel set: one-thread bit-for-bit repeats need both the same
    assert meta["trained_on"]["cpu"] == cpu_model()
    assert cpu_model().endswith(", " + torch.backends.cpu.get_cpu_capability())


def test_compile_wraps_the_training_forward_only(monkeypatch):
    compiled = []

    def fake_compile(model, **kw):
        compiled.append(model)
        return model

    monkeypatch.setattr(torch, "compile", fake_compile)
    p = tiny()
    a, _ = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False, compile_model=True))
    b, _ = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    assert len(compiled) == 1 and compiled[0] is a and same_weights(a, b)


def test_progress_lines_report_steps_per_second_and_time_left():
    p = tiny()
    lines = []
    fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False, log=lines.append, log_every_s=0.0, desc="tiny"))
    assert len(lines) == 8  # every step (log_every_s=0), the two evaluations with their metrics
    assert all(line.startswith("tiny: step ") for line in lines)
    assert "steps/s" in lines[-1] and "left" in lines[-1] and "entropy MAE" in lines[-1]
    assert lines[3].startswith("tiny: step 4/8") and "entropy MAE" in lines[3]


def test_throughput_and_durations():
    t = iter([0.0, 10.0, 30.0])
    meter = Throughput(total=1000, start_step=100, clock=lambda: next(t))
    assert meter.line(200) == "step 200/1,000 | 10.0 steps/s | about 1 min 20 s left"
    assert meter.line(300) == "step 300/1,000 | 5.0 steps/s | about 2 min 20 s left"
    assert [format_duration(s) for s in (0.4, 59, 61, 3599, 3600 * 9 + 61)] == ["0 s", "59 s", "1 min 01 s",
                                                                                "59 min 59 s", "9 h 01 min"]


def test_stop_ends_training_at_an_evaluation():
    p = tiny()
    model, state = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False), stop=lambda row: True)
    assert state.step == 4 and [r["step"] for r in state.history] == [4]


def test_cache_goes_to_google_drive_when_mounted(tmp_path, monkeypatch):
    drive = tmp_path / "drive" / "MyDrive"
    monkeypatch.setattr(cache, "DRIVE_ROOT", drive)
    monkeypatch.setenv("BWT_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"  # BWT_CACHE_DIR always wins
    monkeypatch.delenv("BWT_CACHE_DIR")
    assert cache_dir() != drive / "bwt_cache"  # not mounted
    drive.mkdir(parents=True)
    assert cache_dir() == drive / "bwt_cache"
    from bwt_lite import setup_notebook

    assert setup_notebook(verbose=False).cache_dir == drive / "bwt_cache"
