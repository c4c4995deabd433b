"""Both pages in headless Chromium at a 390 px phone width, with all 13 built-in methods on them: the headline
sentence is the first thing under the title, no figure has text drawn past its edge (measured as it was saved) or
shown under 9 CSS px, the 13 methods' colours stay apart, and the body does not scroll sideways. Skips where no
Chromium is installed (Debian: apt-get install chromium)."""

from __future__ import annotations

import html
import itertools
import json
import re
import shutil
import subprocess

import pytest

from leaderboard.__main__ import main
from leaderboard.suite import load_suite, page_context, suite_page
from tests.leaderboard.fake_pages import METHODS, delta_e, fake_scored, spread_means, store_fake_entries

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")

# Headless Chromium lays a page out at least 500 px wide whatever --window-size says, so the page is shown in a
# 390 px wide iframe of a wrapper page; it posts what a reader sees to the wrapper, which keeps it in
# <body data-seen='...'> for --dump-dom: the element right under the <h1> (its class and text), each figure's
# smallest text in CSS px as shown (the PNG's smallest text times the shown width over the PNG's width), what it
# measured past its edge, its colours, and the body's sideways overflow.
_PROBE = """<script>
window.addEventListener('load', () => {
  const first = document.querySelector('h1').nextElementSibling, root = document.documentElement;
  const figs = Array.from(document.querySelectorAll('figure[data-figure]')).map(f => {
    const img = f.querySelector('img'), shown = img.getBoundingClientRect();
    return {key: f.dataset.figure, font: shown.width / img.naturalWidth * parseFloat(f.dataset.minFontPx),
            overflow: parseFloat(f.dataset.overflowPx), colours: JSON.parse(f.dataset.colours),
            decoded: img.naturalWidth > 0, right: shown.right};
  });
  parent.postMessage(JSON.stringify({first: first.className, text: first.textContent, figs: figs,
    overflow: Math.max(root.scrollWidth, document.body.scrollWidth) - window.innerWidth, width: window.innerWidth}),
    '*');
});
</script></body>"""


def _seen(path, tmp_path) -> dict:
    path.write_text(path.read_text(encoding="utf-8").replace("</body>", _PROBE), encoding="utf-8")
    wrapper = tmp_path / "phone.html"
    wrapper.write_text(f"<!DOCTYPE html><html><body style='margin:0'><iframe src='{path.as_uri()}' "
                       "style='width:390px;height:900px;border:0'></iframe><script>window.addEventListener('message', "
                       "e => {{ document.body.dataset.seen = e.data; }});</script></body></html>", encoding="utf-8")
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          f"--user-data-dir={tmp_path / 'profile'}", "--window-size=600,900", "--hide-scrollbars",
                          "--virtual-time-budget=10000", "--dump-dom", wrapper.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(html.unescape(re.search(r'data-seen="([^"]*)"', out.stdout).group(1)))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    suite = load_suite("credit-micro-quick@3")
    scored = fake_scored(suite, spread_means(suite), seeds=5, exploitability=True)
    suite_html = root / "suite.html"
    suite_html.write_text(suite_page(suite, scored, page_context(suite, scored, "broadcast", runs=195)),
                          encoding="utf-8")
    store = root / "store"
    store_fake_entries(store, suite, scored, METHODS, seeds=5)
    assert main(["render", "--store", str(store), "--out", str(root / "site")]) == 0
    return {"suite": suite_html, "board": root / "site" / "index.html"}


@pytest.mark.parametrize("which", ["suite", "board"])
def test_page_at_390_px_opens_with_the_headline_and_its_figures_are_whole_legible_and_apart(pages, which,
                                                                                              tmp_path):
    seen = _seen(pages[which], tmp_path)
    assert seen["width"] == 390
    assert seen["first"] == "page-headline", seen["first"]
    assert re.match(r"credit-micro-quick@3: (None|\d+) of \d+ paired comparisons? separated \(Holm-corrected over "
                    r"\d+, family-wise 5%\)", seen["text"]), seen["text"]
    assert seen["overflow"] <= 0, "the body scrolls sideways at 390 px"
    keys = {f["key"] for f in seen["figs"]}
    assert {"radar", "cost"} <= keys and (which == "suite") == ("scaling-team_size" in keys)
    colours = {}
    for f in seen["figs"]:
        assert f["decoded"], f["key"]
        assert f["overflow"] == 0, (f["key"], "text drawn past the figure's edge")
        assert f["font"] >= 9, (f["key"], f"smallest text {f['font']:.1f} CSS px at 390 px")
        assert f["right"] <= 390, (f["key"], "the figure runs past the screen")
        for m, c in f["colours"].items():
            assert colours.setdefault(m, c) == c, (m, "two colours on one page")
    assert set(colours) == set(METHODS)
    close = [(a, b, round(delta_e(colours[a], colours[b]), 1)) for a, b in itertools.combinations(METHODS, 2)
             if delta_e(colours[a], colours[b]) < 20]
    assert close == [], close
