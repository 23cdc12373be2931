"""Geometric diagnostics of trained wind-tunnel models (spec section 1.10), one module per family.

Each diagnostic is a function returning numbers (a dataclass or dict) plus a plotting helper; import
them from their modules, e.g. ``from bwt_lite.geometry.frame import key_orthogonality``.
"""
