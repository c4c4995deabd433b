"""The best checkpoint and the collapse flag on the suite's tables and both pages (issue 40, item 6): "k/n collapsed"
beside "k/n failed" where the scores count collapses, the best checkpoint's aggregate as a secondary column where
the methods were scored at it, and neither where the results predate them (older entries render as before)."""

from __future__ import annotations

import copy
import re

import pytest

from leaderboard.__main__ import main
from leaderboard.stats import mean_ci
from leaderboard.suite import comparison_text, load_suite, page_context, suite_page
from tests.leaderboard.fake_pages import fake_scored, store_fake_entries

SUITE = "credit-micro-quick@2"       # team_size (n2, n8), message_credit (one setting), zero_sum (Kuhn)
BEST = "best checkpoint, aggregate [95% CI]"


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE)


@pytest.fixture(scope="module")
def plain(suite):
    return fake_scored(suite, {"broadcast": {"team_size": 0.8, "message_credit": 0.6, "zero_sum": 0.5},
                               "none": {"team_size": 0.4, "message_credit": 0.6, "zero_sum": 0.5}})


def _with_checkpoints(scored: dict, collapsed: dict[str, int], lift: float = 0.05) -> dict:
    """``scored`` as :func:`leaderboard.suite.score` gives it with the best checkpoint and collapse counts (the
    contract with ``scores``): every block gets ``best`` (its seeds + ``lift``) and ``collapsed`` (the method's count
    on each setting, summed over a family's settings and over all settings for the aggregate); the failures are
    counted as well (0)."""
    out = copy.deepcopy(scored)
    for m, v in out["methods"].items():
        blocks = [*v["settings"].values(), *v["families"].values(), v["aggregate"]]
        for x in blocks:
            seeds = [s + lift for s in x["seeds"]]
            x["best"] = {"seeds": seeds, "ci": mean_ci(seeds)}
            x["failed"] = 0
        for x in v["settings"].values():
            x["collapsed"] = collapsed[m]
        for x in v["families"].values():
            x["collapsed"] = collapsed[m] * len(x["settings"])
        v["aggregate"]["collapsed"] = collapsed[m] * len(v["settings"])
    return out


def _families_table(html: str) -> tuple[list[str], dict[str, list[str]]]:
    table = re.search(r"<table class='board' id='families-[^']*'>(.*?)</table>", html, re.DOTALL).group(1)
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", table)
    rows = {m: re.findall(r"<td[^>]*>(?:<span[^>]*></span>)?([^<]*)</td>", r)
            for m, r in re.findall(r"<tr[^>]*data-method='([^']*)'>(.*?)</tr>", table)}
    return heads, rows


def test_the_suite_tables_show_collapses_beside_failures_and_the_best_checkpoint_as_a_second_column(suite, plain):
    scored = _with_checkpoints(plain, {"broadcast": 1, "none": 0})
    context = page_context(suite, scored, "broadcast", runs=24)
    heads, rows = _families_table(suite_page(suite, scored, context))
    assert heads[:3] == ["method", "aggregate [95% CI]", BEST]
    # 3 seeds x 4 settings = 12 runs; broadcast collapsed once per setting: 4 of 12; team_size's two settings: 2 of 6
    assert rows["broadcast"][1].endswith(" 0/12 failed, 4/12 collapsed")
    assert rows["broadcast"][3].endswith(" 0/6 failed, 2/6 collapsed")
    best = scored["methods"]["broadcast"]["aggregate"]["best"]["ci"]
    assert rows["broadcast"][2] == f"{best[0]:.3f} [{best[1]:.3f}, {best[2]:.3f}]"
    assert rows["none"][1].endswith(" 0/12 failed, 0/12 collapsed")
    text = comparison_text(suite, scored, context)
    assert BEST in text and "4/12 collapsed" in text and "\"k/n collapsed\": k of those n runs peaked then fell" in text
    assert max(map(len, text.splitlines())) <= 120


def test_results_without_checkpoints_render_without_the_column_or_the_count(suite, plain):
    context = page_context(suite, plain, "broadcast", runs=24)
    heads, rows = _families_table(suite_page(suite, plain, context))
    assert BEST not in heads and heads[:2] == ["method", "aggregate [95% CI]"]
    text = comparison_text(suite, plain, context)
    assert "collapsed" not in text and "best checkpoint" not in text


def _store(suite, scored, tmp_path, extra: dict[str, dict] | None = None):
    store = tmp_path / "store"
    store_fake_entries(store, suite, scored, scored["methods"], seeds=3, extra=extra)
    assert main(["render", "--store", str(store), "--out", str(tmp_path / "site")]) == 0
    md = (tmp_path / "site" / "LEADERBOARD.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| rank |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    rows = {line.split("|")[2].strip().split("#")[0]: [c.strip() for c in line.strip("|").split("|")]
            for line in md.splitlines() if line.startswith("| ") and "#" in line and "self-reported" in line}
    return cols, rows, (tmp_path / "site" / "index.html").read_text()


def test_the_board_shows_collapsed_runs_and_the_best_checkpoint_where_entries_keep_them(suite, plain, tmp_path):
    scored = plain
    settings = list(scored["methods"]["broadcast"]["settings"])
    best = {s: [x + 0.1 for x in scored["methods"]["broadcast"]["settings"][s]["seeds"]] for s in settings}
    extra = {"broadcast": {"collapses": {s: (1 if s == settings[0] else 0) for s in settings}, "best": best}}
    cols, rows, site = _store(suite, scored, tmp_path, extra)
    col = cols.index("collapsed runs (peaked then fell)")
    bcol = cols.index("best checkpoint, suite aggregate [95% t CI]")
    assert rows["broadcast"][col] == "1/12 collapsed" and rows["none"][col] == "-"     # an older entry: no count
    agg = [x + 0.1 for x in scored["methods"]["broadcast"]["aggregate"]["seeds"]]
    m, lo, hi = mean_ci(agg)
    assert rows["broadcast"][bcol] == f"{m:.3f} [{lo:.3f}, {hi:.3f}]" and rows["none"][bcol] == "-"
    assert "collapsed runs (peaked then fell)</th>" in site and "1/12 collapsed</td>" in site


def test_a_board_of_older_entries_has_neither_column(suite, plain, tmp_path):
    cols, rows, site = _store(suite, plain, tmp_path)
    assert not any("collapsed" in c or "best checkpoint" in c for c in cols)
    assert "collapsed" not in site


def test_the_coverage_says_a_several_checkpoint_suite_scores_the_final_policy_on_held_out_seeds():
    from leaderboard.suite import suite_coverage

    for key, held_out in (("credit-micro@4", True), ("credit-micro@3", False)):
        su = load_suite(key)
        text = " ".join(suite_coverage(su, {"anchors": {s.name: None for s in su.settings}, "methods": {}}))
        assert ("the final policy's mean team reward on 200 held-out evaluation seeds" in text) is held_out, key
        assert ("the mean team reward over the last 20% of training" in text) is not held_out, key
