"""Where the package's own files are: the one module that builds paths from ``__file__``.

Everything the package ships (checkpoints, result files the chapters read, the course's language model,
training snapshots) lives under :data:`DATA_DIR`; :data:`CHECKOUT` is the source checkout the package
was imported from (meaningful in a clone, where ``make`` writes ``_build/``; in an installed wheel it
is the site-packages folder, where nothing of the checkout is found).
"""
from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"
CHECKOUT = PACKAGE_DIR.parent
SHIPPED_CHECKPOINTS = DATA_DIR / "checkpoints"
TEXT_LM_DIR = DATA_DIR / "lm" / "shakespeare-neox"
TRAJECTORY_DIR = DATA_DIR / "trajectories"


def data_file(name: str) -> Path:
    """A result file the package ships, e.g. ``data_file("cell_seeds.json")``."""
    return DATA_DIR / name


__all__ = ["CHECKOUT", "DATA_DIR", "PACKAGE_DIR", "SHIPPED_CHECKPOINTS", "TEXT_LM_DIR", "TRAJECTORY_DIR", "data_file"]
