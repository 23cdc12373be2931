"""Checkers for chapter 6 (three primitives, four architectures).

Each checker runs the student's function on several inputs, compares the result with the package's
own answer (parameter counts of models built on the meta device; the context-blind plateau of the
bijection from its exact posterior), prints one line and returns a bool. A wrong answer never raises.

- :func:`check_lstm_params`: ``fn(d, n_layers)``, the parameters of an LSTM backbone.
- :func:`check_blind_plateau`: ``fn(V)``, the entropy MAE of the cross-entropy-optimal prediction that
  ignores the context (the uniform marginal).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from ..metrics import entropy_bits
from ..models import ModelConfig, build_model
from ..tunnels import make_tunnel
from . import call, report

_LSTM_CASES = [(1, 1), (8, 1), (64, 3), (88, 3), (128, 3), (192, 6)]
_PLATEAU_CASES = [2, 3, 5, 10, 20, 50]  # V; L = V - 1 key positions


def _int(got: Any, what: str) -> tuple[int | None, str | None]:
    if got is None:
        return None, f"your function returned None; return {what}."
    try:
        x = float(got)
    except Exception:
        return None, f"could not read your answer ({type(got).__name__}) as a number; return {what}."
    if math.isnan(x) or x != int(x):
        return None, f"a parameter count is a whole number, you give {x}."
    return int(x), None


def lstm_backbone_params(d: int, n_layers: int) -> int:
    """Parameters of the LSTM backbone of width ``d`` and depth ``n_layers``, counted on a model built
    on the meta device (no weights allocated): the reference for :func:`check_lstm_params`."""
    cfg = ModelConfig(arch="lstm", d_model=d, n_layers=n_layers, vocab_size=2, n_positions=1, n_outputs=1)
    with torch.device("meta"):
        model = build_model(cfg)
    return sum(p.numel() for p in model.backbone.parameters())


def check_lstm_params(fn: Callable[[int, int], Any]) -> bool:
    """``fn(d, n_layers)`` returns the number of parameters in ``n_layers`` stacked LSTM layers of width
    ``d`` (input and hidden size ``d``, PyTorch's ``nn.LSTM`` with both biases), embeddings and head
    excluded."""
    for d, n in _LSTM_CASES:
        got, err = call(fn, d, n)
        if err:
            return report(False, err)
        got, err = _int(got, "the parameter count as an int")
        if err:
            return report(False, err)
        want = lstm_backbone_params(d, n)
        if got == want:
            continue
        where = f"for d = {d}, {n} layer(s): expected {want:,}, you give {got:,}."
        if got == n * (8 * d * d + 4 * d):
            return report(False, f"{where} PyTorch's LSTM keeps two bias vectors per gate set (b_ih and b_hh).")
        if got == n * (2 * d * d + 2 * d) or got == n * (2 * d * d + d):
            return report(False, f"{where} there are four gates (input, forget, cell, output), each with its own "
                                  "weights.")
        if got == 8 * d * d + 8 * d:
            return report(False, f"{where} that is one layer; multiply by the number of layers.")
        if got == n * 8 * d * d:
            return report(False, f"{where} you left out the biases.")
        return report(False, f"{where} Each of the four gates maps the input (d) and the previous hidden state "
                              "(d) to d outputs, plus biases.")
    d = 128
    transformer = 12 * d * d
    return report(True, f"{lstm_backbone_params(d, 1):,} parameters per layer at d = {d}, "
                        f"about 8d\u00b2 (a transformer block has about 12d\u00b2 = {transformer:,}).")


def blind_plateau(V: int) -> float:
    """Entropy MAE (bits) of the uniform prediction on the bijection with V values and its default
    L = V - 1 positions, from the tunnel's exact posterior: the reference for :func:`check_blind_plateau`."""
    t = make_tunnel("bijection", V=V, L=V - 1)
    ep = t.sample(1, torch.Generator().manual_seed(0))
    h_bayes = entropy_bits(ep.probs[0])  # log2(V - t) at position t, the same in every episode
    return (math.log2(V) - h_bayes).mean().item()


def check_blind_plateau(fn: Callable[[int], Any]) -> bool:
    """``fn(V)`` returns the entropy MAE (bits, averaged over the V - 1 key positions t = 0 .. V-2 of a
    bijection episode) of the prediction a context-blind model learns under the cross-entropy loss: the
    marginal of the answer, uniform over the V values."""
    for V in _PLATEAU_CASES:
        got, err = call(fn, V)
        if err:
            return report(False, err)
        try:
            x = float(got)
        except Exception:
            return report(False, f"return the entropy MAE in bits as a float, got {got!r}.")
        want = blind_plateau(V)
        if math.isclose(x, want, rel_tol=1e-6, abs_tol=1e-9):
            continue
        where = f"for V = {V}: expected {want:.6f} bits, you give {x:.6f}."
        if math.isclose(x, want * math.log(2), rel_tol=1e-6):
            return report(False, f"{where} That is in nats; use log base 2.")
        if math.isclose(x, math.log2(V), rel_tol=1e-6):
            return report(False, f"{where} Subtract the Bayes entropy, log2(V - t) at position t, before averaging.")
        if math.isclose(x, sum(math.log2(V / (V - t)) for t in range(V)) / V, rel_tol=1e-6):
            return report(False, f"{where} An episode has V - 1 key positions, t = 0 .. V-2 (the last value "
                                  "would be implied); average over those.")
        return report(False, f"{where} At position t, Bayes is uniform over the V - t values not yet used.")
    return report(True, f"the context-blind plateau is {blind_plateau(20):.4f} bits at V = 20: where a model "
                        "that cannot read the context settles under the cross-entropy loss.")
