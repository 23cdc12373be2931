"""Load a causal language model from the Hugging Face hub, or fall back to a small local one.

:func:`load_model` decides within a couple of seconds whether the hub can be reached (the
``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` variables, then a short socket probe) before touching
it. Offline it uses the local Hugging Face cache if the model is there; otherwise it builds a small,
**randomly initialised** model of the same family from a config, with a word-level tokenizer built
from :func:`bwt_lite.llm.prompts.vocabulary`: nothing is downloaded, and the result says so
(``pretrained=False`` and a ``note`` for the page).
"""
from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlparse

import torch

from .prompts import vocabulary

DEFAULT_MODEL = "EleutherAI/pythia-160m"
_TRUE = {"1", "true", "yes", "on"}


@dataclass
class LoadedModel:
    model: torch.nn.Module  # a transformers causal LM in eval mode
    tokenizer: object  # a transformers tokenizer
    name: str  # the model that was asked for
    pretrained: bool  # True for real pretrained weights (hub or local cache)
    source: str  # "hub", "local files" (cache or directory) or "offline fallback"
    note: str  # one sentence to show on the page


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


def local_tokenizer(words: list[str] | None = None):
    """A word-level fast tokenizer over ``words`` (default: every word of the course prompts), built in
    memory: whitespace and punctuation split, ``[UNK]`` for anything else, ``<|endoftext|>`` as EOS."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = vocabulary() if words is None else words
    specials = ["<|endoftext|>", "[UNK]"]
    vocab = {w: i for i, w in enumerate(specials + [w for w in dict.fromkeys(words) if w not in specials])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>",
                                   bos_token="<|endoftext|>")


def tiny_config(arch: str, vocab_size: int, *, d_model: int = 128, n_layers: int = 6, n_heads: int = 4,
                n_kv_heads: int | None = None, max_positions: int = 256):
    """A small config of ``arch`` ("gpt_neox", "gpt2" or "llama"; ``n_kv_heads`` < ``n_heads`` gives
    grouped-query attention in "llama")."""
    from transformers import GPT2Config, GPTNeoXConfig, LlamaConfig

    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
    common = dict(vocab_size=vocab_size, bos_token_id=0, eos_token_id=0)
    if arch == "gpt_neox":
        return GPTNeoXConfig(hidden_size=d_model, num_hidden_layers=n_layers, num_attention_heads=n_heads,
                             intermediate_size=4 * d_model, max_position_embeddings=max_positions, **common)
    if arch == "gpt2":
        return GPT2Config(n_embd=d_model, n_layer=n_layers, n_head=n_heads, n_positions=max_positions,
                          resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common)
    if arch == "llama":
        kv = n_heads if n_kv_heads is None else n_kv_heads
        if n_heads % kv:
            raise ValueError(f"n_heads ({n_heads}) must be divisible by n_kv_heads ({kv})")
        return LlamaConfig(hidden_size=d_model, num_hidden_layers=n_layers, num_attention_heads=n_heads,
                           num_key_value_heads=kv, intermediate_size=4 * d_model,
                           max_position_embeddings=max_positions, **common)
    raise ValueError(f"arch must be one of 'gpt_neox', 'gpt2', 'llama', got {arch!r}")


def from_config(config, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised causal LM of ``config`` (seeded; eval mode, eager attention)."""
    from transformers import AutoModelForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return model.eval()


def random_init_like(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """The same architecture and config as ``model``, freshly initialised (the random-init baseline)."""
    return from_config(model.config, seed=seed).to(next(model.parameters()).device)


def _is_buffer(key: str) -> bool:
    """Names that checkpoints may omit because the model recomputes them (rotary tables, causal masks)."""
    return any(t in key for t in ("rotary_emb", "inv_freq", "masked_bias", ".attn.bias", "attention.bias"))


def load_model(name: str = DEFAULT_MODEL, *, offline: bool | None = None, seed: int = 0, device: str = "cpu",
               timeout: float = 2.0, tiny: dict | None = None) -> LoadedModel:
    """The model ``name`` (e.g. "EleutherAI/pythia-160m", "EleutherAI/pythia-410m") with its tokenizer.

    ``offline``: None decides by :func:`hub_reachable`; True never touches the network (local cache,
    a local directory, or the fallback); False goes to the hub. When neither the hub nor local files
    have the model, a small randomly initialised model of the same family (``tiny`` overrides
    :func:`tiny_config`'s sizes) and a locally built word-level tokenizer are returned, labelled
    ``pretrained=False``. A checkpoint that lacks some of the model's weights raises ValueError
    instead of leaving them at random.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a model id such as {DEFAULT_MODEL!r}, got {name!r}")
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
        return LoadedModel(model.eval().to(device), tokenizer, name, True, source, note)
    tokenizer = local_tokenizer()
    arch = family(name)
    config = tiny_config(arch, len(tokenizer), **(tiny or {}))
    model = from_config(config, seed=seed).to(device)
    n = sum(p.numel() for p in model.parameters())
    note = (f"OFFLINE FALLBACK: {name} could not be loaded ({reason}), so this page runs the same pipeline on a "
            f"small randomly initialised {arch} model ({config.num_hidden_layers} layers, {n:,} parameters, seed "
            f"{seed}) with a word-level tokenizer built locally. Its numbers show that the code runs, not what a "
            f"pretrained model does; run the notebook where the hub is reachable (e.g. on Colab) for the real model.")
    return LoadedModel(model, tokenizer, name, False, "offline fallback", note)
