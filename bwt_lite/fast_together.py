"""Several fast-path runs side by side in one process: :func:`train_together`.

A run is a :class:`~bwt_lite.fast_train.FastRun` (one seed) or a :class:`~bwt_lite.fast_stack.SeedStack`
(several seeds as one model); each owns a CUDA stream, so the kernels of one run can fill the gaps
left by another's. The scheduler steps the active runs in turn, never letting one run's queue of
unfinished GPU steps grow past a few (``run.ready()``), evaluates them on schedule, starts waiting runs
when a place frees up, saves resume states, and stops everything at a deadline at a chunk boundary
(where a run resumes exactly).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence


def train_together(runs: Sequence[Any], *, max_active: int | None = None,
                   admit: Callable[[int], bool] | None = None, deadline: float | None = None,
                   eval_every: int | None = None, on_state: Callable[[Any], None] | None = None,
                   state_every_s: float = 180.0, on_done: Callable[[Any], None] | None = None,
                   log: Callable[[str], None] = print, log_every_s: float = 30.0,
                   hold: Callable[[list[Any]], set[int]] | None = None,
                   hold_every_s: float = 5.0, on_fail: Callable[[Any, Exception], None] | None = None) -> tuple[list[Any], list[Any]]:
    """Train ``runs`` side by side, one step of each active run in turn, until all are done or
    ``deadline`` (a ``time.time()``) passes; returns (finished runs, runs stopped by the deadline).

    A run is a :class:`Any` or a :class:`~bwt_lite.fast_stack.SeedStack` (several seeds as one run),
    or a function that builds one: it is built only when a place is free (at most
    ``max_active`` at once) and ``admit(index)`` agrees (e.g. when its estimated time still fits);
    a run not admitted is skipped. Every ``eval_every`` steps (default: each run's ``eval_every``) a
    run is evaluated; every ``state_every_s`` seconds each active run at a chunk boundary goes to
    ``on_state`` (to save a resume state), and at the deadline every stopped run does; ``on_done``
    gets each run as it finishes. Every ``hold_every_s`` seconds ``hold(active runs)`` may name runs
    (by ``id``) to leave unstepped until its next call, e.g. to give a wanted run the whole GPU. A run
    whose step or evaluation raises (a diverged run) goes to ``on_fail(run, error)`` and the others
    go on; without ``on_fail`` the error propagates.
    """
    waiting = list(enumerate(runs))
    active: list[Any] = []
    finished: list[Any] = []
    last_state = last_log = last_hold = time.time()
    held: set[int] = set()

    def fill() -> None:
        for item in list(waiting):
            if max_active is not None and len(active) >= max_active:
                return
            index, run = item
            if admit is None or admit(index):
                waiting.remove(item)
                active.append(run() if callable(run) else run)  # a builder, or a FastRun / SeedStack

    fill()
    if hold is not None:
        held = hold(active)
    while active:
        if deadline is not None and time.time() > deadline:
            break
        stepped = False
        for run in list(active):
            if not run.done and (id(run) in held or not run.ready()):
                continue
            stepped = True
            try:
                _advance(run, eval_every, log)
            except Exception as e:  # e.g. a run whose training diverged: the others go on
                if on_fail is None:
                    raise
                active.remove(run)
                on_fail(run, e)
                fill()
                continue
            if run.done:
                active.remove(run)
                finished.append(run)
                if on_done is not None:
                    on_done(run)
                fill()
        if not stepped:  # every run has a full queue (or is held): wait for the oldest step of one of them
            _wait_for_one(active)
        now = time.time()
        if hold is not None and now - last_hold >= hold_every_s:
            held = hold(active)
            last_hold = now
        if on_state is not None and now - last_state >= state_every_s:
            for run in active:
                if run.step_count % run.chunk == 0:
                    on_state(run)
            last_state = now
        if now - last_log >= log_every_s and active:
            log(" | ".join(f"{r.label} {r.step_count:,}" for r in active))
            last_log = now
            fill()  # a run that did not fit before may fit at the throughput measured since
    _stop_at_chunk(active, on_state)
    return finished, active


def _wait_for_one(active: list[Any]) -> None:
    """Wait for the oldest queued GPU step of the first run that has one (on a CPU nothing is queued)."""
    waiting_on = [r for r in active if r.pending]
    if waiting_on:
        waiting_on[0].pending[0].synchronize()


def _stop_at_chunk(active: list[Any], on_state: Callable[[Any], None] | None) -> None:
    """Runs stopped by the deadline: each finishes its chunk, so that its state resumes exactly, and is saved."""
    for run in active:
        while run.step_count % run.chunk and not run.done:
            run.step()
        if on_state is not None:
            on_state(run)


def _advance(run: Any, eval_every: int | None, log: Callable[[str], None]) -> None:
    """One step of ``run`` (none if it is done already, e.g. trained to the end by a probe), then its
    evaluation when one is due and not made yet (on schedule, and at the end)."""
    if not run.done:
        run.step()
    every = eval_every or run.cfg.eval_every
    history = run.member_history(0)
    if (run.step_count % every == 0 or run.step_count >= run.cfg.steps) and \
            (not history or history[-1]["step"] != run.step_count):
        row = run.evaluate_now()
        log(f"{run.label}: step {run.step_count:,}/{run.cfg.steps:,} | loss {row['loss']:.4f} | "
            f"entropy MAE {row['entropy_mae_bits']:.4f} bits | {run.elapsed_s:.0f} s")


__all__ = ["train_together"]
