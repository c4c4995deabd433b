"""``shuffled``: a negative control. Every turn gets the GRPO team advantage of a uniformly chosen episode of its
group, so the advantages keep their distribution and lose their information.

Definition. Let ``A_j(a)`` be broadcast's advantage of agent ``a`` in episode ``j`` (GRPO on the shared outcome,
:mod:`baselines.credit.broadcast`: ``(R_j - mean_g R) / (std_g R + eps)`` over the episodes of group ``g`` in which
``a`` acts). For turn ``k`` of agent ``a`` in episode ``i`` of group ``g``, with one independent draw per turn,

    A_shuffled(i, k) = A_J(a),   J ~ Uniform{ j in g : a acts in j }          (draw="any", the default)
    A_shuffled(i, k) = A_J(a),   J ~ Uniform{ j in g : j != i, a acts in j }  (draw="others")

Every value handed out is one of the group's own broadcast advantages, so the marginal distribution is the group's,
and ``J`` does not depend on what episode ``i`` did. Why the default draws from the whole group: the ``A_j`` of a
group sum to 0, so

    draw="any":     E[A_shuffled(i, k)] = mean_g A = 0                            (no credit at all)
    draw="others":  E[A_shuffled(i, k)] = (sum_{j != i} A_j(a)) / (G - 1) = -A_i(a) / (G - 1)

Issue 16 words the control as "another episode" (``draw="others"``), but that is a scaled-down *negative* of
broadcast's advantage (-1/3 of it at G = 4): in expectation it unlearns what broadcast learns, and pilot runs trained
on it fell below random play (team_umbrella -1.15, free_riding -0.44 normalized). A negative control must carry no
information, so the suite's ``shuffled`` draws from the whole group; ``draw="others"`` stays available as the
"anti-credit" variant. An agent that acts in no other episode of its group (a group of one, or an orchestrator
worker spawned in one sample only) gets 0 under either draw, never its own advantage.

Determinism. The draws of one call come from a NumPy ``default_rng`` seeded with the SHA-256 of ``(seed, calls,
group key)``: ``seed`` the method's option, ``calls`` how many (non-empty) batches it has scored before (kept in
:meth:`state_dict`, so a resumed run draws what the uninterrupted one would), the group key
:attr:`~baselines.episode.Episode.group_key`. The same batch after the same history gets the same advantages, in any
process; the order of the groups in the batch does not matter. The trainer passes its training seed as ``seed``
(unless ``--credit-options`` sets one), so the training seeds of a suite draw independently of one another: with the
option's default 0 for every run, every seed drew the same pattern (the group keys ``("step-k", g)`` repeat across
runs).

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
    def __init__(self, seed: int = 0, draw: str = "any", std: str | None = "population", eps: float = 1e-6) -> None:
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
        if not episodes:            # no batch scored: the draws of the next one stay those of a run without this call
            return []
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
                    pool = [j for j in members if (j, t.agent) in value]
                    if len(pool) < 2:                     # nobody else to borrow from: no credit (never its own)
                        out[(i, k)] = 0.0
                        continue
                    if self.draw == "others":
                        pool.remove(i)
                    out[(i, k)] = value[(pool[int(rng.integers(len(pool)))], t.agent)]
        self.calls += 1
        return fill(episodes, lambda i, k, t: out[(i, k)])

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        calls = state.get("calls") if isinstance(state, dict) else None
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0 or set(state) != {"calls"}:
            raise ValueError(f"shuffled's state is {{'calls': a non-negative int}}, got {state!r}")
        self.calls = calls
