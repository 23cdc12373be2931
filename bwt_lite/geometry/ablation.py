"""Head and layer ablation (Paper I, geometric diagnostics): which heads and blocks does the Bayesian answer need?

- **Head ablation** zero-ablates one attention head at a time through the transformer's head mask
  (its attention weights, hence its output ``z``, become zero; the rest of the model is untouched)
  and re-measures the entropy MAE and KL on held-out episodes. The *frame head* of a layer is the
  head whose removal raises the entropy MAE most.
- **Layer ablation** bypasses one block at a time (the residual stream passes through it
  unchanged) and reports the *error ratio*: ablated entropy MAE / intact entropy MAE (and the same
  for the KL). Paper I claims every single layer's removal raises the error more than tenfold.

Every ablation goes through :func:`bwt_lite.models.ablate_heads` / :func:`bypass_layers`, which
restore the mask and the bypass set on exit, also after an error; the functions here additionally
check on the way out that the model is back as it was.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import torch
from torch import nn

from ..arguments import check_int
from ..evaluate import EvalResult, evaluate
from ..models import ablate_heads, bypass_layers
from ..tunnels import Tunnel


@dataclass
class HeadAblation:
    """Entropy MAE and KL with each head zero-ablated (NaN where a head was not ablated)."""

    baseline_mae: float  # intact model, bits
    baseline_kl: float
    mae: torch.Tensor  # (n_layers, n_heads) entropy MAE with that head removed, bits
    kl: torch.Tensor  # (n_layers, n_heads) KL(Bayes || model) with that head removed, bits
    layers: list[int]  # the layers whose heads were ablated
    episodes: int
    per_position: dict[tuple[int, int], list[float]] = field(default_factory=dict, repr=False)  # MAE curve per head

    def frame_head(self, layer: int = 0) -> int:
        """The head of ``layer`` whose removal raises the entropy MAE most."""
        if layer not in self.layers:
            raise ValueError(f"layer {layer} was not ablated; ablated layers: {self.layers}")
        return int(torch.argmax(self.mae[layer]).item())

    def ratio(self) -> torch.Tensor:
        """Ablated MAE / intact MAE per head (NaN where not ablated)."""
        return self.mae / self.baseline_mae


@dataclass
class LayerAblation:
    """Entropy MAE and KL with each block bypassed, and their ratios to the intact model."""

    baseline_mae: float
    baseline_kl: float
    mae: list[float]  # per bypassed block, bits
    kl: list[float]
    episodes: int
    per_position: list[list[float]] = field(default_factory=list, repr=False)  # MAE curve per bypassed block
    baseline_per_position: list[float] = field(default_factory=list, repr=False)  # MAE curve of the intact model

    @property
    def error_ratio(self) -> list[float]:
        """Ablated entropy MAE / intact entropy MAE, per block (the paper's "> 10x" claim)."""
        return [m / self.baseline_mae for m in self.mae]

    @property
    def kl_ratio(self) -> list[float]:
        return [k / self.baseline_kl for k in self.kl]


def _state(model: nn.Module) -> tuple[torch.Tensor | None, set[int] | None]:
    mask = getattr(model.backbone, "head_mask", None)
    bypass = getattr(model.backbone, "bypass", None)
    return (None if mask is None else mask.clone()), (None if bypass is None else set(bypass))


def _check_restored(model: nn.Module, saved: tuple[torch.Tensor | None, set[int] | None]) -> None:
    mask, bypass = _state(model)
    if (saved[0] is not None and not torch.equal(mask, saved[0])) or bypass != saved[1]:
        raise RuntimeError("the model's head mask or bypass set was not restored after an ablation")


def _score(model: nn.Module, tunnel: Tunnel, episodes: int, seed: int) -> EvalResult:
    return evaluate(model, tunnel, episodes=episodes, seed=seed)


def head_ablation(model: nn.Module, tunnel: Tunnel, *, layers: Iterable[int] | None = (0,), episodes: int = 512,
                  seed: int = 0) -> HeadAblation:
    """Zero-ablate each head of ``layers`` (all layers when None) in turn, on the same held-out episodes."""
    mask = getattr(model.backbone, "head_mask", None)
    if mask is None:
        raise ValueError(f"architecture {model.cfg.arch!r} has no attention heads to ablate")
    check_int("episodes", episodes, 1)
    n_layers, n_heads = mask.shape
    layers = list(range(n_layers)) if layers is None else sorted({int(i) for i in layers})
    bad = [i for i in layers if not 0 <= i < n_layers]
    if bad:
        raise ValueError(f"layers {bad} out of range 0..{n_layers - 1}")
    saved = _state(model)
    base = _score(model, tunnel, episodes, seed)
    mae = torch.full((n_layers, n_heads), float("nan"), dtype=torch.float64)
    kl = mae.clone()
    curves: dict[tuple[int, int], list[float]] = {}
    for layer in layers:
        for head in range(n_heads):
            with ablate_heads(model, [(layer, head)]):
                res = _score(model, tunnel, episodes, seed)
            mae[layer, head], kl[layer, head] = res.entropy_mae_bits, res.kl_bits
            curves[(layer, head)] = res.per_position["entropy_mae"]
    _check_restored(model, saved)
    return HeadAblation(base.entropy_mae_bits, base.kl_bits, mae, kl, layers, episodes, curves)


def layer_ablation(model: nn.Module, tunnel: Tunnel, *, episodes: int = 512, seed: int = 0) -> LayerAblation:
    """Bypass each block in turn, on the same held-out episodes; ratios to the intact model."""
    check_int("episodes", episodes, 1)
    blocks = getattr(model.backbone, "blocks", None)
    if blocks is None:
        raise ValueError(f"architecture {model.cfg.arch!r} has no blocks to bypass")
    saved = _state(model)
    base = _score(model, tunnel, episodes, seed)
    mae, kl, curves = [], [], []
    for i in range(len(blocks)):
        with bypass_layers(model, [i]):
            res = _score(model, tunnel, episodes, seed)
        mae.append(res.entropy_mae_bits)
        kl.append(res.kl_bits)
        curves.append(res.per_position["entropy_mae"])
    _check_restored(model, saved)
    return LayerAblation(base.entropy_mae_bits, base.kl_bits, mae, kl, episodes, curves,
                         base.per_position["entropy_mae"])


def format_head_ablation(result: HeadAblation) -> str:
    """A table: one row per ablated layer, the entropy MAE (bits) with each head removed."""
    n_heads = result.mae.shape[1]
    lines = [f"intact: entropy MAE {result.baseline_mae:.4f} bits, KL {result.baseline_kl:.4f} bits "
             f"({result.episodes} held-out episodes)",
             "layer " + " ".join(f"{'head ' + str(h):>9s}" for h in range(n_heads))]
    for layer in result.layers:
        lines.append(f"{layer:5d} " + " ".join(f"{v:9.4f}" for v in result.mae[layer].tolist()))
    return "\n".join(lines)


def format_layer_ablation(result: LayerAblation, paper_ratio: float | None = None) -> str:
    """One line per bypassed block: MAE, KL and the ratios to the intact model."""
    lines = [f"intact: entropy MAE {result.baseline_mae:.4f} bits, KL {result.baseline_kl:.4f} bits"]
    for i, (m, k, r, kr) in enumerate(zip(result.mae, result.kl, result.error_ratio, result.kl_ratio)):
        tail = "" if paper_ratio is None else f"  ({'>' if r > paper_ratio else '<='} {paper_ratio:g}x)"
        lines.append(f"bypass block {i}: entropy MAE {m:.4f} bits (x{r:.1f}), KL {k:.4f} bits (x{kr:.1f}){tail}")
    return "\n".join(lines)

