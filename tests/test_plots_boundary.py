"""Chapter 13 (the construction boundary): smoke tests of its figures on exact numbers (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from bwt_lite.metrics import entropy_bits  # noqa: E402
from bwt_lite.plotting.boundary import (plot_class_posterior_read, plot_horizon_profile,  # noqa: E402
                                        plot_recurrence_episode)
from bwt_lite.tunnels.recurrence import Recurrence, recurrence_posterior  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_episode_figure_draws_values_entropy_and_class_posterior():
    t = Recurrence(p=7, length=8)
    values, is_rec = t.sample_values(1, torch.Generator().manual_seed(0))
    probs, cls = recurrence_posterior(values, 7)
    fig = plot_recurrence_episode(values[0].tolist(), entropy_bits(probs[0]), cls[0], 7,
                                  is_recurrence=bool(is_rec[0]), title="one episode")
    assert len(fig.axes) == 3  # values, entropy, and the class posterior's axis
    assert list(fig.axes[0].lines[0].get_ydata()) == values[0].tolist()  # the residues as drawn


def test_horizon_profile_shades_the_positions_past_the_horizon():
    fig = plot_horizon_profile({"model": [0.01] * 5 + [1.5] * 3, "exact": [0.0] * 8}, horizon=5,
                               bayes_entropy=[2.8] * 8)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and len(ax.patches) == 1  # the shaded span
    assert min(ax.lines[1].get_ydata()) > 0  # zeros are drawn at the floor, not dropped from a log axis
    fig = plot_horizon_profile({"model": [0.01] * 8})  # no horizon: nothing shaded
    assert len(fig.axes[0].patches) == 0


def test_class_posterior_figure_skips_positions_without_episodes():
    read = {"exact": [None, None, None, 0.9, 0.99], "model": [None, None, None, 0.8, 0.97], "episodes": [0, 0, 0, 5, 5]}
    fig = plot_class_posterior_read(read)
    assert [len(line.get_xdata()) for line in fig.axes[0].lines] == [2, 2]
