"""The Gymnasium single-seat view used by Stable-Baselines3."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from marl_llm_envs import list_envs, make
from marl_llm_envs.scripted import random_legal
from marl_llm_envs.wrappers import SingleAgentEnv, frozen_policy

SYMMETRIC = [e for e in list_envs() if not e.startswith("textarena/")]


@pytest.mark.parametrize("env_id", SYMMETRIC)
def test_single_agent_view_passes_gymnasium_env_checker(env_id):
    seat = make(env_id).possible_agents[0]
    check_env(SingleAgentEnv(env_id, agent=seat), skip_render_check=True)


def test_random_seat_and_rewards_add_up_to_the_seat_return():
    env = SingleAgentEnv("kuhn_poker-v0", agent="random", env_kwargs={"rounds": 3})
    seats = set()
    rng = np.random.default_rng(0)
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        seats.add(info["seat"])
        total, done = 0.0, False
        while not done:
            legal = np.flatnonzero(env.action_masks())
            obs, r, term, trunc, info = env.step(int(rng.choice(legal)))
            total += r
            done = term or trunc
        assert total == env.env.team_rewards()[info["seat"]]
    assert seats == {"player_0", "player_1"}


def test_same_seed_same_trajectory():
    def run():
        env = SingleAgentEnv("tic_tac_toe-v0", agent="player_1")
        obs, _ = env.reset(seed=7)
        trace = [obs.tolist()]
        done = False
        while not done:
            obs, r, term, trunc, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
            trace.append((obs.tolist(), r))
            done = term or trunc
        return trace

    assert run() == run()


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="seats"):
        SingleAgentEnv("kuhn_poker-v0", agent="player_7")
    with pytest.raises(ValueError, match="discrete"):
        SingleAgentEnv(make("kuhn_poker-v0", action_mode="text"))
    with pytest.raises(ValueError, match="no policy for seats"):
        SingleAgentEnv("voting-v0", agent="voter_0", others={"voter_1": random_legal})


def test_frozen_policy_respects_the_mask():
    class AlwaysZero:
        def predict(self, obs, action_masks=None, deterministic=False):
            return 0, None

    env = make("tic_tac_toe-v0", action_mode="discrete")
    env.reset(seed=0)
    env.step(0)
    policy = frozen_policy(AlwaysZero())
    assert policy(env, "player_1", np.random.default_rng(0)) != 0


def test_maskable_ppo_runs_a_few_updates_on_kuhn():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    env = SingleAgentEnv("kuhn_poker-v0", agent="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=128)
    policy = frozen_policy(model)
    game = make("kuhn_poker-v0", action_mode="discrete")
    game.reset(seed=0)
    assert game.action_mask(game.agent_selection)[policy(game, game.agent_selection, np.random.default_rng(0))] == 1
