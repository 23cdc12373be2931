"""Chapter 6 (primitives): the per-tunnel entropy panels, the stored-pairs plot and the table widget,
on rows built by hand and on rows from reproduce() with tiny trained presets (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from bwt_lite import plotting as plots  # noqa: E402
from bwt_lite.plotting.primitives import primitives_widget  # noqa: E402


def row(tunnel, arch, h_model, h_bayes, accuracy=0.5):
    err = [abs(a - b) for a, b in zip(h_model, h_bayes)]
    return {"tunnel": tunnel, "arch": arch, "primitive": "p", "entropy_mae_bits": float(np.mean(err)),
            "kl_bits": 0.1, "accuracy": accuracy, "realises": True,
            "per_position": {"h_model": h_model, "h_bayes": h_bayes, "entropy_mae": err}}


ROWS = [row("bijection", "transformer", [3.0, 2.0, 1.0], [3.0, 2.1, 1.0]),
        row("bijection", "mlp", [3.2, 3.2, 3.2], [3.0, 2.1, 1.0]),
        row("regression", "transformer", [1.0, 0.5], [1.0, 0.4], accuracy=None),
        row("recall", "lstm", [2.0, 1.0], [2.0, 0.0])]


def test_entropy_panels_draw_every_selected_curve():
    fig = plots.plot_primitives_entropy(ROWS, tunnels=["bijection", "regression", "recall"])
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 3
    bij = axes[0]
    labels = [line.get_label() for line in bij.get_lines()]
    assert labels == ["Bayes (exact)", "transformer", "mlp"]
    np.testing.assert_allclose(bij.get_lines()[2].get_ydata(), [3.2, 3.2, 3.2])
    assert "differential" in axes[1].get_ylabel()
    plt.close(fig)
    fig = plots.plot_primitives_entropy(ROWS, tunnels=["bijection"], archs=["mlp"], error=True)
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert [line.get_label() for line in ax.get_lines()] == ["mlp"]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [0.2, 1.1, 2.2])
    plt.close(fig)
    with pytest.raises(ValueError, match="no cells"):
        plots.plot_primitives_entropy([])


def test_accuracy_by_pairs_plot():
    fig = plots.plot_accuracy_by_pairs({"a": ([2, 4, 8], [1.0, 0.9, 0.5])}, chance=1 / 16)
    ax = fig.axes[0]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [1.0, 0.9, 0.5])
    assert ax.get_lines()[1].get_ydata()[0] == pytest.approx(1 / 16)
    plt.close(fig)


def test_primitives_widget_builds_and_checks_its_tunnel():
    w = primitives_widget(ROWS, tunnel="recall")
    assert isinstance(w, ipywidgets.interactive)
    with pytest.raises(ValueError, match="tunnel must be one of"):
        primitives_widget(ROWS, tunnel="hmm")
    with pytest.raises(ValueError, match="no cells"):
        primitives_widget([])
    plt.close("all")


def test_every_architecture_has_its_own_colour_and_line_style():
    from bwt_lite.models import ARCHS
    from bwt_lite.plotting.style import ARCH_COLORS, ARCH_STYLES

    assert set(ARCHS) <= set(ARCH_COLORS) and len(set(ARCH_COLORS.values())) == len(ARCH_COLORS)
    # coinciding curves stay apart: each architecture has its own marker, and the controls a line style
    assert set(ARCHS) <= set(ARCH_STYLES) and len({s["marker"] for s in ARCH_STYLES.values()}) == len(ARCH_STYLES)


def test_an_architecture_without_a_colour_or_style_is_a_clear_error():
    from bwt_lite.capacity import ARCHS as SWEEP_ARCHS
    from bwt_lite.plotting.recall import capacity_color
    from bwt_lite.plotting.style import arch_color, arch_style

    assert all(capacity_color(a) for a in SWEEP_ARCHS)
    for lookup in (arch_color, arch_style):
        with pytest.raises(ValueError, match="'gru' is not one of bwt_lite.models.BACKBONES"):
            lookup("gru")
    with pytest.raises(ValueError, match="'gru' has no entry in CAPACITY_COLORS"):
        capacity_color("gru")
    rows = [dict(ROWS[0], arch="gru")]
    with pytest.raises(ValueError, match="'gru' is not one of"):
        plots.plot_primitives_entropy(rows)


def test_a_backbone_that_does_not_say_how_it_is_drawn_is_a_clear_error(monkeypatch):
    from torch import nn

    from bwt_lite.models import BACKBONES
    from bwt_lite.plotting.style import arch_color, arch_style

    monkeypatch.setitem(BACKBONES, "gru", type("GRU", (nn.Module,), {}))
    for lookup, attr in ((arch_color, "plot_color"), (arch_style, "plot_style")):
        with pytest.raises(ValueError, match=f"backbone GRU has no {attr}"):
            lookup("gru")
