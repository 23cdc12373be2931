"""Load a causal language model from the Hugging Face hub, or fall back to a small local one.

:func:`load_model` decides within a couple of seconds whether the hub can be reached (the
``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` variables, then a short socket probe) before touching
it. Offline it uses the local Hugging Face cache if the model is there; otherwise it runs the course's
own small language model trained on Shakespeare (or, on request, a randomly initialised model of the
same family): nothing is downloaded, and the result says so (``pretrained=False``, its own ``name``,
and a ``note`` for the page).
"""
from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlparse

from .configs import LoadedModel, from_config, local_tokenizer, random_init_like, tiny_config
from .text_lm import SHIPPED, load_text_lm

__all__ = ["DEFAULT_MODEL", "LoadedModel", "family", "from_config", "hub_reachable", "load_model", "local_tokenizer",
           "offline_env", "random_init_like", "tiny_config"]

DEFAULT_MODEL = "EleutherAI/pythia-160m"
_TRUE = {"1", "true", "yes", "on"}


def offline_env() -> bool:
    """True when ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` is set to a true value."""
    return any(os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the hub can be reached: False at once when offline variables are set, else a TCP
    connection to the hub's host (``HF_ENDPOINT`` if set) within ``timeout`` seconds."""
    if offline_env():
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    result: list[bool] = []

    def attempt():  # in a thread: a name lookup is not bounded by the socket timeout
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout + 0.5)
    return bool(result and result[0])


def family(name_or_type: str) -> str:
    """The attention family of a model name or ``model_type``: "gpt_neox", "gpt2" or "llama"."""
    s = name_or_type.lower()
    if "pythia" in s or "neox" in s:
        return "gpt_neox"
    if "gpt2" in s or "gpt-2" in s or "distilgpt" in s:
        return "gpt2"
    if any(k in s for k in ("llama", "mistral", "qwen", "smollm", "tinyllama")):
        return "llama"
    return "gpt_neox"


def _is_buffer(key: str) -> bool:
    """Names that checkpoints may omit because the model recomputes them (rotary tables, causal masks)."""
    return any(t in key for t in ("rotary_emb", "inv_freq", "masked_bias", ".attn.bias", "attention.bias"))


def load_model(name: str = DEFAULT_MODEL, *, offline: bool | None = None, seed: int = 0, device: str = "cpu",
               timeout: float = 2.0, tiny: dict | None = None, fallback: str = "course") -> LoadedModel:
    """The model ``name`` (e.g. "EleutherAI/pythia-160m", "EleutherAI/pythia-410m") with its tokenizer.

    ``offline``: None decides by :func:`hub_reachable`; True never touches the network (local cache,
    a local directory, or the fallback); False goes to the hub. When neither the hub nor local files
    have the model, ``fallback`` decides what runs instead, always labelled ``pretrained=False`` and
    named for what it is, never for the model asked for (that stays in ``requested``): "course" (the
    default) loads the course's own GPT-NeoX trained on Shakespeare (:mod:`bwt_lite.llm.text_lm`);
    "random" builds a randomly initialised model of the same family (``tiny`` overrides
    :func:`tiny_config`'s sizes) with a word-level tokenizer over the course prompts. A checkpoint that
    lacks some of the model's weights raises ValueError instead of leaving them at random.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a model id such as {DEFAULT_MODEL!r}, got {name!r}")
    if fallback not in ("course", "random"):
        raise ValueError(f"fallback must be 'course' or 'random', got {fallback!r}")
    online = hub_reachable(timeout) if offline is None else not offline
    reason = "the Hugging Face hub cannot be reached from here"
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs = dict(local_files_only=not online)
        tokenizer = AutoTokenizer.from_pretrained(name, **kwargs)
        model, info = AutoModelForCausalLM.from_pretrained(name, attn_implementation="eager",
                                                           output_loading_info=True, **kwargs)
    except ImportError:
        raise
    except Exception as err:  # not cached, no network, or the hub refused: fall back below
        if online:
            reason = f"loading it failed ({type(err).__name__})"
    else:
        missing = [k for k in info.get("missing_keys", []) if not _is_buffer(k)]
        if missing:  # never run a diagnostic on weights that silently stayed random
            raise ValueError(f"{name}: {len(missing)} weights missing from the checkpoint (e.g. {missing[:3]}); "
                             "they would stay at their random initialisation")
        source = "hub" if online else "local files"
        note = f"{name}: pretrained weights ({source})."
        return LoadedModel(model.eval().to(device), tokenizer, name, True, source, note, trained=True, requested=name)
    if fallback == "course" and SHIPPED.is_dir():
        lm = load_text_lm(device=device)
        lm.requested = name
        lm.note = (f"OFFLINE: {name} could not be loaded ({reason}), so this page runs its pipeline on "
                   f"{lm.note} Its numbers show what training on real text does to a small model, not what "
                   f"{name} does; run the notebook where the hub is reachable (e.g. on Colab) for that.")
        return lm
    return _random_stand_in(name, reason, seed, device, tiny)


def _random_stand_in(name: str, reason: str, seed: int, device: str, tiny: dict | None) -> LoadedModel:
    """A randomly initialised model of ``name``'s family with a word-level tokenizer over the course prompts."""
    tokenizer = local_tokenizer()
    arch = family(name)
    config = tiny_config(arch, len(tokenizer), **(tiny or {}))
    model = from_config(config, seed=seed).to(device)
    n = sum(p.numel() for p in model.parameters())
    note = (f"OFFLINE FALLBACK: {name} could not be loaded ({reason}), so this page runs the same pipeline on a "
            f"small randomly initialised {arch} model ({config.num_hidden_layers} layers, {n:,} parameters, seed "
            f"{seed}) with a word-level tokenizer built locally. Its numbers show that the code runs, not what a "
            f"pretrained model does; run the notebook where the hub is reachable (e.g. on Colab) for the real model.")
    return LoadedModel(model, tokenizer, f"random-init {arch} stand-in", False, "offline fallback", note,
                       requested=name)
