"""What a batch of episodes amounts to: the numbers the rollout CLI prints and the trainer logs.

:func:`episode_stats` is the one definition of the quantities both report (team and role rewards, the invalid-move
rate, token totals); :func:`summarize` (the CLI's summary) and the trainer's ``metrics.jsonl``
(``reward/team/*``, ``reward/role/*``, ``win_rate/*``, ``invalid_rate``, ``tokens/*``) are read from it.

A role's reward in one episode is the mean of ``Episode.rewards[agent]`` over the role's turns (an agent with more
turns counts more; a role without a turn in the episode has no entry for it), and ``role_rewards[role]`` lists it for
each episode where the role acted. A team's reward is ``Episode.team_rewards[team]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from baselines.episode import Episode

__all__ = ["EpisodeStats", "episode_stats", "row_means", "summarize"]


@dataclass
class EpisodeStats:
    """Per-episode rewards and totals of a batch of episodes (see the module docstring)."""

    team_rewards: dict[str, list[float]] = field(default_factory=dict)   # team -> its reward in each episode
    role_rewards: dict[str, list[float]] = field(default_factory=dict)   # role -> its reward in each episode it acted
    turns: int = 0
    invalid: int = 0                # turns whose move was invalid
    tokens_main: int = 0
    tokens_branches: int = 0

    @property
    def invalid_rate(self) -> float:
        return self.invalid / self.turns if self.turns else 0.0

    @staticmethod
    def means(values: dict[str, list[float]]) -> dict[str, float]:
        """``{key: mean}`` in key order."""
        return {k: float(np.mean(v)) for k, v in sorted(values.items())}


def episode_stats(episodes: Sequence[Episode]) -> EpisodeStats:
    """The rewards, invalid moves and tokens of ``episodes`` (main episodes; branches count only their tokens)."""
    stats = EpisodeStats()
    team_rewards = stats.team_rewards
    roles: list[str] = []               # each (episode, role)'s role and its rewards, in order; averaged below
    rewards: list[list[float]] = []
    invalid = turns = tokens_main = tokens_branches = 0
    for e in episodes:
        for team, r in e.team_rewards.items():
            rs = team_rewards.get(team)
            if rs is None:
                rs = team_rewards[team] = []
            rs.append(float(r))
        by_role: dict[str, list[float]] = {}
        got = e.rewards.get
        for t in e.turns:
            rs = by_role.get(t.role)
            if rs is None:
                rs = by_role[t.role] = []
            rs.append(float(got(t.agent, 0.0)))
            invalid += t.invalid
        turns += len(e.turns)
        roles.extend(by_role)
        rewards.extend(by_role.values())
        tokens_main += e.tokens_generated
        tokens_branches += e.branch_tokens_generated
    stats.invalid, stats.turns, stats.tokens_main, stats.tokens_branches = invalid, turns, tokens_main, tokens_branches
    for role, mean in zip(roles, row_means(rewards)):
        stats.role_rewards.setdefault(role, []).append(mean)
    return stats


def row_means(rows: Sequence[Sequence[float]]) -> list[float]:
    """``float(np.mean(row))`` of each row, the same floats bit for bit, with one NumPy call per row length: the rows
    of a length are stacked and averaged along axis 1 (each row of a C-contiguous array is summed as the row alone;
    ``tests/baselines/rollout/test_summary.py`` checks it on random rows). A row of one value is that value plus 0.0
    (``(0.0 + x) / 1``)."""
    out: list[float] = [0.0] * len(rows)
    by_length: dict[int, list[int]] = {}
    for r, row in enumerate(rows):
        if len(row) == 1:
            out[r] = float(row[0]) + 0.0      # NumPy's sum starts from +0.0: a -0.0 alone averages to 0.0
        else:
            by_length.setdefault(len(row), []).append(r)
    for n, which in by_length.items():
        if n == 0:      # np.mean of nothing: NaN, with NumPy's warning
            for r in which:
                out[r] = float(np.mean(rows[r]))
            continue
        means = np.asarray([rows[r] for r in which], dtype=np.float64).mean(axis=1).tolist()
        for r, m in zip(which, means):
            out[r] = m
    return out


def summarize(episodes: Sequence[Episode], wall_s: float | None = None) -> dict[str, Any]:
    """Aggregate numbers of a run: mean rewards per team and role (:func:`episode_stats`), invalid-move rate, tokens,
    rates, and per branch kind and agent the mean team outcome of the main episode minus the branch's."""
    stats = episode_stats(episodes)
    out: dict[str, Any] = {"episodes": len(episodes),
                           "mean_team_reward": stats.means(stats.team_rewards),
                           "mean_reward_per_role": stats.means(stats.role_rewards),
                           "turns": stats.turns, "invalid_rate": stats.invalid_rate,
                           "tokens_main": stats.tokens_main, "tokens_branches": stats.tokens_branches}
    if wall_s:
        out["wall_s"] = wall_s
        out["episodes_per_s"] = len(episodes) / wall_s
        out["tokens_per_s"] = (out["tokens_main"] + out["tokens_branches"]) / wall_s
    diffs: dict[str, list[float]] = {}
    for e in episodes:
        for b in e.branches:
            team = e.turns[b.turn_index].team
            key = f"{b.kind}:{b.agent}"
            diffs.setdefault(key, []).append(e.team_rewards.get(team, 0.0) - b.team_rewards.get(team, 0.0))
    out["branches"] = {k: {"n": len(v), "mean_main_minus_branch": float(np.mean(v))} for k, v in sorted(diffs.items())}
    return out
