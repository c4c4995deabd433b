"""episode_stats: the numbers the trainer logs and the rollout CLI prints."""

from __future__ import annotations

import numpy as np

from baselines.episode import Episode, Turn
from baselines.rollout.summary import episode_stats, row_means
from tests.float_rows import hard_float_rows


def test_row_means_gives_numpys_mean_of_each_row_bit_for_bit():
    # episode_stats averages every (episode, role) through row_means (one NumPy call per row length); the logged
    # rewards must be the same floats as np.mean row by row: signed zeros, long rows (pairwise sums), NaN included
    rows = hard_float_rows(5, 800, min_size=1)
    rows += [[float("nan")], [float("nan"), 1.0], [-0.0], [-0.0, -0.0]]
    got = np.asarray(row_means(rows)).tobytes()
    assert got == np.asarray([np.mean(r) for r in rows]).tobytes()
    assert row_means([]) == []


def _episode(rewards, agents, roles, group=0):
    turns = [Turn(agent=a, role=roles[a], team="team", invalid=(k == 1)) for k, a in enumerate(agents)]
    return Episode(env_id="x-v0", env_version=0, env_kwargs={}, seed=0, task_id=None, group_id=group, turns=turns,
                   rewards=rewards, team_rewards={"team": sum(rewards.values())}, tokens_generated=len(turns))


def test_episode_stats_averages_each_role_over_its_turns_per_episode():
    roles = {"a0": "voter", "a1": "voter", "b": "chair"}
    episodes = [_episode({"a0": 1.0, "a1": 0.0, "b": 0.5}, ["a0", "a1", "a0", "b"], roles),   # a0 has two turns
                _episode({"a0": -1.0, "a1": 0.1, "b": 0.0}, ["a1", "b"], roles, group=1)]
    stats = episode_stats(episodes)
    assert stats.role_rewards == {"voter": [float(np.mean([1.0, 0.0, 1.0])), 0.1], "chair": [0.5, 0.0]}
    assert stats.team_rewards == {"team": [1.5, -0.9]}
    assert (stats.turns, stats.invalid, stats.tokens_main) == (6, 2, 6)
