"""The `bwt` command line, end to end in subprocesses (a SIGKILLed training run resumes)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from bwt_lite.cli import main
from bwt_lite.recipes import get_preset, resolve_tunnel_args
from bwt_lite.tunnels import TUNNELS, make_tunnel

BWT = [sys.executable, "-m", "bwt_lite.cli"]


def run(args, env=None, **kw):
    return subprocess.run(BWT + args, capture_output=True, text=True, env={**os.environ, **(env or {})}, **kw)


def test_episode_json_has_posterior_per_position(capsys):
    assert main(["episode", "bijection", "--seed", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["tokens"]) == 37 and out["positions"] == list(range(0, 37, 2))
    assert out["answer_tokens"] == list(range(20, 40))
    assert len(out["posterior"]) == 19 and all(len(p) == 20 for p in out["posterior"])
    revealed = {t - 20 for t in out["tokens"][1::2]}
    last = out["posterior"][-1]
    assert sum(last) == pytest.approx(1.0)
    assert all(last[v] == 0.0 for v in revealed) and sorted(set(last)) == [0.0, 0.5]


def test_episode_paired_variant(capsys):
    assert main(["episode", "bijection", "--variant", "paired", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["variant"] == "paired" and len(out["tokens"]) == 39 and max(out["posterior"][-1]) == 1.0


def test_episode_uses_the_variants_own_tunnel_arguments(capsys):
    # the slow HMM is 3 states over 30 steps (VARIANT_ARGS), as the models of its cell are trained on
    assert main(["episode", "hmm", "--variant", "slow", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["variant"], out["S"], out["O"], out["K"]) == ("slow", 3, 5, 30) and len(out["target"]) == 30


@pytest.mark.parametrize("tunnel", sorted(TUNNELS))
def test_episode_variant_info_and_eval_resolve_one_tunnel(tunnel, capsys):
    # every command that takes --variant builds the tunnel that training builds (resolve_tunnel_args)
    for variant in (None, *TUNNELS[tunnel].variants):
        flag = [] if variant is None else ["--variant", variant]
        trained = make_tunnel(**resolve_tunnel_args(tunnel, variant)).config()
        assert main(["episode", tunnel, "--json", *flag]) == 0
        out = json.loads(capsys.readouterr().out)
        assert {k: out[k] for k in trained} == trained, (tunnel, variant)
        assert main(["info", tunnel, "mlp", "--json", *flag]) == 0
        assert json.loads(capsys.readouterr().out)["tunnel"] == trained, (tunnel, variant)


def test_eval_of_a_variant_scores_its_own_tunnel_and_an_explicit_length_wins():
    from bwt_lite.cli import eval_tunnel

    slow = get_preset("hmm", "transformer", variant="slow")
    assert {k: slow.tunnel[k] for k in ("S", "O", "K")} == {"S": 3, "O": 5, "K": 30}
    assert eval_tunnel(slow).config() == slow.tunnel
    longer = eval_tunnel(slow, 50).config()
    assert (longer["S"], longer["K"], longer["variant"]) == (3, 50, "slow")
    assert resolve_tunnel_args("hmm", "slow", length=12)["K"] == 12


def test_info_json_reports_exact_parameter_count(capsys):
    assert main(["info", "bijection", "transformer", "--scale", "paper", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"] == 2_677_440 and out["train"]["lr"] == 3e-4 and out["train"]["steps"] == 50_000
    assert out["key"] == get_preset("bijection", "transformer", "paper").key()


@pytest.mark.parametrize("argv, fragment", [
    (["info", "nope", "transformer"], "argument tunnel: invalid choice: 'nope'"),
    (["info", "bijection", "rnn"], "argument arch: invalid choice: 'rnn'"),
    (["info", "bijection", "mlp", "--scale", "huge"], "argument --scale: invalid choice: 'huge'"),
    (["episode", "bijection", "--variant", "x"], "unknown variant 'x'; allowed: separate, paired, replacement"),
])
def test_bad_input_names_argument_and_choices(argv, fragment, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and fragment in capsys.readouterr().err


def test_eval_json_fields_from_shipped_checkpoint(capsys):
    assert main(["eval", "bijection", "mlp", "--episodes", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in ("tunnel", "arch", "scale", "params", "train_steps", "entropy_mae_bits", "kl_bits", "tv", "accuracy"):
        assert k in out
    assert len(out["per_position"]["h_model"]) == len(out["per_position"]["h_bayes"]) == 19


def test_sigkill_during_training_resumes(isolated_cache):
    args = ["train", "bijection", "transformer", "--steps", "60", "--ckpt-every", "10", "--no-progress"]
    proc = subprocess.Popen(BWT + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BWT_CACHE_DIR": str(isolated_cache)})
    resume = None
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        found = list(Path(isolated_cache).glob("*/resume/step-*.json"))
        if found and int(found[0].stem.split("-")[1]) >= 20:
            resume = found[0]
            break
        time.sleep(0.05)
    assert resume is not None, "no periodic checkpoint appeared"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    second = run(args, env={"BWT_CACHE_DIR": str(isolated_cache)}, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "resuming bijection-transformer-lite from step" in second.stderr
    assert "60 steps" in second.stdout
    # the resumed run ends where an uninterrupted one does
    third = run(args + ["--fresh"], env={"BWT_CACHE_DIR": str(isolated_cache / "other")}, timeout=300)
    assert third.returncode == 0
    from safetensors.torch import load_file
    a = load_file(next(Path(isolated_cache).glob("bijection-*/model.safetensors")))
    b = load_file(next(Path(isolated_cache / "other").glob("bijection-*/model.safetensors")))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_bwt_debug_reraises_with_the_traceback(monkeypatch):
    monkeypatch.setenv("BWT_DEBUG", "1")
    with pytest.raises(ValueError, match="unknown variant 'x'"):
        main(["episode", "bijection", "--variant", "x"])


def test_check_cache_dir_creates_a_marked_cache_and_leaves_nothing_else(isolated_cache):
    from bwt_lite.store.cache import MARKER, is_cache_root
    from bwt_lite.cli import check_cache_dir

    assert not isolated_cache.exists()
    assert check_cache_dir() == isolated_cache and [p.name for p in isolated_cache.iterdir()] == [MARKER]
    assert is_cache_root(isolated_cache)


def test_allow_cpu_paper_prints_the_estimate_then_trains(monkeypatch, capsys):
    from bwt_lite.cli import train_eval
    from bwt_lite.orchestration import bench

    monkeypatch.setattr(bench, "steps_per_second", lambda preset, *a, **kw: {"ms_per_step": 4000.0})
    trained = []
    monkeypatch.setattr(train_eval, "train_and_save", lambda preset, **kw: (
        trained.append(preset.name), (None, {"history": [], "train_steps": 50_000, "train_time_s": 1.0}))[1])
    assert main(["train", "bijection", "transformer", "--scale", "paper", "--device", "cpu", "--allow-cpu-paper"]) == 0
    err = capsys.readouterr().err
    assert "4.00 s per step" in err and "50,000 steps: about 55 h 33 min" in err  # 50,000 x 4 s
    assert trained == ["bijection-transformer-paper"]


def test_eval_of_a_paper_preset_that_is_found_needs_no_flag(monkeypatch):
    from bwt_lite.cli import common, train_eval

    class Loaded(Exception):
        pass

    def load(preset, **kw):
        raise Loaded
    for module in (common, train_eval):  # would_train (common) and cmd_eval (train_eval) both look
        monkeypatch.setattr(module, "find_checkpoint", lambda preset: Path("found"))
    monkeypatch.setattr(train_eval, "load_or_train", load)
    with pytest.raises(Loaded):  # reached loading: no --allow-cpu-paper asked for
        main(["eval", "bijection", "transformer", "--scale", "paper", "--device", "cpu"])


def test_eval_length_is_honoured_or_refused(capsys):
    from bwt_lite.cli import eval_tunnel

    assert eval_tunnel(get_preset("recall", "transformer"), 10).config()["L"] == 10
    with pytest.raises(ValueError, match="--length is not supported by tunnel 'recall', variant 'mqar'"):
        eval_tunnel(get_preset("recall", "transformer", variant="mqar"), 10)
