"""Wind tunnels: generators of fresh episodes with exact Bayesian posteriors."""
from __future__ import annotations

from typing import Any

from ..arguments import check_choice
from .base import Episodes, Tunnel
from .bijection import Bijection
from .hmm import HMM
from .recall import Recall
from .regression import Regression
from .sticky import Sticky

TUNNELS: dict[str, type[Tunnel]] = {"bijection": Bijection, "hmm": HMM, "recall": Recall, "regression": Regression,
                                 "sticky": Sticky}


def make_tunnel(tunnel: str, **kwargs: Any) -> Tunnel:
    """Build a tunnel by name, e.g. ``make_tunnel("bijection", V=20, L=19, variant="separate")``.

    ``make_tunnel(**t.config())`` rebuilds tunnel ``t``.
    """
    check_choice("tunnel", tunnel, sorted(TUNNELS))
    return TUNNELS[tunnel](**kwargs)


__all__ = ["Episodes", "Tunnel", "Bijection", "HMM", "Recall", "Regression", "Sticky", "TUNNELS", "make_tunnel"]
