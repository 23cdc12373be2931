"""Plots and widgets of the chapters: smoke tests on the Agg backend (no kernel, no display)."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bwt_lite import plotting as plots  # noqa: E402
from bwt_lite.metrics import entropy_bits  # noqa: E402
from bwt_lite.tunnels import make_tunnel  # noqa: E402
from bwt_lite.plotting.bayes import elimination_widget  # noqa: E402
from conftest import gen  # noqa: E402


@pytest.fixture
def episode():
    tunnel = make_tunnel("bijection", V=8, L=6)
    return tunnel, tunnel.sample(3, gen(7))


def test_plot_functions_return_figures(episode):
    _, ep = episode
    probs, h = ep.probs[0], entropy_bits(ep.probs[0])
    keys, values = ep.inputs[0, ep.positions].tolist(), ep.target[0].tolist()
    figs = [
        plots.plot_posterior_bars(probs[2], revealed={values[0]: keys[0], values[1]: keys[1]}, answer=values[2],
                                  title="t = 2"),
        plots.plot_posterior_bars(probs[2].numpy(), revealed=values[:2]),
        plots.plot_posterior_bars(probs[0].tolist()),
        plots.plot_entropy_staircase(h, formula=torch.log2(8 - torch.arange(6.0)), marginal=3.0, current=4),
        plots.plot_entropy_staircase(h.numpy()),
        plots.plot_posterior_heatmap(probs, answers=values, title="episode"),
        plots.plot_posterior_heatmap(probs.float()),
        plots.plot_elimination_step(probs, h, keys, values, t=3),
    ]
    for fig in figs:
        assert isinstance(fig, Figure)
        fig.canvas.draw()  # renders without error


def test_plots_draw_into_a_given_axes(episode):
    _, ep = episode
    fig, (a, b) = plt.subplots(1, 2)
    assert plots.plot_posterior_bars(ep.probs[0, 1], ax=a) is fig
    assert plots.plot_entropy_staircase(entropy_bits(ep.probs[0]), ax=b) is fig
    assert len(fig.axes) == 2


def test_plots_reject_bad_shapes(episode):
    _, ep = episode
    with pytest.raises(ValueError, match="probs"):
        plots.plot_posterior_bars(ep.probs[0])
    with pytest.raises(ValueError, match="h_bayes"):
        plots.plot_entropy_staircase(ep.probs[0])
    with pytest.raises(ValueError, match="probs"):
        plots.plot_posterior_heatmap(ep.probs)
    with pytest.raises(ValueError, match="t must be"):
        plots.plot_elimination_step(ep.probs[0], entropy_bits(ep.probs[0]), [0] * 6, [0] * 6, t=6)


def slider_of(w):
    (slider,) = [c for c in w.children if isinstance(c, ipywidgets.IntSlider)]
    return slider


def test_elimination_widget_from_a_seed_shows_its_initial_state(capsys):
    w = elimination_widget(0, t=5)
    assert isinstance(w, ipywidgets.interactive)
    s = slider_of(w)
    assert (s.min, s.max, s.value) == (0, 18, 5)
    out = capsys.readouterr().out
    assert "step t = 5" in out and "15 value(s) still possible" in out and "revealed (key" in out
    s.value = 18
    assert "step t = 18" in capsys.readouterr().out
    assert plt.get_fignums() == []  # the widget closes its figures


def test_elimination_widget_from_episodes_and_variants(episode, capsys):
    _, ep = episode
    w = elimination_widget(ep, index=2)
    assert slider_of(w).max == 5
    out = capsys.readouterr().out
    assert "step t = 0" in out and "none yet" in out and "8 value(s) still possible" in out
    for variant, L in [("paired", 4), ("replacement", 10)]:
        tunnel = make_tunnel("bijection", V=6, L=L, variant=variant)
        w = elimination_widget(3, tunnel=tunnel, t=2)
        assert slider_of(w).max == tunnel.positions.numel() - 1


def test_elimination_widget_bad_input(episode):
    _, ep = episode
    with pytest.raises(TypeError, match="episode_or_seed"):
        elimination_widget("seed 0")
    with pytest.raises(ValueError, match="t must be"):
        elimination_widget(ep, t=6)
    with pytest.raises(ValueError, match="index"):
        elimination_widget(ep, index=3)


def test_widget_same_seed_same_episode(capsys):
    elimination_widget(4, t=3)
    first = capsys.readouterr().out
    elimination_widget(4, t=3)
    assert capsys.readouterr().out == first


def test_chapter2_plots_and_prediction_widget():
    from bwt_lite.evaluate import evaluate
    from bwt_lite.models import ModelConfig, build_model
    from bwt_lite.plotting.bayes import prediction_widget

    tunnel = make_tunnel("bijection", V=6, L=5)
    model = build_model(ModelConfig(d_model=16, n_layers=1, n_heads=2, vocab_size=12, n_positions=10,
                                    answer_tokens=tuple(range(6, 12))))
    res = evaluate(model, tunnel, episodes=8)
    assert isinstance(plots.plot_entropy_calibration({"m": res.per_position}), Figure)
    assert isinstance(plots.plot_learning_curves({"a": [{"step": 1, "entropy_mae_bits": 0.5}]}, target=0.1), Figure)
    with pytest.raises(ValueError):
        plots.plot_prediction_vs_posterior([0.5, 0.5], [1.0])
    w = prediction_widget(model, tunnel, seed=3)
    w.children[1].value = 4
    with pytest.raises(ValueError):
        prediction_widget(model, tunnel, position=9)
    plt.close("all")


def _static_html(w):
    """The widget's text/html form once setup_notebook has run in an IPython session."""
    from IPython.core.interactiveshell import InteractiveShell

    from bwt_lite.display import enable_static_widgets

    shell = InteractiveShell.instance()
    assert enable_static_widgets()
    try:
        return shell.display_formatter.format(w)[0].get("text/html")
    finally:
        InteractiveShell.clear_instance()  # other tests run without an IPython session


def test_prediction_widget_has_a_static_view_for_the_book():
    from bwt_lite.models import ModelConfig, build_model
    from bwt_lite.plotting.bayes import prediction_widget

    tunnel = make_tunnel("bijection", V=6, L=5)
    model = build_model(ModelConfig(d_model=16, n_layers=1, n_heads=2, vocab_size=12, n_positions=10,
                                    answer_tokens=tuple(range(6, 12))))
    html = _static_html(prediction_widget(model, tunnel, seed=3, position=2))
    assert "episode seed = 3, position = 2" in html and html.count("<img ") == 1
    assert plt.get_fignums() == []


def test_llm_attention_widget_has_a_static_view_for_the_book():
    pytest.importorskip("transformers")
    from bwt_lite.llm.offline import from_config, tiny_config
    from bwt_lite.llm.probe import probe
    from bwt_lite.plotting.llm import attention_widget

    model = from_config(tiny_config("gpt2", 64, d_model=32, n_layers=2, n_heads=4), seed=0)
    ids = torch.tensor([5, 9, 17, 9, 30, 2])
    w = attention_widget(probe(model, ids), [f"t{i}" for i in ids.tolist()], layer=1)
    plt.close("all")
    html = _static_html(w)  # the widget draws with plt.show(): the open figure is captured and closed
    assert "layer = 1" in html and html.count("<img ") == 1
    assert plt.get_fignums() == []
