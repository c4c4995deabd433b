"""episode_stats: the numbers the trainer logs and the rollout CLI prints."""

from __future__ import annotations

import numpy as np

from baselines.episode import Episode, Turn
from baselines.rollout.summary import episode_stats, row_means


def test_row_means_gives_numpys_mean_of_each_row_bit_for_bit():
    # episode_stats averages every (episode, role) through row_means (one NumPy call per row length); the logged
    # rewards must be the same floats as np.mean row by row: signed zeros, long rows (pairwise sums), NaN included
    rng = np.random.default_rng(5)
    rows = []
    for n in range(800):
        size = int(rng.integers(1, 12)) if n % 4 else int(rng.integers(8, 300))
        kind = n % 5
        if kind == 0:
            row = rng.normal(size=size) * 10.0 ** int(rng.integers(-6, 7))
        elif kind == 1:
            row = rng.integers(-2, 3, size=size) * 0.1
        elif kind == 2:
            row = rng.choice([0.0, -0.0, 1.0, -1.0, 0.5, 1 / 3, 1e-17], size=size)
        elif kind == 3:
            row = rng.random(size) * 1e9 + rng.random(size)
        else:
            row = np.full(size, float(rng.normal()))
        rows.append(row.tolist())
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
