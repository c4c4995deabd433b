"""A probe, not a credit method: one method's advantages for a run's first ``steps`` updates, another's after.

The campaign's causal probe (RESULTS.md, "The first update: a causal probe") asks whether the thinker's first
update decides where a centred method ends: on the seeds where ccpo_v2's first update cut the thinker's entropy
(and it ended low), does ccpo_v2 end higher when its first update is broadcast-maxrl's, and does broadcast-maxrl end
lower when its first is ccpo_v2's? The trainer takes it as ``--credit benchmarks.credit_switch:FirstThen
--credit-options '{"first": "broadcast", "first_options": {"std": "mean"}, "then": "ccpo_v2", "steps": 1}'``
(``benchmarks/llm_team.py`` names these runs ``first-bmaxrl-then-ccpo_v2`` and ``first-ccpo_v2-then-bmaxrl``).

Everything else about the run is the ``then`` method's: the rollout plays the branches both methods need (``then``'s
first, so a run whose ``first`` needs none rolls out as ``then``'s own run does), and every metrics row carries
``then``'s diagnostics and ``credit/first_then/first`` (1 for an update of ``first``'s, else 0). With the same seed,
the first update is therefore the ``first`` method's own run's first update, bit for bit: the sampled episodes do not
depend on the branches played (each policy call draws from its own seeded generator; the campaign's four methods
share their step-0 batch). The count of updates made is checkpointed (:meth:`state_dict`), so ``--resume``
continues on the right side of the switch. Methods that learn a critic (``parameters()``, ``needs_state``) are
refused: their own optimiser and inputs would not follow the switch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baselines.credit import CreditMethod, make_credit
from baselines.episode import Episode
from baselines.rollout import BranchSpec

__all__ = ["FirstThen"]


class FirstThen(CreditMethod):
    """``first``'s advantages for the first ``steps`` batches, ``then``'s for every batch after."""

    name = "first-then"

    def __init__(self, first: str = "broadcast", then: str = "ccpo_v2", steps: int = 1,
                 first_options: dict | None = None, then_options: dict | None = None):
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ValueError(f"FirstThen: steps is the number of batches given to 'first', an int >= 0; got {steps!r}")
        for label, options in (("first_options", first_options), ("then_options", then_options)):
            if options is not None and not isinstance(options, dict):
                raise ValueError(f"FirstThen: {label} is a JSON object of that method's options; got {options!r}")
        self.first = make_credit(first, **(first_options or {}))
        self.then = make_credit(then, **(then_options or {}))
        for label, method in (("first", self.first), ("then", self.then)):
            if method.parameters() or method.needs_state:
                raise ValueError(f"FirstThen: {label} = {method.name!r} learns a critic, which a switch would strand; "
                                 "only Monte Carlo methods can be switched")
        if self.first.per_token != self.then.per_token:
            raise ValueError(f"FirstThen: {self.first.name!r} and {self.then.name!r} return advantages of different "
                             "shapes (per turn / per token)")
        self.per_token = self.then.per_token
        self.steps = steps
        self.calls = 0                      # batches seen: the first `steps` go to `first`

    def branches(self, env_id: str) -> list[BranchSpec]:
        mine = list(self.then.branches(env_id))
        return mine + [b for b in self.first.branches(env_id) if b not in mine]

    def advantages(self, episodes: Sequence[Episode]):
        method = self.first if self.calls < self.steps else self.then
        out = method.advantages(episodes)
        self.calls += 1
        return out

    def diagnostics(self, episodes: Sequence[Episode]) -> dict[str, float]:
        return {**self.then.diagnostics(episodes), "first_then/first": float(self.calls <= self.steps)}

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "first": self.first.state_dict(), "then": self.then.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or set(state) != {"calls", "first", "then"} or \
                isinstance(state["calls"], bool) or not isinstance(state["calls"], int) or state["calls"] < 0:
            raise ValueError("FirstThen state is {'calls': int >= 0, 'first': {...}, 'then': {...}}")
        self.first.load_state_dict(state["first"])
        self.then.load_state_dict(state["then"])
        self.calls = state["calls"]
