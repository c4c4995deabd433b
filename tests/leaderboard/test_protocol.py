"""Protocols: the shipped files load, and a protocol that does not fit the schema or this package is refused with a
message naming the field."""

import copy
import json

import pytest

from leaderboard.protocol import (EVAL_SEED_START, PROTOCOL_DIR, ProtocolError, list_protocols, load_protocol,
                                  parse_protocol)
from marl_llm_envs import spec

BASE = json.loads((PROTOCOL_DIR / "policy.json").read_text())


def _with(change):
    raw = copy.deepcopy(BASE)
    change(raw)
    return raw


def test_shipped_protocols_load_with_both_tracks_and_every_tier():
    protocols = {name: load_protocol(name) for name in list_protocols()}
    assert {p.track for p in protocols.values()} == {"policy", "credit"}
    assert {p.tier for p in protocols.values() if p.track == "credit"} == {"micro", "small", "gpu"}
    for p in protocols.values():
        assert p.seed_start >= EVAL_SEED_START
        for task in p.tasks:
            assert task.env_version == spec(task.env_id).version
            assert task.one > task.zero


def test_eval_seeds_are_disjoint_from_training_seeds():
    from baselines.rollout import training_seeds

    p = load_protocol("credit-micro")
    t = p.train
    used = set()
    for seed in t["seeds"]:
        for step in range(t["steps"]):
            used.update(training_seeds(seed, step, t["tasks_per_step"]))
    assert not used & set(p.seeds)


def test_a_credit_protocol_has_one_run_per_training_seed_and_a_policy_protocol_one():
    credit = load_protocol("credit-micro")
    assert credit.runs == len(credit.train["seeds"]) > 1
    assert load_protocol("policy").runs == 1


def test_kuhn_anchors_are_the_seat_averaged_payoffs_of_anchors_json():
    anchors = spec("kuhn_poker-v0").anchors
    task = load_protocol("policy").task("kuhn_poker/vs-kuhn_nash")
    random_first = anchors["player_0 payoff, random vs kuhn_nash"]["mean"]
    nash_first = anchors["player_0 payoff, kuhn_nash vs random"]["mean"]
    # random's payoff as player_0, and as player_1 (minus the nash player_0's payoff), averaged
    assert task.zero == pytest.approx((random_first - nash_first) / 2)
    assert task.one == 0.0                          # kuhn_nash against itself, both seats
    assert task.normalized(task.zero) == 0.0 and task.normalized(task.one) == 1.0
    hanabi = load_protocol("policy").task("mini_hanabi/self-play")
    assert hanabi.zero == spec("mini_hanabi-v1").anchors["random"]["mean"]
    assert hanabi.one == spec("mini_hanabi-v1").anchors["rule_bot"]["mean"]


@pytest.mark.parametrize("change, message", [
    (lambda r: r["seeds"].update(start=0), "seeds.start"),
    (lambda r: r["tasks"][0].update(env_version=7), "tasks[0].env_version"),
    (lambda r: r["tasks"][1].update(opponent="nobody"), "tasks[1].opponent"),
    (lambda r: r["tasks"][4].update(normalize={"zero": "random", "one": "ghost"}), "tasks[4].normalize.one"),
    (lambda r: r["tasks"][0].update(colour="red"), "unknown field(s) ['colour']"),
    (lambda r: r.update(version="1"), "version: expected an integer"),
    (lambda r: r["tasks"][4].update(play="versus", opponent="random"), "tasks[4].play"),
    (lambda r: r["tasks"][0].update(env_kwargs={"action_mode": "text"}), "tasks[0].env_kwargs"),
    (lambda r: r["tasks"][1].update(name=r["tasks"][0]["name"]), "task names must be unique"),
    (lambda r: r.update(track="credit", tier="micro"), "train"),
])
def test_bad_protocol_is_refused_naming_the_field(change, message):
    with pytest.raises(ProtocolError) as info:
        parse_protocol(_with(change), where="p")
    assert message in str(info.value)


def test_unknown_protocol_name_lists_the_known_ones(tmp_path):
    with pytest.raises(ProtocolError, match="credit-micro"):
        load_protocol("no-such-protocol")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": NaN}')
    with pytest.raises(ProtocolError, match="NaN"):
        load_protocol(bad)
