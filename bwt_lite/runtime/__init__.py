"""Where and how the work runs, apart from what it computes: the bottom layer, importing nothing of
``bwt_lite`` above the argument checks (``tests/test_layout.py`` checks it).

- :mod:`.device`: the device, mixed precision and ``torch.compile`` (never part of a preset's key);
- :mod:`.options`: :class:`~.options.RunOptions`, those choices and what a run shows, as one value
  resolved once where the run is asked for.

Work made of whole runs (the process pool, the benchmarks) is :mod:`bwt_lite.orchestration`'s.
"""
