"""tests/check_browser.py: it finds raw math and code wider than its box in a rendered page, and
without Chromium it skips with a message, or fails where BWT_REQUIRE_BROWSER=1 (CI)."""
import pytest

import check_browser

PAGE = """<html><body><article>
<span class="math notranslate nohighlight">\\(x^2\\)</span>
<div class="cell_input"><pre style="width: 120px; overflow-x: auto">%s</pre></div>
<div class="cell_input"><pre style="width: 600px; overflow-x: auto">short = 1</pre></div>
<details><summary>show code</summary><div class="cell_input"><pre style="width: 120px; overflow-x: auto">%s</pre></div></details>
</article></body></html>"""


@pytest.mark.skipif(check_browser.chromium() is None, reason="no Chromium on this machine")
def test_render_finds_raw_math_and_wide_code(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(PAGE % ("x = " + "1 + " * 40, "hidden = " + "2 + " * 40))
    found = check_browser.render(check_browser.chromium(), page)
    assert found["math"] == 1 and found["raw"] == ["\\(x^2\\)"] and not found["mathjax"]
    assert [w["first"][:6] for w in found["wide"]] == ["x = 1 "]
    assert not list(tmp_path.glob(".*browser-check*")), "the probe copy is removed"


def test_without_chromium_it_skips_visibly_or_fails_in_ci(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(check_browser, "chromium", lambda: None)
    monkeypatch.delenv("BWT_REQUIRE_BROWSER", raising=False)
    assert check_browser.main([str(tmp_path)]) == 0
    assert "SKIPPED" in capsys.readouterr().out
    monkeypatch.setenv("BWT_REQUIRE_BROWSER", "1")
    assert check_browser.main([str(tmp_path)]) == 1


def test_mathjax_ships_with_the_book():
    """Pages load MathJax from the book's own static files (book/assets is copied into _static), the
    release `make mathjax` pins, with its fonts and on-demand TeX extensions."""
    import re
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((root / "_config.yml").read_text())["sphinx"]["config"]
    assert "book/assets" in config["html_static_path"]
    path = config["mathjax_path"]
    assert not path.startswith(("http:", "https:", "//")), "MathJax from a CDN does not load offline"
    shipped = root / "book" / "assets" / path
    assert shipped.stat().st_size > 500_000
    assert list((shipped.parent / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert (shipped.parent / "input" / "tex" / "extensions" / "ams.js").exists()
    pinned = re.search(r"^MATHJAX_VERSION := (\S+)$", (root / "Makefile").read_text(), re.M).group(1)
    assert (shipped.parent / "VERSION").read_text().strip() == pinned
