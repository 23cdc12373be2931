"""The figures of chapters 1-6 and 11 and the shared colours, at their former path: they live in
:mod:`bwt_lite.plotting` (one module per chapter family). Kept for notebooks that still import
``bwt_lite.plots``."""
from .plotting.bayes import (plot_posterior_bars, plot_entropy_staircase, plot_posterior_heatmap,
                                     plot_elimination_step, plot_entropy_calibration, plot_prediction_vs_posterior,
                                     plot_learning_curves)
from .plotting.hmm import (plot_hmm_posteriors, plot_position_errors, plot_hmm_step)
from .plotting.recall import (RECALL_COLOR, NEW_KEY_COLOR, VALUE_COLOR, plot_recall_tokens, plot_recall_episode,
                                      plot_recall_fraction, plot_recall_breakdown, plot_recall_step)
from .plotting.regression import (plot_gaussian_errors_by_position, plot_variance_by_position,
                                          plot_predicted_vs_exact, plot_standardised_residuals,
                                          plot_gaussian_predictive, plot_regression_step)
from .plotting.primitives import (plot_primitives_entropy, plot_accuracy_by_pairs)
from .plotting.dynamics import (PULLED_COLOR, PUSHED_COLOR, plot_routing_step, plot_speedup,
                                        plot_frame_vs_precision)
from .plotting.style import (BAYES_COLOR, FORMULA_COLOR, ELIMINATED_COLOR, MARGINAL_COLOR)
