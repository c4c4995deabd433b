"""Hand-made episodes for the credit methods' tests: the numbers of each worked example are written out
in the tests, so every episode here is built from explicit rewards and branches."""

from __future__ import annotations

import pytest

from baselines.episode import Branch, Episode, Turn


def episode(group, rewards, turns, *, env_id="think_solve-v0", branches=(), final_infos=None, run_id="r",
            sample=0, teams=None, roles=None, tokens=None):
    """An Episode by hand: ``turns`` = [(agent, turn reward)]; roles and teams default to the agent's name and
    ``team``."""
    teams = teams or {}
    roles = roles or {}
    made = []
    for k, (agent, r) in enumerate(turns):
        n = (tokens or {}).get(k, 1)
        made.append(Turn(agent, roles.get(agent, agent), teams.get(agent, "team"), completion_ids=[7] * n,
                         reward=r, turn_index=k))
    team_rewards = {}
    for agent, r in rewards.items():
        team_rewards[teams.get(agent, "team")] = r
    return Episode(env_id, 0, {}, seed=group, task_id=None, group_id=group, sample_index=sample, turns=made,
                   rewards=dict(rewards), team_rewards=team_rewards, branches=list(branches),
                   final_infos=final_infos or {}, run_id=run_id)


def think_solve(group, r, sample=0, solo=None, branches=()):
    """A think_solve episode with team reward ``r`` (thinker turn 0, solver turn 1) and, if given, the reward of its
    ablate-thinker branch."""
    bs = list(branches)
    if solo is not None:
        bs.append(Branch("ablate", "thinker", 0, team_rewards={"team": solo}))
    return episode(group, {"thinker": r, "solver": r}, [("thinker", 0.0), ("solver", r)], branches=bs,
                   sample=sample)


def approx(x, rel=1e-5, abs=1e-6):
    return pytest.approx(x, rel=rel, abs=abs)
