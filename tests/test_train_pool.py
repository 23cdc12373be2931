"""Training presets side by side in worker processes (`bwt reproduce --jobs`)."""
from dataclasses import replace

import pytest
import torch

from bwt_lite import reproduce
from bwt_lite.orchestration import pool as train_pool
from bwt_lite.checkpoints import checkpoint_dir, find_checkpoint, load_checkpoint, train_and_save
from bwt_lite.recipes import get_preset


def tiny(tunnel, arch, scale="lite", **overrides):
    p = get_preset(tunnel, arch, scale, steps=4, batch_size=4, eval_every=2, eval_episodes=8, warmup_steps=1)
    return replace(p, model=replace(p.model, d_model=16, n_heads=2, n_layers=1))


def test_pool_trains_each_preset_as_a_serial_run_would(tmp_path, capfd):
    presets = [tiny("bijection", "transformer"), tiny("regression", "lstm")]
    lines = []
    done = train_pool.train_presets(presets, jobs=2, threads=1, log_every_s=1e-9, log=lines.append)
    out, err = capfd.readouterr()
    assert out == "" and "[bijection-transformer-lite] training " in err  # workers log to stderr only
    assert set(done) == {p.name for p in presets} and all(s > 0 for s in done.values())
    assert lines[0].startswith("training 2 preset(s), 2 at a time with 1 thread(s) each")
    assert sum(line.startswith("finished ") for line in lines) == 2
    for p in presets:
        pooled, meta = load_checkpoint(find_checkpoint(p), p)  # verified, in the cache
        assert meta["train_steps"] == 4 and meta["train_time_s"] == done[p.name]
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            serial, _ = train_and_save(p, progress=False, log=lambda _: None, root=tmp_path / "serial")
        finally:
            torch.set_num_threads(threads)
        for (name, a), b in zip(pooled.state_dict().items(), serial.state_dict().values()):
            assert torch.equal(a, b), name  # same seed, same stream, one thread: the same weights


def test_pool_order_input_checks_and_empty_list():
    assert train_pool.train_presets([], jobs=2, log=lambda _: None) == {}
    with pytest.raises(ValueError, match="jobs"):
        train_pool.train_presets([tiny("hmm", "mlp")], jobs=0)
    with pytest.raises(ValueError, match="threads"):
        train_pool.train_presets([tiny("hmm", "mlp")], jobs=1, threads=0)
    # longest first: a shipped checkpoint's recorded time, else the step count
    shipped = get_preset("bijection", "transformer")
    assert train_pool.expected_seconds(shipped) > 600  # the 10,000-step lite run took minutes
    assert train_pool.expected_seconds(tiny("hmm", "mlp")) == 4.0
    with pytest.raises(ValueError, match="jobs"):
        reproduce.reproduce("lite", jobs=0)


def test_reproduce_with_jobs_trains_in_the_pool_then_evaluates(monkeypatch):
    monkeypatch.setattr(reproduce, "get_preset", tiny)
    calls = []
    monkeypatch.setattr(reproduce, "load_or_train", lambda preset, **kw: (calls.append(kw["retrain"]),
                                                                          load_checkpoint(find_checkpoint(preset),
                                                                                          preset))[1])
    rows = reproduce.reproduce("lite", episodes=8, download=False, jobs=2, archs=["mlp", "mamba"],
                               tunnels=["recall"], device="cpu", log=lambda _: None, baseline_rows=False)
    assert calls == [False, False]  # both cells were trained by the pool and only loaded here
    assert [r["arch"] for r in rows] == ["mlp", "mamba"] and all(r["train_steps"] == 4 for r in rows)
    assert all(r["train_time_s"] > 0 for r in rows)
    for arch in ("mlp", "mamba"):
        assert find_checkpoint(tiny("recall", arch)) == checkpoint_dir(tiny("recall", arch))  # in the cache


def test_ship_with_jobs_trains_the_missing_ones_into_the_shipped_folder(monkeypatch, tmp_path, capsys):
    from bwt_lite import recipes
    from bwt_lite.cli import main, runs

    monkeypatch.setattr(runs, "SHIPPED_DIR", tmp_path / "shipped")
    monkeypatch.setattr(recipes, "shipped_presets", lambda: [tiny("bijection", "mlp"), tiny("hmm", "lstm")])
    assert main(["ship", "--jobs", "2", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count(": trained in ") == 2 and "bijection-mlp-lite:" in out and "hmm-lstm-lite-soft:" in out
    for p in recipes.shipped_presets():
        load_checkpoint(checkpoint_dir(p, tmp_path / "shipped"), p)  # complete and verified
    assert main(["ship", "--jobs", "2", "--no-progress"]) == 0
    assert capsys.readouterr().out.count(": shipped (") == 2  # nothing left to train
