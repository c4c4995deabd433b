"""The rendered leaderboard page in a real browser: headless Chromium loads the offline page, the plots decode, the
table sorts, the verdict is there, one method has one colour in two figures (the drawn pixels, not only the
recorded colours) and nothing overflows the body at 390 px. Skips where no Chromium is installed (Debian: apt-get
install chromium)."""

from __future__ import annotations

import json
import re

import pytest

from leaderboard.__main__ import main
from leaderboard.protocol import PROTOCOL_DIR
from tests.leaderboard.browser import _PROBE, CHROMIUM, _dom, _probe
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("page")
    raw = json.loads((PROTOCOL_DIR / "policy.json").read_text())
    raw["id"], raw["seeds"]["count"] = "page-test", 8
    raw["tasks"] = [t for t in raw["tasks"] if t["env_id"] == "kuhn_poker-v0"]
    protocol = root / "page-test.json"
    protocol.write_text(json.dumps(raw))
    store = root / "store"
    for player in ("reference", "random"):
        sub = root / player
        assert main(["evaluate", "--protocol", str(protocol), "--player", player, "--method", player,
                     "--out", str(sub), "--no-progress"]) == 0
        assert main(["submit", str(sub), "--protocol", str(protocol), "--store", str(store)]) == 0
    assert main(["render", "--store", str(store), "--out", str(root / "site")]) == 0
    return root / "site" / "index.html"


def _rows(dom: str) -> list[str]:
    body = re.search(r"<tbody>(.*?)</tbody>", dom, re.S).group(1)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]
    return [re.sub(r"<[^>]+>", "", row[1]) for row in cells]          # the entry: its name, then #hash


def test_page_renders_the_table_and_both_plots_and_sorts_in_chromium(site, tmp_path):
    # the address #sort=1 / #sort=1-desc sorts by column 1, the entry's label, as a click on its header does
    ascending = _dom(site.as_uri() + "#sort=1", tmp_path)
    assert 'data-plots-rendered="2"' in ascending            # both PNGs decoded (naturalWidth > 0)
    assert [r.split("#")[0] for r in _rows(ascending)] == ["random", "reference"]
    descending = _dom(site.as_uri() + "#sort=1-desc", tmp_path)
    assert [r.split("#")[0] for r in _rows(descending)] == ["reference", "random"]


def test_page_gives_the_verdict_fixed_colours_and_fits_a_phone(site, tmp_path):
    probed = tmp_path / "probed.html"
    probed.write_text(site.read_text().replace("</body>", _PROBE))
    phone = _dom(probed.as_uri(), tmp_path, width=390)
    verdict = re.search(r"<div class=\"verdict\"[^>]*>(.*?)</div>", phone, re.S).group(1)
    # one sentence per paired comparison, with its test and Holm's correction named (issue 40)
    assert re.search(r"reference (vs random on the aggregate of 2 tasks: not separated|above random on the aggregate "
                     r"of 2 tasks:) \(?paired difference [+-]\d\.\d+ \[", verdict), verdict
    assert "Holm over 1 comparison" in verdict, verdict
    assert int(_probe(phone, "overflow")) <= 0, "the body scrolls sideways at 390 px"
    pixels = json.loads(_probe(phone, "pixels"))
    for method in ("reference", "random"):
        (colour_a, drawn_a), (colour_b, drawn_b) = pixels["iqm"][method], pixels["profile"][method]
        assert colour_a == colour_b, (method, colour_a, colour_b)
        assert drawn_a > 20 and drawn_b > 20, (method, drawn_a, drawn_b)      # drawn in that colour in both
    assert pixels["iqm"]["reference"][0] != pixels["iqm"]["random"][0]
