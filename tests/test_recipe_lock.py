"""The recipe lockfile (docs/recipes.lock.json) is what the presets resolve to now: a change to any recipe
table shows as a diff of the recipes it changes. After an intended change: ``make lock``."""
from __future__ import annotations

import json

from bwt_lite.recipes import get_preset
from bwt_lite.recipe_lock import LOCK_PATH, lock_text, recipe_lock


def test_the_lockfile_is_current():
    lock = recipe_lock()  # resolved once: every preset is built
    want = lock["recipes"]
    have = json.loads(LOCK_PATH.read_text())["recipes"] if LOCK_PATH.exists() else {}
    added = sorted(set(want) - set(have))
    removed = sorted(set(have) - set(want))
    changed = sorted(n for n in set(want) & set(have) if want[n] != have[n])
    assert not (added or removed or changed), (
        f"recipes changed since docs/recipes.lock.json was written (run `make lock` if intended): "
        f"added {added}, removed {removed}, changed {changed}")
    assert LOCK_PATH.read_text() == lock_text(lock)  # byte for byte: the file is the generated text


def test_the_lock_lists_every_shipped_recipe_with_its_key():
    recipes = recipe_lock()["recipes"]
    shipped = get_preset("recurrence", "transformer", "lite", variant="opaque")
    entry = recipes[shipped.name]
    assert entry["shipped"] and entry["key"] == shipped.key() and entry["preset"] == shipped.to_dict()
    assert not recipes["sticky-transformer-paper"]["shipped"]  # a default recipe, not shipped
