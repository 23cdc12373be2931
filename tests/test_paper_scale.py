"""The scorecard's paper-scale rows: measured by the lite rules on checkpoints in a folder, recorded,
and read back (the shipped record is checked for what it must say about how its models trained)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bwt_lite.checkpoints import checkpoint_dir
from bwt_lite.claims import (CLAIM_IDS, FAST, PAPER_SCALE_IDS, VERDICTS, format_paper_scale, load_paper_scale,
                             recorded_rows, to_dict, trained_text)
from bwt_lite.claims.paper_scale import PaperScaleContext, measure
from bwt_lite.recipes import get_preset
from bwt_lite.store.checkpoint import save_checkpoint
from bwt_lite.train import RunOptions, fit


@pytest.fixture(scope="module")
def tiny_paper_folder(tmp_path_factory):
    """A folder with one "paper-scale" bijection transformer: the paper preset made tiny, trained 3 steps."""
    root = tmp_path_factory.mktemp("paper")
    paper = get_preset("bijection", "transformer", "paper")
    preset = replace(paper, model=replace(paper.model, d_model=16, n_layers=2, n_heads=2)).with_train(
        steps=3, warmup_steps=1, eval_every=3, eval_episodes=8)
    model, state = fit(preset.tunnel, preset.model, preset.train, run=RunOptions(progress=False))
    directory = checkpoint_dir(preset, root)
    directory.mkdir(parents=True)
    save_checkpoint(directory, preset, model, state, {"device": "cpu", "device_name": "cpu (1 thread)",
                                                      "precision": "fp32", "compile": False})
    return root


def test_context_serves_the_recorded_preset_and_refuses_other_models(tiny_paper_folder):
    ctx = PaperScaleContext(tiny_paper_folder, budget=FAST)
    assert ctx.preset("bijection", "transformer").train.steps == 3
    model, label = ctx.geometry_model("bijection")
    assert model.cfg.n_layers == 2 and "paper-scale" in label
    for tunnel, arch in (("bijection", "mlp"), ("hmm", "transformer")):
        with pytest.raises(KeyError, match="no paper-scale"):
            ctx.model(tunnel, arch)
    with pytest.raises(FileNotFoundError):
        PaperScaleContext(tiny_paper_folder / "empty")


def test_measure_skips_groups_without_their_model_and_round_trips(tiny_paper_folder, tmp_path):
    lines = []
    result = measure(tiny_paper_folder, budget=FAST, log=lines.append)
    ids = [r["id"] for r in result["claims"]]
    assert ids[0] == "bijection-headline" and "keys-orthogonal" in ids
    assert "hmm-transformer" not in ids and any("skipped" in line for line in lines)  # no HMM model there
    assert set(ids) <= set(PAPER_SCALE_IDS) and all(r["verdict"] in VERDICTS for r in result["claims"])
    (model,) = result["models"]
    assert (model["steps"], model["schedule_steps"], model["layers"]) == (3, 3, 2)
    path = tmp_path / "paper_scale.json"
    path.write_text(json.dumps(result))
    rows = recorded_rows(path)
    assert [r.id for r in rows] == ids
    text = format_paper_scale(load_paper_scale(path))
    assert text.startswith("At Paper I's scale") and trained_text(model) in text
    assert "cut" not in trained_text(model) and "schedule" not in trained_text(model)
    d = to_dict([], paper_scale=load_paper_scale(path))
    assert sum(d["paper_scale"]["counts"].values()) == len(ids)


def test_trained_text_says_when_a_run_stopped_before_its_schedule_ended():
    model = {"tunnel": "hmm", "layers": 9, "d_model": 256, "parameters": 7161605, "steps": 11500,
             "schedule_steps": 50000, "batch_size": 256, "train_time_s": 442.0,
             "trained_on": {"device_name": "NVIDIA H200", "precision": "bf16 autocast"}}
    assert trained_text(model) == ("hmm: 9 layers x 256, 7,161,605 parameters, 11,500 steps x 256 episodes (stopped at "
                                   "23% of its 50,000-step schedule), 7.4 min on NVIDIA H200 (bf16 autocast)")


def test_the_shipped_record_names_its_models_and_uses_known_claims():
    recorded = load_paper_scale()
    assert recorded is not None, "bwt_lite/data/paper_scale.json is missing"
    for m in recorded["models"]:
        assert m["trained_on"]["device"] == "cuda" and 0 < m["steps"] <= m["schedule_steps"]
        assert m["history"] and m["history"][-1]["step"] <= m["steps"]
    rows = recorded_rows()
    assert rows and {r.id for r in rows} <= set(PAPER_SCALE_IDS) <= set(CLAIM_IDS)
    assert all(r.verdict in VERDICTS and r.reason for r in rows)
    assert len(recorded["commands"]) == 2


def test_html_tables_anchor_each_row_and_filter_by_id():
    from bwt_lite.claims import html_table, paper_scale_html

    rows = recorded_rows()
    page = html_table(rows[:2], anchor="x")
    assert page.count("<tr id=\"x-") == 2 and f'id="x-{rows[0].id}"' in page
    one = paper_scale_html(["layer-ablation"])  # measures the bijection and HMM models: both listed, no other
    assert one.count('<tr id="paper-scale-') == 1 and one.count("<li>") == 2 and "1 claim:" in one
    assert "<li>bijection:" in one and "<li>hmm:" in one
    assert paper_scale_html(["recall-transformer"]).count("<li>") == 1


def test_carried_rows_name_the_models_they_were_measured_on():
    from bwt_lite.claims import Claim
    from bwt_lite.claims.paper_scale import models_measured

    def row(cid, carried):
        return Claim(id=cid, claim="", source="", chapter="", paper="", ours="", verdict="partly", reason="",
                     details={"carried": True} if carried else {})

    recorded = {"models": [{"tunnel": "hmm", "key": "new-hmm"}],
                "earlier_models": [{"tunnel": "bijection", "key": "full-bij", "rows": ["bijection-headline"]},
                                   {"tunnel": "bijection", "key": "short-bij", "rows": ["layer-ablation"]},
                                   {"tunnel": "hmm", "key": "short-hmm", "rows": ["layer-ablation"]}]}
    keys = lambda rows: [m["key"] for m in models_measured(recorded, rows)]  # noqa: E731
    assert keys([row("hmm-transformer", False)]) == ["new-hmm"]
    assert keys([row("bijection-headline", True)]) == ["full-bij"]
    assert keys([row("layer-ablation", True)]) == ["short-bij", "short-hmm"]
    old = {"models": [], "earlier_models": [{"tunnel": "bijection", "key": "x"}]}  # before models listed their rows
    assert [m["key"] for m in models_measured(old, [row("bijection-headline", True)])] == ["x"]


def test_trained_text_says_when_the_model_is_not_the_median_seed():
    model = {"tunnel": "bijection", "layers": 6, "d_model": 192, "parameters": 2677440, "steps": 50000,
             "schedule_steps": 50000, "batch_size": 256, "train_time_s": 504.0, "seed": 1,
             "trained_on": {"device_name": "NVIDIA H200", "precision": "bf16 autocast", "compile": True},
             "seeds": [{"seed": 0, "entropy_mae_bits": 0.0097}, {"seed": 1, "entropy_mae_bits": 0.0098},
                       {"seed": 2, "entropy_mae_bits": 0.0096}]}
    text = trained_text(model)
    assert "(bf16 autocast, torch.compile)" in text
    assert "seed 1 (0.00980 bits), not the median of the 3 seeds, seed 0, whose checkpoint was not kept" in text
    assert "(the others: seed 0 0.00970, seed 2 0.00960 bits)" in text
    model["seed"] = 0
    assert "seed 0, the median of 3 seeds" in trained_text(model)


def test_measure_carries_rows_with_the_models_they_were_measured_on(tiny_paper_folder):
    """Rows whose model is not in the folder come from the earlier record, each with its own models: a row
    measured there keeps that record's model, a row it had carried keeps the model it had carried."""
    def model(tunnel, key, steps):
        return {"tunnel": tunnel, "key": key, "steps": steps, "name": f"{tunnel}-transformer-paper"}

    def row(cid, carried=False):
        return {"id": cid, "claim": "", "source": "", "chapter": "", "paper": "", "ours": "", "verdict": "partly",
                "reason": "r", "details": {"carried": True} if carried else {}}

    earlier = {"models": [model("recall", "R", 50000), model("hmm", "H", 50000)],
               "earlier_models": [model("bijection", "B-short", 100), model("hmm", "H-short", 100)],
               "claims": [row("recall-transformer"), row("hmm-transformer"), row("layer-ablation", carried=True)]}
    result = measure(tiny_paper_folder, budget=FAST, earlier=earlier)
    by_id = {r["id"]: r for r in result["claims"]}
    assert by_id["recall-transformer"]["details"]["carried"] and "[measured in an earlier" in by_id[
        "recall-transformer"]["reason"]
    rows_of = {m["key"]: m["rows"] for m in result["earlier_models"]}
    assert rows_of == {"R": ["recall-transformer"], "H": ["hmm-transformer"],
                       "B-short": ["layer-ablation"], "H-short": ["layer-ablation"]}
    assert by_id["bijection-headline"]["details"].get("carried") is None  # measured on the folder's model
