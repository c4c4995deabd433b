"""credit-micro@4's settings where both roles learn (issue 40 item 5): message credit with the thinker and the solver
trained, dynamic teams with the orchestrator and its workers trained. Version 3's settings of these families train one
role against a scripted partner, and every method, `none` included, scores alike there: they cannot tell credit
methods apart. The new settings come after version 3's in their family, train every role, and have seeds of their
own (1000 + 16 k .. 1015 + 16 k for the k-th setting, k counted over version 3's settings first, then the new ones in
file order)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.suite import SUITE_DIR, load_suite

V3, V4 = (json.loads((SUITE_DIR / f"credit-micro@{v}.json").read_text()) for v in (3, 4))
V3_NAMES = {s["name"] for f in V3["families"] for s in f["settings"]}
NEW = [s for f in V4["families"] for s in f["settings"] if s["name"] not in V3_NAMES]
ROLES = {"think_solve-v0": {"thinker", "solver"}, "orchestrator-v0": {"orchestrator", "worker"}}
FAMILIES = {"message_credit": "think_solve-v0"}     # the families that have both-roles settings, and their env


def _family(name: str) -> list[dict]:
    return next(f["settings"] for f in V4["families"] if f["name"] == name)


def test_the_new_settings_follow_version_3s_in_message_credit_and_dynamic_teams():
    assert {s["env_id"] for s in NEW} == set(FAMILIES.values())
    for fam, env_id in FAMILIES.items():
        settings = _family(fam)
        old = [s for s in settings if s["name"] in V3_NAMES]
        assert old and settings[:len(old)] == old                  # appended: version 3's settings come first
        new = settings[len(old):]
        assert len(new) >= 2 and all(s["env_id"] == env_id for s in new)
        assert len({s["knob"] for s in new}) == len(new)           # a sweep of the family's knob, each value once
        assert len({s["name"].rsplit("/", 1)[0] for s in new}) == 1  # one variant line on the scaling figure
        assert all(s["name"].rsplit("/", 1)[0] != o["name"].rsplit("/", 1)[0] for s in new for o in old)


def test_the_new_settings_train_every_role_and_have_the_next_seeds():
    assert NEW and all("partners" not in s and s["play"] == "self" for s in NEW)
    k0 = sum(len(f["settings"]) for f in V3["families"])
    for j, s in enumerate(NEW):
        assert s["train"]["seeds"] == list(range(1000 + 16 * (k0 + j), 1016 + 16 * (k0 + j)))


def test_the_new_settings_anchors_are_random_and_the_optimum_or_the_reference_team():
    for s in NEW:
        kw = s["env_kwargs"]
        if s["env_id"] == "think_solve-v0":
            # proved in think_solve's manual: random play and any message that ignores the clue score 1/K, the
            # optimum is max(a, (1 - a) / (K - 1)) (a for a >= 1/K), attained by clue_relay
            k, a = kw["num_candidates"], kw["thinker_clue_accuracy"]
            assert s["knob"] == a and a >= 1 / k
            assert s["normalize"] == {"zero": pytest.approx(1 / k, abs=1e-15), "one": pytest.approx(a, abs=1e-15)}
        else:
            assert s["knob"] == int(kw["tasks"].rsplit("=", 1)[1])
            assert s["normalize"] == {"zero": "random", "one": "delegator"}


def test_the_new_settings_parse_with_a_budget_the_checkpoints_divide():
    suite = load_suite("credit-micro@4")
    by_name = {s.name: s for s in suite.settings}
    for s in NEW:
        budget = suite.budget(by_name[s["name"]])
        assert budget["steps"] % suite.score["checkpoints"] == 0
        assert budget["seeds"] == s["train"]["seeds"] and by_name[s["name"]].partners == ""
    untouched = {s.name: suite.budget(s)["steps"] for s in suite.settings if s.name in V3_NAMES}
    assert set(untouched.values()) == {V3["train"]["steps"]}       # version 3's settings keep the suite's budget


@pytest.mark.parametrize("name", [s["name"] for s in NEW])
def test_a_run_of_a_new_setting_updates_both_roles(tmp_path, name):
    """A short run of the setting as the suite plans it (steps cut to 5): the trainer's metrics say it trained every
    role of the env, none of them scripted."""
    from leaderboard.suite import plan
    from leaderboard.suite.runs import train_run

    suite = load_suite("credit-micro@4")
    spec = next(s for s in plan(suite, ["broadcast"], tmp_path)[0] if s["setting"] == name)
    assert spec["partners"] == ""
    run = train_run({**spec, "steps": 5, "tasks_per_step": 2, "group_size": 2, "checkpoints": 1})
    rows = [json.loads(line) for line in (Path(run) / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert len(rows) == 5
    assert set().union(*(r["roles_trained"].split(",") for r in rows)) == ROLES[spec["env_id"]]


def test_the_proved_anchors_agree_with_random_play_and_the_clue_relay_measured():
    """The numbers in ``normalize`` are the manual's proofs; random play and the reference team, measured on the
    suite's 1,000 anchor episodes, land within four binomial standard errors of them."""
    import dataclasses

    from leaderboard.suite.spec import anchor_value

    suite = load_suite("credit-micro@4")
    n = suite.score["anchor_episodes"]
    for s in (s for s in suite.settings if s.env_id == "think_solve-v0" and s.name.startswith("think_solve/both/")):
        for which, policy in (("zero", "random"), ("one", "clue_relay")):
            proved = s.normalize[which]
            measured = anchor_value(suite, dataclasses.replace(s, normalize={which: policy}), which)
            assert abs(measured - proved) <= 4 * max((proved * (1 - proved) / n) ** 0.5, 1 / n), (s.name, which)
