"""Where and how the work runs, apart from what it computes.

- :mod:`.device`: the device, mixed precision and ``torch.compile`` (never part of a preset's key);
- :mod:`.pool`: several presets trained at once in worker processes (``--jobs``);
- :mod:`.bench`: the benchmarks behind ``bwt bench`` and ``bwt bench-scan`` (run by hand, never as timed tests).
"""
