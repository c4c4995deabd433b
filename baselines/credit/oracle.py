"""``oracle``: a positive control for credit fidelity. Every turn gets an estimate of its true advantage,

    A*(h, a) = Q(h, a) - sum_b pi(b | h) Q(h, b),

the counterfactual advantage that COMA (Foerster et al. 2018, arXiv 1705.08926, Eq. 4) and difference rewards
(Wolpert & Tumer 2002) approximate, computed as :mod:`baselines.fidelity` defines it: ``Q(h, b)`` the acting agent's
mean return over ``k`` continuations from a clone of the env's full state at the turn with move ``b`` forced and
every later decision a new draw of its policy (the rollout engine's ``force`` branches), exact where the rest of
the episode is one decision or none.

Expectation (measured by ``python -m leaderboard fidelity``): the oracle's fidelity is 1 up to the noise of two
independent estimates of ``A*`` (its own branches sample on other keys than the ground truth's,
``BranchSpec.stream``), i.e. about the ground truth's reliability. It is a control, not a practical method: it costs
``k`` continuations per legal move per decision.

``pi(b | h)`` of an MLP's turn is read from its policy, which the trainer hands over with :meth:`attach` (a choice-mode
LLM or a bot records its distribution on the turn). Turns whose distribution cannot be read (a scripted partner)
and turns of roles that are not trained get 0.
"""

from __future__ import annotations

from typing import Sequence

from baselines.credit.base import CreditMethod, check_batch, register, roles_of
from baselines.episode import Episode
from baselines.fidelity import ground_truth, readable_roles
from baselines.rollout import BranchSpec


@register("oracle")
class Oracle(CreditMethod):
    def __init__(self, k: int = 8) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise ValueError(f"k must be an int >= 2 (continuations per forced move), got {k!r}")
        self.k = k
        self.policies: dict = {}
        self.trained: list[str] | None = None

    def branches(self, env_id: str) -> list[BranchSpec]:
        return [BranchSpec("force", role, k=self.k, replay_others=False) for role in roles_of(env_id)]

    def attach(self, team) -> None:
        self.policies = dict(team.policies)
        self.trained = list(team.trainable)

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        roles = readable_roles(episodes, self.policies, self.trained)
        truth = ground_truth(episodes, self.policies, roles, self.k)
        return [[0.0 if t is None else t.advantage for t in row] for row in truth.turns]
