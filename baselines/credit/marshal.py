"""``marshal``: MARSHAL's turn-level advantage with a per-role baseline (Yuan et al. 2025, arXiv 2510.15414).

``variant="paper"`` (default). For each seat (agent) of each episode, with ``r_j`` its own turn rewards
(``Turn.reward``: what the env gave it from that turn up to its next turn) in turn order, the return-to-go of its
k-th turn is

    G_k = sum_{j >= k} gamma^(j - k) r_j,          gamma = 1 by default,

and the advantage is ``A_k = G_k - mean(G)`` where the mean runs over **every turn of the same role in the batch**
(of the same env id): a frequency-weighted per-role baseline, with no division by a standard deviation.

``variant="roll"`` reproduces what MARSHAL's released code (on the ROLL framework, its self-play configs) computes,
which differs from the paper; it is **per token** (``per_token = True`` for this variant: each turn gets one value per
completion token, one for a turn without tokens):

1. per (env id, role) over the batch, centre the turn rewards: ``r~ = r - mean(r over that role's turns)``;
2. lay each turn out as its completion tokens with ``r~`` on the last token and 0 elsewhere, then whiten those
   token rewards over every token of the batch: ``(x - m) / sqrt(v + 1e-8)`` (token mean, unbiased variance);
3. per seat, the reverse cumulative sum over its tokens with ``gamma`` per token (ROLL's ``reinforce`` estimator);
4. per role over the batch, subtract the mean of the **distinct** advantage values (ROLL's unique-value mean;
   all zeros when the role has a single distinct value);
5. whiten every token advantage of the batch, all roles together (token mean, unbiased variance, 1e-8 inside the
   square root).

Deviation kept out: ROLL's step 4 also sees the padding and prompt positions of its token tensor; here it sees the
completion tokens only.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from baselines.credit.base import (CreditMethod, TokenAdvantages, TurnAdvantages, check_batch, check_positive,
                                   register)
from baselines.episode import Episode

VARIANTS = ("paper", "roll")


@register("marshal")
class Marshal(CreditMethod):
    def __init__(self, gamma: float = 1.0, variant: str = "paper") -> None:
        self.gamma = check_positive("gamma", gamma)
        if self.gamma > 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {gamma!r}")
        if variant not in VARIANTS:
            raise ValueError(f"variant={variant!r} is not one of {list(VARIANTS)}")
        self.variant = variant
        self.per_token = variant == "roll"

    def advantages(self, episodes: Sequence[Episode]) -> TurnAdvantages | TokenAdvantages:
        episodes = check_batch(episodes, self.name)
        if self.variant == "roll":
            return self._roll(episodes)
        ret = [[0.0] * len(e.turns) for e in episodes]
        pooled: dict[tuple[str, str], list[float]] = {}
        for i, e in enumerate(episodes):
            for agent in dict.fromkeys(t.agent for t in e.turns):
                g = 0.0
                for k in reversed([k for k, t in enumerate(e.turns) if t.agent == agent]):
                    g = float(e.turns[k].reward) + self.gamma * g
                    ret[i][k] = g
            for k, t in enumerate(e.turns):
                pooled.setdefault((e.env_id, t.role), []).append(ret[i][k])
        base = {key: float(np.mean(v)) for key, v in pooled.items()}
        return [[ret[i][k] - base[(e.env_id, t.role)] for k, t in enumerate(e.turns)] for i, e in enumerate(episodes)]

    def _roll(self, episodes: list[Episode]) -> TokenAdvantages:
        # 1. per-(env, role) centring of the turn rewards
        pooled: dict[tuple[str, str], list[float]] = {}
        for e in episodes:
            for t in e.turns:
                pooled.setdefault((e.env_id, t.role), []).append(float(t.reward))
        mean = {key: float(np.mean(v)) for key, v in pooled.items()}
        # 2. token layout and reward whitening over every token of the batch
        tokens = [[np.zeros(max(1, len(t.completion_ids))) for t in e.turns] for e in episodes]
        for i, e in enumerate(episodes):
            for k, t in enumerate(e.turns):
                tokens[i][k][-1] = float(t.reward) - mean[(e.env_id, t.role)]
        flat = np.concatenate([x for row in tokens for x in row])
        m, v = flat.mean(), (flat.var(ddof=1) if flat.size > 1 else 0.0)
        tokens = [[(x - m) / np.sqrt(v + 1e-8) for x in row] for row in tokens]
        # 3. per-seat reverse cumulative sum over tokens
        for i, e in enumerate(episodes):
            for agent in dict.fromkeys(t.agent for t in e.turns):
                g = 0.0
                for k in reversed([k for k, t in enumerate(e.turns) if t.agent == agent]):
                    x = tokens[i][k]
                    for n in range(x.size - 1, -1, -1):
                        g = x[n] + self.gamma * g
                        x[n] = g
        # 4. per role, minus the mean of the distinct values
        by_role: dict[tuple[str, str], list[np.ndarray]] = {}
        for i, e in enumerate(episodes):
            for k, t in enumerate(e.turns):
                by_role.setdefault((e.env_id, t.role), []).append(tokens[i][k])
        distinct = {key: np.unique(np.concatenate(xs)) for key, xs in by_role.items()}
        flat_role = {key: u.size < 2 or not u.std() > 0 for key, u in distinct.items()}  # ROLL: all zeros then
        tokens = [[x * 0.0 if flat_role[(e.env_id, t.role)] else x - float(distinct[(e.env_id, t.role)].mean())
                   for x, t in zip(row, e.turns)] for row, e in zip(tokens, episodes)]
        # 5. whiten every token advantage of the batch
        flat = np.concatenate([x for row in tokens for x in row])
        m, v = flat.mean(), (flat.var(ddof=1) if flat.size > 1 else 0.0)
        return [[((x - m) / np.sqrt(v + 1e-8)).tolist() for x in row] for row in tokens]
