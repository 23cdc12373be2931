""":func:`get_preset`: a named recipe resolved from the tables, the most specific row of each winning.

Tunnel (:func:`resolve_tunnel_args`, which ``bwt episode`` reads too): :data:`TUNNEL_ARGS`, then the
variant's :data:`VARIANT_ARGS`. Model: :data:`ARCH_SIZES`, then :data:`TUNNEL_ARCH_SIZES`, the options of
:data:`TUNNEL_MODEL` and :data:`VARIANT_MODEL` (or :data:`PAPER_DEPTH_SIZES` at the paper's depth).
Training: :data:`TRAIN`, then :data:`TUNNEL_TRAIN`, :data:`VARIANT_TRAIN` and :data:`PAPER_DEPTH_TRAIN`,
then the caller's overrides.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..arguments import check_choice
from ..models import ARCHS, POSITIONS
from ..models.config import ModelConfig
from ..tunnels import TUNNELS, make_tunnel
from .model_recipes import DEPTHS, PAPER_DEPTH_SIZES, TUNNEL_ARCH_SIZES, TUNNEL_MODEL, VARIANT_MODEL
from .preset import SCALES, Preset
from .architectures import ARCH_SIZES, PAPER_DEPTH_TRAIN, TRAIN
from .tunnel_args import EVAL_LENGTH, TUNNEL_ARGS, VARIANT_ARGS
from .tunnel_train import TUNNEL_TRAIN, VARIANT_TRAIN


def resolve_tunnel_args(tunnel: str, variant: str | None = None, *, horizon: int | None = None,
                        length: int | None = None) -> dict[str, Any]:
    """``make_tunnel``'s arguments for a tunnel as every recipe resolves them, the tunnel's name included.

    :data:`TUNNEL_ARGS`, then the variant's own :data:`VARIANT_ARGS` (``variant=None``: the recipe's default
    variant), then what the caller asks for: a loss horizon (the recurrence) and an episode length (the
    tunnel's length argument: ``L``, ``K``, ``N`` or ``length``). ``get_preset`` and ``bwt episode`` both
    read it, so ``make_tunnel(**resolve_tunnel_args("hmm", "slow"))`` is the slow HMM the models train on
    (3 states over 30 steps).
    """
    check_choice("tunnel", tunnel, sorted(TUNNELS))
    targs = {"tunnel": tunnel, **TUNNEL_ARGS[tunnel]}
    if variant is not None:
        targs.update(variant=variant, **VARIANT_ARGS.get((tunnel, variant), {}))
    if horizon is not None:  # a loss horizon (the recurrence): the tunnel's training positions end there
        targs["horizon"] = horizon
    if length is not None:
        targs[TUNNELS[tunnel].length_arg] = length
    return targs


def get_preset(tunnel: str, arch: str, scale: str = "lite", *, variant: str | None = None,
               depth: str = "default", positions: str = "learned", alibi: bool | None = None,
               horizon: int | None = None, length: int | None = None, **train_overrides: Any) -> Preset:
    """The named configuration, optionally with training fields overridden (steps, seed, target...).

    ``depth="paper"`` gives the lite model with the paper's number of layers (:data:`PAPER_DEPTH_SIZES`).
    ``positions`` is the model's position scheme (:data:`bwt_lite.models.POSITIONS`; ``"rotary"``: the
    transformer only); a scheme other than the learned table adds ``-pos-<scheme>`` to the name.
    ``alibi=True`` adds ALiBi's recency bias in attention to the learned table (transformer only; ``-alibi``);
    None: the recipe's choice (:data:`TUNNEL_MODEL`; on with the learned table at the default depth only).
    ``length``: train on episodes of another length than the tunnel's default (``-L<length>`` in the name;
    e.g. the recurrence trained on 8 values and scored on 16 and 32, chapter 13).
    """
    check_choice("tunnel", tunnel, sorted(TUNNELS))
    check_choice("arch", arch, ARCHS)
    check_choice("scale", scale, SCALES)
    check_choice("depth", depth, DEPTHS)
    check_choice("positions", positions, POSITIONS)
    if depth == "paper" and (scale != "lite" or (tunnel, arch) not in PAPER_DEPTH_SIZES):
        have = ", ".join(f"{t} {a}" for t, a in PAPER_DEPTH_SIZES)
        raise ValueError(f"depth='paper' exists for the lite {have}, not for {tunnel} {arch} at scale {scale!r}")
    targs = resolve_tunnel_args(tunnel, variant, horizon=horizon, length=length)
    t = make_tunnel(**targs)
    n_positions = t.seq_len + 1
    if tunnel in EVAL_LENGTH:  # learned rows past the training length stay untrained, as in the paper
        longest = make_tunnel(**{**targs, TUNNELS[tunnel].length_arg: EVAL_LENGTH[tunnel]})
        n_positions = max(n_positions, longest.seq_len)
    n_outputs = 0 if t.answer_tokens else (2 if t.kind == "gaussian" else t.n_classes)  # Gaussian: mean, log-var
    sizes = TUNNEL_ARCH_SIZES.get((tunnel, arch, scale), ARCH_SIZES[(arch, scale)])
    options = {**TUNNEL_MODEL.get((tunnel, arch, scale), {}),
               **VARIANT_MODEL.get((tunnel, targs.get("variant", ""), arch, scale), {})}
    if depth == "paper":
        sizes = PAPER_DEPTH_SIZES[(tunnel, arch)]
    else:
        sizes = {**sizes, **{k: v for k, v in options.items() if k in ("d_model", "n_layers", "n_heads")}}
    if alibi is None:
        alibi = positions == "learned" and depth == "default" and options.get("alibi", False)
    model = ModelConfig(arch=arch, vocab_size=t.vocab_size, n_features=t.n_features, n_positions=n_positions,
                        answer_tokens=t.answer_tokens, n_outputs=n_outputs, positions=positions, alibi=alibi,
                        **sizes)
    train = TUNNEL_TRAIN.get((tunnel, arch, scale), TRAIN[(arch, scale)])
    train = VARIANT_TRAIN.get((tunnel, targs.get("variant", ""), arch, scale), train)
    if depth == "paper":
        train = replace(train, **PAPER_DEPTH_TRAIN.get((tunnel, arch), {}))
    if TUNNELS[tunnel].train_target != "sampled":  # e.g. the HMM: soft targets for every architecture
        train = replace(train, target=TUNNELS[tunnel].train_target)
    if train_overrides:
        train = replace(train, **train_overrides)
    return Preset(scale=scale, tunnel=t.config(), model=model, train=train)


__all__ = ["get_preset", "resolve_tunnel_args"]
