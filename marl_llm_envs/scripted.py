"""Scripted policies for demos, tests and sanity anchors (no learning, no LLM).

Each policy is a function ``policy(env, agent, rng) -> action`` that returns an action in the env's action mode
(an index in discrete mode, a string in text mode). ``rng`` is a ``numpy.random.Generator`` owned by the caller.

* :func:`random_legal` plays a uniformly random legal move (in text mode, free-text turns get a random short reply
  in the right format; orchestrator-v0's plan spawns 0..max_workers workers on parts of the problem drawn at random).
* :func:`oracle_thinker` and :func:`follower_solver` are the think_solve-v0 pair that shows the thinker's
  contribution without an LLM: the oracle thinker is privileged (it reads the true answer through
  ``env.unwrapped.answer_index()`` / ``env.unwrapped.task``, which no observation contains) and names it; the
  follower solver answers what the thinker named, or guesses uniformly when there is no hint.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

Policy = Callable[[Any, str, np.random.Generator], Any]


def random_legal(env, agent: str, rng: np.random.Generator) -> Any:
    """A uniformly random legal move of ``agent``."""
    base = env.unwrapped
    if base.action_mode == "discrete":
        return int(rng.choice(np.flatnonzero(base.action_mask(agent))))
    legal = base.legal_actions(agent)
    if legal:
        return legal[int(rng.integers(len(legal)))]
    if base.env_id == "think_solve-v0" and agent == "thinker":
        return f"I am not sure; maybe try {int(rng.integers(-20, 100))}."
    if base.env_id == "orchestrator-v0" and agent == "orchestrator" and base.phase == "plan":
        parts = base.task.parts
        picks = [parts[int(rng.integers(len(parts)))].question for _ in range(int(rng.integers(base.max_workers + 1)))]
        return "\n".join(["My plan:", *(f"[spawn: {q}]" for q in picks)])
    return f"My answer: \\boxed{{{int(rng.integers(-20, 100))}}}"


def oracle_thinker(env, agent: str, rng: np.random.Generator) -> Any:
    """think_solve-v0: name the true answer (privileged; for anchors and tests only)."""
    base = env.unwrapped
    if base.action_mode == "discrete":
        return 1 + base.answer_index()  # action 0 is [none]
    return f"I worked it out: the answer is {base.task.answer}."


_NAMED = re.compile(r"answer is \(?([^\s().]+)")


def follower_solver(env, agent: str, rng: np.random.Generator) -> Any:
    """think_solve-v0: answer what the thinker named; guess uniformly among the candidates when it named nothing
    (the free-text hint, ``clue_pool="words"`` in text mode: the candidate whose word the hint names first,
    :meth:`~marl_llm_envs.envs.think_solve.raw_env.hint_candidate`)."""
    base = env.unwrapped
    thought = base.thought
    if base.action_mode == "discrete":
        if thought in base.labels:
            return base.labels.index(thought)
        return int(rng.integers(base.num_candidates))
    if getattr(base, "free_hint", False):     # the free-text hint: the candidate its words name first
        k = base.hint_candidate(thought or "")
        return f"[{base.labels[k if k is not None else int(rng.integers(base.num_candidates))]}]"
    named = _NAMED.search(thought or "")
    guess = named.group(1) if named else str(int(rng.integers(-20, 100)))
    return f"\\boxed{{{guess}}}"


def play(env, policies: dict[str, Policy] | Policy, seed: int, rng: np.random.Generator | None = None,
         on_turn: Callable[[str, dict, Any], None] | None = None) -> dict[str, float]:
    """Play one episode of an AEC env; return each agent's total reward.

    ``policies`` is one policy for every agent or a dict agent -> policy; ``on_turn(agent, observation, action)`` is
    called before each move (for printing or recording).
    """
    rng = np.random.default_rng([seed, 1]) if rng is None else rng  # a stream apart from the env's seed
    env.reset(seed=seed)
    totals = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        totals[agent] += float(reward)
        if terminated or truncated:
            env.step(None)
            continue
        policy = policies[agent] if isinstance(policies, dict) else policies
        action = policy(env, agent, rng)
        if on_turn is not None:
            on_turn(agent, obs, action)
        env.step(action)
    return totals
