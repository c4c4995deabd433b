"""The episode records and their JSONL files (baselines/episode.py): version-1 files still read, ``json_safe``
and ``to_json`` against the plain conversions, and corrupt files named by line and field (what the rollout engine
records in them: tests/baselines/rollout/test_engine.py)."""

from __future__ import annotations

import json

import pytest

from baselines.episode import SCHEMA_VERSION, read_jsonl, write_jsonl
from baselines.policies.scripted import RandomPolicy
from baselines.rollout import BranchSpec, RolloutEngine
from marl_llm_envs import make
from tests.baselines.helpers import _one_episode_file


def test_episode_files_of_schema_version_1_still_read(tmp_path):
    episodes = RolloutEngine(RandomPolicy(seed=0), show_progress=False).run("think_solve-v0", 2)
    path = tmp_path / "new.jsonl"
    write_jsonl(path, episodes)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"schema": "marl_llm_episodes", "schema_version": SCHEMA_VERSION}
    old = [json.dumps({"schema": "marl_llm_episodes", "schema_version": 1})]
    for line in lines[1:]:
        d = json.loads(line)
        del d["run_id"], d["policies"]
        for t in d["turns"]:
            del t["legal_actions"]
        old.append(json.dumps(d))
    (tmp_path / "old.jsonl").write_text("\n".join(old) + "\n")
    back = read_jsonl(tmp_path / "old.jsonl")
    assert [e.rewards for e in back] == [e.rewards for e in episodes]
    assert back[0].run_id == "" and back[0].turns[0].legal_actions == []
    (tmp_path / "future.jsonl").write_text(json.dumps({"schema": "marl_llm_episodes", "schema_version": 99}) + "\n")
    with pytest.raises(ValueError, match="schema_version 99 is not supported"):
        read_jsonl(tmp_path / "future.jsonl")


def test_json_safe_converts_a_shared_dict_once_and_shares_nothing():
    import math

    import numpy as np

    from baselines.episode import json_safe

    pad = {f"k{i}": i for i in range(6)}          # more than 8 items: the size json_safe converts once
    flat = {"a": 1.5, "b": np.float32(0.25), "c": math.inf, 3: None, **pad}      # a NumPy scalar, a non-finite float
    nested = {"x": [1, (2, 3)], "y": flat, **pad, "z": None}
    infos = {"p0": {"without": flat, "n": nested}, "p1": {"without": flat, "n": nested}, "p2": flat}
    out = json_safe(infos)
    want_flat = {"a": 1.5, "b": 0.25, "c": "inf", "3": None, **pad}
    want_nested = {"x": [1, [2, 3]], "y": want_flat, **pad, "z": None}
    assert out == {"p0": {"without": want_flat, "n": want_nested}, "p1": {"without": want_flat, "n": want_nested},
                   "p2": want_flat}
    assert json.loads(json.dumps(out, allow_nan=False)) == out
    # every appearance is its own object, as a conversion of each one alone would give
    dicts = [out["p0"]["without"], out["p1"]["without"], out["p2"], out["p0"]["n"]["y"], out["p1"]["n"]["y"]]
    assert len({id(d) for d in dicts}) == len(dicts)
    assert out["p0"]["n"] is not out["p1"]["n"] and out["p0"]["n"]["x"] is not out["p1"]["n"]["x"]
    out["p0"]["without"]["a"] = 0.0
    assert out["p1"]["without"]["a"] == 1.5 and flat["a"] == 1.5


def _json_by_asdict(episode) -> str:
    """What ``Episode.to_json`` wrote before it made its records itself: ``json_safe`` of the fields, with every turn
    as ``Turn.to_dict()`` (``dataclasses.asdict``) and every branch as ``Branch.to_dict()``."""
    from dataclasses import fields

    from baselines.episode import json_safe

    d = {f.name: getattr(episode, f.name) for f in fields(episode) if f.name not in ("turns", "branches")}
    d["turns"] = [t.to_dict() for t in episode.turns]
    d["branches"] = [b.to_dict() for b in episode.branches]
    return json.dumps(json_safe(d), separators=(",", ":"), allow_nan=False)


def test_to_json_writes_what_json_safe_of_the_asdict_records_writes():
    import collections
    import dataclasses
    import math

    import numpy as np

    from baselines.episode import Turn
    from baselines.policies.base import Choice, VectorInputs
    from baselines.policies.mlp import MLPPolicy

    # MLP turns (Choice with VectorInputs) with resample and ablate branches, and recorded states
    env = make("kuhn_poker-v0", rounds=2, action_mode="discrete")
    mlp = MLPPolicy.for_env(env, seed=0)
    engine = RolloutEngine(mlp, show_progress=False, record_state="global")
    episodes = engine.run("kuhn_poker-v0", 3, 2, seed=5, env_kwargs={"rounds": 2, "action_mode": "discrete"},
                          branches=[BranchSpec("resample", "player_0", k=2), BranchSpec("ablate", "player_1")])
    assert any(e.branches for e in episodes) and any(t.choice and t.choice.inputs for e in episodes for t in e.turns)
    # an LLM choice turn, and what a user may put in a turn: a nested dataclass, a namedtuple, a set, NumPy and
    # non-finite numbers, a tuple holding a dataclass
    Point = collections.namedtuple("Point", "x y")

    @dataclasses.dataclass
    class Note:
        tag: str
        values: tuple

    episode = episodes[0]
    episode.turns.append(Turn("player_0", "player_0", "player_0", prompt_ids=[1, 2], completion_ids=[3],
                              logprobs=[-0.5], text="[bet]", action="[bet]", legal_actions=["[check]", "[bet]"],
                              extra={"note": Note("a", (1, Point(2, 3))), "s": {4}, "f": np.float32(0.5),
                                     "inf": math.inf, "pair": (Note("b", ()), 1)},
                              choice=Choice(1, -0.5, "sum", probs=[0.4, 0.6], logliks=[-2.0, -1.0],
                                            scores=[-2.0, -1.0]),
                              state=[0.0, 1.0]))
    episode.turns.append(Turn("player_1", "player_1", "player_1", action={"float": "nan"},
                              choice=Choice(0, -0.1, "mlp", inputs=VectorInputs([0.5], [1, 0], 1))))
    for e in episodes:
        assert e.to_json() == _json_by_asdict(e)


def _set(record, at, value):
    for key in at[:-1]:
        record = record[key]
    record[at[-1]] = value


@pytest.mark.parametrize("at, value, message", [
    (("rewards",), "x", r"rewards: expected an object of finite numbers, got \"x\""),
    (("rewards", "solver"), None, r"rewards: expected an object of finite numbers, got \{.*null"),
    (("team_rewards", "team"), [1], "team_rewards: expected an object of finite numbers"),
    (("seed",), "0", r"seed: expected an int, got \"0\""),
    (("group_id",), True, "group_id: expected an int, got true"),
    (("turns",), {}, r"turns: expected a list, got \{\}"),
    (("turns", 1), 3, r"turns\[1\]: expected an object, got 3"),
    (("turns", 0, "agent"), None, r"turns\[0\].agent: expected a string, got null"),
    (("turns", 1, "reward"), "1", r"turns\[1\].reward: expected a finite number"),
    (("turns", 0, "completion_ids"), [1, "2"], r"turns\[0\].completion_ids: expected a list of ints"),
    (("turns", 0, "state"), "x", r"turns\[0\].state: expected a list of numbers or null"),
    (("turns", 0, "choice"), {"index": 0}, r"turns\[0\].choice: not a choice \(KeyError"),
    (("branches", 0, "rewards"), 1, r"branches\[0\].rewards: expected an object of finite numbers"),
    (("branches", 0, "turns", 0, "turn_index"), 1.5, r"branches\[0\].turns\[0\].turn_index: expected an int"),
    (("policies", "solver"), "random", r"policies: expected an object of objects"),
])
def test_a_field_of_the_wrong_type_is_named_on_reading(tmp_path, at, value, message):
    # read_jsonl used to take any JSON value for any field: a reward that is a string reached the credit methods
    # (an AttributeError from inside, or advantages computed from it without a word)
    from baselines.credit.__main__ import main

    path, head, records = _one_episode_file(tmp_path)
    _set(records[1], at, value)
    path.write_text("\n".join([head, *map(json.dumps, records)]) + "\n")
    with pytest.raises(ValueError, match=rf"episodes.jsonl:3: corrupt episode \({message}"):
        read_jsonl(path)
    with pytest.raises(SystemExit) as stop:
        main(["--episodes", str(path), "--method", "mappo"])
    assert stop.value.code == 2


def test_a_line_nested_past_the_parsers_stack_is_a_corrupt_line(tmp_path):
    path, head, records = _one_episode_file(tmp_path)
    path.write_text("\n".join([head, json.dumps(records[0]), "[" * 100_000]) + "\n")
    with pytest.raises(ValueError, match=r"episodes.jsonl:3: not valid JSON \(nested too deeply"):
        read_jsonl(path)
