"""A curriculum in the training config: the first ``easy_steps`` steps on an easier tunnel."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from bwt_lite.recipes import get_preset
from bwt_lite.runtime.options import RunOptions
from bwt_lite.train import easy_tunnel, fit, init_model, make_optimizer, train_step
from bwt_lite.train_config import TrainConfig
from bwt_lite.tunnels import make_tunnel


def small_slow_hmm(**train):
    p = get_preset("hmm", "transformer", "lite", variant="slow")
    model = replace(p.model, d_model=16, n_layers=1, n_heads=2)
    cfg = replace(p.train, steps=6, batch_size=4, eval_every=6, eval_episodes=8, ema=0.0, **train)
    return p.tunnel, model, cfg


def test_fit_trains_the_first_steps_on_the_easier_tunnel():
    tunnel_cfg, model_cfg, cfg = small_slow_hmm(easy_steps=4, easy_tunnel=(("sharpen", 3.0),))
    model, state = fit(tunnel_cfg, model_cfg, cfg, run=RunOptions(progress=False))
    # the same steps by hand: four batches of sharpened episodes, then two of the tunnel's own
    tunnel, easy = make_tunnel(**tunnel_cfg), make_tunnel(**tunnel_cfg, sharpen=3.0)
    ref = init_model(model_cfg, cfg.seed)
    opt, gen = make_optimizer(ref, cfg), torch.Generator().manual_seed(cfg.seed)
    for step in range(cfg.steps):
        train_step(ref, ref, opt, (easy if step < 4 else tunnel).sample(cfg.batch_size, gen), cfg, step,
                   device=torch.device("cpu"))
    for a, b in zip(model.parameters(), ref.parameters()):
        assert torch.equal(a, b)
    plain, _ = fit(tunnel_cfg, model_cfg, replace(cfg, easy_steps=0, easy_tunnel=()), run=RunOptions(progress=False))
    assert any(not torch.equal(a, b) for a, b in zip(model.parameters(), plain.parameters()))
    assert state.history[-1]["step"] == cfg.steps  # evaluated on the tunnel itself, as every run is


def test_the_curriculum_is_part_of_the_key_only_when_set():
    p = get_preset("hmm", "transformer", "lite")  # the default HMM's recipe has no curriculum
    assert "easy_steps" not in p.to_dict()["train"] and "easy_tunnel" not in p.to_dict()["train"]
    easy = replace(p, train=replace(p.train, easy_steps=2000, easy_tunnel={"sharpen": 3}))
    d = easy.to_dict()["train"]
    assert d["easy_steps"] == 2000 and d["easy_tunnel"] == {"sharpen": 3}
    assert TrainConfig.from_dict(d) == easy.train and easy.key() != p.key()
    slow = get_preset("hmm", "transformer", "lite", variant="slow")  # the slow HMM's recipe has one
    assert slow.train.easy_steps == 3000 and dict(slow.train.easy_tunnel) == {"sharpen": 6.0}


def test_every_architecture_trains_on_the_hmms_soft_targets():
    from bwt_lite.models import ARCHS

    for arch in ARCHS:
        for scale in ("lite", "paper"):
            assert get_preset("hmm", arch, scale).train.target == "soft"
    assert get_preset("hmm", "mlp", "lite", target="sampled").train.target == "sampled"  # an override still wins
    assert get_preset("bijection", "transformer", "lite").train.target == "sampled"


@pytest.mark.parametrize("fields", [{"easy_steps": 10}, {"easy_tunnel": (("sharpen", 2.0),)}, {"easy_steps": -1}])
def test_a_half_set_curriculum_is_refused(fields):
    with pytest.raises(ValueError, match="easy_steps"):
        TrainConfig(**fields)


def test_an_easier_tunnel_of_another_shape_is_refused():
    tunnel_cfg, _, cfg = small_slow_hmm(easy_steps=2, easy_tunnel=(("K", 10),))
    with pytest.raises(ValueError, match="does not fit the model"):
        easy_tunnel(tunnel_cfg, cfg)


def test_train_step_reports_the_gradient_norm_before_clipping():
    tunnel_cfg, model_cfg, cfg = small_slow_hmm()
    model, stats = init_model(model_cfg, 0), {}
    train_step(model, model, make_optimizer(model, cfg), make_tunnel(**tunnel_cfg).sample(4, torch.Generator()),
               replace(cfg, grad_clip=1e-6), 0, device=torch.device("cpu"), stats=stats)
    assert stats["grad_norm"].item() > 1e-6  # the norm before the clip, not after it


def test_the_fast_path_switches_tunnels_only_between_chunks():
    from bwt_lite.fast_train import FastRun

    tunnel_cfg, model_cfg, cfg = small_slow_hmm(easy_steps=3, easy_tunnel=(("sharpen", 3.0),))
    p = replace(get_preset("hmm", "transformer", "lite", variant="slow"), model=model_cfg, train=cfg)
    with pytest.raises(ValueError, match="multiple of chunk"):
        FastRun(p, device="cpu", chunk=2)
