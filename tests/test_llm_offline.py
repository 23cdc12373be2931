"""bwt_lite.llm.offline: the offline fallback is taken, quickly and without the network, when the hub
cannot be reached, and it is labelled as such."""
import socket

import pytest

pytest.importorskip("transformers")

from bwt_lite.llm import offline  # noqa: E402


def no_network(*args, **kwargs):
    raise AssertionError("the network must not be touched here")


def test_offline_env_means_no_socket_and_a_labelled_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(socket, "create_connection", no_network)
    assert offline.offline_env() and not offline.hub_reachable()
    lm = offline.load_model("EleutherAI/pythia-410m", fallback="random")
    assert not lm.pretrained and not lm.trained and lm.source == "offline fallback"
    assert lm.note.startswith("OFFLINE FALLBACK") and "randomly initialised" in lm.note and "pythia-410m" in lm.note
    assert lm.requested == "EleutherAI/pythia-410m" and "pythia" not in lm.name  # a stand-in never takes its name
    assert lm.model.config.model_type == "gpt_neox" and not lm.model.training
    assert len(lm.tokenizer) == lm.model.config.vocab_size


def test_offline_default_runs_the_course_model_trained_on_text(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(socket, "create_connection", no_network)
    lm = offline.load_model("EleutherAI/pythia-410m")
    assert lm.trained and not lm.pretrained and lm.source == "course model"
    assert lm.name == "bwt-shakespeare-neox" and lm.requested == "EleutherAI/pythia-410m"
    assert lm.note.startswith("OFFLINE") and "Shakespeare" in lm.note and "pythia-410m" in lm.note
    assert lm.model.config.model_type == "gpt_neox" and not lm.model.training


def test_unknown_fallback_is_refused():
    with pytest.raises(ValueError, match="fallback"):
        offline.load_model("EleutherAI/pythia-410m", offline=True, fallback="zeros")


def test_unreachable_hub_falls_back(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    calls = []

    def refused(address, timeout=None):
        calls.append((address, timeout))
        raise OSError("connection refused")

    monkeypatch.setattr(socket, "create_connection", refused)
    assert not offline.hub_reachable(timeout=1.5)
    assert calls == [(("huggingface.co", 443), 1.5)]
    lm = offline.load_model("meta-llama/Llama-3.2-1B", tiny={"n_layers": 2, "n_kv_heads": 2}, fallback="random")
    assert lm.source == "offline fallback" and "cannot be reached" in lm.note
    assert lm.model.config.model_type == "llama" and lm.model.config.num_key_value_heads == 2


def test_reachable_hub_is_detected(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example:8080")

    class Conn:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    seen = []
    monkeypatch.setattr(socket, "create_connection", lambda addr, timeout=None: seen.append(addr) or Conn())
    assert offline.hub_reachable()
    assert seen == [("mirror.example", 8080)]


def test_family_and_fallback_architectures(monkeypatch):
    monkeypatch.setattr(socket, "create_connection", no_network)
    assert offline.family("EleutherAI/pythia-160m") == "gpt_neox"
    assert offline.family("openai-community/gpt2") == "gpt2"
    assert offline.family("mistralai/Mistral-7B-v0.1") == "llama"
    lm = offline.load_model("gpt2", offline=True, tiny={"n_layers": 2}, fallback="random")
    assert lm.model.config.model_type == "gpt2" and lm.model.config.n_layer == 2
    with pytest.raises(ValueError, match="name"):
        offline.load_model("")


def test_random_init_like_is_a_fresh_copy():
    import torch

    tok = offline.local_tokenizer()
    model = offline.from_config(offline.tiny_config("gpt_neox", len(tok), d_model=32, n_layers=2), seed=0)
    again = offline.from_config(model.config, seed=0)
    fresh = offline.random_init_like(model, seed=5)
    w = dict(model.named_parameters())
    assert all(torch.equal(w[n], p) for n, p in again.named_parameters())
    assert not torch.equal(w["gpt_neox.embed_in.weight"], dict(fresh.named_parameters())["gpt_neox.embed_in.weight"])


def test_local_checkpoint_loads_as_pretrained_and_a_truncated_one_is_refused(monkeypatch, tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    monkeypatch.setattr(socket, "create_connection", no_network)
    tok = offline.local_tokenizer()
    model = offline.from_config(offline.tiny_config("gpt_neox", len(tok), d_model=32, n_layers=2), seed=3)
    good = tmp_path / "good"
    model.save_pretrained(good)
    tok.save_pretrained(good)
    lm = offline.load_model(str(good))  # HF_HUB_OFFLINE is set by conftest: local files only
    assert lm.pretrained and lm.source == "local files" and "pretrained weights" in lm.note
    loaded = dict(lm.model.named_parameters())
    assert all(torch.equal(loaded[n], p) for n, p in model.named_parameters())
    assert lm.tokenizer("Input: apple")["input_ids"] == tok("Input: apple")["input_ids"]
    # the same checkpoint without one weight matrix: refused, never silently random
    bad = tmp_path / "bad"
    model.save_pretrained(bad)
    tok.save_pretrained(bad)
    weights = load_file(bad / "model.safetensors")
    del weights["gpt_neox.layers.0.attention.query_key_value.weight"]
    save_file(weights, bad / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError, match="missing from the checkpoint"):
        offline.load_model(str(bad))
