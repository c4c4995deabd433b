"""What a researcher reads from the credit suite: the verdict of the method under test against
every baseline per family and the shuffled-below-broadcast control, what each number covers, a printed comparison
that fits 120 columns, a page in the leaderboard's style (title, method under test, facts, applicability, scrollable
tables with tokens, one colour per method in every figure) that fits a phone in Chromium, and suite entries on the
rendered leaderboard with the suite's aggregate and a column per family.

The page is built from a small fake ``scored`` dict (:func:`leaderboard.suite.score`'s shape), not from training."""

from __future__ import annotations

import html
import json
import re

import pytest

from leaderboard.__main__ import main
from leaderboard.render import Palette
from tests.leaderboard.helpers import _check_sentence_against_its_numbers
from tests.leaderboard.browser import _PROBE, CHROMIUM, _dom, _probe
from tests.leaderboard.fake_pages import fake_scored, store_fake_entries
from leaderboard.suite import board_columns, comparison_text, family_verdicts, load_suite, \
    page_context, suite_figures, suite_page

SUITE = "credit-micro-quick@2"       # team_size (n2, n8), message_credit (one setting), zero_sum (Kuhn)


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE)


@pytest.fixture(scope="module")
def scored(suite):
    # broadcast clearly above shuffled on team_size and message_credit, tied on zero_sum; loo ties broadcast
    return fake_scored(suite, {
        "broadcast": {"team_size": 0.8, "message_credit": 0.6, "zero_sum": 0.5},
        "shuffled": {"team_size": 0.2, "message_credit": 0.1, "zero_sum": 0.5},
        "loo": {"team_size": 0.79, "message_credit": 0.61, "zero_sum": 0.5}},
        tokens={"loo": (1100, 700)})


SKIPPED = {"ccpo_v1": {"voting/plurality/n2": "ccpo_v1 needs a thinker", "voting/plurality/n8": "ccpo_v1 needs a "
                                                                                               "thinker"}}


@pytest.fixture(scope="module")
def scored10(suite):
    # the same methods on ten seeds: the smallest exact sign-flip p is 2/1024, so Holm over the lines can reject
    return fake_scored(suite, {
        "broadcast": {"team_size": 0.8, "message_credit": 0.6, "zero_sum": 0.5},
        "shuffled": {"team_size": 0.2, "message_credit": 0.1, "zero_sum": 0.5},
        "loo": {"team_size": 0.79, "message_credit": 0.61, "zero_sum": 0.5}}, seeds=10)


def test_verdict_compares_the_method_under_test_with_each_baseline_per_family_and_counts_the_control(suite,
                                                                                                      scored10):
    lines = family_verdicts(suite, scored10, "broadcast")
    parsed = [_check_sentence_against_its_numbers(line) for line in lines[:-1]]      # each line true of its numbers
    assert {p["m"] for p in parsed} == {8} and {p["n"] for p in parsed} == {10}      # one Holm family, paired seeds
    assert lines[0].startswith("broadcast above shuffled on the aggregate of 3 families: paired difference +0.367 ")
    assert lines[1].startswith("broadcast above shuffled on team_size: paired difference +0.600 [+0.600, +0.600]")
    assert lines[3].startswith("broadcast vs shuffled on zero_sum: not separated (paired difference +0.000")
    assert lines[4].startswith("broadcast vs loo on the aggregate of 3 families: not separated")
    # loo is 0.01 below broadcast on team_size on every seed: paired, that separates (unpaired CIs overlap)
    assert lines[5].startswith("broadcast above loo on team_size: paired difference +0.010")
    assert len([v for v in lines if " loo " in v]) == 4                        # the aggregate and three families
    assert lines[-1].startswith("control: broadcast above shuffled on 2/3 families (team_size, message_credit); "
                                "not separated on zero_sum")
    assert not any("no difference" in v or "CIs separated" in v for v in lines)
    # the direction is spelled out whichever method is under test
    assert family_verdicts(suite, scored10, "shuffled")[1].startswith("shuffled below broadcast on team_size: paired")


def test_three_seeds_separate_nothing(suite, scored):
    # the smallest exact sign-flip p over 3 seeds is 2/8: nothing can be called above, and the words say so
    lines = family_verdicts(suite, scored, "broadcast")
    assert all(": not separated (" in v for v in lines[:-1])
    assert lines[-1].startswith("control: broadcast above shuffled on 0/3 families; not separated on team_size, ")


def test_printed_comparison_says_what_the_numbers_cover_fits_120_columns_and_has_no_carriage_returns(suite):
    full = load_suite("credit-micro@2")                                   # six families, nine methods: wide
    names = ["broadcast", "none", "rae", "marshal", "coma", "loo", "ccpo_v1", "dr_mas", "shuffled"]
    many = fake_scored(full, {m: {f.name: 0.1 * i for f in full.families} for i, m in enumerate(names)})
    context = page_context(full, many, "marshal", runs=270, wall_s=1234.0, execution="2 process(es)")
    text = comparison_text(full, many, context, SKIPPED)
    assert "\r" not in text
    assert max(len(line) for line in text.splitlines()) <= 120, max(text.splitlines(), key=len)
    assert "the mean over 3 training seeds with a 95% Student-t CI" in text
    assert "the mean team reward over the last 20% of training (20 of 100 steps" in text
    assert "the final policy against kuhn_nash" in text and "held-out deals" in text
    assert "- wall time: 1234 s (2 process(es))" in text
    assert "- ccpo_v1 is not applicable on voting/plurality/n2, voting/plurality/n8 (ccpo_v1 needs a thinker)" in text
    # the split tables each repeat the method column, and every method's row is in each part
    parts = [line for line in text.splitlines() if line.startswith("| method |")]
    assert len(parts) >= 2
    assert sum(1 for line in text.splitlines() if line.startswith("| marshal |")) == len(parts)
    # a CI is never broken across two lines
    assert not any(re.search(r"\[[^\]]*$", line) for line in text.splitlines() if not line.startswith("|"))


def test_suite_page_carries_the_context_tables_tokens_and_the_page_style(suite, scored):
    context = page_context(suite, scored, "broadcast", runs=36, wall_s=43.0, execution="2 process(es)")
    text = suite_page(suite, scored, context, SKIPPED)
    assert "<title>benchmark-credit broadcast on credit-micro-quick@2: credit-assignment suite</title>" in text
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in text
    assert "Method under test: <strong>broadcast</strong>" in text
    assert "<tr class=under-test data-method='broadcast'>" in text
    assert "<dt>wall time</dt><dd>43 s (2 process(es))</dd>" in text
    assert "<dt>training seeds</dt><dd>0, 1, 2</dd>" in text
    assert "<dt>budget per run</dt><dd>10 steps x 8 tasks x 4 samples" in text
    assert "ccpo_v1 is not applicable on voting/plurality/n2, voting/plurality/n8" in text
    assert "its entries rank only against other credit-micro-quick@2 entries" in text
    assert text.count("<div class='scroll'><table class='board'") == 2                # per family, per setting
    families = re.search(r"<table class='board' id='families-[^']*'>(.*?)</table>", text, re.S).group(1)
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", families)
    assert heads == ["method", "aggregate [95% CI]", "team_size [95% CI]", "message_credit [95% CI]",
                     "zero_sum [95% CI]", "runs", "train tokens", "counterfactual tokens"]
    loo = re.search(r"<tr data-method='loo'>(.*?)</tr>", families).group(1)
    assert re.findall(r"<td>([^<]*)</td>", loo)[-3:] == ["12", "1800", "700"]         # runs, total, counterfactual
    assert "last 20% of training" in text and "Student-t" in text
    assert "<pre>" not in text                                                          # real tables, not Markdown


def test_one_method_has_one_colour_in_every_suite_figure(suite, scored):
    palette = Palette(scored["methods"])
    figs = suite_figures(suite, scored, palette)
    assert [f.key for f in figs] == ["radar", "scaling-team_size", "cost"]      # message_credit: one setting
    for m in scored["methods"]:
        assert {f.colours[m] for f in figs} == {palette.colour(m)}, m
    assert len({palette.colour(m) for m in scored["methods"]}) == 3


def test_render_shows_suite_entries_with_the_suite_aggregate_and_a_column_per_family(suite, scored, tmp_path):
    store = tmp_path / "store"
    store_fake_entries(store, suite, scored, ("broadcast", "shuffled", "loo"), seeds=3)
    assert main(["render", "--store", str(store), "--out", str(tmp_path / "site")]) == 0
    md = (tmp_path / "site" / "LEADERBOARD.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| rank |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert {"team_size", "message_credit", "zero_sum", "suite aggregate [95% t CI]"} <= set(cols)
    broadcast = next(line for line in md.splitlines() if line.startswith("| ") and "broadcast#" in line)
    agg = scored["methods"]["broadcast"]["aggregate"]["ci"]
    assert f"| {agg[0]:.3f} [{agg[1]:.3f}, {agg[2]:.3f}] |" in broadcast              # the numbers benchmark printed
    assert f"## {SUITE} (credit track)" in md and "(Holm over 2 comparisons" in md    # a verdict for the board
    site = (tmp_path / "site" / "index.html").read_text()
    assert "suite aggregate [95% t CI]</th>" in site
    # the suite's radar joins the board's figures, each method in the colour it has in the aggregate figure
    drawn = {key: json.loads(html.unescape(c)) for key, c in re.findall(r"data-figure='([^']*)' data-colours='([^']*)'",
                                                                       site)}
    assert set(drawn["radar"]) == {"broadcast", "shuffled", "loo"}
    assert all(drawn["radar"][m] == drawn["iqm"][m] for m in drawn["radar"])


def test_board_columns_leave_other_boards_alone():
    class NotASuite:
        protocol = "credit-micro@1"

    assert board_columns(NotASuite()) == []


# ------------------------------------------------------------------------------------------- Chromium


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_suite_page_in_chromium_gives_the_verdict_fixed_colours_and_fits_a_phone(suite, scored10, tmp_path):
    scored = scored10
    context = page_context(suite, scored, "broadcast", runs=36, wall_s=43.0)
    probed = tmp_path / "index.html"
    probed.write_text(suite_page(suite, scored, context, SKIPPED).replace("</body>", _PROBE), encoding="utf-8")
    dom = _dom(probed.as_uri(), tmp_path, width=390)
    verdict = re.search(r"<div class=\"verdict\"[^>]*>(.*?)</div>", dom, re.S).group(1)
    assert "broadcast above shuffled on team_size: paired difference" in verdict
    assert "broadcast vs loo on zero_sum: not separated" in verdict
    assert "control: broadcast above shuffled on 2/3 families" in verdict
    assert int(_probe(dom, "overflow")) <= 0, "the body scrolls sideways at 390 px"
    pixels = json.loads(_probe(dom, "pixels"))
    for method in ("broadcast", "shuffled", "loo"):
        (in_radar, drawn_radar), (in_scaling, drawn_scaling) = pixels["radar"][method], \
            pixels["scaling-team_size"][method]
        assert in_radar == in_scaling, (method, in_radar, in_scaling)
        assert drawn_radar > 20 and drawn_scaling > 20, (method, drawn_radar, drawn_scaling)


def test_the_full_suites_figures_draw_a_family_whose_setting_has_no_knob():
    # credit-micro@2's temporal family sweeps the umbrella's delay and also holds Mini Hanabi (knob None): the
    # scaling figures draw the swept settings and leave the knob-less one to the tables (it once crashed matplotlib)
    full = load_suite("credit-micro@2")
    assert any(s.knob is None for f in full.families if f.name == "temporal" for s in f.settings)
    scored = fake_scored(full, {m: {f.name: 0.5 for f in full.families} for m in ("broadcast", "shuffled")})
    figs = suite_figures(full, scored, Palette(scored["methods"]))
    keys = {f.key for f in figs}
    assert "scaling-temporal" in keys and "scaling-team_size" in keys and "radar" in keys


def test_a_single_method_run_says_there_is_nothing_to_compare_and_no_control(suite):
    alone = fake_scored(suite, {"broadcast": {"team_size": 0.8, "message_credit": 0.6, "zero_sum": 0.5}})
    lines = family_verdicts(suite, alone, "broadcast")
    assert lines[0].startswith("broadcast only: no other method to compare with")
    assert lines[-1].startswith("control: not run")
