"""The shared state of one scorecard run (models and baselines are loaded and scored once) and the
helpers that build a row."""
from __future__ import annotations

from typing import Any, Callable

import torch

from ..baselines import evaluate_baselines
from ..checkpoints import find_checkpoint, load_or_train
from ..evaluate import EvalResult, evaluate
from ..recipes import Preset, get_preset
from ..reproduce import MAX_WINDOW, cell_preset
from ..tunnels import Tunnel, make_tunnel
from .catalogue import CLAIMS, Budget, Claim
from .rules import jsonable


class Context:
    def __init__(self, device: str | torch.device, budget: Budget, fast: bool, log: Callable[[str], None]):
        self.device, self.budget, self.fast, self.log = device, budget, fast, log
        self._models: dict[tuple[str, str], Any] = {}
        self._evals: dict[tuple[str, str], EvalResult] = {}
        self._bases: dict[str, dict[str, dict[str, Any]]] = {}

    def preset(self, tunnel: str, arch: str) -> Preset:
        return cell_preset(tunnel, arch, "lite")  # tunnel: a name of the primitives table ("hmm-slow" too)

    def tunnel(self, tunnel: str) -> Tunnel:
        return make_tunnel(**self.preset(tunnel, "transformer").tunnel)

    def model(self, tunnel: str, arch: str) -> torch.nn.Module:
        """The shipped (or cached) lite checkpoint, in eval mode; never trains."""
        key = (tunnel, arch)
        if key not in self._models:
            preset = self.preset(tunnel, arch)
            if find_checkpoint(preset) is None:
                raise RuntimeError(f"no checkpoint of {preset.name} in the cache or the package: the scorecard "
                                   "measures shipped checkpoints and never trains (run `bwt ship`)")
            model, _ = load_or_train(preset, device=self.device, progress=False, download=False,
                                     log=lambda line: None)
            self._models[key] = model.eval()
        return self._models[key]

    def deep(self, tunnel: str) -> bool:
        """Whether the lite transformer at the paper's depth (``depth="paper"``) is shipped or cached."""
        return find_checkpoint(get_preset(tunnel, "transformer", "lite", depth="paper")) is not None

    def geometry_model(self, tunnel: str) -> tuple[torch.nn.Module, str]:
        """The transformer the geometry claims measure, and a label: the lite model at the paper's depth
        when its checkpoint is there (the per-layer claims need the paper's number of layers), else
        the default lite transformer."""
        key = (tunnel, "transformer-deep")
        if not self.deep(tunnel):
            model = self.model(tunnel, "transformer")
            return model, f"the {model.cfg.n_layers}-layer lite model"
        if key not in self._models:
            model, _ = load_or_train(get_preset(tunnel, "transformer", "lite", depth="paper"), device=self.device,
                                     progress=False, download=False, log=lambda line: None)
            self._models[key] = model.eval()
        model = self._models[key]
        return model, f"the {model.cfg.n_layers}-layer lite model (the paper's depth)"

    def evaluate(self, tunnel: str, arch: str) -> EvalResult:
        key = (tunnel, arch)
        if key not in self._evals:
            self._evals[key] = evaluate(self.model(tunnel, arch), self.tunnel(tunnel), episodes=self.budget.eval,
                                        seed=0, device=self.device)
        return self._evals[key]

    def baselines(self, tunnel: str) -> dict[str, dict[str, Any]]:
        """The tunnel's exact baselines on the models' held-out episodes, as metrics dicts."""
        if tunnel not in self._bases:
            results = evaluate_baselines(self.tunnel(tunnel), episodes=self.budget.eval, seed=0, device=self.device,
                                         max_window=MAX_WINDOW.get(tunnel, 4))
            self._bases[tunnel] = {name: metrics_of(r) for name, r in results.items()}
        return self._bases[tunnel]


def paper_depth(tunnel: str) -> int:
    """Depth of the paper's transformer on ``tunnel`` (the paper preset)."""
    return get_preset(tunnel, "transformer", "paper").model.n_layers


def metrics_of(r: EvalResult) -> dict[str, Any]:
    return {"entropy_mae_bits": r.entropy_mae_bits, "kl_bits": r.kl_bits, "accuracy": r.accuracy}


def make_row(cid: str, *, paper: str, ours: str, verdict: str, reason: str, paper_value: float | None = None,
             ours_value: float | None = None, details: dict[str, Any] | None = None) -> Claim:
    info = CLAIMS[cid]
    return Claim(id=cid, claim=info.claim, source=info.source, chapter=info.chapter, paper=paper, ours=ours,
                 verdict=verdict, reason=reason, paper_value=paper_value, ours_value=ours_value,
                 details=jsonable(details or {}))
