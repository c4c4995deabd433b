"""Requests and episodes for the policy backends' tests."""

from __future__ import annotations

from baselines.policies.base import Request, request_for


def _requests(texts, legal=()):
    return [Request(env_id="test", agent="a", role="r", text=t, legal_actions=tuple(legal)) for t in texts]


def _play(env, policy, seed):
    """One episode through the protocol; returns (total rewards, generations); asserts no move was invalid."""
    env.reset(seed=seed)
    totals = {a: 0.0 for a in env.possible_agents}
    gens = []
    for k, agent in enumerate(env.agent_iter(max_iter=200)):
        _, reward, terminated, truncated, info = env.last()
        assert info["invalid_count"] == 0, info
        totals[agent] += float(reward)
        if terminated or truncated:
            env.step(None)
            continue
        (g,) = policy.generate([request_for(env, agent, ("text", "legal_actions", "env"))], seed=seed * 1000 + k)
        gens.append(g)
        env.step(g.action)
    return totals, gens
