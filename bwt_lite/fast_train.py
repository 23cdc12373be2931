"""The fast path of :func:`bwt_lite.train.fit` for GPUs: a whole training step as one CUDA graph.

At the paper's sizes (2.7-7.2 million parameters, batches of 256 short episodes) one eager training
step is a few hundred small kernels, each launched by Python: a GPU spends most of such a step
waiting for the next launch. :class:`FastRun` removes the launches:

- **Episodes in chunks.** Every ``chunk`` steps, ``chunk`` batches are drawn in one sampler call on
  the GPU, into fixed buffers; the step picks its batch from them by the step counter.
- **One graph per step.** The forward (bf16 autocast), the loss, the backward, gradient clipping,
  the fused AdamW update, the learning rate of the warmup + cosine schedule (read from a table on
  the GPU by the step counter) and the running loss sum are captured once as a CUDA graph and then
  replayed: one launch a step.
- **Several runs side by side.** Each run owns a CUDA stream; :func:`train_together` replays the
  runs' graphs in turn, so the kernels of one run fill the gaps left by another's (several seeds of
  one preset, or several presets, in one process).

The eager :func:`bwt_lite.train.train_step` stays the reference: on the CPU, :class:`FastRun` runs the
same step body without a graph, and ``tests/test_fast_train.py`` checks that its losses and weights
follow the eager path's to float tolerance for the same batches; :func:`check_against_eager` repeats
that check on the GPU, graph included, before a long run. The one difference in what is trained is
the order of the training episodes: a chunk of ``chunk`` batches is one sampler call, so the stream of
episodes differs from :func:`fit`'s one-batch calls (same distribution; a run is repeatable from its
seed, and resumes exactly from a state saved at a chunk boundary).

Float16 autocast (GPUs older than compute capability 8.0) needs a gradient scaler that decides on
the CPU whether to skip a step, which a graph cannot do: those GPUs keep :func:`fit`.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import replace
from typing import Any, Callable

import torch

from .evaluate import evaluate
from .presets import Preset
from .runtime.device import amp_dtype, compiled, device_name, precision_name, resolve_device
from .train import LossMeter, easy_tunnel, evaluation_row, init_model, loss_fn, lr_at, update_average, weight_average
from .train_config import TrainState
from .fast_step import GraphStepper, timed_steps
from .tunnels import Episodes, make_tunnel
from .fast_together import train_together  # several runs side by side (re-exported: the fast path's scheduler)

# bf16 dense matrix peak (TFLOP/s) of the GPUs the project has timed on, by the vendor's datasheets,
# for model FLOPs utilisation; a GPU not listed gets no MFU.
BF16_PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L4": 121.0, "T4": 65.0}


def peak_tflops(name: str) -> float | None:
    """The bf16 dense peak of the GPU named ``name`` (e.g. 'NVIDIA H200'), or None when not listed."""
    for gpu, peak in BF16_PEAK_TFLOPS.items():
        if gpu in name:
            return peak
    return None


def train_flops_per_step(preset: Preset, n_params: int) -> float:
    """Model FLOPs of one training step by the PaLM appendix formula: per token, 6 x the parameters
    outside the embedding tables plus 12 x layers x width x sequence length for attention, times the
    tokens of a batch. The last block computes only the answer rows, so this slightly overcounts."""
    m, tunnel = preset.model, make_tunnel(**preset.tunnel)
    T = tunnel.seq_len
    embed = m.vocab_size * m.d_model + m.n_positions * m.d_model
    per_token = 6 * (n_params - embed) + 12 * m.n_layers * m.d_model * T
    return float(per_token * T * preset.train.batch_size)


class FastRun(GraphStepper):
    """One preset's training as a replayed CUDA graph on its own stream (on a CPU: the same step, eager).

    ``step()`` does one optimizer step; ``evaluate_now()`` appends a history row as :func:`fit` does;
    ``state()`` is a :class:`TrainState` that :func:`bwt_lite.store.resume.save_train_state` stores and
    that ``resume`` takes back (it must be at a multiple of ``chunk`` steps). ``graph=None``: a graph on
    CUDA, none on the CPU.
    """

    def __init__(self, preset: Preset, device: str | torch.device = "cuda", amp: str = "auto", chunk: int = 8,
                 graph: bool | None = None, resume: TrainState | None = None, warmup: int = 2,
                 compile: bool = False, priority: int = 0):
        self.preset, self.cfg = preset, preset.train
        self.presets = [preset]  # what a SeedStack holds several of (see bwt_lite.fast_stack)
        self.label = f"{preset.name} seed {preset.train.seed}"
        self.device = resolve_device(device)
        self.dtype = amp_dtype(amp, self.device)
        if self.dtype == torch.float16:
            raise ValueError("the fast path needs bf16 or fp32 (a float16 gradient scaler cannot run inside a "
                             "CUDA graph); use bwt_lite.train.fit (bwt train) on this GPU, or amp='off'")
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        self.graph_wanted = self.device.type == "cuda" if graph is None else graph
        if self.graph_wanted and self.device.type != "cuda":
            raise ValueError("graph=True needs a CUDA device")
        if resume is not None and resume.step % chunk:
            raise ValueError(f"a fast run resumes at a multiple of chunk={chunk} steps, not at step {resume.step}")
        # a compiled forward loaded from torch's on-disk cache finishes setting up on its first calls, which
        # a graph capture cannot hold (seen on an H200: a CPU-to-GPU copy): compiled runs capture after 3 steps
        self.chunk, self.warmup = chunk, max(warmup, 3) if compile else warmup
        self.tunnel = make_tunnel(**preset.tunnel)
        self.easy = easy_tunnel(preset.tunnel, self.cfg)  # a curriculum's first steps (None without one)
        if self.cfg.easy_steps % chunk:
            raise ValueError(f"a fast run switches tunnels between chunks: easy_steps ({self.cfg.easy_steps}) must be "
                             f"a multiple of chunk={chunk}")
        self.model = init_model(preset.model, self.cfg.seed).to(self.device)
        # the training forward: the model, or its torch.compile wrapper (same weights; evaluations use the model)
        self.compiled = compile
        self.forward = compiled(self.model, compile)
        self.params = list(self.model.parameters())
        # its own CUDA stream; ``priority`` < 0 asks the GPU to run this run's kernels before others' when both wait
        self.stream = torch.cuda.Stream(self.device, priority=priority) if self.device.type == "cuda" else None
        self.gen = torch.Generator(device=self.device).manual_seed(self.cfg.seed)
        self.opt, self.mults = self._optimizer()
        # the learning rate of every step, as the eager trainer computes it, looked up on the device
        steps = max(self.cfg.steps, 1)
        self.schedule = torch.tensor([lr_at(s, self.cfg) for s in range(steps)], dtype=torch.float32,
                                     device=self.device)
        self.step_t = torch.zeros((), dtype=torch.int64, device=self.device)
        self.losses = LossMeter(self.device, resume)
        self.average = weight_average(self.model, self.cfg.ema, resume)  # what is scored when cfg.ema > 0
        self.stopped = False  # an evaluation reached cfg.stop_accuracy
        self.history: list[dict[str, float]] = []
        self.elapsed_before = 0.0
        self.step_count = 0
        if resume is not None:
            self._restore(resume)
        self.batches: Episodes | None = None  # the current chunk (chunk x batch_size episodes)
        self.started = time.perf_counter()
        self._init_stepper()

    # -- set-up ------------------------------------------------------------------------------------

    def _optimizer(self) -> tuple[torch.optim.AdamW, list[float]]:
        """AdamW with the eager trainer's groups (weight decay on matrices and embeddings, value
        projections at ``value_lr_mult``), fused, with its learning rates as device tensors the graph reads."""
        groups: dict[tuple[float, float], list[torch.nn.Parameter]] = {}
        for name, p in self.model.named_parameters():
            wd = self.cfg.weight_decay if p.dim() >= 2 else 0.0
            mult = self.cfg.value_lr_mult if name.endswith("attn.v.weight") else 1.0
            groups.setdefault((wd, mult), []).append(p)
        cuda = self.device.type == "cuda"
        opt = torch.optim.AdamW(
            [{"params": ps, "weight_decay": wd, "lr": torch.tensor(self.cfg.lr * mult, device=self.device)}
             for (wd, mult), ps in groups.items()],
            lr=torch.tensor(self.cfg.lr, device=self.device), fused=True, capturable=cuda)
        return opt, [mult for (_, mult) in groups]

    def _restore(self, resume: TrainState) -> None:
        self.model.load_state_dict(resume.model)
        lrs = [g["lr"] for g in self.opt.param_groups]
        self.opt.load_state_dict(resume.optimizer)
        for g, lr in zip(self.opt.param_groups, lrs):  # the saved state holds floats; the graph reads tensors
            g["lr"] = lr
        self.gen.set_state(resume.generator)
        self.step_t.fill_(resume.step)
        self.step_count = resume.step
        self.history = list(resume.history)
        self.elapsed_before = resume.elapsed_s

    # -- the step ----------------------------------------------------------------------------------

    def _draw_chunk(self) -> None:
        """The next ``chunk`` batches, drawn in one sampler call, copied into the fixed buffers."""
        source = self.easy if self.easy is not None and self.step_count < self.cfg.easy_steps else self.tunnel
        fresh = source.sample(self.cfg.batch_size * self.chunk, self.gen)
        if self.batches is None:
            self.batches = fresh
            return
        for name in ("inputs", "target", "probs", "mean", "var"):
            buf = getattr(self.batches, name)
            if buf is not None:
                buf.copy_(getattr(fresh, name))

    def _batch(self) -> Episodes:
        """This step's batch: slice ``step mod chunk`` of the chunk, chosen on the device by the step counter."""
        b, B = self.batches, self.cfg.batch_size
        slot = torch.remainder(self.step_t, self.chunk).view(1)

        def pick(x: torch.Tensor | None) -> torch.Tensor | None:
            if x is None:
                return None
            return x.view(self.chunk, B, *x.shape[1:]).index_select(0, slot).squeeze(0)

        return Episodes(inputs=pick(b.inputs), positions=b.positions, target=pick(b.target),
                        probs=pick(b.probs), mean=pick(b.mean), var=pick(b.var))

    def batch_at(self, step: int) -> Episodes:
        """A copy of the batch that step ``step`` trains on (a step of the current chunk)."""
        if self.batches is None or not 0 <= step - (self.step_count - 1) // self.chunk * self.chunk < self.chunk:
            raise ValueError(f"step {step} is not in the current chunk")
        b, B, i = self.batches, self.cfg.batch_size, step % self.chunk

        def part(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x[i * B:(i + 1) * B].clone()

        return Episodes(inputs=part(b.inputs), positions=b.positions, target=part(b.target), probs=part(b.probs),
                        mean=part(b.mean), var=part(b.var))

    def _body(self) -> torch.Tensor:
        """Forward, loss, backward, clipping, the schedule's learning rate, AdamW, the loss sum, step + 1.
        No CPU synchronisation anywhere, so it can be captured."""
        episodes = self._batch()
        if self.dtype is None:
            loss = loss_fn(self.forward(episodes.inputs, episodes.positions), episodes, self.cfg.target)
        else:  # no weight-cast cache: a graph must recompute the casts from the updated weights
            with torch.autocast(self.device.type, dtype=self.dtype, cache_enabled=False):
                loss = loss_fn(self.forward(episodes.inputs, episodes.positions), episodes, self.cfg.target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, self.cfg.grad_clip, foreach=self.device.type == "cuda")
        lr = self.schedule.index_select(0, self.step_t.clamp(max=self.schedule.numel() - 1).view(1)).squeeze(0)
        for g, mult in zip(self.opt.param_groups, self.mults):
            g["lr"].copy_(lr * mult if mult != 1.0 else lr)
        self.opt.step()
        if self.average is not None:
            update_average(self.average, self.model, self.cfg.ema)
        self.losses.add(loss)
        self.step_t.add_(1)
        return loss

    # -- what a run reports ------------------------------------------------------------------------

    @property
    def scored(self) -> torch.nn.Module:
        """The model that evaluations score and that is saved: the weight average, else the weights."""
        return self.model if self.average is None else self.average

    def evaluate_now(self, episodes: int | None = None) -> dict[str, float]:
        """A history row (mean training loss since the last one, held-out metrics), as :func:`fit` writes."""
        self.sync()
        with self.on_stream():
            cfg = self.cfg if episodes is None else replace(self.cfg, eval_episodes=episodes)
            row = evaluation_row(self.scored, self.tunnel, cfg, self.device, self.step_count, self.losses.take(),
                                 self.elapsed_s, self.preset.name, amp=self.dtype is not None)
        self.model.train()
        self.history.append(row)
        self.stopped = bool(self.cfg.stop_accuracy and (row.get("accuracy") or 0.0) >= self.cfg.stop_accuracy)
        return row

    def state(self) -> TrainState:
        """Everything needed to continue (at a chunk boundary) or to save the trained model."""
        self.sync()
        opt = self.opt.state_dict()
        for g in opt["param_groups"]:  # stored as floats, as the eager trainer stores them
            g["lr"] = float(g["lr"])
        return TrainState(step=self.step_count, model={k: v.detach().clone() for k, v in self.model.state_dict().items()},
                          optimizer=opt, generator=self.gen.get_state(), history=list(self.history),
                          elapsed_s=self.elapsed_s, loss_sum=self.losses.sum.item(), loss_n=self.losses.n.item(),
                          average=None if self.average is None else {
                              k: v.detach().clone() for k, v in self.average.state_dict().items()})

    def trained_on(self) -> dict[str, Any]:
        return {"device": self.device.type, "device_name": device_name(self.device),
                "precision": precision_name(self.dtype), "compile": self.compiled,
                "trainer": "cuda graph" if self.graph is not None else "eager (fast path)"}

    # -- the interface a SeedStack shares: one member here, the run itself ---------------------------

    def member_model(self, i: int = 0) -> torch.nn.Module:
        self._member(i)
        return self.scored

    def member_state(self, i: int = 0) -> TrainState:
        self._member(i)
        return self.state()

    def member_history(self, i: int = 0) -> list[dict[str, float]]:
        self._member(i)
        return self.history

    def member_scores(self, i: int = 0, episodes: int = 2048) -> dict[str, Any]:
        self._member(i)
        return final_scores(self, episodes)


    def _member(self, i: int) -> None:
        if i != 0:
            raise IndexError(f"a FastRun has one member (0), not {i}")


def check_against_eager(preset: Preset, device: str | torch.device, steps: int = 4, amp: str = "auto",
                        chunk: int = 2, compile: bool = False) -> dict[str, float]:
    """Train ``steps`` steps of ``preset`` on the fast path (``compile``: its forward through
    ``torch.compile``) and on :func:`bwt_lite.train.train_step` with the same batches; the largest
    differences of the losses (relative) and of the weights (absolute)."""
    from .train import make_optimizer, train_step

    dev = resolve_device(device)
    fast = FastRun(preset, dev, amp=amp, chunk=chunk, warmup=1, compile=compile)
    eager = init_model(preset.model, preset.train.seed).to(dev)
    opt = make_optimizer(eager, preset.train)
    # the gradients first, on one batch of a stream of their own: AdamW's first updates are close to the
    # learning rate times the gradient's sign, so the weights after a few steps barely show a wrong gradient
    batch = make_tunnel(**preset.tunnel).sample(preset.train.batch_size, torch.Generator(dev).manual_seed(GRAD_SEED))
    grad = gradient_rel_diff(gradients(lambda: batch_loss(fast.forward, batch, preset.train.target), fast.params,
                                       dev, fast.dtype),
                             gradients(lambda: batch_loss(eager, batch, preset.train.target), list(eager.parameters()),
                                       dev, fast.dtype))
    fast_losses, eager_losses = [], []
    for s in range(steps):
        fast.step()
        fast.sync()
        fast_losses.append(float(fast.loss.detach()))
        batch = fast.batch_at(s)
        loss = train_step(eager, eager, opt, batch, preset.train, s, device=dev, dtype=fast.dtype)
        eager_losses.append(float(loss.detach()))
    loss_rel = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(fast_losses, eager_losses))
    weights = max((a - b).abs().max().item() for a, b in zip(fast.model.parameters(), eager.parameters()))
    return {"steps": steps, "loss_rel_diff": loss_rel, "weight_abs_diff": weights, "grad_rel_diff": grad,
            "graph": fast.graph is not None, "graph_error": fast.graph_error,
            "fast_losses": fast_losses, "eager_losses": eager_losses}


GRAD_SEED = 12_345  # the episodes the device checks compare gradients on (not a training or evaluation stream)


def gradients(loss: Callable[[], torch.Tensor], params: list[torch.Tensor], device: torch.device,
              dtype: torch.dtype | None) -> list[torch.Tensor]:
    """The gradients of ``loss()`` (computed under autocast to ``dtype``) with respect to ``params``; the
    parameters' own ``.grad`` is left empty."""
    for p in params:
        p.grad = None
    with torch.autocast(device.type, dtype=dtype) if dtype is not None else nullcontext():
        value = loss()
    value.backward()
    out = [p.grad.detach().clone() for p in params]
    for p in params:
        p.grad = None
    return out


def batch_loss(forward: Callable[..., torch.Tensor], episodes: Episodes, target: str) -> torch.Tensor:
    """The training loss of ``forward`` on ``episodes``."""
    return loss_fn(forward(episodes.inputs, episodes.positions), episodes, target)


def gradient_rel_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """``|a - b| / |b|`` over all the gradients together (float64 norms)."""
    num = sum(float((x.double() - y.double()).pow(2).sum()) for x, y in zip(a, b, strict=True))
    den = sum(float(y.double().pow(2).sum()) for y in b)
    return (num / max(den, 1e-300)) ** 0.5




def eager_and_fast(preset: Preset, device: str | torch.device, steps: int = 200, amp: str = "auto",
                   chunk: int = 8, compile: bool = False) -> dict[str, Any]:
    """``preset`` alone for ``steps`` steps on the eager trainer (:func:`bwt_lite.train.train_step`, a fresh
    batch a step, as :func:`fit` runs) and on the fast path (``compile``: also with its forward through
    ``torch.compile``), each timed after a warm-up: steps/s, model TFLOP/s (:func:`train_flops_per_step`)
    and MFU (against :func:`peak_tflops`, on a listed GPU) of each."""
    from .train import make_optimizer, train_step

    dev = resolve_device(device)
    dtype = amp_dtype(amp, dev)
    cfg = preset.train
    tunnel = make_tunnel(**preset.tunnel)
    model = init_model(preset.model, cfg.seed).to(dev)
    opt = make_optimizer(model, cfg)
    gen = torch.Generator(device=dev).manual_seed(cfg.seed)

    def eager(n: int) -> float:
        _sync(dev)
        t0 = time.perf_counter()
        for s in range(n):
            train_step(model, model, opt, tunnel.sample(cfg.batch_size, gen), cfg, s, device=dev, dtype=dtype)
        _sync(dev)
        return n / (time.perf_counter() - t0)

    eager(min(10, steps))
    rates = {"eager": eager(steps)}
    model = opt = None  # free the eager copy before the fast one is built
    long = preset.with_train(steps=max(cfg.steps, steps + 4 * chunk))
    for name, compiled_forward in (("fast", False), ("compiled", True))[:2 if compile else 1]:
        fast = FastRun(long, dev, amp=amp, chunk=chunk, compile=compiled_forward)
        rates[name] = timed_steps(fast, steps)
    flops = train_flops_per_step(preset, sum(p.numel() for p in fast.model.parameters()))
    peak = peak_tflops(device_name(dev)) if dev.type == "cuda" else None
    out: dict[str, Any] = {"preset": preset.name, "device": device_name(dev), "steps": steps,
                           "flops_per_step": flops, "graph": fast.graph is not None}
    for k, rate in rates.items():
        tf = rate * flops / 1e12
        out.update({f"{k}_steps_per_s": round(rate, 2), f"{k}_tflops": round(tf, 3),
                    f"{k}_mfu": None if peak is None else round(tf / peak, 4)})
    out["speedup"] = round(rates["fast"] / rates["eager"], 2)
    if "compiled" in rates:
        out["compile_speedup"] = round(rates["compiled"] / rates["fast"], 2)
    return out


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def final_scores(run: FastRun, episodes: int = 2048) -> dict[str, Any]:
    """The finished model scored on ``episodes`` held-out episodes (the seed's evaluation stream)."""
    run.sync()
    with run.on_stream():
        res = evaluate(run.scored, run.tunnel, episodes=episodes, device=run.device)
    run.model.train()
    return {"entropy_mae_bits": res.entropy_mae_bits, "kl_bits": res.kl_bits, "accuracy": res.accuracy}


__all__ = ["BF16_PEAK_TFLOPS", "FastRun", "check_against_eager", "eager_and_fast", "final_scores", "peak_tflops",
           "train_flops_per_step", "train_together"]
