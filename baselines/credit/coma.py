"""``coma``: a Monte Carlo form of COMA's counterfactual baseline (Foerster et al. 2018, arXiv 1705.08926, Eq. 4).

COMA's advantage for agent ``a`` is ``Q(s, u) - sum_{u'} pi_a(u' | tau_a) Q(s, (u_{-a}, u'))``: the joint action's
value minus its expectation over the agent's own alternatives with the other agents' actions held fixed. With no
learned critic, we estimate both terms by play: for a turn of agent ``a`` with K ``resample`` branches (the action at
that turn sampled anew from the same policy, the others' recorded actions replayed where their observations did not
change: see :mod:`baselines.rollout`),

    A = R - (1/K) sum_k R_branch_k,     R = episode.rewards[a],  R_branch_k = Branch.team_rewards[team of a].

``branches()`` asks for ``resample:<role>:K`` (K = 4) for every role, or for the roles in ``roles``. Turns of those
roles must have their branches (a missing one is an error that names the episode); turns of other roles fall back to
``broadcast``'s group-normalized return (``std`` as there).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from baselines.credit.base import CreditMethod, branch_outcome, check_batch, check_std, fill, find_branches, \
    outcome, register, roles_of
from baselines.credit.broadcast import Broadcast
from baselines.episode import Episode
from baselines.rollout import BranchSpec


@register("coma")
class COMA(CreditMethod):
    def __init__(self, k: int = 4, roles: Sequence[str] | None = None, std: str | None = "population") -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        if roles is not None and (isinstance(roles, str) or not all(isinstance(r, str) for r in roles)):
            raise ValueError(f"roles must be a list of role names, got {roles!r}")
        self.k, self.roles, self.std = k, (list(roles) if roles is not None else None), check_std(std)

    def branches(self, env_id: str) -> list[BranchSpec]:
        return [BranchSpec("resample", role, k=self.k) for role in (self.roles or roles_of(env_id))]

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        fallback = Broadcast(std=self.std).advantages(episodes)
        hint = ",".join(f"resample:{r}:{self.k}" for r in (self.roles or ["<role>"]))

        def value(i: int, k: int, turn) -> float:
            e = episodes[i]
            if self.roles is not None and turn.role not in self.roles:
                return fallback[i][k]
            found = find_branches(e, i, "resample", k, self.name, hint)
            return outcome(e, i, turn.agent) - float(np.mean([branch_outcome(e, i, b, turn.team) for b in found]))

        return fill(episodes, value)
