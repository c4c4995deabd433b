"""Failed runs in the suite's scores: a run whose normalized score ends at random's (at or below
``FAILURE_THRESHOLD``) is counted per setting, per family and over the aggregate, printed as "k/n failed" beside each
score in the terminal tables and the page, kept per setting in a store entry's ``failures``, and shown on the board
(the board counts them from the per-seed scores it ranks on, so older entries show them too), without changing any
score.

The per-seed scores are made by hand: the suite's anchors come from its cache (no measuring), so a raw score maps
to a known normalized one."""

from __future__ import annotations

import json
import re

import pytest

from leaderboard.__main__ import main
from leaderboard.board import build_board
from leaderboard.stats import format_ci, mean_ci
from leaderboard.store import load_entries
from leaderboard.suite import add_suite_entry, board_columns, entry, load_suite, page_context, score, score_tables, \
    suite_coverage, suite_page
from leaderboard.suite.score import FAILURE_THRESHOLD, failures

SUITE = "credit-micro-quick@2"       # team_size (n2, n8), message_credit (one setting), zero_sum (Kuhn); seeds 0-2
N2, N8, CLUE, KUHN = "voting/plurality/n2", "voting/plurality/n8", "think_solve/clue/a0.8", "kuhn_poker/self-play"
ANCHORS = {N2: {"zero": 0.0, "one": 1.0}, N8: {"zero": 0.2, "one": 0.7}, CLUE: {"zero": 0.0, "one": 1.0},
           KUHN: {"zero": 0.0, "one": 1.0}}
RAW = {"a": {N2: [0.1, 0.9, -0.2],             # normalized the same: 0.1 (the edge: failed), 0.9, -0.2 (failed)
             N8: [0.2, 0.65, 0.45],            # normalized 0, 0.9, 0.5: raw 0.2 is the random anchor (failed)
             CLUE: [0.8, 0.1000001, 0.7],      # just above the edge: not failed
             KUHN: [0.5, 0.05, 0.6]},          # one failed
       "b": {s: [0.9, 0.85, 0.95] for s in ANCHORS}}
COLUMN = f"failed runs (score at most {FAILURE_THRESHOLD:g})"      # the board's column


def _run(method, setting, seed, raw):
    return {"method": method, "setting": setting, "seed": seed, "raw": raw, "curve": [raw], "tokens": {"main": 1},
            "free_riding": {}, "config_hash": f"{method}{setting}{seed}"}


@pytest.fixture
def suite():
    return load_suite(SUITE)


@pytest.fixture
def results():
    return [_run(m, s, seed, raw) for m, per in RAW.items() for s, vals in per.items()
            for seed, raw in enumerate(vals)]


@pytest.fixture
def scored(suite, results, tmp_path):
    cache = tmp_path / "anchors.json"
    cache.write_text(json.dumps({"suite_sha256": suite.sha256, "anchors": ANCHORS}))
    return score(suite, results, cache=cache)


def test_a_failed_run_is_a_normalized_score_at_or_below_the_threshold():
    assert FAILURE_THRESHOLD == 0.1
    assert failures([0.1, 0.1 + 1e-9, 0.1 - 1e-9, 0.0, -0.7, 1.0, 0.5]) == 4
    assert failures([]) == 0 and failures([0.11, 0.9]) == 0


def test_score_counts_failed_runs_per_setting_family_and_aggregate_and_keeps_the_scores(scored):
    a, b = scored["methods"]["a"], scored["methods"]["b"]
    assert {s: x["failed"] for s, x in a["settings"].items()} == {N2: 2, N8: 1, CLUE: 0, KUHN: 1}
    assert {f: x["failed"] for f, x in a["families"].items()} == {"team_size": 3, "message_credit": 0, "zero_sum": 1}
    assert a["aggregate"]["failed"] == 4
    assert b["aggregate"]["failed"] == 0 and all(x["failed"] == 0 for x in b["settings"].values())
    assert a["settings"][N8]["seeds"] == pytest.approx([0.0, 0.9, 0.5])       # normalized, not raw: 0.2 failed
    assert a["settings"][N2]["ci"] == pytest.approx(mean_ci([0.1, 0.9, -0.2]))  # the scores as before


def test_tables_and_page_print_k_of_n_failed_beside_each_score(suite, scored):
    a = scored["methods"]["a"]
    md = score_tables(suite, scored)
    assert f"{format_ci(a['aggregate']['ci'])} 4/12 failed" in md          # 4 settings x 3 seeds
    assert f"{format_ci(a['families']['team_size']['ci'])} 3/6 failed" in md    # 2 settings x 3 seeds
    assert f"{format_ci(a['families']['message_credit']['ci'])} 0/3 failed" in md
    n2 = next(line for line in md.splitlines() if line.startswith(f"| {N2} |"))
    assert f"| {format_ci(a['settings'][N2]['ci'])} 2/3 failed |" in n2
    assert all(len(line) <= 120 for line in md.splitlines())
    assert any(f"at or below {FAILURE_THRESHOLD:g}" in c for c in suite_coverage(suite, scored))
    page = suite_page(suite, scored, page_context(suite, scored, "a"), figs=[])
    cells = re.findall(r"<td>([^<]*)</td>", page)
    assert f"{format_ci(a['aggregate']['ci'])} 4/12 failed" in cells
    assert f"{format_ci(a['settings'][KUHN]['ci'])} 1/3 failed" in cells


def test_a_scored_dict_without_counts_prints_the_scores_alone(suite, scored):
    """A ``scored`` from before the count (e.g. an older results.json) still prints, with no count."""
    for v in scored["methods"].values():
        for x in [v["aggregate"], *v["families"].values(), *v["settings"].values()]:
            del x["failed"]
    md = score_tables(suite, scored)
    assert "failed" not in md and format_ci(scored["methods"]["a"]["aggregate"]["ci"]) in md


def test_an_entry_stores_failures_per_setting_beside_unchanged_scores(suite, scored, results):
    e = entry(suite, scored, "a", results)
    r = e["results"]
    assert r["failures"] == {N2: 2, N8: 1, CLUE: 0, KUHN: 1}
    assert r["aggregate"] == list(scored["methods"]["a"]["aggregate"]["ci"])
    assert r["settings"][N8]["seeds"] == scored["methods"]["a"]["settings"][N8]["seeds"]
    assert set(r) == {"episodes", "replayed", "scores", "task_means", "games", "families", "aggregate", "settings",
                      "failures"}


def test_the_board_counts_failed_runs_from_the_scores_it_ranks_also_for_an_entry_without_the_field(suite, scored, results, tmp_path):
    store = tmp_path / "store"
    add_suite_entry(entry(suite, scored, "a", results), store)
    older = entry(suite, scored, "b", results)
    del older["results"]["failures"]                                       # stored before the field existed
    add_suite_entry(older, store)
    board = build_board(load_entries(store, SUITE), reps=50)
    column = dict(board_columns(board))[COLUMN]
    assert {r.method: column(r) for r in board.rows} == {"a": "4/12 failed", "b": "0/12 failed"}
    assert main(["render", "--store", str(store), "--out", str(tmp_path / "site")]) == 0
    md = (tmp_path / "site" / "LEADERBOARD.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| rank |"))
    at = [c.strip() for c in header.strip("|").split("|")].index(COLUMN)
    cells = {c[1].split("#")[0]: c[at] for line in md.splitlines() if line.startswith("| ") and "#" in line
             for c in [[x.strip() for x in line.strip("|").split("|")]]}
    assert cells == {"a": "4/12 failed", "b": "0/12 failed"}
    assert f"{COLUMN}</th>" in (tmp_path / "site" / "index.html").read_text()


@pytest.mark.parametrize("stored", [{N2: "2"}, {N2: -1}, {N2: 4}, {N2: True}, []])
def test_a_forged_failures_field_changes_nothing_on_the_board(suite, scored, results, tmp_path, stored):
    store = tmp_path / "store"
    e = entry(suite, scored, "a", results)
    e["results"]["failures"] = stored
    add_suite_entry(e, store)
    board = build_board(load_entries(store, SUITE), reps=50)
    column = dict(board_columns(board))[COLUMN]
    assert column(board.rows[0]) == "4/12 failed"          # counted from the scores, never read from the field
