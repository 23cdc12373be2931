"""Checkpoint integrity: sealed metadata, JSON of the wrong shape, non-regular and oversized files, and
foreign resume states, each refused with a CheckpointError naming the file and what is wrong."""
import json
import os
import re
import shutil
import signal

import pytest

from bwt_lite.checkpoints import CheckpointError, checkpoint_dir, load_checkpoint, train_and_save
from bwt_lite.store import files
from bwt_lite.store.cache import META, SHIPPED_DIR, WEIGHTS
from bwt_lite.store.checkpoint import reseal_checkpoint
from bwt_lite.store.files import SEAL, read_json, seal_sha256
from bwt_lite.store.resume import load_train_state, save_train_state
from bwt_lite.recipes import get_preset
from bwt_lite.train import RunOptions, fit


def tiny(arch="transformer", **kw):
    base = dict(steps=4, batch_size=8, eval_every=2, eval_episodes=16, warmup_steps=1)
    return get_preset("bijection", arch, "lite", **{**base, **kw})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    p = tiny()
    root = tmp_path_factory.mktemp("trained")
    train_and_save(p, progress=False, log=lambda _: None, root=root)
    return p, checkpoint_dir(p, root)


@pytest.fixture
def ckpt(trained, tmp_path):
    """A private copy of a finished tiny checkpoint: (preset, folder)."""
    p, src = trained
    d = tmp_path / src.name
    shutil.copytree(src, d)
    return p, d


@pytest.fixture(autouse=True)
def no_hang():
    """A loader that blocks on a FIFO or reads a device forever fails the test instead of hanging it."""
    def fail(*_):
        raise TimeoutError("the loader hung")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def edit(path, change):
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta, indent=1))


def refused(match, path):
    """pytest.raises for a CheckpointError whose message names ``path`` and matches ``match``."""
    return pytest.raises(CheckpointError, match=f"(?s)(?=.*{re.escape(str(path))}).*{match}")


# ------------------------------------------------------------------------------------------------
# The seal over the metadata


def test_the_seal_covers_every_field_and_the_shipped_checkpoints_are_sealed(ckpt):
    p, d = ckpt
    _, meta = load_checkpoint(d, p)
    assert meta[SEAL] == seal_sha256(meta)
    for folder in SHIPPED_DIR.iterdir():
        shipped = read_json(folder / META)
        assert shipped[SEAL] == seal_sha256(shipped), folder.name


@pytest.mark.parametrize("change", [
    lambda m: m.update(train_steps=999999),
    lambda m: m["history"][-1].update(entropy_mae_bits=0.0),
    lambda m: m["history"][0].update(loss=0.5),
    lambda m: m["history"].pop(0),
    lambda m: m.update(target="soft"),
    lambda m: m.update(name="bijection-transformer-paper"),
    lambda m: m.update(train_time_s=1.0),
    lambda m: m["trained_on"].update(device="cuda"),
    lambda m: m.pop("bwt_lite_version"),
    lambda m: m.update(extra="field"),
], ids=["train_steps", "score", "loss", "history", "target", "name", "time", "trained_on", "removed", "added"])
def test_an_edited_metadata_field_is_refused(ckpt, change):
    p, d = ckpt
    edit(d / META, change)
    with refused("was altered: its fields do not match their meta_sha256", d / META):
        load_checkpoint(d, p)


def test_weights_replaced_together_with_their_recorded_hash_are_refused(ckpt):
    p, d = ckpt
    data = bytearray((d / WEIGHTS).read_bytes())
    data[-5] ^= 0xFF
    (d / WEIGHTS).write_bytes(bytes(data))
    edit(d / META, lambda m: m.update(weights_sha256=files.sha256_bytes(bytes(data))))
    with refused("altered.*meta_sha256", d / META):
        load_checkpoint(d, p)


def test_an_unsealed_checkpoint_is_a_clear_error_until_resealed(ckpt):
    p, d = ckpt
    weights = (d / WEIGHTS).read_bytes()
    edit(d / META, lambda m: m.pop(SEAL))
    with refused("has no meta_sha256: it was written by an older bwt_lite", d / META):
        load_checkpoint(d, p)
    before = json.loads((d / META).read_text())
    reseal_checkpoint(d)
    after = json.loads((d / META).read_text())
    assert {k: v for k, v in after.items() if k != SEAL} == before and (d / WEIGHTS).read_bytes() == weights
    model, meta = load_checkpoint(d, p)
    assert meta[SEAL] == after[SEAL]
    assert reseal_checkpoint(d) == meta  # already sealed: left as it is


def test_reseal_refuses_to_bless_an_edit(ckpt):
    p, d = ckpt
    edit(d / META, lambda m: m.update(train_steps=999999))  # sealed, then edited
    with refused("altered", d / META):
        reseal_checkpoint(d)
    edit(d / META, lambda m: m.pop(SEAL))
    data = bytearray((d / WEIGHTS).read_bytes())
    data[-5] ^= 0xFF
    (d / WEIGHTS).write_bytes(bytes(data))  # unsealed, with altered weights
    with refused("altered: its SHA-256", d / WEIGHTS):
        reseal_checkpoint(d)
    assert SEAL not in json.loads((d / META).read_text())


# ------------------------------------------------------------------------------------------------
# JSON of the wrong shape


@pytest.mark.parametrize("text, match", [
    ("[1, 2]", "holds a JSON list, not the object"),
    ('"checkpoint"', "holds a JSON str"),
    ("null", "holds a JSON NoneType"),
    ("42", "holds a JSON int"),
    ("{", "is not valid JSON"),
    ("", "is not valid JSON"),
    ("[" * 100_000, "is not valid JSON"),
], ids=["list", "string", "null", "number", "broken", "empty", "deep"])
def test_a_json_that_is_not_an_object_is_refused(ckpt, text, match):
    p, d = ckpt
    (d / META).write_text(text)
    with refused(match, d / META):
        load_checkpoint(d, p)


@pytest.mark.parametrize("field", ["name", "key", "preset", "train_steps", "history", "weights_sha256",
                                   "weights_bytes", "params", "target"])
def test_a_missing_field_is_refused(ckpt, field):
    p, d = ckpt
    edit(d / META, lambda m: m.pop(field))
    with refused(f"lacks the field '{field}'", d / META):
        load_checkpoint(d, p)


@pytest.mark.parametrize("field, value, match", [
    ("train_steps", "4", "'train_steps' should be an integer, not str"),
    ("train_steps", True, "'train_steps' should be an integer, not bool"),
    ("weights_bytes", 1.5, "'weights_bytes' should be an integer, not float"),
    ("weights_sha256", None, "'weights_sha256' should be a string, not NoneType"),
    ("train_time_s", "fast", "'train_time_s' should be a number, not str"),
    ("history", {}, "'history' should be a list, not dict"),
    ("history", [1, 2], "history entry 0 should be an object with an integer 'step'"),
    ("history", [{"loss": 1.0}], "history entry 0 should be an object with an integer 'step'"),
    ("preset", [], "'preset' should be an object, not list"),
    ("preset", {"format_version": 1}, "has an invalid configuration"),
    ("preset", {"format_version": 1, "scale": "lite", "tunnel": [], "model": "x", "train": {}},
     "has an invalid configuration"),
    ("key", 7, "'key' should be a string, not int"),
])
def test_a_field_of_the_wrong_type_is_refused(ckpt, field, value, match):
    p, d = ckpt
    edit(d / META, lambda m: m.update({field: value}))
    with refused(match, d / META):
        load_checkpoint(d, p)


# ------------------------------------------------------------------------------------------------
# Files that are not regular files, and oversized files


@pytest.mark.parametrize("name", [WEIGHTS, META])
def test_a_symlink_to_a_device_is_refused_without_reading(ckpt, name):
    p, d = ckpt
    (d / name).unlink()
    os.symlink("/dev/urandom", d / name)
    with refused(r"a symlink to /dev/urandom\) is a character device, not a regular file: refused without reading",
                 d / name):
        load_checkpoint(d, p)


@pytest.mark.parametrize("name", [WEIGHTS, META])
def test_a_fifo_is_refused_without_opening(ckpt, name):
    p, d = ckpt
    (d / name).unlink()
    os.mkfifo(d / name)  # opening it for reading would wait for a writer
    with refused("is a FIFO, not a regular file", d / name):
        load_checkpoint(d, p)


@pytest.mark.parametrize("name", [WEIGHTS, META])
def test_a_folder_where_a_file_should_be_is_refused(ckpt, name):
    p, d = ckpt
    (d / name).unlink()
    (d / name).mkdir()
    with refused("is a folder, not a regular file", d / name):
        load_checkpoint(d, p)


def test_a_symlink_to_a_regular_file_is_followed(ckpt, tmp_path):
    """Links are judged by their target: a checkpoint whose files link to regular files loads."""
    p, d = ckpt
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in (WEIGHTS, META):
        shutil.move(d / name, elsewhere / name)
        os.symlink(elsewhere / name, d / name)
    model, meta = load_checkpoint(d, p)
    assert meta["train_steps"] == 4


def test_weights_far_larger_than_recorded_are_refused_before_reading(ckpt, monkeypatch):
    p, d = ckpt
    size = (d / WEIGHTS).stat().st_size
    os.truncate(d / WEIGHTS, size + 2**30)  # sparse: a GiB of zeros appended, costing no disk
    real_open = os.open

    def no_reading_the_weights(path, *args, **kwargs):
        assert not str(path).endswith(WEIGHTS), "the oversized weights were opened"
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_reading_the_weights)
    with refused(f"is truncated or padded \\({size + 2**30:,} bytes, expected {size:,}\\): refused without reading",
                 d / WEIGHTS):
        load_checkpoint(d, p)


def test_a_huge_json_is_refused_before_reading(ckpt):
    p, d = ckpt
    os.truncate(d / META, files.MAX_JSON_BYTES + 1)  # sparse
    with refused("more than the 16,777,216 bytes a checkpoint's JSON may have: refused without reading", d / META):
        load_checkpoint(d, p)


# ------------------------------------------------------------------------------------------------
# Foreign resume states


def save_final_state(train_preset, directory, recorded_preset=None):
    """Train ``train_preset`` and store its final state as a resume state in ``directory``."""
    _, state = fit(train_preset.tunnel, train_preset.model, train_preset.train, run=RunOptions(progress=False))
    save_train_state(directory, state, recorded_preset)
    return directory / "resume" / f"step-{state.step:07d}.json"


def test_a_state_saved_by_train_and_save_records_its_folder_key_and_seal(isolated_cache):
    p = tiny()
    js = save_final_state(p, checkpoint_dir(p), p)
    meta = json.loads(js.read_text())
    assert meta["folder"] == checkpoint_dir(p).name and meta["key"] == p.key() and meta[SEAL] == seal_sha256(meta)
    assert load_train_state(checkpoint_dir(p), p).step == 4


def test_a_resume_state_of_another_architecture_is_refused(isolated_cache):
    p = tiny()
    js = save_final_state(tiny("mlp"), checkpoint_dir(p), p)  # this preset's key on an MLP's weights: the shapes tell
    with refused("holds the weights of another model than bijection-transformer-lite .arch 'transformer'", js):
        train_and_save(p, progress=False, log=lambda _: None)


def test_a_resume_state_of_another_preset_is_refused(isolated_cache):
    p, other = tiny(), tiny(seed=1)  # same architecture, another configuration
    js = save_final_state(other, checkpoint_dir(p), other)
    with refused("is the resume state of another configuration than bijection-transformer-lite", js):
        load_train_state(checkpoint_dir(p), p)


def test_a_resume_state_copied_from_another_folder_is_refused(isolated_cache):
    p, other = tiny(), tiny(seed=1)
    save_final_state(other, checkpoint_dir(other), other)
    shutil.copytree(checkpoint_dir(other) / "resume", checkpoint_dir(p) / "resume")
    with refused(f"is the resume state of {checkpoint_dir(other).name}, not of {checkpoint_dir(p).name}",
                 checkpoint_dir(p) / "resume"):
        load_train_state(checkpoint_dir(p))


@pytest.mark.parametrize("change, match", [
    (lambda m: m.update(resume_format=1), "is a resume state of format 1, this bwt_lite resumes format 2 only"),
    (lambda m: m.pop("resume_format"), "is a resume state of format 1"),
    (lambda m: m.update(loss_sum=m["loss_sum"] + 1.0), "was altered: its fields do not match their meta_sha256"),
    (lambda m: m.update(step=3), "says it is the state of step 3"),
    (lambda m: m.pop("loss_n"), "lacks the field 'loss_n'"),
    (lambda m: m.update(opt_scalars=[]), "'opt_scalars' should be an object, not list"),
    (lambda m: m.pop(SEAL), "has no meta_sha256"),
], ids=["old-format", "no-format", "tampered", "renamed", "missing", "wrong-type", "unsealed"])
def test_a_resume_state_of_another_format_or_edited_is_refused(isolated_cache, change, match):
    p = tiny()
    js = save_final_state(p, checkpoint_dir(p), p)
    edit(js, change)
    with refused(match, js):
        train_and_save(p, progress=False, log=lambda _: None)


def test_a_resume_state_of_the_wrong_shape_or_file_type_is_refused(isolated_cache):
    p = tiny()
    js = save_final_state(p, checkpoint_dir(p), p)
    weights = js.with_suffix(".safetensors")
    weights.unlink()
    os.symlink("/dev/urandom", weights)
    with refused("is a character device, not a regular file", weights):
        load_train_state(checkpoint_dir(p), p)
    js.write_text("[]")
    with refused("holds a JSON list", js):
        load_train_state(checkpoint_dir(p), p)


# ------------------------------------------------------------------------------------------------
# Resealed nonsense, crafted bytes, interrupted clean-ups (the sense behind the seal)


def reseal(path, change):
    """Edit the JSON at ``path`` and give it a matching seal, as someone who knows the format could."""
    meta = json.loads(path.read_text())
    change(meta)
    meta[SEAL] = seal_sha256(meta)
    path.write_text(json.dumps(meta, indent=1))


@pytest.mark.parametrize("change, match", [
    (lambda m: m.update(train_steps=-5), "train_steps = -5"),
    (lambda m: m.update(train_steps=10 ** 9), "train_steps = 1000000000"),
    (lambda m: m["history"][-1].update(entropy_mae_bits=float("nan")), "entropy_mae_bits = nan"),
    (lambda m: m["history"][0].update(kl_bits=-1.0), "kl_bits = -1.0"),
    (lambda m: m.update(train_time_s=-3.0), "train_time_s = -3.0"),
])
def test_resealed_values_no_trained_model_has_are_refused(ckpt, change, match):
    p, d = ckpt
    reseal(d / META, change)
    with refused(f"values no trained model has: .*{re.escape(match)}", d / META):
        load_checkpoint(d, p)


def test_another_seeds_checkpoint_under_this_folder_is_refused(trained, tmp_path):
    p, src = trained
    other = tiny(seed=1)
    train_and_save(other, progress=False, log=lambda _: None, root=tmp_path)
    mine = tmp_path / src.name
    shutil.copytree(checkpoint_dir(other, tmp_path), mine)  # the seed-1 files in the seed-0 folder
    with refused(f"not of the folder {mine.name}", mine / META):
        load_checkpoint(mine)  # without a preset to compare with, the folder's own name tells


def test_crafted_weights_that_match_a_resealed_hash_give_a_checkpoint_error(ckpt):
    p, d = ckpt
    junk = b"\xff" * 200
    (d / WEIGHTS).write_bytes(junk)
    reseal(d / META, lambda m: m.update(weights_sha256=files.sha256_bytes(junk), weights_bytes=len(junk)))
    with refused("is not a readable safetensors file", d / WEIGHTS):
        load_checkpoint(d, p)


def test_resume_states_must_name_their_key_and_a_step_of_the_schedule(isolated_cache):
    p = tiny()
    js = save_final_state(p, checkpoint_dir(p), p)
    reseal(js, lambda m: m.pop("key"))
    with refused("lacks the field 'key'", js):
        load_train_state(checkpoint_dir(p), p)
    reseal(js, lambda m: m.update(key=p.key()))
    late = js.with_name("step-0100000.json")
    js.with_suffix(".safetensors").rename(late.with_suffix(".safetensors"))
    js.rename(late)
    reseal(late, lambda m: m.update(step=100_000))
    with refused("at step 100,000, outside the 4 steps", late):
        load_train_state(checkpoint_dir(p), p)


def test_crafted_resume_bytes_give_a_checkpoint_error(isolated_cache):
    p = tiny()
    js = save_final_state(p, checkpoint_dir(p), p)
    junk = b"\x00" * 64
    js.with_suffix(".safetensors").write_bytes(junk)
    reseal(js, lambda m: m.update(sha256=files.sha256_bytes(junk), bytes=len(junk)))
    with refused("is not a readable safetensors file", js.with_suffix(".safetensors")):
        load_train_state(checkpoint_dir(p), p)


def test_a_clean_up_killed_half_way_never_strands_the_preset(isolated_cache, monkeypatch):
    from pathlib import Path

    from bwt_lite.store.resume import remove_train_states

    p = tiny()
    js = save_final_state(p, checkpoint_dir(p), p)
    real_unlink, calls = Path.unlink, []

    def killed_after_one(self, missing_ok=False):
        if calls:
            raise KeyboardInterrupt  # a kill between two deletions
        calls.append(self)
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        remove_train_states(checkpoint_dir(p))
    monkeypatch.setattr(Path, "unlink", real_unlink)
    assert calls == [js] and js.with_suffix(".safetensors").exists()  # the JSON went first
    assert load_train_state(checkpoint_dir(p), p) is None  # weights without a JSON are no state
    js2 = save_final_state(p, checkpoint_dir(p), p)
    js2.with_suffix(".safetensors").unlink()  # the order of an older clean-up: weights gone, JSON left
    assert load_train_state(checkpoint_dir(p), p) is None
    _, meta = train_and_save(p, progress=False, log=lambda _: None)  # the next run finishes it
    assert meta["train_steps"] == 4 and not (checkpoint_dir(p) / "resume").exists()
