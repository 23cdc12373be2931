"""Geometric diagnostics of trained wind-tunnel models (Paper I's geometric analysis; Paper III for language models), one module per family.

Each diagnostic is a function returning numbers (a dataclass or dict); the plots and widgets are in
:mod:`bwt_lite.plotting.attention` (frame, ablation, elimination) and :mod:`bwt_lite.plotting.manifold`
(manifold, probes, dissociation, simplex). Activations are read through the models' hook points with
:func:`bwt_lite.models.run_with_cache`.

- :mod:`.frame`: layer-0 key orthogonality under every definition, beside random init and chance.
- :mod:`.ablation`: zero-ablation of heads through the head mask; bypassing one block at a time.
- :mod:`.elimination`: attention mass on consistent vs eliminated keys, entropy and QK cosines by layer.
- :mod:`.manifold`: PCA of the final representation, PC1 against the Bayes entropy, held-out R^2.
- :mod:`.probes`: linear (ridge) probes from every layer to the exact posterior.
- :mod:`.trajectory`: training snapshots of one run, stored and verified like a checkpoint.
- :mod:`.dissociation`: frame stability against precision over those snapshots.
- :mod:`.simplex`: the belief simplex on the HMM (silhouette, entropy and posterior R^2).
"""
from .ablation import head_ablation, layer_ablation
from .dissociation import frame_precision
from .elimination import progressive_elimination
from .frame import frame_table, key_orthogonality
from .manifold import value_manifold
from .probes import probe_layers
from .simplex import belief_simplex, silhouette, simplex_by_layer
from .trajectory import load_trajectory, train_trajectory

__all__ = ["belief_simplex", "frame_precision", "frame_table", "head_ablation", "key_orthogonality",
           "layer_ablation", "load_trajectory", "probe_layers", "progressive_elimination", "silhouette",
           "simplex_by_layer", "train_trajectory", "value_manifold"]
