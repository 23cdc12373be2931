"""bwt_lite: Bayesian wind tunnels, exact posteriors, small transformers, and their geometry."""
from __future__ import annotations

__version__ = "0.1.0"

from .notebook import setup_notebook  # noqa: E402

__all__ = ["__version__", "setup_notebook"]
