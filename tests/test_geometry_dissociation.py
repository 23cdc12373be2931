"""Frame-precision dissociation: trajectories stored verified (tampering refused), frame measures on
constructed cases, and the diagnostics on a tiny trajectory."""
import json
from dataclasses import replace

import pytest
import torch

from bwt_lite.store.files import CheckpointError
from bwt_lite.geometry.dissociation import frame_precision, key_frame_similarity, layer0_keys, subspace_overlap
from bwt_lite.geometry.trajectory import (SNAPSHOTS, TRAJ_META, TRAJECTORIES, load_trajectory, save_trajectory,
                                          train_trajectory, trajectory_preset)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    p = trajectory_preset("bijection-d64").with_train(steps=20, eval_every=10, eval_episodes=16)
    p = replace(p, model=replace(p.model, d_model=16, n_heads=2))
    traj = train_trajectory(p, (0, 5, 10, 20), name="tiny", progress=False)
    directory = save_trajectory(traj, tmp_path_factory.mktemp("traj"))
    return traj, directory


def test_roundtrip_keeps_steps_history_and_float16_weights(tiny):
    traj, directory = tiny
    loaded = load_trajectory(directory)
    assert loaded.steps == [0, 5, 10, 20] and loaded.history == traj.history
    assert loaded.preset.key() == traj.preset.key()
    for a, b in zip(traj.states, loaded.states):
        assert a.keys() == b.keys()
        for k in a:
            assert b[k].dtype == torch.float16
            assert torch.equal(a[k].to(torch.float16), b[k])
    # step 0 is the initialisation fit starts from; later snapshots differ from it
    assert not torch.equal(loaded.states[0]["embed.tok.weight"], loaded.states[-1]["embed.tok.weight"])
    assert loaded.model_at(20).n_params == traj.model_at(20).n_params


def test_training_is_deterministic(tiny):
    traj, _ = tiny
    again = train_trajectory(traj.preset, (20,), name="tiny", progress=False)
    assert all(torch.equal(again.states[0][k], traj.states[-1][k]) for k in again.states[0])


def _copy(directory, tmp_path):
    dest = tmp_path / directory.name
    dest.mkdir()
    for f in directory.iterdir():
        (dest / f.name).write_bytes(f.read_bytes())
    return dest


def test_a_tampered_weights_file_is_refused(tiny, tmp_path):
    _, directory = tiny
    dest = _copy(directory, tmp_path)
    data = bytearray((dest / SNAPSHOTS).read_bytes())
    data[-3] ^= 0x01  # one bit of one weight
    (dest / SNAPSHOTS).write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="altered"):
        load_trajectory(dest)
    (dest / SNAPSHOTS).write_bytes(bytes(data[:-10]))
    with pytest.raises(CheckpointError, match="truncated"):
        load_trajectory(dest)


def test_a_tampered_json_is_refused(tiny, tmp_path):
    _, directory = tiny
    dest = _copy(directory, tmp_path)
    meta = json.loads((dest / TRAJ_META).read_text())
    meta["preset"]["train"]["lr"] = 1.0  # another configuration under the same key
    (dest / TRAJ_META).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="key does not match"):
        load_trajectory(dest)
    meta = json.loads((directory / TRAJ_META).read_text())
    meta["check"]["entropy_mae_bits"] += 0.01  # weights that no longer give the recorded error
    (dest / TRAJ_META).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="recorded"):
        load_trajectory(dest)
    assert load_trajectory(dest, check=False).steps == [0, 5, 10, 20]


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown trajectory"):
        trajectory_preset("nope")
    p = trajectory_preset("bijection-d64")
    with pytest.raises(ValueError, match="save_steps"):
        train_trajectory(p, (0, p.train.steps + 1))


def test_key_frame_measures_on_constructed_keys():
    g = torch.Generator().manual_seed(0)
    keys = torch.randn(4, 20, 16, generator=g, dtype=torch.float64)
    rot = torch.linalg.qr(torch.randn(16, 16, generator=g, dtype=torch.float64)).Q
    # a rotation and a rescaling keep the geometry (cosines) and, without rotation, the subspace
    assert key_frame_similarity(keys @ rot, keys) == pytest.approx(1.0, abs=1e-12)
    assert subspace_overlap(3.0 * keys, keys, k=4) == pytest.approx(1.0, abs=1e-12)
    other = torch.randn(4, 20, 16, generator=g, dtype=torch.float64)
    assert abs(key_frame_similarity(other, keys)) < 0.15
    # random subspaces overlap k / d_head on average
    null = [subspace_overlap(torch.randn(8, 20, 16, generator=g, dtype=torch.float64), keys.repeat(2, 1, 1), k=4)
            for _ in range(20)]
    assert sum(null) / len(null) == pytest.approx(4 / 16, abs=0.03)


def test_frame_precision_on_the_tiny_trajectory(tiny):
    traj, _ = tiny
    d = frame_precision(traj, episodes=16, pattern_episodes=8, overlap_k=2)
    assert d.steps == [0, 5, 10, 20]
    assert d.pattern[-1] == pytest.approx(1.0) and d.key_frame[-1] == pytest.approx(1.0)
    assert d.key_overlap[-1] == pytest.approx(1.0) and d.values[-1] == 0.0
    assert d.overlap_null == 2 / 8
    assert d.settled_step(0.0) == 0 and d.at(20)["key_frame"] == pytest.approx(1.0)
    assert layer0_keys(traj.model_at(20)).shape == (2, 20, 8)


def test_the_registered_trajectories_fit_the_size_budget():
    for name, spec in TRAJECTORIES.items():
        p = trajectory_preset(name)
        from bwt_lite.models import build_model

        with torch.device("meta"):
            n = build_model(p.model).n_params
        assert n * 2 * len(spec["save_steps"]) < 8e6  # float16 snapshots, under 8 MB
        assert spec["save_steps"][0] == 0 and spec["save_steps"][-1] == p.train.steps


def test_the_shipped_trajectory_loads_verified_and_is_packaged():
    from pathlib import Path

    from bwt_lite.geometry.trajectory import find_trajectory

    traj = load_trajectory("bijection-d64")  # hash, key and the stored check value
    assert traj.steps == list(TRAJECTORIES["bijection-d64"]["save_steps"]) and traj.dtype == "float16"
    assert traj.history and traj.history[-1]["step"] == traj.steps[-1]
    directory = find_trajectory("bijection-d64")
    assert (directory / SNAPSHOTS).stat().st_size < 8e6
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '"data/trajectories/*/*.safetensors"' in pyproject and '"data/trajectories/*/*.json"' in pyproject
