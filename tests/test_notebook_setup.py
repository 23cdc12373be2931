"""setup_notebook, the first call of every chapter: its arguments and the cache are checked as the
command line checks them, before anything is seeded."""
from __future__ import annotations

import random

import pytest
import torch

from bwt_lite import setup_notebook


@pytest.mark.parametrize("kwargs, match", [
    ({"device": "bogus"}, "unknown device 'bogus'"),
    ({"device": 3}, "device must be a string"),
    ({"seed": 1.5}, "seed must be an integer"),
    ({"seed": "0"}, "seed must be an integer"),
    ({"seed": True}, "seed must be an integer"),
    ({"seed": -1}, "seed must be an integer"),
    ({"seed": 2 ** 32}, "seed must be an integer"),
])
def test_bad_arguments_are_refused_before_anything_is_seeded(kwargs, match, isolated_cache):
    random.seed(123)
    before = random.random()
    random.seed(123)
    with pytest.raises((ValueError, TypeError), match=match):
        setup_notebook(verbose=False, **kwargs)
    assert random.random() == before  # python's generator untouched


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible here")
def test_cuda_without_a_gpu_is_refused(isolated_cache):
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        setup_notebook(device="cuda", verbose=False)


@pytest.mark.parametrize("kind, match", [("file", "is not a directory"), ("under-file", "is a file, not a folder"),
                                         ("newline", "control character")])
def test_the_cache_is_checked_as_the_command_line_checks_it(tmp_path, monkeypatch, kind, match):
    target = tmp_path / "cache-file"
    target.write_text("not a folder")
    path = {"file": str(target), "under-file": str(target / "sub"), "newline": f"{tmp_path / 'c'}\n"}[kind]
    monkeypatch.setenv("BWT_CACHE_DIR", path)
    with pytest.raises(ValueError, match=f"BWT_CACHE_DIR.*{match}"):
        setup_notebook(verbose=False)


def test_a_good_setup_seeds_and_names_its_cache(isolated_cache):
    setup = setup_notebook(seed=7, device="cpu", verbose=False)
    assert setup.device == "cpu" and setup.seed == 7 and setup.cache_dir.is_dir()
    assert torch.initial_seed() == 7


def test_bwt_version(capsys):
    from bwt_lite import __version__
    from bwt_lite.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith(f"bwt_lite {__version__}")
