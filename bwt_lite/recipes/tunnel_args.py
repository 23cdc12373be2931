"""The tunnels' arguments in every recipe (the task itself is the same at both scales)."""
from __future__ import annotations

from typing import Any

# Tunnel arguments: tunnel -> make_tunnel's arguments.
TUNNEL_ARGS: dict[str, dict[str, Any]] = {
    "bijection": {"V": 20, "L": 19, "variant": "separate"},
    "hmm": {"S": 5, "O": 5, "K": 20, "variant": "default"},
    "recall": {"V": 16, "L": 32, "variant": "default"},
    "regression": {"d": 4, "N": 16, "tau": 1.0, "sigma": 0.5, "variant": "pairs"},
    "sticky": {"S": 8, "d": 20, "L": 64, "stay": 0.3, "noise": 1.0, "means_seed": 0, "variant": "default"},
    "recurrence": {"p": 17, "length": 16, "variant": "integer"},
}
# A variant's own tunnel arguments, over TUNNEL_ARGS. Slow HMM: 3 sticky states over 30 steps (a belief to carry).
VARIANT_ARGS: dict[tuple[str, str], dict[str, Any]] = {
    ("hmm", "slow"): {"S": 3, "O": 5, "K": 30},
}
# Longest episode a model is evaluated on (length generalisation): its position table covers it.
EVAL_LENGTH: dict[str, int] = {"hmm": 50}

__all__ = ["EVAL_LENGTH", "TUNNEL_ARGS", "VARIANT_ARGS"]
