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

from baselines.policies.base import Choice, Generation, Policy, Request, env_action

__all__ = ["MixedPolicy", "RandomPolicy", "ScriptedPolicy"]


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


class MixedPolicy(Policy):
    """A scripted bot mixed with uniformly random moves, drawing from (and reporting) a known distribution: the
    bot's move distribution at the state, estimated from ``calls`` calls of ``fn`` with generators seeded 0 ..
    calls-1 (one move with probability 1 for a deterministic bot), times ``1 - epsilon``, plus ``epsilon`` spread
    evenly over the legal moves. What it draws from is exactly what it reports in ``Choice.probs`` (so the true
    advantage of its moves can be computed: :mod:`baselines.fidelity`), and the draw of each request is seeded by
    the call seed and ``Request.key``. Discrete or choice mode only (a turn with legal moves)."""

    observes = frozenset({"text", "legal_actions", "env"})

    def __init__(self, fn: Callable[[Any, str, np.random.Generator], Any], epsilon: float, calls: int = 16,
                 name: str | None = None) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            raise ValueError(f"calls must be a positive int, got {calls!r}")
        self.fn, self.epsilon, self.calls = fn, float(epsilon), calls
        self.name = name or f"mixed:{getattr(fn, '__name__', type(fn).__name__)}+{epsilon}"

    def probs(self, env, agent: str, legal: Sequence[str]) -> np.ndarray:
        """The distribution over ``legal`` (in order) this policy draws from at ``agent``'s decision in ``env``."""
        n = len(legal)
        ids = [int(i) for i in np.flatnonzero(env.action_mask(agent))] if env.action_mode == "discrete" else None
        counts = np.zeros(n)
        for c in range(self.calls):
            move = self.fn(env, agent, np.random.default_rng(c))
            if ids is not None:
                move = env_action(env, agent, move, legal)
                j = ids.index(move) if move in ids else -1
            else:
                j = list(legal).index(move) if move in legal else -1
            if j < 0:
                raise ValueError(f"{self.name}: the bot's move {move!r} is not legal for {agent}; legal: {list(legal)}")
            counts[j] += 1
        return (1.0 - self.epsilon) * counts / self.calls + self.epsilon / n

    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        out = []
        for i, r in enumerate(requests):
            if r.env is None or not r.legal_actions:
                raise ValueError(f"{self.name} needs request.env and legal moves for {r.env_id}/{r.agent} (discrete "
                                 "or choice mode): build the request with request_for(env, agent, policy.observes)")
            p = self.probs(r.env, r.agent, r.legal_actions)
            key = [int(k) % 2**63 for k in r.key] or [i]
            rng = np.random.default_rng([0 if seed is None else int(seed), *key])
            j = int(rng.choice(len(p), p=p))
            action = r.legal_actions[j]
            out.append(Generation(action=action, text=action,
                                  choice=Choice(index=j, logprob=float(math.log(p[j])), scoring="scripted",
                                                probs=p.tolist())))
        return out
