"""Paper III's claims on pretrained language models: the four signatures measured as chapter 12 does,
decided only on a pretrained model (a random stand-in never counts)."""
from __future__ import annotations

from typing import Any

import torch

from ..llm import diagnostics as D
from ..llm import sula as S
from ..llm.offline import DEFAULT_MODEL, load_model, random_init_like
from ..llm.probe import encode, probe
from ..llm.prompts import DOMAINS, domain_prompts
from ..paper import paper_figure
from .catalogue import Claim
from .context import Context, make_row
from .rules import FACTOR, NOT_TESTABLE, num, size_verdict, within_factor


def llm_measurements(model: torch.nn.Module, tokenizer: Any, n_prompts: int = 24, sula_per_k: int = 16
                     ) -> dict[str, Any]:
    """Paper III's four signatures on one causal LM, as chapter 12 measures them, each beside the same
    architecture at random init: key orthogonality per layer (with the chance value for d_head),
    the final query's attention entropy per layer, PC1+PC2 of the last-layer values (mixed and single
    domain prompts), and the SULA entropy MAE against the Bayes posterior (with a 50/50 predictor's)."""

    mixed = domain_prompts(list(DOMAINS), n_prompts, seed=0)
    single = domain_prompts(["cooking"], n_prompts, seed=1)
    random_model = random_init_like(model, seed=1)
    probes = [probe(model, encode(tokenizer, s)) for s in mixed]
    probes_random = [probe(random_model, encode(tokenizer, s)) for s in mixed]
    probes_single = [probe(model, encode(tokenizer, s)) for s in single]
    d_head = probes[0].keys.shape[-1]
    orth, orth_random = D.key_orthogonality(probes), D.key_orthogonality(probes_random)
    focus, focus_random = D.attention_focusing(probes), D.attention_focusing(probes_random)
    pc12 = {name: D.pca_summary(torch.stack([D.last_layer_values(p) for p in ps])).pc12
            for name, ps in (("mixed", probes), ("single", probes_single), ("random_init", probes_random))}
    labels, label_ids = S.pick_labels(tokenizer)
    prompts = S.generate(labels, k_values=S.K_VALUES, per_k=sula_per_k, accuracy=0.9, seed=0)
    run = S.run_model(model, tokenizer, prompts, label_ids)
    met = S.evaluate(run)
    return {"n_layers": len(orth), "d_head": d_head, "key_orthogonality": orth.tolist(),
            "key_orthogonality_random": orth_random.tolist(), "chance": D.random_cosine_baseline(d_head),
            "attention_entropy": focus.per_layer.tolist(), "attention_entropy_random": focus_random.per_layer.tolist(),
            "drop_bits": focus.drop_bits, "drop_bits_random": focus_random.drop_bits, "uniform_bits": focus.max_bits,
            "pc12": pc12, "sula_mae": met.mae_posterior, "sula_rho_pc1": met.rho_pc1,
            "sula_flat_mae": (1 - run.h_bayes).mean().item(), "sula_blind_mae": met.blind_mae,
            "sula_label_mass": met.label_mass, "prompts": n_prompts, "sula_prompts": len(prompts)}


def _llm_pc12_figures() -> list[float]:
    """Paper III's PC1+PC2 shares (%) of every model and prompt set."""
    return [paper_figure(f"llm_value_pc12_{f}_{s}").value
            for f in ("pythia", "phi2", "llama") for s in ("mixed", "single")]


def llm_verdicts(m: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """Claim id -> (verdict, ours as text, reason) for the Paper III rows, from :func:`llm_measurements`."""
    k_lo, k_hi = paper_figure("llm_key_orthogonality_low").value, paper_figure("llm_key_orthogonality_high").value
    mean_k = sum(m["key_orthogonality"]) / m["n_layers"]
    mean_r = sum(m["key_orthogonality_random"]) / m["n_layers"]
    keys = size_verdict(mean_k < mean_r, within_factor(mean_k, k_lo) or within_factor(mean_k, k_hi)
                        or k_lo <= mean_k <= k_hi)
    pcs = _llm_pc12_figures()
    ours_pc = 100 * m["pc12"]["mixed"]
    manifold = size_verdict(m["pc12"]["mixed"] > m["pc12"]["random_init"], min(pcs) <= ours_pc <= max(pcs))
    s_lo, s_hi = paper_figure("llm_sula_mae_low").value, paper_figure("llm_sula_mae_high").value
    sula = size_verdict(m["sula_mae"] < m["sula_blind_mae"], within_factor(m["sula_mae"], s_lo)
                        or within_factor(m["sula_mae"], s_hi) or s_lo <= m["sula_mae"] <= s_hi)
    focus = size_verdict(m["drop_bits"] > 0, m["drop_bits"] > m["drop_bits_random"])
    return {
        "llm-keys-orthogonal": (keys, f"{num(mean_k)} mean |cos| over {m['n_layers']} layers (random init "
                                f"{num(mean_r)}, chance {num(m['chance'])})",
                                f"needs below random init and within {FACTOR:g}x of {k_lo:g}-{k_hi:g}"),
        "llm-attention-focusing": (focus, f"drop {num(m['drop_bits'])} bits first -> last layer (random init "
                                   f"{num(m['drop_bits_random'])})", "needs a drop, larger than at random init"),
        "llm-value-manifold": (manifold, f"PC1+PC2 {ours_pc:.1f} % mixed, {100 * m['pc12']['single']:.1f} % single "
                               f"(random init {100 * m['pc12']['random_init']:.1f} %)",
                               f"needs above random init and within the published {min(pcs):g}-{max(pcs):g} %"),
        "llm-sula": (sula, f"{num(m['sula_mae'])} bits (best prompt-blind predictor {num(m['sula_blind_mae'])}, "
                     f"50/50 predictor {num(m['sula_flat_mae'])})",
                     f"needs below the best prompt-blind predictor (one entropy for every prompt) and within "
                     f"{FACTOR:g}x of {s_lo:g}-{s_hi:g}"),
    }


def rows_llm(ctx: Context, network: bool, name: str | None) -> list[Claim]:

    name = name or DEFAULT_MODEL
    k_lo, k_hi = paper_figure("llm_key_orthogonality_low").value, paper_figure("llm_key_orthogonality_high").value
    s_lo, s_hi = paper_figure("llm_sula_mae_low").value, paper_figure("llm_sula_mae_high").value
    pythia = paper_figure("llm_value_pc12_pythia_mixed")
    pcs = _llm_pc12_figures()
    paper = {"llm-keys-orthogonal": (f"{k_lo:g}-{k_hi:g} mean |cos| (Pythia-410M)", k_lo),
             "llm-attention-focusing": ("falls with depth (no number stored)", None),
             "llm-value-manifold": (f"PC1+PC2 {pythia.value:g} % (Pythia-410M, mixed prompts; {min(pcs):g}-{max(pcs):g}"
                                    " over models)", pythia.value),
             "llm-sula": (f"{s_lo:g}-{s_hi:g} bits", s_lo)}
    try:
        lm = load_model(name, offline=None if network else True)
    except ImportError as err:  # transformers is an optional dependency
        lm, why = None, f"transformers is not installed ({err})"
    else:
        where = "the hub cannot be reached and it is not" if network else "the network is off and it is not"
        why = (f"{where} in the local Hugging Face cache, so only a stand-in ({lm.name}) can run in its place") if not lm.pretrained else ""
    if lm is None or not lm.pretrained:
        reason = (f"needs the pretrained {name}: {why}; a stand-in never counts for a pretrained-model claim "
                  "(run with network=True where the hub is reachable, e.g. on Colab)")
        return [make_row(cid, paper=p, ours="n/a", verdict=NOT_TESTABLE, reason=reason, paper_value=v,
                         details={"model": name, "pretrained": False}) for cid, (p, v) in paper.items()]
    m = llm_measurements(lm.model, lm.tokenizer, ctx.budget.llm_prompts, ctx.budget.sula_per_k)
    verdicts = llm_verdicts(m)
    ours_values = {"llm-keys-orthogonal": sum(m["key_orthogonality"]) / m["n_layers"],
                   "llm-attention-focusing": m["drop_bits"], "llm-value-manifold": 100 * m["pc12"]["mixed"],
                   "llm-sula": m["sula_mae"]}
    rows = []
    for cid, (p, v) in paper.items():
        verdict, ours, rule = verdicts[cid]
        rows.append(make_row(cid, paper=p, ours=ours, verdict=verdict,
                             reason=f"{name} ({lm.source}, {m['prompts']} prompts); {rule}", paper_value=v,
                             ours_value=ours_values[cid], details={"model": name, "pretrained": True, **m}))
    return rows
