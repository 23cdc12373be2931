"""Chapter 3 plots and widget: smoke tests on the Agg backend (no kernel, no display)."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import numpy as np  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from bwt_lite import plotting as plots  # noqa: E402
from bwt_lite.metrics import entropy_bits  # noqa: E402
from bwt_lite.models import ModelConfig, build_model  # noqa: E402
from bwt_lite.tunnels import make_tunnel  # noqa: E402
from bwt_lite.tunnels.hmm import HMM  # noqa: E402
from bwt_lite.plotting.hmm import hmm_filter_widget  # noqa: E402
from conftest import drawn, gen  # noqa: E402


@pytest.fixture
def episode():
    tunnel = make_tunnel("hmm", K=12)
    ep = tunnel.sample(2, gen(3))
    _, _, obs = HMM.decode(ep.inputs)
    q = torch.softmax(torch.randn(2, 12, 5, generator=gen(4)), -1)
    return ep, obs, q


def tiny_model(n_positions: int = 153) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(ModelConfig(d_model=16, n_layers=1, n_heads=2, vocab_size=105, n_positions=n_positions,
                                   answer_tokens=None, n_outputs=5))


def test_hmm_posteriors_heatmaps(episode):
    ep, obs, q = episode
    figs = [
        plots.plot_hmm_posteriors(ep.probs[0], q[0], states=ep.target[0], obs=obs[0], title="episode"),
        plots.plot_hmm_posteriors(ep.probs[0].numpy()),
        plots.plot_hmm_posteriors(ep.probs[1].tolist(), q[1].float(), obs=obs[1]),
    ]
    for fig in figs:
        fig.canvas.draw()
    assert len([a for a in figs[0].axes if a.images]) == 2  # two heatmaps (plus a colorbar)
    assert len([a for a in figs[1].axes if a.images]) == 1  # the exact posterior alone
    # the exact posterior drawn as given, whether a tensor or an array
    assert np.array_equal(figs[1].axes[0].images[0].get_array(), ep.probs[0].numpy().T.astype(np.float64))
    with pytest.raises(ValueError, match="bayes_probs"):
        plots.plot_hmm_posteriors(ep.probs)
    with pytest.raises(ValueError, match="model_probs"):
        plots.plot_hmm_posteriors(ep.probs[0], q[0, :5])


def test_hmm_posteriors_long_episode():
    """A 50-step episode: both heatmaps hold every step, the dots sit on the true states, and the time
    axis is thinned to every third step so its labels stay readable."""
    ep = make_tunnel("hmm", K=50).sample(1, gen(5))
    fig = plots.plot_hmm_posteriors(ep.probs[0], ep.probs[0], states=ep.target[0])
    fig.canvas.draw()
    heatmaps = [a for a in fig.axes if a.images]
    assert len(heatmaps) == 2
    for ax in heatmaps:
        assert np.array_equal(ax.images[0].get_array(), ep.probs[0].numpy().T.astype(np.float64))
        dots = ax.collections[0].get_offsets()
        assert np.array_equal(dots[:, 0], np.arange(50)) and np.array_equal(dots[:, 1], ep.target[0].numpy())
    assert list(heatmaps[-1].get_xticks()) == list(range(0, 50, 3))


def test_position_errors():
    curves = {"K = 30": torch.rand(30).tolist(), "K = 50": torch.rand(50), "zeros": [0.0] * 20}
    fig = plots.plot_position_errors(curves, train_length=20, title="length generalisation")
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_xlim() == (0.5, 50.5)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "training length (20)" in labels and "K = 50" in labels
    fig2, axes = plt.subplots(1, 2)
    assert plots.plot_position_errors({"a": [0.1, 0.2]}, logy=False, ax=axes[1]) is fig2
    assert axes[1].get_yscale() == "linear"
    with pytest.raises(ValueError, match="one value per position"):
        plots.plot_position_errors({"bad": torch.zeros(3, 2)})


def test_hmm_step(episode):
    ep, obs, q = episode
    hb, hm = entropy_bits(ep.probs[0]), entropy_bits(q[0])
    fig = plots.plot_hmm_step(ep.probs[0], q[0], hb, hm, 4, obs=obs[0], states=ep.target[0])
    assert len(fig.axes) == 2 and drawn(fig)
    fig.canvas.draw()
    plots.plot_hmm_step(ep.probs[0], q[0], hb, hm, 0).canvas.draw()
    with pytest.raises(ValueError, match="t must be"):
        plots.plot_hmm_step(ep.probs[0], q[0], hb, hm, 12)
    with pytest.raises(ValueError, match="h_bayes"):
        plots.plot_hmm_step(ep.probs[0], q[0], hb[:3], hm, 1)
    with pytest.raises(ValueError, match="model_probs"):
        plots.plot_hmm_step(ep.probs[0], q[0, :, :3], hb, hm, 1)


def test_hmm_filter_widget(capsys):
    model = tiny_model()
    w = hmm_filter_widget(model, seed=7, t=3)
    assert isinstance(w, ipywidgets.interactive)
    (seed_box,) = [c for c in w.children if isinstance(c, ipywidgets.IntText)]
    (slider,) = [c for c in w.children if isinstance(c, ipywidgets.IntSlider)]
    assert (slider.min, slider.max, slider.value, seed_box.value) == (0, 19, 3, 7)
    out = capsys.readouterr().out
    assert "t = 3: observed symbol" in out and "true hidden state" in out and "H_Bayes" in out and "KL" in out
    assert "observations o_0..o_3:" in out
    slider.value = 19
    assert "t = 19:" in capsys.readouterr().out
    seed_box.value = 8
    assert "t = 19:" in capsys.readouterr().out
    assert plt.get_fignums() == []  # the widget closes its figures


def test_hmm_filter_widget_same_seed_same_episode_and_long_tunnel(capsys):
    model = tiny_model()
    hmm_filter_widget(model, seed=4, t=2)
    first = capsys.readouterr().out
    hmm_filter_widget(model, seed=4, t=2)
    assert capsys.readouterr().out == first
    w = hmm_filter_widget(model, make_tunnel("hmm", K=50), seed=1, t=45)
    (slider,) = [c for c in w.children if isinstance(c, ipywidgets.IntSlider)]
    assert slider.max == 49
    assert "t = 45:" in capsys.readouterr().out


def test_hmm_filter_widget_bad_input():
    model = tiny_model()
    with pytest.raises(ValueError, match="t must be"):
        hmm_filter_widget(model, t=20)
    with pytest.raises(ValueError, match="HMM tunnel"):
        hmm_filter_widget(model, make_tunnel("bijection"))
