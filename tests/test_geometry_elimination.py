"""Progressive elimination: the role of every position in constructed episodes of each bijection
variant, attention-mass split / entropy / evenness on constructed patterns with known answers, and
the whole diagnostic on a model whose attention is uniform by construction."""
import math

import ipywidgets
import pytest
import torch
from matplotlib.figure import Figure

from bwt_lite.geometry.elimination import (CONSISTENT, ELIMINATED, FUTURE, KEY, ROLES, SELF, attention_entropy,
                                           attention_mass_split, entropy_by_layer, bijection_roles, format_summary,
                                           progressive_elimination, qk_cosine, role_counts, role_evenness)
from bwt_lite.plotting.attention import (elimination_scrub_widget, plot_attention_entropy,
                                                  plot_attention_row, plot_qk_cosine, plot_role_mass,
                                                  plot_value_mass)
from bwt_lite.models import ModelConfig, build_model
from bwt_lite.tunnels import Episodes
from bwt_lite.tunnels.bijection import Bijection
from conftest import gen


def episode(tunnel: Bijection, keys: list[int], values: list[int], query: int | None = None) -> Episodes:
    """One hand-written episode of ``tunnel`` with the exact posterior from the tunnel."""
    V = tunnel.V
    k, v = torch.tensor([keys]), torch.tensor([values])
    probs = tunnel.posterior(k, v)
    if tunnel.variant == "paired":
        tokens = [t for pair in zip(keys, values) for t in pair] + [query]
        qv = values[keys.index(query)]
        probs = torch.cat([probs, torch.nn.functional.one_hot(torch.tensor([[qv]]), V).double()], 1)
    else:
        tokens = [t for pair in zip(keys, [V + x for x in values]) for t in pair][:-1]
    return Episodes(inputs=torch.tensor([tokens]), positions=tunnel.positions, target=v, probs=probs)


def test_roles_in_the_separate_layout():
    tunnel = Bijection(V=4, L=3)
    ep = episode(tunnel, [2, 0, 3], [1, 3, 0])  # tokens [2, 5, 0, 7, 3]
    assert ep.inputs.tolist() == [[2, 5, 0, 7, 3]]
    roles = bijection_roles(tunnel, ep)[0]
    assert roles.tolist() == [
        [SELF, FUTURE, FUTURE, FUTURE, FUTURE],  # t = 0: nothing revealed
        [KEY, ELIMINATED, SELF, FUTURE, FUTURE],  # t = 1: value 1 is ruled out for key 0
        [KEY, ELIMINATED, KEY, ELIMINATED, SELF],  # t = 2: values 1 and 3 ruled out for key 3
    ]
    # every revealed value is eliminated and none is consistent, in every sampled episode
    tunnel = Bijection()
    ep = tunnel.sample(64, gen(0))
    counts = role_counts(bijection_roles(tunnel, ep))
    t = torch.arange(19, dtype=torch.float64)
    assert torch.equal(counts[:, ELIMINATED], t) and torch.equal(counts[:, KEY], t)
    assert torch.equal(counts[:, CONSISTENT], torch.zeros(19, dtype=torch.float64))
    assert torch.equal(counts[:, SELF], torch.ones(19, dtype=torch.float64))


def test_roles_with_a_repeated_key_and_in_the_paired_layout():
    tunnel = Bijection(V=4, L=4, variant="replacement")
    ep = episode(tunnel, [2, 0, 2, 1], [1, 3, 1, 0])  # key 2 repeats at t = 2: its earlier value 1 is the answer
    roles = bijection_roles(tunnel, ep)[0]
    assert roles[2, :5].tolist() == [KEY, CONSISTENT, KEY, ELIMINATED, SELF]
    assert roles[3, :7].tolist() == [KEY, ELIMINATED, KEY, ELIMINATED, KEY, ELIMINATED, SELF]  # new key 1
    paired = Bijection(V=4, L=3, variant="paired")
    ep = episode(paired, [3, 1, 0], [2, 0, 1], query=1)  # tokens [3, 2, 1, 0, 0, 1, 1]
    roles = bijection_roles(paired, ep)[0]
    assert roles[-1].tolist() == [KEY, ELIMINATED, KEY, CONSISTENT, KEY, ELIMINATED, SELF]
    assert roles[2].tolist() == [KEY, ELIMINATED, KEY, ELIMINATED, SELF, FUTURE, FUTURE]
    with pytest.raises(ValueError, match="tunnel"):
        bijection_roles(tunnel, Bijection().sample(1, gen()))


def test_attention_mass_split_returns_a_constructed_split_exactly():
    """A pattern with 0.3 on the consistent position, 0.5 spread over the eliminated ones, 0.15 on
    keys and 0.05 on the query itself, at the paired variant's final query."""
    paired = Bijection(V=4, L=3, variant="paired")
    ep = episode(paired, [3, 1, 0], [2, 0, 1], query=1)
    roles = bijection_roles(paired, ep)  # (1, P, T)
    T = ep.inputs.shape[1]
    pattern = torch.zeros(1, 2, T, T)
    pattern[0, :, torch.arange(T), torch.arange(T)] = 1.0  # other rows: attend to self
    q = T - 1
    pattern[0, 0, q] = torch.tensor([0.05, 0.25, 0.05, 0.3, 0.05, 0.25, 0.05])
    mass = attention_mass_split(pattern, roles, ep.positions)  # (H, P, R)
    last = mass[0, -1]
    assert last[CONSISTENT].item() == pytest.approx(0.3, abs=1e-7)
    assert last[ELIMINATED].item() == pytest.approx(0.5, abs=1e-7)
    assert last[KEY].item() == pytest.approx(0.15, abs=1e-7)
    assert last[SELF].item() == pytest.approx(0.05, abs=1e-7)
    assert last[FUTURE].item() == 0
    assert mass[1, -1, SELF].item() == 1.0 and mass[0, 0, SELF].item() == 1.0
    # the evenness over the two eliminated positions (0.25 each) is 1; a single-head (B, T, T) pattern works too
    assert role_evenness(pattern, roles, ep.positions)[0, -1].item() == pytest.approx(1.0)
    assert torch.allclose(attention_mass_split(pattern[:, 0], roles, ep.positions)[0], mass[0])
    with pytest.raises(ValueError, match="roles"):
        attention_mass_split(pattern, roles[:, :2], ep.positions)
    with pytest.raises(ValueError, match="pattern"):
        attention_mass_split(torch.ones(1, 2, 3), roles, ep.positions)


def test_entropy_and_evenness_of_uniform_and_one_hot_attention():
    tunnel = Bijection()
    ep = tunnel.sample(4, gen(1))
    roles = bijection_roles(tunnel, ep)
    T = ep.inputs.shape[1]
    causal = torch.ones(T, T).tril()
    uniform = (causal / causal.sum(-1, keepdim=True)).expand(4, 3, T, T)
    ent = attention_entropy(uniform, ep.positions)
    assert torch.allclose(ent, torch.log2(ep.positions.double() + 1).expand(3, -1), atol=1e-6)
    even = role_evenness(uniform, roles, ep.positions)
    assert torch.isnan(even[:, :2]).all()  # fewer than two eliminated positions
    assert torch.allclose(even[:, 2:], torch.ones(3, 17, dtype=torch.float64), atol=1e-6)
    mass = attention_mass_split(uniform, roles, ep.positions)
    t = torch.arange(19, dtype=torch.float64)
    assert torch.allclose(mass[0, :, ELIMINATED], t / (2 * t + 1), atol=1e-6)
    one_hot = torch.zeros(4, 1, T, T)
    one_hot[..., 1] = 1.0  # everyone (from position 1 on) looks at the first value
    one_hot[..., 0, 0] = 1.0
    assert torch.allclose(attention_entropy(one_hot, ep.positions), torch.zeros(1, 19, dtype=torch.float64))
    assert torch.allclose(role_evenness(one_hot, roles, ep.positions)[0, 2:], torch.zeros(17, dtype=torch.float64))
    zero = torch.zeros(4, 1, T, T)  # an ablated head: no mass anywhere, entropy 0, evenness undefined
    assert torch.equal(attention_entropy(zero, ep.positions), torch.zeros(1, 19, dtype=torch.float64))
    assert torch.isnan(role_evenness(zero, roles, ep.positions)).all()


def test_qk_cosine():
    q = torch.randn(5, 2, 6, 4, generator=gen(3))
    cos = qk_cosine(q, q)
    assert cos.shape == (2, 6, 6)
    assert torch.allclose(torch.diagonal(cos, dim1=-2, dim2=-1), torch.ones(2, 6, dtype=torch.float64))
    assert torch.isnan(cos.triu(1)[cos.triu(1) != 0]).all() and torch.isnan(cos[:, 0, 1:]).all()
    assert torch.allclose(qk_cosine(q, -q)[:, 3, :4], -cos[:, 3, :4])
    with pytest.raises(ValueError, match="shape"):
        qk_cosine(q, q[..., :2])


def uniform_attention_model():
    """A transformer whose queries are zero: every score is 0, so attention is uniform over the
    visible positions in every layer and head."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(d_model=32, n_layers=2, n_heads=4, vocab_size=40, n_positions=38,
                                    answer_tokens=tuple(range(20, 40))))
    with torch.no_grad():
        for blk in model.backbone.blocks:
            blk.attn.q.weight.zero_()
    return model


def test_progressive_elimination_on_uniform_attention():
    model = uniform_attention_model()
    model.train()
    tunnel = Bijection()
    res = progressive_elimination(model, tunnel, episodes=40, batch_size=16)  # three batches, the last partial
    assert model.training  # restored
    assert res.mass.shape == (2, 4, 19, len(ROLES)) and res.qk_cos.shape == (2, 4, 37, 37)
    for role in ("eliminated", "key", "self"):
        assert torch.allclose(res.layer_mass(role), res.uniform_mass(role).expand(2, -1), atol=1e-6)
    assert torch.allclose(res.mass.sum(-1), torch.ones(2, 4, 19, dtype=torch.float64), atol=1e-6)
    assert torch.allclose(res.entropy, res.uniform_entropy().expand(2, 4, -1), atol=1e-5)
    assert torch.allclose(res.evenness[..., 2:], torch.ones(2, 4, 17, dtype=torch.float64), atol=1e-6)
    assert torch.isnan(res.evenness[..., :2]).all()
    assert torch.isnan(res.cos_by_role[..., FUTURE]).all() and torch.isnan(res.cos_by_role[..., CONSISTENT]).all()
    rows = res.summary()
    assert rows[0]["mass"] == pytest.approx(rows[0]["uniform_mass"], abs=1e-6)
    assert rows[1]["entropy_bits"] == pytest.approx(rows[1]["uniform_entropy_bits"], abs=1e-5)
    assert "layer 1" in format_summary(res)
    assert res.example["patterns"].shape == (2, 4, 37, 37)
    # the mass by value identity adds up to the mass on value positions
    total = (res.value_mass * res.value_counts).sum(-1)  # (n_layers, H)
    on_values = (res.mass[..., ELIMINATED] + res.mass[..., CONSISTENT]).sum(-1) * res.episodes
    assert torch.allclose(total, on_values, rtol=1e-9)
    assert res.value_counts.sum().item() == 40 * sum(range(19))  # episodes x revealed values over the queries
    with pytest.raises(ValueError, match="role"):
        res.layer_mass("hypothesis")
    mlp = build_model(ModelConfig(arch="mlp", d_model=16, n_layers=1, vocab_size=40, n_positions=38,
                                  answer_tokens=tuple(range(20, 40))))
    with pytest.raises(ValueError, match="attention"):
        progressive_elimination(mlp, tunnel, episodes=4)


def test_entropy_by_layer_of_uniform_attention_is_the_uniform_entropy():
    from bwt_lite.recipes import get_preset
    from bwt_lite.train import init_model
    from bwt_lite.tunnels import make_tunnel

    model = uniform_attention_model()
    model.train()
    entropy, uniform = entropy_by_layer(model, Bijection(), episodes=8)
    assert model.training  # restored
    # the mean over key steps of log2(visible positions): positions 0, 2, ..., 36 see 1, 3, ..., 37 tokens
    assert uniform == pytest.approx(sum(math.log2(2 * t + 1) for t in range(19)) / 19)
    assert entropy == pytest.approx([uniform, uniform], abs=1e-5)
    # any tunnel: a random HMM transformer attends less evenly than uniform, never more
    hmm = get_preset("hmm", "transformer", "lite")
    entropy, uniform = entropy_by_layer(init_model(hmm.model, 0), make_tunnel(**hmm.tunnel), episodes=4)
    assert len(entropy) == hmm.model.n_layers and all(0 < e <= uniform + 1e-9 for e in entropy)
    mlp = build_model(ModelConfig(arch="mlp", d_model=16, n_layers=1, vocab_size=40, n_positions=38,
                                  answer_tokens=tuple(range(20, 40))))
    with pytest.raises(ValueError, match="attention"):
        entropy_by_layer(mlp, Bijection(), episodes=4)


def test_elimination_plots_and_widget():
    model = uniform_attention_model()
    res = progressive_elimination(model, Bijection(), episodes=8)
    assert isinstance(plot_role_mass(res, reference=res), Figure)
    assert isinstance(plot_attention_entropy(res, reference=res), Figure)
    assert isinstance(plot_qk_cosine(res), Figure) and isinstance(plot_qk_cosine(res, head=1), Figure)
    assert isinstance(plot_attention_row(res, 5, 1, head=2), Figure)
    assert isinstance(plot_value_mass(res), Figure)
    with pytest.raises(ValueError, match="step"):
        plot_attention_row(res, 30, 0)
    w = elimination_scrub_widget(res)
    assert isinstance(w, ipywidgets.interactive)
    w.children[0].value = 10
    w.children[2].value = 1
    assert math.isfinite(res.summary()[0]["evenness"])
