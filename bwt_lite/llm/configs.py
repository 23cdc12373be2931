"""The small language models the course builds itself: configs of the three attention families, seeded
random initialisations, a word-level tokenizer over the course prompts, and the record of a loaded model."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .prompts import vocabulary


@dataclass
class LoadedModel:
    model: torch.nn.Module  # a transformers causal LM in eval mode
    tokenizer: object  # a transformers tokenizer
    name: str  # the model that runs (a fallback is named for what it is, never for the model asked for)
    pretrained: bool  # True for real pretrained weights (hub or local cache)
    source: str  # "hub", "local files" (cache or directory), "course model" or "offline fallback"
    note: str  # one sentence to show on the page
    trained: bool = False  # True for any trained weights: pretrained, or the course's own text model
    requested: str = ""  # the model that was asked for (differs from ``name`` when a fallback runs)


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
