"""Chapter 11 plots and widget: smoke tests on the Agg backend, and their input checks."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from bwt_lite import plotting as plots  # noqa: E402
from bwt_lite.dynamics.gradients import free_score_descent  # noqa: E402
from bwt_lite.plotting.dynamics import routing_widget  # noqa: E402
from conftest import drawn, gen, same_drawing  # noqa: E402


@pytest.fixture
def trace():
    g = gen(3)
    return free_score_descent(torch.randn(5, 3, generator=g, dtype=torch.float64),
                              torch.randn(3, 4, generator=g, dtype=torch.float64), 1, steps=8, lr=2.0)


def test_routing_step_and_widget(trace):
    fig = plots.plot_routing_step(trace.alpha, trace.advantage, trace.loss, 4, symbols=[2, 0, 2, 1, 2])
    assert len(fig.axes) == 3 and drawn(fig)
    # arrays and lists draw what the tensors draw
    assert same_drawing(plots.plot_routing_step(trace.alpha.numpy(), trace.advantage.tolist(), trace.loss, 0),
                        plots.plot_routing_step(trace.alpha, trace.advantage, trace.loss, 0))
    with pytest.raises(ValueError, match="step must be in 0..8"):
        plots.plot_routing_step(trace.alpha, trace.advantage, trace.loss, 9)
    with pytest.raises(ValueError, match="symbols must name"):
        plots.plot_routing_step(trace.alpha, trace.advantage, trace.loss, 0, symbols=[1, 2])
    with pytest.raises(ValueError, match="must be"):
        plots.plot_routing_step(trace.alpha, trace.advantage[:, :2], trace.loss, 0)
    w = routing_widget(trace, [2, 0, 2, 1, 2], step=3)
    assert isinstance(w, ipywidgets.interactive) and w.children[0].max == 8 and w.children[0].value == 3
    with pytest.raises(ValueError, match="step must be in 0..8"):
        routing_widget(trace, step=12)


def test_speedup_and_frame_plots():
    curves = {"sgd": torch.linspace(2.1, 2.0, 11).expand(3, 11), "values x10": torch.linspace(2.1, 1.9, 11).expand(3, 11)}
    fig = plots.plot_speedup(curves, {"values x10": [2.0, 2.5, 3.0]}, paper=2.3, floor=1.83,
                             intervals={"values x10": (2.5, 1.9, 3.1)})
    assert len(fig.axes) == 2 and drawn(fig)
    assert len(plots.plot_speedup(curves, {"values x10": [2.0]}).axes) == 2
    with pytest.raises(ValueError, match="at least one arm"):
        plots.plot_speedup({}, {})
    stab = {"steps": [0, 10, 20], "pattern": [0.6, 0.9, 1.0], "values": [0.9, 0.3, 0.0], "routing": [0.8, 0.2, 0.0]}
    hist = [{"step": s, "entropy_mae_bits": 1 / (s + 1), "kl_bits": 0.5 / (s + 1)} for s in (5, 10, 20)]
    fig = plots.plot_frame_vs_precision(stab, hist, title="t")
    errors, stability = fig.axes[:2]
    assert [list(line.get_ydata()) for line in errors.lines[:2]] == [[1 / 6, 1 / 11, 1 / 21], [0.5 / 6, 0.5 / 11, 0.5 / 21]]
    assert [list(line.get_ydata()) for line in stability.lines[:3]] == [stab["pattern"], stab["values"], stab["routing"]]
