"""Board verdicts are true by construction (issue 40): every sentence states one paired comparison and its words
follow from its own numbers (Holm-adjusted p below 5% and an interval that excludes 0, or "not separated"), on boards
built so that ranks, unpaired CIs and paired tests disagree; an entry that covers fewer families is never ranked on
the aggregate; the aggregate is the mean of family scores with a seed-only bootstrap."""

from __future__ import annotations

import re

import numpy as np
import pytest

from leaderboard.board import build_board, comparisons, verdicts
from leaderboard.render import markdown, page, show_text
from leaderboard.stats import holm
from leaderboard.verdicts import Comparison, comparison, holm_family, sentence, verdict
from tests.leaderboard.fake_pages import fake_suite_entry
from tests.leaderboard.helpers import _check_sentence_against_its_numbers

FAMILIES = {"team_size": 3, "temporal": 2, "zero_sum": 1}          # family -> settings


def _scores(seed_effect: np.ndarray, level: float, noise: float, rng, families=FAMILIES) -> dict:
    return {f: [[float(level + e + noise * rng.normal()) for _ in range(k)] for e in seed_effect]
            for f, k in families.items()}


@pytest.fixture(scope="module")
def disagreeing():
    """Ten seeds. ``steady`` leads ``base`` by 0.05 on every seed, under a seed effect of +-0.3 that both share:
    their unpaired CIs overlap (same rank) yet the paired test separates them. ``lucky`` has a higher mean than
    ``base`` on two seeds' huge wins only: the paired test does not separate them. ``weak`` is below everything."""
    rng = np.random.default_rng(5)
    seed_effect = np.array([0.3, -0.3, 0.2, -0.2, 0.1, -0.1, 0.25, -0.25, 0.15, -0.15])
    base = _scores(seed_effect, 0.5, 0.0, rng)
    steady = {f: [[x + 0.05 for x in row] for row in rows] for f, rows in base.items()}
    lucky = {f: [[x + (0.4 if i < 2 else -0.02) for x in row] for i, row in enumerate(rows)]
             for f, rows in base.items()}
    weak = {f: [[x - 0.4 for x in row] for row in rows] for f, rows in base.items()}
    entries = [fake_suite_entry("base", base, 1), fake_suite_entry("steady", steady, 2),
               fake_suite_entry("lucky", lucky, 3), fake_suite_entry("weak", weak, 4)]
    return build_board(entries, reps=400)


def test_every_board_sentence_is_true_of_its_numbers_where_ranks_and_cis_disagree(disagreeing):
    board = disagreeing
    steady, base = board.row("steady"), board.row("base")
    assert steady.rank == base.rank == 1                   # unpaired CIs overlap: the ranks cannot tell them apart
    lines = verdicts(board, "steady")
    parsed = [_check_sentence_against_its_numbers(line) for line in lines]
    assert sorted((p["a"], p["word"], p["b"]) for p in parsed) == [("steady", "above", "base"),
                                                                   ("steady", "above", "weak"),
                                                                   ("steady", "not separated", "lucky")]
    assert all(p["m"] == 3 and p["n"] == 10 for p in parsed)
    # the numbers are the comparison's own: the mean paired difference of the per-seed family means
    agg = {r.short: np.mean([[np.mean(s) for s in r.scores[f]] for f in FAMILIES], axis=0) for r in board.rows}
    for p in parsed:
        assert p["diff"] == pytest.approx(float(np.mean(agg[p["a"]] - agg[p["b"]])), abs=5e-4)
    # lucky's mean is above base's, but two seeds carry it: not separated, and said so without "no difference"
    lucky_line = verdicts(board, "lucky")
    assert any(line.startswith("lucky vs base on the aggregate of 3 families: not separated") for line in lucky_line)
    assert not any("no difference" in line for line in lines + lucky_line)


def test_the_board_verdict_never_calls_every_rank_one_entry_above_every_lower_one(disagreeing):
    # the old verdict listed all rank-1 entries as "above" all lower-ranked ones ("coma, broadcast, ... above none")
    lines = verdicts(disagreeing)
    leader = disagreeing.row(disagreeing.leader).short
    parsed = [_check_sentence_against_its_numbers(line) for line in lines]
    assert {p["a"] for p in parsed} == {leader} and len(parsed) == 3
    for p in parsed:
        assert p["m"] == 3


def test_sentence_words_follow_the_record_not_the_order_of_the_sides():
    base = Comparison("a", "b", "fam", 10, 0.2, 0.1, 0.3, 0.002, p_holm=0.01, m=5)
    assert verdict(base) == "above" and sentence(base).startswith("a above b on fam: paired difference +0.200")
    assert verdict(Comparison("a", "b", "fam", 10, -0.2, -0.3, -0.1, 0.002, p_holm=0.01, m=5)) == "below"
    # the test rejects but the interval holds 0 (they can disagree): not separated
    assert verdict(Comparison("a", "b", "fam", 10, 0.2, -0.01, 0.4, 0.002, p_holm=0.01, m=5)) == "not separated"
    # the interval excludes 0 but Holm over 30 comparisons does not reject
    assert verdict(Comparison("a", "b", "fam", 10, 0.2, 0.1, 0.3, 0.002, p_holm=0.06, m=30)) == "not separated"
    with pytest.raises(ValueError, match="holm_family"):
        verdict(Comparison("a", "b", "fam", 10, 0.2, 0.1, 0.3, 0.002))


def test_holm_family_corrects_what_one_command_prints_together():
    rows = [comparison("a", x, "fam", np.arange(10) + d, np.arange(10)) for x, d in (("b", 1.0), ("c", 0.0))]
    fam = holm_family(rows)
    assert [c.m for c in fam] == [2, 2]
    assert [c.p_holm for c in fam] == pytest.approx(holm([c.p for c in rows]))
    assert sentence(fam[0]).startswith("a above b on fam") and sentence(fam[1]).startswith("a vs c on fam: not sep")
    assert "unpaired: a 5.500 [" in sentence(fam[0])                         # the unpaired interval stays beside it


def test_a_partial_coverage_entry_never_enters_the_aggregate_ranking():
    rng = np.random.default_rng(1)
    effect = np.zeros(6)
    full = [fake_suite_entry(m, _scores(effect, level, 0.05, rng), i) for i, (m, level) in
            enumerate((("broadcast", 0.6), ("none", 0.4)), 1)]
    # ccpo covers one family, where it scores far above everyone: it must not lead, nor be ranked at all
    ccpo = fake_suite_entry("ccpo_v1", _scores(effect, 0.99, 0.0, rng, {"temporal": 2}), 9)
    board = build_board(full + [ccpo], reps=200)
    assert [r.short for r in board.rows] == ["broadcast", "none"] and board.leader.startswith("broadcast#")
    assert [r.short for r in board.partial] == ["ccpo_v1"] and board.partial[0].rank == 0
    assert board.ranked_tasks == list(FAMILIES) and set(board.tasks) == set(FAMILIES)
    lines = verdicts(board)
    partial = next(line for line in lines if line.startswith("partial coverage"))
    m, lo, hi = (float(x) for x in re.fullmatch(r"partial coverage, not in the aggregate ranking \(mean \[95% t CI\] "
                                                r"over seeds per family\): ccpo_v1 \(temporal ([\d.]+) \[([\d.]+), "
                                                r"([\d.]+)\]\)", partial).groups())
    assert m == lo == hi == 0.99                                 # listed per family, with its numbers
    partial_line = next(line for line in lines if line.startswith("ccpo_v1 "))
    assert " on temporal:" in partial_line or " on temporal (" in partial_line   # only over the family both cover
    assert _check_sentence_against_its_numbers(partial_line)["m"] == 2         # in the same Holm family
    # ccpo compared with a full entry: the shared family only
    cs = comparisons(board, "ccpo_v1")
    assert [c.where for c in cs] == ["temporal", "temporal"]


def test_the_ranked_aggregate_is_the_family_mean_with_a_seed_only_interval():
    # two seeds identical across everything but their settings: the interval is a point, the aggregate the mean of
    # the family means (a trimmed mean over cells would drop the 0.0 and 1.0 settings)
    per_seed = {"team_size": [[0.0, 0.5, 1.0]] * 4, "temporal": [[0.2, 0.2]] * 4}
    board = build_board([fake_suite_entry("m", per_seed, 1)], reps=200)
    point, low, high = board.rows[0].aggregate
    assert point == pytest.approx((0.5 + 0.2) / 2) and high - low == pytest.approx(0.0, abs=1e-12)
    assert verdicts(board)[0].startswith("m is the only entry ranked on the aggregate")


def test_entries_with_different_seed_counts_are_said_not_compared_and_leave_the_holm_family():
    rng = np.random.default_rng(2)
    entries = [fake_suite_entry("a", _scores(np.zeros(6), 0.7, 0.05, rng), 1),
               fake_suite_entry("b", _scores(np.zeros(6), 0.5, 0.05, rng), 2),
               fake_suite_entry("c", _scores(np.zeros(4), 0.4, 0.05, rng), 3)]
    lines = verdicts(build_board(entries, reps=100))
    assert "a vs c: not compared (6 and 4 seeds: a paired comparison needs the same seeds on both sides)" in lines
    assert _check_sentence_against_its_numbers(lines[0])["m"] == 1


def test_the_partial_coverage_entries_get_their_own_table_on_every_output():
    rng = np.random.default_rng(2)
    effect = np.zeros(6)
    full = [fake_suite_entry(m, _scores(effect, level, 0.05, rng), i) for i, (m, level) in
            enumerate((("broadcast", 0.6), ("none", 0.4)), 1)]
    ccpo = fake_suite_entry("ccpo_v1", _scores(effect, 0.99, 0.0, rng, {"temporal": 2}), 9)
    entries = full + [ccpo]
    board = build_board(entries, reps=200)
    label = board.partial[0].label
    md = markdown([(board, entries)]).splitlines()
    head = next(i for i, line in enumerate(md) if line.startswith("| entry (partial coverage, not ranked) |"))
    assert md[head].split(" | ")[1:4] == ["runs", "covers", "mean of its tasks [95% CI]"]
    row = md[head + 2]
    assert row.startswith(f"| {label} ") and f"| 1 of {len(FAMILIES)}: temporal | 0.990 [0.990, 0.990] |" in row
    assert row.count("| n/a ") == len(FAMILIES) - 1 and "| 0.990 |" in row     # per family: its one task only
    ranked = [line for line in md[:head] if line.startswith("| ")]
    assert ranked and not any(label in line for line in ranked)              # never in the ranked table
    text = show_text([(board, entries)])
    assert "entry (partial coverage, not ranked)" in text and f"1 of {len(FAMILIES)}: temporal" in text
    assert max(len(line) for line in text.splitlines()) <= 120
    html = page([(board, entries)])
    assert "<table class='board partial' id='partial-" in html and "data-method='ccpo_v1'" in html
    assert "entry (partial coverage" not in markdown([(build_board(full, reps=200), full)])   # none: no table
