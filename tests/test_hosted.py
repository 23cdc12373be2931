"""Hosted checkpoints, served from 127.0.0.1 (no real network): download, verify, refuse, retry."""
import functools
import http.server
import shutil
import socket
import threading
from pathlib import Path

import pytest
import torch

from bwt_lite.checkpoints import checkpoint_dir, load_or_train, train_and_save
from bwt_lite.store import hosted
from bwt_lite.store.cache import MARKER
from bwt_lite.store.hosted import REGISTRY, HostedDownloadError, fetch_checkpoint, hosted_checkpoint, registry_entry
from bwt_lite.recipes import get_preset


def tiny():
    return get_preset("bijection", "transformer", "lite", steps=6, batch_size=8, eval_every=3, eval_episodes=16,
                      warmup_steps=2)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Serve tmp_path/www on 127.0.0.1; yields (folder, base URL)."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    www = tmp_path / "www"
    www.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def published(server, tmp_path, monkeypatch):
    """A tiny preset trained elsewhere, its two files served, and a registry entry for it."""
    www, base = server
    preset = tiny()
    model, _ = train_and_save(preset, progress=False, log=lambda _: None, root=tmp_path / "maintainer")
    folder = checkpoint_dir(preset, tmp_path / "maintainer")
    for f in folder.iterdir():
        shutil.copy(f, www / f.name)
    entry = registry_entry(folder, base)
    monkeypatch.setitem(REGISTRY, preset.name, entry)
    return preset, entry, www, model


def cached_files(cache: Path) -> list[str]:
    """The files in the cache but its marker."""
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*")
                  if p.is_file() and p.name != MARKER) if cache.exists() else []


def test_published_entries_are_presets_with_matching_keys():
    """Whatever is published names a paper preset and was trained from exactly its configuration."""
    from bwt_lite.release import paper_presets

    names = {p.name: p for p in paper_presets()}
    for name, entry in REGISTRY.items():
        assert name in names, f"registry entry {name!r} is not a paper preset's name"
        assert entry.key == names[name].key(), f"hosted {name} was trained from another configuration"
        for f in (entry.weights, entry.meta):
            assert f.url.startswith("https://") and len(f.sha256) == 64 and f.size > 0


def test_unlisted_preset_is_not_downloaded_and_is_trained(isolated_cache, monkeypatch):
    """A preset the registry does not list is unpublished: no download is tried, load_or_train trains it."""
    preset = tiny()
    assert preset.name not in REGISTRY and hosted_checkpoint(preset) is None
    assert fetch_checkpoint(preset, log=pytest.fail) is None
    assert not isolated_cache.exists()
    monkeypatch.setattr(hosted, "_download", lambda *a, **k: pytest.fail("no download for an unlisted preset"))
    _, meta = load_or_train(preset, progress=False, log=lambda _: None)
    assert meta["train_steps"] == 6 and meta["key"] == preset.key()


def test_listed_preset_is_downloaded_and_verified(published, isolated_cache, monkeypatch):
    """A listed preset is fetched and its checkpoint verified as a whole before it is kept."""
    preset, entry, _, _ = published
    assert hosted_checkpoint(preset) == entry
    verified = []
    real = hosted.load_checkpoint
    monkeypatch.setattr(hosted, "load_checkpoint", lambda folder, p: verified.append(p.name) or real(folder, p))
    folder = fetch_checkpoint(preset, log=lambda _: None)
    assert verified == [preset.name] and folder == checkpoint_dir(preset)
    assert sorted(f.name for f in folder.iterdir()) == ["checkpoint.json", "model.safetensors"]


def test_served_file_with_the_right_hash_is_cached_and_loaded(published, isolated_cache):
    preset, entry, www, model = published
    logs = []
    loaded, meta = load_or_train(preset, progress=False, log=logs.append)
    assert len(logs) == 1 and logs[0].startswith(f"downloading {preset.name}")
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.state_dict().values()))
    assert meta["key"] == preset.key()
    name = checkpoint_dir(preset).name
    assert cached_files(isolated_cache) == [f"{name}/checkpoint.json", f"{name}/model.safetensors"]
    assert (isolated_cache / MARKER).is_file()  # the download created the cache, so it is marked as one
    shutil.rmtree(www)  # the server has nothing now: the second load comes from the cache
    again, _ = load_or_train(preset, progress=False, log=pytest.fail)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))


@pytest.mark.parametrize("damage", ["tampered", "truncated"])
def test_tampered_or_truncated_file_is_refused_and_nothing_stays(published, isolated_cache, damage):
    preset, entry, www, _ = published
    data = bytearray((www / "model.safetensors").read_bytes())
    if damage == "tampered":
        data[-3] ^= 0xFF
    else:
        data = data[: len(data) // 2]
    (www / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(HostedDownloadError) as e:
        load_or_train(preset, progress=False, log=lambda _: None)
    msg = str(e.value)
    assert preset.name in msg and entry.weights.sha256 in msg and "nothing was kept" in msg
    assert cached_files(isolated_cache) == []


def test_tampered_json_is_refused(published, isolated_cache):
    preset, entry, www, _ = published
    text = (www / "checkpoint.json").read_text().replace('"train_steps": 6', '"train_steps": 7')
    (www / "checkpoint.json").write_text(text)
    with pytest.raises(HostedDownloadError, match=f"{preset.name}.*{entry.meta.sha256}"):
        fetch_checkpoint(preset, log=lambda _: None)
    assert cached_files(isolated_cache) == []


def test_consistent_but_wrong_files_are_refused(published, isolated_cache, monkeypatch):
    """Files whose hashes match the registry but belong to another configuration never load."""
    preset, entry, www, _ = published
    other = tiny().with_train(seed=1)
    monkeypatch.setitem(REGISTRY, other.name, hosted.HostedCheckpoint(other.key(), entry.weights, entry.meta))
    with pytest.raises(HostedDownloadError, match="does not verify.*another configuration"):
        fetch_checkpoint(other, log=lambda _: None)
    assert cached_files(isolated_cache) == []


def test_published_json_with_an_edited_field_is_refused_by_its_seal(published, isolated_cache, monkeypatch):
    """A registry entry that matches an edited checkpoint.json (the maintainer published a wrong file):
    the files download, but the metadata seal refuses the edited field and nothing stays."""
    preset, entry, www, _ = published
    text = (www / "checkpoint.json").read_text().replace('"train_steps": 6', '"train_steps": 999999')
    (www / "checkpoint.json").write_text(text)
    meta = hosted.HostedFile(entry.meta.url, hosted.sha256_bytes(text.encode()), len(text.encode()))
    monkeypatch.setitem(REGISTRY, preset.name, hosted.HostedCheckpoint(entry.key, entry.weights, meta))
    with pytest.raises(HostedDownloadError, match="does not verify.*altered.*meta_sha256"):
        fetch_checkpoint(preset, log=lambda _: None)
    assert cached_files(isolated_cache) == []


def test_offline_gives_a_clear_error_after_retries(published, isolated_cache, monkeypatch):
    preset, entry, _, _ = published
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = hosted.HostedFile(f"http://127.0.0.1:{port}/model.safetensors", entry.weights.sha256, entry.weights.size)
    monkeypatch.setitem(REGISTRY, preset.name, hosted.HostedCheckpoint(entry.key, dead, entry.meta))
    sleeps = []
    monkeypatch.setattr(hosted.time, "sleep", sleeps.append)
    with pytest.raises(HostedDownloadError, match=f"{preset.name}.*after 3 attempts.*offline.*download=False"):
        load_or_train(preset, progress=False, log=lambda _: None)
    assert sleeps == [2.0, 4.0]
    assert cached_files(isolated_cache) == []
    # download=False trains instead
    _, meta = load_or_train(preset, progress=False, log=lambda _: None, download=False)
    assert meta["train_steps"] == 6


def test_missing_file_is_not_retried(published, isolated_cache, monkeypatch):
    preset, entry, www, _ = published
    (www / "model.safetensors").unlink()
    monkeypatch.setattr(hosted.time, "sleep", pytest.fail)
    with pytest.raises(HostedDownloadError, match="HTTP 404"):
        fetch_checkpoint(preset, log=lambda _: None)


def test_entry_for_another_configuration_is_ignored(published, isolated_cache, monkeypatch):
    preset, entry, _, _ = published
    monkeypatch.setitem(REGISTRY, preset.name, hosted.HostedCheckpoint("0" * 64, entry.weights, entry.meta))
    assert hosted_checkpoint(preset) is None and fetch_checkpoint(preset, log=pytest.fail) is None
