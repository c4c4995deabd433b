"""team_umbrella-v0 (temporal credit): the manual's prompts, a final reward that depends on the decisive move
alone and comes last, the distractors' noise, the forecast only player_0 sees, ablations, the reference and random
play, invalid decisions and bad kwargs."""

from __future__ import annotations

import numpy as np
import pytest

from marl_llm_envs import make
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import random_legal
from tests.conftest import docstring_block


def _umbrella(delay=3, seed=0, **kw):
    env = make("team_umbrella-v0", action_mode="discrete", delay=delay, **kw)
    env.reset(seed=seed)
    return env


def _walk(env, decision, distractor=3, p1=1):
    """Play an umbrella episode: player_0 decides (0 umbrella, 1 no_umbrella) then plays ``distractor``; player_1
    always plays ``p1``. Returns the rewards each step handed to player_0."""
    got = []
    first = True
    while not env.done:
        agent = env.agent_selection
        env.step((decision if first else distractor) if agent == "player_0" else p1)
        first = first and agent != "player_0"
        got.append(env.rewards["player_0"])
    return got


def test_umbrella_manual_shows_the_exact_prompts():
    from marl_llm_envs.envs import team_umbrella

    env = next(e for e in (_umbrella(seed=s) for s in range(20)) if e.weather == "rain")
    assert env.observe("player_0")["text"] == docstring_block(team_umbrella, "The prompt (player_0")
    env.step(0)
    env.step(1)
    env.step(3)  # round 2: player_0 waits, player_1 to move
    assert env.observe("player_1")["text"] == docstring_block(team_umbrella, "The prompt (player_1")


@pytest.mark.parametrize("delay", [1, 3, 10, 30])
def test_umbrella_final_reward_depends_only_on_the_decisive_move_and_comes_last(delay):
    for seed in range(12):
        matched = _umbrella(delay, seed)
        right = 0 if matched.weather == "rain" else 1
        rng = np.random.default_rng(seed)
        got = []
        while not matched.done:  # the right decision, then random distractors from both seats
            agent = matched.agent_selection
            move = right if agent == "player_0" and not got else random_legal(matched, agent, rng)
            matched.step(move)
            got.append(matched.rewards["player_0"])
        wrong = _umbrella(delay, seed)
        got_wrong = _walk(wrong, 1 - right, distractor=2, p1=0)
        assert len(got) == len(got_wrong) == 2 * (delay + 1)
        noise = got[3:-1:2]                  # after player_1's move in rounds 2 .. delay (the last one adds the final)
        assert len(noise) == delay - 1 and all(abs(x) == 1.0 for x in noise)
        assert got[1] == 0.0 and all(got[i] == 0.0 for i in range(0, len(got), 2))   # no reward in round 1
        assert got[-1] - got_wrong[-1] == 2.0                        # +1 vs -1, on the last step only
        assert got[:-1] == got_wrong[:-1]                            # the same noise whatever the moves
        assert matched.infos["player_0"]["decisive_reward"] == 1.0 and wrong.infos["player_0"]["decisive_reward"] == -1.0
        assert matched.team_rewards()["team"] == pytest.approx(1.0 + matched.infos["player_0"]["noise_total"])
        assert matched.infos["player_1"]["moves"]["player_0"][0] == ("umbrella" if right == 0 else "no_umbrella")


def test_umbrella_noise_kwarg_scales_the_distractor_rewards_and_zero_turns_them_off():
    env = _umbrella(10, 4, noise=0.25)
    assert {abs(r) for r in _walk(env, 0)[3:-1:2]} == {0.25}
    quiet = _umbrella(10, 4, noise=0)
    rewards = _walk(quiet, 0)
    assert rewards[:-1] == [0.0] * (len(rewards) - 1) and abs(rewards[-1]) == 1.0
    assert "There are no other rewards." in quiet.observe("player_0")["text"]


def test_umbrella_only_player_0_sees_the_forecast():
    for seed in range(30):
        env = _umbrella(3, seed)
        twin = env.clone()
        twin.weather = "sun" if env.weather == "rain" else "rain"
        rng = np.random.default_rng(seed)
        while not env.done:
            a, b = env.observe("player_1"), twin.observe("player_1")
            assert a["text"] == b["text"] and np.array_equal(a["observation"], b["observation"])
            assert "forecast (only you" not in a["text"] and not a["observation"][:2].any()
            move = random_legal(env, env.agent_selection, rng)
            env.step(move)
            twin.step(move)
        first = _umbrella(3, seed)
        assert first.observe("player_0")["observation"][:2].sum() == 1.0
        assert f"always right): {first.weather}" in first.observe("player_0")["text"]


def test_umbrella_ablating_player_0_decides_no_umbrella_and_later_ablations_change_nothing():
    for seed in range(20):
        env = _umbrella(3, seed)
        base = env.clone()
        _walk(base, 0)
        ablated = env.ablate("player_0")
        _walk(ablated, 0)  # player_0's moves are the env's null moves now
        assert ablated.infos["player_0"]["umbrella"] is False
        assert ablated.infos["player_0"]["moves"]["player_0"] == ["no_umbrella", "wait", "wait", "wait"]
        env.step(0)
        env.step(1)
        later, other = env.ablate("player_0"), env.ablate("player_1")
        for branch in (env, later, other):
            while not branch.done:
                branch.step(2 if branch.agent_selection == "player_0" else 0)   # [look] / [walk]
        assert later.team_rewards() == other.team_rewards() == env.team_rewards()
        gain = env.team_rewards()["team"] - ablated.team_rewards()["team"]   # umbrella vs the null no_umbrella
        assert gain == (2.0 if env.weather == "rain" else -2.0)


def test_umbrella_reference_is_optimal_and_random_is_zero_in_expectation():
    follow = reference_policies("team_umbrella-v0")["forecast_follower"]
    for mode in ("discrete", "text"):
        env = make("team_umbrella-v0", action_mode=mode, delay=3)
        for seed in range(200):
            env.reset(seed=seed)
            while not env.done:
                env.step(follow(env, env.agent_selection, None))
            assert env.infos["player_0"]["decisive_reward"] == 1.0
    env = make("team_umbrella-v0", action_mode="discrete", delay=1)
    decisive, rng = [], np.random.default_rng(0)
    for seed in range(2000):
        env.reset(seed=seed)
        while not env.done:
            env.step(random_legal(env, env.agent_selection, rng))
        decisive.append(env.infos["player_0"]["decisive_reward"])
    assert abs(np.mean(decisive)) < 0.07


def test_umbrella_invalid_decision_ends_with_the_penalty():
    env = _umbrella(3, 0)
    env.step(3)   # [wait] is not legal in the decision round
    assert env.done and env.team_rewards()["team"] == -1.0
    assert env.infos["player_0"]["outcome"] == "invalid_move" and env.infos["player_0"]["decisive_reward"] is None


@pytest.mark.parametrize("bad", [{"delay": 0}, {"delay": 2.5}, {"delay": True}, {"noise": -1}, {"noise": "x"},
                                 {"noise": float("inf")}])
def test_umbrella_bad_kwargs_are_clear_errors(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        make("team_umbrella-v0", **bad)
