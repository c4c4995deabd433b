"""credit-micro@4, the protocol for claims (issue 40): version 3's families and settings, sixteen training seeds
per setting, seeds (so model inits and task streams) independent across settings, the team umbrella scored on its
noise-free decisive reward, and the anchors the env manuals prove given as numbers."""

from __future__ import annotations

import copy
import json
import re

import pytest

from leaderboard.protocol import ProtocolError
from leaderboard.suite import SUITE_DIR, parse_suite, score

V3, V4 = (json.loads((SUITE_DIR / f"credit-micro@{v}.json").read_text()) for v in (3, 4))
SEED_LIMIT = 2 ** 16          # the trainer's --seed bound (each seed owns its own 2**24 training tasks)


def _settings(raw: dict) -> list[dict]:
    return [s for f in raw["families"] for s in f["settings"]]


def test_version_4_keeps_version_3s_families_and_settings():
    assert V4["id"] == "credit-micro" and V4["version"] == 4
    assert [f["name"] for f in V4["families"]] == [f["name"] for f in V3["families"]]
    keep = ("name", "env_id", "env_version", "env_kwargs", "knob", "play", "opponent", "partners", "evaluate")
    v3_names = {s["name"] for s in _settings(V3)}          # and the both-roles settings after them (test_both_roles)
    assert [{k: s.get(k) for k in keep} for s in _settings(V4) if s["name"] in v3_names] == \
        [{k: s.get(k) for k in keep} for s in _settings(V3)]
    assert {k: V4["train"][k] for k in V4["train"] if k != "seeds"} == \
        {k: V3["train"][k] for k in V3["train"] if k != "seeds"}                    # the same budget per run


def test_every_setting_has_sixteen_seeds_of_its_own():
    lists = [s["train"]["seeds"] for s in _settings(V4)]
    assert all(len(seeds) == 16 and len(set(seeds)) == len(seeds) for seeds in lists)
    every = [x for seeds in lists for x in seeds]
    assert len(set(every)) == len(every)                     # no two settings share a seed: independent streams
    assert all(0 <= x < SEED_LIMIT for x in every)
    assert not set(every) & (set(V3["train"]["seeds"]) | set(range(100, 105)))   # fresh against earlier seed sets
    assert V4["train"]["seeds"] == lists[0]


def test_temporal_scores_the_decisive_reward_and_proved_anchors_are_numbers():
    umbrella = [s for s in _settings(V4) if s["env_id"] == "team_umbrella-v0"]
    assert len(umbrella) == 4 and all(s["score"] == "decisive_reward" for s in umbrella)
    assert all(s["normalize"] == {"zero": 0.0, "one": 1.0} for s in umbrella)
    free = [s for s in _settings(V4) if s["env_id"] == "free_riding-v0"]
    assert len(free) == 4 and all(s["normalize"] == {"zero": pytest.approx(1 / 3, abs=1e-15), "one": 1.0}
                                  for s in free)
    assert not any("score" in s for s in _settings(V4) if s["env_id"] != "team_umbrella-v0")


def test_the_suite_plans_each_setting_on_its_own_seeds(tmp_path):
    from leaderboard.suite import load_suite, plan

    suite = load_suite("credit-micro@4")
    specs, _ = plan(suite, ["broadcast"], tmp_path)
    by_setting: dict[str, list[int]] = {}
    for spec in specs:
        by_setting.setdefault(spec["setting"], []).append(spec["seed"])
    assert by_setting == {s["name"]: s["train"]["seeds"] for s in _settings(V4)}
    assert {spec["score"] for spec in specs if spec["env_id"] == "team_umbrella-v0"} == {"decisive_reward"}
    assert {spec["score"] for spec in specs if spec["env_id"] != "team_umbrella-v0"} == {"team_reward"}


def _two_settings(first_seeds, second_seeds, **second) -> dict:
    raw = copy.deepcopy(V4)
    fam = raw["families"][0]
    fam["settings"] = [dict(fam["settings"][0], normalize={"zero": 0.0, "one": 1.0}, train={"seeds": first_seeds}),
                       dict(fam["settings"][1], normalize={"zero": 0.0, "one": 1.0}, train={"seeds": second_seeds},
                            **second)]
    raw["families"] = [fam]
    raw["train"]["seeds"] = list(first_seeds)
    return raw


@pytest.mark.parametrize("seeds, second, field", [
    ([7, 7], {}, "train.seeds"), ([7, 2 ** 16], {}, "train.seeds"), ([7, True], {}, "train.seeds"),
    ("7", {}, "train.seeds"), ([7, 8, 9], {}, "families"), ([7, 8], {"score": "noise_free"}, "score")])
def test_a_settings_seeds_and_score_are_checked_naming_the_field(seeds, second, field):
    with pytest.raises(ProtocolError, match=re.escape(field)):
        parse_suite(_two_settings([5, 3], seeds, **second))


def test_decisive_reward_is_for_self_play_settings_only():
    raw = copy.deepcopy(V4)
    kuhn = next(s for f in raw["families"] for s in f["settings"] if s["play"] == "versus")
    kuhn["score"] = "decisive_reward"
    with pytest.raises(ProtocolError, match=r"\.score: 'decisive_reward' scores a 'self' setting"):
        parse_suite(raw)


def test_scores_pair_seeds_by_position_within_each_setting_not_by_value():
    suite = parse_suite(_two_settings([5, 3], [9, 7]))
    first, second = (s.name for s in suite.settings)
    raws = {("a", first, 5): 0.1, ("a", first, 3): 0.3, ("a", second, 9): 0.5, ("a", second, 7): 0.9,
            ("b", first, 5): 0.0, ("b", first, 3): 0.2, ("b", second, 9): 0.4, ("b", second, 7): 0.8}
    results = [{"method": m, "setting": s, "seed": sd, "raw": v, "tokens": {}} for (m, s, sd), v in raws.items()]
    scored = score(suite, results)
    a = scored["methods"]["a"]
    assert a["seeds"] == [5, 3]                                   # positions, labelled by the suite's train.seeds
    assert a["settings"][second]["seeds"] == pytest.approx([0.5, 0.9])       # seed 9 is position 0, seed 7 is 1
    assert a["families"]["team_size"]["seeds"] == pytest.approx([0.3, 0.6])  # (0.1 + 0.5) / 2, (0.3 + 0.9) / 2
    assert scored["methods"]["b"]["seeds"] == a["seeds"]
    with pytest.raises(ValueError, match="seed 11 is not one of the setting's seeds"):
        score(suite, results + [{"method": "a", "setting": first, "seed": 11, "raw": 0.0, "tokens": {}}])


def test_a_run_keeps_evenly_spaced_checkpoints_and_a_scoring_change_does_not_retrain_it(tmp_path):
    """credit-micro@4 keeps ``score.checkpoints`` (5) evenly spaced checkpoints of every run, the last one the final
    policy, so the final policy and the best checkpoint can both be scored; a run is reused when only how it is
    scored changes (its receipt is keyed by what it was trained from), and trained again when its training changes."""
    from leaderboard.suite import load_suite, plan
    from leaderboard.suite.runs import train_run

    suite = load_suite("credit-micro@4")
    assert suite.score["checkpoints"] == 5
    spec = next(s for s in plan(suite, ["broadcast"], tmp_path)[0] if s["setting"] == "voting/fraction/n2")
    spec = {**spec, "steps": 10, "tasks_per_step": 2, "group_size": 2}
    run = tmp_path / "broadcast" / "voting_fraction_n2" / f"seed{spec['seed']}"
    assert train_run(spec) == str(run)
    assert sorted(p.name for p in (run / "checkpoints").iterdir() if p.is_dir()) == \
        [f"step-{k:07d}" for k in (2, 4, 6, 8, 10)]
    stamp = (run / "metrics.jsonl").stat().st_mtime_ns
    train_run({**spec, "eval_count": 7, "last_fraction": 0.5})            # scoring only: reused as it is
    assert (run / "metrics.jsonl").stat().st_mtime_ns == stamp
    train_run({**spec, "group_size": 4})                                   # its training: trained again
    assert (run / "metrics.jsonl").stat().st_mtime_ns != stamp


def test_checkpoints_must_divide_every_settings_steps():
    raw = copy.deepcopy(V4)
    raw["score"]["checkpoints"] = 3
    with pytest.raises(ProtocolError, match="checkpoints.*must divide setting voting/fraction/n2's 100 steps"):
        parse_suite(raw)
