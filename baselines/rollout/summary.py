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

__all__ = ["EpisodeStats", "episode_stats", "summarize"]


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
    for e in episodes:
        for team, r in e.team_rewards.items():
            stats.team_rewards.setdefault(team, []).append(float(r))
        by_role: dict[str, list[float]] = {}
        for t in e.turns:
            by_role.setdefault(t.role, []).append(float(e.rewards.get(t.agent, 0.0)))
            stats.invalid += t.invalid
        stats.turns += len(e.turns)
        for role, rs in by_role.items():
            stats.role_rewards.setdefault(role, []).append(float(np.mean(rs)))
        stats.tokens_main += e.tokens_generated
        stats.tokens_branches += e.branch_tokens_generated
    return stats


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
