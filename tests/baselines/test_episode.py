"""What the rollout engine records for credit methods and trainers: branch rewards that agree with the branch env,
legal actions and policy settings, group keys unique across calls, fresh seeds per step, old files still read."""

from __future__ import annotations

import json

import pytest

from baselines.episode import SCHEMA_VERSION, read_jsonl, write_jsonl
from baselines.policies.base import Generation, Policy
from baselines.policies.scripted import RandomPolicy
from baselines.rollout import BranchSpec, RolloutEngine, training_seeds
from marl_llm_envs import make


def returns_by_replay(transcript: dict) -> dict[str, float]:
    """Every agent's return in the episode a transcript describes, by stepping a fresh env through it and summing
    the step rewards (and the rewards each ablation hands out) - independent of the engine's bookkeeping."""
    env = make(transcript["env_id"], **transcript["kwargs"])
    env.reset(seed=transcript["seed"])
    total = {a: 0.0 for a in env.possible_agents}
    ablations = sorted((int(i), a) for i, a in transcript["ablations"])

    def ablate(env, agent):
        before = dict(env.rewards)
        env = env.ablate(agent)
        for a, r in env.rewards.items():
            total[a] += r - before.get(a, 0.0)
        return env

    k = 0
    for i, action in enumerate(transcript["actions"]):
        while k < len(ablations) and ablations[k][0] == i:
            env, k = ablate(env, ablations[k][1]), k + 1
        dead = env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
        env.step(action["float"] if isinstance(action, dict) and "float" in action else action)
        if not dead:
            for a, r in env.rewards.items():
                total[a] += r
    while k < len(ablations):
        env, k = ablate(env, ablations[k][1]), k + 1
    return total


CASES = [
    ("think_solve-v0", {}, [BranchSpec("ablate", "solver"), BranchSpec("ablate", "thinker")]),
    ("think_solve-v0", {"action_mode": "discrete"}, [BranchSpec("ablate", "solver"),
                                                     BranchSpec("resample", "thinker", k=2)]),
    ("voting-v0", {"action_mode": "discrete"}, [BranchSpec("ablate", "voter")]),
    ("kuhn_poker-v0", {"rounds": 3, "action_mode": "discrete"}, [BranchSpec("ablate", "player_1"),
                                                                 BranchSpec("resample", "player_0", k=2)]),
]


@pytest.mark.parametrize("env_id,kwargs,branches", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_branch_rewards_are_the_branch_envs_own_returns(env_id, kwargs, branches):
    # Fails when Branch.rewards drops the main episode's rewards before the branch point (base_rewards: the
    # 3-round Kuhn case) or misses what ablate() hands out itself (terminal ablations: every ablate case).
    episodes = RolloutEngine(RandomPolicy(seed=1), show_progress=False).run(
        env_id, num_tasks=4, group_size=2, seed=11, env_kwargs=kwargs, branches=branches)
    n = 0
    for e in episodes:
        assert e.rewards == pytest.approx(returns_by_replay(e.transcript))
        for b in e.branches:
            n += 1
            assert b.rewards == pytest.approx(returns_by_replay(b.transcript)), (b.kind, b.agent, b.turn_index)
            env = make(env_id, **kwargs)
            for agent, r in b.rewards.items():
                # team members share the team's outcome; the branch's team reward is that outcome
                assert r == pytest.approx(b.team_rewards[env.teams[agent]])
    assert n > 0


def test_a_terminal_ablation_hands_its_rewards_to_the_branch():
    # think_solve's solver ablated: the null answer ends the episode inside ablate() and scores as wrong.
    episodes = RolloutEngine(RandomPolicy(seed=0), show_progress=False).run(
        "think_solve-v0", num_tasks=2, env_kwargs={"reward_scheme": "signed"}, branches=[BranchSpec("ablate", "solver")])
    for e in episodes:
        (b,) = e.branches
        assert b.team_rewards == {"team": -1.0}
        assert b.rewards == {"thinker": -1.0, "solver": -1.0}
        assert b.turns == []


def test_turns_record_the_legal_actions_offered_and_episodes_the_policy_settings():
    episodes = RolloutEngine(RandomPolicy(seed=0), show_progress=False).run(
        "kuhn_poker-v0", num_tasks=2, env_kwargs={"action_mode": "discrete"})
    first = episodes[0].turns[0]
    assert first.legal_actions == ["[check]", "[bet]"]
    assert episodes[0].policies == {"player_0": {"name": "random", "version": 0, "backend": "RandomPolicy"},
                                    "player_1": {"name": "random", "version": 0, "backend": "RandomPolicy"}}
    text = RolloutEngine(RandomPolicy(seed=0), show_progress=False).run("think_solve-v0", num_tasks=1)
    assert [t.legal_actions for t in text[0].turns] == [[], []]   # free-text turns


def test_policy_settings_name_the_sampling_settings():
    class Sampler(Policy):
        name = "sampler"
        mode, temperature, top_p, max_new_tokens = "generate", 0.7, 0.9, 64

        def generate(self, requests, seed=None):
            return [Generation(action="\\boxed{1}") for _ in requests]

    policy = Sampler()
    policy.version = 3
    assert policy.settings() == {"name": "sampler", "version": 3, "backend": "Sampler", "mode": "generate",
                                 "temperature": 0.7, "top_p": 0.9, "max_new_tokens": 64}
    (e,) = RolloutEngine(policy, show_progress=False).run("think_solve-v0", 1)
    assert e.policies["solver"]["temperature"] == 0.7 and e.policies["thinker"]["version"] == 3


def test_group_keys_are_unique_across_calls_and_seeds_fresh_per_step():
    engine = RolloutEngine(RandomPolicy(seed=0), show_progress=False)
    a = engine.run("think_solve-v0", num_tasks=2, group_size=2, seed=0)
    b = engine.run("think_solve-v0", num_tasks=2, group_size=2, seed=1)
    assert a[0].group_id == b[0].group_id == 0
    assert {e.group_key for e in a}.isdisjoint({e.group_key for e in b})
    again = engine.run("think_solve-v0", num_tasks=2, group_size=2, seed=0)
    assert [e.group_key for e in again] == [e.group_key for e in a]   # a run_id is a function of the call

    steps = [training_seeds(100, k, 3) for k in range(4)]
    base = 100 * 2**24
    assert steps[0] == [base, base + 1, base + 2] and steps[1] == [base + 3, base + 4, base + 5]
    flat = [s for step in steps for s in step]
    assert len(set(flat)) == len(flat)
    episodes = engine.run("think_solve-v0", 3, 2, seeds=steps[2], run_id="step-2")
    assert [e.seed for e in episodes] == [base + 6, base + 6, base + 7, base + 7, base + 8, base + 8]
    assert {e.run_id for e in episodes} == {"step-2"}
    with pytest.raises(ValueError, match="seeds has 2 entries but num_tasks is 3"):
        engine.run("think_solve-v0", 3, seeds=[1, 2])
    with pytest.raises(ValueError, match="step must be a non-negative int"):
        training_seeds(0, -1, 3)


def test_training_base_seeds_never_share_a_task_and_stay_below_the_evaluation_seeds():
    # two runs with neighbouring base seeds are independent replicates: no env seed (task) in common over a long run
    a = {s for k in range(1000) for s in training_seeds(0, k, 64)}
    b = {s for k in range(1000) for s in training_seeds(1, k, 64)}
    assert not a & b and training_seeds(0, 5, 4) == [20, 21, 22, 23]        # base seed 0: the seeds of old
    assert max(training_seeds(2**16 - 1, 2**24 // 8 - 1, 8)) < 2**40
    with pytest.raises(ValueError, match="base_seed must be below"):
        training_seeds(2**16, 0, 8)
    with pytest.raises(ValueError, match="stream"):
        training_seeds(3, 2**24 // 8, 8)


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


def test_a_branch_role_that_this_envs_kwargs_leave_without_a_seat_names_no_agent():
    # loo asks for ablate branches of every role of free_riding-v0 (decider, idle); with idle_seats=0 there is no
    # idle seat, which is nothing to branch on, not an error; a name that is no role of the env still is one
    from marl_llm_envs import make

    env = make("free_riding-v0", idle_seats=0, action_mode="discrete")
    assert BranchSpec("ablate", "idle").agents(env) == []
    assert BranchSpec("ablate", "decider").agents(env) == ["decider"]
    with pytest.raises(ValueError, match="neither an agent"):
        BranchSpec("ablate", "idler").agents(env)


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


def _one_episode_file(tmp_path):
    engine = RolloutEngine(RandomPolicy(seed=0), show_progress=False)
    path = tmp_path / "episodes.jsonl"
    write_jsonl(path, engine.run("think_solve-v0", 2, env_kwargs={"action_mode": "discrete"},
                                 branches=[BranchSpec("ablate", "thinker")]))
    head, *lines = path.read_text().splitlines()
    return path, head, [json.loads(line) for line in lines]


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


def test_the_credit_command_refuses_an_option_given_twice(tmp_path, capsys):
    # the last value won without a word
    from baselines.credit.__main__ import main

    path, _, _ = _one_episode_file(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["--episodes", str(path), "--method", "broadcast", "--option", "std=sample", "--option",
              "std=population"])
    assert stop.value.code == 2 and "argument --option: std given more than once" in capsys.readouterr().err
    assert main(["--episodes", str(path), "--method", "broadcast", "--option", "std=sample", "--json"])["episodes"] == 2
