"""SULA: in-context labelling with a hidden label, the exact posterior, and what a language model does.

Generative process of one prompt: a latent label y is 0 or 1 with probability 1/2 each. The prompt
shows k examples "Input: <word> / Label: <label>"; each shown label equals y with probability
``accuracy`` (0.9) and is the other label otherwise, independently; the words carry no information.
The prompt ends with a new input and "Label:". With m examples showing label 0 and n showing label 1,

    P(y = 0 | prompt) = a^m (1-a)^n / (a^m (1-a)^n + a^n (1-a)^m) = sigmoid((m - n) logit(a)),

Paper III's "Bayes posterior" (its entropy is the target the paper compares with). The label of the
*next* example has the predictive P(label 0) = a P(y=0) + (1-a) P(y=1), which never drops below
entropy H(0.9) = 0.469 bits; both are reported. The model's posterior is the softmax over the logits of
the two label tokens at the last position.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import torch

from .diagnostics import pca_summary
from .probe import encode, last_token_states, model_parts
from .prompts import LABEL_CANDIDATES, SULA_WORDS

K_VALUES = (0, 1, 2, 4, 8)


@dataclass
class SulaPrompt:
    text: str
    k: int  # number of labelled examples
    shown: list[int]  # the label (0 or 1) shown in each example
    latent: int  # the hidden label y
    query_label: int  # a draw of the next example's label under the same process (for calibration)

    @property
    def m(self) -> int:
        """Examples showing label 0."""
        return self.shown.count(0)

    @property
    def n(self) -> int:
        """Examples showing label 1."""
        return self.shown.count(1)


def pick_labels(tokenizer, candidates: list[str] | None = None) -> tuple[tuple[str, str], tuple[int, int]]:
    """The first two candidate nonsense words that encode to a single token after a space, and their ids."""
    found = []
    for word in candidates or LABEL_CANDIDATES:
        ids = tokenizer(" " + word, add_special_tokens=False)["input_ids"]
        if len(ids) == 1 and ids[0] != getattr(tokenizer, "unk_token_id", None) and ids[0] not in [i for _, i in found]:
            found.append((word, ids[0]))
        if len(found) == 2:
            return (found[0][0], found[1][0]), (found[0][1], found[1][1])
    raise ValueError("fewer than two candidate labels encode to a single token; pass other candidates")


def generate(labels: tuple[str, str], k_values: tuple[int, ...] = K_VALUES, per_k: int = 40,
             accuracy: float = 0.9, seed: int = 0) -> list[SulaPrompt]:
    """``per_k`` prompts for each k in ``k_values`` (seeded)."""
    if len(labels) != 2 or labels[0] == labels[1]:
        raise ValueError(f"labels must be two different words, got {labels!r}")
    if not 0.5 < accuracy < 1:
        raise ValueError(f"accuracy must be in (0.5, 1), got {accuracy}")
    if per_k < 1 or any(k < 0 for k in k_values):
        raise ValueError(f"per_k must be >= 1 and every k >= 0, got per_k={per_k}, k_values={k_values}")
    rng = random.Random(seed)
    out = []
    for k in k_values:
        for _ in range(per_k):
            y = rng.randrange(2)
            shown = [y if rng.random() < accuracy else 1 - y for _ in range(k)]
            query = y if rng.random() < accuracy else 1 - y
            words = rng.sample(SULA_WORDS, k + 1)
            lines = [f"Input: {w}\nLabel: {labels[s]}\n" for w, s in zip(words, shown)]
            out.append(SulaPrompt("".join(lines) + f"Input: {words[-1]}\nLabel:", k, shown, y, query))
    return out


def bayes_posterior(m, n, accuracy: float = 0.9) -> torch.Tensor:
    """P(latent label = 0 | m examples show label 0, n show label 1), float64."""
    m, n = torch.as_tensor(m, dtype=torch.float64), torch.as_tensor(n, dtype=torch.float64)
    return torch.sigmoid((m - n) * math.log(accuracy / (1 - accuracy)))


def bayes_predictive(m, n, accuracy: float = 0.9) -> torch.Tensor:
    """P(the next example shows label 0 | m, n)."""
    p = bayes_posterior(m, n, accuracy)
    return accuracy * p + (1 - accuracy) * (1 - p)


def binary_entropy_bits(p) -> torch.Tensor:
    """Entropy in bits of a two-outcome distribution (p, 1 - p)."""
    p = torch.as_tensor(p, dtype=torch.float64).clamp(0, 1)
    p = torch.minimum(p, 1 - p)  # H(p) = H(1 - p) exactly, so equal evidence for either label ties
    q = 1 - p
    return -(torch.where(p > 0, p * p.log2(), torch.zeros_like(p)) + torch.where(q > 0, q * q.log2(), torch.zeros_like(q)))


@dataclass
class SulaRun:
    prompts: list[SulaPrompt]
    label_ids: tuple[int, int]
    p_model: torch.Tensor  # (N,) the model's P(label 0) from the two label logits
    residual: torch.Tensor  # (N, L+1, d_model) last-token residual stream (input of block 0, each block's output)
    final: torch.Tensor  # (N, d_model) last-token state after the final norm
    accuracy: float = 0.9
    mass: torch.Tensor | None = None  # (N,) probability the full next-token softmax puts on the two labels

    @property
    def k(self) -> torch.Tensor:
        return torch.tensor([p.k for p in self.prompts])

    @property
    def h_bayes(self) -> torch.Tensor:
        """Entropy (bits) of the Bayes posterior over the latent label."""
        return binary_entropy_bits(bayes_posterior([p.m for p in self.prompts], [p.n for p in self.prompts], self.accuracy))

    @property
    def h_predictive(self) -> torch.Tensor:
        """Entropy (bits) of the Bayes predictive for the next label."""
        return binary_entropy_bits(bayes_predictive([p.m for p in self.prompts], [p.n for p in self.prompts], self.accuracy))

    @property
    def h_model(self) -> torch.Tensor:
        return binary_entropy_bits(self.p_model)


def two_label_probability(logits: torch.Tensor, label_ids: tuple[int, int]) -> torch.Tensor:
    """softmax over the two label logits: P(label 0), for logits (..., vocab)."""
    pair = logits[..., list(label_ids)].double()
    return pair.softmax(-1)[..., 0]


def run_model(model, tokenizer, prompts: list[SulaPrompt], label_ids: tuple[int, int], accuracy: float = 0.9) -> SulaRun:
    """The model's label posterior and last-token states for every prompt."""
    ps, res, fin, mass = [], [], [], []
    for pr in prompts:
        r, f, logits = last_token_states(model, encode(tokenizer, pr.text))
        ps.append(two_label_probability(logits, label_ids))
        mass.append(logits.double().softmax(-1)[list(label_ids)].sum())
        res.append(r)
        fin.append(f)
    return SulaRun(prompts, tuple(label_ids), torch.stack(ps), torch.stack(res), torch.stack(fin), accuracy,
                   torch.stack(mass))


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()
    den = (x.norm() * y.norm()).item()
    return (x @ y).item() / den if den > 0 else float("nan")


def ranks(x: torch.Tensor) -> torch.Tensor:
    """Ranks 1..N with ties given their average rank."""
    x = x.double()
    order = x.argsort()
    r = torch.empty_like(x)
    r[order] = torch.arange(1, len(x) + 1, dtype=torch.float64)
    for v in x.unique():
        tie = x == v
        r[tie] = r[tie].mean()
    return r


def spearman(x: torch.Tensor, y: torch.Tensor) -> float:
    return pearson(ranks(x), ranks(y))


def calibration(p: torch.Tensor, outcome: torch.Tensor, bins: int = 5) -> tuple[float, list[tuple[float, float, int]]]:
    """Expected calibration error of P(label 0) = ``p`` against 0/1 outcomes (1 = label 0), and the
    reliability table [(mean predicted, observed frequency, count)] over equal-width bins."""
    p, o = p.double(), outcome.double()
    idx = (p * bins).long().clamp(max=bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        sel = idx == b
        if sel.any():
            mp, fo, c = p[sel].mean().item(), o[sel].mean().item(), int(sel.sum())
            table.append((mp, fo, c))
            ece += c / len(p) * abs(mp - fo)
    return ece, table


@dataclass
class SulaMetrics:
    mae_posterior: float  # mean |H_model - H(Bayes posterior)|, bits (Paper III's comparison)
    mae_predictive: float  # mean |H_model - H(Bayes predictive)|, bits
    per_k: list[dict]  # one row per k: mean entropies and MAEs
    ece: float  # calibration of P(label 0) against the sampled next label
    reliability: list[tuple[float, float, int]]
    rho_pc1: float  # Spearman rho between PC1 of the final last-token state and H(Bayes posterior)
    r_pc1: float  # Pearson r of the same
    pc1_variance: float  # fraction of variance on PC1 of those states
    rho_within_k: float  # the same Spearman rho computed within each k (count-weighted mean): length controlled
    label_mass: float = float("nan")  # mean probability the full next-token softmax gives the two labels together
    blind_mae: float = float("nan")  # the best prompt-blind predictor's MAE: one entropy for every prompt
    extra: dict = field(default_factory=dict)


def blind_entropy_mae(h_bayes: torch.Tensor) -> float:
    """The entropy MAE of the best predictor that ignores the prompt: one entropy for every prompt, the
    median of the Bayes entropies (it minimises the mean absolute error). A model must beat it to show
    that it reads the labels; the 50/50 predictor (entropy 1 bit) is one such predictor, usually worse."""
    if h_bayes.numel() == 0:
        raise ValueError("h_bayes must be non-empty")
    return (h_bayes - h_bayes.median()).abs().mean().item()


def evaluate(run: SulaRun) -> SulaMetrics:
    """Entropy MAEs, per-k table, calibration and the PC1-entropy correlation of one run."""
    hb, hp, hm = run.h_bayes, run.h_predictive, run.h_model
    rows = []
    for k in sorted(set(run.k.tolist())):
        s = run.k == k
        rows.append(dict(k=k, n=int(s.sum()), h_model=hm[s].mean().item(), h_bayes=hb[s].mean().item(),
                         h_predictive=hp[s].mean().item(), mae=(hm[s] - hb[s]).abs().mean().item(),
                         mae_predictive=(hm[s] - hp[s]).abs().mean().item()))
    ece, table = calibration(run.p_model, torch.tensor([p.query_label == 0 for p in run.prompts]))
    pca = pca_summary(run.final)
    pc1 = pca.scores[:, 0]
    # H_Bayes falls with k, and so does anything that tracks prompt length: correlate within each k too.
    num, den = 0.0, 0
    for k in sorted(set(run.k.tolist())):
        s = run.k == k
        if hb[s].unique().numel() > 1 and pc1[s].unique().numel() > 1:
            num += spearman(pc1[s], hb[s]) * int(s.sum())
            den += int(s.sum())
    return SulaMetrics((hm - hb).abs().mean().item(), (hm - hp).abs().mean().item(), rows, ece, table,
                       spearman(pc1, hb), pearson(pc1, hb), pca.pc1, num / den if den else float("nan"),
                       run.mass.mean().item() if run.mass is not None else float("nan"), blind_entropy_mae(hb))


@dataclass
class EntropyAxis:
    layer: int  # index into the residual: 0 = input of block 0, l = output of block l-1
    direction: torch.Tensor  # (d,) unit vector
    center: torch.Tensor  # (d,) mean state of the fitting prompts
    scale: float  # standard deviation of the projections on the axis
    r2_train: float
    r2_heldout: float  # two-fold cross-validated R^2 of the ridge fit


def _ridge(x: torch.Tensor, y: torch.Tensor, ridge: float) -> torch.Tensor:
    d = x.shape[1]
    lam = ridge * (x * x).sum() / d
    return torch.linalg.solve(x.T @ x + lam * torch.eye(d, dtype=x.dtype), x.T @ y)


def fit_entropy_axis(states: torch.Tensor, h: torch.Tensor, layer: int, ridge: float = 1.0, seed: int = 0) -> EntropyAxis:
    """Ridge regression of entropy ``h`` (N,) on ``states`` (N, d); the axis is the fitted weight
    direction. R^2 held out by two folds of a seeded split."""
    if states.dim() != 2 or states.shape[0] != h.shape[0] or states.shape[0] < 4:
        raise ValueError(f"states must be (N, d) with N >= 4 matching h (N,), got {tuple(states.shape)} and {tuple(h.shape)}")
    x, y = states.double(), h.double()
    center = x.mean(0)

    def r2(pred, true):
        return 1 - ((pred - true) ** 2).sum().item() / max(((true - true.mean()) ** 2).sum().item(), 1e-12)

    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    folds = perm[: len(y) // 2], perm[len(y) // 2:]
    pred = torch.empty_like(y)
    for a, b in (folds, folds[::-1]):
        xm, ym = x[a].mean(0), y[a].mean()
        pred[b] = (x[b] - xm) @ _ridge(x[a] - xm, y[a] - ym, ridge) + ym
    w = _ridge(x - center, y - y.mean(), ridge)
    fit = (x - center) @ w + y.mean()
    u = w / w.norm()
    return EntropyAxis(layer, u, center, ((x - center) @ u).std().item(), r2(fit, y), r2(pred, y))


@torch.no_grad()
def intervene(model, tokenizer, prompts: list[SulaPrompt], label_ids: tuple[int, int], axis: EntropyAxis,
              mode: str = "remove", alpha: float = 0.0, direction: torch.Tensor | None = None) -> torch.Tensor:
    """The model's P(label 0) for each prompt when the last token's residual at ``axis.layer`` is edited:
    "remove" sets its component along the axis to that of ``axis.center``; "shift" adds ``alpha`` times
    ``axis.scale`` along it. ``direction`` replaces the axis direction (for a random-direction control)."""
    if mode not in ("remove", "shift"):
        raise ValueError(f"mode must be 'remove' or 'shift', got {mode!r}")
    _, _, blocks, _, _ = model_parts(model)
    if not 1 <= axis.layer <= len(blocks):
        raise ValueError(f"axis.layer must be in 1..{len(blocks)} (a block's output), got {axis.layer}")
    dev = next(model.parameters()).device
    u = (axis.direction if direction is None else direction / direction.norm()).to(dev)
    c = axis.center.to(dev)

    def hook(module, args, output):
        h = output[0] if isinstance(output, tuple) else output
        x = h[0, -1].double()
        x = x - ((x - c) @ u) * u if mode == "remove" else x + alpha * axis.scale * u
        h[0, -1] = x.to(h.dtype)
        return output

    handle = blocks[axis.layer - 1].register_forward_hook(hook)
    try:
        ps = [two_label_probability(model(encode(tokenizer, p.text).unsqueeze(0).to(dev), use_cache=False).logits[0, -1],
                                    label_ids) for p in prompts]
    finally:
        handle.remove()
    return torch.stack(ps).cpu()
