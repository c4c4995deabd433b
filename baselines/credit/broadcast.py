"""``broadcast``: GRPO's group-relative advantage on the shared outcome, and ``none``: the raw return (a control).

broadcast (GRPO, Shao et al. 2024, arXiv 2402.03300, Sec. 4.1.2 "outcome supervision"; MAGRPO's shared team
reward, Liu et al. 2025, "LLM Collaboration With Multi-Agent Reinforcement Learning"): for agent ``a`` in episode
``i`` of group ``g`` (the G samples of one task),

    A_i = (R_i - mean_g R) / (std_g R + eps),        R_i = episode_i.rewards[a],  eps = 1e-6,

on every turn of ``a``. In a team game every member has the team reward, so this is the textbook GRPO advantage of
the team outcome, broadcast to every agent and turn ([1, 0, 0, 1] -> [+1, -1, -1, +1]); in a zero-sum game each seat
is normalized over its own returns. An agent that exists only in some episodes of a group is normalized over those.
``std``: ``"population"`` (default), ``"sample"`` (TRL, verl), ``None`` (Dr. GRPO: mean-centring only) or ``"mean"``
(MaxRL, Tajwar et al. 2026, arXiv 2602.02710: ``A_i = (R_i - mean_g R) / mean_g R``, 0 for a group whose mean is 0;
returns must be >= 0; ``[0, 1, 0, 0] -> [-1, +3, -1, -1]``: in expectation ``(1 - (1 - p)^(G-1)) grad log p``, close
to the gradient of ``log P(success)`` rather than of ``P(success)``; see :func:`baselines.credit.base.normalize`).
Pass it as ``--credit-options '{"std": "mean"}'``.

Credit fidelity (``python -m leaderboard fidelity``): every agent's turns get the team's one number, so where the
team reward is a sum of the agents' own terms (voting-v0 ``reward_scheme="fraction"``) an agent's own term is one of
``n`` and broadcast's correlation with the true advantage falls with team size, roughly as ``1 / sqrt(n)``; seats that
cannot matter (free riding's idle seats) get as much credit as the deciding seat (false credit 1).

none: ``A = R`` on every turn of the agent (REINFORCE with no baseline; the leaderboard's control).
"""

from __future__ import annotations

from typing import Sequence

from baselines.credit.base import CreditMethod, check_batch, check_positive, check_std, fill, groups, \
    normalize_many, outcome, register
from baselines.episode import Episode


@register("broadcast")
class Broadcast(CreditMethod):
    def __init__(self, std: str | None = "population", eps: float = 1e-6) -> None:
        self.std = check_std(std)
        self.eps = check_positive("eps", eps)

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)     # every acting agent's outcome is a finite number
        agents_of = [dict.fromkeys(t.agent for t in e.turns) for e in episodes]
        cells: list[tuple[list[int], str]] = []         # (the group's episodes where the agent acts, the agent)
        returns: list[list[float]] = []
        for members in groups(episodes).values():
            for agent in dict.fromkeys(a for i in members for a in agents_of[i]):
                having = [i for i in members if agent in agents_of[i]]
                cells.append((having, agent))
                returns.append([float(episodes[i].rewards[agent]) for i in having])    # outcome(), checked above
        value: dict[tuple[int, str], float] = {}
        for (having, agent), scores in zip(cells, normalize_many(returns, self.std, self.eps)):
            for i, a in zip(having, scores):
                value[(i, agent)] = a
        return [[value[(i, t.agent)] for t in e.turns] for i, e in enumerate(episodes)]


@register("none")
class NoBaseline(CreditMethod):
    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        return fill(episodes, lambda i, k, t: outcome(episodes[i], i, t.agent))
