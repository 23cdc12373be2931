"""The recipes under their earlier name: ``bwt_lite.presets`` re-exports :mod:`bwt_lite.recipes` (the
chapters import :func:`get_preset` and the lite targets from here); the tables, :class:`Preset` and
:func:`get_preset` live there."""
from __future__ import annotations

from .recipes import *  # noqa: F401,F403  (every public name of bwt_lite.recipes)
from .recipes import __all__  # noqa: F401
