"""The credit-assignment suite: its files, its scoring by hand, runs that give identical results in one
process, in several and over Ray, and the benchmark's outputs (table, figures, leaderboard entries)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from leaderboard.__main__ import main
from leaderboard.board import build_board
from leaderboard.protocol import ProtocolError
from leaderboard.suite import SUITE_DIR, complete_run, entry, execute, list_suites, load_suite, parse_suite, plan, \
    score, score_run, score_tables
from tests.benchmark_scripts import load
from tests.leaderboard.suite.helpers import tiny


def test_every_shipped_suite_loads_with_its_families_knobs_and_exact_settings():
    assert {"credit-micro@2", "credit-micro@3", "credit-micro-quick@3", "credit-small@2"} <= set(list_suites())
    full = load_suite("credit-micro@3")
    assert full.key == "credit-micro@3" and full.train["seeds"] == [0, 1, 2, 3, 4]
    assert {"team_size", "message_credit", "temporal", "free_riding", "dynamic_teams", "zero_sum"} <= {
        f.name for f in full.families}
    team = next(f for f in full.families if f.name == "team_size")
    assert sorted(s.knob for s in team.settings if s.name.startswith("voting/plurality")) == [2, 4, 8, 16]
    assert all(s.evaluate == "exact" for s in full.settings if s.play == "versus")
    dynamic = next(f for f in full.families if f.name == "dynamic_teams")
    assert [s.knob for s in dynamic.settings] == [2, 3] and {s.partners for s in dynamic.settings} == {
        "orchestrator=reference"}
    small = load_suite("credit-small@2")
    assert small.action_mode == "text" and small.train["mode"] == "choice"
    version_2 = load_suite("credit-micro@2")                                       # still readable
    assert {s.name for s in small.settings} < {s.name for s in version_2.settings}  # the same families in text
    quick = load_suite("credit-micro-quick@3")
    assert {s.name for s in quick.settings} < {s.name for s in full.settings}
    from leaderboard.suite import latest_suite

    assert latest_suite("credit-micro") == "credit-micro@4" and latest_suite("credit-nano") is None


@pytest.mark.parametrize("edit, field", [
    (lambda r: r["families"][0]["settings"][0].update(env_kwargs={"n_voter": 2}), "env_kwargs"),
    (lambda r: r["families"][1]["settings"][0].pop("opponent"), "opponent"),
    (lambda r: r["score"].update(last_fraction=0), "last_fraction"),
    (lambda r: r["families"][0]["settings"][0].update(colour="red"), "unknown field"),
    (lambda r: r["families"][0]["settings"][0].update(train={"steps": 0}), "train.steps"),
    (lambda r: r["families"][1]["settings"].append(dict(r["families"][1]["settings"][0])), "used twice"),
])
def test_a_bad_suite_is_refused_naming_the_field(edit, field):
    raw = tiny()
    edit(raw)
    with pytest.raises(ProtocolError, match=field):
        parse_suite(raw)


def _fake(method, setting, seed, raw):
    return {"method": method, "setting": setting, "seed": seed, "raw": raw, "curve": [raw], "tokens": {"main": 1},
            "free_riding": {}, "config_hash": "x"}


def test_scores_are_normalized_per_setting_averaged_per_family_with_t_intervals():
    raw = tiny()
    raw["families"][0]["settings"][0]["normalize"] = {"zero": 0.2, "one": 0.7}      # numbers: no measuring
    raw["families"][0]["settings"].append(dict(raw["families"][0]["settings"][0], name="voting/plurality/n4",
                                               knob=4, env_kwargs={"n_voters": 4},
                                               normalize={"zero": 0.0, "one": 2.0}))
    suite = parse_suite(raw)
    results = [_fake("broadcast", "voting/plurality/n2", 0, 0.45), _fake("broadcast", "voting/plurality/n2", 1, 0.7),
               _fake("broadcast", "voting/plurality/n4", 0, 1.0), _fake("broadcast", "voting/plurality/n4", 1, 0.5)]
    scored = score(suite, results)
    b = scored["methods"]["broadcast"]
    assert b["settings"]["voting/plurality/n2"]["seeds"] == pytest.approx([0.5, 1.0])  # (x - 0.2) / 0.5
    assert b["settings"]["voting/plurality/n4"]["seeds"] == pytest.approx([0.5, 0.25])
    fam = b["families"]["team_size"]
    assert fam["seeds"] == pytest.approx([0.5, 0.625])
    half = stats.t.ppf(0.975, 1) * np.std([0.5, 0.625], ddof=1) / math.sqrt(2)
    assert fam["ci"] == pytest.approx((0.5625, 0.5625 - half, 0.5625 + half))
    assert b["aggregate"]["ci"] == pytest.approx(fam["ci"])            # one family: the aggregate is that family
    md = score_tables(suite, scored)
    assert "| method | aggregate | team_size | zero_sum |" in md and "| broadcast | 0.562 [" in md
    assert "n/a" in md                                                 # no zero_sum runs


@pytest.mark.parametrize("cached", ["{", "[1, 2]", '{"suite_sha256": "SHA", "anchors": []}',
                                    '{"suite_sha256": "SHA", "anchors": {"voting/plurality/n2": {"zero": "0.9"}}}',
                                    '{"suite_sha256": "SHA", "anchors": {"voting/plurality/n2": {"zero": NaN, '
                                    '"one": 1.0}}}'])
def test_a_damaged_anchors_cache_is_measured_again_and_rewritten(tmp_path, cached):
    """anchors.json is only a cache of measured anchors: a cut or odd file must not end a finished suite run with a
    traceback, nor put its values in the scores."""
    raw = tiny()
    raw["families"][0]["settings"][0]["normalize"] = {"zero": 0.2, "one": 0.7}
    suite = parse_suite(raw)
    results = [_fake("broadcast", "voting/plurality/n2", 0, 0.45), _fake("broadcast", "voting/plurality/n2", 1, 0.7)]
    cache = tmp_path / "anchors.json"
    cache.write_text(cached.replace("SHA", suite.sha256))
    scored = score(suite, results, cache=cache)
    assert scored["methods"]["broadcast"]["settings"]["voting/plurality/n2"]["seeds"] == pytest.approx([0.5, 1.0])
    assert json.loads(cache.read_text()) == {"suite_sha256": suite.sha256,
                                             "anchors": {"voting/plurality/n2": {"zero": 0.2, "one": 0.7}}}
    assert [p.name for p in tmp_path.iterdir()] == ["anchors.json"]


def test_the_small_tier_trains_and_scores_in_text_choice_mode_with_the_tiny_model(tmp_path):
    raw = json.loads((SUITE_DIR / "credit-small@2.json").read_text())
    raw["train"].update(model="tiny", steps=1, tasks_per_step=1, group_size=2, seeds=[0])
    raw["score"].update(anchor_episodes=10, eval_seeds={"start": 2**40, "count": 2})
    raw["families"] = [f for f in raw["families"] if f["name"] == "zero_sum"]
    raw["families"][0]["settings"] = [dict(raw["families"][0]["settings"][0], eval_count=2)]
    suite = parse_suite(raw)
    results = execute(plan(suite, ["broadcast"], tmp_path)[0])
    assert [r["setting"] for r in results] == ["kuhn_poker/self-play"] and math.isfinite(results[0]["raw"])
    assert json.loads((tmp_path / "broadcast" / "kuhn_poker_self-play" / "seed0" / "config.json").read_text())[
        "mode"] == "choice"
    assert "zero_sum" in score(suite, results)["methods"]["broadcast"]["families"]


def test_plan_refuses_a_method_that_does_not_build_rather_than_listing_it_as_not_applicable(tmp_path):
    with pytest.raises(ValueError, match="unknown credit method 'brodcast'"):
        plan(parse_suite(tiny()), ["broadcast", "brodcast"], tmp_path)


def test_methods_that_cannot_train_on_a_setting_are_listed_not_run(tmp_path):
    specs, skipped = plan(parse_suite(tiny()), ["broadcast", "ccpo_v2"], tmp_path)
    assert {(s["method"], s["setting"]) for s in specs} == {("broadcast", "voting/plurality/n2"),
                                                            ("broadcast", "kuhn")}
    assert sorted(skipped["ccpo_v2"]) == ["kuhn", "voting/plurality/n2"]
    assert [s["seed"] for s in specs] == [0, 1, 0, 1]
    assert {s["eval_count"] for s in specs if s["setting"] == "kuhn"} == {6}


def _strip(results):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in results]


def test_jobs_give_results_identical_to_one_process(tmp_path):
    suite = parse_suite(tiny(steps=2))
    one = execute(plan(suite, ["broadcast", "shuffled"], tmp_path / "one")[0], jobs=1)
    two = execute(plan(suite, ["broadcast", "shuffled"], tmp_path / "two")[0], jobs=2)
    assert _strip(one) == _strip(two)
    assert len(one) == 8 and all(len(r["curve"]) == 2 for r in one)
    assert all(len(r["config_hash"]) == 12 for r in one)           # the trainer's config hash, kept in the entry
    # a finished run is reused, not trained again
    again = execute(plan(suite, ["broadcast"], tmp_path / "one")[0], jobs=1)
    assert _strip(again) == _strip(one[:4])
    with pytest.raises(ValueError, match="--jobs"):
        execute([], jobs=0)



def test_a_finished_run_with_a_damaged_file_is_a_clear_error_and_is_trained_again(tmp_path):
    # a run's checkpoint meta or metrics line damaged from outside (both are written atomically or line by line):
    # reading it is an error naming the file, not a JSON traceback; the suite does not reuse it (its files are not
    # the ones this machine trained, issue 42) but trains it again, with the same result
    suite = parse_suite(tiny(steps=1, seeds=(0,)))
    specs = [s for s in plan(suite, ["broadcast"], tmp_path)[0] if s["setting"] == "kuhn"]
    first = execute(specs)
    run = Path(specs[0]["out"])
    metrics = run / "metrics.jsonl"
    good = metrics.read_text()
    metrics.write_text(good.replace("}", "", 1))
    with pytest.raises(ValueError, match=r"metrics\.jsonl:1: damaged \(JSONDecodeError.*delete .* to train that run "
                                         r"again"):
        score_run(specs[0], run)
    metrics.write_text("[1, 2]\n")
    with pytest.raises(ValueError, match=r"metrics\.jsonl:1: damaged \(a JSON list, not an object\)"):
        score_run(specs[0], run)
    assert _strip(execute(specs)) == _strip(first)
    meta = next(run.glob("checkpoints/step-*/meta.json"))
    meta.write_text("{\"step\": 1,")
    with pytest.raises(ValueError, match=r"meta\.json: damaged \(JSONDecodeError"):
        complete_run(run, 1)
    meta.write_text("[1]")           # JSON, but not the object a checkpoint's meta is: damaged too
    with pytest.raises(ValueError, match=r"meta\.json: damaged \(a JSON list, not an object\)"):
        complete_run(run, 1)
    assert _strip(execute(specs)) == _strip(first)


def test_ray_gives_results_identical_to_one_process(tmp_path):
    pytest.importorskip("ray")
    suite = parse_suite(tiny(steps=2, seeds=(0,)))
    one = execute(plan(suite, ["broadcast"], tmp_path / "one")[0], jobs=1)
    over_ray = execute(plan(suite, ["broadcast"], tmp_path / "ray")[0], ray="local")
    assert _strip(one) == _strip(over_ray)



def test_ray_without_a_cluster_there_is_a_clear_error(monkeypatch):
    # ray.init's own errors (no cluster at the address, not an address) name the flag and the two ways to run
    import sys
    import types

    fake = types.ModuleType("ray")
    fake.is_initialized = lambda: False

    def init(address=None, **kwargs):
        if address == "auto":
            raise ConnectionError("Could not find any running Ray instance.")
        raise ValueError(f"Invalid address format: {address}")

    fake.init = init
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(ValueError, match=r"--ray auto: Could not find any running Ray instance\..*ray start --head.*"
                                         r"--ray local"):
        execute([{"method": "broadcast", "setting": "s", "seed": 0}], ray="auto", fn=json.dumps)
    with pytest.raises(ValueError, match="--ray foo: Invalid address format: foo"):
        execute([{"method": "broadcast", "setting": "s", "seed": 0}], ray="foo", fn=json.dumps)
    assert execute([], ray="auto", fn=json.dumps) == []     # nothing to run: Ray is not even asked
    # an address nothing answers on: refused within seconds, before ray.init (Ray retries it for minutes)
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(ValueError, match=f"--ray {address}: nothing answers at 127.0.0.1:{port}"):
            execute([{"method": "broadcast", "setting": "s", "seed": 0}], ray=address, fn=json.dumps)

def test_benchmark_prints_families_writes_figures_and_entries_rank_on_the_board(tmp_path, capsys):
    path = tmp_path / "test-suite@1.json"
    path.write_text(json.dumps(tiny()))
    store = tmp_path / "store"
    assert main(["benchmark-credit", "shuffled", "--protocol", str(path), "--baselines", "broadcast,ccpo_v1",
                 "--out", str(tmp_path / "bench"), "--submit", "--store", str(store), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "| method | aggregate | team_size | zero_sum |" in text and "| shuffled |" in text
    assert "ccpo_v1 is not applicable on voting/plurality/n2, kuhn" in text
    assert "control: broadcast above shuffled on " in text and "/2 families" in text
    assert re.search(r"shuffled (vs|above|below) broadcast on team_size: (not separated \()?paired difference", text)
    out = tmp_path / "bench" / "test-suite@1"
    assert (out / "radar.png").read_bytes()[:4] == b"\x89PNG"
    assert "data-figure='radar'" in (out / "index.html").read_text()
    assert main(["render", "--store", str(store), "--out", str(tmp_path / "site")]) == 0
    md = (tmp_path / "site" / "LEADERBOARD.md").read_text()
    assert "## test-suite@1 (credit track)" in md and "| team_size | zero_sum |" in md
    saved = json.loads((out / "results.json").read_text())
    board = build_board([entry(load_suite(path), saved["scored"], m, saved["runs"]) for m in ("broadcast",
                                                                                               "shuffled")])
    assert board.tasks == ["team_size", "zero_sum"] and len(board.rows) == 2


def test_power_analysis_reads_a_pilot_that_is_not_the_certified_run(tmp_path):
    power = load("suite_power")
    # every pilot difference is +0.1 on team_size and +0.3 on zero_sum: each simulated run is n equal differences,
    # exact sign-flip p = 2 / 2^n, so one comparison needs n = 6 (2/64 < 0.05 <= 2/32) on each family and on the
    # aggregate; a family whose differences centre on 0 never gets there
    a = {"seeds": [200, 201, 202], "families": {"team_size": {"seeds": [0.6, 0.7, 0.8]},
                                                "zero_sum": {"seeds": [0.9, 0.9, 0.9]},
                                                "temporal": {"seeds": [0.5, 0.4, 0.5]}}}
    b = {"seeds": [200, 201, 202], "families": {"team_size": {"seeds": [0.5, 0.6, 0.7]},
                                                "zero_sum": {"seeds": [0.6, 0.6, 0.6]},
                                                "temporal": {"seeds": [0.4, 0.5, 0.5]}}}
    rows = power.power_rows({"a": a, "b": b}, "a", "b", certified=[0, 1, 2], max_seeds=12, reps=200)
    assert [(w, n, need) for w, _, n, need in rows][1:3] == [("team_size", 3, 6), ("zero_sum", 3, 6)]
    assert rows[3][0] == "temporal" and rows[3][3] is None
    with pytest.raises(ValueError, match="reuses the certified run's seeds"):
        power.power_rows({"a": a, "b": b}, "a", "b", certified=[201], max_seeds=8, reps=50)
    assert power.certified_seeds(SUITE_DIR / "credit-micro@3.json") == [0, 1, 2, 3, 4]
    assert len(power.certified_seeds(SUITE_DIR / "credit-micro@4.json")) == 27 * 16     # 25 + 2 both-roles settings


@pytest.mark.parametrize("edit, field", [
    (lambda r: r.update(id="Test Suite"), r"suite\.id"),
    (lambda r: r.update(version=0), r"suite\.version"),
    (lambda r: r.update(track="policy"), r"suite\.track"),
    (lambda r: r.pop("tier"), r"suite\.tier"),
    (lambda r: r["score"]["eval_seeds"].update(start=5), r"eval_seeds\.start"),
    (lambda r: r["families"][1]["settings"][0].update(opponent="kuhn_bluffer"), r"settings\[0\]\.opponent"),
    (lambda r: r["families"][0]["settings"][0]["env_kwargs"].update(action_mode="text"), "action mode"),
])
def test_a_suite_file_is_held_to_the_protocol_rules_naming_the_field(edit, field):
    # the header, the seed range, the env and the opponent are checked by the protocol's own parsers
    raw = tiny()
    parse_suite(tiny())
    edit(raw)
    with pytest.raises(ProtocolError, match=field):
        parse_suite(raw)


def test_a_suite_entry_added_twice_is_refused_and_the_store_keeps_one(tmp_path):
    from leaderboard.store import load_entries
    from leaderboard.suite import add_suite_entry
    from leaderboard.validate import SubmissionError

    raw = tiny()
    raw["families"] = raw["families"][:1]
    raw["families"][0]["settings"][0]["normalize"] = {"zero": 0.2, "one": 0.7}      # numbers: no measuring
    suite = parse_suite(raw)
    results = [_fake("broadcast", "voting/plurality/n2", seed, 0.5) for seed in (0, 1)]
    e = entry(suite, score(suite, results), "broadcast", results)
    add_suite_entry(e, tmp_path)
    before = (tmp_path / "index.json").read_text()
    with pytest.raises(SubmissionError, match="duplicate"):
        add_suite_entry(e, tmp_path)
    assert (tmp_path / "index.json").read_text() == before
    assert [x["id"] for x in load_entries(tmp_path)] == [e["id"]]
    assert (tmp_path / "test-suite@1" / f"broadcast--{e['manifest']['results_sha256'][:12]}.json").is_file()


def test_a_method_applicable_to_some_families_is_listed_apart_from_the_aggregate_ranking(tmp_path):
    """ccpo applies to the message-credit family only: it is not ranked on the aggregate (issue 40), and the board
    lists it under partial coverage with its family score; no cell reads 'nan'."""
    assert main(["render", "--store", str(Path(__file__).resolve().parents[3] / "board" / "entries"), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "LEADERBOARD.md").read_text()
    section = md[md.index("## credit-micro@3 (credit track"):]          # "; superseded by ..." once @4 has entries
    section = section[:section.index("\n## ")] if "\n## " in section else section
    ranked, partial = section.split("| entry (partial coverage, not ranked) |")
    assert not any("| ccpo_v1#" in line for line in ranked.splitlines())
    assert any(line.startswith("| ccpo_v1#") and "| 1 of 6: message_credit |" in line for line in partial.splitlines())
    assert "partial coverage, not in the aggregate ranking" in section and "ccpo_v1 (message_credit 0." in section
    assert "nan" not in section


def test_a_method_named_twice_is_planned_once(tmp_path):
    """--baselines none,none (or naming the method under test again) trains and lists each method's runs once: the
    page said 'runs: 36' for 24 distinct runs, and results.json listed each of the repeated ones twice."""
    from leaderboard.suite import benchmark_suite

    raw = tiny(seeds=(0,))
    raw["families"][0]["settings"][0]["normalize"] = {"zero": 0.0, "one": 1.0}
    raw["families"] = raw["families"][:1]
    raw["score"]["eval_seeds"]["count"] = 2
    suite = parse_suite(raw)
    result = benchmark_suite("broadcast", suite, ["none", "none", "broadcast"], tmp_path, progress=False)
    runs = json.loads((Path(result["out"]) / "results.json").read_text())["runs"]
    assert sorted(r["method"] for r in runs) == ["broadcast", "none"]
    assert "- runs: 2 (methods x applicable settings x seeds)" in result["markdown"]
