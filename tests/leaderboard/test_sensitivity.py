"""Which families measure credit (issue 40, item 5; leaderboard/sensitivity.py): a family passes only where every
credit-blind control (none, shuffled) is separated below the informed method (oracle, else loo, else coma), paired
over seeds, Holm over every check of the table; the fidelity rows (oracle against shuffled) are shown beside and never
decide; the board, the terminal, the Markdown and both pages show the table and the headline's count."""

from __future__ import annotations

import re

import numpy as np
import pytest

from leaderboard.board import board_sensitivity, build_board
from leaderboard.render import board_headline, markdown, page, show_text
from leaderboard.sensitivity import credit_sensitivity, sensitivity_headline, sensitivity_rows
from leaderboard.suite import comparison_text, load_suite, page_context, suite_page
from leaderboard.suite.report import suite_headline, suite_sensitivity
from tests.leaderboard.fake_pages import fake_scored, fake_suite_entry

SEED_EFFECT = np.array([0.2, -0.2, 0.1, -0.1, 0.05, -0.05, 0.15, -0.15, 0.0, 0.12])    # shared by every method


def _plus(base, diffs):
    return [float(x) for x in np.asarray(base) + np.asarray(diffs)]


@pytest.fixture(scope="module")
def hand_built():
    """Ten seeds, three families, ``none`` the only control and ``oracle`` the informed method:

    * ``separates``: oracle 0.3 above none on every seed. Exact sign-flip p = 2/2^10 = 0.001953125.
    * ``level``: the differences +0.1, -0.1 alternate (mean 0): p = 1, the interval holds 0.
    * ``holm_only``: +0.1 on nine seeds, -0.1 on one (mean +0.08). The sign patterns as extreme as the observed sum
      (0.8) are those with at most one or at least nine plus signs: 1 + 10 + 10 + 1 = 22 of 1024, p = 0.021484375.

    Holm over the three checks, by hand: the sorted p are 0.001953125, 0.021484375, 1, so the adjusted p are
    3 x 0.001953125 = 0.005859375, max(0.005859375, 2 x 0.021484375) = 0.04296875 and max(0.04296875, 1 x 1) = 1.
    ``holm_only`` passes at 5% under Holm (0.0430) though Bonferroni (3 x 0.0215 = 0.0645) would not pass it."""
    base = 0.5 + SEED_EFFECT
    none = {f: list(map(float, base)) for f in ("separates", "level", "holm_only")}
    oracle = {"separates": _plus(base, [0.3] * 10), "level": _plus(base, [0.1, -0.1] * 5),
              "holm_only": _plus(base, [0.1] * 9 + [-0.1])}
    return {"none": none, "oracle": oracle}


def test_a_family_passes_where_none_is_separated_below_the_informed_method_and_holm_is_the_hand_worked_one(
        hand_built):
    result = credit_sensitivity(hand_built, ["separates", "level", "holm_only"])
    by = {fs.family: fs for fs in result}
    assert [fs.family for fs in result] == ["separates", "level", "holm_only"]
    checks = {f: fs.checks[0] for f, fs in by.items()}
    assert all(len(fs.checks) == 1 and fs.checks[0].informed == "oracle" and fs.checks[0].blind == "none"
               for fs in result)
    assert checks["separates"].p == pytest.approx(2 / 1024) and checks["holm_only"].p == pytest.approx(22 / 1024)
    assert checks["level"].p == 1.0
    assert checks["separates"].p_holm == pytest.approx(0.005859375)
    assert checks["holm_only"].p_holm == pytest.approx(0.04296875)
    assert checks["level"].p_holm == 1.0 and {c.m for c in checks.values()} == {3}
    assert checks["level"].low < 0 < checks["level"].high and checks["level"].word() == "not separated"
    assert [by[f].training for f in ("separates", "level", "holm_only")] == [True, False, True]
    assert all(fs.fidelity is None for fs in result)                      # no fidelity given: not tested
    rows = sensitivity_rows(result)
    assert rows[1] == ["level", "oracle - none (training)", f"{0:+.3f} [{checks['level'].low:+.3f}, "
                       f"{checks['level'].high:+.3f}]", "1.0000", "not separated", "does not pass"]
    assert rows[0][3:] == ["0.0059", "separated", "passes"] and rows[2][3:] == ["0.0430", "separated", "passes"]
    assert sensitivity_headline(result) == (
        "Credit sensitivity: 2 of 3 families tested pass (every credit-blind control separated below the informed "
        "method in training, Holm over 3 checks): separates, holm_only; not: level.")


def test_every_control_must_be_below_and_the_informed_method_is_fixed_by_the_rule_not_by_the_scores():
    base = list(0.5 + SEED_EFFECT)
    up = _plus(base, [0.3] * 10)
    way_up = _plus(base, [0.6] * 10)
    scores = {"none": {"a": base, "b": base, "c": base},
              "shuffled": {"a": way_up, "b": base, "c": base},       # on a, shuffled beats the informed method
              "oracle": {"a": up},                                    # oracle trained on a only
              "loo": {"a": up, "b": up},
              "coma": {"a": base, "b": base, "c": way_up},            # coma only informs c
              "broadcast": {"a": way_up, "b": way_up, "c": way_up}}   # never the informed method
    result = {fs.family: fs for fs in credit_sensitivity(scores, ["a", "b", "c"])}
    assert {c.informed for c in result["a"].checks} == {"oracle"}      # oracle first, although broadcast scores more
    assert {c.informed for c in result["b"].checks} == {"loo"}         # then loo, then coma
    assert {c.informed for c in result["c"].checks} == {"coma"}
    assert [c.blind for c in result["a"].checks] == ["none", "shuffled"]
    a = {c.blind: c.word() for c in result["a"].checks}
    assert a == {"none": "separated", "shuffled": "reversed"} and result["a"].training is False
    assert result["b"].training is True and result["c"].training is True
    # a family with only broadcast and the controls is not tested, and says why
    alone = credit_sensitivity({"none": {"d": base}, "broadcast": {"d": up}}, ["d"])[0]
    assert alone.training is None and alone.checks == []
    assert alone.notes == ["training not tested: no informed method (oracle, loo, coma) on this family"]
    assert sensitivity_rows([alone]) == [["d", "-", "-", "-", "-", "not tested"]]
    assert sensitivity_headline([alone]) == ""


def test_a_control_on_other_seeds_is_not_compared_and_the_family_cannot_pass(hand_built):
    scores = {**hand_built, "shuffled": {"separates": [0.0] * 5}}      # five seeds against the others' ten
    fs = credit_sensitivity(scores, ["separates"])[0]
    assert [c.blind for c in fs.checks] == ["none"] and fs.checks[0].word() == "separated"
    assert fs.training is False
    assert fs.notes == ["oracle vs shuffled not compared (10 and 5 seeds: a paired comparison needs the same seeds), "
                        "so the family cannot pass in training"]


def test_the_fidelity_rows_compare_oracle_with_shuffled_and_never_decide_the_family(hand_built):
    # oracle r 0.9 [0.8, 1.0] against shuffled 0.0 [-0.1, 0.1]: each standard error 0.1 / 1.96, their difference's
    # sqrt(2) x 0.1 / 1.96 = 0.0721, so +0.900 [+0.759, +1.041]; on "level" 0.05 [-0.05, 0.15] against 0.0: not
    fidelity = {"oracle": {"separates": {"r": 0.9, "low": 0.8, "high": 1.0}, "level": {"r": 0.05, "low": -0.05,
                                                                                         "high": 0.15}},
                "shuffled": {"separates": {"r": 0.0, "low": -0.1, "high": 0.1}, "level": {"r": 0.0, "low": -0.1,
                                                                                          "high": 0.1}},
                "loo": {"holm_only": {"r": 0.5, "low": 0.4, "high": 0.6}}}
    result = {fs.family: fs for fs in credit_sensitivity(hand_built, ["separates", "level", "holm_only"],
                                                         fidelity)}
    fid = result["separates"].checks[-1]
    assert (fid.criterion, fid.informed, fid.blind) == ("fidelity", "oracle", "shuffled")
    assert fid.diff == pytest.approx(0.9) and fid.high - fid.diff == pytest.approx(0.1 * 2 ** 0.5)
    assert result["separates"].fidelity is True and result["level"].fidelity is False
    assert result["holm_only"].fidelity is None                 # oracle or shuffled not measured there
    assert {c.m for fs in result.values() for c in fs.checks} == {5}      # one Holm family: 3 training + 2 fidelity
    # the fidelity rows change no training verdict (here "level" fails training and fidelity alike)
    assert [result[f].training for f in ("separates", "level", "holm_only")] == [True, False, False]
    assert "in fidelity, oracle above shuffled on 1 of 2 families" in sensitivity_headline(list(result.values()))


@pytest.fixture(scope="module")
def suite_board():
    """A suite's board: on team_size oracle is 0.3 above none and shuffled on every seed; on free_riding everyone
    ties (none learns it as well as oracle). Fidelity: oracle far above shuffled on both."""
    base = 0.5 + SEED_EFFECT

    def per_seed(team, free):
        return {"team_size": [[float(x + team)] * 2 for x in base], "free_riding": [[float(x + free)] for x in base]}

    fid = {"team_size": {"r": 0.9, "low": 0.85, "high": 0.95}, "free_riding": {"r": 0.8, "low": 0.7, "high": 0.9}}
    nil = {f: {"r": 0.0, "low": -0.05, "high": 0.05} for f in fid}
    entries = [fake_suite_entry("oracle", per_seed(0.3, 0.0), 1, fid), fake_suite_entry("none", per_seed(0.0, 0.0), 2),
               fake_suite_entry("shuffled", per_seed(-0.4, -0.4), 3, nil)]
    return build_board(entries, reps=200), entries


def test_the_board_says_which_families_pass_on_every_surface(suite_board):
    board, entries = suite_board
    result = {fs.family: fs for fs in board_sensitivity(board)}
    assert result["team_size"].training is True and result["free_riding"].training is False
    assert result["free_riding"].fidelity is True           # credit to find at the initial policy, not in the score
    sentence = board_headline(board)
    assert "Credit sensitivity: 1 of 2 families tested pass (every credit-blind control separated below the " \
           "informed method in training, Holm over 6 checks): team_size; not: free_riding; in fidelity, oracle " \
           "above shuffled on 2 of 2 families." in sentence
    html = page([(board, entries)])
    assert re.match(r"\s*<p class='page-headline' id='headline'><strong>suite@1:</strong> .*Credit sensitivity: 1 "
                    r"of 2 families", html.split("</h1>", 1)[1])
    table = re.search(r"<table class='board sensitivity' id='sensitivity-suite@1'>(.*?)</table>", html,
                      re.DOTALL).group(1)
    cells = [c for row in re.findall(r"<tr>(.*?)</tr>", table) if (c := re.findall(r"<td>([^<]*)</td>", row))]
    assert [(c[0], c[1], c[4], c[5]) for c in cells] == [
        ("team_size", "oracle - none (training)", "separated", "passes"),
        ("team_size", "oracle - shuffled (training)", "separated", "passes"),
        ("team_size", "oracle - shuffled (fidelity)", "separated", "passes (fidelity)"),
        ("free_riding", "oracle - none (training)", "not separated", "does not pass"),
        ("free_riding", "oracle - shuffled (training)", "separated", "does not pass"),
        ("free_riding", "oracle - shuffled (fidelity)", "separated", "passes (fidelity)")]
    text = show_text([(board, entries)])
    assert re.search(r"\nfree_riding +oracle - none \(training\) +[-+]", text) and "does not pass" in text
    assert max(map(len, text.splitlines())) <= 120
    md = markdown([(board, entries)])
    assert "**Which families measure credit.**" in md and "| team_size | oracle - none (training) |" in md


def test_a_board_that_is_not_a_suites_has_no_sensitivity_table():
    entries = [{**fake_suite_entry(m, {"kuhn": [[0.5]] * 3}, i), "results": {"scores": {"kuhn": [[0.5]] * 3},
                                                                              "task_means": {"kuhn": 0.5}, "games": {}}}
               for i, m in enumerate(("oracle", "none"))]
    board = build_board(entries, reps=50)
    assert board_sensitivity(board) == [] and "Credit sensitivity" not in board_headline(board)
    assert "sensitivity" not in page([(board, entries)])


def test_the_suite_page_and_the_printed_comparison_show_the_table_and_the_count():
    suite = load_suite("credit-micro-quick@2")        # team_size, message_credit, zero_sum
    scored = fake_scored(suite, {"oracle": {"team_size": 0.9, "message_credit": 0.6, "zero_sum": 0.5},
                                 "none": {"team_size": 0.4, "message_credit": 0.6, "zero_sum": 0.5},
                                 "broadcast": {"team_size": 0.8, "message_credit": 0.6, "zero_sum": 0.5}},
                         seeds=10)
    result = {fs.family: fs.training for fs in suite_sensitivity(suite, scored)}
    assert result == {"team_size": True, "message_credit": False, "zero_sum": False}
    sentence = suite_headline(suite, scored, "oracle")
    assert sentence.endswith("Credit sensitivity: 1 of 3 families tested pass (every credit-blind control separated "
                             "below the informed method in training, Holm over 3 checks): team_size; not: "
                             "message_credit, zero_sum.")
    html = suite_page(suite, scored, page_context(suite, scored, "oracle", runs=90))
    assert "<h2>Which families measure credit</h2>" in html
    assert re.search(r"<table class='board sensitivity' id='sensitivity-credit-micro-quick@2'>.*team_size.*"
                     r"oracle - none \(training\).*passes", html, re.DOTALL)
    text = comparison_text(suite, scored, page_context(suite, scored, "oracle", runs=90))
    assert "Which families measure credit: A family measures credit where" in text
    assert re.search(r"\| team_size +\| oracle - none \(training\) +\| \+0\.500 \[\+0\.500, \+0\.500\] +\| \S+ +\| "
                     r"separated +\| passes +\|", text), text
    assert max(map(len, text.splitlines())) <= 120
