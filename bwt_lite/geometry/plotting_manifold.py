"""The figures and widgets of chapters 9 and 10 at their former path: they live in
:mod:`bwt_lite.plotting.manifold`. Kept for notebooks that still import
``bwt_lite.geometry.plotting_manifold``."""
from ..plotting.manifold import (STATE_COLORS, plot_value_manifold, plot_manifold_comparison, plot_probe_r2,
                                 plot_dissociation, plot_snapshot, dissociation_widget, plot_belief_simplex,
                                 plot_simplex_by_layer, simplex_widget)
