"""The pages' words (leaderboard/render.py, leaderboard/suite/report.py): the headline sentence is counted from the
Holm-corrected verdict records (never from ranks) and opens each page, the line-by-line verdict sits behind a fold,
boards come newest protocol version first, and every table the terminal prints is on the page."""

from __future__ import annotations

import re

import numpy as np
import pytest

from leaderboard.board import build_board, comparisons
from leaderboard.render import board_headline, markdown, order, page, show_text
from leaderboard.suite import comparison_text, load_suite, page_context, suite_page
from leaderboard.suite.report import suite_headline
from leaderboard.verdicts import comparison, headline, holm_family
from tests.leaderboard.fake_pages import fake_scored


def test_boards_come_newest_version_first_then_the_superseded_ones():
    keys = ["credit-micro-quick@1", "credit-micro-quick@3", "credit-micro@1", "credit-micro@3", "credit-micro@4",
            "policy@1", "policy@2", "credit-micro-quick@2"]
    assert order(keys) == ["credit-micro@4", "policy@2", "credit-micro-quick@3",
                           "credit-micro@3", "credit-micro@1", "policy@1", "credit-micro-quick@2",
                           "credit-micro-quick@1"]


def test_headline_counts_what_the_records_say_not_the_ranks():
    rng = np.random.default_rng(0)
    base = rng.normal(0.5, 0.05, 10)
    records = holm_family([
        # far apart on every one of 10 seeds: exact sign-flip p = 2/1024, separated after Holm over 3
        comparison("coma", "none", "the aggregate of 6 families", base + 0.3, base),
        # a higher mean but the sign flips across seeds: not separated (a rank would put coma above)
        comparison("coma", "loo", "the aggregate of 6 families", base + 0.01, base + rng.normal(0, 0.1, 10)),
        comparison("coma", "rae", "team_size", base - 0.2, base),
    ])
    text = headline(records)
    assert text == ("2 of 3 paired comparisons separated (Holm-corrected over 3, family-wise 5%): coma above none on "
                    "the aggregate of 6 families; coma below rae on team_size; the other 1 did not, and on the "
                    "aggregate not separated: coma vs loo.")


def test_headline_says_when_the_seeds_cannot_separate_anything():
    x = np.linspace(0, 1, 5)
    records = holm_family([comparison("a", "b", "the aggregate of 2 tasks", x + 1, x)])
    assert headline(records) == ("None of 1 paired comparison separated (Holm-corrected over 1, family-wise 5%), "
                                 "and on the aggregate not separated: a vs b (over 5 seeds the exact sign-flip test "
                                 "cannot reach p < 5%: its smallest p is 2/2^5 = 0.0625).")
    assert headline([]).startswith("No paired comparison")


def _entry(method: str, mean: float, seeds: int = 10, protocol: str = "test@1") -> dict:
    rng = np.random.default_rng(abs(hash(method)) % 1000)
    scores = {t: [[mean + rng.normal(0, 0.01)] for _ in range(seeds)] for t in ("kuhn", "hanabi")}
    return {"id": f"{protocol}/{method}", "label": f"{method}#abcdef", "method": method, "protocol": protocol,
            "track": "credit", "submitted": "2026-01-01T00:00:00+00:00", "self_reported": False,
            "results": {"scores": scores, "task_means": {t: mean for t in scores}, "games": {}},
            "manifest": {"players": {"kuhn_poker-v0": [{"model_id": "mlp"}] * seeds},
                         "tokens": {"train_main": 1000, "train_branches": 0}}}


@pytest.fixture(scope="module")
def found():
    entries = [_entry("coma", 0.9), _entry("broadcast", 0.5), _entry("none", 0.5)]
    old = [_entry("coma", 0.9, protocol="test@0"), _entry("none", 0.1, protocol="test@0")]
    return [(build_board(entries, reps=200), entries), (build_board(old, reps=200), old)]


def test_every_surface_opens_the_board_with_its_headline(found):
    board = found[0][0]
    sentence = board_headline(board)
    assert sentence == headline(comparisons(board))
    assert sentence.startswith("2 of 2 paired comparisons separated (Holm-corrected over 2, family-wise 5%): "
                               "coma above ")
    html = page(found)
    body = html.split("<h1>marl_llm_envs leaderboard</h1>", 1)[1]
    assert re.match(r"\s*<p class='page-headline' id='headline'><strong>test@1:</strong> 2 of 2 paired", body)
    box = re.search(r"<div class='verdict' id='verdict-test@1'>(.*?)</div>", html, re.DOTALL).group(1)
    assert box.startswith("<p class='headline'><strong>Verdict:</strong> 2 of 2 paired comparisons separated")
    assert re.search(r"<details><summary>the verdict, line by line \(\d+ lines\)</summary><ul><li>coma above", box)
    assert "<h2 id='test@0'>test@0 (credit track; superseded by test@1)</h2>" in html
    md = markdown(found)
    assert "**Verdict:** 2 of 2 paired comparisons separated" in md and "<details><summary>" in md
    assert "## test@0 (credit track; superseded by test@1)" in md
    assert "  headline: 2 of 2 paired comparisons separated" in show_text(found)


def test_suite_page_opens_with_its_headline_and_shows_every_printed_table():
    suite = load_suite("credit-micro-quick@3")
    scored = fake_scored(suite, {"broadcast": {f.name: 0.8 for f in suite.families},
                                 "shuffled": {f.name: 0.1 for f in suite.families}}, seeds=10, exploitability=True)
    context = page_context(suite, scored, "broadcast", runs=60)
    html = suite_page(suite, scored, context)
    sentence = suite_headline(suite, scored, "broadcast")
    assert sentence.startswith("4 of 4 paired comparisons separated (Holm-corrected over 4")
    body = html.split("</h1>", 1)[1]
    assert body.lstrip().startswith(f"<p class='page-headline' id='headline'><strong>{suite.key}:</strong> "
                                    f"{sentence[:40]}")
    assert "<details><summary>the verdict, line by line (5 lines)</summary>" in html
    # every table of the printed comparison is on the page, the exploitability one included
    text = comparison_text(suite, scored, context)
    assert "the exploitability of the final policy" in text
    assert "<h2>Per setting: the exploitability of the final policy" in html
    side = re.search(r"<table class='board' id='side-exploitability-[^']*'>(.*?)</table>", html, re.DOTALL).group(1)
    assert "kuhn_poker/self-play" in side and len(re.findall(r"<td>0\.\d{3} \[", side)) == 2
