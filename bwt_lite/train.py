"""Training: fresh episodes every step, AdamW, linear warmup + cosine, clipping, periodic evaluation.

:func:`fit` knows nothing of files: it can start from a :class:`TrainState` and hands a state to
``on_checkpoint`` every ``ckpt_every`` steps, so :mod:`bwt_lite.checkpoints` can store it (with :mod:`bwt_lite.store`) and resume it
(how often is not part of the configuration: it does not change the result).
Two target modes: ``"sampled"`` (cross-entropy against the sampled answer: the paper's
claim and the default) and ``"soft"`` (cross-entropy against the exact posterior: same optimum,
far less gradient noise; always labelled wherever its numbers appear).
Device, mixed precision and ``torch.compile`` are keyword arguments of :func:`fit`, never part of
a :class:`TrainConfig` (they do not change the recipe, so they do not change a checkpoint's key).
"""
from __future__ import annotations

import copy
import math
import sys
import time
from typing import Any, Callable

import torch
import torch.nn.functional as F

from .device import amp_dtype, autocast, compiled, grad_scaler, resolve_device
from .evaluate import EVAL_SEED_BASE, evaluate
from .metrics import gaussian_nll
from .models import WindTunnelModel, build_model
from .train_config import TARGET_MODES, TrainConfig, TrainState
from .tunnels import Episodes, Tunnel, make_tunnel

def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimizer step ``step`` (0-based): linear warmup, then cosine to the floor at
    ``cfg.decay_steps`` (0: at ``cfg.steps``; a longer schedule is stopped before its end)."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    decay = max(cfg.schedule_steps - cfg.warmup_steps, 1)
    progress = min((step - cfg.warmup_steps) / decay, 1.0)
    floor = cfg.min_lr_ratio * cfg.lr
    return floor + (cfg.lr - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


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
    resume: TrainState | None = None,
    on_checkpoint: Callable[[TrainState], None] | None = None,
    ckpt_every: int = 500,
    progress: bool = True,
    device: str | torch.device = "cpu",
    desc: str = "train",
    amp: str = "auto",
    compile_model: bool = False,
    log: Callable[[str], None] | None = None,
    log_every_s: float = 60.0,
    stop: Callable[[dict[str, float]], bool] | None = None,
) -> tuple[WindTunnelModel, TrainState]:
    """Train a model on a tunnel; returns the model and its final state (history included).

    Episodes are generated on ``device`` (``"auto"``: the GPU when visible). ``amp`` and
    ``compile_model`` choose mixed precision and ``torch.compile`` (:mod:`bwt_lite.device`; neither is
    part of the preset). With ``log``, a line with steps/s and the time left is written at every
    evaluation and, without a progress bar, at least every ``log_every_s`` seconds. ``stop`` is asked
    after every evaluation (for benchmarks: time to a target); when it says True, training ends early.

    With ``cfg.ema > 0`` a moving average of the weights follows the training (after every step,
    ``avg += (1 - ema) * (weights - avg)``, starting from the initial weights, whose share after n
    steps is ``ema**n``): it is what the evaluations score and what is returned, while the raw
    weights (in the state, for resuming) train on unchanged, so the run itself is the same.
    """
    device = resolve_device(device)
    dtype = amp_dtype(amp, device)
    tunnel = make_tunnel(**tunnel_cfg)
    model = init_model(model_cfg, cfg.seed).to(device)
    forward = compiled(model, compile_model)
    opt = make_optimizer(model, cfg)
    scaler = grad_scaler(device, dtype)
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    state = TrainState(step=0, model={}, optimizer={}, generator=gen.get_state())
    if resume is not None:
        model.load_state_dict(resume.model)
        opt.load_state_dict(resume.optimizer)
        gen.set_state(resume.generator)
        if scaler is not None and resume.scaler is not None:
            scaler.load_state_dict(resume.scaler)
        state = TrainState(resume.step, {}, {}, resume.generator, list(resume.history), resume.elapsed_s)
    average = None
    if cfg.ema:
        average = copy.deepcopy(model).requires_grad_(False)
        if resume is not None:
            if resume.average is None:
                raise ValueError("this training state has no weight average, but the config asks for one (ema)")
            average.load_state_dict(resume.average)
    scored = model if average is None else average
    bar = _progress(cfg.steps, state.step, progress, desc)
    meter = Throughput(cfg.steps, state.step)
    model.train()
    t0 = time.perf_counter()
    # running sums of the loss stay on the device (no sync per step); non-finite fp16 steps are skipped
    loss_sum = torch.tensor(0.0 if resume is None else resume.loss_sum, dtype=torch.float64, device=device)
    loss_n = torch.tensor(0.0 if resume is None else resume.loss_n, dtype=torch.float64, device=device)
    done, stopped = state.step, False
    for step in range(state.step, cfg.steps):
        loss = train_step(forward, model, opt, tunnel.sample(cfg.batch_size, gen), cfg, step,
                          device=device, dtype=dtype, scaler=scaler)
        if average is not None:
            with torch.no_grad():
                torch._foreach_lerp_(list(average.parameters()), [p.detach() for p in model.parameters()],
                                     1.0 - cfg.ema)
        finite = torch.isfinite(loss.detach())
        loss_sum += torch.where(finite, loss.detach().double(), 0.0)
        loss_n += finite
        done = step + 1
        if done % cfg.eval_every == 0 or done == cfg.steps:
            res = evaluate(scored, tunnel, episodes=cfg.eval_episodes, seed=cfg.seed, device=device)
            model.train()
            n = loss_n.item()
            row = {"step": done, "loss": (loss_sum / loss_n).item() if n else math.nan,
                   "entropy_mae_bits": res.entropy_mae_bits, "kl_bits": res.kl_bits, "accuracy": res.accuracy,
                   "elapsed_s": state.elapsed_s + time.perf_counter() - t0}
            if not (math.isfinite(res.entropy_mae_bits) and math.isfinite(res.kl_bits)):
                hint = "resume with amp='off' (bwt train --amp off)" if dtype is not None else "lower the learning rate"
                raise FloatingPointError(f"{desc}: training diverged by step {done} (held-out metrics are not finite); "
                                         f"the last periodic checkpoint is kept: {hint}")
            state.history.append(row)
            loss_sum.zero_()
            loss_n.zero_()
            if bar is not None:
                bar.set_postfix(loss=f"{row['loss']:.4f}", mae=f"{row['entropy_mae_bits']:.4f}")
            if log is not None:
                line = f"{desc}: {meter.line(done)} | loss {row['loss']:.4f} | entropy MAE {row['entropy_mae_bits']:.4f} bits"
                if bar is not None:
                    bar.write(line, file=sys.stderr)  # above the bar, which shows steps/s and time left itself
                else:
                    log(line)
            stopped = stop is not None and bool(stop(row))
        elif log is not None and bar is None and meter.seconds_since_line() >= log_every_s:
            log(f"{desc}: {meter.line(done)}")
        if bar is not None:
            bar.update(1)
        if on_checkpoint is not None and (done % ckpt_every == 0 or done == cfg.steps):
            on_checkpoint(_snapshot(done, model, opt, gen, state, t0, scaler, average, (loss_sum, loss_n)))
        if stopped:
            break
    if bar is not None:
        bar.close()
    model.eval()
    final = done if stopped else max(cfg.steps, state.step)
    return scored.eval(), _snapshot(final, model, opt, gen, state, t0, scaler, average, (loss_sum, loss_n))


def train_step(forward: Callable[..., torch.Tensor], model: WindTunnelModel, opt: torch.optim.Optimizer,
               episodes: Episodes, cfg: TrainConfig, step: int, *, device: torch.device,
               dtype: torch.dtype | None = None, scaler: Any | None = None) -> torch.Tensor:
    """One optimizer step on ``episodes`` at schedule position ``step``; returns the loss.

    ``forward`` is the model or its compiled wrapper; the forward runs under autocast to ``dtype``
    (None: float32); with a ``scaler`` (float16) the loss is scaled and the gradients unscaled
    before clipping, and a step whose gradients overflowed is skipped.
    """
    with autocast(device, dtype):
        loss = loss_fn(forward(episodes.inputs, episodes.positions), episodes, cfg.target)
    opt.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(opt)  # clip the true gradients
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
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
              average: WindTunnelModel | None = None,
              loss: tuple[torch.Tensor, torch.Tensor] | None = None) -> TrainState:
    loss_sum, loss_n = (0.0, 0.0) if loss is None else (loss[0].item(), loss[1].item())
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


__all__ = ["TARGET_MODES", "EVAL_SEED_BASE", "Throughput", "TrainConfig", "TrainState", "fit", "format_duration",
           "init_model", "loss_fn", "lr_at", "train_step"]
