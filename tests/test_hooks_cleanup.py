"""run_with_cache on every architecture: every hook point can be read, and no hook is left behind,
also when the forward pass raises after the hooks fired."""
import pytest
import torch

from bwt_lite.models import ARCHS, HookPoint, ModelConfig, build_model, capture, hook_names, run_with_cache
from bwt_lite.tunnels.bijection import Bijection
from conftest import gen


def model_of(arch: str):
    torch.manual_seed(0)
    return build_model(ModelConfig(arch=arch, d_model=32, n_layers=2, n_heads=4, vocab_size=40, n_positions=38,
                                   answer_tokens=tuple(range(20, 40))))


def no_hooks_left(model) -> bool:
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("grad", [True, False])
def test_every_hook_point_of_every_architecture_is_cached(arch, grad):
    model = model_of(arch)
    ep = Bijection().sample(2, gen(1))
    names = hook_names(model)
    assert names[0] == "hook_embed" and "hook_final" in names and "hook_logits" in names
    with torch.set_grad_enabled(grad):
        out, cache = run_with_cache(model, ep.inputs, ep.positions)  # names=None: all of them
    assert sorted(cache) == sorted(names)  # every one (the dict fills in forward order)
    assert all(not v.requires_grad for v in cache.values())  # detached
    assert torch.equal(cache["hook_logits"], out.detach())
    assert cache["hook_embed"].shape == (2, 37, 32) and cache["hook_logits"].shape == (2, 19, 20)
    assert torch.equal(cache["backbone.blocks.1.hook_resid_pre"], cache["backbone.blocks.0.hook_resid_post"])
    one, only = run_with_cache(model, ep.inputs, names=["backbone.blocks.1.hook_resid_post"])
    assert list(only) == ["backbone.blocks.1.hook_resid_post"]
    assert no_hooks_left(model)


@pytest.mark.parametrize("arch", ARCHS)
def test_no_hook_is_left_behind_when_the_forward_raises(arch):
    model = model_of(arch)
    x = Bijection().sample(2, gen(2)).inputs
    with pytest.raises(IndexError):  # the backbone runs (hooks fire), then the readout fails
        run_with_cache(model, x, torch.tensor([100]))
    assert no_hooks_left(model)
    with pytest.raises(ValueError, match="position table"):  # fails in the adapter, before any hook fires
        run_with_cache(model, torch.zeros(1, 60, dtype=torch.long))
    assert no_hooks_left(model)
    with pytest.raises(RuntimeError, match="inside"):
        with capture(model) as cache:
            model(x)
            raise RuntimeError("inside the context")
    assert cache and no_hooks_left(model)
    with pytest.raises(ValueError, match="unknown hook point"):
        run_with_cache(model, x, names=["hook_embed", "nope"])
    assert no_hooks_left(model)
    # after all that, the model still runs and caches normally
    _, cache = run_with_cache(model, x, names=["hook_final"])
    assert cache["hook_final"].shape == (2, 37, 32) and no_hooks_left(model)
    assert sum(isinstance(m, HookPoint) for m in model.modules()) == len(hook_names(model))


def test_hooked_sees_every_kind_of_hook_and_none_after_cleanup():
    """HookPoint.hooked (what the fast paths check) is True for a forward, pre-forward, backward or
    global hook, and False again once run_with_cache or the handle has removed it."""
    model = model_of("transformer")
    point = model.backbone.blocks[0].attn.hook_pattern
    x = Bijection().sample(2, gen(3)).inputs
    assert not point.hooked
    with capture(model, ["backbone.blocks.0.attn.hook_pattern"]):
        assert point.hooked
    assert not point.hooked
    for register in (point.register_forward_hook, point.register_forward_pre_hook,
                     point.register_full_backward_hook, torch.nn.modules.module.register_module_forward_hook):
        handle = register(lambda *args: None)
        assert point.hooked
        model(x)
        handle.remove()
        assert not point.hooked
    run_with_cache(model, x, names=["backbone.blocks.1.attn.hook_scores"])
    assert not any(isinstance(m, HookPoint) and m.hooked for m in model.modules())
