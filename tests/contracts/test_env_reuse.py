"""One env serves many episodes: ``reset(seed)`` on a used env gives exactly the episode a fresh env gives (the
rollout engine reuses its envs across episodes and training steps), and ``observe(agent, text=False)`` is
``observe(agent)`` without the text."""

from __future__ import annotations

import numpy as np
import pytest

from marl_llm_envs import list_envs, make
from marl_llm_envs.scripted import random_legal


def _play(env, seed: int) -> list:
    """Every observation (text=False and full), reward, flag and info of an episode of seeded random play."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    trace = []
    for agent in env.agent_iter(max_iter=400):
        obs, reward, term, trunc, info = env.last()
        cheap, *_ = env.last(text=False)
        assert set(cheap) == set(obs) - {"text"}
        for k in cheap:
            np.testing.assert_array_equal(cheap[k], obs[k])
        trace.append((agent, obs["text"], obs["observation"].tolist(), obs.get("action_mask", np.zeros(0)).tolist(),
                      reward, term, trunc, repr(info)))
        env.step(None if term or trunc else random_legal(env, agent, rng))
    trace.append((env.transcript(), env.team_rewards()))
    return trace


@pytest.mark.parametrize("action_mode", ["discrete", "text"])
@pytest.mark.parametrize("env_id", list_envs())
def test_a_reused_env_plays_each_episode_like_a_fresh_env(env_id, action_mode):
    reused = make(env_id, action_mode=action_mode)
    for seed in (3, 4, 3):
        assert _play(reused, seed) == _play(make(env_id, action_mode=action_mode), seed), (env_id, seed)
