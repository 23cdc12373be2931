"""Run options (device, precision, compile, progress, checkpoint interval) travel as one RunOptions,
resolved once where a run is asked for; ``fit`` takes them as one parameter."""
import inspect

import pytest
import torch

from bwt_lite import checkpoints
from bwt_lite.checkpoints import load_or_train, train_and_save
from bwt_lite.recipes import get_preset
from bwt_lite.runtime import options
from bwt_lite.runtime.options import RunOptions
from bwt_lite.train import fit


def tiny():
    return get_preset("bijection", "transformer", "lite", steps=4, batch_size=8, eval_every=4, eval_episodes=16,
                      warmup_steps=2)


@pytest.fixture
def resolutions(monkeypatch):
    """Every device resolution RunOptions makes, counted."""
    calls = []

    def counted(device="auto"):
        calls.append(device)
        return resolve(device)

    resolve = options.resolve_device
    monkeypatch.setattr(options, "resolve_device", counted)
    return calls


def test_fit_takes_at_most_eight_parameters():
    assert len(inspect.signature(fit).parameters) <= 8, list(inspect.signature(fit).parameters)


def test_auto_resolves_to_the_gpu_when_visible_and_its_precision(monkeypatch, resolutions):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: (7, 5))  # a T4: fp16 + scaler
    run = RunOptions(device="auto").resolved()
    assert run.device == torch.device("cuda") and run.amp == "fp16" and run.dtype == torch.float16
    assert run.resolved() is run and resolutions == ["auto"]  # resolved once, taken as it is after that


def test_auto_on_cpu_is_plain_fp32_and_explicit_precision_is_kept(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert RunOptions(device="auto").resolved() == RunOptions(device=torch.device("cpu"), amp="off")
    assert RunOptions(amp="bf16").resolved().dtype == torch.bfloat16
    with pytest.raises(ValueError, match="call .resolved"):
        RunOptions().dtype
    with pytest.raises(ValueError, match="unknown amp 'half'"):
        RunOptions(amp="half").resolved()


def test_a_run_resolves_auto_once_from_the_entry_to_the_loop(monkeypatch, resolutions):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    _, meta = train_and_save(tiny(), device="auto", progress=False, log=lambda _: None)
    assert resolutions == ["auto"] and meta["trained_on"]["device"] == "cpu"
    resolutions.clear()
    load_or_train(tiny(), run=RunOptions(device="auto", progress=False), log=lambda _: None)  # loads it now
    assert resolutions == ["auto"]


def test_keywords_replace_the_fields_of_run_and_unknown_ones_are_refused():
    lines = []
    run = checkpoints.run_options(RunOptions(progress=False, ckpt_every=7), lines.append, log_every_s=5.0)
    assert (run.progress, run.ckpt_every, run.log, run.log_every_s) == (False, 7, lines.append, 5.0)
    assert checkpoints.run_options(None, print).log is None  # progress lines only with log_every_s
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        load_or_train(tiny(), devise="cpu")
