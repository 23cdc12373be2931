"""Chapter 4 (associative recall): recall_key_stats and recall_breakdown against hand-made models
whose answers are known, and smoke tests of the recall plots and widget (Agg backend)."""
import math

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from bwt_lite import plotting as plots  # noqa: E402
from bwt_lite.evaluate import RecallBreakdown, evaluate, recall_breakdown, recall_key_stats  # noqa: E402
from bwt_lite.metrics import entropy_bits  # noqa: E402
from bwt_lite.models import ModelConfig, build_model  # noqa: E402
from bwt_lite.tunnels import make_tunnel  # noqa: E402
from bwt_lite.plotting.recall import recall_widget  # noqa: E402
from conftest import drawn, gen  # noqa: E402


def loop_stats(keys: list[int]) -> tuple[list, list, list, list]:
    """Reference (seen, stored, previous, distance) for one episode's keys, by plain loops."""
    seen, stored, previous, distance = [], [], [], []
    for t, k in enumerate(keys):
        before = keys[:t]
        seen.append(k in before)
        stored.append(len(set(before)))
        prev = max((s for s in range(t) if keys[s] == k), default=-1)
        previous.append(prev)
        distance.append(t - prev if prev >= 0 else 0)
    return seen, stored, previous, distance


def test_recall_key_stats_match_loops():
    keys = torch.randint(0, 5, (20, 17), generator=gen(1))
    stats = recall_key_stats(keys, 5)
    for b in range(keys.shape[0]):
        seen, stored, previous, distance = loop_stats(keys[b].tolist())
        assert stats["seen"][b].tolist() == seen
        assert stats["stored"][b].tolist() == stored
        assert stats["previous"][b].tolist() == previous
        assert stats["distance"][b].tolist() == distance
    tunnel = make_tunnel("recall", V=6, L=9)
    ep = tunnel.sample(8, gen(2))
    assert torch.equal(recall_key_stats(ep.inputs[:, ep.positions], 6)["seen"], tunnel.seen_mask(ep))


def test_recall_key_stats_bad_input():
    with pytest.raises(ValueError, match="keys"):
        recall_key_stats(torch.zeros(3, dtype=torch.long), 4)
    with pytest.raises(ValueError, match="keys"):
        recall_key_stats(torch.zeros(2, 3), 4)
    with pytest.raises(ValueError, match="0..V-1"):
        recall_key_stats(torch.tensor([[0, 4]]), 4)
    with pytest.raises(ValueError, match="V"):
        recall_key_stats(torch.tensor([[0, 0]]), 1)


class Recaller(torch.nn.Module):
    """A hand-made "model": at a recalled key it finds the previous occurrence by a plain loop over the
    input tokens and returns a point mass on the value that followed it, if it lies at most ``reach``
    pairs back; further back (and at new keys) it returns an almost uniform prediction whose top-1 is
    deliberately wrong at recalls. ``reach=None``: the oracle, the exact posterior's log-probs."""

    def __init__(self, V: int, reach: int | None = None):
        super().__init__()
        self.V, self.reach = V, reach

    def forward(self, inputs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        V = self.V
        B, P = inputs.shape[0], positions.numel()
        out = torch.zeros(B, P, V)
        for b in range(B):
            keys = [int(inputs[b, p]) for p in positions]
            for t in range(P):
                prev = [s for s in range(t) if keys[s] == keys[t]]
                if not prev:
                    continue  # new key: uniform, exactly the posterior
                v = int(inputs[b, positions[prev[-1]] + 1]) - V
                if self.reach is None or t - prev[-1] <= self.reach:
                    out[b, t, :] = -60.0
                    out[b, t, v] = 0.0
                else:
                    out[b, t, (v + 1) % V] = 1e-6  # top-1 wrong, entropy log2 V to within 1e-11
        return out


def test_oracle_is_perfect_everywhere():
    tunnel = make_tunnel("recall", V=6, L=12)
    bd = recall_breakdown(Recaller(6), tunnel, episodes=64, seed=3)
    assert isinstance(bd, RecallBreakdown)
    assert bd.accuracy == 1.0 and bd.entropy_mae_bits < 1e-12 and bd.kl_bits < 1e-12
    assert bd.chance == pytest.approx(1 / 6) and bd.episodes == 64
    for g in (bd.by_stored, bd.by_distance):
        assert all(a == 1.0 for a in g["accuracy"]) and max(g["entropy_mae"]) < 1e-12
        assert sum(g["count"]) == bd.recalls
        assert g["bucket"] == sorted(g["bucket"]) and min(g["count"]) > 0
    assert bd.by_stored["bucket"][0] >= 1 and bd.by_distance["bucket"][0] == 1
    assert max(bd.by_stored["bucket"]) <= 6


def test_forgetful_model_fails_exactly_beyond_its_reach():
    tunnel = make_tunnel("recall", V=5, L=16)
    bd = recall_breakdown(Recaller(5, reach=3), tunnel, episodes=48, seed=0, batch_size=20)
    by_d = bd.by_distance
    for d, acc, h, kl in zip(by_d["bucket"], by_d["accuracy"], by_d["entropy_mae"], by_d["kl"]):
        if d <= 3:
            assert acc == 1.0 and h < 1e-12 and kl < 1e-12
        else:
            assert acc == 0.0 and h == pytest.approx(math.log2(5), abs=1e-6) and kl == pytest.approx(math.log2(5), abs=1e-5)
    assert max(by_d["bucket"]) > 3  # the far buckets exist
    near = sum(c for d, c in zip(by_d["bucket"], by_d["count"]) if d <= 3)
    assert bd.accuracy == pytest.approx(near / bd.recalls)


def test_uniform_model_is_at_chance():
    class Uniform(torch.nn.Module):
        def forward(self, inputs, positions):
            return torch.zeros(inputs.shape[0], positions.numel(), 16)

    tunnel = make_tunnel("recall")
    bd = recall_breakdown(Uniform(), tunnel, episodes=1024, seed=1)
    assert bd.accuracy == pytest.approx(1 / 16, abs=0.01)  # argmax of a tie is value 0: right 1/V of the time
    assert bd.entropy_mae_bits == pytest.approx(4.0) and bd.kl_bits == pytest.approx(4.0)
    assert all(h == pytest.approx(4.0) for h in bd.by_stored["entropy_mae"])
    # the counts are those of the tunnel's own recall mask on the same held-out episodes
    assert bd.recalls == pytest.approx(1024 * tunnel.expected_seen().sum().item(), rel=0.03)


def test_breakdown_uses_evaluates_episodes():
    tunnel = make_tunnel("recall", V=8, L=10)
    model = build_model(ModelConfig(d_model=16, n_layers=1, n_heads=2, vocab_size=16, n_positions=20,
                                    answer_tokens=tuple(range(8, 16))))
    res = evaluate(model, tunnel, episodes=300, seed=5, batch_size=128)
    bd = recall_breakdown(model, tunnel, episodes=300, seed=5, batch_size=128)
    assert bd.accuracy == pytest.approx(res.accuracy, abs=1e-12)
    acc = sum(a * c for a, c in zip(bd.by_distance["accuracy"], bd.by_distance["count"])) / bd.recalls
    assert acc == pytest.approx(res.accuracy, abs=1e-12)
    assert bd.to_dict()["by_stored"]["bucket"] == bd.by_stored["bucket"]


def test_breakdown_on_mqar():
    tunnel = make_tunnel("recall", V=8, variant="mqar", n_pairs=5, gap=2, n_queries=4)
    bd = recall_breakdown(Recaller(8), tunnel, episodes=40, seed=0)
    assert bd.accuracy == 1.0 and bd.recalls == 40 * 4
    assert bd.by_stored["bucket"] == [5]  # every query is asked with all 5 pairs stored


def test_breakdown_bad_input():
    with pytest.raises(ValueError, match="recall tunnel"):
        recall_breakdown(Recaller(6), make_tunnel("bijection", V=6, L=5))
    with pytest.raises(ValueError, match="episodes"):
        recall_breakdown(Recaller(6), make_tunnel("recall", V=6, L=5), episodes=0)


def test_recall_plots():
    tunnel = make_tunnel("recall", V=6, L=10)
    ep = tunnel.sample(1, gen(4))
    st = recall_key_stats(ep.inputs[:, ep.positions], 6)
    h = entropy_bits(ep.probs[0])
    q = torch.softmax(torch.randn(10, 6, generator=gen(5)), -1)
    bd = recall_breakdown(Recaller(6, reach=2), tunnel, episodes=16)
    figs = [
        plots.plot_recall_tokens(ep.inputs[0], ep.positions, 6),
        plots.plot_recall_tokens(ep.inputs[0].tolist(), ep.positions.tolist(), 6, seen=st["seen"][0],
                                 previous=st["previous"][0], highlight=int(st["seen"][0].nonzero()[0, 0]), title="x"),
        plots.plot_recall_episode(ep.inputs[0], ep.positions, 6, h, h_model=entropy_bits(q), seen=st["seen"][0],
                                  previous=st["previous"][0], title="episode"),
        plots.plot_recall_episode(ep.inputs[0], ep.positions, 6, h.numpy()),
        plots.plot_recall_fraction(tunnel.expected_seen(), tunnel.expected_seen() * 0.9, title="f"),
        plots.plot_recall_fraction(tunnel.expected_seen().tolist()),
        plots.plot_recall_breakdown({"a": bd, "b": bd.to_dict()}, min_count=2, title="t"),
        plots.plot_recall_breakdown({"a": bd}, chance=None),
        plots.plot_recall_step(ep.inputs[0], ep.positions, 6, 3, q[3], ep.probs[0, 3], seen=st["seen"][0],
                               previous=st["previous"][0]),
    ]
    mqar = make_tunnel("recall", V=6, variant="mqar", n_pairs=4, gap=3, n_queries=3)
    em = mqar.sample(1, gen(6))
    sm = recall_key_stats(em.inputs[:, em.positions], 6)
    figs.append(plots.plot_recall_episode(em.inputs[0], em.positions, 6, entropy_bits(em.probs[0]),
                                          seen=sm["seen"][0], previous=sm["previous"][0]))
    for fig in figs:
        assert drawn(fig), fig.axes  # every figure draws something
        fig.canvas.draw()
    fig, ax = plt.subplots()
    assert plots.plot_recall_tokens(ep.inputs[0], ep.positions, 6, ax=ax) is fig
    assert plots.plot_recall_fraction(tunnel.expected_seen(), ax=ax) is fig


def test_recall_plots_reject_bad_shapes():
    tunnel = make_tunnel("recall", V=6, L=10)
    ep = tunnel.sample(2, gen(4))
    with pytest.raises(ValueError, match="1-D"):
        plots.plot_recall_tokens(ep.inputs, ep.positions, 6)
    with pytest.raises(ValueError, match="seen"):
        plots.plot_recall_tokens(ep.inputs[0], ep.positions, 6, seen=[True])
    with pytest.raises(ValueError, match="highlight"):
        plots.plot_recall_tokens(ep.inputs[0], ep.positions, 6, highlight=10)
    with pytest.raises(ValueError, match="h_bayes"):
        plots.plot_recall_episode(ep.inputs[0], ep.positions, 6, entropy_bits(ep.probs))
    with pytest.raises(ValueError, match="observed"):
        plots.plot_recall_fraction([0.0, 0.5], [0.1])
    with pytest.raises(ValueError, match="breakdowns"):
        plots.plot_recall_breakdown({})


def test_recall_widget(capsys):
    tunnel = make_tunnel("recall", V=6, L=10)
    model = build_model(ModelConfig(d_model=16, n_layers=1, n_heads=2, vocab_size=12, n_positions=20,
                                    answer_tokens=tuple(range(6, 12))))
    w = recall_widget(model, tunnel, seed=3)
    assert isinstance(w, ipywidgets.interactive)
    (slider,) = [c for c in w.children if isinstance(c, ipywidgets.IntSlider)]
    ep = tunnel.sample(1, gen(3))
    first_recall = int(tunnel.seen_mask(ep)[0].nonzero()[0, 0])
    assert (slider.min, slider.max, slider.value) == (0, 9, first_recall)
    out = capsys.readouterr().out
    assert f"key step t = {first_recall}" in out and "SEEN at pair" in out and "H_model" in out
    slider.value = 0
    assert "is NEW" in capsys.readouterr().out
    (seed_box,) = [c for c in w.children if isinstance(c, ipywidgets.IntText)]
    seed_box.value = 7
    assert "key step t = 0" in capsys.readouterr().out
    assert plt.get_fignums() == []  # the widget closes its figures
    w2 = recall_widget(Recaller(6), make_tunnel("recall", V=6, variant="mqar", n_pairs=3, gap=2, n_queries=2),
                       position=1)
    assert [c for c in w2.children if isinstance(c, ipywidgets.IntSlider)][0].value == 1
    with pytest.raises(ValueError, match="position"):
        recall_widget(model, tunnel, position=10)
