"""``shuffled``: a negative control. Every turn gets the GRPO team advantage of another, uniformly chosen episode of
its group, so the advantages keep their distribution and lose their information.

Definition. Let ``A_j(a)`` be broadcast's advantage of agent ``a`` in episode ``j`` (GRPO on the shared outcome,
:mod:`baselines.credit.broadcast`: ``(R_j - mean_g R) / (std_g R + eps)`` over the episodes of group ``g`` in which
``a`` acts). For turn ``k`` of agent ``a`` in episode ``i`` of group ``g``,

    A_shuffled(i, k) = A_J(a),   J ~ Uniform{ j in g : j != i, a acts in j },

one independent draw per turn (issue 16's definition, ``draw="others"``, the default). Every value handed out is one
of the group's own broadcast advantages, so the marginal distribution is the group's, and ``J`` does not depend on
what episode ``i`` did. But it is not quite information-free: the ``A_j`` of a group sum to 0, so

    E[A_shuffled(i, k)] = (sum_{j != i} A_j(a)) / (G - 1) = -A_i(a) / (G - 1),

a scaled-down *negative* of broadcast's advantage (-1/3 of it at G = 4): in expectation the control unlearns what
broadcast learns, and a policy trained on it drifts below random play. ``draw="any"`` draws ``J`` uniformly from the
whole group, ``i`` included: ``E = mean_g A = 0``, no credit at all (the drift of a zero-mean random gradient only).
An agent that acts in no other episode of its group (a group of one) gets 0.

Determinism. The draws of one call come from a NumPy ``default_rng`` seeded with the SHA-256 of ``(seed, calls,
group key)``: ``seed`` the method's option, ``calls`` how many batches it has scored before (kept in
:meth:`state_dict`, so a resumed run draws what the uninterrupted one would), the group key
:attr:`~baselines.episode.Episode.group_key`. The same batch after the same history gets the same advantages, in any
process; the order of the groups in the batch does not matter.

``std`` and ``eps`` are broadcast's; ``seed`` shifts every draw.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

import numpy as np

from baselines.credit.base import CreditMethod, check_batch, fill, groups, register
from baselines.credit.broadcast import Broadcast
from baselines.episode import Episode


@register("shuffled")
class Shuffled(CreditMethod):
    def __init__(self, seed: int = 0, draw: str = "others", std: str | None = "population", eps: float = 1e-6) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if draw not in ("others", "any"):
            raise ValueError(f"draw={draw!r} is not one of ['others', 'any']")
        self.seed, self.draw = seed, draw
        self.broadcast = Broadcast(std=std, eps=eps)
        self.calls = 0

    def _rng(self, key: tuple[str, int]) -> np.random.Generator:
        text = json.dumps([self.seed, self.calls, list(key)], separators=(",", ":"))
        return np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        own = self.broadcast.advantages(episodes)
        value: dict[tuple[int, str], float] = {}          # broadcast's A_j(a): one value per (episode, agent)
        for i, e in enumerate(episodes):
            for t, a in zip(e.turns, own[i]):
                value[(i, t.agent)] = a
        out: dict[tuple[int, int], float] = {}
        for key, members in groups(episodes).items():
            rng = self._rng(key)
            for i in members:
                for k, t in enumerate(episodes[i].turns):
                    others = [j for j in members if (j != i or self.draw == "any") and (j, t.agent) in value]
                    out[(i, k)] = value[(others[int(rng.integers(len(others)))], t.agent)] if others else 0.0
        self.calls += 1
        return fill(episodes, lambda i, k, t: out[(i, k)])

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        calls = state.get("calls") if isinstance(state, dict) else None
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0 or set(state) != {"calls"}:
            raise ValueError(f"shuffled's state is {{'calls': a non-negative int}}, got {state!r}")
        self.calls = calls
