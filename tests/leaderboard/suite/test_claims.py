"""benchmarks/suite_claims.py: the suite's pre-registered claims as paired comparisons, Holm-corrected over every
claim printed, and "holds" only after a re-check on fresh seeds (issue 40, item 4)."""

from __future__ import annotations

import json
import math

import pytest

from leaderboard.suite import SUITE_DIR, parse_suite
from tests.benchmark_scripts import load

claims = load("suite_claims")
N = 16


def _method(families: dict[str, list[float]]) -> dict:
    return {"families": {f: {"seeds": v} for f, v in families.items()}, "settings": {}, "tokens": {"main": 100,
                                                                                                  "branches": 0}}


def _data(shift_loo: float, noise: float = 0.01) -> dict:
    """broadcast 0.8, shuffled 0.0, none 0.5 on every family; loo = broadcast + shift_loo on team size (a seed-wise
    alternating wobble of +-noise keeps the differences from being constant)."""
    fams = claims.FAMILIES
    wobble = [noise * (-1) ** k for k in range(N)]
    base = {f: [0.8 + w for w in wobble] for f in fams}
    return {"suite": "test@1", "methods": {
        "broadcast": _method(base),
        "shuffled": _method({f: [0.0] * N for f in fams}),
        "none": _method({f: [0.5 - w for w in wobble] for f in fams}),
        "loo": _method({"team_size": [x + shift_loo + 0.5 * w for x, w in zip(base["team_size"], wobble)]}),
    }}


def _row(text: str, claim: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {claim} |"))


def test_a_separated_claim_is_not_said_to_hold_before_its_recheck_and_holm_counts_every_claim_printed():
    text = claims.report(_data(shift_loo=0.1))
    # measured: 6 control families + broadcast vs none on 2 families + loo vs broadcast on team size = 9
    assert "Holm over the 9 claims measured" in text
    assert _row(text, "broadcast above shuffled on temporal").endswith("| separated (not yet re-checked) |")
    assert _row(text, "loo above broadcast on team_size").endswith("| separated (not yet re-checked) |")
    # every claim whose methods are missing is still printed, as not measured
    assert "| coma above broadcast on team_size | not measured" in text
    assert " holds |" not in text
    # all 16 differences positive: exact sign-flip p = 2 / 2^16; Holm's smallest multiplier is m = 9
    line = _row(text, "broadcast above shuffled on team_size")
    assert f"| {min(1.0, 9 * 2 / 2 ** 16):.4f} |" in line


def test_the_recheck_decides_holds_did_not_replicate_and_reversed():
    first = _data(shift_loo=0.1)
    text = claims.report(first, recheck=_data(shift_loo=0.0, noise=0.05))
    assert _row(text, "broadcast above shuffled on team_size").endswith("| holds |")
    assert _row(text, "loo above broadcast on team_size").endswith(
        "| did not replicate (not separated on the re-check) |")
    assert "the re-check: Holm over the 9 claims it re-tested" in text
    text = claims.report(first, recheck=_data(shift_loo=-0.1))
    assert _row(text, "loo above broadcast on team_size").endswith("| reversed on the re-check |")
    # a claim separated against its direction is a finding too: re-tested like one, and said so either way
    against = _data(shift_loo=-0.1)
    assert _row(claims.report(against), "loo above broadcast on team_size").endswith(
        "| against the claim (separated the other way; not yet re-checked) |")
    text = claims.report(against, recheck=_data(shift_loo=-0.08))
    assert _row(text, "loo above broadcast on team_size").endswith(
        "| against the claim (separated the other way on both seed sets) |")
    assert "the re-check: Holm over the 9 claims it re-tested" in text
    text = claims.report(against, recheck=_data(shift_loo=0.0, noise=0.05))
    assert _row(text, "loo above broadcast on team_size").endswith(
        "| did not replicate (not separated on the re-check) |")
    text = claims.report(against, recheck=_data(shift_loo=0.1))
    assert _row(text, "loo above broadcast on team_size").endswith("| reversed on the re-check |")


def test_the_per_seed_slope_is_worked_by_hand():
    # seed k's difference is (0.2 + 0.05 k) log2(knob): each seed's least-squares slope is exactly 0.2 + 0.05 k
    knobs = [2, 4, 8, 16]
    slopes = claims.seed_slopes(knobs, [[(0.2 + 0.05 * k) * math.log2(n) for k in range(3)] for n in knobs])
    assert slopes == pytest.approx([0.2, 0.25, 0.3])
    # a sweep that starts at 0 (free riding's idle seats 0, 1, 3, 7) is fitted on log2(1 + knob) = 0, 1, 2, 3
    idle = [0, 1, 3, 7]
    assert claims.seed_slopes(idle, [[0.5 * math.log2(1 + n)] for n in idle]) == pytest.approx([0.5])
    assert claims.log_axis(idle)[1] == "log2(1 + {})"
    with pytest.raises(ValueError, match="knobs >= 0"):
        claims.seed_slopes([-1, 1], [[0.0], [0.0]])


def test_a_trend_claim_tests_the_per_seed_slopes_against_zero():
    knobs = [2, 4, 8, 16]
    a = {f"voting/fraction/n{n}": {"knob": n, "seeds": [0.1 * math.log2(n) + 0.01 * k for k in range(N)]}
         for n in knobs}
    b = {f"voting/fraction/n{n}": {"knob": n, "seeds": [0.01 * k for k in range(N)]} for n in knobs}
    methods = {"loo": {"settings": a}, "broadcast": {"settings": b}}
    xa, xb = claims.trend_claim("loo", "broadcast", "voting/fraction/", "n_voters").measure(methods)
    assert xa == pytest.approx([0.1] * N) and xb == [0.0] * N


def test_two_result_files_of_different_suites_are_refused_with_the_file_named(tmp_path):
    for name, suite in (("a.json", "s@1"), ("b.json", "s@2")):
        (tmp_path / name).write_text(json.dumps({"scored": {"suite": suite, "methods": {}}}))
    with pytest.raises(SystemExit, match="b.json"):
        claims.load([str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    (tmp_path / "c.json").write_text("[1, 2]")
    with pytest.raises(SystemExit, match="c.json: not a benchmark-credit results.json"):
        claims.load([str(tmp_path / "c.json")])


def test_parts_of_one_recheck_run_family_by_family_merge_and_a_setting_in_two_parts_must_agree(tmp_path):
    def scored(suite, methods):
        return {"scored": {"suite": suite, "methods": methods}}

    def part(settings, shift=0.0):
        return {"settings": {s: {"knob": 1, "seeds": [0.5 + shift] * N} for s in settings},
                "families": {settings[0].split("/")[0]: {"seeds": [0.5 + shift] * N}}, "side": {},
                "tokens": {"main": 10, "branches": 0}}

    assert claims.suite_of("credit-micro-recheck-team_size@4") == "credit-micro-recheck@4"
    assert claims.suite_of("credit-micro-recheck@4") == "credit-micro-recheck@4"
    assert claims.suite_of("credit-micro@4") == "credit-micro@4"
    files = {"ts.json": scored("credit-micro-recheck-team_size@4", {"broadcast": part(["voting/a", "voting/b"]),
                                                                     "coma": part(["voting/a", "voting/b"], 0.1)}),
             "rest.json": scored("credit-micro-recheck@4", {"broadcast": part(["kuhn/x"], 0.2),
                                                            "shuffled": part(["kuhn/x"], -0.5)})}
    for name, raw in files.items():
        (tmp_path / name).write_text(json.dumps(raw))
    got = claims.load([str(tmp_path / "ts.json"), str(tmp_path / "rest.json")])
    assert got["suite"] == "credit-micro-recheck@4" and set(got["methods"]) == {"broadcast", "coma", "shuffled"}
    b = got["methods"]["broadcast"]
    assert set(b["settings"]) == {"voting/a", "voting/b", "kuhn/x"} and set(b["families"]) == {"voting", "kuhn"}
    assert "tokens" not in b and "tokens" in got["methods"]["coma"]     # a merged method's counts were of a part
    # the same setting in two parts with different scores is refused, naming the file
    (tmp_path / "clash.json").write_text(json.dumps(scored("credit-micro-recheck@4",
                                                           {"broadcast": part(["voting/a"], 0.3)})))
    with pytest.raises(SystemExit, match="clash.json: method 'broadcast' appears with different scores"):
        claims.load([str(tmp_path / "ts.json"), str(tmp_path / "clash.json")])
    # another suite is still refused
    (tmp_path / "other.json").write_text(json.dumps(scored("credit-micro@4", {})))
    with pytest.raises(SystemExit, match="other.json: suite"):
        claims.load([str(tmp_path / "ts.json"), str(tmp_path / "other.json")])


def test_the_stored_team_size_recheck_protocol_is_the_one_families_writes(tmp_path):
    """The hand-written team_size re-check (id credit-micro-recheck-team_size) has exactly the settings, seeds, budget
    and scoring that ``--recheck-protocol --families team_size`` writes: only its id differs, which is why its
    results merge with the other parts of the re-check."""
    claims.main(["--recheck-protocol", str(tmp_path / "ts.json"), "--families", "team_size"])
    written = json.loads((tmp_path / "ts.json").read_text())
    stored = json.loads((SUITE_DIR.parents[2] / "benchmarks" / "claims" /
                         "credit-micro@4-recheck-team_size.json").read_text())
    for raw in (written, stored):
        raw.pop("id"), raw.pop("description")
    assert written == stored


def test_the_recheck_protocol_has_the_same_settings_and_fresh_seeds(tmp_path):
    out = tmp_path / "recheck.json"
    claims.main(["--recheck-protocol", str(out)])
    certified = parse_suite(json.loads((SUITE_DIR / "credit-micro@4.json").read_text()))
    fresh = parse_suite(json.loads(out.read_text()))
    assert fresh.key == "credit-micro-recheck@4"
    assert [(s.name, s.env_kwargs, s.partners) for s in fresh.settings] == \
        [(s.name, s.env_kwargs, s.partners) for s in certified.settings]
    old = {x for s in certified.settings for x in certified.budget(s)["seeds"]}
    new = [x for s in fresh.settings for x in fresh.budget(s)["seeds"]]
    assert len(new) == len(set(new)) == len(old) and not old & set(new)
    assert all(len(fresh.budget(s)["seeds"]) == len(certified.budget(s)["seeds"]) for s in fresh.settings)
    # a subset of families: the same id, and each kept setting has exactly the full re-check's seeds
    claims.main(["--recheck-protocol", str(tmp_path / "part.json"), "--families", "team_size,zero_sum"])
    part = parse_suite(json.loads((tmp_path / "part.json").read_text()))
    assert part.key == fresh.key and [f.name for f in part.families] == ["team_size", "zero_sum"]
    assert {s.name: part.budget(s)["seeds"] for s in part.settings} == \
        {s.name: fresh.budget(s)["seeds"] for s in fresh.settings if s.family in ("team_size", "zero_sum")}
    with pytest.raises(SystemExit, match="unknown"):
        claims.main(["--recheck-protocol", str(tmp_path / "x.json"), "--families", "teamsize"])


def test_board_entries_give_the_same_claims_as_the_results_json_they_were_made_from(tmp_path):
    """The claims can be re-derived from the board's stored entries: an entry made by the suite's own
    :func:`leaderboard.suite.entry` loads as the same per-seed setting and family scores and tokens as the
    ``results.json`` it came from, and a method whose scores differ between two files is refused."""
    from leaderboard.suite import entry, load_suite, score

    suite = load_suite("credit-micro-quick@2")            # team_size (n2, n8), message_credit, zero_sum; seeds 0-2
    anchors = {s.name: {"zero": 0.0, "one": 1.0} for s in suite.settings}
    (tmp_path / "anchors.json").write_text(json.dumps({"suite_sha256": suite.sha256, "anchors": anchors}))
    results = [{"method": m, "setting": s.name, "seed": seed, "raw": 0.3 + 0.1 * seed + (0.2 if m == "loo" else 0)
                + 0.01 * i, "curve": [0.0], "tokens": {"main": 7, "branches": 2 if m == "loo" else 0},
                "free_riding": {}, "config_hash": f"{m}{s.name}{seed}"}
               for m in ("broadcast", "loo") for i, s in enumerate(suite.settings) for seed in range(3)]
    scored = score(suite, results, cache=tmp_path / "anchors.json")
    (tmp_path / "results.json").write_text(json.dumps({"scored": scored}))
    paths = []
    for m in ("broadcast", "loo"):
        paths.append(tmp_path / f"{m}.json")
        paths[-1].write_text(json.dumps(entry(suite, scored, m, results)))
    from_entries = claims.load([str(p) for p in paths])
    from_results = claims.load([str(tmp_path / "results.json")])
    assert from_entries["suite"] == from_results["suite"] == "credit-micro-quick@2"
    for m in ("broadcast", "loo"):
        got, want = from_entries["methods"][m], from_results["methods"][m]
        assert got["tokens"] == want["tokens"] == {"main": 7 * 3 * len(suite.settings),
                                                   "branches": (2 if m == "loo" else 0) * 3 * len(suite.settings)}
        assert {s: x["seeds"] for s, x in got["settings"].items()} == {s: x["seeds"]
                                                                      for s, x in want["settings"].items()}
        for f, x in want["families"].items():
            assert got["families"][f]["seeds"] == pytest.approx(x["seeds"], abs=1e-12)
    # loo is 0.2 above broadcast at every seed of team size: the same verdict line either way
    assert _row(claims.report(from_entries), "loo above broadcast on team_size") == \
        _row(claims.report(from_results), "loo above broadcast on team_size")
    # an entry and a results.json of the same method merge when their scores agree, and are refused otherwise
    assert claims.load([str(paths[0]), str(tmp_path / "results.json")])["methods"]["broadcast"]["tokens"]
    forged = json.loads(paths[1].read_text())
    forged["method"] = "broadcast"
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    with pytest.raises(SystemExit, match="forged.json: method 'broadcast' appears with different scores"):
        claims.load([str(paths[0]), str(tmp_path / "forged.json")])
    broken = json.loads(paths[0].read_text())
    broken["results"]["scores"]["team_size"][0].pop()
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    with pytest.raises(SystemExit, match="broken.json: not a benchmark-credit results.json or a board entry"):
        claims.load([str(tmp_path / "broken.json")])


def test_the_stored_rechecks_re_derive_every_verdict_of_the_readme():
    """The README's claims table re-derives from what the repository keeps: the board's credit-micro@4 entries and
    the scored re-checks in benchmarks/claims/ (fresh seeds, each certified seed + 39000, run family by family)."""
    root = SUITE_DIR.parents[2]
    stored = root / "benchmarks" / "claims"
    certified = parse_suite(json.loads((SUITE_DIR / "credit-micro@4.json").read_text()))
    seeds = {s.name: certified.budget(s)["seeds"] for s in certified.settings}
    protocols = [p for p in sorted(stored.glob("*.json")) if not p.name.endswith(".results.json")]
    assert protocols
    for path in protocols:            # every stored re-check protocol: the certified settings on fresh seeds
        protocol = parse_suite(json.loads(path.read_text()))
        assert {s.name: protocol.budget(s)["seeds"] for s in protocol.settings} == \
            {s.name: [x + claims.RECHECK_OFFSET for x in seeds[s.name]] for s in protocol.settings}, path.name
    entries = sorted(str(p) for p in (root / "board" / "entries" / "credit-micro@4").glob("*.json"))
    recheck = claims.load(sorted(str(p) for p in stored.glob("*.results.json")))
    assert recheck["suite"] == "credit-micro-recheck@4"
    text = claims.report(claims.load(entries), recheck)
    holds = [f"broadcast above shuffled on {f}" for f in claims.FAMILIES] + [
        "broadcast above none on team_size", "broadcast above none on zero_sum", "loo above broadcast on team_size",
        "coma above broadcast on team_size"]
    for claim in holds:
        assert _row(text, claim).endswith("| holds |"), claim
    for claim in ("marshal above broadcast on temporal",
                  "marshal - broadcast slope above 0 on team_umbrella/* per doubling of delay"):
        assert _row(text, claim).endswith("| against the claim (separated the other way on both seed sets) |")
    assert "the re-check: Holm over the 12 claims it re-tested" in text
    assert "+0.143 [+0.117, +0.169] (n=16)" in _row(text, "coma above broadcast on team_size")
    assert "+0.084 [+0.050, +0.117] (n=16)" in _row(text, "loo above broadcast on team_size")
