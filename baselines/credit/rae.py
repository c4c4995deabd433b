"""``rae``: SPIRAL's role-conditioned advantage estimation (Liu et al. 2025, arXiv 2506.24119, Sec. 3.3, Alg. 1).

A baseline ``b[env_id, role]`` per game and role, starting at 0. For every episode of the batch, in the order given,
and every role that acted in it (``R`` = that role's return, the mean over its agents; every agent of a role shares
it in our envs):

    A = R - b[env_id, role]          (b read before its update)
    b[env_id, role] <- decay * b + (1 - decay) * R,     decay = 0.95,

and every turn of the role's agents gets its agent's ``R_agent - b``. ``update="batch"`` (SPIRAL's later version):
every episode of the batch uses the baseline from before the batch, then one update per (env, role) with the batch
mean of ``R``. SPIRAL's code keys the baseline by player id within one game per run; keying by (env id, role) is the
same there and keeps mixed-env batches apart.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from baselines.credit.base import CreditMethod, check_batch, check_positive, fill, outcome, register
from baselines.episode import Episode

UPDATES = ("episode", "batch")


@register("rae")
class RAE(CreditMethod):
    def __init__(self, decay: float = 0.95, update: str = "episode") -> None:
        self.decay = check_positive("decay", decay, upper=1.0)
        if update not in UPDATES:
            raise ValueError(f"update={update!r} is not one of {list(UPDATES)}")
        self.update_mode = update    # (not self.update: that is the learner hook of CreditMethod)
        self.baselines: dict[str, dict[str, float]] = {}   # env_id -> role -> b

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        before: dict[tuple[int, str], float] = {}
        batch: dict[tuple[str, str], list[float]] = {}
        for i, e in enumerate(episodes):
            table = self.baselines.setdefault(e.env_id, {})
            by_role: dict[str, list[str]] = {}
            for t in e.turns:
                by_role.setdefault(t.role, [])
                if t.agent not in by_role[t.role]:
                    by_role[t.role].append(t.agent)
            for role, agents in by_role.items():
                ret = float(np.mean([outcome(e, i, a) for a in agents]))
                b = table.get(role, 0.0)
                before.update({(i, a): b for a in agents})
                if self.update_mode == "episode":
                    table[role] = self.decay * b + (1.0 - self.decay) * ret
                else:
                    batch.setdefault((e.env_id, role), []).append(ret)
        for (env_id, role), rets in batch.items():
            b = self.baselines[env_id].get(role, 0.0)
            self.baselines[env_id][role] = self.decay * b + (1.0 - self.decay) * float(np.mean(rets))
        return fill(episodes, lambda i, k, t: outcome(episodes[i], i, t.agent) - before[(i, t.agent)])

    def state_dict(self) -> dict[str, Any]:
        return {"baselines": {env: dict(roles) for env, roles in self.baselines.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        table = state.get("baselines") if isinstance(state, dict) else None
        if not isinstance(table, dict) or set(state) != {"baselines"}:
            raise ValueError("rae state is {'baselines': {env_id: {role: float}}}")
        self.baselines = {str(env): {str(r): float(b) for r, b in roles.items()} for env, roles in table.items()}
