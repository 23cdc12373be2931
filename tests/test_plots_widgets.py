"""Plots and widgets of the chapters: smoke tests on the Agg backend (no kernel, no display)."""
import matplotlib

matplotlib.use("Agg")

from typing import Callable  # noqa: E402

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bwt_lite import plotting as plots  # noqa: E402
from bwt_lite.metrics import entropy_bits  # noqa: E402
from bwt_lite.tunnels import make_tunnel  # noqa: E402
from bwt_lite.plotting.bayes import elimination_widget  # noqa: E402
from conftest import drawn, gen  # noqa: E402


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
        assert drawn(fig), fig.axes  # every figure draws something
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


# ------------------------------------------------------------------------------------------------
# Every figure of the package fits the book's column


def _figure_cases(monkeypatch) -> dict[str, Callable[[], Figure]]:
    """Module.function -> a call of every plot_* function of bwt_lite.plotting (and of the widget
    that draws its own figure) on small synthetic inputs shaped like the chapters' (V = 20, K = 20, a
    63-token recall episode, 3 layers, 3 tunnels)."""
    from types import SimpleNamespace

    import numpy as np

    from bwt_lite.dynamics.gradients import free_score_descent
    from bwt_lite.evaluate import recall_key_stats
    from bwt_lite.geometry.ablation import HeadAblation, LayerAblation
    from bwt_lite.geometry.dissociation import Dissociation, SnapshotView
    from bwt_lite.geometry.elimination import progressive_elimination
    from bwt_lite.geometry.frame import FrameResult
    from bwt_lite.geometry.probes import ProbeResult
    from bwt_lite.geometry.simplex import SimplexResult
    from bwt_lite.models import ModelConfig, build_model
    from bwt_lite.plotting import attention as at, llm, manifold as mf
    from bwt_lite.tunnels.bijection import Bijection
    from bwt_lite.tunnels.hmm import HMM

    g = gen(0)
    rand = lambda *shape: torch.rand(*shape, generator=g)  # noqa: E731
    ep = make_tunnel("bijection").sample(1, gen(1))
    p, h = ep.probs[0], entropy_bits(ep.probs[0])
    keys, values = ep.inputs[0, ep.positions].tolist(), ep.target[0].tolist()
    hmm = make_tunnel("hmm").sample(1, gen(2))
    hp, hq = hmm.probs[0], torch.softmax(torch.randn(20, 5, generator=g), -1)
    obs = HMM.decode(hmm.inputs)[2][0]
    rec = make_tunnel("recall", V=16, L=32).sample(1, gen(3))
    st = {k: v[0] for k, v in recall_key_stats(rec.inputs[:, rec.positions], 16).items()}
    rq = torch.softmax(torch.randn(32, 16, generator=g), -1)
    group = {"bucket": list(range(1, 17)), "count": [50] * 16, "accuracy": rand(16).tolist(),
             "entropy_mae": rand(16).tolist()}
    breakdown = {"chance": 1 / 16, "by_stored": group, "by_distance": group}
    pp = {"h_model": rand(19).tolist(), "h_bayes": rand(19).tolist(), "entropy_mae": rand(19).tolist(),
          "kl": rand(19).tolist()}
    rows = [{"tunnel": t, "arch": a, "primitive": "binding", "accuracy": 0.5, "per_position": pp}
            for t in ("bijection", "hmm", "recall") for a in ("transformer", "mlp", "lstm", "mamba")]
    ladder = [{"tunnel": "hmm", "kind": "baseline", "arch": f"window-{w}", "entropy_mae_bits": 0.4 / (w + 1),
               "kl_bits": 0.3 / (w + 1) ** 2} for w in range(9)]
    ladder += [{"tunnel": "hmm", "kind": "model", "arch": a, "entropy_mae_bits": 0.05, "kl_bits": 0.01}
               for a in ("transformer", "lstm", "mamba")]
    seed_sweep = {"windows": {f"window-{w}": {"entropy_mae_bits": 0.4 / (w + 1), "kl_bits": 0.1} for w in range(9)},
                  "runs": [{"lr": lr, "seed": sd, "history": [{"step": 500 * i, "entropy_mae_bits": 0.4 / i}
                                                              for i in range(1, 21)]}
                           for lr in (2e-3, 1e-3) for sd in range(5)]}
    capacity = [{"arch": a, "d_model": d, "n_pairs": n, "accuracy": 0.5, "state_numbers": d * (n + 10),
                 "curve": [[32 * s, 0.1 + s / 1e4] for s in (500, 1000, 1500)]}
                for a in ("transformer", "lstm", "mamba") for d in (32, 64) for n in (4, 8, 16, 32)]
    trace = free_score_descent(torch.randn(12, 3, generator=g, dtype=torch.float64),
                               torch.randn(3, 4, generator=g, dtype=torch.float64), 1, steps=8)
    reg = [rand(16) + 0.1 for _ in range(5)]
    cos = rand(4, 20, 20) * 2 - 1
    frame = FrameResult("embedding/heads/abs", 0, list(range(20)), 16, [0.2] * 4, [0.21] * 4, 0.2, 0.2, cos, cos)
    layer_ab = LayerAblation(0.01, 0.01, [0.5, 0.2, 0.02], [0.3, 0.1, 0.01], 8, [rand(19).tolist()] * 3,
                             rand(19).tolist())
    elim = progressive_elimination(build_model(ModelConfig(d_model=16, n_layers=3, n_heads=2, vocab_size=40,
                                                           n_positions=38, answer_tokens=tuple(range(20, 40)))),
                                   Bijection(), episodes=4)
    simplex = SimplexResult([0.4, 0.2], *[0.5] * 9, 300, 300, "final", torch.randn(300, 2, generator=g),
                            torch.arange(300) % 5, rand(300) * 2)
    layers = {a: {name: simplex for name in ("embedding", "block 0", "block 1", "final norm")}
              for a in ("mamba", "lstm", "transformer")}
    steps = [0, 10, 100, 1000, 10000]
    diss = Dissociation(steps, *[rand(5).tolist() for _ in range(7)], 0.25, rand(5).tolist(), rand(5).tolist(), 64)
    view = SnapshotView(100, rand(37, 37), 0, 0, torch.randn(300, 2, generator=g), rand(300), [0.5, 0.2])
    probe = ProbeResult(["embedding", "block 0", "block 1", "final norm"], [0.1, 0.5, 0.8, 0.9], [0.2] * 4,
                        "posterior", 128, 128)
    pca = SimpleNamespace(pc1=0.4, pc12=0.6, ci={"pc1": (0.3, 0.5), "pc12": (0.5, 0.7)}, scores=torch.randn(48, 2))
    shown: list[Figure] = []
    monkeypatch.setattr(mf, "show_figure", shown.append)  # the figure simplex_widget draws and shows
    return {
        "bayes.plot_posterior_bars": lambda: plots.plot_posterior_bars(p[5], revealed=dict(zip(values, keys)),
                                                                       answer=values[5], title="t = 5"),
        "bayes.plot_entropy_staircase": lambda: plots.plot_entropy_staircase(h, marginal=4.3, current=4),
        "bayes.plot_posterior_heatmap": lambda: plots.plot_posterior_heatmap(p, answers=values, title="episode"),
        "bayes.plot_elimination_step": lambda: plots.plot_elimination_step(p, h, keys, values, t=18),
        "bayes.plot_entropy_calibration": lambda: plots.plot_entropy_calibration({"a": pp, "b": pp}),
        "bayes.plot_prediction_vs_posterior": lambda: plots.plot_prediction_vs_posterior(p[3], p[3], title="t"),
        "bayes.plot_learning_curves": lambda: plots.plot_learning_curves(
            {"a": [{"step": s, "entropy_mae_bits": 1 / s} for s in (1, 10, 100)]}, target=0.05),
        "hmm.plot_hmm_posteriors": lambda: plots.plot_hmm_posteriors(hp, hq, states=hmm.target[0], obs=obs,
                                                                     title="episode"),
        "hmm.plot_position_errors": lambda: plots.plot_position_errors({"a": rand(50), "b": rand(50)},
                                                                       train_length=20, title="K = 50"),
        "hmm.plot_hmm_step": lambda: plots.plot_hmm_step(hp, hq, entropy_bits(hp), entropy_bits(hq), 7, obs=obs,
                                                         states=hmm.target[0]),
        "recall.plot_recall_tokens": lambda: plots.plot_recall_tokens(rec.inputs[0], rec.positions, 16,
                                                                      seen=st["seen"], previous=st["previous"]),
        "recall.plot_recall_episode": lambda: plots.plot_recall_episode(
            rec.inputs[0], rec.positions, 16, entropy_bits(rec.probs[0]), h_model=entropy_bits(rq),
            seen=st["seen"], previous=st["previous"], title="one episode"),
        "recall.plot_recall_fraction": lambda: plots.plot_recall_fraction(rand(32), rand(32), title="f"),
        "recall.plot_recall_breakdown": lambda: plots.plot_recall_breakdown({"a": breakdown, "b": breakdown},
                                                                            title="t"),
        "recall.plot_recall_step": lambda: plots.plot_recall_step(rec.inputs[0], rec.positions, 16, 20, rq[20],
                                                                  rec.probs[0, 20], seen=st["seen"],
                                                                  previous=st["previous"]),
        "regression.plot_gaussian_errors_by_position": lambda: plots.plot_gaussian_errors_by_position(
            {"a": pp, "b": pp}, title="t"),
        "regression.plot_variance_by_position": lambda: plots.plot_variance_by_position({"a": reg[0]}, reg[1],
                                                                                        noise_var=0.25),
        "regression.plot_predicted_vs_exact": lambda: plots.plot_predicted_vs_exact(
            reg[0], reg[1], color=torch.arange(16), color_label="position", title="t"),
        "regression.plot_standardised_residuals": lambda: plots.plot_standardised_residuals({"a": torch.randn(500)}),
        "regression.plot_gaussian_predictive": lambda: plots.plot_gaussian_predictive(0.1, 0.3, 0.2, 0.25, y=0.5),
        "regression.plot_regression_step": lambda: plots.plot_regression_step(*reg, position=9),
        "primitives.plot_primitives_entropy": lambda: plots.plot_primitives_entropy(rows, title="t"),
        "primitives.plot_accuracy_by_pairs": lambda: plots.plot_accuracy_by_pairs({"a": ([2, 4, 8], [1, 0.8, 0.5])},
                                                                                  chance=1 / 16),
        "primitives.plot_window_ladder": lambda: plots.plot_window_ladder(ladder, "hmm"),
        "primitives.plot_seed_curves": lambda: plots.plot_seed_curves(seed_sweep),
        "recall.plot_capacity": lambda: plots.plot_capacity(capacity, {4: 0.34, 8: 0.25, 16: 0.2, 32: 0.15}),
        "recall.plot_capacity_curves": lambda: plots.plot_capacity_curves(capacity, 16, 0.2),
        "dynamics.plot_routing_step": lambda: plots.plot_routing_step(trace.alpha, trace.advantage, trace.loss, 4,
                                                                      symbols=[i % 4 for i in range(12)]),
        "dynamics.plot_speedup": lambda: plots.plot_speedup(
            {"sgd": rand(3, 11) + 2, "values x10": rand(3, 11) + 1.8}, {"values x10": [2.0, 2.5, 3.0]}, paper=2.3,
            floor=1.8, intervals={"values x10": (2.5, 1.9, 3.1)}),
        "dynamics.plot_frame_vs_precision": lambda: plots.plot_frame_vs_precision(
            {"steps": steps, "pattern": rand(5), "values": rand(5), "routing": rand(5)},
            [{"step": s, "entropy_mae_bits": 0.5, "kl_bits": 0.1} for s in steps], title="t"),
        "llm.plot_layer_profiles": lambda: llm.plot_layer_profiles(
            {"a": rand(12), "b": rand(12)}, 0.1, {"a": rand(12), "b": rand(12)}, 5.0, paper_range=(0.4, 0.5),
            authors_probe=0.05, title="t"),
        "llm.plot_value_manifold": lambda: llm.plot_value_manifold(
            {"mixed (6 domains)": pca, "single (cooking)": pca},
            {"mixed (6 domains)": [f"d{i % 6}" for i in range(48)]}, title="t"),
        "llm.plot_sula": lambda: llm.plot_sula(rand(200), rand(200), torch.arange(200) % 5, rand(200), title="t"),
        "llm.plot_intervention": lambda: llm.plot_intervention([-2, 0, 2], [1, 0.5, 0.2], [0.5] * 3, 0.5, title="t"),
        "llm.plot_final_attention": lambda: llm.plot_final_attention(rand(40), [f"tok{i}" for i in range(40)], 3,
                                                                     2.5),
        "attention.plot_key_cosines": lambda: at.plot_key_cosines(frame, 1, labels=[str(v) for v in range(20)]),
        "attention.plot_frame_by_head": lambda: at.plot_frame_by_head(frame, paper={"paper": 0.05,
                                                                                    "range": (0.43, 0.49)}),
        "attention.plot_head_ablation": lambda: at.plot_head_ablation(
            HeadAblation(0.01, 0.01, rand(2, 8), rand(2, 8), [0, 1], 8), paper=(0.1, 0.2)),
        "attention.plot_layer_ablation": lambda: at.plot_layer_ablation(layer_ab, paper_ratio=10),
        "attention.plot_layer_ablation_curves": lambda: at.plot_layer_ablation_curves(layer_ab, plateau=1.1),
        "attention.plot_role_mass": lambda: at.plot_role_mass(elim, reference=elim),
        "attention.plot_attention_entropy": lambda: at.plot_attention_entropy(elim, reference=elim),
        "attention.plot_qk_cosine": lambda: at.plot_qk_cosine(elim),
        "attention.plot_value_mass": lambda: at.plot_value_mass(elim),
        "attention.plot_attention_row": lambda: at.plot_attention_row(elim, 12, 1),
        "manifold.plot_value_manifold": lambda: mf.plot_value_manifold(view.scores, view.entropy,
                                                                       explained=[0.5, 0.2], title="t"),
        "manifold.plot_manifold_comparison": lambda: mf.plot_manifold_comparison(
            {"after the final norm (what the head reads)": {"all positions": 0.5, "query positions": 0.6,
                                                            "standardised": 0.4},
             "output of the last attention layer": {"all positions": 0.3, "query positions": 0.5,
                                                    "standardised": 0.2}},
            paper=0.9, paper_range=(0.5, 0.8)),
        "manifold.plot_probe_r2": lambda: mf.plot_probe_r2({"a": probe, "b": probe}),
        "manifold.plot_dissociation": lambda: mf.plot_dissociation(diss, title="t"),
        "manifold.plot_snapshot": lambda: mf.plot_snapshot(view, diss, [f"t{i}" for i in range(37)]),
        "manifold.plot_belief_simplex": lambda: mf.plot_belief_simplex(simplex, title="t"),
        "manifold.plot_simplex_by_layer": lambda: mf.plot_simplex_by_layer(layers, paper={"mamba": 0.4}),
        "manifold.simplex_widget": lambda: (mf.simplex_widget(layers, color_by="both"), shown[-1])[1],
    }


def _columns(fig: Figure) -> int:
    """How many panels a row holds: distinct left edges of the visible axes, colour bars left out."""
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    return len({round(ax.get_position().x0, 2) for ax in axes})


def test_every_figure_fits_the_book_column(monkeypatch):
    """Each plot function's figure is at most MAX_WIDTH_IN wide, with at most two panels a row, and
    what the book saves of it (its tight bounding box plus 0.1 in of padding each side, as the inline
    backend saves) is shown at no less than check_book.MIN_SCALE of its size."""
    import inspect

    from check_book import MIN_SCALE

    from bwt_lite import plotting
    from bwt_lite.display import COLUMN_PX, FIGURE_DPI, FIGURE_STYLE, MAX_WIDTH_IN

    cases = _figure_cases(monkeypatch)
    names = {f"{m}.{name}" for m in ("bayes", "hmm", "recall", "regression", "primitives", "dynamics", "llm",
                                     "attention", "manifold")
             for name, f in inspect.getmembers(getattr(plotting, m), inspect.isfunction)
             if name.startswith("plot_") and f.__module__ == f"bwt_lite.plotting.{m}"}
    assert names <= set(cases), f"no case for {sorted(names - set(cases))}"
    too_wide = []
    with matplotlib.rc_context(FIGURE_STYLE):
        for name, make in cases.items():
            fig = make()
            fig.canvas.draw()
            width = fig.get_size_inches()[0]
            saved = fig.get_tightbbox(fig.canvas.get_renderer()).width + 0.2
            if width > MAX_WIDTH_IN or saved * FIGURE_DPI * MIN_SCALE > COLUMN_PX or _columns(fig) > 2:
                too_wide.append(f"{name}: {width:.1f} in ({saved:.1f} saved), {_columns(fig)} a row")
            plt.close(fig)
    assert not too_wide, "\n".join(too_wide)


def test_probe_plot_puts_each_layer_at_its_own_tick():
    """A shallower model's final norm is drawn at the "final norm" tick, not at a deeper model's block."""
    from types import SimpleNamespace

    from bwt_lite.plotting import manifold as mf

    deep = SimpleNamespace(layers=["embedding", "block 0", "block 1", "block 2", "final norm"],
                           r2=[0.0, 0.2, 0.4, 0.6, 0.8], target="posterior")
    shallow = SimpleNamespace(layers=["embedding", "block 0", "final norm"], r2=[0.0, 0.5, 0.9], target="posterior")
    fig = mf.plot_probe_r2({"deep": deep, "shallow": shallow})
    lines = {line.get_label(): list(line.get_xdata()) for line in fig.axes[0].get_lines()}
    assert lines["shallow"] == [0, 1, 4] and lines["deep"] == [0, 1, 2, 3, 4]
    plt.close(fig)
