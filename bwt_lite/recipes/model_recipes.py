"""Model recipes: a tunnel's or variant's own sizes and options over each architecture's
(:mod:`bwt_lite.recipes.architectures`), and the lite models at the paper's depth. Keys are ``(arch, scale)``, ``(tunnel, arch, scale)`` or
``(tunnel, variant, arch, scale)``; :func:`bwt_lite.recipes.get_preset` takes the most specific row."""
from __future__ import annotations

from typing import Any

# Per-tunnel sizes where a tunnel's model differs from the defaults above.
TUNNEL_ARCH_SIZES: dict[tuple[str, str, str], dict[str, int]] = {
    ("hmm", "transformer", "paper"): {"d_model": 256, "n_layers": 9, "n_heads": 8},  # the paper's text
    # 2 heads of 32: as many weights as 4 of 16 but cheaper per step on a CPU (lab notes, "HMM recipe")
    ("hmm", "transformer", "lite"): {"d_model": 64, "n_layers": 4, "n_heads": 2},
    # matched to the HMM's smaller lite transformer (215,301): MLP +0.4 %, LSTM -1.9 %, Mamba -1.9 %
    ("hmm", "mlp", "lite"): {"d_model": 64, "n_layers": 6},
    ("hmm", "lstm", "lite"): {"d_model": 88, "n_layers": 3},
    ("hmm", "mamba", "lite"): {"d_model": 112, "n_layers": 2},
    ("regression", "transformer", "lite"): {"d_model": 96, "n_layers": 3, "n_heads": 6},
    # matched to that smaller lite transformer (336,770): MLP +4.6 %, LSTM +4.6 %, Mamba -2.6 %
    ("regression", "mlp", "lite"): {"d_model": 104, "n_layers": 4},
    ("regression", "lstm", "lite"): {"d_model": 120, "n_layers": 3},
    ("regression", "mamba", "lite"): {"d_model": 152, "n_layers": 2},
    # the recurrence: 4 layers of 128 (4 heads of 32); the paper's construction-boundary model is 6 x 192
    ("recurrence", "transformer", "lite"): {"d_model": 128, "n_layers": 4, "n_heads": 4},
    # matched to it (794,624): MLP +0.2 %, LSTM -0.8 %, Mamba +0.2 %
    ("recurrence", "mlp", "lite"): {"d_model": 128, "n_layers": 6},
    ("recurrence", "lstm", "lite"): {"d_model": 180, "n_layers": 3},
    ("recurrence", "mamba", "lite"): {"d_model": 242, "n_layers": 2},
}

# Model options of a tunnel's recipe, over the architecture's defaults: (tunnel, arch, scale) -> fields.
# Recall: ALiBi's recency bias on the learned position table. Retrieval needs a head that reads the token
# before each value (which key it belongs to); with the table alone that head has to be learned first, and
# within the lite budget it formed on 1 of 5 seeds. The bias gives layer 0 heads that favour the previous
# token from the start (chapter 4; lab notes, "Recall recipe"). The paper-scale model keeps the table alone.
TUNNEL_MODEL: dict[tuple[str, str, str], dict[str, Any]] = {
    ("recall", "transformer", "lite"): {"alibi": True},
}
# Model options of a variant's recipe, over the tunnel's: (tunnel, variant, arch, scale) -> fields (``alibi``,
# or the sizes ``d_model``, ``n_layers``, ``n_heads``; the default depth only). The slow-mixing HMM's lite
# transformer: ALiBi's recency bias on the learned table, with which more of its training runs leave the
# uniform belief than with the table alone (chapter 6, section 6.4).
VARIANT_MODEL: dict[tuple[str, str, str, str], dict[str, Any]] = {
    ("hmm", "slow", "transformer", "lite"): {"alibi": True},
}

# Lite models at the paper's depth (``depth="paper"``: 6 and 9 layers), narrow enough for a CPU, for chapters 7-9's
# per-layer geometry; d_head stays that of the default lite models (16 and 32). Their training: PAPER_DEPTH_TRAIN.
DEPTHS = ("default", "paper")
PAPER_DEPTH_SIZES: dict[tuple[str, str], dict[str, int]] = {
    ("bijection", "transformer"): {"d_model": 96, "n_layers": 6, "n_heads": 6},
    ("hmm", "transformer"): {"d_model": 64, "n_layers": 9, "n_heads": 2},
}

__all__ = ["DEPTHS", "PAPER_DEPTH_SIZES", "TUNNEL_ARCH_SIZES", "TUNNEL_MODEL",
           "VARIANT_MODEL"]
