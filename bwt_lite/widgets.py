"""The widgets of chapters 1-6 and 11 at their former path: they live beside their figures in
:mod:`bwt_lite.plotting` (one module per chapter family). Kept for notebooks that still import
``bwt_lite.widgets``."""
from .plotting.bayes import (elimination_widget, prediction_widget)
from .plotting.hmm import hmm_filter_widget
from .plotting.recall import recall_widget
from .plotting.regression import regression_widget
from .plotting.primitives import primitives_widget
from .plotting.dynamics import routing_widget
