"""Scripted policies behind the policy protocol: no model, no tokens.

:class:`ScriptedPolicy` wraps a ``fn(env, agent, rng)`` from :mod:`marl_llm_envs.scripted` (``random_legal``,
``oracle_thinker``, ``follower_solver``, or your own); it declares ``"env"`` among what it observes, so the engine gives
it ``request.env`` (the live env, read-only). No other policy is given the env.
:class:`RandomPolicy` plays a uniformly random move from ``request.legal_actions`` and needs no env (on a free-text
turn it returns ``free_text``).

Both own a ``numpy.random.Generator``: ``generate(requests, seed=s)`` reseeds it with ``s`` first, so the same seed
gives the same moves; with ``seed=None`` the policy's own stream (seeded at construction) continues.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from baselines.policies.base import Choice, Generation, Policy, Request

__all__ = ["RandomPolicy", "ScriptedPolicy"]


class ScriptedPolicy(Policy):
    """``fn(env, agent, rng) -> action`` as a :class:`Policy` (one call per request, in order). It declares that it
    reads the env (``"env"`` in :attr:`observes`), so the engine puts the live env on its requests."""

    observes = frozenset({"text", "legal_actions", "env"})

    def __init__(self, fn: Callable[[Any, str, np.random.Generator], Any], seed: int = 0,
                 name: str | None = None) -> None:
        self.fn = fn
        self.rng = np.random.default_rng(seed)
        self.name = name or f"scripted:{getattr(fn, '__name__', type(fn).__name__)}"

    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        out = []
        for r in requests:
            if r.env is None:
                raise ValueError(f"{self.name} needs request.env (the live env) for {r.env_id}/{r.agent}: build the "
                                 f"request with request_for(env, agent, policy.observes)")
            action = self.fn(r.env, r.agent, self.rng)
            out.append(Generation(action=action, text=action if isinstance(action, str) else str(action)))
        return out


class RandomPolicy(Policy):
    """A uniformly random move among ``request.legal_actions``; ``free_text`` on turns without legal actions."""

    def __init__(self, seed: int = 0, free_text: str = "\\boxed{0}", name: str = "random") -> None:
        self.rng = np.random.default_rng(seed)
        self.free_text = free_text
        self.name = name

    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        out = []
        for r in requests:
            if r.legal_actions:
                index = int(self.rng.integers(len(r.legal_actions)))
                action = r.legal_actions[index]
                probs = [1.0 / len(r.legal_actions)] * len(r.legal_actions)
                out.append(Generation(action=action, text=action,
                                      choice=Choice(index=index, logprob=-math.log(len(probs)), scoring="scripted",
                                                    probs=probs)))
            else:
                out.append(Generation(action=self.free_text, text=self.free_text))
        return out
