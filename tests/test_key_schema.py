"""The key schema (bwt_lite/recipes/key_schema.py): every config field is listed once, a field added later
is left out of the key exactly at its default, and every shipped checkpoint's stored configuration is the
canonical dict of its preset."""
from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from bwt_lite.models.config import ModelConfig
from bwt_lite.recipe_lock import locked_presets
from bwt_lite.recipes import Preset, get_preset, shipped_presets
from bwt_lite.recipes.key_schema import ADDED, FIRST_FIELDS, SCHEMA_VERSION, key_fields, key_of
from bwt_lite.store.cache import SHIPPED_DIR, checkpoint_dir
from bwt_lite.train_config import TrainConfig

CONFIGS = {ModelConfig: ModelConfig(n_outputs=3), TrainConfig: TrainConfig()}


@pytest.mark.parametrize("cls", list(CONFIGS), ids=lambda c: c.__name__)
def test_every_field_is_in_the_first_schema_or_added_once(cls):
    listed = list(FIRST_FIELDS[cls]) + [a.field for a in ADDED[cls]]
    assert sorted(listed) == sorted(f.name for f in fields(cls)) and len(set(listed)) == len(listed)


@pytest.mark.parametrize("cls", list(CONFIGS), ids=lambda c: c.__name__)
def test_an_added_field_is_left_out_at_its_default_only(cls):
    default = CONFIGS[cls]
    assert set(key_fields(default)) == set(FIRST_FIELDS[cls])  # every added field at its default: version 1's dict
    for added in ADDED[cls]:
        assert default.to_dict()[added.field] == added.left_out_at, added.field
        assert 1 < added.version <= SCHEMA_VERSION
    versions = [a.version for a in ADDED[cls]]
    assert versions == sorted(versions)  # rows in the order the fields were added


def test_a_set_field_enters_the_key():
    base = get_preset("bijection", "transformer", "lite")
    for changes in ({"ema": 0.5}, {"decay_steps": 20_000}, {"stop_accuracy": 0.9},
                    {"easy_steps": 2, "easy_tunnel": {"V": 10}}):
        changed = base.with_train(**changes)
        assert set(changes) <= set(changed.to_dict()["train"]) and changed.key() != base.key(), changes
    rotary = replace(base, model=replace(base.model, rope=True))
    assert rotary.to_dict()["model"]["rope"] is True and rotary.key() != base.key()


def test_every_locked_preset_round_trips_through_its_canonical_dict():
    for _, preset in locked_presets():
        d = json.loads(json.dumps(preset.to_dict()))
        assert Preset.from_dict(d) == preset and key_of(d) == preset.key()


def test_every_shipped_checkpoint_stores_its_presets_canonical_dict():
    for preset in shipped_presets():
        meta = json.loads((checkpoint_dir(preset, SHIPPED_DIR) / "checkpoint.json").read_text())
        assert meta["preset"] == preset.to_dict() and meta["key"] == preset.key(), preset.name
