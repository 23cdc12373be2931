"""The scorecard for readers (bwt_lite.claims.reasons): plain reasons built from a row's fields, the
verdicts counted by part of the book (the parts of _toc.yml), and the HTML of the start page and the
scorecard page."""
import re
from pathlib import Path

import pytest
import yaml

from bwt_lite import claims as C
from bwt_lite.claims import reasons as R

ROOT = Path(__file__).resolve().parents[1]
# The architecture cells (Paper I's table): their plain reason is built from the row's details.
CELL_IDS = {cid for cid, info in C.CLAIMS.items() if info.group in ("bijection", "hmm", "recall")}
JARGON = re.compile(r"<=|>=|window-\d|realise|entropy MAE|R\^2")


def _row(cid: str, verdict: str, **details) -> C.Claim:
    info = C.CLAIMS[cid]
    return C.Claim(id=cid, claim=info.claim, source=info.source, chapter=info.chapter, paper="p", ours="o",
                   verdict=verdict, reason="entropy MAE 0.0135 <= 0.5x prior & co", details=details)


def _cell(cid: str = "bijection-mamba", verdict: str = C.REPRODUCED, *, mae: float = 0.02, paper: float = 0.01,
          unit: str = "bits", succeeds: bool = True, realises: bool = True, passes: bool = True, size: bool = True,
          bar: str = "prior", **extra) -> C.Claim:
    return _row(cid, verdict, ours={"entropy_mae_bits": mae, "kl_bits": mae, "accuracy": 0.5}, paper=paper,
                paper_unit=unit, paper_succeeds=succeeds, ours_realises=realises, ours_passes_threshold=passes,
                size_holds=size, bars={"entropy_mae_bits": {"baseline": bar, "value": 1.0}}, **extra)


def test_parts_are_the_toc_captions_with_their_chapters():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    chapter_parts = []
    for part in toc["parts"]:
        numbers = tuple(int(Path(c["file"]).name[:2]) for c in part["chapters"] if c["file"].startswith("chapters/"))
        if numbers:
            chapter_parts.append((part["caption"], numbers))
    assert list(R.PARTS) == chapter_parts


def test_every_claim_has_a_part_and_a_plain_test():
    assert len(CELL_IDS) == 11
    for cid, info in C.CLAIMS.items():
        row = _row(cid, C.REPRODUCED)
        assert R.part_of(row) in {caption for caption, _ in R.PARTS}
        if cid in CELL_IDS:  # explained from the row's details, never from texts of its own
            assert not (info.test or info.partly or info.failed), cid
        else:
            assert info.test, f"{cid}: neither an architecture cell nor with a plain test (ClaimInfo.test)"
    assert set(R.ENDINGS) == set(C.VERDICTS)


@pytest.mark.parametrize("cid", sorted(set(C.CLAIM_IDS) - CELL_IDS))
@pytest.mark.parametrize("verdict", C.VERDICTS)
def test_plain_reason_of_every_other_claim_is_plain(cid, verdict):
    text = R.plain_reason(_row(cid, verdict))
    assert text.startswith(C.CLAIMS[cid].test) and text.endswith(".")
    assert not JARGON.search(text), text
    if verdict == C.PARTLY:
        assert "partly" in text


def test_plain_reason_of_a_cell_that_holds():
    text = R.plain_reason(_cell())
    assert text == ("Our model rules out the values already used, as the exact posterior does: it clearly beats a "
                    "predictor that ignores the context, and its error is 2x the paper's error (within the 3x "
                    "allowed).")


def test_plain_reason_says_why_a_cell_is_only_partly():
    size = R.plain_reason(_cell(verdict=C.PARTLY, mae=0.001, size=False))
    assert "10x smaller than the paper's error (outside the 3x allowed)" in size and size.endswith("partly.")
    seeds = R.plain_reason(_cell(verdict=C.PARTLY, seeds_hold=False))
    assert "Fewer than 4 of 5 training runs" in seeds
    abstract = R.plain_reason(_cell("bijection-headline", C.PARTLY, second_size_holds=False))
    assert "the paper's abstract" in abstract and abstract.endswith("partly.")


def test_plain_reason_of_cells_that_fail():
    missed = R.plain_reason(_cell("hmm-mamba", C.NOT_REPRODUCED, realises=False, bar="window-2",
                                  slow_hmm={"realises": False}))
    assert missed.startswith("The paper's model tracks the hidden state") and "ours does not" in missed
    assert "every exact filter that reads only the last 0 to 8 symbols (the longest is nearly exact)" in missed
    assert "does not track the hidden state either" in missed
    slow = R.plain_reason(_cell("hmm-transformer", C.PARTLY, realises=False, slow_hmm={"realises": True}))
    assert "does track the hidden state" in slow and slow.endswith("counts as partly.")
    both_fail = R.plain_reason(_cell("hmm-mlp", C.REPRODUCED, mae=1.0, paper=1.0, succeeds=False, realises=False,
                                     passes=False))
    assert both_fail.startswith("Like the paper's, our model fails") and "about the paper's error" in both_fail
    ours_passes = R.plain_reason(_cell("bijection-mlp", C.NOT_REPRODUCED, succeeds=False))
    assert "but ours succeeds" in ours_passes
    recall = R.plain_reason(_cell("recall-lstm", C.PARTLY, unit="% accuracy", paper=0.5, succeeds=False,
                                  realises=False, passes=False, size=False))
    assert "its accuracy, 50.0 %, is more than 5 points away from the paper's 0.5 %" in recall
    for text in (missed, slow, both_fail, ours_passes, recall):
        assert not JARGON.search(text), text


def test_counts_by_part_and_the_summary():
    rows = [_row("bijection-headline", C.REPRODUCED), _row("bijection-mlp", C.PARTLY),
            _row("hmm-transformer", C.NOT_REPRODUCED), _row("llm-sula", C.NOT_TESTABLE)]
    parts = R.by_part(rows)
    assert [p["part"] for p in parts] == ["Belief accumulation", "Three more wind tunnels",
                                          "Paper III: the same geometry in language models"]
    assert parts[0]["claims"] == 2 and parts[0]["counts"] == {"reproduced": 1, "partly": 1, "not reproduced": 0,
                                                               "not testable here": 0}
    assert sum(p["claims"] for p in parts) == len(rows)
    assert R.counts_text(parts[0]["counts"]) == "1 reproduced, 1 partly"
    assert R.chapters_text((1, 2)) == "chapters 1-2" and R.chapters_text((6,)) == "chapter 6"
    html = R.summary_html(rows)
    assert "Belief accumulation <small>(chapters 1-2)</small>" in html and "all 4 claims" in html
    assert all(v in html for v in C.VERDICTS)


def test_reader_table_shows_the_plain_reason_and_keeps_the_measurement():
    rows = [_cell(), _row("layer-ablation", C.PARTLY)]
    html = R.reader_table_html(rows)
    assert html.startswith("<p>2 claims: 1 reproduced, 1 partly.</p>")
    assert 'id="claim-bijection-mamba"' in html and 'href="../chapters/06_three_primitives.html"' in html
    assert R.plain_reason(rows[0]).replace("'", "&#x27;") in html
    assert "<details><summary><small>the measurement</small></summary>" in html
    assert "entropy MAE 0.0135 &lt;= 0.5x prior &amp; co" in html  # the row's own reason, escaped, kept


def test_recorded_paper_scale_rows_get_plain_reasons():
    rows = C.recorded_rows()
    for row in rows:
        text = R.plain_reason(row)
        assert text and not JARGON.search(text), (row.id, text)
    html = R.paper_scale_reader_html()
    assert ("<table>" in html) if rows else ("No paper-scale measurement" in html)


def test_start_page_names_the_repository_and_links_no_maintainer_notes():
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    intro = (ROOT / "book" / "intro.md").read_text()
    assert f"git clone {url}\n" in intro and f"cd {url.rsplit('/', 1)[1]}\n" in intro
    for page in ("intro.md", "scorecard.md", "instructors.md"):
        text = (ROOT / "book" / page).read_text()
        assert "{ref}`lab-" not in text and not re.search(r"\{doc\}`[^`]*lab_notes", text), page
    scorecard = (ROOT / "book" / "scorecard.md").read_text()
    assert "```{note}" in scorecard and "reader_table_html(saved_scorecard())" in scorecard
    assert "summary_html(saved_scorecard())" in intro
