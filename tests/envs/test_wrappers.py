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


def test_maskable_ppo_updates_on_kuhn_and_the_wrappers_mask_keeps_its_moves_legal(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3's logger makes its folder even at verbose=0 (else in /tmp)
    import torch
    from sb3_contrib import MaskablePPO

    env = SingleAgentEnv("kuhn_poker-v0", agent="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu", verbose=0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(total_timesteps=128)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.parameters()))  # the updates ran
    # the model acts on the wrapper's action_masks() alone (no fallback here): it never makes an invalid move
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=env.action_masks())
            obs, _, term, trunc, info = env.step(action)
            assert info["invalid_count"] == 0, (seed, info["invalid_action"])
            done = term or trunc
    # frozen_policy hands the model the seat's own observation and mask, and plays the model's move when legal
    policy = frozen_policy(model, deterministic=True)
    game = make("kuhn_poker-v0", action_mode="discrete")
    for seed in range(10):
        game.reset(seed=seed)
        agent = game.agent_selection
        mask = game.action_mask(agent).astype(bool)
        expected, _ = model.predict(game.observe(agent)["observation"], action_masks=mask, deterministic=True)
        assert policy(game, agent, np.random.default_rng(0)) == int(expected)


@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "mini_hanabi-v1", "connect_four-v0"])
def test_the_single_agent_env_never_renders_a_prompt(env_id, monkeypatch):
    # it observed with the text, which it never reads: 20-30% of an SB3 step on Mini Hanabi and Connect Four
    wrapped = SingleAgentEnv(env_id)
    base = wrapped.env.unwrapped

    def no_prompt(agent):
        raise AssertionError("the prompt was rendered")

    rng = np.random.default_rng(0)
    obs, info = wrapped.reset(seed=1)
    for _ in range(40):
        monkeypatch.undo()
        assert np.array_equal(obs, base.observe(wrapped.agent)["observation"])     # the same vector
        monkeypatch.setattr(base, "_text", no_prompt)
        obs, _, term, trunc, info = wrapped.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if term or trunc:
            obs, info = wrapped.reset()
