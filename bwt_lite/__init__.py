"""bwt_lite: Bayesian wind tunnels, exact posteriors, small transformers, and their geometry."""
from __future__ import annotations

from .notebook import setup_notebook
from .version import __version__

__all__ = ["__version__", "setup_notebook"]
