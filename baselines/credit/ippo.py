"""``ippo``: GAE on each agent's turn sequence with a learned per-agent critic V(o_{a,t}) (IPPO: de Witt et al. 2020,
"Is Independent Learning All You Need in the StarCraft Multi-Agent Challenge?", arXiv 2011.09533; Yu et al. 2022,
arXiv 2103.01955, compare it with MAPPO; GAE: Schulman et al. 2016, arXiv 1506.02438, Eq. 16).

The same estimator as :mod:`baselines.credit.mappo`, per agent ``a`` and its turns ``j = 0..n-1``:

    delta_j = r_j + gamma * V_a(o_j+1) - V_a(o_j),   V_a(o_n) = 0
    A_j     = sum_{l >= 0} (gamma * lambda)^l * delta_{j+l},    G_j = A_j + V_a(o_j),

``gamma = 1``, ``lambda = 0.95``, the batch's advantages standardized when ``normalize`` (default). The difference is
what the critic sees: ``o_j = Turn.state`` recorded as the acting agent's own numeric observation
(``needs_state = "observation"``: only what that agent may know), and each agent has its own network (one per (env,
agent)), trained as mappo's (``epochs`` full-batch Adam steps on ``0.5 * mean (V_a(o_j) - G_j)^2``). Options, update,
logged numbers and state are mappo's.
"""

from __future__ import annotations

from baselines.credit.base import register
from baselines.credit.mappo import MAPPO
from baselines.episode import Episode

__all__ = ["IPPO"]


@register("ippo")
class IPPO(MAPPO):
    needs_state = "observation"

    def key(self, episode: Episode, turn) -> str:
        """One network per (env, agent) (the value head: mappo's, one or one per role)."""
        if self.kind == "value_head":
            return super().key(episode, turn)
        return f"{episode.env_id}/{turn.agent}"

    def features(self, episode: Episode, index: int, turn) -> list[float]:
        """The agent's own numeric observation before its turn (no seat one-hot: the network is the agent's); the
        value head reads the policy model's hidden state, as mappo's."""
        if self.kind == "value_head":
            return super().features(episode, index, turn)
        return self._state(episode, index, turn)
