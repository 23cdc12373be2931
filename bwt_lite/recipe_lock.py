"""The recipe lockfile: every named preset resolved to its full configuration, one JSON file in the checkout.

A recipe is assembled from several tables in :mod:`bwt_lite.recipes` (a base per architecture and scale, a
tunnel's own sizes and training, a variant's, the equal-budget controls). The lockfile writes down what
they resolve to, so that a change to any table is a visible diff of the recipes it changes, with their
new checkpoint keys. ``tests/test_recipe_lock.py`` regenerates it and fails on any difference;
``make lock`` (or ``python -m bwt_lite.recipe_lock``) writes it again after an intended change.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from .models import ARCHS
from .paths import CHECKOUT
from .recipes import SCALES, SHIPPED, Preset, get_preset
from .tunnels import TUNNELS

LOCK_PATH = CHECKOUT / "docs" / "recipes.lock.json"


def locked_presets() -> list[tuple[str, Preset]]:
    """(why, preset) for every default preset (each tunnel, architecture and scale) and every shipped one."""
    out: list[tuple[str, Preset]] = []
    for tunnel in sorted(TUNNELS):
        for arch in ARCHS:
            for scale in SCALES:
                out.append(("default", get_preset(tunnel, arch, scale)))
    for tunnel, arch, overrides in SHIPPED:
        out.append(("shipped", get_preset(tunnel, arch, "lite", **overrides)))
    return out


def recipe_lock() -> dict[str, Any]:
    """``{"recipes": {name: {"key", "shipped", "preset"}}}``, sorted by name (a preset both default and
    shipped is listed once, ``shipped`` true)."""
    recipes: dict[str, dict[str, Any]] = {}
    for why, preset in locked_presets():
        entry = recipes.setdefault(preset.name, {"key": preset.key(), "shipped": False, "preset": preset.to_dict()})
        if entry["key"] != preset.key():
            raise ValueError(f"two different recipes are both named {preset.name}")
        entry["shipped"] = entry["shipped"] or why == "shipped"
    return {"recipes": dict(sorted(recipes.items()))}


def lock_text(lock: dict[str, Any] | None = None) -> str:
    """The lockfile's text: ``lock`` (default: :func:`recipe_lock`, resolved now) as sorted JSON."""
    return json.dumps(recipe_lock() if lock is None else lock, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the lockfile (``--check``: only say whether it is current; exit 1 when not)."""
    args = sys.argv[1:] if argv is None else argv
    lock = recipe_lock()
    text = lock_text(lock)
    if "--check" in args:
        current = LOCK_PATH.exists() and LOCK_PATH.read_text() == text
        print(f"{LOCK_PATH}: {'current' if current else 'out of date: run make lock'}")
        return 0 if current else 1
    LOCK_PATH.write_text(text)
    print(f"wrote {LOCK_PATH} ({len(lock['recipes'])} recipes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
