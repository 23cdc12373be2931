"""The course's own small language model, trained here on real English text (Paper III without a network).

A GPT-NeoX model (Pythia's architecture) of a few layers, with a byte-level BPE tokenizer trained on
the same text, learns next-token prediction on Shakespeare (:mod:`bwt_lite.llm.corpus`). Chapter 12
compares it with its own random initialisation on every Paper III signature when the hub's pretrained
models cannot be reached. The shipped folder holds ``model.safetensors``, ``config.json``, the
tokenizer, ``heldout.txt`` (an excerpt of the held-out play) and ``meta.json`` (corpus, recipe, time,
loss curve, and the SHA-256 of every file, checked on load).
"""
from __future__ import annotations

import io
import json
import math
import resource
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..paths import TEXT_LM_DIR
from ..store.files import SEAL, CheckpointError, atomic_write, check_fields, check_seal, read_json, seal_sha256, sha256_bytes
from ..train import warmup_cosine
from .configs import LoadedModel, from_config, tiny_config

SHIPPED = TEXT_LM_DIR
EOS = "<|endoftext|>"
FILES = ("model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json", "heldout.txt")
# Short nonsense words kept whole by the tokenizer, so that SULA (chapter 12) has single-token labels
# that the text never uses.
LABEL_TOKENS = (" wug", " dax")


@dataclass
class TextRecipe:
    """What the shipped model was trained with; every field is recorded in ``meta.json``."""

    vocab_size: int = 4096
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    context: int = 128
    batch: int = 32
    steps: int = 2000
    lr: float = 1e-3
    warmup: int = 200
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    clip: float = 1.0
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def train_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE tokenizer (as GPT-NeoX's) trained on ``texts``, with ``<|endoftext|>`` and the
    SULA label words as whole tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 300:
        raise ValueError(f"vocab_size must be >= 300 (256 bytes plus merges), got {vocab_size}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS], min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_tokens([AddedToken(w.strip(), lstrip=True, single_word=True) for w in LABEL_TOKENS])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, bos_token=EOS, unk_token=EOS)


def encode_corpus(tokenizer, works: list[str]) -> torch.Tensor:
    """All ``works`` as one stream of token ids, each followed by ``<|endoftext|>``."""
    ids: list[int] = []
    for text in works:
        ids += tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return torch.tensor(ids, dtype=torch.long)


def lr_at(step: int, r: TextRecipe) -> float:
    """Linear warm-up over ``r.warmup`` steps, then cosine to ``r.min_lr_ratio`` of the peak."""
    return warmup_cosine(step, r.lr, r.warmup, r.steps, r.min_lr_ratio)


def next_token_bits(model: torch.nn.Module, ids: torch.Tensor, context: int) -> float:
    """Mean next-token cross-entropy (bits per token) of ``model`` on the id stream ``ids``, read in
    consecutive windows of ``context`` tokens."""
    n = (ids.numel() - 1) // context
    if n < 1:
        raise ValueError(f"need more than {context} tokens, got {ids.numel()}")
    x = ids[: n * context].view(n, context)
    y = ids[1: n * context + 1].view(n, context)
    total = 0.0
    with torch.no_grad():
        for i in range(0, n, 16):
            logits = model(input_ids=x[i:i + 16]).logits
            total += torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), y[i:i + 16].flatten(),
                                                       reduction="sum").item()
    return total / (n * context) / math.log(2)


def _batch(ids: torch.Tensor, r: TextRecipe, g: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, ids.numel() - r.context - 1, (r.batch,), generator=g)
    return torch.stack([ids[s: s + r.context + 1] for s in starts.tolist()])


def _cpu_seconds() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _save_resume(path: Path, model, opt, step: int, g: torch.Generator, history: list, elapsed: dict) -> None:
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "rng": g.get_state(),
                "history": history, "elapsed": elapsed}, buf)
    atomic_write(path, buf.getvalue())


def train_text_lm(works: list[str], heldout: str, out: Path | str, recipe: TextRecipe | None = None,
                  log_every: int = 100, save_every: int = 200) -> dict[str, Any]:
    """Train the recipe's model on ``works``, resuming from ``out/resume.pt`` if present, then write the
    shipped folder to ``out`` (see the module docstring) and return its ``meta.json`` contents."""
    from transformers import PreTrainedTokenizerFast

    r = recipe or TextRecipe()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "tokenizer.json").exists():  # resuming: the tokenizer the run started with
        tok = PreTrainedTokenizerFast.from_pretrained(out)
    else:
        tok = train_tokenizer(works, r.vocab_size)
        tok.save_pretrained(out)
    ids, held = encode_corpus(tok, works), encode_corpus(tok, [heldout])
    model = from_config(tiny_config("gpt_neox", len(tok), d_model=r.d_model, n_layers=r.n_layers,
                                    n_heads=r.n_heads, max_positions=2 * r.context), seed=r.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=r.lr, betas=(0.9, 0.95), weight_decay=r.weight_decay)
    g = torch.Generator().manual_seed(r.seed)
    step, history, elapsed = 0, [], {"wall_s": 0.0, "cpu_s": 0.0}
    resume = out / "resume.pt"
    if resume.exists():
        state = torch.load(resume, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        g.set_state(state["rng"])
        step, history, elapsed = state["step"], state["history"], state["elapsed"]
    model.train()
    t0, c0 = time.time(), _cpu_seconds()
    while step < r.steps:
        for group in opt.param_groups:
            group["lr"] = lr_at(step, r)
        xy = _batch(ids, r, g)
        logits = model(input_ids=xy[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), xy[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), r.clip)
        opt.step()
        step += 1
        if step % log_every == 0 or step == r.steps:
            history.append({"step": step, "train_bits": loss.item() / math.log(2)})
            print(f"step {step}/{r.steps}  train {history[-1]['train_bits']:.3f} bits/token", flush=True)
        if step % save_every == 0 or step == r.steps:
            now = {"wall_s": elapsed["wall_s"] + time.time() - t0, "cpu_s": elapsed["cpu_s"] + _cpu_seconds() - c0}
            _save_resume(resume, model, opt, step, g, history, now)
            elapsed, t0, c0 = now, time.time(), _cpu_seconds()
    model.eval()
    random_bits = next_token_bits(from_config(model.config, seed=r.seed + 1), held, r.context)
    meta = {"name": "bwt-shakespeare-neox", "architecture": "gpt_neox", "recipe": asdict(r),
            "parameters": sum(p.numel() for p in model.parameters()), "train_tokens": int(ids.numel()),
            "tokens_seen": r.steps * r.batch * r.context, "heldout_tokens": int(held.numel()),
            "heldout_bits": next_token_bits(model, held, r.context), "heldout_bits_random_init": random_bits,
            "uniform_bits": math.log2(len(tok)), "history": history, **elapsed}
    _ship(model, tok, heldout, out, meta)
    resume.unlink()
    return meta


def _ship(model, tok, heldout: str, out: Path, meta: dict[str, Any]) -> None:
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    atomic_write(out / "heldout.txt", heldout[:16_000].encode())
    seal_lm_folder(out, meta)


def seal_lm_folder(out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Write ``meta.json`` into ``out``: ``meta`` (updated in place) with the SHA-256 of every other file in
    the folder (but the training run's ``resume.pt``, removed after) and the seal over all of it, so that
    :func:`read_meta` refuses an edited, added or missing file or field."""
    meta.pop(SEAL, None)
    meta["sha256"] = {f.name: sha256_bytes(f.read_bytes()) for f in sorted(Path(out).iterdir())
                      if f.is_file() and f.name not in ("meta.json", "resume.pt")}
    meta[SEAL] = seal_sha256(meta)
    atomic_write(Path(out) / "meta.json", (json.dumps(meta, indent=1) + "\n").encode())
    return meta


# the fields of meta.json read by the chapters, with their types, and the sense each must make
META_FIELDS: dict[str, type] = {"name": str, "recipe": dict, "parameters": int, "tokens_seen": int,
                                "heldout_bits": float, "heldout_bits_random_init": float, "cpu_s": float,
                                "sha256": dict, "history": list}


def read_meta(path: Path | str = SHIPPED) -> dict[str, Any]:
    """The ``meta.json`` of a text-LM folder after checking it: sealed, of the right shape, its numbers
    making sense, and every file of the folder listed with its SHA-256 (no file missing, changed or added).
    Any failure is a :class:`CheckpointError` naming the file."""
    path = Path(path)
    meta_path = path / "meta.json"
    hint = f"restore the folder {path} from the package (pip install --force-reinstall bwt-lite) or retrain it"
    if not path.is_dir() or not meta_path.is_file():
        raise CheckpointError(f"{path}: no meta.json; not a text language-model folder")
    meta = read_json(meta_path)
    check_fields(meta, meta_path, META_FIELDS, hint)
    check_seal(meta, meta_path, hint)
    _check_sense(meta, meta_path, hint)
    listed = meta["sha256"]
    present = {f.name for f in path.iterdir()} - {"meta.json"}
    extra, missing = sorted(present - set(listed)), sorted(set(listed) - present)
    if extra:
        raise CheckpointError(f"{path}: file(s) {', '.join(extra)} are not part of the trained model (not listed in "
                              f"{meta_path}); remove them")
    if missing or not set(FILES) <= set(listed):
        raise CheckpointError(f"{path}: file(s) {', '.join(missing or sorted(set(FILES) - set(listed)))} missing; {hint}")
    for name, digest in listed.items():
        f = path / name
        if not f.is_file() or f.is_symlink() or sha256_bytes(f.read_bytes()) != digest:
            raise CheckpointError(f"{f}: changed since it was trained (its SHA-256 differs from {meta_path}); {hint}")
    return meta


def _check_sense(meta: dict[str, Any], path: Path, hint: str) -> None:
    """Numbers that a trained model's record can hold: positive counts and times, finite bits per token
    no larger than a uniform guess over the vocabulary (with a margin for a random init)."""
    recipe = meta["recipe"]
    vocab = recipe.get("vocab_size")
    problems = []
    for name in ("parameters", "tokens_seen"):
        if meta[name] <= 0:
            problems.append(f"{name} = {meta[name]}")
    if not (math.isfinite(meta["cpu_s"]) and meta["cpu_s"] > 0):
        problems.append(f"cpu_s = {meta['cpu_s']}")
    if not isinstance(vocab, int) or isinstance(vocab, bool) or vocab < 2:
        problems.append(f"recipe.vocab_size = {vocab!r}")
    else:
        top = math.log2(vocab) + 1.0
        for name in ("heldout_bits", "heldout_bits_random_init"):
            if not (math.isfinite(meta[name]) and 0 < meta[name] <= top):
                problems.append(f"{name} = {meta[name]} (bits per token lie in (0, {top:.1f}] here)")
    for name in ("n_layers", "d_model", "steps", "context"):
        value = recipe.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            problems.append(f"recipe.{name} = {value!r}")
    if problems:
        raise CheckpointError(f"{path}: values no trained model has: {'; '.join(problems)}; {hint}")


def load_text_lm(path: Path | str = SHIPPED, device: str = "cpu") -> LoadedModel:
    """The course's language model trained on Shakespeare (checked against its ``meta.json``), labelled
    as what it is: ``pretrained=False`` (it is not the model a chapter asks the hub for), ``trained=True``."""
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    meta = read_meta(path)
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a local 7 MB load: its bar would only print "0/52" into the page
    try:
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, attn_implementation="eager")
        tok = PreTrainedTokenizerFast.from_pretrained(path)
    except Exception as e:  # files whose hashes match a resealed meta.json but that do not load
        raise CheckpointError(f"{path}: the model or tokenizer files do not load ({type(e).__name__}: {e}); "
                              f"restore the folder from the package or retrain it") from e
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    n = sum(p.numel() for p in model.parameters())
    if n != meta["parameters"] or len(tok) > meta["recipe"]["vocab_size"] + len(LABEL_TOKENS) + 8:
        raise CheckpointError(f"{path}: meta.json says {meta['parameters']:,} parameters and a vocabulary of "
                              f"{meta['recipe']['vocab_size']:,}, the files hold {n:,} and {len(tok):,}; restore the "
                              f"folder from the package or retrain it")
    r = meta["recipe"]
    note = (f"{meta['name']}: the course's own {r['n_layers']}-layer GPT-NeoX ({meta['parameters']:,} parameters), "
            f"trained here on Shakespeare's plays ({meta['tokens_seen']:,} tokens, {meta['cpu_s'] / 60:.0f} min of "
            f"CPU); held-out {meta['heldout_bits']:.2f} bits per token (random init "
            f"{meta['heldout_bits_random_init']:.2f}).")
    return LoadedModel(model.eval().to(device), tok, meta["name"], False, "course model", note, trained=True)
