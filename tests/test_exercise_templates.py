"""Every checker, given the chapter's unwritten template (a function that raises NotImplementedError),
prints the same "your turn" line and no hint: the built book runs the templates, so a hint printed
there would give the answer away before the student tries."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import bwt_lite.exercises as exercises
from bwt_lite.exercises import YOUR_TURN

CHECKERS = [
    (info.name, name, fn)
    for info in pkgutil.iter_modules(exercises.__path__)
    for name, fn in inspect.getmembers(importlib.import_module(f"bwt_lite.exercises.{info.name}"),
                                       inspect.isfunction)
    if name.startswith("check_") and fn.__module__ == f"bwt_lite.exercises.{info.name}"
]


def template(*args, **kwargs):
    raise NotImplementedError


def test_every_chapter_module_has_checkers():
    assert len({module for module, _, _ in CHECKERS}) >= 13


@pytest.mark.parametrize("module, name, check", CHECKERS, ids=[f"{m}.{n}" for m, n, _ in CHECKERS])
def test_unwritten_template_gets_no_hint(module, name, check, capsys):
    assert check(template) is False
    assert capsys.readouterr().out.strip() == YOUR_TURN
