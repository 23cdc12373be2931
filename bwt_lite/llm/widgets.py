"""ipywidgets control for the language-model chapter: the last token's attention, layer by layer.

Like the controls of :mod:`bwt_lite.widgets`, it carries a static view of its current setting after
``setup_notebook`` (:func:`bwt_lite.display.static_view`), which the book shows."""
from __future__ import annotations

import ipywidgets
import matplotlib.pyplot as plt

from .diagnostics import final_query_entropy
from .plots import plot_final_attention
from .probe import Probe


def attention_widget(p: Probe, tokens: list[str], layer: int = 0) -> ipywidgets.interactive:
    """A slider over layers showing where the last token of a probed prompt attends (mean over heads) and
    the mean entropy of its heads' attention. ``tokens``: the prompt's tokens, one per position."""
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
