"""Several seeds of one preset trained as one model: every weight carries a leading seed axis.

The idea: at the paper's sizes a training step is a few hundred small kernels, so G seeds might train
in the kernels of one. :class:`SeedStack` does that: the G models' weights are stacked
(``torch.func.stack_module_state``), the forward is the model's own, mapped over the seed axis
(``torch.func.vmap`` of ``functional_call``), so a linear layer becomes one batched matrix product
over the G seeds, and the backward and the fused AdamW update act on the stacked tensors (and the
weight average, with ``ema``, on stacked copies). Each seed stays the run it would be alone:

- **Its own episodes**: seed g draws its batches from its own generator, seeded with g, in chunks
  of ``chunk`` batches exactly as a :class:`~bwt_lite.fast_train.FastRun` of that seed draws them.
- **Its own gradients**: the loss is the sum of the G seeds' losses, whose gradient with respect to
  seed g's weights is seed g's gradient alone; clipping uses each seed's own gradient norm.
- **Its own optimizer state**: AdamW is elementwise, so one fused update of the stacked tensors is
  G independent updates.

Measured on one H200 (``bwt_lite/data/paper_scale_runs.json``), it does not pay: 3 seeds stacked gave
1.01x the seed-steps per second of one run on the bijection and 0.78x on the HMM. Once the step is
one CUDA graph the GPU no longer waits on launches, and each kernel's work grows with G.
``experiments/paper_scale.py`` uses it only when asked (``--stack``); ``bwt bench`` times it on a GPU.

``tests/test_fast_stack.py`` checks that every seed of a stack follows a :class:`FastRun` of that seed
(and so the eager trainer) to float tolerance, and that a member's resume state is a FastRun's. The
step is captured as one CUDA graph, as a FastRun's is. ``attention`` chooses the transformer's
attention method (:data:`~bwt_lite.models.transformer.ATTENTION_METHODS`). The default is the explicit
path (matrix products and a softmax, which ``vmap`` maps exactly): PyTorch's fused attention under
``vmap`` has no batching rule for its backward (it runs once per seed) and one for its forward that
mishandled masks until a 2026 fix, and a regression stack diverged on a GPU with it (the lab notes).
Float16 autocast is not supported (its gradient scaler decides on the CPU).
"""
from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Any, Sequence

import torch
from torch.func import functional_call, stack_module_state, vmap

from .evaluate import evaluate
from .fast_step import GraphStepper, timed_steps
from .presets import Preset
from .runtime.device import amp_dtype, device_name, precision_name, resolve_device
from .train import easy_tunnel, evaluation_row, init_model, loss_fn, lr_at
from .train_config import TrainState
from .tunnels import Episodes, make_tunnel

FIELDS = ("inputs", "target", "probs", "mean", "var")  # the per-episode tensors of a batch


def _same_recipe(presets: Sequence[Preset]) -> None:
    """Refuse presets that differ in anything but the seed, or that repeat a seed."""
    if not presets:
        raise ValueError("a seed stack needs at least one preset")
    first = presets[0]
    seeds = [p.train.seed for p in presets]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"a seed stack needs distinct seeds, got {seeds}")
    for p in presets[1:]:
        if (p.name != first.name or p.model != first.model or p.tunnel != first.tunnel
                or replace(p.train, seed=0) != replace(first.train, seed=0)):
            raise ValueError(f"a seed stack trains one recipe: {p.name} seed {p.train.seed} differs from "
                             f"{first.name} seed {first.train.seed} in more than its seed")


class SeedStack(GraphStepper):
    """G seeds of one preset, stepped together (see the module docstring).

    The interface is :class:`~bwt_lite.fast_train.FastRun`'s, so that
    :func:`~bwt_lite.fast_train.train_together` schedules it like one run; what is per seed is asked
    for by the seed's index ``i`` in ``presets``: :meth:`member_model`, :meth:`member_state`,
    :meth:`member_history`. ``resumes`` (one :class:`TrainState` per seed, all at the same step, a
    multiple of ``chunk``) continues the seeds from FastRun or SeedStack states.
    """

    def __init__(self, presets: Sequence[Preset], device: str | torch.device = "cuda", amp: str = "auto",
                 chunk: int = 8, graph: bool | None = None, resumes: Sequence[TrainState] | None = None,
                 warmup: int = 2, attention: str = "explicit", priority: int = 0):
        _same_recipe(presets)
        self.presets = list(presets)
        self.preset, self.cfg = presets[0], presets[0].train
        self.seeds = [p.train.seed for p in presets]
        self.label = f"{self.preset.name} seeds {', '.join(map(str, self.seeds))}"
        self.device = resolve_device(device)
        self.dtype = amp_dtype(amp, self.device)
        if self.dtype == torch.float16:
            raise ValueError("a seed stack needs bf16 or fp32 (a float16 gradient scaler cannot run in a CUDA graph)")
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        if self.cfg.easy_steps % chunk:
            raise ValueError(f"a seed stack switches tunnels between chunks: easy_steps ({self.cfg.easy_steps}) "
                             f"must be a multiple of chunk={chunk}")
        self.graph_wanted = self.device.type == "cuda" if graph is None else graph
        if self.graph_wanted and self.device.type != "cuda":
            raise ValueError("graph=True needs a CUDA device")
        steps = {None if r is None else r.step for r in (resumes or [None])}
        if resumes is not None and (len(resumes) != len(presets) or len(steps) != 1):
            raise ValueError("a seed stack resumes every seed at the same step, one state per seed")
        if resumes is not None and next(iter(steps)) % chunk:
            raise ValueError(f"a seed stack resumes at a multiple of chunk={chunk} steps, not at step {next(iter(steps))}")
        self.chunk, self.warmup, self.G = chunk, warmup, len(presets)
        self.tunnel = make_tunnel(**self.preset.tunnel)
        self.easy = easy_tunnel(self.preset.tunnel, self.cfg)
        # one ordinary model per seed: initialised from its seed, evaluated and saved as such
        self.models = [init_model(p.model, p.train.seed).to(self.device) for p in presets]
        if resumes is not None:
            for m, r in zip(self.models, resumes):
                m.load_state_dict(r.model)
        for m in self.models:
            if hasattr(m.backbone, "set_attention"):
                m.backbone.set_attention(attention)
        stacked, _ = stack_module_state(self.models)  # leaf tensors (G, ...) that the optimizer updates
        self.names = list(stacked)
        self.params = [stacked[n] for n in self.names]
        self.index = {n: j for j, n in enumerate(self.names)}
        # the weight average that is scored and saved when cfg.ema > 0, stacked like the weights
        self.average = None if not self.cfg.ema else [p.detach().clone() for p in self.params]
        if self.average is not None and resumes is not None:
            if any(r.average is None for r in resumes):
                raise ValueError("these training states have no weight average, but the config asks for one (ema)")
            for j, n in enumerate(self.names):
                self.average[j].copy_(torch.stack([r.average[n] for r in resumes]).to(self.device))
        # the module whose forward is mapped over the seed axis; its own buffers (head mask, answer tokens) are used
        self.base = copy.deepcopy(self.models[0])
        self.forward = vmap(self._one, in_dims=(0, 0), randomness="error")
        self.gens = [torch.Generator(device=self.device).manual_seed(s) for s in self.seeds]
        self.opt, self.mults = self._optimizer()
        n = max(self.cfg.steps, 1)
        self.schedule = torch.tensor([lr_at(s, self.cfg) for s in range(n)], dtype=torch.float32, device=self.device)
        self.step_t = torch.zeros((), dtype=torch.int64, device=self.device)
        self.loss_sum = torch.zeros(self.G, dtype=torch.float64, device=self.device)
        self.loss_n = torch.zeros(self.G, dtype=torch.float64, device=self.device)
        self.histories: list[list[dict[str, float]]] = [[] for _ in presets]
        self.elapsed_before = 0.0
        self.step_count = 0
        self.stopped = False
        if resumes is not None:
            self._restore(resumes)
        self.batches: dict[str, torch.Tensor | None] | None = None  # (G, chunk x batch, ...) per field
        self.positions: torch.Tensor | None = None
        self.stream = torch.cuda.Stream(self.device, priority=priority) if self.device.type == "cuda" else None
        self.started = time.perf_counter()
        self._init_stepper()

    # -- set-up ------------------------------------------------------------------------------------

    def _one(self, params: dict[str, torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
        """One seed's logits: the model's forward with that seed's weights."""
        return functional_call(self.base, params, (inputs, self.positions))

    def _optimizer(self) -> tuple[torch.optim.AdamW, list[float]]:
        """AdamW with a FastRun's groups and order (the per-seed dimension decides weight decay), fused."""
        groups: dict[tuple[float, float], list[torch.Tensor]] = {}
        for name, p in zip(self.names, self.params):
            wd = self.cfg.weight_decay if p.dim() - 1 >= 2 else 0.0
            mult = self.cfg.value_lr_mult if name.endswith("attn.v.weight") else 1.0
            groups.setdefault((wd, mult), []).append(p)
        cuda = self.device.type == "cuda"
        opt = torch.optim.AdamW(
            [{"params": ps, "weight_decay": wd, "lr": torch.tensor(self.cfg.lr * mult, device=self.device)}
             for (wd, mult), ps in groups.items()],
            lr=torch.tensor(self.cfg.lr, device=self.device), fused=True, capturable=cuda)
        return opt, [mult for (_, mult) in groups]

    def _restore(self, resumes: Sequence[TrainState]) -> None:
        """Stack the seeds' optimizer states (exp_avg, exp_avg_sq per seed; the step count is shared)."""
        first = resumes[0].optimizer
        state = {}
        for pid, st in first["state"].items():
            state[pid] = {k: (torch.stack([r.optimizer["state"][pid][k] for r in resumes])
                              if k in ("exp_avg", "exp_avg_sq") else v) for k, v in st.items()}
        lrs = [g["lr"] for g in self.opt.param_groups]
        self.opt.load_state_dict({"state": state, "param_groups": first["param_groups"]})
        for g, lr in zip(self.opt.param_groups, lrs):
            g["lr"] = lr
        for gen, r in zip(self.gens, resumes):
            gen.set_state(r.generator)
        self.step_count = resumes[0].step
        self.step_t.fill_(self.step_count)
        self.histories = [list(r.history) for r in resumes]
        self.elapsed_before = resumes[0].elapsed_s
        self.loss_sum.copy_(torch.tensor([r.loss_sum for r in resumes], dtype=torch.float64))
        self.loss_n.copy_(torch.tensor([r.loss_n for r in resumes], dtype=torch.float64))

    # -- the step ----------------------------------------------------------------------------------

    def _draw_chunk(self) -> None:
        """Each seed's next ``chunk`` batches from its own generator, into fixed (G, ...) buffers."""
        source = self.easy if self.easy is not None and self.step_count < self.cfg.easy_steps else self.tunnel
        fresh = [source.sample(self.cfg.batch_size * self.chunk, g) for g in self.gens]
        if self.positions is None:
            self.positions = fresh[0].positions
        if any(not torch.equal(f.positions, self.positions) for f in fresh):
            raise RuntimeError("the seeds' episodes answer at different positions; a seed stack needs the same")
        if self.batches is None:
            self.batches = {k: None if getattr(fresh[0], k) is None else torch.stack([getattr(f, k) for f in fresh])
                            for k in FIELDS}
            return
        for k, buf in self.batches.items():
            if buf is not None:
                for i, f in enumerate(fresh):
                    buf[i].copy_(getattr(f, k))

    def _batch(self) -> dict[str, torch.Tensor | None]:
        """This step's (G, batch, ...) tensors: slice ``step mod chunk`` of each seed's chunk."""
        B, slot = self.cfg.batch_size, torch.remainder(self.step_t, self.chunk).view(1)
        return {k: None if x is None else x.view(self.G, self.chunk, B, *x.shape[2:]).index_select(1, slot).squeeze(1)
                for k, x in self.batches.items()}

    def batch_at(self, step: int, i: int) -> Episodes:
        """A copy of the batch that seed ``i`` trains on at ``step`` (a step of the current chunk)."""
        if self.batches is None or not 0 <= step - (self.step_count - 1) // self.chunk * self.chunk < self.chunk:
            raise ValueError(f"step {step} is not in the current chunk")
        B, j = self.cfg.batch_size, step % self.chunk
        part = {k: None if x is None else x[i, j * B:(j + 1) * B].clone() for k, x in self.batches.items()}
        return Episodes(positions=self.positions, **part)

    def _losses(self) -> torch.Tensor:
        """(G,) each seed's loss on its batch of this step."""
        b = self._batch()
        params = dict(zip(self.names, self.params))
        out = self.forward(params, b["inputs"])
        return torch.stack([loss_fn(out[i], Episodes(positions=self.positions, **{k: None if x is None else x[i]
                                                                                   for k, x in b.items()}),
                                    self.cfg.target) for i in range(self.G)])

    def _body(self) -> torch.Tensor:
        """Forward, the G losses, backward, each seed's clipping, the schedule's rate, AdamW, the loss sums,
        step + 1: no CPU synchronisation, so it can be captured."""
        if self.dtype is None:
            losses = self._losses()
        else:
            with torch.autocast(self.device.type, dtype=self.dtype, cache_enabled=False):
                losses = self._losses()
        losses.sum().backward()
        grads = [p.grad for p in self.params]
        # each seed's global norm over its own gradients, as clip_grad_norm_ computes it for one model
        norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads]).norm(dim=0)
        coef = (self.cfg.grad_clip / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))
        lr = self.schedule.index_select(0, self.step_t.clamp(max=self.schedule.numel() - 1).view(1)).squeeze(0)
        for group, mult in zip(self.opt.param_groups, self.mults):
            group["lr"].copy_(lr * mult if mult != 1.0 else lr)
        self.opt.step()
        if self.average is not None:
            with torch.no_grad():
                torch._foreach_lerp_(self.average, [p.detach() for p in self.params], 1.0 - self.cfg.ema)
        detached = losses.detach()
        finite = torch.isfinite(detached)
        self.loss_sum += torch.where(finite, detached.double(), 0.0)
        self.loss_n += finite
        self.step_t.add_(1)
        return losses

    # -- what the seeds report ---------------------------------------------------------------------

    def _weights(self, i: int, average: bool = False) -> torch.nn.Module:
        """Seed ``i``'s model holding its current weights, or (``average``) its weight average."""
        self.sync()
        source = self.average if average else self.params
        with torch.no_grad():
            for name, p in self.models[i].named_parameters():
                p.copy_(source[self.index[name]][i])
        return self.models[i]

    def member_model(self, i: int) -> torch.nn.Module:
        """What seed ``i`` is scored and saved as: its weight average with ``ema``, else its weights
        (copied out of the stack into an ordinary model)."""
        return self._weights(i, average=self.average is not None)

    def member_history(self, i: int) -> list[dict[str, float]]:
        return self.histories[i]

    def member_state(self, i: int) -> TrainState:
        """Seed ``i``'s training state, as a :class:`FastRun` of that seed would save it."""
        average = None
        if self.average is not None:
            average = {k: v.detach().clone() for k, v in self._weights(i, average=True).state_dict().items()}
        model = self._weights(i)
        full = self.opt.state_dict()
        state = {pid: {k: (v[i].clone() if k in ("exp_avg", "exp_avg_sq") else v.clone()) for k, v in st.items()}
                 for pid, st in full["state"].items()}
        groups = [dict(g, lr=float(g["lr"])) for g in full["param_groups"]]
        return TrainState(step=self.step_count, model={k: v.detach().clone() for k, v in model.state_dict().items()},
                          optimizer={"state": state, "param_groups": groups}, generator=self.gens[i].get_state(),
                          history=list(self.histories[i]), elapsed_s=self.elapsed_s, average=average,
                          loss_sum=self.loss_sum[i].item(), loss_n=self.loss_n[i].item())

    def evaluate_now(self, episodes: int | None = None) -> dict[str, float]:
        """A history row for every seed (as :func:`fit` writes it); returns their mean (for the log)."""
        self.sync()
        means = (self.loss_sum / self.loss_n).tolist()
        self.loss_sum.zero_()
        self.loss_n.zero_()
        rows = []
        for i, p in enumerate(self.presets):
            cfg = p.train if episodes is None else replace(p.train, eval_episodes=episodes)
            row = evaluation_row(self.member_model(i), self.tunnel, cfg, self.device, self.step_count, means[i],
                                 self.elapsed_s, f"{p.name} seed {p.train.seed}", amp=self.dtype is not None)
            self.histories[i].append(row)
            rows.append(row)
        return {k: sum(r[k] for r in rows) / len(rows) for k in ("loss", "entropy_mae_bits", "kl_bits")}

    def member_scores(self, i: int, episodes: int = 2048) -> dict[str, Any]:
        """Seed ``i``'s model scored on ``episodes`` held-out episodes (its seed's evaluation stream)."""
        res = evaluate(self.member_model(i), self.tunnel, episodes=episodes, device=self.device)
        return {"entropy_mae_bits": res.entropy_mae_bits, "kl_bits": res.kl_bits, "accuracy": res.accuracy}

    def trained_on(self) -> dict[str, Any]:
        return {"device": self.device.type, "device_name": device_name(self.device),
                "precision": precision_name(self.dtype), "compile": False,
                "trainer": f"seed stack of {self.G}" + (", cuda graph" if self.graph is not None else ", eager")}



def check_stack(presets: Sequence[Preset], device: str | torch.device, steps: int = 4, amp: str = "auto",
                chunk: int = 2) -> dict[str, Any]:
    """Train ``steps`` steps of a stack of ``presets`` and of a :class:`FastRun` of each seed (graphs
    included on a GPU); the largest differences of the seeds' losses (relative) and weights (absolute)."""
    from .fast_train import FastRun

    dev = resolve_device(device)
    stack = SeedStack(presets, dev, amp=amp, chunk=chunk, warmup=1)
    alone = [FastRun(p, dev, amp=amp, chunk=chunk, warmup=1) for p in presets]
    grad = stack_gradient_diff(stack, alone)
    loss_rel = 0.0
    for _ in range(steps):
        stack.step()
        for run in alone:
            run.step()
        stack.sync()
        for i, run in enumerate(alone):
            run.sync()
            a, b = stack.loss[i].item(), run.loss.item()
            loss_rel = max(loss_rel, abs(a - b) / max(abs(b), 1e-12))
    weights = 0.0
    for i, run in enumerate(alone):
        mine = dict(stack.member_model(i).named_parameters())
        weights = max(weights, max((mine[n] - p).abs().max().item() for n, p in run.scored.named_parameters()))
    return {"steps": steps, "seeds": stack.seeds, "loss_rel_diff": loss_rel, "weight_abs_diff": weights,
            "grad_rel_diff": grad, "graph": stack.graph is not None, "graph_error": stack.graph_error}


def stack_gradient_diff(stack: SeedStack, alone: Sequence[Any]) -> float:
    """The largest, over the seeds, relative difference between a seed's gradients in ``stack`` and those of
    its own run in ``alone`` (FastRuns of the same presets, not yet stepped), each seed on its own batch of
    a stream of its own (:data:`~bwt_lite.fast_train.GRAD_SEED` + seed index)."""
    from .fast_train import GRAD_SEED, batch_loss, gradient_rel_diff, gradients

    B, target = stack.cfg.batch_size, stack.cfg.target
    eps = [stack.tunnel.sample(B, torch.Generator(stack.device).manual_seed(GRAD_SEED + i)) for i in range(stack.G)]
    stack.positions = eps[0].positions
    inputs = torch.stack([e.inputs for e in eps])

    def summed() -> torch.Tensor:  # the seeds' losses, each on its own batch
        out = stack.forward(dict(zip(stack.names, stack.params)), inputs)
        return sum(loss_fn(out[i], eps[i], target) for i in range(stack.G))

    mine = gradients(summed, stack.params, stack.device, stack.dtype)
    worst = 0.0
    for i, run in enumerate(alone):
        ref = gradients(lambda: batch_loss(run.forward, eps[i], target), run.params, run.device, run.dtype)
        worst = max(worst, gradient_rel_diff([g[i] for g in mine], ref))
    stack.positions = None
    return worst


def stack_and_alone(preset: Preset, device: str | torch.device, seeds: Sequence[int] = (0, 1, 2), steps: int = 200,
                    amp: str = "auto", chunk: int = 8) -> dict[str, Any]:
    """``preset`` alone on the fast path and as a stack of ``seeds``, each timed over ``steps`` steps after a
    warm-up: steps/s of each, and the seed-steps per second a stack gives over one run (its speed-up)."""
    from .fast_train import FastRun, peak_tflops, train_flops_per_step

    dev = resolve_device(device)
    long = preset.with_train(steps=max(preset.train.steps, steps + 4 * chunk))
    alone = FastRun(long, dev, amp=amp, chunk=chunk)
    flops = train_flops_per_step(preset, sum(p.numel() for p in alone.model.parameters()))
    rate_alone = timed_steps(alone, steps)
    del alone
    stack = SeedStack([long.with_train(seed=s) for s in seeds], dev, amp=amp, chunk=chunk)
    rate_stack = timed_steps(stack, steps)
    peak = peak_tflops(device_name(dev)) if dev.type == "cuda" else None
    tf_alone, tf_stack = rate_alone * flops / 1e12, rate_stack * len(seeds) * flops / 1e12
    return {"preset": preset.name, "device": device_name(dev), "steps": steps, "seeds": list(seeds),
            "graph": stack.graph is not None, "graph_error": stack.graph_error,
            "alone_steps_per_s": round(rate_alone, 2), "stack_steps_per_s": round(rate_stack, 2),
            "alone_tflops": round(tf_alone, 3), "stack_tflops": round(tf_stack, 3),
            "alone_mfu": None if peak is None else round(tf_alone / peak, 4),
            "stack_mfu": None if peak is None else round(tf_stack / peak, 4),
            "seed_speedup": round(rate_stack * len(seeds) / rate_alone, 2)}


__all__ = ["SeedStack", "check_stack", "stack_and_alone"]
