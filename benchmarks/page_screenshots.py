"""Screenshots of the two pages as a reader sees them, at 1400 and 390 px, with headless Chromium: the leaderboard page
(``board/index.html``, ``python -m leaderboard render``) and the credit suite's page (``benchmark-credit``'s
``index.html``), the latter rebuilt from a run's ``results.json`` (``--results``) or, by default, from the stored
``credit-micro@4`` entries (their per-seed setting scores, anchors and tokens; the exploitability table needs a
``results.json``).

    python benchmarks/page_screenshots.py [--board board/index.html] [--results OUT/credit-micro@4/results.json]
        [--suite KEY] [--out benchmarks/screenshots] [--height 1800]

Headless Chromium lays a page out at least 500 px wide whatever ``--window-size`` says, so each page is shown in an
iframe of the screenshot's width; the PNGs are cut to that width and the top ``--height`` px (1.6 times that at
390 px) and stored with 256 colours, the methods' among them (:func:`leaderboard.figures.indexed_png`)."""

from __future__ import annotations

import argparse
import base64
import io
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from leaderboard.figures import indexed_png
from leaderboard.stats import mean_ci
from leaderboard.store import load_entries
from leaderboard.style import METHOD_STYLES
from leaderboard.suite import load_suite, page_context, suite_page


def scored_from_entries(store: Path, key: str) -> dict:
    """A suite's ``score()`` output rebuilt from its stored entries (per setting and seed, the normalized score)."""
    suite = load_suite(key)
    methods, anchors = {}, {}
    order = list(METHOD_STYLES)                   # the built-in methods' order, as benchmark-credit runs them
    for e in sorted(load_entries(store, key), key=lambda e: (order.index(e["method"]) if e["method"] in order
                                                             else len(order), e["submitted"])):
        r, seeds = e["results"], list(suite.train["seeds"])
        anchors.update(e["manifest"]["anchors"])
        settings = {s: {"family": f, "knob": r["settings"][s]["knob"], "seeds": r["settings"][s]["seeds"],
                        "ci": tuple(r["settings"][s]["ci"])}
                    for f, x in r["families"].items() for s in x["settings"]}
        families = {}
        for f, x in r["families"].items():
            per_seed = [float(np.mean([settings[s]["seeds"][i] for s in x["settings"]])) for i in range(len(seeds))]
            families[f] = {"seeds": per_seed, "ci": mean_ci(per_seed), "settings": x["settings"]}
        agg = [float(np.mean([x["seeds"][i] for x in families.values()])) for i in range(len(seeds))]
        tokens = e["manifest"]["tokens"]
        methods[e["method"]] = {"seeds": seeds, "settings": settings, "families": families,
                                "aggregate": {"seeds": agg, "ci": mean_ci(agg)},
                                "tokens": {"main": tokens["train_main"], "branches": tokens["train_branches"]}}
    return {"suite": key, "anchors": anchors, "methods": methods}


def shoot(chromium: str, page: Path, width: int, height: int, out: Path, work: Path) -> None:
    wrapper = work / f"wrap-{width}.html"
    wrapper.write_text(f"<!DOCTYPE html><html><body style='margin:0'><iframe src='{page.resolve().as_uri()}' "
                       f"style='width:{width}px;height:{height}px;border:0'></iframe></body></html>")
    shot = work / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    f"--user-data-dir={work / 'profile'}", f"--window-size={max(width, 600)},{height}",
                    "--hide-scrollbars", "--virtual-time-budget=10000", f"--screenshot={shot}", wrapper.as_uri()],
                   check=True, capture_output=True, timeout=300)
    buf = io.BytesIO()
    Image.open(shot).convert("RGB").crop((0, 0, width, height)).save(buf, format="png")
    out.write_bytes(base64.b64decode(indexed_png(buf, [s.colour for s in METHOD_STYLES.values()])))
    print(f"{out}: {out.stat().st_size // 1024} KiB")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--board", default=str(ROOT / "board" / "index.html"))
    p.add_argument("--results", default=None, help="a benchmark-credit results.json (default: the stored entries)")
    p.add_argument("--store", default=str(ROOT / "board" / "entries"))
    p.add_argument("--suite", default="credit-micro@4", help="the suite whose stored entries make the suite page")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "screenshots"))
    p.add_argument("--height", type=int, default=1800)
    args = p.parse_args()
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
                    None)
    if chromium is None:
        print("no chromium installed (apt-get install chromium)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.results:
            scored = json.loads(Path(args.results).read_text())["scored"]
        else:
            scored = scored_from_entries(Path(args.store), args.suite)
        suite = load_suite(scored["suite"])
        method = "broadcast" if "broadcast" in scored["methods"] else next(iter(scored["methods"]))
        runs = sum(len(v["seeds"]) * len(v["settings"]) for v in scored["methods"].values())
        suite_html = work / "suite.html"
        suite_html.write_text(suite_page(suite, scored, page_context(suite, scored, method, runs=runs)),
                              encoding="utf-8")
        for name, page in (("leaderboard", Path(args.board)), ("suite", suite_html)):
            for width in (1400, 390):
                height = args.height if width > 500 else int(args.height * 1.6)
                shoot(chromium, page, width, height, out / f"{name}-{width}.png", work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
