"""Every figure and widget of the chapters, one module per chapter family; they draw results and compute
no science.

:mod:`.style`: the colours every chapter shares. :mod:`.bayes`: chapters 1-2 (the bijection's posterior, a
transformer learning it); :mod:`.hmm`: chapter 3; :mod:`.recall`: chapter 4; :mod:`.regression`: chapter 5;
:mod:`.primitives`: chapter 6; :mod:`.attention`: chapters 7-8 (hypothesis frame, ablation, elimination);
:mod:`.manifold`: chapters 9-10 (value manifold, probes, dissociation, belief simplex); :mod:`.dynamics`:
chapter 11; :mod:`.llm`: chapter 12; :mod:`.boundary`: chapter 13. Each function's docstring ends with the
chapters that use it.

The figures and widgets of chapters 1-6 and 11 are also names of this package (``from bwt_lite import
plotting as plots``, then ``plots.plot_hmm_posteriors(...)``); chapters 7-10, 12 and 13 import their module
(``from bwt_lite.plotting import manifold as gplots``), whose names would otherwise collide.
"""
from .bayes import (plot_posterior_bars, plot_entropy_staircase, plot_posterior_heatmap, plot_elimination_step,
                    plot_entropy_calibration, plot_prediction_vs_posterior, plot_learning_curves, elimination_widget,
                    prediction_widget)
from .hmm import (plot_hmm_posteriors, plot_position_errors, plot_hmm_step, hmm_filter_widget)
from .recall import (RECALL_COLOR, NEW_KEY_COLOR, VALUE_COLOR, plot_recall_tokens, plot_recall_episode,
                     plot_recall_fraction, plot_recall_breakdown, plot_recall_step, recall_widget, plot_capacity,
                     plot_capacity_curves)
from .regression import (plot_gaussian_errors_by_position, plot_variance_by_position, plot_predicted_vs_exact,
                         plot_standardised_residuals, plot_gaussian_predictive, plot_regression_step, regression_widget)
from .primitives import (plot_primitives_entropy, plot_accuracy_by_pairs, primitives_widget, plot_window_ladder,
                         plot_seed_curves)
from .dynamics import (PULLED_COLOR, PUSHED_COLOR, plot_routing_step, plot_speedup, plot_frame_vs_precision,
                       routing_widget)
from .style import (BAYES_COLOR, FORMULA_COLOR, ELIMINATED_COLOR, MARGINAL_COLOR, as_numpy)
