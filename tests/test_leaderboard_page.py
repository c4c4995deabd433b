"""The rendered leaderboard page in a real browser: headless Chromium loads the offline page, the plots decode and
the table sorts. Skips where no Chromium is installed (Debian: apt-get install chromium)."""

import json
import re
import shutil
import subprocess

import pytest

from leaderboard.__main__ import main
from leaderboard.protocol import PROTOCOL_DIR

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")


def _dom(url: str, tmp_path) -> str:
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


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
    return [re.findall(r"<td>(.*?)</td>", row)[1] for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_page_renders_the_table_and_both_plots_and_sorts_in_chromium(site, tmp_path):
    # the address #sort=1 / #sort=1-desc sorts by column 1, the entry's label, as a click on its header does
    ascending = _dom(site.as_uri() + "#sort=1", tmp_path)
    assert 'data-plots-rendered="2"' in ascending            # both PNGs decoded (naturalWidth > 0)
    assert [r.split("#")[0] for r in _rows(ascending)] == ["random", "reference"]
    descending = _dom(site.as_uri() + "#sort=1-desc", tmp_path)
    assert [r.split("#")[0] for r in _rows(descending)] == ["reference", "random"]
