"""Wind tunnels: generators of fresh episodes with exact Bayesian posteriors."""
from __future__ import annotations

from typing import Any

from ..arguments import check_choice
from .base import Card, Episodes, Tunnel
from .bijection import Bijection
from .hmm import HMM
from .recall import Recall
from .recurrence import Recurrence
from .regression import Regression
from .sticky import Sticky

TUNNELS: dict[str, type[Tunnel]] = {"bijection": Bijection, "hmm": HMM, "recall": Recall, "regression": Regression,
                                 "sticky": Sticky, "recurrence": Recurrence}


# The primitives table's cells (a tunnel, or a variant with a card of its own), in the table's order.
CARDS: dict[str, Card] = {cell: card for cls in TUNNELS.values() for cell, card in cls.cards.items()}
CELL_TUNNEL: dict[str, str] = {cell: cls.name for cls in TUNNELS.values() for cell in cls.cards}


def card(cell: str) -> Card:
    """The card of a primitives-table cell (``"hmm-slow"``: the slow-mixing HMM's)."""
    check_choice("cell", cell, list(CARDS))
    return CARDS[cell]


def make_tunnel(tunnel: str, **kwargs: Any) -> Tunnel:
    """Build a tunnel by name, e.g. ``make_tunnel("bijection", V=20, L=19, variant="separate")``.

    ``make_tunnel(**t.config())`` rebuilds tunnel ``t``.
    """
    check_choice("tunnel", tunnel, sorted(TUNNELS))
    return TUNNELS[tunnel](**kwargs)


__all__ = ["CARDS", "CELL_TUNNEL", "Card", "card", "Episodes", "Tunnel", "Bijection", "HMM", "Recall", "Recurrence", "Regression", "Sticky", "TUNNELS", "make_tunnel"]
