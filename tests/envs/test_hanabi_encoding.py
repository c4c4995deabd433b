"""Hanabi's numeric observation against HLE's canonical encoder."""

from __future__ import annotations

import numpy as np

from marl_llm_envs import make


def test_hanabi_token_bit_is_set_only_for_a_completed_firework():
    env = make("mini_hanabi-v1", action_mode="discrete")
    assert env.version == 1
    bit_at = env._off["la_token"]   # the documented layout's "information token gained" bit
    found = {"discard": 0, "firework": 0}
    for seed in range(300):
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while not env.done:
            before = env.public_state()["information_tokens"]
            env.step(int(rng.choice(np.flatnonzero(env.action_mask(env.agent_selection)))))
            if env.done:
                break
            kind = env._moves[-1][1]
            token_back = env.public_state()["information_tokens"] > before
            bit = env.observe(env.agent_selection)["observation"][bit_at]
            if kind == 1 and token_back:          # a play that completed a firework: HLE sets the bit
                found["firework"] += 1
                assert bit == 1.0
            else:                                 # every other move, a discard that returned a token included
                found["discard"] += kind == 0 and token_back
                assert bit == 0.0
        if min(found.values()) >= 3:
            break
    assert min(found.values()) >= 3, found
