"""The window ladder beside the models: reading it off reproduce() rows, placing a model, the plot."""
import matplotlib
import pytest

from bwt_lite.plotting import plot_window_ladder
from bwt_lite.window_ladder import ladder, window_equivalent

matplotlib.use("Agg")


def _rows():
    base = [{"tunnel": "hmm-slow", "kind": "baseline", "arch": f"window-{w}", "entropy_mae_bits": 0.4 / (w + 1),
             "kl_bits": 0.3 / (w + 1) ** 2} for w in (2, 0, 1, 3)]
    model = [{"tunnel": "hmm-slow", "kind": "model", "arch": "mamba", "entropy_mae_bits": 0.09, "kl_bits": 0.01}]
    other = [{"tunnel": "hmm", "kind": "baseline", "arch": "window-0", "entropy_mae_bits": 9.0, "kl_bits": 9.0}]
    return base + model + other


def test_ladder_sorts_the_windows_of_one_tunnel():
    ws, values = ladder(_rows(), "hmm-slow")
    assert ws == [0, 1, 2, 3] and values["entropy_mae_bits"] == [0.4, 0.2, 0.4 / 3, 0.1]
    with pytest.raises(ValueError, match="no window baselines"):
        ladder(_rows(), "recall")


def test_window_equivalent_places_a_value_on_the_ladder():
    ws, values = [0, 1, 2], [0.4, 0.2, 0.1]
    assert window_equivalent(0.5, ws, values) == "above window-0"
    assert window_equivalent(0.15, ws, values) == "between window-1 and window-2"
    assert window_equivalent(0.2, ws, values) == "between window-0 and window-1"  # ties go to the shorter window
    assert window_equivalent(0.05, ws, values) == "below window-2"


def test_plot_has_both_metrics_and_the_model_lines():
    fig = plot_window_ladder(_rows(), "hmm-slow")
    a, b = fig.axes[:2]
    assert a.get_yscale() == "log" and "KL" in b.get_ylabel()
    assert [line.get_label() for line in a.get_lines()][-1] == "mamba"
