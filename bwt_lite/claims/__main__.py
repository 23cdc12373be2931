"""``python -m bwt_lite.claims``: compute and save every group of the scorecard not yet saved
(:func:`bwt_lite.claims.saved.main`); the book build and the tests run it before the chapters."""
from .saved import main

raise SystemExit(main())
