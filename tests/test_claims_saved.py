"""The saved scorecard (bwt_lite.claims.saved): computed once per package fingerprint, read by every page;
each chapter that teaches a claim shows its box."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bwt_lite.claims import CLAIM_IDS, CLAIMS, Claim, saved
from bwt_lite.claims.catalogue import group_ids

ROOT = Path(__file__).resolve().parents[1]


def fake_rows(ids):
    return [Claim(id=cid, claim=CLAIMS[cid].claim, source=CLAIMS[cid].source, chapter=CLAIMS[cid].chapter,
                  paper="1 bit", ours="2 bits", verdict="partly", reason=f"measured {cid}",
                  details={"bars": {"entropy_mae_bits": {"baseline": "window-8", "value": 5e-5}}}) for cid in ids]


@pytest.fixture
def counted(monkeypatch):
    calls = []

    def scorecard(ids=None, log=None):
        calls.append(tuple(ids))
        return fake_rows(ids)

    monkeypatch.setattr(saved, "scorecard", scorecard)
    return calls


def test_fingerprint_names_the_package():
    fp = saved.fingerprint()
    assert re.fullmatch(r"[0-9a-f]{16}", fp) and saved.fingerprint() == fp
    assert saved.saved_dir(Path("/x")) == Path("/x") / "scorecard" / fp


def test_a_group_is_computed_once_and_read_after(tmp_path, counted):
    first = saved.saved_group("recurrence", root=tmp_path)
    again = saved.saved_group("recurrence", root=tmp_path)
    assert counted == [group_ids("recurrence")]  # computed once
    assert [r.to_dict() for r in first] == [r.to_dict() for r in again]
    stored = json.loads((saved.saved_dir(tmp_path) / "recurrence.json").read_text())
    assert stored["fingerprint"] == saved.fingerprint() and [c["id"] for c in stored["claims"]] == list(group_ids("recurrence"))


@pytest.mark.parametrize("spoil", ["truncated", "other fingerprint", "other claims"])
def test_a_spoilt_record_is_computed_again(tmp_path, counted, spoil):
    saved.saved_group("frame", root=tmp_path)
    path = saved.saved_dir(tmp_path) / "frame.json"
    record = json.loads(path.read_text())
    if spoil == "truncated":
        path.write_text(path.read_text()[:40])
    elif spoil == "other fingerprint":
        path.write_text(json.dumps({**record, "fingerprint": "0" * 16}))
    else:
        path.write_text(json.dumps({**record, "claims": record["claims"][:1]}))
    rows = saved.saved_group("frame", root=tmp_path)
    assert len(counted) == 2 and [r.id for r in rows] == list(group_ids("frame"))


def test_saved_scorecard_is_in_catalogue_order_and_refuses_unknown_ids(tmp_path, counted):
    rows = saved.saved_scorecard(["recurrence-opaque", "bijection-mlp"], root=tmp_path)
    assert [r.id for r in rows] == ["bijection-mlp", "recurrence-opaque"]
    with pytest.raises(ValueError, match="unknown claim ids"):
        saved.saved_scorecard(["no-such-claim"], root=tmp_path)
    with pytest.raises(ValueError, match="unknown claim group"):
        saved.saved_group("nosuch", root=tmp_path)


def test_the_box_shows_the_scorecard_row(tmp_path, counted):
    row = saved.saved_scorecard(["hmm-transformer"], root=tmp_path)[0]
    box = saved.claim_box_html(row)
    assert box.startswith('<div id="claim-hmm-transformer"')
    for text in ("partly", "1 bit", "2 bits", "measured hmm-transformer", "window-8", "scorecard.html#claim-hmm-transformer"):
        assert text in box


def test_every_claim_has_its_box_in_its_chapter():
    """The chapter a claim names renders its box (the built page then has the element ``claim-<id>``)."""
    for cid in CLAIM_IDS:
        nb = json.loads((ROOT / "chapters" / f"{CLAIMS[cid].chapter}.ipynb").read_text())
        calls = [src for src in ("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
                 if "claim_box(" in src]
        assert any(f'"{cid}"' in src for src in calls), f"{CLAIMS[cid].chapter} shows no box for {cid}"
    assert sorted(saved.chapter_claims(13)) == sorted(c for c in CLAIM_IDS if c.startswith("recurrence"))


def test_main_saves_every_group_once(tmp_path, counted, monkeypatch, capsys):
    monkeypatch.setenv("BWT_CACHE_DIR", str(tmp_path))
    assert saved.main([]) == 0 and saved.main([]) == 0
    assert sorted(counted) == sorted(group_ids(g) for g in saved.GROUPS)  # each group computed once
    assert f"{len(CLAIM_IDS)} claims" in capsys.readouterr().out.splitlines()[-1]
