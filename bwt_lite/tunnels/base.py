"""The common shape of a wind tunnel: fresh random episodes with an exact Bayesian answer.

A tunnel samples a batch of episodes from a ``torch.Generator`` (vectorised, no Python loop per
episode, no global RNG) and returns an :class:`Episodes`: the model input, the prediction positions,
the exact posterior predictive at those positions (float64) and the sampled target.

Arguments of :meth:`Tunnel.sample` (every tunnel):

- ``batch_size``: an int >= 1 and at most :attr:`Tunnel.max_batch_size`, so that the tensors of one
  call (the tunnel's :attr:`Tunnel.episode_bytes` per episode) stay within :data:`MAX_SAMPLE_BYTES`;
  draw more episodes in several calls.
- ``generator``: a ``torch.Generator`` (its device is where the episodes are made). ``None`` is an
  error, not a default: every episode is drawn from an explicit generator so that it can be
  reproduced, and a silently created default generator would hand out the same episodes on every
  call.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

import torch
from torch import Tensor

from ..arguments import check_int

# The most memory one ``sample`` call may allocate (bytes, estimated by ``Tunnel.episode_bytes``).
MAX_SAMPLE_BYTES = 2 * 1024 ** 3
# Seeds accepted by torch.Generator.manual_seed (unsigned 64-bit).
MAX_SEED = 2 ** 64 - 1


def format_bytes(n: float) -> str:
    """``n`` bytes as a short human-readable size (``2.0 GiB``)."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # unreachable


def check_generator(generator: Any) -> torch.Generator:
    """``generator`` itself, checked to be a ``torch.Generator`` (``None`` is rejected, see above)."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, e.g. torch.Generator().manual_seed(0); "
                        f"got {generator!r} ({type(generator).__name__}). None is not accepted: episodes "
                        f"come from an explicit generator so that they can be reproduced")
    return generator


def check_seed(name: str, value: Any) -> int:
    """A generator seed: an int in 0..2**64-1 (the range of ``torch.Generator.manual_seed``)."""
    check_int(name, value, 0, f"0 <= {name} <= 2**64 - 1")
    if value > MAX_SEED:
        raise ValueError(f"{name} must be <= 2**64 - 1 (0 <= {name} <= 2**64 - 1), got {value}")
    return value


def check_size(args: str, nbytes: int, what: str = "one episode") -> None:
    """Refuse sizes whose tensors would exceed :data:`MAX_SAMPLE_BYTES`, naming the arguments."""
    if nbytes > MAX_SAMPLE_BYTES:
        raise ValueError(f"{args} too large: {what} would need about {format_bytes(nbytes)} ({nbytes:,} bytes), "
                         f"more than MAX_SAMPLE_BYTES = {format_bytes(MAX_SAMPLE_BYTES)} "
                         f"({MAX_SAMPLE_BYTES:,} bytes) allowed for one sample call")


@dataclass
class Episodes:
    """A batch of episodes. ``P`` is the number of prediction positions, ``C`` of answer classes."""

    inputs: Tensor  # (B, T) int64 token ids, or (B, T, F) float32 features
    positions: Tensor  # (P,) int64 prediction positions, the same for every episode
    target: Tensor  # (B, P) sampled answer: class index (int64) or value (float)
    probs: Tensor | None = None  # (B, P, C) float64 exact posterior predictive (categorical)
    mean: Tensor | None = None  # (B, P) float64 exact predictive mean (Gaussian)
    var: Tensor | None = None  # (B, P) float64 exact predictive variance (Gaussian)

    @property
    def batch_size(self) -> int:
        return self.inputs.shape[0]

    @property
    def mask(self) -> Tensor:
        """(B, T) boolean mask of the prediction positions."""
        m = torch.zeros(self.inputs.shape[:2], dtype=torch.bool, device=self.inputs.device)
        m[:, self.positions] = True
        return m

    def to(self, device: torch.device | str) -> "Episodes":
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return Episodes(**{k: (v.to(device) if isinstance(v, Tensor) else v) for k, v in moved.items()})

    def __getitem__(self, idx: int | slice) -> "Episodes":
        """Select episodes (not positions)."""
        sel = slice(idx, idx + 1) if isinstance(idx, int) else idx
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = v if (v is None or f.name == "positions") else v[sel]
        return Episodes(**out)


@dataclass(frozen=True)
class Card:
    """What the primitives table and the scorecard need to know about one tunnel (or one variant of it,
    a cell of that table of its own), in one place beside the tunnel's class.

    A model *realises* the primitive when its held-out score passes ``threshold`` (metric, ``"max"`` or
    ``"min"``, value) **and**, in each metric of ``references``, scores at most ``margin`` times the
    strongest (lowest) of those exact baselines, which lack the primitive. ``max_window``: the top of
    the window-filter ladder on an HMM-like tunnel (the longest window the tables list and the bar
    of transport), else None.
    """

    primitive: str
    threshold: tuple[str, str, float]
    references: dict[str, tuple[str, ...]]
    margin: float = 0.5
    max_window: int | None = None
    variant: str | None = None  # the tunnel variant of this cell (None: the tunnel's default)
    why: str = ""  # the reasons for the threshold and the bar, for the reader of the code
    in_table: bool = True  # a row of the primitives table (every architecture shipped for it)


def window_references(top: int) -> dict[str, tuple[str, ...]]:
    """The references of a transport cell: every window filter of 0..``top`` symbols, in both metrics."""
    names = tuple(f"window-{w}" for w in range(top + 1))
    return {"entropy_mae_bits": names, "kl_bits": names}


class Tunnel:
    """Base class: subclasses set the class attributes and implement :meth:`sample`."""

    name: ClassVar[str]
    kind: ClassVar[str] = "categorical"  # "categorical" or "gaussian"
    variants: ClassVar[tuple[str, ...]] = ("default",)
    length_arg: ClassVar[str | None] = None  # constructor argument that sets the episode length (eval --length)
    accuracy_on: ClassVar[str] = "all"  # "all" positions, or "certain": where Bayes is a point mass (recall)
    cards: ClassVar[dict[str, Card]] = {}  # the primitives table's cells of this tunnel, by cell name
    # what every architecture trains on here unless its recipe says otherwise: "sampled" answers, or "soft"
    # targets (the exact posterior), the HMM's choice for every architecture, as the authors' HMM recipe did
    train_target: ClassVar[str] = "sampled"
    task: ClassVar[str] = "does the task"  # what its model must do, in plain words (the claims' reasons)
    # Its exact baselines (bwt_lite.baselines), weakest first: named ones (baseline name -> the name of
    # its function in bwt_lite.baselines), then, where ``window_baseline`` names a function, the ladder
    # window-w for w = ``window_range[0]`` .. min(the caller's top, ``window_range[1]``, if set).
    baselines: ClassVar[dict[str, str]] = {"prior": "uniform_prior"}
    window_baseline: ClassVar[str | None] = None
    window_range: ClassVar[tuple[int, int | None]] = (0, None)

    # Filled in by subclasses' __init__:
    seq_len: int  # T, tokens per episode
    vocab_size: int  # input vocabulary (0 for float-feature tunnels)
    n_features: int = 0  # float features per position (0 for token tunnels)
    n_classes: int  # C, answer classes (1 for Gaussian tunnels)
    answer_tokens: tuple[int, ...] | None  # token id of each answer class, or None (no tied head)
    positions: Tensor  # (P,)
    episode_bytes: int  # upper estimate of the memory one episode takes inside sample (bytes)
    fixed_bytes: int = 0  # memory a sample call takes whatever the batch size (bytes)

    def sample(self, batch_size: int, generator: torch.Generator) -> Episodes:
        raise NotImplementedError

    def baseline_functions(self) -> dict[str, str]:
        """This instance's named baselines (:attr:`baselines`; a variant may have fewer)."""
        return dict(self.baselines)

    @property
    def max_batch_size(self) -> int:
        """The largest ``batch_size`` one :meth:`sample` call accepts (see :data:`MAX_SAMPLE_BYTES`)."""
        return max(0, MAX_SAMPLE_BYTES - self.fixed_bytes) // self.episode_bytes

    def _check_sample_args(self, batch_size: Any, generator: Any) -> tuple[int, torch.Generator]:
        """Validate the arguments of :meth:`sample` (see the module docstring)."""
        limit = self.max_batch_size
        check_int("batch_size", batch_size, 1, f"1 <= batch_size <= {limit:,}")
        if batch_size > limit:
            raise ValueError(
                f"batch_size must be <= {limit:,} for {self!r} (1 <= batch_size <= {limit:,}), got "
                f"{batch_size:,}: each episode needs about {format_bytes(self.episode_bytes)} and one sample "
                f"call may allocate at most MAX_SAMPLE_BYTES = {format_bytes(MAX_SAMPLE_BYTES)} "
                f"({MAX_SAMPLE_BYTES:,} bytes); draw the episodes in several calls")
        return batch_size, check_generator(generator)

    def config(self) -> dict[str, Any]:
        """Everything that defines the episode distribution (used in checkpoint keys)."""
        raise NotImplementedError

    def episode_fields(self, episodes: "Episodes") -> dict[str, Any]:
        """Fields of the first episode in ``episodes`` that ``bwt episode --json`` prints beside the tokens,
        positions, targets and posterior (a tunnel adds what a reader needs to check its answer by hand)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items() if k != "tunnel")
        return f"{type(self).__name__}({args})"
