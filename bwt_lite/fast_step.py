"""What every fast-path trainer shares: one optimizer step queued on its own CUDA stream, replayed
from a CUDA graph once captured (:class:`GraphStepper`).

A trainer (:class:`~bwt_lite.fast_train.FastRun` for one seed, :class:`~bwt_lite.fast_stack.SeedStack`
for several as one model) supplies the episodes (``_draw_chunk``, every ``chunk`` steps) and the step
itself (``_body``: forward, loss, backward, clipping, the learning rate, AdamW, with no CPU
synchronisation, so that it can be captured). This class runs the first ``warmup`` steps eagerly,
captures the body as a graph on the trainer's stream, replays it from then on, and keeps the queue of
unfinished GPU steps short enough for several trainers to share a GPU (:func:`train_together`). On a
CPU every step is eager.
"""
from __future__ import annotations

import time
from collections import deque
from contextlib import nullcontext
from typing import Any

import torch


class GraphStepper:
    """The step, capture and queue of a fast-path trainer. The subclass sets ``cfg``, ``label``, ``device``,
    ``chunk``, ``warmup``, ``graph_wanted``, ``stream`` (None on a CPU), ``opt``, ``step_t``, ``step_count``,
    ``stopped``, ``elapsed_before`` and ``started``, and calls :meth:`_init_stepper`."""

    def _init_stepper(self) -> None:
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_error: str | None = None
        self.loss: torch.Tensor | None = None
        self.pending: deque[torch.cuda.Event] = deque()  # one event per queued step (CUDA)

    def _draw_chunk(self) -> None:
        raise NotImplementedError

    def _body(self) -> torch.Tensor:
        raise NotImplementedError

    def _eager_step(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        self.loss = self._body()

    def _capture(self) -> None:
        """Record the step as a graph on this trainer's stream (after ``warmup`` eager steps there).
        Capturing only records: the loss tensor it returns is filled by each replay."""
        self.opt.zero_grad(set_to_none=True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=self.stream):
            self._graph_loss = self._body()
        self.graph = graph

    def step(self) -> None:
        """One optimizer step (queued on the GPU; nothing waits for it)."""
        if self.step_count >= self.cfg.steps:
            raise RuntimeError(f"{self.label}: all {self.cfg.steps} steps are done")
        with self.on_stream():
            if self.step_count % self.chunk == 0:
                self._draw_chunk()
            if self.graph is not None:
                self.graph.replay()
                self.loss = self._graph_loss
            else:
                self._eager_step()
                if self.graph_wanted and self.graph_error is None and self.step_count + 1 >= self.warmup:
                    try:
                        self._capture()
                    except Exception as e:  # a graph that cannot be captured: the trainer stays eager, and says so
                        self.graph_error = f"{type(e).__name__}: {e}"
                        self.graph = None
                        self.opt.zero_grad(set_to_none=True)
                        torch.cuda.synchronize(self.device)
                        self.step_t.fill_(self.step_count + 1)
        self.step_count += 1  # (capturing only records the body: the eager step above is this step)
        if self.stream is not None:
            event = torch.cuda.Event()
            event.record(self.stream)
            self.pending.append(event)

    def on_stream(self) -> Any:
        """A context that makes this trainer's stream the current one (nothing on a CPU)."""
        return torch.cuda.stream(self.stream) if self.stream is not None else nullcontext()

    def ready(self, lag: int = 16) -> bool:
        """Whether another step may be queued now: fewer than ``lag`` of this trainer's steps are still
        waiting on the GPU (so that one trainer's queue never holds the others back). Always True on a CPU."""
        while self.pending and self.pending[0].query():
            self.pending.popleft()
        return len(self.pending) < lag

    def sync(self) -> None:
        if self.stream is not None:
            self.stream.synchronize()
            self.pending.clear()

    def release(self) -> None:
        """Free the graph and the episode buffers (the models stay, for saving)."""
        self.graph, self.batches = None, None

    @property
    def done(self) -> bool:
        return self.stopped or self.step_count >= self.cfg.steps

    @property
    def elapsed_s(self) -> float:
        return self.elapsed_before + time.perf_counter() - self.started


def timed_steps(run: GraphStepper, steps: int) -> float:
    """Steps/s of ``run`` over ``steps`` steps, after two chunks of warm-up (graph capture and any compile
    included in the warm-up)."""
    for _ in range(2 * run.chunk):
        run.step()
    run.sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        run.step()
    run.sync()
    return steps / (time.perf_counter() - t0)


__all__ = ["GraphStepper", "timed_steps"]
