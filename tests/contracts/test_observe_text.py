"""``TextEnv.observe_text(agent)`` is ``observe(agent)["text"]`` alone: the rollout engine checks a branch decision's
replay digest with it and never computes the vector for a replayed decision, so the two must agree in every state."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ENV_MODES
from marl_llm_envs import make
from marl_llm_envs.scripted import random_legal


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_observe_text_is_the_text_of_observe_for_every_agent_at_every_step(env_id, mode):
    env = make(env_id, action_mode=mode, invalid_move="retry")
    with pytest.raises(RuntimeError, match=r"reset\(\) needs to be called before observe_text\(\)"):
        env.observe_text(env.possible_agents[0])
    rng = np.random.default_rng(0)
    for seed in range(2):
        env.reset(seed=seed)
        for _ in range(40):
            for agent in env.agents:
                assert env.observe_text(agent) == env.observe(agent)["text"], (env_id, mode, seed, agent)
            if env.done:
                break
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
            else:       # now and then an invalid move: "retry" shows its error in the next prompt
                env.step(random_legal(env, agent, rng) if rng.random() < 0.9 else "not a move")
