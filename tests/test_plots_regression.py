"""Chapter 5 plots and widget: smoke tests on the Agg backend (no kernel, no display)."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from bwt_lite import plotting as plots  # noqa: E402
from bwt_lite.evaluate import evaluate  # noqa: E402
from bwt_lite.models import ModelConfig, build_model  # noqa: E402
from bwt_lite.tunnels import make_tunnel  # noqa: E402
from bwt_lite.plotting.regression import regression_widget  # noqa: E402
from conftest import drawn, gen  # noqa: E402


@pytest.fixture
def setup():
    tunnel = make_tunnel("regression", d=2, N=6)
    cfg = ModelConfig(arch="transformer", d_model=16, n_layers=1, n_heads=2, n_features=tunnel.n_features,
                      n_positions=tunnel.seq_len + 1, n_outputs=2)
    torch.manual_seed(0)
    model = build_model(cfg)
    ep = tunnel.sample(32, gen(3))
    with torch.no_grad():
        out = model(ep.inputs, ep.positions).double()
    return tunnel, model, ep, out


def test_regression_plots_return_figures(setup):
    tunnel, model, ep, out = setup
    res = evaluate(model, tunnel, episodes=64, seed=0)
    mean_q, var_q = out[..., 0], out[..., 1].exp()
    y = tunnel.split_inputs(ep)[1].double()
    z = (y - mean_q) / var_q.sqrt()
    figs = [
        plots.plot_gaussian_errors_by_position({"model": res.per_position, "copy": res.per_position},
                                               title="errors"),
        plots.plot_variance_by_position({"model": var_q.mean(0)}, ep.var.mean(0), noise_var=tunnel.sigma ** 2),
        plots.plot_variance_by_position({"model": var_q.mean(0).tolist()}, ep.var.mean(0).numpy()),
        plots.plot_predicted_vs_exact(var_q, ep.var, log=True, title="variance"),
        plots.plot_predicted_vs_exact(mean_q, ep.mean, color=torch.arange(6).expand(32, 6), color_label="position",
                                      max_points=50),
        plots.plot_standardised_residuals({"model": z, "Bayes": (y - ep.mean) / ep.var.sqrt()}),
        plots.plot_gaussian_predictive(mean_q[0, 2], var_q[0, 2], ep.mean[0, 2], ep.var[0, 2], y=y[0, 2].item(),
                                       title="one position"),
        plots.plot_gaussian_predictive(0.0, 1.0, 0.5, 0.25),
        plots.plot_regression_step(y[0], mean_q[0], var_q[0], ep.mean[0], ep.var[0], position=0),
        plots.plot_regression_step(y[0], mean_q[0], var_q[0], ep.mean[0], ep.var[0], position=5),
    ]
    for fig in figs:
        assert drawn(fig), fig.axes  # every figure draws something
        fig.canvas.draw()


def test_regression_plots_draw_into_given_axes(setup):
    _, _, ep, out = setup
    fig, (a, b, c) = plt.subplots(1, 3)
    assert plots.plot_predicted_vs_exact(out[..., 0], ep.mean, ax=a) is fig
    assert plots.plot_standardised_residuals({"z": torch.randn(100, generator=gen(1))}, ax=b) is fig
    assert plots.plot_variance_by_position({"m": ep.var.mean(0)}, ep.var.mean(0), ax=c) is fig
    fig2, axes = plt.subplots(1, 2)
    pp = {"entropy_mae": [0.0, 0.1, 0.2], "kl": [0.0, 0.05, 0.1]}  # zeros leave gaps on the log scale
    assert plots.plot_gaussian_errors_by_position({"baseline": pp}, axes=axes) is fig2


def test_regression_plots_reject_bad_input(setup):
    _, _, ep, out = setup
    with pytest.raises(ValueError, match="same number"):
        plots.plot_predicted_vs_exact(out[..., 0], ep.mean[:, :3])
    with pytest.raises(ValueError, match="variances"):
        plots.plot_gaussian_predictive(0.0, -1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="position"):
        plots.plot_regression_step(ep.target[0], ep.mean[0], ep.var[0], ep.mean[0], ep.var[0], position=6)
    with pytest.raises(ValueError, match="one value per position"):
        plots.plot_regression_step(ep.target[0], ep.mean[0, :3], ep.var[0], ep.mean[0], ep.var[0], position=1)


def test_regression_widget(setup, capsys):
    tunnel, model, _, _ = setup
    w = regression_widget(model, tunnel, seed=5, position=3)
    assert isinstance(w, ipywidgets.interactive)
    w.children[1].value = 0  # the prior predictive: no context
    w.children[0].value = 6  # another episode
    w.children[1].value = 5
    out = capsys.readouterr().out
    assert "3 pair(s) seen" in out and "0 pair(s) seen" in out and "KL(Bayes || model)" in out
    assert model.training  # the widget restores the mode it found


def test_regression_widget_errors(setup):
    tunnel, model, _, _ = setup
    with pytest.raises(ValueError, match="position"):
        regression_widget(model, tunnel, position=6)
    with pytest.raises(ValueError, match="regression tunnel"):
        regression_widget(model, make_tunnel("bijection", V=6, L=5))
