"""The ``bwt`` command line: train, evaluate, inspect episodes and presets, manage the cache.

Every option is checked before any work starts: numeric options by the typed converters of
:mod:`.options` (:func:`int_range`, :func:`float_range`, :func:`device_arg`...), which argparse turns into one
``argument --x: ...`` line; checks that need several options or the disk (a tunnel's variants and
length, the cache directory, a paper preset on a CPU) by the ``check_*`` helpers each command calls
first. Errors of the expected kinds end in one ``bwt: error: ...`` line and a non-zero exit code
(``BWT_DEBUG=1`` re-raises them with their traceback); Ctrl-C exits with 130 and says what was kept.
"""
from __future__ import annotations

from .cache import check_cache_dir, cmd_cache
from .entry import main
from .options import (MAX_EM_SEEDS, MAX_EM_STEPS, MAX_EPISODES, MAX_JOBS, MAX_LENGTH, MAX_REPEAT, MAX_SEED, MAX_STEPS,
                      MAX_TRAIN_SEEDS, SCAN_MAX, SCAN_MAX_ELEMENTS, device_arg, finite_nonneg_float,
                      finite_positive_float, float_range, int_range, jobs_int, positive_int, seed_int,
                      shipped_preset_name)
from .parser import build_parser
from .runs import cmd_bench, cmd_bench_scan, cmd_claims, cmd_em_vs_sgd, cmd_reproduce, cmd_ship
from .train_eval import cmd_episode, cmd_eval, cmd_info, cmd_train, episode_json, eval_tunnel

