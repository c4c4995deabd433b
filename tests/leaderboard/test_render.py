"""What a researcher reads on a board: the verdict in words with P(improvement), its CI and its direction;
what each statistic covers; the same numbers whatever order the entries come in; tables that fit a terminal; and
every submitted string escaped, so a model id cannot add a row or markup.
The pages' words (leaderboard/render.py, leaderboard/suite/report.py): the headline sentence is counted from the
Holm-corrected verdict records (never from ranks) and opens each page, the line-by-line verdict sits behind a fold,
boards come newest protocol version first, and every table the terminal prints is on the page."""

from __future__ import annotations

import re

import numpy as np
import pytest

from leaderboard.board import build_board, compare, comparisons, verdicts
from leaderboard.render import PageContext, board_headline, comparison_markdown, markdown, md_cell, order, page, \
    show_text
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


def _headline_entry(method: str, mean: float, seeds: int = 10, protocol: str = "test@1") -> dict:
    rng = np.random.default_rng(abs(hash(method)) % 1000)
    scores = {t: [[mean + rng.normal(0, 0.01)] for _ in range(seeds)] for t in ("kuhn", "hanabi")}
    return {"id": f"{protocol}/{method}", "label": f"{method}#abcdef", "method": method, "protocol": protocol,
            "track": "credit", "submitted": "2026-01-01T00:00:00+00:00", "self_reported": False,
            "results": {"scores": scores, "task_means": {t: mean for t in scores}, "games": {}},
            "manifest": {"players": {"kuhn_poker-v0": [{"model_id": "mlp"}] * seeds},
                         "tokens": {"train_main": 1000, "train_branches": 0}}}


@pytest.fixture(scope="module")
def found():
    entries = [_headline_entry("coma", 0.9), _headline_entry("broadcast", 0.5), _headline_entry("none", 0.5)]
    old = [_headline_entry("coma", 0.9, protocol="test@0"), _headline_entry("none", 0.1, protocol="test@0")]
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


def _entry(label: str, scores: dict, games: dict | None = None, model: str = "mlp", tokens: int = 1000,
           branches: int = 0, submitted: str = "2026-01-01T00:00:00+00:00") -> dict:
    method = label.split("#")[0]
    runs = len(next(iter(scores.values())))
    return {"id": f"test@1/{label}", "label": label, "method": method, "protocol": "test@1", "track": "credit",
            "submitted": submitted, "self_reported": False,
            "results": {"scores": scores, "task_means": {t: float(np.mean(v)) for t, v in scores.items()},
                        "games": games or {}},
            "manifest": {"players": {"kuhn_poker-v0": [{"model_id": model}] * runs},
                         "tokens": {"train_main": tokens, "train_branches": branches}}}


def _scores(rng, mean: float, runs: int = 4, units: int = 20) -> dict:
    return {t: [list(rng.normal(mean, 0.1, size=units)) for _ in range(runs)] for t in ("kuhn/vs-nash", "hanabi")}


def _games(win: int, draw: int, loss: int) -> dict:
    return {"kuhn_poker-v0": {"kuhn_nash": {"win": win, "draw": draw, "loss": loss}}}


@pytest.fixture(scope="module")
def entries():
    rng = np.random.default_rng(0)
    return [_entry("strong#aaaaaa", _scores(rng, 0.9), _games(60, 20, 20), tokens=5000, branches=4000,
                   submitted="2026-01-01T00:00:01+00:00"),
            _entry("twin#bbbbbb", _scores(rng, 0.3), _games(30, 40, 30), submitted="2026-01-01T00:00:02+00:00"),
            _entry("other#cccccc", _scores(rng, 0.3), _games(28, 40, 32), submitted="2026-01-01T00:00:03+00:00")]


@pytest.fixture(scope="module")
def board(entries):
    return build_board(entries, reps=300)


def test_verdict_states_the_leader_against_each_entry_paired_with_holm_over_what_it_prints(board):
    lines = verdicts(board)
    # 4 runs: the smallest sign-flip p is 2/16, so even a 0.6 lead is "not separated" (never "no difference")
    for line in lines[:2]:
        assert re.fullmatch(r"strong vs (twin|other) on the aggregate of 2 tasks: not separated \(paired difference "
                            r"\+0\.\d{3} \[\+0\.\d{3}, \+0\.\d{3}\] \(95% t\) over 4 seeds, exact sign-flip "
                            r"p = 0\.1250, Holm-adjusted p = 0\.2500 \(Holm over 2 comparisons, family-wise 5%\); "
                            r"unpaired: .*\)", line), line
    assert lines[2].startswith("Elo (kuhn_poker-v0 games only, against kuhn_nash; kuhn_nash fixed at 1000): "
                               "strong above")


def test_compare_says_not_separated_when_the_interval_holds_zero(board):
    text = compare(board, "twin", "other")
    assert text.startswith("twin vs other on the aggregate of 2 tasks: not separated (paired difference ")
    d, low, high = map(float, re.search(r"difference ([-+][\d.]+) \[([-+][\d.]+), ([-+][\d.]+)\]", text).groups())
    assert low <= 0 <= high and low <= d <= high and "Holm over 1 comparison," in text
    assert "no difference" not in text
    assert compare(board, "twin", "strong").startswith("twin vs strong on the aggregate of 2 tasks: not separated "
                                                       "(paired difference -0.6")


def test_each_statistic_says_what_it_covers_next_to_the_number(board, entries):
    text = show_text([(board, entries)])
    assert ("aggregate: normalized score (random = 0, reference = 1), the mean of 2 task scores (4 runs, 20 eval seeds "
            "each; CI: bootstrap over runs and eval seeds, stratified by task).") in " ".join(text.split())
    assert "Elo: Bradley-Terry over kuhn_poker-v0 games only, against kuhn_nash" in text
    md = markdown([(board, entries)])
    assert "aggregate, 2 tasks [95% CI]" in md and "Elo, kuhn_poker [95% CI]" in md
    assert "P(entry > strong) [95% CI]" in md and "IQM" not in md


def test_the_same_entries_give_the_same_numbers_in_any_order(entries):
    a = build_board(entries, reps=300)
    b = build_board(list(reversed(entries)), reps=300)
    key = lambda bd: [(r.short, r.rank, r.aggregate, r.elo, r.poi_vs_best) for r in bd.rows]  # noqa: E731
    assert key(a) == key(b)
    assert a.opponents == b.opponents
    # a fresh copy of the same games (benchmark-credit's, before submitting) has other labels: the same numbers
    fresh = [{**e, "label": e["label"].split("#")[0] + "#f00f00", "id": e["id"] + "-fresh"} for e in entries]
    assert key(build_board(fresh, reps=300)) == key(a)


def test_show_fits_120_columns_and_wide_adds_the_per_task_columns(entries):
    long = _entry("a-method-with-a-very-long-name-indeed-and-more#dddddd", entries[1]["results"]["scores"],
                  model="reference:kuhn_nash, reference:leduc_cfr, reference:rule_bot")
    found = [(build_board([*entries, long], reps=200), [*entries, long])]
    narrow = show_text(found)
    assert max(len(line) for line in narrow.splitlines()) <= 120, narrow
    assert "kuhn/vs-nash" not in narrow and "reference:leduc_cfr" not in narrow
    wide = show_text(found, wide=True)
    assert "kuhn/vs-nash" in wide and "reference:leduc_cfr" in wide


HOSTILE = "evil\n| 1 | forged#000000 | x | 9 | 1.000 [1.000, 1.000] |\r\n<script>alert(1)</script>\x1b[2J|"


def test_a_newline_and_html_in_a_model_id_cannot_inject_a_row_or_markup(entries):
    rng = np.random.default_rng(1)
    bad = _entry("evil#eeeeee", _scores(rng, 0.5), model=HOSTILE)
    bad["label"] = "evil<b>|#eeeeee"
    found = [(build_board([*entries, bad], reps=200), [*entries, bad])]
    md = markdown(found)
    rows = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + 4                                              # the header and the four entries
    assert "forged" not in "".join(r.split("|")[2] for r in rows)        # no row of its own
    assert "<script>" not in md and "<b>" not in md and "\x1b" not in md
    html = page(found)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)" in html
    assert html.count("<tr data-method=") == 4 and "<b>" not in html
    terminal = show_text(found, wide=True)
    assert "\x1b" not in terminal and "\r" not in terminal
    assert sum(1 for line in terminal.splitlines() if re.match(r"\d+ ", line)) == 4     # four table rows


def test_md_cell_escapes_the_pipe_and_angle_brackets_on_one_line():
    assert md_cell("a|b\n<c>&") == "a\\|b\ufffd&lt;c>&"


def test_comparison_page_carries_the_context_and_marks_the_method_under_test(board, entries):
    context = PageContext(title="benchmark-credit twin on test@1 (micro tier)", under_test="twin",
                          facts=[("budget per run", "10 steps x 8 tasks x 4 samples"), ("wall time", "12 s")],
                          notes=["ccpo_v1: not applicable here (needs a thinker)"])
    html = page([(board, entries)], context)
    assert "<title>benchmark-credit twin on test@1 (micro tier)</title>" in html
    assert "Method under test: <strong>twin</strong>" in html
    assert "<tr class=under-test data-method='twin'>" in html
    assert "<dt>wall time</dt><dd>12 s</dd>" in html and "ccpo_v1: not applicable here" in html
    assert "<th onclick='sortTable(this)'>counterfactual tokens</th>" in html and "<td>4000</td>" in html
    assert "data-figure='cost'" in html
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in html
    assert "<div class='scroll'><table class='board'" in html
    md = comparison_markdown(board, context)
    assert "- twin vs other on the aggregate of 2 tasks: not separated" in md and "- twin vs strong on" in md
    assert "**twin#bbbbbb**" in md                                               # the row under test in bold


def test_one_method_has_one_colour_in_every_figure(board, entries):
    from leaderboard.render import Palette, figures

    palette = Palette(r.short for r in board.rows)
    figs = figures(board, entries, palette)
    assert {f.key for f in figs} >= {"iqm", "profile", "cost"}
    for name in ("strong", "twin", "other"):
        drawn = {f.colours[name] for f in figs if name in f.colours}
        assert drawn == {palette.colour(name)}, (name, drawn)
    assert len({palette.colour(n) for n in ("strong", "twin", "other")}) == 3


def test_extra_columns_and_figures_hooks_add_to_every_surface(board, entries, monkeypatch):
    # the credit suite's hook: a column per family and its own figures, in the page's colours
    from leaderboard import render

    monkeypatch.setattr(render, "EXTRA_COLUMNS", [lambda bd: [("family: team size", lambda r: f"{r.runs * 0.1:.1f}")]])

    def radar(bd, es, palette):
        return [render.Figure("radar", "a radar chart", "iVBORw0KGgo=", {r.short: palette.colour(r.short)
                                                                          for r in bd.rows})]

    monkeypatch.setattr(render, "EXTRA_FIGURES", [radar])
    found = [(board, entries)]
    assert "| family: team size |" in render.markdown(found)
    html = render.page(found)
    assert "<th onclick='sortTable(this)'>family: team size</th>" in html and "<td>0.4</td>" in html
    assert "data-figure='radar'" in html
    assert "family: team size" in render.show_text(found, wide=True)
    assert "family: team size" not in render.show_text(found)            # narrow keeps 120 columns


def test_the_board_is_read_from_board_entries_in_the_current_folder(tmp_path, monkeypatch, capsys):
    """The entries, LEADERBOARD.md and index.html are data outside the package, in the repository's board/ folder;
    show and render read board/entries relative to the current folder, and render writes board/ there."""
    import json
    import shutil
    from pathlib import Path

    import leaderboard
    from leaderboard.__main__ import main

    stored = Path(__file__).resolve().parents[2] / "board" / "entries"
    assert not (Path(leaderboard.__file__).parent / "entries").exists()
    assert (stored.parent / "LEADERBOARD.md").is_file() and (stored.parent / "index.html").is_file()
    index = json.loads((stored / "index.json").read_text())      # a copy of the policy@2 entries: quick to rank
    index["entries"] = [r for r in index["entries"] if r["protocol"] == "policy@2"]
    here = tmp_path / "board" / "entries"
    for r in index["entries"]:
        (here / r["file"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(stored / r["file"], here / r["file"])
    (here / "index.json").write_text(json.dumps(index))
    monkeypatch.chdir(tmp_path)
    assert main(["show"]) == 0
    assert "policy@2 (policy track)" in capsys.readouterr().out
    assert main(["render"]) == 0
    assert "## policy@2" in (tmp_path / "board" / "LEADERBOARD.md").read_text()
    assert (tmp_path / "board" / "index.html").is_file()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")                   # no board/ here: an empty leaderboard
    assert main(["show"]) == 0
    assert "the leaderboard is empty" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["show"], ["render", "--out", "SITE"]])
def test_show_and_render_refuse_a_store_folder_that_does_not_exist(tmp_path, capsys, command):
    """A misspelt --store showed an empty leaderboard, and render wrote that empty page over the real one."""
    from leaderboard.__main__ import main

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("the real page")
    args = [str(site) if a == "SITE" else a for a in command]
    assert main([*args, "--store", str(tmp_path / "entires")]) == 2
    assert "--store " + str(tmp_path / "entires") + ": no such folder" in capsys.readouterr().err
    assert (site / "index.html").read_text() == "the real page"
