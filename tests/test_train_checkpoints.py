"""Trainer and checkpoint cache: schedule, target modes, exact resume, verification errors."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bwt_lite.checkpoints import CheckpointError, checkpoint_dir, load_checkpoint, load_or_train, train_and_save
from bwt_lite.recipes import get_preset
from bwt_lite.store.resume import load_train_state
from bwt_lite.train import RunOptions, TrainConfig, fit, lr_at
from conftest import fit_until_killed


def tiny(arch="transformer", **kw):
    base = dict(steps=12, batch_size=8, eval_every=4, eval_episodes=16, warmup_steps=3)
    return get_preset("bijection", arch, "lite", **{**base, **kw})


def test_lr_schedule_warmup_then_cosine_to_zero():
    cfg = TrainConfig(steps=100, lr=1e-3, warmup_steps=10)
    lrs = [lr_at(s, cfg) for s in range(100)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))
    assert lr_at(100, cfg) == pytest.approx(0.0, abs=1e-12)


def test_a_longer_schedule_stopped_early_is_the_same_run_cut_short():
    long, cut = tiny(steps=16), tiny(steps=8, decay_steps=16)
    assert [lr_at(s, cut.train) for s in range(8)] == [lr_at(s, long.train) for s in range(8)]
    assert lr_at(8, cut.train) > lr_at(8, tiny(steps=8).train)  # not the cosine of an 8-step run
    assert "decay_steps" in cut.to_dict()["train"] and "decay_steps" not in long.to_dict()["train"]
    assert TrainConfig.from_dict(cut.to_dict()["train"]) == cut.train

    def rows(state):  # the history without its wall times
        return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in state.history if r["step"] <= 8]

    _, s_long = fit(long.tunnel, long.model, long.train, run=RunOptions(progress=False))
    _, s_cut = fit(cut.tunnel, cut.model, cut.train, run=RunOptions(progress=False))
    assert len(rows(s_cut)) == 2 and rows(s_cut) == rows(s_long)
    with pytest.raises(ValueError, match="decay_steps must be 0"):
        TrainConfig(warmup_steps=10, decay_steps=10)


def test_a_run_ends_at_its_target_accuracy_and_says_so(tmp_path):
    full, stopping = tiny(), tiny(stop_accuracy=1e-9)  # any accuracy above 0 reaches this target
    assert "stop_accuracy" in stopping.to_dict()["train"] and "stop_accuracy" not in full.to_dict()["train"]
    assert TrainConfig.from_dict(stopping.to_dict()["train"]) == stopping.train and full.key() != stopping.key()
    _, meta = train_and_save(stopping, progress=False, root=tmp_path, log=lambda _: None)
    assert meta["train_steps"] == 4 and [r["step"] for r in meta["history"]] == [4]  # the first evaluation
    assert load_checkpoint(checkpoint_dir(stopping, tmp_path))[1]["train_steps"] == 4  # saved as finished
    with pytest.raises(ValueError, match="stop_accuracy must be in"):
        TrainConfig(stop_accuracy=1.5)


def test_train_config_rejects_unknown_target():
    with pytest.raises(ValueError, match="unknown target 'hard'; allowed: sampled, soft"):
        TrainConfig(target="hard")


def test_same_seed_same_model():
    p = tiny()
    m1, s1 = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    m2, s2 = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    assert all(torch.equal(a, b) for a, b in zip(m1.state_dict().values(), m2.state_dict().values()))
    assert [r["entropy_mae_bits"] for r in s1.history] == [r["entropy_mae_bits"] for r in s2.history]


def without_times(history):
    return [{k: v for k, v in row.items() if k != "elapsed_s"} for row in history]


def test_interrupted_training_resumes_to_the_same_result(isolated_cache):
    """Killed between two evaluations (state at step 6, evaluations at 4, 8, 12): the resumed run ends with
    the same weights and logs the same history, the loss at step 8 included (its running sum over steps
    5-6 is in the state)."""
    p = tiny()
    full, full_state = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    directory = fit_until_killed(p, 6, ckpt_every=3)
    state = load_train_state(directory, p)
    assert state.step == 6 and state.loss_n == 2 and state.loss_sum > 0
    logs = []
    resumed, meta = train_and_save(p, progress=False, ckpt_every=3, log=logs.append)
    assert "resuming" in logs[0] and "step 6" in logs[0]
    assert all(torch.equal(a, b) for a, b in zip(full.state_dict().values(), resumed.state_dict().values()))
    assert [r["step"] for r in meta["history"]] == [4, 8, 12]
    assert without_times(meta["history"]) == without_times(full_state.history)  # loss and evaluations, exactly
    assert not (directory / "resume").exists()


LOCKED_RUN = r'''
import sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)
from bwt_lite import checkpoints
from bwt_lite.recipes import get_preset

go = Path(sys.argv[1]) if len(sys.argv) > 1 else None
if go is not None:  # the first run: hold the lock until the test says go
    real_fit = checkpoints.fit
    def fit_when_told(*args, **kwargs):
        while not go.exists():
            time.sleep(0.05)
        return real_fit(*args, **kwargs)
    checkpoints.fit = fit_when_told
p = get_preset("bijection", "transformer", "lite", steps=12, batch_size=8, eval_every=4, eval_episodes=16, warmup_steps=3)
_, meta = checkpoints.train_and_save(p, progress=False, ckpt_every=4, log=lambda m: print(m, flush=True))
print("seal", meta["meta_sha256"], flush=True)
'''


def test_a_second_identical_run_waits_for_the_first_and_uses_its_checkpoint(isolated_cache, tmp_path):
    """Two processes train the same preset into one cache: the second waits on the lock, then loads the
    first one's checkpoint instead of training again, and says so."""
    env = {**os.environ, "BWT_CACHE_DIR": str(isolated_cache), "OMP_NUM_THREADS": "1"}
    go = tmp_path / "go"

    def start(*args):
        return subprocess.Popen([sys.executable, "-c", LOCKED_RUN, *args], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    first = start(str(go))
    try:
        line = first.stdout.readline()
        assert line.startswith("training bijection-transformer-lite"), line + first.stderr.read()
        second = start()
        try:
            line = second.stdout.readline()  # the first run holds the lock while it trains
            assert "another run is training it" in line and "waiting" in line, line + second.stderr.read()
            go.touch()
            out1, err1 = first.communicate(timeout=300)
            out2, err2 = second.communicate(timeout=300)
        finally:
            second.kill()
    finally:
        first.kill()
    assert first.returncode == 0 and second.returncode == 0, err1 + err2
    assert "another run finished training it while this one waited" in out2 and "training bijection" not in out2
    seal1 = [ln for ln in out1.splitlines() if ln.startswith("seal")]
    assert seal1 and seal1 == [ln for ln in out2.splitlines() if ln.startswith("seal")]  # the same checkpoint


def test_load_or_train_caches_and_verifies(isolated_cache):
    p = tiny(target="soft")
    assert p.name == "bijection-transformer-lite-soft"
    logs = []
    m1, meta = load_or_train(p, progress=False, log=logs.append)
    assert meta["target"] == "soft" and len(logs) == 1
    m2, _ = load_or_train(p, progress=False, log=logs.append)
    assert len(logs) == 1  # loaded, not retrained
    assert all(torch.equal(a, b) for a, b in zip(m1.state_dict().values(), m2.state_dict().values()))


@pytest.fixture
def saved(isolated_cache):
    p = tiny()
    load_or_train(p, progress=False, log=lambda _: None)
    return p, checkpoint_dir(p)


def test_altered_weights_are_refused(saved):
    p, d = saved
    data = bytearray((d / "model.safetensors").read_bytes())
    data[-5] ^= 0xFF
    (d / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="altered.*delete the folder .*bijection-transformer-lite-[0-9a-f]{16} and train again"):
        load_or_train(p, progress=False)


def test_truncated_weights_are_refused(saved):
    p, d = saved
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated"):
        load_checkpoint(d, p)


def test_checkpoint_of_another_model_is_refused(saved):
    p, d = saved
    with pytest.raises(CheckpointError, match="another configuration.*arch 'transformer'.*bijection-mlp-lite"):
        load_checkpoint(d, tiny("mlp"))


def test_edited_config_is_refused(saved):
    p, d = saved
    meta = json.loads((d / "checkpoint.json").read_text())
    meta["preset"]["model"]["d_model"] = 32
    (d / "checkpoint.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="altered: its key"):
        load_checkpoint(d)


def test_other_format_version_is_refused(saved):
    p, d = saved
    meta = json.loads((d / "checkpoint.json").read_text())
    meta["format_version"] = 0
    (d / "checkpoint.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="format 0"):
        load_checkpoint(d, p)


def test_value_lr_multiplier_groups():
    from bwt_lite.train import make_optimizer
    from bwt_lite.models import build_model
    p = tiny(value_lr_mult=10.0)
    model = build_model(p.model)
    opt = make_optimizer(model, p.train)
    v_ids = {id(m.attn.v.weight) for m in model.backbone.blocks}
    for g in opt.param_groups:
        is_v = {id(q) for q in g["params"]} <= v_ids
        assert g["lr_mult"] == (10.0 if is_v else 1.0)
        assert g["weight_decay"] == (0.0 if all(q.dim() < 2 for q in g["params"]) else p.train.weight_decay)
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))


KILL_MID_WRITE = r'''
import os, signal, sys
import torch
torch.set_num_threads(1)
from bwt_lite.checkpoints import train_and_save
from bwt_lite.recipes import get_preset

kill_at = sys.argv[1]  # a file name, or "" for no kill
real_fsync = os.fsync

def fsync_or_die(fd):
    if kill_at and os.readlink(f"/proc/self/fd/{fd}").split("/")[-1].startswith(f".{kill_at}."):
        os.ftruncate(fd, os.fstat(fd).st_size // 2)  # half of it on disk, under its temporary name
        os.kill(os.getpid(), signal.SIGKILL)
    real_fsync(fd)

os.fsync = fsync_or_die
p = get_preset("bijection", "transformer", "lite", steps=12, batch_size=8, eval_every=4, eval_episodes=16, warmup_steps=3)
train_and_save(p, progress=False, ckpt_every=4, log=print)
'''


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc to find the file being written")
@pytest.mark.parametrize("killed_writing", ["step-0000008.safetensors", "step-0000008.json"])
def test_sigkill_while_writing_a_state_resumes_from_the_last_complete_one(isolated_cache, killed_writing):
    """SIGKILL in the middle of writing a periodic state: the half-written file is never read back,
    the restart resumes from the previous state and ends with the uninterrupted run's exact weights."""
    p = tiny()
    full, _ = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    env = {**os.environ, "BWT_CACHE_DIR": str(isolated_cache), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-c", KILL_MID_WRITE]
    first = subprocess.run(cmd + [killed_writing], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == -signal.SIGKILL, first.stderr
    resume = checkpoint_dir(p) / "resume"
    assert not (resume / killed_writing).exists() and list(resume.glob(f".{killed_writing}.*.tmp"))
    assert load_train_state(checkpoint_dir(p)).step == 4
    second = subprocess.run(cmd + [""], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "resuming bijection-transformer-lite from step 4 of 12" in second.stdout
    model, meta = load_checkpoint(checkpoint_dir(p), p)
    assert all(torch.equal(a, b) for a, b in zip(full.state_dict().values(), model.state_dict().values()))
    assert meta["train_steps"] == 12 and not resume.exists()


def test_weight_average_follows_the_unchanged_run():
    from bwt_lite.train import init_model, make_optimizer, train_step
    from bwt_lite.tunnels import make_tunnel
    p, plain = tiny(ema=0.8), tiny()
    assert "ema" not in plain.to_dict()["train"] and plain.key() != p.key()  # off: left out of the key
    avg, state = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    raw, raw_state = fit(plain.tunnel, plain.model, plain.train, run=RunOptions(progress=False))
    # the raw weights train exactly as without the average; the returned model is the average
    assert all(torch.equal(state.model[k], v) for k, v in raw.state_dict().items())
    assert all(torch.equal(state.average[k], v) for k, v in avg.state_dict().items())
    # the average, recomputed by hand from the same steps
    model = init_model(p.model, p.train.seed)
    opt, gen, tunnel = make_optimizer(model, p.train), torch.Generator().manual_seed(p.train.seed), make_tunnel(**p.tunnel)
    expect = {k: v.detach().clone() for k, v in model.named_parameters()}
    for step in range(p.train.steps):
        train_step(model, model, opt, tunnel.sample(p.train.batch_size, gen), p.train, step, device=torch.device("cpu"))
        for k, v in model.named_parameters():
            expect[k] = 0.8 * expect[k] + 0.2 * v.detach()
    for k, v in avg.named_parameters():
        assert torch.allclose(v, expect[k], rtol=1e-5, atol=1e-7), k
        assert not torch.equal(v, state.model[k]), k
    # the evaluations during training score the average, not the raw weights
    assert [r["entropy_mae_bits"] for r in state.history] != [r["entropy_mae_bits"] for r in raw_state.history]
    with pytest.raises(ValueError, match="ema must be in"):
        TrainConfig(ema=1.0)


def test_interrupted_training_with_a_weight_average_resumes_exactly(isolated_cache):
    p = tiny(ema=0.9)
    full, _ = fit(p.tunnel, p.model, p.train, run=RunOptions(progress=False))
    directory = fit_until_killed(p, 8)
    assert load_train_state(directory).average is not None
    resumed, meta = train_and_save(p, progress=False, ckpt_every=4, log=lambda _: None)
    assert all(torch.equal(a, b) for a, b in zip(full.state_dict().values(), resumed.state_dict().values()))
    quiet = RunOptions(progress=False)
    with pytest.raises(ValueError, match="no weight average"):  # a state saved without one
        fit(p.tunnel, p.model, p.train, run=quiet,
            resume=fit(tiny(steps=4).tunnel, p.model, tiny(steps=4).train, run=quiet)[1])
