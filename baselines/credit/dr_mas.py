"""``dr_mas``: Dr. MAS's agent-wise advantage normalization (Feng et al. 2026, arXiv 2602.08847, Eq. 5).

GRPO normalizes every sample with one group baseline; Dr. MAS normalizes each agent's steps with that agent's own
statistics in the group. For role ``k`` and group ``g``, ``Y_k`` = every turn of role ``k`` in the group's episodes
(a frequency-weighted set: a role that acts three times per episode contributes three values per episode), each turn
carrying its agent's return ``R``:

    A = (R - mu_k) / (sigma_k + eps),   mu_k = mean_{Y_k} R,  sigma_k = std_{Y_k} R,  eps = 1e-6.

``by="role"`` (default) or ``"agent"`` (one statistic per agent name). ``std`` as in ``broadcast``.
"""

from __future__ import annotations

from typing import Sequence

from baselines.credit.base import CreditMethod, check_batch, check_positive, check_std, fill, groups, normalize, \
    outcome, register
from baselines.episode import Episode


@register("dr_mas")
class DrMAS(CreditMethod):
    def __init__(self, by: str = "role", std: str | None = "population", eps: float = 1e-6) -> None:
        if by not in ("role", "agent"):
            raise ValueError(f"by={by!r} is not one of ['role', 'agent']")
        self.by, self.std, self.eps = by, check_std(std), check_positive("eps", eps)

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        value: dict[tuple[int, int], float] = {}
        for members in groups(episodes).values():
            steps: dict[str, list[tuple[int, int]]] = {}          # Y_k: (episode, turn) of role (or agent) k
            for i in members:
                for k, t in enumerate(episodes[i].turns):
                    steps.setdefault(t.role if self.by == "role" else t.agent, []).append((i, k))
            for cells in steps.values():
                returns = [outcome(episodes[i], i, episodes[i].turns[k].agent) for i, k in cells]
                value.update(zip(cells, normalize(returns, self.std, self.eps)))
        return fill(episodes, lambda i, k, t: value[(i, k)])
