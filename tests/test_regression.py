"""The regression tunnel: exact predictive against independent closed forms and quadrature, layout,
calibration of the sampled targets, the Gaussian helpers, determinism and errors."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import bwt_lite.tunnels.regression as regression
from bwt_lite.metrics import gaussian_entropy_bits, gaussian_kl_bits, gaussian_nll
from bwt_lite.tunnels.regression import (Regression,
                                         posterior_predictive)
from conftest import gen

EPS = torch.finfo(torch.float64).eps
scales = st.floats(0.25, 2.0)


def split_episodes(tunnel: Regression, ep) -> tuple[torch.Tensor, torch.Tensor]:
    """Recover x (B, N, d) and y (B, N) as float64 from the tokens (the last y from the target)."""
    d = tunnel.d
    if tunnel.variant == "pairs":  # token i = (x_i, x_{i-1}, y_{i-1}, 1)
        x = ep.inputs[:, :, :d].to(torch.float64)
        assert torch.equal(ep.inputs[:, 1:, d:2 * d], ep.inputs[:, :-1, :d])
        y = torch.cat([ep.inputs[:, 1:, 2 * d], ep.target[:, -1:]], dim=1).to(torch.float64)
    else:
        x = ep.inputs[:, 0::2, :d].to(torch.float64)
        y = torch.cat([ep.inputs[:, 1::2, d], ep.target[:, -1:]], dim=1).to(torch.float64)
    return x, y


def schur_predictive(X: torch.Tensor, y: torch.Tensor, x_new: torch.Tensor, tau: float, sigma: float):
    """Condition the joint Gaussian of (y_1..y_n, y_new) given the x's on the observed y's.

    Cov(y_j, y_k) = tau^2 x_j.x_k + sigma^2 [j == k]; the predictive is the Schur complement:
    mean k^T K^-1 y, variance k0 - k^T K^-1 k. Batched over the leading dim; an LU solve on the
    n x n data-space system (the tunnel works in weight space, d x d, with Cholesky).
    """
    n = X.shape[1]
    k0 = tau ** 2 * (x_new * x_new).sum(-1) + sigma ** 2
    if n == 0:
        return torch.zeros_like(k0), k0
    K = tau ** 2 * X @ X.transpose(1, 2) + sigma ** 2 * torch.eye(n, dtype=torch.float64)
    k = tau ** 2 * (X @ x_new.unsqueeze(-1))  # (B, n, 1)
    sol = torch.linalg.solve(K, torch.cat([y.unsqueeze(-1), k], dim=2))  # K^-1 [y, k]
    mean = (k.squeeze(-1) * sol[..., 0]).sum(-1)
    var = k0 - (k.squeeze(-1) * sol[..., 1]).sum(-1)
    return mean, var


@settings(max_examples=30, deadline=None)
@given(d=st.integers(1, 6), N=st.integers(1, 20), tau=scales, sigma=scales, seed=st.integers(0, 2**31),
       variant=st.sampled_from(Regression.variants))
def test_predictive_equals_schur_complement(d, N, tau, sigma, seed, variant):
    tunnel = Regression(d=d, N=N, tau=tau, sigma=sigma, variant=variant)
    ep = tunnel.sample(8, gen(seed))
    assert ep.mean.dtype == ep.var.dtype == torch.float64
    x, y = split_episodes(tunnel, ep)
    for i in range(N):
        mean, var = schur_predictive(x[:, :i], y[:, :i], x[:, i], tau, sigma)
        assert torch.allclose(ep.mean[:, i], mean, atol=1e-10, rtol=1e-10)
        assert torch.allclose(ep.var[:, i], var, atol=1e-10, rtol=1e-10)
        # the public helper on the same prefix gives the same numbers
        pm, pv = posterior_predictive(x[:, :i], y[:, :i], x[:, i], tau, sigma)
        assert torch.allclose(ep.mean[:, i], pm, atol=1e-12, rtol=1e-12)
        assert torch.allclose(ep.var[:, i], pv, atol=1e-12, rtol=1e-12)
    # position 0 is the prior predictive
    assert torch.equal(ep.mean[:, 0], torch.zeros(8, dtype=torch.float64))
    assert torch.allclose(ep.var[:, 0], sigma ** 2 + tau ** 2 * (x[:, 0] ** 2).sum(-1), rtol=1e-14, atol=0)


def grid_predictive_1d(xs: list[float], ys: list[float], x_new: float, tau: float, sigma: float):
    """Predictive mean and variance for d = 1 by quadrature over w of the unnormalised posterior
    prior(w) * prod_j N(y_j; w x_j, sigma^2), with a tolerance derived from the grid.

    Grid design: the log posterior is a quadratic in w with curvature H = 1/tau^2 + sum x_j^2/sigma^2
    (sum of the second derivatives of the log factors), so the posterior sd is s = H^-1/2. A coarse
    grid over [-20 tau, 20 tau] with spacing <= s/4 locates the mode w0 to within s/8; the fine grid
    is w0 + s u, u in [-R, R], spacing h = s/8, summed with equal weights (the trapezoid rule; the
    end weights are negligible). Error budget for the moments of (poly of degree <= 2) x Gaussian:
    - aliasing (Poisson summation): relative <= 4 (1 + (2 pi s/h)^2) exp(-2 pi^2 s^2 / h^2);
    - truncation: the grid reaches >= R - 1/8 sds either side: relative <= 4 R^2 exp(-(R - 1/8)^2 / 2);
    - rounding: each log-weight carries an absolute error <= delta = 4 (n + 3) eps (1 + max |lp|),
      which moves the mean by <= 2 delta s and the variance by <= 4 delta s^2, plus the n_grid-term
      sums (relative <= n_grid eps).
    """
    dt = torch.float64
    X, Y = torch.tensor(xs, dtype=dt), torch.tensor(ys, dtype=dt)
    H = 1 / tau ** 2 + (X ** 2).sum().item() / sigma ** 2
    s = H ** -0.5

    def lp(w: torch.Tensor) -> torch.Tensor:
        return -0.5 * w ** 2 / tau ** 2 - 0.5 * ((Y - w.unsqueeze(-1) * X) ** 2).sum(-1) / sigma ** 2

    n_coarse = math.ceil(40 * tau / (s / 4)) + 1
    coarse = torch.linspace(-20 * tau, 20 * tau, n_coarse, dtype=dt)
    k = int(lp(coarse).argmax())
    assert 0 < k < n_coarse - 1, "the posterior mode must lie inside the coarse grid"
    w0, R, h = coarse[k].item(), 16.0, s / 8
    u = torch.arange(-R, R + 1e-12, h / s, dtype=dt)
    w = w0 + s * u
    log_f = lp(w)
    f = torch.exp(log_f - log_f.max())
    Z = f.sum()
    m_w = (w * f).sum() / Z
    v_w = ((w - m_w) ** 2 * f).sum() / Z

    alias = 4 * (1 + (2 * math.pi * s / h) ** 2) * math.exp(-2 * math.pi ** 2 * (s / h) ** 2)
    trunc = 4 * R ** 2 * math.exp(-((R - 0.125) ** 2) / 2)
    delta = 4 * (len(xs) + 3) * EPS * (1 + log_f.abs().max().item())
    n_grid = len(u)
    mean_tol = abs(x_new) * ((alias + trunc) * (abs(m_w.item()) + s) + 2 * delta * s
                             + n_grid * EPS * (abs(m_w.item()) + s))
    var_tol = x_new ** 2 * ((alias + trunc + 4 * delta + n_grid * EPS) * s ** 2) + 4 * EPS * sigma ** 2
    mean = x_new * m_w.item()
    var = sigma ** 2 + x_new ** 2 * v_w.item()
    return mean, var, mean_tol, var_tol


@settings(max_examples=12, deadline=None)
@given(N=st.integers(1, 12), tau=st.floats(0.3, 3.0), sigma=st.floats(0.1, 2.0), seed=st.integers(0, 2**31))
def test_predictive_equals_quadrature_d1(N, tau, sigma, seed):
    tunnel = Regression(d=1, N=N, tau=tau, sigma=sigma, variant="interleaved")
    ep = tunnel.sample(3, gen(seed))
    x, y = split_episodes(tunnel, ep)
    for b in range(3):
        for i in range(N):
            mean, var, mean_tol, var_tol = grid_predictive_1d(
                x[b, :i, 0].tolist(), y[b, :i].tolist(), x[b, i, 0].item(), tau, sigma)
            assert mean_tol < 1e-9 * (1 + abs(mean)) and var_tol < 1e-9 * var  # the check has teeth
            # both sides round: allow the tunnel's own float64 rounding on top of the grid's budget
            assert abs(ep.mean[b, i].item() - mean) <= mean_tol + 1e-13 * (1 + abs(mean))
            assert abs(ep.var[b, i].item() - var) <= var_tol + 1e-13 * var


def test_pairs_layout_and_targets():
    t = Regression()
    assert (t.d, t.N, t.tau, t.sigma, t.variant) == (4, 16, 1.0, 0.5, "pairs")
    assert (t.seq_len, t.vocab_size, t.n_features, t.n_classes, t.answer_tokens) == (16, 0, 10, 1, None)
    ep = t.sample(32, gen(5))
    assert ep.inputs.shape == (32, 16, 10) and ep.inputs.dtype == torch.float32
    assert ep.positions.tolist() == list(range(16)) and torch.equal(ep.positions, t.positions)
    assert ep.target.shape == ep.mean.shape == ep.var.shape == (32, 16) and ep.probs is None
    x_now, x_prev, y_prev, flag = ep.inputs[..., :4], ep.inputs[..., 4:8], ep.inputs[..., 8], ep.inputs[..., 9]
    assert (ep.inputs[:, 0, 4:] == 0).all() and (flag[:, 1:] == 1).all()  # token 0 has no revealed pair
    assert torch.equal(x_prev[:, 1:], x_now[:, :-1])  # token i carries pair i-1 ...
    assert torch.equal(y_prev[:, 1:], ep.target[:, :-1])  # ... whose y is the previous target
    x, y = t.split_inputs(ep)
    assert torch.equal(x, x_now) and torch.equal(y, ep.target)
    assert (ep.var > t.sigma ** 2).all() and torch.isfinite(ep.mean).all() and ep.inputs.is_contiguous()


def test_interleaved_layout_and_targets():
    t = Regression(variant="interleaved")
    assert (t.d, t.N, t.tau, t.sigma) == (4, 16, 1.0, 0.5)
    assert (t.seq_len, t.vocab_size, t.n_features, t.n_classes, t.answer_tokens) == (31, 0, 6, 1, None)
    assert Regression.kind == "gaussian" and Regression.name == "regression"
    ep = t.sample(32, gen(5))
    assert ep.inputs.shape == (32, 31, 6) and ep.inputs.dtype == torch.float32
    assert ep.positions.dtype == torch.long and ep.positions.tolist() == list(range(0, 31, 2))
    assert torch.equal(ep.positions, t.positions)
    assert ep.target.shape == (32, 16) and ep.target.dtype == torch.float32
    assert ep.mean.shape == ep.var.shape == (32, 16) and ep.probs is None
    xt, yt = ep.inputs[:, 0::2], ep.inputs[:, 1::2]
    assert xt.shape == (32, 16, 6) and yt.shape == (32, 15, 6)
    assert (xt[..., 4] == 0).all() and (xt[..., 5] == 1).all()  # x tokens: (x, 0, 1)
    assert (yt[..., :4] == 0).all() and (yt[..., 5] == 0).all()  # y tokens: (0, y, 0)
    assert (xt[..., :4] != 0).all() and (yt[..., 4] != 0).all()  # continuous draws are never exactly 0
    assert torch.equal(ep.target[:, :-1], yt[..., 4])  # each x position predicts the y that follows
    assert ep.mask.sum(1).eq(16).all() and ep.mask[:, 1::2].sum() == 0
    assert (ep.var > t.sigma ** 2).all() and torch.isfinite(ep.mean).all()
    assert ep.inputs.is_contiguous()


def test_single_point_episode():
    t = Regression(d=3, N=1, variant="interleaved")
    ep = t.sample(5, gen(0))
    assert ep.inputs.shape == (5, 1, 5) and ep.positions.tolist() == [0] and ep.target.shape == (5, 1)
    x = ep.inputs[:, 0, :3].to(torch.float64)
    assert torch.allclose(ep.var[:, 0], 0.25 + (x ** 2).sum(-1), rtol=1e-14, atol=0)


@pytest.mark.parametrize("kwargs", [{}, {"d": 2, "N": 8, "tau": 2.0, "sigma": 0.3}, {"d": 8, "N": 4, "tau": 0.5}])
def test_standardised_residuals_are_standard_normal(kwargs):
    """Under the exact predictive the sequential residuals z_i = (y_i - mean_i) / sd_i are i.i.d.
    N(0, 1) (each is N(0, 1) given the past, hence independent of it). Tolerances: 6 standard
    errors of the sample mean (1/sqrt(n)), variance (sqrt(2/n)) and lag-1 correlation (1/sqrt(n'))."""
    t = Regression(**kwargs)
    ep = t.sample(4096, gen(11))
    z = (ep.target.to(torch.float64) - ep.mean) / ep.var.sqrt()
    n = z.numel()
    assert abs(z.mean().item()) < 6 / math.sqrt(n)
    assert abs(z.var().item() - 1) < 6 * math.sqrt(2 / n)
    assert (z.mean(0).abs() < 6 / math.sqrt(z.shape[0])).all()  # every position, not just on average
    if t.N > 1:
        a, b = z[:, :-1].flatten(), z[:, 1:].flatten()
        assert abs((a * b).mean().item()) < 6 / math.sqrt(a.numel())


def test_chunked_prefix_statistics_match(monkeypatch):
    t = Regression(d=3, N=11)
    full = t.sample(16, gen(4))
    for elems in (1, 16 * 9 * 3, 16 * 9 * 4):  # chunks of 1, 3, 4 positions
        monkeypatch.setattr(regression, "_CHUNK_ELEMS", elems)
        ep = t.sample(16, gen(4))
        assert torch.equal(ep.inputs, full.inputs)
        assert torch.allclose(ep.mean, full.mean, atol=1e-13, rtol=0)
        assert torch.allclose(ep.var, full.var, atol=1e-13, rtol=0)


def test_posterior_predictive_hand_made():
    dt = torch.float64
    # one point (x = 1, y = 2), tau = sigma = 1: Sigma = 1/2, mu = 1; at x = 2: mean 2, var 1 + 4/2 = 3
    m, v = posterior_predictive(torch.tensor([[[1.0]]], dtype=dt), torch.tensor([[2.0]], dtype=dt),
                                torch.tensor([[2.0]], dtype=dt), tau=1.0, sigma=1.0)
    assert m.shape == v.shape == (1,) and m.dtype == torch.float64
    assert m.item() == pytest.approx(2.0, abs=1e-15) and v.item() == pytest.approx(3.0, abs=1e-15)
    # empty context: the prior predictive; float32 inputs and extra leading dims are fine
    x_new = torch.tensor([[[1.0, 2.0]]])
    m, v = posterior_predictive(torch.zeros(1, 1, 0, 2), torch.zeros(1, 1, 0), x_new, tau=2, sigma=0.5)
    assert m.shape == (1, 1) and m.item() == 0.0 and v.item() == pytest.approx(0.25 + 4 * 5, abs=1e-14)
    # nearly noise-free, d = 2, two independent points: the mean interpolates w exactly
    X = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]], dtype=dt)
    y = X[0] @ torch.tensor([3.0, -1.0], dtype=dt)
    m, v = posterior_predictive(X, y.unsqueeze(0), torch.tensor([[1.0, 1.0]], dtype=dt), tau=1.0, sigma=1e-6)
    assert m.item() == pytest.approx(2.0, abs=1e-9) and v.item() == pytest.approx(0.0, abs=1e-11)


@pytest.mark.parametrize("X, y, x_new, kw, err, fragment", [
    (torch.zeros(2, 3, 4), torch.zeros(2, 4), torch.zeros(2, 4), {}, ValueError, "y must have shape"),
    (torch.zeros(2, 3, 4), torch.zeros(2, 3), torch.zeros(2, 3), {}, ValueError, "x_new must have shape"),
    (torch.zeros(3), torch.zeros(3), torch.zeros(1), {}, ValueError, "X must have shape"),
    (torch.full((1, 1, 1), math.nan), torch.zeros(1, 1), torch.zeros(1, 1), {}, ValueError, "X must be finite"),
    (torch.zeros(1, 1, 1), torch.zeros(1, 1), torch.zeros(1, 1), {"sigma": 0.0}, ValueError, "sigma must be"),
    (torch.zeros(1, 1, 1), torch.zeros(1, 1), torch.zeros(1, 1), {"tau": math.inf}, ValueError, "tau must be"),
    (torch.zeros(1, 1, 1, dtype=torch.long), torch.zeros(1, 1), torch.zeros(1, 1), {}, TypeError, "X must be a floating"),
])
def test_posterior_predictive_errors(X, y, x_new, kw, err, fragment):
    with pytest.raises(err, match=fragment):
        posterior_predictive(X, y, x_new, **{"tau": 1.0, "sigma": 1.0, **kw})


def test_entropy_and_kl_closed_forms():
    dt = torch.float64
    assert gaussian_entropy_bits(torch.tensor([1 / (2 * math.pi * math.e)], dtype=dt)).abs().item() < 1e-15
    # doubling the standard deviation adds exactly one bit
    h = gaussian_entropy_bits(torch.tensor([0.3, 1.2], dtype=dt))
    assert (h[1] - h[0]).item() == pytest.approx(1.0, abs=1e-14) and h.dtype == torch.float64
    normal = torch.distributions.Normal(torch.tensor(0.0, dtype=dt), torch.tensor(0.7, dtype=dt))
    assert gaussian_entropy_bits(torch.tensor(0.49, dtype=dt)).item() == pytest.approx(
        normal.entropy().item() / math.log(2), abs=1e-14)

    def textbook(mp, vp, mq, vq):  # nats -> bits
        return 0.5 * (math.log(vq / vp) + (vp + (mp - mq) ** 2) / vq - 1) / math.log(2)

    cases = [(0.0, 1.0, 1.0, 1.0), (0.0, 1.0, 0.0, 4.0), (1.0, 2.0, -1.0, 0.5), (3.0, 0.01, 2.5, 9.0)]
    for mp, vp, mq, vq in cases:
        got = gaussian_kl_bits(*(torch.tensor(v, dtype=dt) for v in (mp, vp, mq, vq))).item()
        assert got == pytest.approx(textbook(mp, vp, mq, vq), rel=1e-13, abs=1e-15)
    assert gaussian_kl_bits(*(torch.tensor(v) for v in (0.0, 1.0, 1.0, 1.0))).item() == pytest.approx(
        0.5 / math.log(2), rel=1e-13)  # float32 inputs are promoted to float64
    # broadcasting: one model distribution against a batch
    kl = gaussian_kl_bits(torch.zeros(3, 1, dtype=dt), torch.ones(1, dtype=dt), torch.zeros(3, 4, dtype=dt),
                          torch.ones(4, dtype=dt))
    assert kl.shape == (3, 4) and kl.dtype == torch.float64 and (kl == 0).all()


@settings(max_examples=30, deadline=None)
@given(mp=st.floats(-3, 3), sp=st.floats(0.2, 3), mq=st.floats(-3, 3), sq=st.floats(0.2, 3))
def test_kl_self_zero_and_matches_quadrature(mp, sp, mq, sq):
    dt = torch.float64
    p = [torch.tensor(v, dtype=dt) for v in (mp, sp ** 2)]
    q = [torch.tensor(v, dtype=dt) for v in (mq, sq ** 2)]
    assert gaussian_kl_bits(*p, *p).item() == 0.0
    kl = gaussian_kl_bits(*p, *q).item()
    assert kl >= 0.0
    # quadrature of p log2(p/q) over mean_p +- 40 sd_p, spacing sd_p/20: aliasing and tails are
    # below 1e-30 (see the regression quadrature above), the rest is rounding
    w = torch.arange(-40, 40, 0.05, dtype=dt) * sp + mp
    logp = torch.distributions.Normal(p[0], sp).log_prob(w)
    logq = torch.distributions.Normal(q[0], sq).log_prob(w)
    integral = (logp.exp() * (logp - logq)).sum().item() * 0.05 * sp / math.log(2)
    assert kl == pytest.approx(integral, abs=1e-11, rel=1e-11)


def test_gaussian_nll():
    torch.manual_seed(0)
    mean = torch.randn(4, 5, requires_grad=True)
    log_var = torch.randn(4, 5, requires_grad=True)
    y = torch.randn(4, 5)
    loss = gaussian_nll(mean, log_var, y)
    ref = -torch.distributions.Normal(mean, (0.5 * log_var).exp()).log_prob(y).mean()
    assert loss.shape == () and loss.dtype == torch.float32
    assert loss.item() == pytest.approx(ref.item(), rel=1e-6)
    loss.backward()
    assert mean.grad is not None and torch.isfinite(log_var.grad).all()
    # at the exact predictive its expectation over y is the differential entropy (in nats):
    # E[0.5 (log 2 pi + log v + (y - m)^2 / v)] = 0.5 log(2 pi e v); the pointwise value at y = m:
    v = torch.tensor([0.3], dtype=torch.float64)
    at_mean = gaussian_nll(torch.zeros(1, dtype=torch.float64), v.log(), torch.zeros(1, dtype=torch.float64))
    assert at_mean.item() == pytest.approx((gaussian_entropy_bits(v).item() * math.log(2)) - 0.5, abs=1e-14)


@pytest.mark.parametrize("fn, args, err, fragment", [
    (gaussian_entropy_bits, (torch.tensor([1.0, 0.0]),), ValueError, "var must be > 0"),
    (gaussian_entropy_bits, (torch.tensor([math.nan]),), ValueError, "var must be > 0"),
    (gaussian_entropy_bits, ([1.0],), TypeError, "var must be a torch.Tensor"),
    (gaussian_kl_bits, (torch.zeros(2), torch.ones(2), torch.zeros(2), -torch.ones(2)), ValueError, "var_q must be > 0"),
    (gaussian_kl_bits, (torch.zeros(2), torch.zeros(2), torch.zeros(2), torch.ones(2)), ValueError, "var_p must be > 0"),
    (gaussian_kl_bits, (torch.zeros(2), torch.ones(3), torch.zeros(2), torch.ones(2)), ValueError, "do not broadcast"),
    (gaussian_nll, (torch.zeros(2, 1), torch.zeros(2), torch.zeros(2)), ValueError, "must have the same shape"),
    (gaussian_nll, (torch.zeros(0), torch.zeros(0), torch.zeros(0)), ValueError, "at least one element"),
])
def test_helper_errors(fn, args, err, fragment):
    with pytest.raises(err, match=fragment):
        fn(*args)


def test_same_seed_same_episodes_and_no_global_rng():
    t = Regression(d=3, N=6, tau=1.5, sigma=0.2)
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    a = t.sample(4, gen(7))
    assert torch.equal(torch.random.get_rng_state(), state)  # the global RNG is untouched
    torch.manual_seed(456)
    b = t.sample(4, gen(7))
    for f in ("inputs", "target", "mean", "var"):
        assert torch.equal(getattr(a, f), getattr(b, f))
    assert not torch.equal(a.inputs, t.sample(4, gen(8)).inputs)


def test_config_round_trip():
    t = Regression(d=2, N=5, tau=2, sigma=0.25)
    cfg = t.config()
    assert list(cfg)[0] == "tunnel" and cfg == {"tunnel": "regression", "d": 2, "N": 5, "tau": 2.0,
                                                "sigma": 0.25, "variant": "pairs"}
    assert isinstance(cfg["tau"], float)
    t2 = type(t)(**{k: v for k, v in cfg.items() if k != "tunnel"})
    assert t2.config() == cfg and repr(t2) == "Regression(d=2, N=5, tau=2.0, sigma=0.25, variant='pairs')"
    assert torch.equal(t.sample(3, gen(1)).inputs, t2.sample(3, gen(1)).inputs)


@pytest.mark.parametrize("kwargs, err, fragment", [
    ({"d": 0}, ValueError, "d must be >= 1"),
    ({"N": 0}, ValueError, "N must be >= 1"),
    ({"d": 2.5}, TypeError, "d must be an int"),
    ({"N": True}, TypeError, "N must be an int"),
    ({"sigma": 0.0}, ValueError, "sigma must be a finite float > 0, got 0.0"),
    ({"sigma": -1}, ValueError, "sigma must be a finite float > 0"),
    ({"tau": 0}, ValueError, "tau must be a finite float > 0"),
    ({"tau": -0.5}, ValueError, "tau must be a finite float > 0"),
    ({"tau": math.nan}, ValueError, "tau must be a finite float > 0, got nan"),
    ({"sigma": math.inf}, ValueError, "sigma must be a finite float > 0, got inf"),
    ({"tau": "1"}, TypeError, "tau must be a finite float"),
    ({"variant": "nope"}, ValueError, "allowed: pairs, interleaved"),
])
def test_bad_arguments_name_the_argument(kwargs, err, fragment):
    with pytest.raises(err, match=fragment):
        Regression(**kwargs)


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        Regression().sample(0, gen())
