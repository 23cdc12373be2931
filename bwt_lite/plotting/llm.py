"""Chapter 12: figures of the pretrained language models and the attention widget (the last token's
attention, layer by layer). They draw numbers computed elsewhere and compute no science.
"""
from __future__ import annotations

import textwrap

import ipywidgets
import matplotlib.pyplot as plt
import torch

from ..llm.diagnostics import final_query_entropy
from ..llm.probe import Probe
from .style import finish, panels


def plot_layer_profiles(orth: dict[str, torch.Tensor], analytic: float, focusing: dict[str, torch.Tensor],
                        max_bits: float, paper_range: tuple[float, float] | None = None,
                        authors_probe: float | None = None, title: str = ""):
    """Left: key orthogonality (mean |cos|) per layer for each model, the analytic random baseline, the
    paper's range and the authors' embedding-only probe. Right: final-query attention entropy per layer.

    Used in chapter 12.
    """
    fig, (a, b) = panels(2, height=3.8)
    for name, v in orth.items():
        a.plot(range(len(v)), v.tolist(), marker="o", label=name)
    a.axhline(analytic, color="k", ls="--", lw=1, label="random Gaussian sqrt(2/(pi d_head))")
    if paper_range is not None:
        a.axhspan(*paper_range, color="tab:green", alpha=0.15, label="Paper III, Pythia-410M")
    if authors_probe is not None:
        a.axhline(authors_probe, color="tab:red", ls=":", lw=1.5, label="authors' probe (raw embeddings)")
    a.set_xlabel("layer")
    a.set_ylabel("mean |cos| between keys")
    a.set_title("key orthogonality")
    a.legend(fontsize=7)
    for name, v in focusing.items():
        b.plot(range(len(v)), v.tolist(), marker="o", label=name)
    b.axhline(max_bits, color="k", ls="--", lw=1, label="uniform attention")
    b.set_xlabel("layer")
    b.set_ylabel("entropy of the last token's attention (bits)")
    b.set_title("dynamic focusing")
    b.legend(fontsize=7)
    return finish(fig, title)


def plot_value_manifold(summaries: dict, labels: dict[str, list[str]] | None = None, title: str = ""):
    """Left: PC1 and PC1+PC2 variance fractions with bootstrap intervals per prompt set. Right: the prompts
    of each set on their own PC1-PC2 plane (colored by domain when ``labels`` gives one per prompt).

    Used in chapter 12.
    """
    fig, axes = panels(1 + len(summaries), height=3.6)
    a = axes[0]
    names = list(summaries)
    for j, (key, lab) in enumerate((("pc1", "PC1"), ("pc12", "PC1+PC2"))):
        vals = [getattr(summaries[n], key) for n in names]
        err = None
        if all(summaries[n].ci for n in names):
            err = [[v - summaries[n].ci[key][0] for v, n in zip(vals, names)],
                   [summaries[n].ci[key][1] - v for v, n in zip(vals, names)]]
        a.bar([i + 0.38 * j for i in range(len(names))], vals, 0.36, yerr=err, capsize=3, label=lab)
    a.set_xticks([i + 0.19 for i in range(len(names))], [textwrap.fill(n, 12) for n in names], fontsize=8)
    a.set_ylim(0, 1)
    a.set_ylabel("fraction of variance")
    a.legend(fontsize=8)
    for ax, n in zip(axes[1:], names):
        sc = summaries[n].scores
        lab = (labels or {}).get(n)
        if lab:
            for d in dict.fromkeys(lab):
                sel = torch.tensor([x == d for x in lab])
                ax.scatter(sc[sel, 0], sc[sel, 1], s=12, label=d)
            ax.legend(fontsize=6)
        else:
            ax.scatter(sc[:, 0], sc[:, 1], s=12)
        ax.set_title(n, fontsize=9)
        ax.set_xlabel("PC1")
        ax.set_ylabel("PC2")
    return finish(fig, title)


def plot_sula(h_bayes: torch.Tensor, h_model: torch.Tensor, k: torch.Tensor, pc1: torch.Tensor, title: str = ""):
    """Left: the model's entropy against the Bayes entropy, one dot per prompt, colored by k. Right: PC1 of
    the last-token state against the Bayes entropy.

    Used in chapter 12.
    """
    fig, (a, b) = panels(2, height=3.8)
    for kv in sorted(set(k.tolist())):
        s = k == kv
        a.scatter(h_bayes[s], h_model[s], s=14, alpha=0.7, label=f"k = {kv}")
        b.scatter(h_bayes[s], pc1[s], s=14, alpha=0.7, label=f"k = {kv}")
    a.plot([0, 1], [0, 1], "k--", lw=1, label="model = Bayes")
    a.set_xlabel("Bayes entropy of the hidden label (bits)")
    a.set_ylabel("model entropy over the two labels (bits)")
    a.legend(fontsize=7)
    b.set_xlabel("Bayes entropy (bits)")
    b.set_ylabel("PC1 of the last-token state")
    return finish(fig, title)


def plot_intervention(alphas: list[float], axis_h: list[float], random_h: list[float], base_h: float, title: str = ""):
    """Mean model entropy (bits) when the last-token state is shifted along the entropy axis vs a random direction.

    Used in chapter 12.
    """
    fig, ax = panels(1, width=5.5, height=3.6)
    ax.plot(alphas, axis_h, marker="o", label="along the entropy axis")
    ax.plot(alphas, random_h, marker="s", label="along a random direction")
    ax.axhline(base_h, color="k", ls="--", lw=1, label="no intervention")
    ax.set_xlabel("shift (standard deviations of the projection)")
    ax.set_ylabel("mean model entropy (bits)")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_final_attention(attention: torch.Tensor, tokens: list[str], layer: int, entropy: float):
    """The last token's attention over the prompt (mean over heads) at one layer. Used in chapter 12."""
    fig, ax = panels(1, height=2.8)
    ax.bar(range(len(tokens)), attention.tolist())
    ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=7)
    ax.set_ylabel("attention")
    ax.set_title(f"layer {layer}: the last token's attention (mean over heads), entropy {entropy:.2f} bits", fontsize=9)
    fig.tight_layout()
    return fig


def attention_widget(p: Probe, tokens: list[str], layer: int = 0) -> ipywidgets.interactive:
    """A slider over layers showing where the last token of a probed prompt attends (mean over heads) and
    the mean entropy of its heads' attention. ``tokens``: the prompt's tokens, one per position.

    Used in chapter 12.
    """
    if len(tokens) != p.input_ids.numel():
        raise ValueError(f"tokens must have one entry per position ({p.input_ids.numel()}), got {len(tokens)}")
    if not 0 <= layer < p.n_layers:
        raise ValueError(f"layer must be in 0..{p.n_layers - 1}, got {layer}")
    ent = final_query_entropy(p).mean(1)

    def show(layer: int = layer):
        plot_final_attention(p.attention[layer, :, -1].mean(0), tokens, layer, ent[layer].item())
        plt.show()

    return ipywidgets.interactive(show, layer=ipywidgets.IntSlider(value=layer, min=0, max=p.n_layers - 1,
                                                                   description="layer"))
