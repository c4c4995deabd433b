"""The registry's per-game declarations hold on played episodes: each env's flags (``records_without``,
``idle_roles``, ``first_move_decides``, which credit methods and the suite read instead of env ids), its reference
policies, and the exact-scoring map a game registers (``spec(env_id).exact``)."""

from __future__ import annotations

import numpy as np
import pytest

from marl_llm_envs import list_envs, make, replay, spec
from marl_llm_envs.cfr import Tree
from marl_llm_envs.reference import reference_policies

SEEDS = range(6)


def _move(env, agent: str, rng: np.random.Generator):
    if env.unwrapped.action_mode == "discrete":
        return int(rng.choice(np.flatnonzero(np.asarray(env.action_mask(agent)) > 0)))
    legal = env.legal_actions(agent) or ["\\boxed{1}", "\\boxed{2}", "no answer"]     # free-text answers (voting)
    return legal[int(rng.integers(len(legal)))]


def _play(env_id: str, seed: int, mode: str = "discrete", **kwargs):
    """One episode of uniformly random legal moves: the env, each agent's info when it ended, and per ``step`` call
    (the transcript's actions) who moved and its legal discrete moves (None for the dead steps)."""
    env = make(env_id, action_mode=mode, **kwargs)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    final, steps = {}, []
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            final[agent] = info
            steps.append((agent, None))
            env.step(None)
            continue
        legal = np.flatnonzero(np.asarray(env.action_mask(agent)) > 0) if mode == "discrete" else None
        steps.append((agent, legal))
        env.step(_move(env, agent, rng))
    return env, final, steps


def _team_rewards_with(env, i: int, move: int) -> dict[str, float]:
    """The team rewards of ``env``'s episode replayed with step ``i``'s move replaced by ``move``."""
    t = env.transcript()
    t["actions"] = [*t["actions"][:i], move, *t["actions"][i + 1:]]
    return replay(t).unwrapped.team_rewards()


def _mode(env_id: str) -> str:
    return "discrete" if "discrete" in spec(env_id).action_modes else "text"


# ---------------------------------------------------------------------- records_without (loo needs no branches)
def _records_every_without(env_id: str, mode: str, seed: int) -> bool:
    _, final, _ = _play(env_id, seed, mode)
    return all(isinstance(info.get("team_reward_without"), dict) and agent in info["team_reward_without"]
               for agent, info in final.items())


@pytest.mark.parametrize("env_id", [i for i in list_envs() if spec(i).records_without])
def test_records_without_envs_report_what_ablating_each_agent_gives(env_id):
    for mode in spec(env_id).action_modes:
        for seed in SEEDS:
            env, final, _ = _play(env_id, seed, mode)
            for agent, info in final.items():
                team = env.unwrapped.teams[agent]
                without = info["team_reward_without"][agent]
                assert env.unwrapped.ablate(agent).team_rewards()[team] == pytest.approx(without), (mode, seed, agent)


@pytest.mark.parametrize("env_id", [i for i in list_envs() if not spec(i).records_without])
def test_envs_without_the_flag_do_not_report_every_agents_without(env_id):
    assert not all(_records_every_without(env_id, _mode(env_id), seed) for seed in SEEDS[:2])


# ---------------------------------------------------------------------- idle_roles and first_move_decides
def _changes(env, steps, which) -> tuple[bool, bool]:
    """Over the steps ``which(k, agent)`` selects: whether some other legal move changed the team rewards, and
    whether some left them unchanged."""
    base = env.unwrapped.team_rewards()
    changed = kept = False
    actions = env.transcript()["actions"]
    for k, (agent, legal) in enumerate(steps):
        if legal is None or not which(k, agent):
            continue
        for move in legal:
            if move == actions[k]:
                continue
            same = _team_rewards_with(env, k, int(move)) == base
            changed, kept = changed or not same, kept or same
    return changed, kept


@pytest.mark.parametrize("env_id", [i for i in list_envs() if spec(i).idle_roles])
def test_idle_roles_never_change_the_team_reward_and_the_other_roles_do(env_id):
    idle = spec(env_id).idle_roles
    decided = False
    for seed in SEEDS:
        env, _, steps = _play(env_id, seed, idle_seats=2)
        assert any(env.unwrapped.roles[a] in idle for a, _ in steps)
        roles = env.unwrapped.roles
        changed, _ = _changes(env, steps, lambda k, a, roles=roles: roles[a] in idle)
        assert not changed, seed
        decided = decided or _changes(env, steps, lambda k, a, roles=roles: roles[a] not in idle)[0]
    assert decided


@pytest.mark.parametrize("env_id", [i for i in list_envs() if spec(i).first_move_decides])
def test_only_the_first_move_of_first_move_decides_changes_the_team_reward(env_id):
    who = spec(env_id).first_move_decides
    decided = False
    for seed in SEEDS:
        env, _, steps = _play(env_id, seed)
        first = next(k for k, (a, _) in enumerate(steps) if a == who)
        changed, _ = _changes(env, steps, lambda k, a, first=first: k != first)
        assert not changed, seed
        decided = decided or _changes(env, steps, lambda k, a, first=first: k == first)[0]
    assert decided


def test_flags_name_roles_and_agents_the_env_has():
    for env_id in list_envs():
        s = spec(env_id)
        assert set(s.idle_roles) <= set(s.roles.values()) | {"idle"}, env_id   # free_riding: idle_seats=0 has none
        assert not s.first_move_decides or s.first_move_decides in s.agents, env_id
        assert not (s.idle_roles and s.first_move_decides), env_id


# ---------------------------------------------------------------------- references and the exact registry
def test_every_registered_reference_policy_plays_legal_moves_in_its_env():
    for env_id in list_envs():
        for name, bot in reference_policies(env_id).items():
            env = make(env_id, action_mode=_mode(env_id))
            env.reset(seed=1)
            rng = np.random.default_rng(1)
            for agent in env.agent_iter(max_iter=200):
                _, _, terminated, truncated, _ = env.last()
                env.step(None if terminated or truncated else bot(env, agent, rng))
                assert not env.unwrapped.infos.get(agent, {}).get("invalid_action"), (env_id, name)


def test_the_exact_registry_covers_the_two_poker_games_and_names_their_reference_bots():
    covered = {i: spec(i).exact for i in list_envs() if spec(i).exact is not None}
    assert sorted(covered) == ["kuhn_poker-v0", "leduc_holdem-v0"]
    for env_id, game in covered.items():
        assert game.reference in reference_policies(env_id), env_id
        assert game.kwargs == {"rounds": 1}


@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "leduc_holdem-v0"])
def test_exact_maps_every_state_the_env_reaches_onto_the_trees_info_sets_and_actions(env_id):
    game = spec(env_id).exact
    tree = Tree(game.game())
    for seed in range(20):
        env = make(env_id, action_mode="discrete", **game.kwargs)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while not env.unwrapped.done:
            agent = env.agent_selection
            key = game.infoset(env, agent)
            assert key in tree.infosets, (seed, key)
            mask = np.asarray(env.action_mask(agent), np.float64)
            probs = game.onto_tree(env, agent, mask / mask.sum())
            assert len(probs) == len(tree.iset_actions[tree.infosets[key]]) and sum(probs) == pytest.approx(1.0)
            env.step(_move(env, agent, rng))
