"""Mamba: the scans agree (forward and gradients), the block's initialisation and hook points."""
import json
import math

import pytest
import torch
import torch.nn.functional as F

from bwt_lite.cli import main
from bwt_lite.models import ModelConfig, build_model, run_with_cache
from bwt_lite.models.mamba import D_STATE
from bwt_lite.models.scan import (SCAN_CHUNK, SCAN_METHODS, auto_scan_method, cuda_scan_available, scan_parallel,
                                  scan_sequential, selective_scan)
from bwt_lite.orchestration.bench import benchmark_scan, format_scan_benchmark
from bwt_lite.tunnels import Bijection
from conftest import gen

SMALL = dict(arch="mamba", d_model=32, n_layers=2, vocab_size=40, n_positions=38, answer_tokens=tuple(range(20, 40)))


def ssm_inputs(batch: int, T: int, d: int, n: int, seed: int = 0, dtype=torch.float32) -> list[torch.Tensor]:
    """Random selective-scan inputs at the scale a trained block sees (dt from a softplus, A < 0)."""
    g = gen(seed)
    u, B, C = (torch.randn(batch, T, k, generator=g, dtype=dtype) for k in (d, n, n))
    dt = F.softplus(torch.randn(batch, T, d, generator=g, dtype=dtype) - 1)
    A = -torch.arange(1, n + 1, dtype=dtype).repeat(d, 1) * 2 * torch.rand(d, 1, generator=g, dtype=dtype)
    D = torch.randn(d, generator=g, dtype=dtype)
    return [u, dt, A, B, C, D]


def run(method: str, inputs: list[torch.Tensor], weights: torch.Tensor, **kwargs):
    leaves = [t.clone().requires_grad_() for t in inputs]
    y, h = selective_scan(*leaves, method=method, **kwargs)
    (y * weights).sum().backward()
    return y.detach(), None if h is None else h.detach(), [t.grad for t in leaves]


SHAPES = [(2, 1, 3, 2), (3, 7, 5, 4), (2, 64, 8, 16), (4, 153, 16, 16), (1, 100, 4, 3)]


@pytest.mark.parametrize("shape", SHAPES)
def test_parallel_scan_equals_the_sequential_reference(shape):
    """Forward, states and the gradient with respect to every input, to 1e-5 in float32."""
    for seed in range(2):
        inputs = ssm_inputs(*shape, seed=seed)
        weights = torch.randn(shape[:3], generator=gen(seed + 10))
        y0, h0, g0 = run("sequential", inputs, weights)
        y1, h1, g1 = run("parallel", inputs, weights)
        assert h1.shape == (*shape[:3], shape[3])
        torch.testing.assert_close(y1, y0, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h1, h0, rtol=1e-5, atol=1e-5)
        for name, a, b in zip(("u", "dt", "A", "B", "C", "D"), g1, g0):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, msg=lambda m: f"d/d{name}: {m}")


def assert_scans_agree(inputs, weights, methods=("parallel",)):
    """Every method against the sequential reference: y, states and every gradient to 1e-5."""
    y0, h0, g0 = run("sequential", inputs, weights)
    assert all(torch.isfinite(t).all() for t in (y0, h0, *g0))
    for method in methods:
        y1, h1, g1 = run(method, inputs, weights)
        torch.testing.assert_close(y1, y0, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h1, h0, rtol=1e-5, atol=1e-5)
        for name, a, b in zip(("u", "dt", "A", "B", "C", "D"), g1, g0):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, msg=lambda m: f"{method} d/d{name}: {m}")


@pytest.mark.parametrize("T", [1, 2, SCAN_CHUNK - 1, SCAN_CHUNK, SCAN_CHUNK + 1, 2 * SCAN_CHUNK, 3 * SCAN_CHUNK + 5])
def test_chunked_scan_at_every_length(T):
    """T = 1, shorter than a chunk, a multiple of it and not: forward and gradients to 1e-5."""
    inputs = ssm_inputs(3, T, 6, 5, seed=T)
    assert_scans_agree(inputs, torch.randn(3, T, 6, generator=gen(T + 1)))


@pytest.mark.parametrize("T", [1, 2, 7, 8, 9, 16, 37, 45])
@pytest.mark.parametrize("block", [1, 3, 8])
def test_stepwise_scan_keeping_only_block_states(T, block):
    """The training scan keeps every block-th state and recomputes the rest in the backward pass: at
    lengths shorter than, equal to and not divisible by the block, its output and every gradient
    equal the sequential reference's (1e-5) and, exactly, those of the same scan keeping every state."""
    inputs = ssm_inputs(3, T, 6, 5, seed=T + 100 * block)
    weights = torch.randn(3, T, 6, generator=gen(T))
    y0, _, g0 = run("sequential", inputs, weights)
    y1, h1, g1 = run("stepwise", inputs, weights, return_states=False, block=block)
    y2, h2, g2 = run("stepwise", inputs, weights, return_states=True, block=block)
    assert h1 is None and h2.shape == (3, T, 6, 5)
    torch.testing.assert_close(y1, y0, rtol=1e-5, atol=1e-5)
    assert torch.equal(y1, y2)
    for name, a, b, c in zip(("u", "dt", "A", "B", "C", "D"), g1, g0, g2):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, msg=lambda m: f"d/d{name}: {m}")
        assert torch.equal(a, c), f"d/d{name}: the kept and the recomputed states give different gradients"


def test_stepwise_scan_under_strong_and_zero_decay():
    """Decays that underflow to 0 and decays of exactly 1, with states recomputed block by block."""
    u, dt, A, B, C, D = ssm_inputs(2, 29, 8, 4, seed=5)
    weights = torch.randn(2, 29, 8, generator=gen(6))
    for inputs in ([u, dt * 50 + 5, A * 1e3 - 50, B, C, D], [u, dt, torch.zeros_like(A), B, C, D],
                   [u, torch.zeros_like(dt), A, B, C, D]):
        y0, _, g0 = run("sequential", inputs, weights)
        y1, _, g1 = run("stepwise", inputs, weights, return_states=False, block=4)
        torch.testing.assert_close(y1, y0, rtol=1e-5, atol=1e-5)
        for a, b in zip(g1, g0):
            assert torch.isfinite(a).all()
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_causal_conv_backward_is_the_convolution_s():
    """The mixer's depthwise causal convolution: nn.Conv1d's forward exactly, and its hand-written
    backward equal to autograd's through nn.Conv1d (and to finite differences in float64)."""
    from bwt_lite.models.mamba import _CausalConv
    for T in (1, 2, 3, 4, 9):
        conv = torch.nn.Conv1d(6, 6, 4, groups=6, padding=3)
        x = torch.randn(3, T, 12, generator=gen(T))[..., 6:].requires_grad_()  # a strided slice, as in the mixer
        ref = conv(x.transpose(1, 2))[..., :T].transpose(1, 2)
        out = _CausalConv.apply(x, conv.weight, conv.bias)
        assert torch.equal(out, ref)
        w = torch.randn(3, T, 6, generator=gen(T + 1))
        grads_ref = torch.autograd.grad((ref * w).sum(), (x, conv.weight, conv.bias))
        grads = torch.autograd.grad((out * w).sum(), (x, conv.weight, conv.bias))
        for a, b in zip(grads, grads_ref):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        conv64 = conv.double()
        x64 = x.detach().double().requires_grad_()
        assert torch.autograd.gradcheck(_CausalConv.apply, (x64, conv64.weight, conv64.bias))


def test_chunked_scan_under_strong_and_zero_decay():
    """Large dt and very negative A (a underflows to 0), and no decay at all (a = 1): exact, finite."""
    u, dt, A, B, C, D = ssm_inputs(2, 45, 8, 4, seed=5)
    weights = torch.randn(2, 45, 8, generator=gen(6))
    strong_dt = dt * 50 + 5  # dt up to several hundred
    strong_A = A * 1e3 - 50  # dt A down to about -1e6: exp underflows, as would exp(-L) of a whole chunk
    assert_scans_agree([u, strong_dt, strong_A, B, C, D], weights)
    mixed_dt = torch.where(torch.rand(dt.shape, generator=gen(7)) < 0.5, strong_dt, dt)  # decay switches on and off
    assert_scans_agree([u, mixed_dt, strong_A, B, C, D], weights)
    assert_scans_agree([u, dt, torch.zeros_like(A), B, C, D], weights)  # a = 1: states are running sums
    assert_scans_agree([u, torch.zeros_like(dt), A, B, C, D], weights)  # dt = 0: a = 1 and b = 0


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64])
def test_chunked_scan_of_any_chunk_size(chunk):
    """scan_parallel(a, b) with any chunk, a in [0, 1] including exact zeros and ones."""
    g = gen(chunk)
    a = torch.rand(3, 37, 4, 2, generator=g)
    a[:, ::7] = 0.0
    a[:, 3::5] = 1.0
    b = torch.randn(3, 37, 4, 2, generator=g)
    w = torch.randn(3, 37, 4, 2, generator=g)
    results = []
    for scan in (scan_sequential, lambda x, y: scan_parallel(x, y, chunk)):
        x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
        h = scan(x, y)
        (h * w).sum().backward()
        results.append((h.detach(), x.grad, y.grad))
    for r1, r0 in zip(*results):
        torch.testing.assert_close(r1, r0, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_stepwise_scan_is_as_accurate_as_the_reference(shape):
    """Forward and states to 1e-5 of the reference; gradients (summed in another order, so an
    ill-conditioned sum may differ from the reference's by a few 1e-5) no further from the float64
    answer than the float32 reference itself is."""
    for seed in range(2):
        inputs = ssm_inputs(*shape, seed=seed)
        weights = torch.randn(shape[:3], generator=gen(seed + 10))
        y0, h0, g0 = run("sequential", inputs, weights)
        y1, h1, g1 = run("stepwise", inputs, weights)
        _, _, exact = run("sequential", [t.double() for t in inputs], weights.double())
        torch.testing.assert_close(y1, y0, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h1, h0, rtol=1e-5, atol=1e-5)
        for name, a, b, e in zip(("u", "dt", "A", "B", "C", "D"), g1, g0, exact):
            err, ref_err = (a.double() - e).abs().max().item(), (b.double() - e).abs().max().item()
            assert err <= 2 * ref_err + 1e-6, f"d/d{name}: error {err:.2e}, the reference's {ref_err:.2e}"
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_scans_match_the_recurrence_and_finite_differences():
    g = gen(3)
    a, b = torch.rand(2, 9, 3, generator=g, dtype=torch.float64), torch.randn(2, 9, 3, generator=g, dtype=torch.float64)
    h, expected = scan_parallel(a, b), torch.zeros(2, 3, dtype=torch.float64)
    for t in range(9):
        expected = a[:, t] * expected + b[:, t]
        assert torch.allclose(h[:, t], expected)
    assert torch.equal(scan_sequential(a, b)[:, -1], expected)
    assert torch.autograd.gradcheck(scan_parallel, (a.requires_grad_(), b.requires_grad_()))
    inputs = [t.requires_grad_() for t in ssm_inputs(2, 5, 3, 4, dtype=torch.float64)]
    assert torch.autograd.gradcheck(lambda *x: selective_scan(*x, method="stepwise")[0], inputs)
    assert torch.autograd.gradcheck(lambda *x: selective_scan(*x, method="stepwise", return_states=False,
                                                              block=2)[0], inputs)


def test_scan_methods_and_errors():
    assert SCAN_METHODS == ("auto", "parallel", "sequential", "stepwise", "cuda")
    x = torch.zeros(1)
    assert auto_scan_method(x) == "stepwise"
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        selective_scan(*ssm_inputs(1, 2, 3, 4), method="fast")
    if not (cuda_scan_available() and torch.cuda.is_available()):
        with pytest.raises(ValueError, match="mamba-ssm package and tensors on a CUDA device"):
            selective_scan(*ssm_inputs(1, 2, 3, 4), method="cuda")
    model = build_model(ModelConfig(**SMALL))
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        model.backbone.set_scan_method("fast")


@pytest.mark.skipif(not (cuda_scan_available() and torch.cuda.is_available()),
                    reason="needs the mamba-ssm package and a CUDA device")
def test_cuda_kernel_equals_our_scan():  # pragma: no cover - not runnable on the CPU machines
    inputs = [t.cuda() for t in ssm_inputs(2, 64, 32, D_STATE)]
    weights = torch.randn(2, 64, 32, device="cuda")
    y0, _, g0 = run("parallel", inputs, weights)
    y1, h1, g1 = run("cuda", inputs, weights)
    assert h1 is None
    torch.testing.assert_close(y1, y0, rtol=1e-4, atol=1e-4)
    for a, b in zip(g1, g0):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-3)


def test_initialisation_is_mambas():
    model = build_model(ModelConfig(**SMALL))
    mixer = model.backbone.blocks[0].mixer
    assert mixer.d_inner == 64 and mixer.dt_rank == 2 and mixer.conv1d.kernel_size == (4,)
    assert torch.allclose(mixer.A, -torch.arange(1, D_STATE + 1.0).repeat(64, 1))  # S4D-real
    assert torch.equal(mixer.D, torch.ones(64))
    dt = F.softplus(mixer.dt_proj.bias)  # the generic init zeroed this bias; the backbone re-applies Mamba's
    assert 1e-3 * 0.999 <= dt.min() and dt.max() <= 0.1 * 1.001 and dt.std() > 0
    assert mixer.dt_proj.weight.abs().max() <= 2 ** -0.5
    assert mixer.out_proj.weight.std() < 0.02 / math.sqrt(2 * 2) * 1.2  # residual projection scaled by depth
    assert mixer.A_log.dim() == 1  # flat, so AdamW's matrices-only weight decay leaves it alone, as in Mamba


def test_hooks_expose_the_state_and_dt():
    model = build_model(ModelConfig(**SMALL))
    x = Bijection().sample(2, gen()).inputs
    names = [f"backbone.blocks.0.mixer.{n}" for n in ("hook_x", "hook_dt", "hook_ssm_state", "hook_y")]
    out, cache = run_with_cache(model, x, names=names + ["backbone.blocks.1.hook_resid_post"])
    x_in, dt, h = (cache[n] for n in names[:3])
    assert dt.shape == (2, 37, 64) and h.shape == (2, 37, 64, D_STATE) and (dt > 0).all()
    mixer = model.backbone.blocks[0].mixer
    B = mixer.x_proj(x_in)[..., mixer.dt_rank:mixer.dt_rank + D_STATE]
    h1 = torch.exp(dt[:, 1, :, None] * mixer.A) * h[:, 0] + (dt[:, 1] * x_in[:, 1])[..., None] * B[:, 1, None, :]
    torch.testing.assert_close(h[:, 1], h1, rtol=1e-5, atol=1e-6)  # the recurrence, read off the hooks
    methods = ["parallel", "sequential", "stepwise"] + (["cuda"] if cuda_scan_available() and x.is_cuda else [])
    for method in methods:  # every scan gives the same model and the same hooked state
        model.backbone.set_scan_method(method)
        out2, cache2 = run_with_cache(model, x, names=names)
        torch.testing.assert_close(out2, out, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(cache2[names[2]], h, rtol=1e-5, atol=1e-5)


def test_benchmark_scan_rows_and_cli(capsys):
    rows = benchmark_scan(lengths=(4, 8), batch=2, d_inner=4, d_state=2, repeat=3)
    assert [r["length"] for r in rows] == [4, 8]
    for r in rows:
        for name in ("sequential", "parallel", "stepwise", "stepwise_states"):
            assert 0 < r[f"{name}_ms_min"] <= r[f"{name}_ms"] <= r[f"{name}_ms_max"]
        assert r["speedup"] == pytest.approx(r["sequential_ms"] / r["stepwise_ms"])
    assert "stepwise vs sequential" in format_scan_benchmark(rows)
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        benchmark_scan(lengths=(4,), methods=("fast",))
    assert main(["bench-scan", "--lengths", "4", "--batch", "1", "--d-inner", "2", "--repeat", "1", "--json"]) == 0
    assert [r["length"] for r in json.loads(capsys.readouterr().out)] == [4]


def test_stepwise_inference_loop_equals_the_scans():
    """Without gradients and without a state hook, the stepwise scan runs a lighter loop: same output."""
    inputs = ssm_inputs(2 * 64 + 3, 9, 8, 4)  # more episodes than one inference chunk
    y0, h0 = selective_scan(*inputs, method="sequential")
    with torch.no_grad():
        y1, h1 = selective_scan(*inputs, method="stepwise", return_states=False)
        y2, h2 = selective_scan(*inputs, method="stepwise")
    assert h1 is None and h2 is not None
    torch.testing.assert_close(y1, y0.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y2, y0.detach(), rtol=1e-5, atol=1e-5)
    model = build_model(ModelConfig(**SMALL)).eval()
    x = Bijection().sample(3, gen()).inputs
    with torch.no_grad():
        fast = model(x)
        _, cache = run_with_cache(model, x, names=["backbone.blocks.0.mixer.hook_ssm_state"])
        model.backbone.set_scan_method("sequential")
        torch.testing.assert_close(fast, model(x), rtol=1e-5, atol=1e-5)
    assert cache["backbone.blocks.0.mixer.hook_ssm_state"].shape == (3, 37, 64, D_STATE)


def test_model_outputs_and_gradients_are_the_same_with_every_scan():
    """The Mamba model trains identically (outputs and every parameter's gradient) with each scan."""
    model = build_model(ModelConfig(**SMALL))
    x = Bijection().sample(4, gen(2)).inputs
    results = {}
    for method in ("sequential", "parallel", "stepwise"):
        model.backbone.set_scan_method(method)
        model.zero_grad()
        out = model(x)
        out.square().mean().backward()
        results[method] = (out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()})
    out0, grads0 = results["sequential"]
    for method in ("parallel", "stepwise"):
        out1, grads1 = results[method]
        torch.testing.assert_close(out1, out0, rtol=1e-5, atol=1e-5)
        for name, g in grads0.items():
            torch.testing.assert_close(grads1[name], g, rtol=1e-4, atol=1e-5, msg=lambda m: f"{method} {name}: {m}")
