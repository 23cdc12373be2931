"""Renders every page of the built book in headless Chromium, with the network cut off, and checks
what only a browser can tell (`make book` runs it after tests/check_book.py):

- math is typeset: every ``.math`` element holds MathJax output (``mjx-container``). Raw ``\\(`` on
  the page means MathJax did not load, e.g. from a CDN that cannot be reached;
- no visible code input is wider than its column (it would scroll sideways at 1280 px): the page is
  measured at 1280 x 900 CSS px, code hidden behind a toggle (a closed ``<details>``) aside.

Each page is copied beside itself with a small script added, which waits for MathJax and writes
what it measured into the page; Chromium's ``--dump-dom`` prints it. Without Chromium the check is
skipped with a message (exit 0), except where ``BWT_REQUIRE_BROWSER=1`` (``.ci/run`` sets it, after
installing Debian's ``chromium`` when missing).

Usage: ``python tests/check_browser.py [BUILD_DIR]`` (default ``_build``); exit 1 with a line per
problem.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_book import toc_pages  # noqa: E402

MARK = "bwt-browser-check"
# Runs in the page: after MathJax has typeset (or at once, on a page without math), count math left
# raw and visible code blocks that overflow their box, and write the result into the page.
PROBE = """<script>
(function () {
  function measure() {
    var raw = [], wide = [];
    document.querySelectorAll('.math').forEach(function (m) {
      if (!m.querySelector('mjx-container') && m.tagName !== 'MJX-CONTAINER') raw.push(m.textContent.slice(0, 40));
    });
    document.querySelectorAll('.cell_input pre').forEach(function (p) {
      if (p.offsetParent !== null && !p.closest('details:not([open])') && p.scrollWidth > p.clientWidth + 1)
        wide.push({first: p.textContent.split('\\n')[0].slice(0, 50), over: p.scrollWidth - p.clientWidth});
    });
    var out = document.createElement('pre');
    out.id = '%s';
    out.textContent = JSON.stringify({mathjax: !!window.MathJax && !!window.MathJax.startup,
                                      math: document.querySelectorAll('.math').length, raw: raw, wide: wide});
    document.body.appendChild(out);
  }
  window.addEventListener('load', function () {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(measure, measure);
    } else { setTimeout(measure, 500); }
  });
})();
</script>""" % MARK


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def render(browser: str, page: Path) -> dict | None:
    """What the probe measured on one page, or None if Chromium printed no result."""
    probe = page.with_name(f".{page.stem}.browser-check.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    try:
        run = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
             "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: a CDN cannot be reached
             "--virtual-time-budget=20000", "--dump-dom", probe.as_uri()],
            capture_output=True, text=True, timeout=120)
    finally:
        probe.unlink()
    found = re.search(rf'<pre id="{MARK}"[^>]*>(.*?)</pre>', run.stdout, re.S)
    if not found:
        return None
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(text)


def problems(build: Path, browser: str) -> list[str]:
    html = build / "html"
    rels = [page.relative_to(ROOT) for page in toc_pages(ROOT)]
    pages = [(rel, html / rel.with_suffix(".html")) for rel in rels]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda item: render(browser, item[1]), pages))
    out = []
    for (rel, _), result in zip(pages, results):
        if result is None:
            out.append(f"{rel}: Chromium rendered no result")
            continue
        if result["raw"]:
            out.append(f"{rel}: {len(result['raw'])} of {result['math']} math elements not typeset "
                       f"(MathJax loaded: {result['mathjax']}), e.g. {result['raw'][0]!r}")
        for block in result["wide"]:
            out.append(f"{rel}: code wider than the column by {block['over']} px: {block['first']!r}")
    return out


def main(argv: list[str]) -> int:
    build = Path(argv[0]) if argv else ROOT / "_build"
    browser = chromium()
    if browser is None:
        if os.environ.get("BWT_REQUIRE_BROWSER") == "1":
            print("check_browser: no Chromium found (apt-get install chromium), and BWT_REQUIRE_BROWSER=1")
            return 1
        print("check_browser: SKIPPED, no Chromium on this machine (apt-get install chromium to run it)")
        return 0
    found = problems(build, browser)
    for line in found:
        print(line)
    pages = len(toc_pages(ROOT))
    print(f"check_browser: {pages} pages rendered offline in {Path(browser).name}; {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
