"""What a researcher reads on a board: the verdict in words with P(improvement), its CI and its direction;
what each statistic covers; the same numbers whatever order the entries come in; tables that fit a terminal; and
every submitted string escaped, so a model id cannot add a row or markup."""

import re

import numpy as np
import pytest

from leaderboard.board import build_board, compare, verdicts
from leaderboard.render import PageContext, comparison_markdown, markdown, md_cell, page, show_text


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
