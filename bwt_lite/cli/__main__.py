"""``python -m bwt_lite.cli``: the ``bwt`` command."""
import sys

from .entry import main

sys.exit(main())
