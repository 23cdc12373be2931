"""TransformerLens-style hook points and a context-managed activation cache.

Every tensor a diagnostic reads passes through a named :class:`HookPoint` (an identity module), so
``model.named_modules()`` lists them, e.g. ``backbone.blocks.0.attn.hook_pattern``.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator

import torch
from torch import nn
from torch.nn.modules.module import (_global_backward_hooks, _global_backward_pre_hooks, _global_forward_hooks,
                                     _global_forward_pre_hooks)


class HookPoint(nn.Module):
    """Identity module marking a tensor that hooks may read."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    @property
    def hooked(self) -> bool:
        """True when any hook (forward or backward, on this module or global) would see this tensor,
        so a model must compute it rather than take a fused shortcut around it."""
        return bool(self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                    or self._backward_pre_hooks or _global_forward_hooks or _global_forward_pre_hooks
                    or _global_backward_hooks or _global_backward_pre_hooks)


def hook_names(model: nn.Module) -> list[str]:
    """All hook point names of ``model`` in forward order of registration."""
    return [n for n, m in model.named_modules() if isinstance(m, HookPoint)]


@contextmanager
def capture(model: nn.Module, names: Iterable[str] | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Record the named hook points (all when ``names`` is None) during forward passes.

    Yields a dict filled as the model runs; the hooks are removed on exit, also after an error.
    """
    points = {n: m for n, m in model.named_modules() if isinstance(m, HookPoint)}
    wanted = list(points) if names is None else list(names)
    unknown = [n for n in wanted if n not in points]
    if unknown:
        raise ValueError(f"unknown hook point(s) {unknown}; available: {', '.join(points)}")
    cache: dict[str, torch.Tensor] = {}
    handles = []
    for n in wanted:
        def hook(_mod: nn.Module, _inp: Any, out: torch.Tensor, n: str = n) -> None:
            cache[n] = out.detach()
        handles.append(points[n].register_forward_hook(hook))
    try:
        yield cache
    finally:
        for h in handles:
            h.remove()


def run_with_cache(model: nn.Module, *args: Any, names: Iterable[str] | None = None, **kwargs: Any):
    """Run ``model(*args, **kwargs)`` and return ``(output, cache)`` with only the named activations."""
    with capture(model, names) as cache:
        out = model(*args, **kwargs)
    return out, cache
