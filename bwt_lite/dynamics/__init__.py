"""Paper II, gradient dynamics: why gradient descent makes attention Bayesian (chapter 11).

- :mod:`.gradients`: the single attention head, its closed-form gradients (score and value), checked
  against autograd, and a free descent on one query's scores;
- :mod:`.two_timescale`: two-timescale ("EM-like") training: a larger learning rate on the values
  against plain SGD, on the single head and on the bijection transformer, and the dynamics diagnostics.
"""
