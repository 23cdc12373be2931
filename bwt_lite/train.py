"""Training: fresh episodes every step, AdamW, linear warmup + cosine, clipping, periodic evaluation.

:func:`fit` knows nothing of files: it can start from a :class:`TrainState` and hands a state to
``on_checkpoint`` every ``ckpt_every`` steps, so :mod:`bwt_lite.checkpoints` can store it (with :mod:`bwt_lite.store`) and resume it
(how often is not part of the configuration: it does not change the result).
Two target modes: ``"sampled"`` (cross-entropy against the sampled answer: the paper's
claim and the default) and ``"soft"`` (cross-entropy against the exact posterior: same optimum,
far less gradient noise; always labelled wherever its numbers appear).
Device, mixed precision, ``torch.compile`` and what a run shows travel as one
:class:`~bwt_lite.runtime.options.RunOptions` (``fit(..., run=...)``), never part of a
:class:`TrainConfig` (they do not change the recipe, so they do not change a checkpoint's key).
"""
from __future__ import annotations

import copy
import math
import sys
import time
from typing import Any, Callable

import torch
import torch.nn.functional as F

from .evaluate import EVAL_SEED_BASE, evaluate
from .metrics import gaussian_nll
from .models import WindTunnelModel, build_model
from .runtime.device import autocast, compiled, grad_scaler
from .runtime.options import RunOptions
from .train_config import TARGET_MODES, TrainConfig, TrainState
from .tunnels import Episodes, Tunnel, make_tunnel


def warmup_cosine(step: int, peak: float, warmup: int, total: int, min_ratio: float) -> float:
    """Learning rate at step ``step`` (0-based): linear warmup to ``peak`` over ``warmup`` steps, then
    cosine to ``min_ratio * peak`` at step ``total``, flat after it."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min((step - warmup) / max(total - warmup, 1), 1.0)
    floor = min_ratio * peak
    return floor + (peak - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimizer step ``step`` (0-based): linear warmup, then cosine to the floor at
    ``cfg.decay_steps`` (0: at ``cfg.steps``; a longer schedule is stopped before its end)."""
    return warmup_cosine(step, cfg.lr, cfg.warmup_steps, cfg.schedule_steps, cfg.min_lr_ratio)


def loss_fn(out: torch.Tensor, episodes: Episodes, target: str) -> torch.Tensor:
    """Training loss in nats against the sampled answer or the exact posterior (``target``).

    Categorical tunnels: cross-entropy over the answer classes. Gaussian tunnels (``out`` holds the
    predicted mean and log-variance): Gaussian NLL of the sampled value, or its expectation under the
    exact predictive N(mean, var) for soft targets (same optimum, no sampling noise). The loss is
    taken in at least float32, also when the model ran under autocast.
    """
    if out.dtype in (torch.float16, torch.bfloat16):
        out = out.float()
    if episodes.probs is None:  # Gaussian head
        mean_q, log_var = out[..., 0], out[..., 1]
        if target == "sampled":
            return gaussian_nll(mean_q, log_var, episodes.target.to(out.dtype))
        sq = episodes.var.to(out.dtype) + (episodes.mean.to(out.dtype) - mean_q) ** 2  # E[(y - mean_q)^2]
        return 0.5 * (log_var + sq * torch.exp(-log_var) + math.log(2 * math.pi)).mean()
    if target == "sampled":
        return F.cross_entropy(out.flatten(0, 1), episodes.target.flatten())
    logq = torch.log_softmax(out, dim=-1)
    return -(episodes.probs.to(logq.dtype) * logq).sum(-1).mean()


def make_optimizer(model: WindTunnelModel, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices and embeddings only; value projections at ``value_lr_mult``."""
    groups: dict[tuple[float, float], list[torch.nn.Parameter]] = {}
    for name, p in model.named_parameters():
        wd = cfg.weight_decay if p.dim() >= 2 else 0.0
        mult = cfg.value_lr_mult if name.endswith("attn.v.weight") else 1.0
        groups.setdefault((wd, mult), []).append(p)
    return torch.optim.AdamW([{"params": ps, "weight_decay": wd, "lr_mult": mult}
                              for (wd, mult), ps in groups.items()], lr=cfg.lr)


def init_model(model_cfg: Any, seed: int) -> WindTunnelModel:
    """Build the model with weights drawn from ``seed`` (global RNG left untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build_model(model_cfg)


def fit(
    tunnel_cfg: dict[str, Any],
    model_cfg: Any,
    cfg: TrainConfig,
    *,
    run: RunOptions | None = None,
    resume: TrainState | None = None,
    on_checkpoint: Callable[[TrainState], None] | None = None,
    stop: Callable[[dict[str, float]], bool] | None = None,
) -> tuple[WindTunnelModel, TrainState]:
    """Train a model on a tunnel; returns the model and its final state (history included).

    ``run`` (:class:`~bwt_lite.runtime.options.RunOptions`; default: on the CPU, with a progress bar) says
    how: the device episodes are generated and the model trained on, mixed precision and
    ``torch.compile`` (neither part of the preset), the progress bar (labelled ``run.desc``), the
    progress lines to ``run.log`` (at every evaluation and, without a bar, at least every
    ``run.log_every_s`` seconds) and how often ``on_checkpoint`` gets a state (``run.ckpt_every``).
    Options not yet resolved are resolved here; resolved ones are taken as they are. ``stop`` is asked
    after every evaluation (for benchmarks: time to a target); when it says True, training ends early,
    as it does at the first evaluation whose accuracy reaches ``cfg.stop_accuracy`` (when set).

    With ``cfg.ema > 0`` a moving average of the weights follows the training (:func:`weight_average`):
    it is what the evaluations score and what is returned, while the raw weights (in the state, for
    resuming) train on unchanged, so the run itself is the same.

    The loop: one :func:`train_step` per fresh batch, the weight average updated, the loss summed
    (:class:`LossMeter`); every ``cfg.eval_every`` steps an evaluation row (:func:`evaluation_row`)
    shown by :class:`Report`; every ``run.ckpt_every`` steps a :class:`TrainState` for ``on_checkpoint``.
    """
    run = (run or RunOptions()).resolved()
    device, dtype = run.device, run.dtype
    tunnel = make_tunnel(**tunnel_cfg)
    easy = easy_tunnel(tunnel_cfg, cfg)
    model = init_model(model_cfg, cfg.seed).to(device)
    forward = compiled(model, run.compile_model)
    opt = make_optimizer(model, cfg)
    scaler = grad_scaler(device, dtype)
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    state = _restore(resume, model, opt, gen, scaler)
    average = weight_average(model, cfg.ema, resume)
    scored = model if average is None else average
    report = Report(cfg.steps, state.step, run.progress, run.desc, run.log, run.log_every_s)
    model.train()
    t0 = time.perf_counter()
    losses = LossMeter(device, resume)
    done, stopped = state.step, False
    for step in range(state.step, cfg.steps):
        source = easy if easy is not None and step < cfg.easy_steps else tunnel
        loss = train_step(forward, model, opt, source.sample(cfg.batch_size, gen), cfg, step,
                          device=device, dtype=dtype, scaler=scaler)
        if average is not None:
            update_average(average, model, cfg.ema)
        losses.add(loss)
        done = step + 1
        if done % cfg.eval_every == 0 or done == cfg.steps:
            row = evaluation_row(scored, tunnel, cfg, device, done, losses.take(),
                                 state.elapsed_s + time.perf_counter() - t0, run.desc, amp=dtype is not None)
            model.train()
            state.history.append(row)
            report.evaluated(done, row)
            stopped = bool(cfg.stop_accuracy and (row.get("accuracy") or 0.0) >= cfg.stop_accuracy)
            stopped = stopped or (stop is not None and bool(stop(row)))
        report.stepped(done)
        if on_checkpoint is not None and (done % run.ckpt_every == 0 or done == cfg.steps):
            on_checkpoint(_snapshot(done, model, opt, gen, state, t0, scaler, average, losses))
        if stopped:
            break
    report.close()
    model.eval()
    final = done if stopped else max(cfg.steps, state.step)
    return scored.eval(), _snapshot(final, model, opt, gen, state, t0, scaler, average, losses)


def easy_tunnel(tunnel_cfg: dict[str, Any], cfg: TrainConfig) -> Tunnel | None:
    """The tunnel of a curriculum's first ``cfg.easy_steps`` steps (``tunnel_cfg`` with ``cfg.easy_tunnel``'s
    arguments changed), or None without a curriculum. Its episodes must fit the same model: same length
    and vocabulary as the tunnel's own."""
    if not cfg.easy_steps:
        return None
    tunnel, easy = make_tunnel(**tunnel_cfg), make_tunnel(**{**tunnel_cfg, **dict(cfg.easy_tunnel)})
    shape = lambda t: (t.seq_len, t.vocab_size, getattr(t, "n_classes", None))  # noqa: E731
    if shape(easy) != shape(tunnel):
        raise ValueError(f"the curriculum's tunnel {easy.config()} does not fit the model of {tunnel.config()}: "
                         f"its episodes must keep the length, the vocabulary and the classes")
    return easy


def _restore(resume: TrainState | None, model: WindTunnelModel, opt: torch.optim.Optimizer, gen: torch.Generator,
             scaler: Any | None) -> TrainState:
    """The state a run starts from: step 0, or ``resume``'s weights, optimizer, RNG and scaler loaded."""
    if resume is None:
        return TrainState(step=0, model={}, optimizer={}, generator=gen.get_state())
    model.load_state_dict(resume.model)
    opt.load_state_dict(resume.optimizer)
    gen.set_state(resume.generator)
    if scaler is not None and resume.scaler is not None:
        scaler.load_state_dict(resume.scaler)
    return TrainState(resume.step, {}, {}, resume.generator, list(resume.history), resume.elapsed_s)


# ------------------------------------------------------------------------------------------------
# Weight averaging (TrainConfig.ema)


def weight_average(model: WindTunnelModel, ema: float, resume: TrainState | None = None) -> WindTunnelModel | None:
    """A frozen copy of ``model`` to hold the moving average of its weights (None when ``ema`` is 0).

    After every step, ``avg += (1 - ema) * (weights - avg)`` (:func:`update_average`), starting from
    the initial weights, whose share after n steps is ``ema**n``; resuming restores ``resume``'s average.
    """
    if not ema:
        return None
    average = copy.deepcopy(model).requires_grad_(False)
    if resume is not None:
        if resume.average is None:
            raise ValueError("this training state has no weight average, but the config asks for one (ema)")
        average.load_state_dict(resume.average)
    return average


def update_average(average: WindTunnelModel, model: WindTunnelModel, ema: float) -> None:
    """One step of the moving average: ``avg += (1 - ema) * (weights - avg)``, in place."""
    with torch.no_grad():
        torch._foreach_lerp_(list(average.parameters()), [p.detach() for p in model.parameters()], 1.0 - ema)


# ------------------------------------------------------------------------------------------------
# Evaluation and logging during training


class LossMeter:
    """The mean training loss since the last evaluation. The running sums stay on the device (no sync per
    step), steps with a non-finite loss (skipped float16 steps) are left out, and the sums are part of the
    state, so a resumed run logs the same loss as an uninterrupted one."""

    def __init__(self, device: torch.device, resume: TrainState | None = None):
        self.sum = torch.tensor(0.0 if resume is None else resume.loss_sum, dtype=torch.float64, device=device)
        self.n = torch.tensor(0.0 if resume is None else resume.loss_n, dtype=torch.float64, device=device)

    def add(self, loss: torch.Tensor) -> None:
        finite = torch.isfinite(loss.detach())
        self.sum += torch.where(finite, loss.detach().double(), 0.0)
        self.n += finite

    def take(self) -> float:
        """The mean so far (NaN when no step was finite), then start again from zero."""
        mean = (self.sum / self.n).item() if self.n.item() else math.nan
        self.sum.zero_()
        self.n.zero_()
        return mean


def evaluation_row(scored: WindTunnelModel, tunnel: Tunnel, cfg: TrainConfig, device: torch.device, done: int,
                   loss: float, elapsed_s: float, desc: str, amp: bool = False) -> dict[str, float]:
    """The history row after ``done`` steps: the mean training loss and ``scored``'s held-out metrics.

    Raises :class:`FloatingPointError` when the held-out metrics are not finite (training diverged).
    """
    hint = "resume with amp='off' (bwt train --amp off)" if amp else "lower the learning rate"
    try:
        res = evaluate(scored, tunnel, episodes=cfg.eval_episodes, seed=cfg.seed, device=device)
    except FloatingPointError as e:
        raise FloatingPointError(f"{desc}: training diverged by step {done} ({e}); the last periodic "
                                 f"checkpoint is kept: {hint}") from None
    row = {"step": done, "loss": loss, "entropy_mae_bits": res.entropy_mae_bits, "kl_bits": res.kl_bits,
           "accuracy": res.accuracy, "elapsed_s": elapsed_s}
    if not (math.isfinite(res.entropy_mae_bits) and math.isfinite(res.kl_bits)):
        raise FloatingPointError(f"{desc}: training diverged by step {done} (held-out metrics are not finite); "
                                 f"the last periodic checkpoint is kept: {hint}")
    return row


class Report:
    """What a run shows: a progress bar (tqdm) and, with ``log``, a line at every evaluation and, without a
    bar, at least every ``log_every_s`` seconds (steps/s and the time left, :class:`Throughput`)."""

    def __init__(self, total: int, start_step: int, progress: bool, desc: str,
                 log: Callable[[str], None] | None, log_every_s: float):
        self.bar = _progress(total, start_step, progress, desc)
        self.meter = Throughput(total, start_step)
        self.desc, self.log, self.log_every_s = desc, log, log_every_s
        self.evaluated_at: int | None = None

    def evaluated(self, done: int, row: dict[str, float]) -> None:
        self.evaluated_at = done
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{row['loss']:.4f}", mae=f"{row['entropy_mae_bits']:.4f}")
        if self.log is not None:
            line = (f"{self.desc}: {self.meter.line(done)} | loss {row['loss']:.4f} | "
                    f"entropy MAE {row['entropy_mae_bits']:.4f} bits")
            if self.bar is not None:
                self.bar.write(line, file=sys.stderr)  # above the bar, which shows steps/s and time left itself
            else:
                self.log(line)

    def stepped(self, done: int) -> None:
        """After every step: the timed log line (when no evaluation was just shown) and the bar."""
        if (self.evaluated_at != done and self.log is not None and self.bar is None
                and self.meter.seconds_since_line() >= self.log_every_s):
            self.log(f"{self.desc}: {self.meter.line(done)}")
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def train_step(forward: Callable[..., torch.Tensor], model: WindTunnelModel, opt: torch.optim.Optimizer,
               episodes: Episodes, cfg: TrainConfig, step: int, *, device: torch.device,
               dtype: torch.dtype | None = None, scaler: Any | None = None,
               stats: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
    """One optimizer step on ``episodes`` at schedule position ``step``; returns the loss.

    ``forward`` is the model or its compiled wrapper; the forward runs under autocast to ``dtype``
    (None: float32); with a ``scaler`` (float16) the loss is scaled and the gradients unscaled
    before clipping, and a step whose gradients overflowed is skipped. A ``stats`` dict receives the
    global gradient norm before clipping (``"grad_norm"``), for diagnostics of a stalled run.
    """
    with autocast(device, dtype):
        loss = loss_fn(forward(episodes.inputs, episodes.positions), episodes, cfg.target)
    opt.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(opt)  # clip the true gradients
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    if stats is not None:
        stats["grad_norm"] = norm.detach()
    lr = lr_at(step, cfg)
    for group in opt.param_groups:
        group["lr"] = lr * group["lr_mult"]
    if scaler is None:
        opt.step()
    else:
        scaler.step(opt)
        scaler.update()
    return loss


def _snapshot(step: int, model: WindTunnelModel, opt: torch.optim.Optimizer, gen: torch.Generator,
              state: TrainState, t0: float, scaler: Any | None = None,
              average: WindTunnelModel | None = None, losses: LossMeter | None = None) -> TrainState:
    loss_sum, loss_n = (0.0, 0.0) if losses is None else (losses.sum.item(), losses.n.item())
    return TrainState(step=step, model={k: v.detach().clone() for k, v in model.state_dict().items()},
                      optimizer=opt.state_dict(), generator=gen.get_state(), history=list(state.history),
                      elapsed_s=state.elapsed_s + time.perf_counter() - t0,
                      scaler=None if scaler is None else dict(scaler.state_dict()),
                      average=None if average is None else {k: v.detach().clone()
                                                            for k, v in average.state_dict().items()},
                      loss_sum=loss_sum, loss_n=loss_n)


def format_duration(seconds: float) -> str:
    """``"42 s"``, ``"7 min 05 s"``, ``"3 h 12 min"``."""
    s = max(int(round(seconds)), 0)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Throughput:
    """Steps/s over the window since the last report, and the time left at that rate."""

    def __init__(self, total: int, start_step: int, clock: Callable[[], float] = time.perf_counter):
        self.total, self.clock = total, clock
        self.last_step, self.last_t = start_step, clock()
        self.rate: float | None = None

    def seconds_since_line(self) -> float:
        return self.clock() - self.last_t

    def line(self, done: int) -> str:
        """``"step 2,000/50,000 | 41.3 steps/s | about 19 min 22 s left"`` (and start a new window)."""
        now = self.clock()
        if done > self.last_step and now > self.last_t:
            self.rate = (done - self.last_step) / (now - self.last_t)
        self.last_step, self.last_t = done, now
        text = f"step {done:,}/{self.total:,}"
        if self.rate:
            text += f" | {self.rate:.1f} steps/s | about {format_duration((self.total - done) / self.rate)} left"
        return text


def _progress(total: int, initial: int, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="step", dynamic_ncols=True, mininterval=1.0)


__all__ = ["TARGET_MODES", "EVAL_SEED_BASE", "LossMeter", "Report", "RunOptions", "Throughput", "TrainConfig",
           "TrainState", "evaluation_row", "fit", "format_duration", "init_model", "loss_fn", "lr_at", "train_step",
           "update_average", "weight_average"]
