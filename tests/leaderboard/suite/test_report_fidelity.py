"""The suite's page shows every table ``benchmark-credit`` prints (issue 40, item 7): the credit fidelity measured
after the runs (per family, per setting, its verdicts) is on the page once measured, and its oracle-against-shuffled
rows join the credit-sensitivity table."""

from __future__ import annotations

import json
import re

from tests.leaderboard.suite.helpers import tiny

import leaderboard.benchmark as benchmark
from leaderboard.fidelity import TABLE_COLUMNS, table, table_rows
from leaderboard.suite import load_suite, page_context, suite_page
from tests.leaderboard.fake_pages import fake_scored

SUMMARY = {"voting/fraction/n2": {
    "turns": 96, "clusters": 12, "seeds": [0, 1], "reliability": 0.91, "exact_fraction": 0.5,
    "methods": {"oracle": {"r": 0.9, "low": 0.85, "high": 0.95, "disattenuated": 0.95, "sign_agreement": 0.9,
                           "false_credit": 0.0, "grad_cos": 0.8, "grad_cos_sd": 0.05, "branches": 8.0,
                           "branch_decisions": 20.0},
                "ccpo_v1": {"skip": "needs a thinker"}}}}


def _measured(with_rows: bool = True) -> dict:
    fams = {"oracle": {"team_size": {"r": 0.9, "low": 0.85, "high": 0.95}},
            "shuffled": {"team_size": {"r": 0.0, "low": -0.05, "high": 0.05}}}
    out = {"suite": "credit-micro-quick@2", "quick": False, "families": fams,
           "verdicts": ["oracle above shuffled: separated on team_size (voting/fraction/n2): ..."],
           "trends": [], "text": "the printed fidelity"}
    if with_rows:
        out |= {"columns": TABLE_COLUMNS, "rows": table_rows(SUMMARY)}
    return out


def test_the_text_table_and_the_page_rows_are_one_table():
    (caption, rows), = table_rows(SUMMARY)
    text = table(SUMMARY).splitlines()
    assert text[0] == caption and caption.startswith("voting/fraction/n2: 96 turns in 12 task groups")
    assert rows[0][:2] == ["oracle", "+0.90 [+0.85, +0.95]"] and rows[1] == ["ccpo_v1", "not applicable: needs a "
                                                                                        "thinker"]
    assert text[2].split() == ["oracle", "+0.90", "[+0.85,", "+0.95]", "0.95", "0.90", "0.00", "0.80", "(0.05)",
                               "8.0", "20.0"]


def test_the_suite_page_shows_the_fidelity_and_its_sensitivity_rows_once_measured():
    suite = load_suite("credit-micro-quick@2")
    scored = fake_scored(suite, {"oracle": {"team_size": 0.9}, "shuffled": {"team_size": 0.1}}, seeds=10)
    context = page_context(suite, scored, "oracle", runs=20)
    before = suite_page(suite, scored, context)
    assert "Credit fidelity" not in before and "(fidelity)" not in before
    html = suite_page(suite, scored, context, fidelity=_measured())
    assert "<h2 id='fidelity'>Credit fidelity (at the initial policy; credit-micro-quick@2)</h2>" in html
    fam = re.search(r"<table class='board fidelity' id='fidelity-credit-micro-quick@2'>(.*?)</table>", html,
                    re.DOTALL).group(1)
    assert "<th onclick='sortTable(this)'>team_size r [95% CI]</th>" in fam and "<td>0.90 [0.85, 0.95]</td>" in fam
    assert "voting/fraction/n2: 96 turns in 12 task groups" in html
    assert "<td>not applicable: needs a thinker</td>" in html
    assert "<li>oracle above shuffled: separated on team_size" in html
    sens = re.search(r"<table class='board sensitivity'[^>]*>(.*?)</table>", html, re.DOTALL).group(1)
    assert "<td>oracle - shuffled (fidelity)</td>" in sens and "<td>oracle - shuffled (training)</td>" in sens
    assert "in fidelity, oracle above shuffled on 1 of 1 family" in html.split("</h1>", 1)[1].split("</p>", 1)[0]
    # a measurement without per-setting rows (an older or faked one): the family table alone, no crash
    assert "Credit fidelity" in suite_page(suite, scored, context, fidelity=_measured(with_rows=False))


def test_benchmark_credit_writes_the_page_again_with_the_fidelity(tmp_path, monkeypatch):
    path = tmp_path / "test-suite@1.json"
    path.write_text(json.dumps(tiny(steps=1, seeds=(0,))))

    def fake(name, method, baselines, out, jobs=1):        # the measurement itself: tests/leaderboard/test_fidelity
        return _measured() | {"suite": "test-suite@1", "wall_s": 0.0, "settings": ["voting/plurality/n2"],
                              "seeds": [0], "summary": SUMMARY}

    monkeypatch.setattr(benchmark, "for_suite", fake)
    result = benchmark.benchmark_credit("shuffled", protocol=str(path), baselines=["broadcast"],
                                        out=tmp_path / "bench", progress=False)
    html = (result["out"] / "index.html").read_text()
    assert "<h2 id='fidelity'>Credit fidelity (at the initial policy; test-suite@1)</h2>" in html
    assert "voting/fraction/n2: 96 turns in 12 task groups" in html
    assert "<dt>training seeds</dt><dd>0</dd>" in html            # the context it was first written with
