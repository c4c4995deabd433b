"""``loo``: leave-one-out credit, the Wonderful Life Utility clamp (Wolpert & Tumer 2002, "Optimal payoff functions
for members of collectives"; the baseline C3 uses for LLM teams).

    A_a = R - R_without_a

``R`` is the agent's return (``episode.rewards[a]``) and ``R_without_a`` the team's outcome with the agent's
contribution clamped to the env's null action (``ablate``):

* where the env records it, ``final_infos[a]["team_reward_without"][a]``: voting-v0's recount with that ballot (and
  its spoiled-ballot penalty) removed, orchestrator-v0's workers in discrete mode; no generation needed (for
  voting-v0 ``branches()`` is empty);
* elsewhere: the agent's ``ablate`` branch at that turn (``Branch.team_rewards`` of its team): the episode
  continued from just before the turn with the agent playing its null action from there on. For an agent with one
  turn this is "the episode without it"; for later turns of a multi-turn agent, "without it from here on".

Credit fidelity (``python -m leaderboard fidelity``): under an additive team reward (voting-v0 ``"fraction"``) this
is the difference reward, the agent's own term, which differs from the true advantage only by the policy's baseline:
its fidelity stays near 1 at every team size, far above broadcast's; seats whose null move is any move (free riding's
idle seats) get exactly 0 (false credit 0).

``normalize=True`` subtracts the group mean of ``A`` per role (off by default, as C3).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from baselines.credit.base import CreditMethod, finite, branch_outcome, can_ablate, check_batch, describe, \
    find_branches, groups, outcome, register, roles_of
from baselines.episode import Episode
from baselines.rollout import BranchSpec
from marl_llm_envs import spec


def recorded_without(episode: Episode, agent: str) -> Any:
    """``team_reward_without[agent]`` from the final infos (voting-v0), or ``None`` when the env records none."""
    info = episode.final_infos.get(agent)
    without = info.get("team_reward_without") if isinstance(info, dict) else None
    return without.get(agent) if isinstance(without, dict) else None


@register("loo")
class LeaveOneOut(CreditMethod):
    def __init__(self, normalize: bool = False) -> None:
        if not isinstance(normalize, bool):
            raise ValueError(f"normalize must be a bool, got {normalize!r}")
        self.normalize = normalize

    def branches(self, env_id: str) -> list[BranchSpec]:
        if spec(env_id).records_without:        # the env reports every agent's team_reward_without itself
            return []
        if not can_ablate(env_id):
            raise ValueError(f"loo needs ablate branches, and {env_id} has no null action (no ablate())")
        return [BranchSpec("ablate", role) for role in roles_of(env_id)]

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        out = []
        for i, e in enumerate(episodes):
            row = []
            for k, t in enumerate(e.turns):
                recorded = recorded_without(e, t.agent)
                if recorded is not None:
                    without = finite(recorded, f"team_reward_without[{t.agent}] of {describe(e, i)}")
                else:
                    branch = find_branches(e, i, "ablate", k, self.name, f"ablate:{t.role}")[0]
                    without = branch_outcome(e, i, branch, t.team)
                row.append(outcome(e, i, t.agent) - without)
            out.append(row)
        if self.normalize:
            for members in groups(episodes).values():
                by_role: dict[str, list[tuple[int, int]]] = {}
                for i in members:
                    for k, t in enumerate(episodes[i].turns):
                        by_role.setdefault(t.role, []).append((i, k))
                for cells in by_role.values():
                    mean = float(np.mean([out[i][k] for i, k in cells]))
                    for i, k in cells:
                        out[i][k] -= mean
        return out

    def diagnostics(self, episodes: Sequence[Episode]) -> dict[str, float]:
        """Per role: the mean of ``R - R_without`` (the free-riding diagnostic: near 0 = the role adds nothing)."""
        adv = self.advantages(episodes) if not self.normalize else LeaveOneOut().advantages(episodes)
        by_role: dict[str, list[float]] = {}
        for e, row in zip(episodes, adv):
            for t, a in zip(e.turns, row):
                by_role.setdefault(t.role, []).append(a)
        return {f"mean_R_minus_R_without/{role}": float(np.mean(v)) for role, v in sorted(by_role.items())}
