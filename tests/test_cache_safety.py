"""The cache root: its marker, and `bwt cache clear`, which removes only what the cache wrote, refuses a
folder that is not a cache, and reports what it could not remove."""
import errno
import json
import os

import pytest
from filelock import FileLock

from bwt_lite.checkpoints import checkpoint_dir, load_or_train, train_and_save
from bwt_lite.store.cache import LOCK, MARKER, CacheError, clear_cache, is_cache_root, prepare_root
from bwt_lite.store.resume import save_train_state
from bwt_lite.cli import main
from bwt_lite.recipes import get_preset
from bwt_lite.train import RunOptions, fit


def tiny(**kw):
    base = dict(steps=4, batch_size=8, eval_every=2, eval_episodes=16, warmup_steps=1)
    return get_preset("bijection", "transformer", "lite", **{**base, **kw})


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink())


def clear(capsys):
    """`bwt cache clear` on the cache of the test: (rc, stdout, stderr)."""
    rc = main(["cache", "clear"])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def filled(isolated_cache):
    """A cache made by bwt_lite: a finished checkpoint, a partial one (a resume state, a leftover temporary
    file), and things it did not write, among them a folder named like a checkpoint and a symlink."""
    done, partial = tiny(), tiny(seed=1)
    train_and_save(done, progress=False, log=lambda _: None)
    _, state = fit(partial.tunnel, partial.model, partial.train, run=RunOptions(progress=False))
    save_train_state(checkpoint_dir(partial), state, partial)
    (checkpoint_dir(partial) / ".model.safetensors.abc123_x.tmp").write_bytes(b"half")  # a killed write
    staging = isolated_cache / f".download-{checkpoint_dir(done).name}-k2j4_x9a"  # a killed download
    staging.mkdir()
    (staging / "model.safetensors").write_bytes(b"w")
    (staging / "tmpq8_3zz1a").write_bytes(b"part")
    (isolated_cache / "..bwt-cache.x1y2z3ab.tmp").write_text("{")  # a killed marker write
    outside = isolated_cache.parent / "outside"
    outside.mkdir()
    (outside / "model.safetensors").write_bytes(b"not the cache's")
    (isolated_cache / "notes.txt").write_text("mine")
    (isolated_cache / "photos").mkdir()
    (isolated_cache / "photos" / "cat.jpg").write_bytes(b"jpg")
    (isolated_cache / "look-alike-0123456789abcdef").mkdir()  # named like a checkpoint, holding a user's file
    (isolated_cache / "look-alike-0123456789abcdef" / "thesis.tex").write_text("mine")
    os.symlink(outside, isolated_cache / "linked-0123456789abcdef")  # a link named like a checkpoint
    (isolated_cache / "file-0123456789abcdef").write_text("a file, not a folder")
    return isolated_cache, done, partial, outside


def test_the_cache_marks_the_root_it_creates(isolated_cache):
    assert not isolated_cache.exists()
    load_or_train(tiny(), progress=False, log=lambda _: None)
    marker = json.loads((isolated_cache / MARKER).read_text())
    assert marker["written_by"] == "bwt_lite" and marker["format"] == 1 and is_cache_root(isolated_cache)


def test_an_empty_existing_folder_is_adopted(isolated_cache):
    isolated_cache.mkdir()
    assert prepare_root(isolated_cache) and is_cache_root(isolated_cache)


def test_a_folder_of_ones_own_is_used_but_never_cleared(isolated_cache, capsys):
    """BWT_CACHE_DIR pointing at a folder that already holds files: checkpoints are written to and read
    from it, but it is not marked, and `cache clear` refuses it, naming it and saying why."""
    isolated_cache.mkdir()
    (isolated_cache / "notes.txt").write_text("mine")
    logs = []
    load_or_train(tiny(), progress=False, log=logs.append)
    load_or_train(tiny(), progress=False, log=logs.append)
    assert len(logs) == 1 and not is_cache_root(isolated_cache)  # trained once, then loaded
    before = files_under(isolated_cache)
    rc, out, err = clear(capsys)
    assert rc == 2 and out == ""
    assert f"refusing to clear {isolated_cache}: it has no {MARKER} marker" in err and "nothing was removed" in err
    assert files_under(isolated_cache) == before and "notes.txt" in before
    with pytest.raises(CacheError, match="refusing to clear"):
        clear_cache(isolated_cache)


def test_a_fake_or_linked_marker_does_not_make_a_cache(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / MARKER).write_text("{}")
    assert not is_cache_root(root)  # not written by bwt_lite
    (root / MARKER).unlink()
    real = tmp_path / "real-marker"
    real.write_text(json.dumps({"written_by": "bwt_lite"}))
    os.symlink(real, root / MARKER)
    assert not is_cache_root(root)  # the cache writes a file, never a link


def test_clear_removes_only_what_the_cache_wrote(filled, capsys):
    root, done, partial, outside = filled
    rc, out, err = clear(capsys)
    assert rc == 0 and err == ""
    assert not checkpoint_dir(done).exists() and not checkpoint_dir(partial).exists()
    assert files_under(root) == sorted([MARKER, "file-0123456789abcdef", "linked-0123456789abcdef",
                                        "look-alike-0123456789abcdef/thesis.tex", "notes.txt", "photos/cat.jpg"])
    assert (outside / "model.safetensors").read_bytes() == b"not the cache's"  # the link was not followed
    assert "removed 3 checkpoint folder(s)" in out and str(root) in out
    assert "left 5 item(s) bwt_lite did not write" in out and "notes.txt" in out
    rc, out, _ = clear(capsys)  # nothing of the cache's left: a second clear removes nothing
    assert rc == 0 and "removed 0 checkpoint folder(s) (0 file(s))" in out


def test_clear_reports_files_it_could_not_remove(filled, capsys, monkeypatch):
    """An unwritable checkpoint folder (simulated: the tests may run as root, whom permissions do not
    stop): the failures are reported, the rest is cleared, and the exit status says it failed."""
    root, done, partial, _ = filled
    real_unlink = os.unlink
    stuck = checkpoint_dir(done)

    def unlink(path, *args, **kwargs):
        if os.path.dirname(os.fspath(path)) == str(stuck):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    rc, out, err = clear(capsys)
    assert rc == 1
    assert f"could not remove {stuck / 'checkpoint.json'}: Permission denied" in err
    assert f"could not remove {stuck / 'model.safetensors'}: Permission denied" in err
    assert "removed 2 checkpoint folder(s)" in out and "could not remove 3 item(s)" in out  # json, weights, lock
    assert (stuck / "model.safetensors").exists() and not checkpoint_dir(partial).exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root is not stopped by file permissions")
def test_clear_on_a_read_only_folder_reports_the_failure(filled, capsys):
    root, done, _, _ = filled
    os.chmod(checkpoint_dir(done), 0o555)
    try:
        rc, out, err = clear(capsys)
    finally:
        os.chmod(checkpoint_dir(done), 0o755)
    assert rc == 1 and "Permission denied" in err and (checkpoint_dir(done) / "model.safetensors").exists()


def test_clear_skips_a_checkpoint_a_run_is_training(filled, capsys):
    root, done, partial, _ = filled
    with FileLock(checkpoint_dir(partial) / LOCK):
        rc, out, _ = clear(capsys)
    assert rc == 0 and "skipped 1 in use by a training run" in out and checkpoint_dir(partial).name in out
    assert (checkpoint_dir(partial) / "resume").is_dir() and not checkpoint_dir(done).exists()


def test_clear_of_a_missing_cache_says_so(isolated_cache, capsys):
    rc, out, _ = clear(capsys)
    assert rc == 0 and out.strip() == f"nothing to clear: {isolated_cache} does not exist"


def test_clear_removes_a_left_over_writability_probe(tmp_path):
    """`bwt` probes the cache with a folder like this; clear removes one an interruption left behind."""
    from bwt_lite.cli import check_cache_dir

    root = tmp_path / "cache"
    check_cache_dir(root)
    probe = root / ".bwt-probe-abc123_xxxx"
    (probe / "resume").mkdir(parents=True)
    (probe / "resume" / ("x" * 40)).write_bytes(b"")
    report = clear_cache(root)
    assert not probe.exists() and report.ok
