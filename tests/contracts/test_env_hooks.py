"""The seam between the base env and the games: core.py's hook list is the whole of it.

Every env module reaches the base only through the hooks and helpers that core.py's module docstring lists ("Writing
a game"); the helpers that orchestrator-v0 needs for agents that join and leave mid-episode do what the list says.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from marl_llm_envs import core, make
from marl_llm_envs.core import TextEnv, TwoPlayerZeroSumEnv
from marl_llm_envs.reference.orchestrator import delegator
from marl_llm_envs.scripted import random_legal
from tests.envs.helpers import play_out

ENV_MODULES = sorted((Path(core.__file__).parent / "envs").rglob("*.py"))     # a game package's modules too


def _documented() -> tuple[set[str], set[str], set[str]]:
    """The underscore names of core's hook list: (class attributes, hooks a game writes, helpers a game calls)."""
    section = core.__doc__.split("Writing a game (the hook list).", 1)[1]
    intro, rest = section.split("**Hooks a game writes**", 1)
    hooks, helpers = rest.split("**Helpers a game calls**", 1)

    def names(text):
        return set(re.findall(r"``(_[a-z]\w*)", text))
    return names(intro), names(hooks), names(helpers)


def _base_members() -> set[str]:
    """Every underscore (not dunder) member that core.py's TextEnv and TwoPlayerZeroSumEnv define or assign."""
    tree = ast.parse(Path(core.__file__).read_text())
    out = set()
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name in ("TextEnv", "TwoPlayerZeroSumEnv")):
            continue
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef):
                out.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self":
                out.add(node.attr)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        out.add(target.id)
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


def hook_violations(source: str, filename: str = "<env>") -> list[str]:
    """Where ``source`` (an env module) overrides, assigns or touches a member of the base outside the hook list."""
    attributes, hooks, helpers = _documented()
    base = _base_members()
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in base and item.name not in hooks:
                    found.append(f"{where}: overrides {item.name}, which is not a hook")
                targets = item.targets if isinstance(item, ast.Assign) else \
                    [item.target] if isinstance(item, ast.AnnAssign) else []
                for target in targets:
                    if isinstance(target, ast.Name) and target.id in base and target.id not in attributes:
                        found.append(f"{where}: sets the base's {target.id} in a class body")
        elif isinstance(node, ast.Attribute) and node.attr in base:
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                found.append(f"{where}: assigns the base's {node.attr}")
            elif node.attr not in hooks | helpers:
                found.append(f"{where}: uses the base's {node.attr}, which is not in the hook list")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and isinstance(node.value, ast.Attribute) and node.value.attr in base:
            found.append(f"{where}: writes into the base's {node.value.attr}")
    return found


def test_env_modules_reach_the_base_only_through_the_documented_hooks():
    found = [v for path in ENV_MODULES for v in hook_violations(path.read_text(), path.name)]
    assert found == []


def test_the_hook_check_catches_an_override_a_private_read_and_private_writes():
    broken = """
class raw_env(TextEnv):
    _team_return = {}
    def _give(self, rewards):
        pass
    def _start(self):
        self._team_return["team"] = 0.0
        self._action_index["player_0"] = {}
        self._error = {}
        return self._seed
"""
    found = hook_violations(broken)
    assert len(found) == 7, found
    for what in ("sets the base's _team_return", "overrides _give", "uses the base's _team_return",
                 "writes into the base's _action_index", "assigns the base's _error", "uses the base's _seed"):
        assert any(what in f for f in found), (what, found)
    fine = "class raw_env(TextEnv):\n    _mutable = ('_board',)\n    def _start(self):\n        self._give({})\n"
    assert hook_violations(fine) == []


def test_every_name_in_the_hook_list_is_a_member_of_the_base():
    attributes, hooks, helpers = _documented()
    assert {"_start", "_apply", "_null_move", "_null_turn", "_on_ablate"} <= hooks
    assert {"_give", "_finish", "_add_agent", "_remove_agent", "_reopen", "_set_team_return"} <= helpers
    env = make("kuhn_poker-v0")
    env.reset(seed=0)
    for name in attributes | hooks | helpers:
        assert hasattr(env, name) or hasattr(TwoPlayerZeroSumEnv, name), name
    assert hasattr(TextEnv, "ablated") and hasattr(TextEnv, "episode_seed")


# ---------------------------------------------------------------------- the helpers, as orchestrator-v0 uses them
def test_add_agent_brings_a_spawned_worker_in_live_with_zero_rewards_and_seeded_spaces():
    envs = []
    for _ in range(2):
        env = make("orchestrator-v0", action_mode="discrete")
        env.reset(seed=5)
        assert env.agents == ["orchestrator"] and set(env.rewards) == set(env.infos) == {"orchestrator"}
        env.step(1 + 2)          # part a -> worker_2
        envs.append(env)
    env = envs[0]
    assert env.agents == ["orchestrator", "worker_2"]
    assert env.rewards["worker_2"] == 0.0 and not env.terminations["worker_2"] and not env.truncations["worker_2"]
    assert env.infos["worker_2"] == {"team": "team", "role": "worker", "team_reward": 0.0, "invalid_action": None,
                                     "invalid_count": 0}
    draws = [[int(e.action_space("worker_2").sample()) for _ in range(8)] for e in envs]
    assert draws[0] == draws[1]
    with pytest.raises(ValueError, match="cannot join"):
        env._add_agent("worker_2")
    with pytest.raises(ValueError, match="cannot join"):
        env._add_agent("nobody")


def test_give_shares_the_team_return_among_the_members_in_the_episode():
    for seed in range(10):
        env = play_out(make("orchestrator-v0", action_mode="discrete", spawn_cost=0.25), delegator, seed)
        reward = env.infos["orchestrator"]["team_reward"]
        assert env.team_rewards()["team"] == reward
        assert all(env.rewards[a] == reward and env.infos[a]["team_reward"] == reward for a in env.agents)
        assert len(env.agents) > 1


def test_remove_agent_takes_the_workers_out_of_every_table_in_the_solo_ablation():
    env = play_out(make("orchestrator-v0", action_mode="discrete"), delegator, 3)
    spawned = env.infos["orchestrator"]["spawned"]
    assert spawned
    solo = env.ablate("orchestrator")
    for table in (solo.rewards, solo.terminations, solo.truncations, solo.infos):
        assert set(table) == {"orchestrator"}
    assert solo.agents == ["orchestrator"] and solo.team_rewards() == {"team": 0.0}
    assert set(env.rewards) == {"orchestrator", *spawned}     # the original keeps its workers


def test_reopen_takes_a_finished_episode_back_before_any_reward_keeping_invalid_counts():
    env = make("orchestrator-v0", action_mode="discrete", invalid_move="retry")
    env.reset(seed=2)
    env.step(1)                                  # part a -> worker_0
    while env.agent_selection == "orchestrator":
        env.step(0)                              # the other parts: self
    env.step(99)                                 # worker_0: an invalid move (retried)
    rng = np.random.default_rng(0)
    while not env.done:
        env.step(delegator(env, env.agent_selection, rng))
    assert env.infos["worker_0"]["invalid_count"] == 1 and env.team_rewards()["team"] != 0.0
    branch = env.ablate("worker_0")
    assert not branch.done and branch.agents == ["orchestrator", "worker_0"]
    assert branch.team_rewards() == {"team": 0.0}
    for agent in branch.agents:
        assert branch.rewards[agent] == 0.0 and not branch.terminations[agent]
        assert branch.infos[agent]["team_reward"] == 0.0 and "answer" not in branch.infos[agent]
    assert branch.infos["worker_0"]["invalid_count"] == 1


def test_set_team_return_rescores_a_finished_voting_episode_in_the_returns_and_the_infos():
    changed = 0
    for seed in range(20):
        env = play_out(make("voting-v0", action_mode="discrete", n_voters=3), random_legal, seed)
        for voter in env.possible_agents:
            branch = env.ablate(voter)
            without = env.infos[voter]["team_reward_without"][voter]
            assert branch.team_rewards()["team"] == without
            assert all(branch.infos[a]["team_reward"] == without for a in branch.agents)
            changed += without != env.team_rewards()["team"]
    assert changed > 0


def test_null_turn_lets_an_ablated_orchestrator_skip_its_plan_but_give_its_own_final_answer():
    env = make("orchestrator-v0", action_mode="discrete")
    env.reset(seed=4)
    solo = env.ablate("orchestrator")
    # the plan was played with the null move (every part: self), so the orchestrator now chooses results itself
    assert solo.phase == "final" and solo.agent_selection == "orchestrator" and solo.agents == ["orchestrator"]
    label = solo.action_names("orchestrator").index("B")
    while not solo.done:
        solo.step(label)
    assert set(solo.infos["orchestrator"]["parts_correct"]) and solo.infos["orchestrator"]["spawned"] == []


def test_episode_seed_and_ablated_are_read_only_views_of_the_episode():
    env = make("orchestrator-v0", action_mode="discrete")
    assert env.episode_seed is None and env.ablated == frozenset()
    env.reset(seed=7)
    assert env.episode_seed == 7
    branch = env.ablate("worker_1").ablate("orchestrator")
    assert branch.ablated == frozenset({"worker_1", "orchestrator"}) and env.ablated == frozenset()
    assert branch.episode_seed == 7 and branch.solo and not env.solo
    with pytest.raises(AttributeError):
        env.episode_seed = 3


# ---------------------------------------------------------------------- the rest of the package
def private_reach(source: str, filename: str = "<module>") -> list[str]:
    """Where ``source`` reads an underscore member of an object other than ``self``/``cls``/``super()``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


PACKAGE = Path(core.__file__).parent
# every module of the package but the base and the games (those meet through the hook list, checked above)
ENV_USERS = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE / "envs" and p.name != "core.py")


def test_policies_tasks_and_tools_reach_other_objects_through_public_members_only():
    """The reference and scripted policies, the task sources, the demo, the wrappers and the registry call each other
    and the envs through public members only (a reference bot reads what its seat may know through the game's
    public accessors)."""
    assert {"scripted.py", "orchestrator.py", "composite.py", "registry.py"} <= {p.name for p in ENV_USERS}
    assert [v for path in ENV_USERS for v in private_reach(path.read_text(), path.name)] == []


def test_the_private_reach_check_catches_a_bot_that_reads_game_state():
    bot = "def bot(env, agent, rng):\n    base = env.unwrapped\n    return base._slot_notes[base._slot_of[agent]]\n"
    assert len(private_reach(bot)) == 2
    assert private_reach("def bot(env, agent, rng):\n    return env.unwrapped.notes(agent)\n") == []
