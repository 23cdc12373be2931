"""What each architecture is at each scale: its size (:data:`ARCH_SIZES`, and :data:`HOW_MATCHED`, how that
size was chosen) and its training recipe (:data:`TRAIN`); the helper that spreads a budget of episodes over a
recipe's batches (:func:`equal_budget`), and the training of the lite models at the paper's depth. A new
architecture adds its rows here.

A tunnel's and a variant's own recipes, built on these, are in :mod:`bwt_lite.recipes.tunnel_train`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..train_config import TrainConfig

# Backbone sizes. Paper: Paper I's production transformer (2,677,440 parameters on the bijection) and an MLP
# control of matched size (9 blocks). Lite: 2 layers of d = 128; the MLP has 1.5x the blocks (2/3 the weights each).
ARCH_SIZES: dict[tuple[str, str], dict[str, int]] = {
    ("transformer", "paper"): {"d_model": 192, "n_layers": 6, "n_heads": 6},
    ("mlp", "paper"): {"d_model": 192, "n_layers": 9, "n_heads": 6},
    ("transformer", "lite"): {"d_model": 128, "n_layers": 2, "n_heads": 8},
    ("mlp", "lite"): {"d_model": 128, "n_layers": 3, "n_heads": 8},
    # LSTM: Paper I's 6 layers of 192 (its "about 1.8M", not matched); lite: 3 of 128, matched (+0.3 %).
    ("lstm", "paper"): {"d_model": 192, "n_layers": 6},
    ("lstm", "lite"): {"d_model": 128, "n_layers": 3},
    # Mamba: the transformer's width with the block count nearest its parameters (11 blocks, +4.0 %); lite:
    # 2 wide blocks (-0.3 %), since few blocks keep the (batch, T, 2d, 16) state, Mamba's CPU cost, smallest.
    ("mamba", "paper"): {"d_model": 192, "n_layers": 11},
    ("mamba", "lite"): {"d_model": 168, "n_layers": 2},
}
# How each architecture's size was chosen, in words (the capacity table prints it beside the sizes above).
HOW_MATCHED: dict[tuple[str, str], str] = {
    ("transformer", "paper"): "reference: Paper I's production model (HMM: the paper's 9 layers, 8 heads, d=256)",
    ("transformer", "lite"): "reference: this tunnel's lite transformer",
    ("mlp", "paper"): "same embeddings and head, 1.5x the transformer's layers (a block is 2/3 of one)",
    ("mlp", "lite"): "same embeddings and head, 1.5x the transformer's layers (a block is 2/3 of one)",
    ("lstm", "paper"): "not matched: the paper's 6 layers of width 192 ('about 1.8M')",
    ("lstm", "lite"): "width and depth within 10 % of the tunnel's lite transformer",
    ("mamba", "paper"): "transformer's width; 11 blocks, the count nearest its 2,677,440",
    ("mamba", "lite"): "2 wide blocks within 10 % of the tunnel's lite transformer",
}

# Training recipes. Paper: Paper I's production run (AdamW 3e-4, wd 0.1, warmup 2k, cosine to 0, clip 1.0,
# batch 256, 50k steps). Lite: minutes on a CPU; weight decay 0.01, since a larger one holds the entropy MAE
# at a floor where it balances the gradient that removes leaked probability (chapter 2; lab notes, "Bijection recipe").
PAPER_TRAIN = TrainConfig(steps=50_000, batch_size=256, lr=3e-4, warmup_steps=2_000, eval_every=1_000)
TRANSFORMER_LITE = TrainConfig(steps=10_000, batch_size=64, lr=2e-3, weight_decay=0.01, warmup_steps=200,
                               eval_every=500)
# 300 steps: the MLP control cannot mix positions, so it is done learning early (lab notes, "MLP controls")
MLP_LITE = TrainConfig(steps=300, batch_size=64, lr=1e-3, weight_decay=0.01, warmup_steps=100, eval_every=50)
# Lite LSTM and Mamba: smaller batches, since their steps cost more on a CPU, and a learning-rate floor.
LSTM_LITE = TrainConfig(steps=4_000, batch_size=32, lr=2e-3, weight_decay=0.01, warmup_steps=200, min_lr_ratio=0.1,
                        eval_every=250)
MAMBA_LITE = TrainConfig(steps=3_000, batch_size=16, lr=2e-3, weight_decay=0.01, warmup_steps=200,
                         min_lr_ratio=0.1, eval_every=250)

# The default recipe of each (arch, scale): every architecture trains on Paper I's run at the paper scale.
TRAIN: dict[tuple[str, str], TrainConfig] = {
    ("transformer", "paper"): PAPER_TRAIN,
    ("mlp", "paper"): PAPER_TRAIN,
    ("lstm", "paper"): PAPER_TRAIN,
    ("mamba", "paper"): PAPER_TRAIN,
    ("transformer", "lite"): TRANSFORMER_LITE,
    ("mlp", "lite"): MLP_LITE,
    ("lstm", "lite"): LSTM_LITE,
    ("mamba", "lite"): MAMBA_LITE,
}


def equal_budget(recipe: TrainConfig, episodes: int, evaluations: int = 20) -> TrainConfig:
    """``recipe`` trained on ``episodes`` episodes (its steps scaled to its batch), with ``evaluations``
    held-out evaluations in the run."""
    steps = episodes // recipe.batch_size
    return replace(recipe, steps=steps, eval_every=steps // evaluations)


# Training fields of the lite models at the paper's depth (model_recipes.PAPER_DEPTH_SIZES) that differ from
# their tunnel's lite recipe. The 9-layer HMM model stays on the 1-symbol plateau for the whole 10,000 steps
# of the 4-layer model's recipe; on 25,000 (the same schedule spread over 800,000 episodes; 36 min on 2 threads)
# it can leave it, as the shipped run did, though most runs stay (lab notes, "Lite models at the paper's depth").
PAPER_DEPTH_TRAIN: dict[tuple[str, str], dict[str, Any]] = {
    ("hmm", "transformer"): {"steps": 25_000},
}

__all__ = ["ARCH_SIZES", "HOW_MATCHED", "LSTM_LITE", "MAMBA_LITE", "MLP_LITE", "PAPER_DEPTH_TRAIN", "PAPER_TRAIN", "TRAIN", "TRANSFORMER_LITE",
           "equal_budget"]
