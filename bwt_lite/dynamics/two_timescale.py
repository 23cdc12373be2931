"""Two-timescale ("EM-like") training, Paper II: does a larger learning rate on the values speed up
learning, and does attention settle before the values do?

Single head (:func:`em_vs_sgd`). The paper's 820-parameter head (:class:`~bwt_lite.dynamics.gradients.SingleHead`)
on the sticky Markov chain (:class:`~bwt_lite.tunnels.sticky.Sticky`), trained full batch with plain
SGD (lr 0.01 on every weight) against the same with 10x the learning rate on ``W_V`` (the paper's
"EM-like" update: values are the M-step prototypes, attention the E-step responsibilities), from the
same initialisation, for several seeds. The paper's claim (Paper II, EM-like two-timescale training): SGD's final loss is reached
in 430 instead of 1000 steps, 2.3x faster. Unlike the authors, who scored the sequence they trained
on, every loss here is measured on held-out sequences (generator ``EVAL_SEED_BASE + seed``), and
steps are counted to the first step whose held-out loss is at or below SGD's final held-out loss.
Optional control arms put the same 10x on the readout ``W_O`` or on the routing ``W_Q, W_K``
instead: if those speed learning up as much, the gain is not specific to the values.

All runs of an experiment (seeds x arms) train at once as one batched computation (one head per
run, runs never interact), which is what keeps five seeds of 1,000 steps at a few seconds on a CPU.

Transformer (:func:`value_lr_on_bijection`). The same question for the bijection transformer through
the package's trainer: ``TrainConfig.value_lr_mult`` (AdamW) against the baseline, in steps to a
target entropy MAE on held-out episodes, plus the attention pattern's stability across training
(:func:`attention_stability`).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..arguments import check_int
from ..evaluate import EVAL_SEED_BASE
from ..metrics import LN2, entropy_bits
from ..models import build_model, run_with_cache
from ..paper import Published, paper_figure
from ..recipes import Preset, get_preset
from ..runtime.options import RunOptions
from ..stats import first_step_at_or_below, mean_ci
from ..train import fit, init_model
from ..tunnels import make_tunnel
from ..tunnels.sticky import Sticky, row_entropy_floor_nats
from .gradients import ScoreDescent, SingleHead, free_score_descent, head_forward

WEIGHTS = ("W_Q", "W_K", "W_V", "W_O")


# ------------------------------------------------------------------------------------------------
# The single head on the sticky chain


@dataclass(frozen=True)
class EMConfig:
    """The single-head experiment (defaults: the paper's recipe on held-out data)."""

    seeds: int = 5  # seeds 0..seeds-1: each its own initialisation, training and held-out sequences
    steps: int = 1000  # full-batch gradient steps per run
    lr: float = 0.01  # plain SGD learning rate (the paper's)
    mult: float = 10.0  # learning-rate multiplier of the boosted weights (the paper's 0.1 on W_V)
    controls: bool = False  # also boost the readout W_O, and the routing W_Q, W_K, in separate arms
    train_episodes: int = 64  # the fixed training set: sequences of L tokens (64 x 32 = 2,048 predictions)
    held_out_episodes: int = 64  # held-out sequences for every loss reported
    L: int = 32  # tokens per sequence (the attention span)
    track_every: int = 10  # steps between stored weight snapshots (for the dynamics)
    init_std: float = 0.1  # the paper's N(0, 0.1^2) initialisation

    def __post_init__(self) -> None:
        for name in ("seeds", "steps", "train_episodes", "held_out_episodes", "L", "track_every"):
            check_int(name, getattr(self, name), 1)
        for name in ("lr", "mult", "init_std"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")

    def arms(self) -> dict[str, dict[str, float]]:
        """Arm name -> learning-rate multiplier per boosted weight (others at ``lr``)."""
        m = f"x{self.mult:g}"
        arms = {"sgd": {}, f"values {m}": {"W_V": self.mult}}
        if self.controls:
            arms[f"readout {m}"] = {"W_O": self.mult}
            arms[f"routing {m}"] = {"W_Q": self.mult, "W_K": self.mult}
        return arms


@dataclass
class EMResult:
    """What :func:`em_vs_sgd` measured. Losses are mean cross-entropies in nats on held-out sequences."""

    config: dict[str, Any]
    arms: list[str]  # "sgd" first, then the boosted arm (and the controls)
    held_out: dict[str, Tensor]  # arm -> (seeds, steps + 1) held-out loss after 0..steps updates
    train: dict[str, Tensor]  # arm -> (seeds, steps + 1) loss on the training set
    steps_to_sgd_final: dict[str, list[int | None]]  # arm -> per seed: first step at SGD's final held-out loss
    speedup: dict[str, list[float]]  # arm -> per seed: SGD's steps / the arm's steps (0.0 if never reached)
    bayes_ce: list[float]  # per seed: cross-entropy of the exact predictive on the held-out targets
    bayes_entropy: list[float]  # per seed: its mean entropy (the held-out Bayes floor)
    row_floor: float  # the floor with perfectly identified symbols (1.829 nats)
    snapshots: dict[str, dict[str, Tensor]] = field(repr=False, default_factory=dict)  # arm -> weight -> (seeds, n, ...)
    snapshot_steps: list[int] = field(default_factory=list)
    n_params: int = 0

    def summary(self, arm: str | None = None, level: float = 0.95) -> dict[str, float]:
        """Mean speedup of ``arm`` (default: the values arm) with its t confidence interval."""
        arm = arm or self.arms[1]
        mean, lo, hi = mean_ci(self.speedup[arm], level)
        return {"arm": arm, "mean": mean, "low": lo, "high": hi, "level": level}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: per-seed steps, speedups, final losses, floors and the summaries."""
        finals = {a: self.held_out[a][:, -1].tolist() for a in self.arms}
        return {"config": self.config, "n_params": self.n_params, "arms": self.arms,
                "steps_to_sgd_final": self.steps_to_sgd_final, "speedup": self.speedup,
                "summary": {a: self.summary(a) for a in self.arms[1:]},
                "final_held_out_loss": finals, "final_train_loss": {a: self.train[a][:, -1].tolist() for a in self.arms},
                "bayes_ce_held_out": self.bayes_ce, "bayes_entropy_held_out": self.bayes_entropy,
                "row_floor_nats": self.row_floor, "paper": {k: asdict(v) for k, v in paper_em_figures().items()}}


def paper_em_figures() -> dict[str, Published]:
    """Paper II's published EM-vs-SGD numbers (from :mod:`bwt_lite.paper`)."""
    return {k: paper_figure(f"em_vs_sgd_{k}") for k in ("speedup", "em_steps", "sgd_steps")}


def sticky_sets(cfg: EMConfig, seed: int, tunnel: Sticky | None = None) -> tuple[Any, Any, Tensor]:
    """The training and held-out sequences of one seed: (train episodes, held-out episodes, the
    symbols the held-out tokens show). Training comes from generator ``seed``, held-out from
    ``EVAL_SEED_BASE + seed``."""
    tunnel = tunnel if tunnel is not None else Sticky(L=cfg.L)
    train = tunnel.sample(cfg.train_episodes, torch.Generator().manual_seed(seed))
    held, shown = tunnel.sample_symbols(cfg.held_out_episodes, torch.Generator().manual_seed(EVAL_SEED_BASE + seed))
    return train, held, shown


def _per_run_ce(logits: Tensor, target: Tensor) -> Tensor:
    """Mean cross-entropy per run: logits (R, B, L, C), target (R, B, L) -> (R,)."""
    R = logits.shape[0]
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="none")
    return ce.view(R, -1).mean(1)


def em_vs_sgd(cfg: EMConfig = EMConfig(), tunnel: Sticky | None = None) -> EMResult:
    """Plain SGD against the boosted-value (and optional control) arms on the sticky chain."""
    tunnel = tunnel if tunnel is not None else Sticky(L=cfg.L)
    if not isinstance(tunnel, Sticky):
        raise ValueError(f"tunnel must be a sticky chain (Sticky), got {type(tunnel).__name__}")
    arms = cfg.arms()
    names, n_arms, S = list(arms), len(arms), cfg.seeds
    sets = [sticky_sets(cfg, s, tunnel) for s in range(S)]
    heads = [SingleHead(tunnel.d, 10, 15, tunnel.S, init_std=cfg.init_std, seed=s) for s in range(S)]
    # runs are ordered arm-major: run r = a * S + s
    weights = {w: torch.stack([getattr(heads[s], w).detach() for _ in names for s in range(S)])
               .clone().requires_grad_(True) for w in WEIGHTS}  # (runs, a, b)
    mults = {w: torch.tensor([arms[a].get(w, 1.0) for a in names for _ in range(S)]).view(-1, 1, 1) for w in WEIGHTS}
    x_tr = torch.stack([sets[s][0].inputs for _ in names for s in range(S)])
    y_tr = torch.stack([sets[s][0].target for _ in names for s in range(S)])
    x_ho = torch.stack([sets[s][1].inputs for _ in names for s in range(S)])
    y_ho = torch.stack([sets[s][1].target for _ in names for s in range(S)])
    ordered = [weights[w] for w in WEIGHTS]

    train = torch.empty(n_arms * S, cfg.steps + 1, dtype=torch.float64)
    held = torch.empty_like(train)
    snap_steps = list(range(0, cfg.steps + 1, cfg.track_every))
    if snap_steps[-1] != cfg.steps:
        snap_steps.append(cfg.steps)
    snap_at = set(snap_steps)
    snaps: dict[str, list[Tensor]] = {w: [] for w in WEIGHTS}
    for step in range(cfg.steps + 1):
        loss = _per_run_ce(head_forward(x_tr, *ordered).logits, y_tr)
        with torch.no_grad():
            train[:, step] = loss.detach().double()
            held[:, step] = _per_run_ce(head_forward(x_ho, *ordered).logits, y_ho).double()
            if step in snap_at:
                for w in WEIGHTS:
                    snaps[w].append(weights[w].detach().clone())
        if step == cfg.steps:
            break
        grads = torch.autograd.grad(loss.sum(), ordered)  # runs are independent: per-run gradients
        with torch.no_grad():
            for w, g in zip(WEIGHTS, grads):
                weights[w] -= cfg.lr * mults[w] * g

    by_arm = lambda t: {a: t[i * S:(i + 1) * S] for i, a in enumerate(names)}  # noqa: E731
    held_by, train_by = by_arm(held), by_arm(train)
    sgd_final = held_by["sgd"][:, -1]
    steps_to: dict[str, list[int | None]] = {}
    for a in names:
        steps_to[a] = [first_step_at_or_below(held_by[a][s], sgd_final[s].item()) for s in range(S)]
    speedup = {a: [(steps_to["sgd"][s] / n if n else 0.0) for s, n in enumerate(steps_to[a])] for a in names}
    bayes_ce, bayes_h = [], []
    for _, ho, _ in sets:
        bayes_ce.append(-ho.probs.gather(2, ho.target.unsqueeze(2)).log().mean().item())
        bayes_h.append((entropy_bits(ho.probs).mean() * LN2).item())
    stacked = {w: torch.stack(v, 1) for w, v in snaps.items()}  # (runs, n_snap, ...)
    return EMResult(
        config={**asdict(cfg), "tunnel": tunnel.config()}, arms=names, held_out=held_by, train=train_by,
        steps_to_sgd_final=steps_to, speedup=speedup, bayes_ce=bayes_ce, bayes_entropy=bayes_h,
        row_floor=row_entropy_floor_nats(tunnel.T),
        snapshots={a: {w: stacked[w][i * S:(i + 1) * S] for w in WEIGHTS} for i, a in enumerate(names)},
        snapshot_steps=snap_steps, n_params=heads[0].n_params,
    )


def snapshot_head(result: EMResult, arm: str, seed: int, index: int) -> SingleHead:
    """The head of run (``arm``, ``seed``) at snapshot ``index`` (step ``result.snapshot_steps[index]``)."""
    if arm not in result.snapshots:
        raise ValueError(f"unknown arm {arm!r}; allowed: {', '.join(result.arms)}")
    snap = result.snapshots[arm]
    d_x, d_k = snap["W_Q"].shape[-2:]
    head = SingleHead(d_x, d_k, snap["W_V"].shape[-1], snap["W_O"].shape[-1])
    with torch.no_grad():
        for w in WEIGHTS:
            getattr(head, w).copy_(snap[w][seed, index])
    return head


def _pattern_similarity(alpha: Tensor, final: Tensor) -> Tensor:
    """1 - mean total variation between attention rows (rows are distributions over keys)."""
    return 1.0 - 0.5 * (alpha.double() - final.double()).abs().sum(-1).mean()


def _rel_dist(a: Tensor, b: Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def head_dynamics(result: EMResult, arm: str, seed: int = 0, cfg: EMConfig | None = None) -> dict[str, list[float]]:
    """Routing against values over training for one run, at every snapshot:

    - ``pattern``: similarity of the held-out attention pattern to the final one (1 - mean TV per row);
    - ``routing``: relative distance of the bilinear form ``W_Q W_K^T`` (which fixes the scores) to
      its final value;
    - ``values``: relative distance of the value-to-logit map ``W_V W_O`` to its final value;
    - ``loss``: held-out loss minus the held-out Bayes entropy (nats);
    - ``steps``: the snapshot steps.
    """
    cfg = cfg or _config_of(result)
    _, held, _ = sticky_sets(cfg, seed, _tunnel_of(result))
    n = len(result.snapshot_steps)
    heads = [snapshot_head(result, arm, seed, i) for i in range(n)]
    with torch.no_grad():
        alphas = [h.parts(held.inputs).alpha for h in heads]
        qk = [h.W_Q @ h.W_K.T for h in heads]
        vo = [h.W_V @ h.W_O for h in heads]
    curve = result.held_out[arm][seed]
    return {
        "steps": list(result.snapshot_steps),
        "pattern": [_pattern_similarity(a, alphas[-1]).item() for a in alphas],
        "routing": [_rel_dist(m, qk[-1]) for m in qk],
        "values": [_rel_dist(m, vo[-1]) for m in vo],
        "loss": [curve[s].item() - result.bayes_entropy[seed] for s in result.snapshot_steps],
    }


def same_symbol_attention(result: EMResult, arm: str, seed: int = 0,
                          cfg: EMConfig | None = None) -> dict[str, list[float] | float]:
    """How much attention the held-out queries of run (``arm``, ``seed``) put on keys that show the
    same symbol as the query's own token, at every snapshot (``mass``), against ``uniform``: the share
    such keys would get from uniform causal attention. Those keys are the ones whose values carry the
    query's hypothesis (its current symbol): the E-step's responsibilities in the EM reading."""
    cfg = cfg or _config_of(result)
    _, held, shown = sticky_sets(cfg, seed, _tunnel_of(result))
    L = shown.shape[1]
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    same = (shown.unsqueeze(2) == shown.unsqueeze(1)) & causal  # (B, query, key)
    uniform = (same.double().sum(-1) / causal.sum(-1)).mean().item()
    mass = []
    for i in range(len(result.snapshot_steps)):
        with torch.no_grad():
            alpha = snapshot_head(result, arm, seed, i).parts(held.inputs).alpha
        mass.append((alpha.double() * same).sum(-1).mean().item())
    return {"steps": list(result.snapshot_steps), "mass": mass, "uniform": uniform}


def routing_demo(result: EMResult, arm: str, seed: int = 0, episode: int = 0, position: int = 16,
                 steps: int = 60, lr: float = 20.0, cfg: EMConfig | None = None) -> tuple[ScoreDescent, list[int]]:
    """The routing law on one real query: take the trained head of run (``arm``, ``seed``), the held-out
    query at (``episode``, ``position``) and its keys ``0..position``; hold the values ``v_j`` and the
    readout fixed and descend the query's cross-entropy against the exact predictive (a soft target)
    on its scores alone, from the head's own scores. Returns the descent and the symbol each key shows
    (the query's own is the last)."""
    cfg = cfg or _config_of(result)
    if not 0 <= episode < cfg.held_out_episodes:
        raise ValueError(f"episode must be in 0..{cfg.held_out_episodes - 1}, got {episode}")
    if not 0 <= position < cfg.L:
        raise ValueError(f"position must be in 0..{cfg.L - 1}, got {position}")
    _, held, shown = sticky_sets(cfg, seed, _tunnel_of(result))
    head = snapshot_head(result, arm, seed, len(result.snapshot_steps) - 1)
    with torch.no_grad():
        f = head.parts(held.inputs[episode])
    keys = slice(0, position + 1)
    trace = free_score_descent(f.v[keys], head.W_O, held.probs[episode, position], steps=steps, lr=lr,
                               scores=f.scores[position, keys])
    return trace, shown[episode, keys].tolist()


def _config_of(result: EMResult) -> EMConfig:
    return EMConfig(**{k: v for k, v in result.config.items() if k in EMConfig.__dataclass_fields__})


def _tunnel_of(result: EMResult) -> Sticky:
    return Sticky(**{k: v for k, v in result.config["tunnel"].items() if k != "tunnel"})


# ------------------------------------------------------------------------------------------------
# The bijection transformer through the trainer


# Sizes of the bijection experiment. "lite": the lite preset's tunnel and model (V = 20, d = 128,
# 2 layers, 8 heads) on a 4,000-step schedule, target 0.05 bits. "small": sized for the chapter on
# two CPU cores: V = 10, d = 64, 2 layers, 4 heads, 600 steps, target 0.1 bits.
BIJECTION_SIZES: dict[str, dict[str, Any]] = {
    "lite": {"V": 20, "model": {}, "train": {"steps": 4000, "eval_every": 100, "eval_episodes": 512},
             "target_bits": 0.05, "track_every": 100},
    "small": {"V": 10, "model": {"d_model": 64, "n_layers": 2, "n_heads": 4},
              "train": {"steps": 600, "warmup_steps": 50, "eval_every": 25, "eval_episodes": 256},
              "target_bits": 0.1, "track_every": 25},
}


def bijection_preset(size: str = "small", mult: float = 1.0, seed: int = 0) -> Preset:
    """The bijection transformer of the experiment at ``size`` ("small" or "lite") with value
    learning-rate multiplier ``mult`` (the lite recipe otherwise: AdamW, warmup, cosine, wd 0.01)."""
    if size not in BIJECTION_SIZES:
        raise ValueError(f"unknown size {size!r}; allowed: {', '.join(BIJECTION_SIZES)}")
    spec = BIJECTION_SIZES[size]
    p = get_preset("bijection", "transformer", "lite", value_lr_mult=float(mult), seed=seed, **spec["train"])
    V = spec["V"]
    if V != p.tunnel["V"]:
        t = make_tunnel(**{**p.tunnel, "V": V, "L": V - 1})
        p = replace(p, tunnel=t.config(), model=replace(p.model, vocab_size=t.vocab_size, answer_tokens=t.answer_tokens,
                                                         n_positions=t.seq_len + 1))
    return replace(p, model=replace(p.model, **spec["model"]))


@dataclass
class BijectionRun:
    mult: float
    seed: int
    history: list[dict[str, float]]  # the trainer's held-out evaluations
    steps_to_target: int | None  # first evaluation step with entropy MAE <= target
    stability: dict[str, list[float]]  # see attention_stability
    train_time_s: float


def attention_stability(preset: Preset, states: list[tuple[int, dict[str, Tensor]]], episodes: int = 64,
                        seed: int = 0) -> dict[str, list[float]]:
    """Attention pattern against value weights over training, from model snapshots ``(step, state)``:

    - ``pattern``: similarity of every layer's attention pattern (all heads, prediction positions,
      ``episodes`` held-out episodes) to the final snapshot's, 1 - mean TV per query row;
    - ``values``: relative distance of the value projections (all layers) to the final ones;
    - ``routing``: the same for the query and key projections;
    - ``steps``.
    """
    tunnel = make_tunnel(**preset.tunnel)
    ep = tunnel.sample(episodes, torch.Generator().manual_seed(EVAL_SEED_BASE + seed))
    model = build_model(preset.model)
    names = [n for n, _ in model.named_modules() if n.endswith("attn.hook_pattern")]
    patterns, values, routing = [], [], []
    for _, state in states:
        model.load_state_dict(state)
        model.eval()
        with torch.no_grad():
            _, cache = run_with_cache(model, ep.inputs, ep.positions, names=names)
        patterns.append(torch.stack([cache[n][:, :, ep.positions] for n in names]))
        values.append(torch.cat([v.flatten() for k, v in state.items() if k.endswith("attn.v.weight")]))
        routing.append(torch.cat([v.flatten() for k, v in state.items() if k.endswith(("attn.q.weight", "attn.k.weight"))]))
    return {"steps": [s for s, _ in states],
            "pattern": [_pattern_similarity(p, patterns[-1]).item() for p in patterns],
            "values": [_rel_dist(v, values[-1]) for v in values],
            "routing": [_rel_dist(r, routing[-1]) for r in routing]}


def value_lr_on_bijection(mults: tuple[float, ...] = (1.0, 10.0), seeds: tuple[int, ...] = (0,), size: str = "small",
                          target_bits: float | None = None, progress: bool = False) -> list[BijectionRun]:
    """Train the bijection transformer once per (multiplier, seed) and measure the steps to
    ``target_bits`` entropy MAE on held-out episodes (default: the size's target) and the attention
    stability (snapshots every ``track_every`` steps of the size)."""
    runs = []
    for mult in mults:
        for seed in seeds:
            preset = bijection_preset(size, mult, seed)  # checks size
            spec = BIJECTION_SIZES[size]
            target = spec["target_bits"] if target_bits is None else float(target_bits)
            states = [(0, init_model(preset.model, seed).state_dict())]  # fit's own initialisation
            t0 = time.perf_counter()
            run = RunOptions(progress=progress, ckpt_every=spec["track_every"],
                             desc=f"bijection value lr x{mult:g} seed {seed}")
            _, st = fit(preset.tunnel, preset.model, preset.train, run=run,
                        on_checkpoint=lambda s: states.append((s.step, s.model)))
            elapsed = time.perf_counter() - t0
            hit = next((r["step"] for r in st.history if r["entropy_mae_bits"] <= target), None)
            runs.append(BijectionRun(mult=float(mult), seed=seed, history=st.history, steps_to_target=hit,
                                     stability=attention_stability(preset, states, seed=seed), train_time_s=elapsed))
    return runs
