"""Work made of whole training runs, above the checkpoint API (:mod:`bwt_lite.checkpoints`):

- :mod:`.pool`: several presets trained at once in worker processes (``--jobs``);
- :mod:`.bench`: the benchmarks behind ``bwt bench`` and ``bwt bench-scan`` (run by hand, never as timed
  tests), with :mod:`.timing` (its timers), :mod:`.goals` (the speed goals it reports) and
  :mod:`.reference_samplers` (the generators those goals compare with).
"""
