"""free_riding-v0: the manual's prompts, only the decider's move sets the reward, idle seats see neither the card
nor the others' moves and cannot change the reward, ablations give them zero credit, the reference and random play,
bad kwargs."""

from __future__ import annotations

import numpy as np
import pytest

from marl_llm_envs import make
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import play, random_legal
from tests.conftest import docstring_block


def _free(idle=3, seed=0, mode="discrete", **kw):
    env = make("free_riding-v0", action_mode=mode, idle_seats=idle, **kw)
    env.reset(seed=seed)
    return env


def test_free_riding_manual_shows_the_exact_prompts():
    from marl_llm_envs.envs import free_riding

    env = next(e for e in (_free(1, s) for s in range(20)) if e.card == "green")
    assert env.observe("decider")["text"] == docstring_block(free_riding, "The prompt (decider")
    env.step(0)
    assert env.observe("idle_0")["text"] == docstring_block(free_riding, "The prompt (idle_0")


@pytest.mark.parametrize("idle", [0, 1, 3, 7])
def test_free_riding_only_the_deciders_move_sets_the_reward(idle):
    for seed in range(10):
        rewards = set()
        for idle_move in range(3):
            env = _free(idle, seed)
            env.step(["red", "green", "blue"].index(env.card))
            while not env.done:
                env.step(idle_move)
            rewards.add(env.team_rewards()["team"])
            assert env.infos["decider"]["moves"] == {"decider": env.card,
                                                     **{f"idle_{i}": ["hum", "nod", "wait"][idle_move]
                                                        for i in range(idle)}}
        assert rewards == {1.0}
        wrong = _free(idle, seed)
        wrong.step((["red", "green", "blue"].index(wrong.card) + 1) % 3)
        while not wrong.done:
            wrong.step(0)
        assert wrong.team_rewards()["team"] == 0.0 and wrong.infos["decider"]["correct"] is False
        assert len(wrong.possible_agents) == idle + 1 and wrong.vector_size == 5 + idle


def test_free_riding_idle_seats_never_see_the_card_or_other_moves():
    for seed in range(20):
        env = _free(3, seed)
        twin = env.clone()
        twin.card = next(c for c in ("red", "green", "blue") if c != env.card)
        views = {a: env.observe(a) for a in env.possible_agents[1:]}
        for a in env.possible_agents[1:]:
            b = twin.observe(a)
            assert views[a]["text"] == b["text"] and np.array_equal(views[a]["observation"], b["observation"])
            assert not views[a]["observation"][:3].any() and env.card not in views[a]["text"].split("Reply")[0][-40:]
        env.step(0)
        assert env.observe("idle_1")["text"] == views["idle_1"]["text"]  # the decider's move is not shown


def test_free_riding_idle_invalid_move_never_changes_the_reward():
    env = _free(2, 0, mode="text")
    env.step(f"[{env.card}]")
    env.step("I refuse to move")
    assert env.infos["idle_0"]["invalid_action"] is not None and not env.done
    env.step("[hum]")
    assert env.done and env.team_rewards()["team"] == 1.0
    assert env.infos["decider"]["moves"]["idle_0"] == "wait"
    bad = _free(2, 0, mode="text")
    bad.step("no colour")
    assert bad.done and bad.team_rewards()["team"] == -1.0


def test_free_riding_ablations_give_idle_seats_zero_credit_and_the_decider_all_of_it():
    matcher = reference_policies("free_riding-v0")["card_matcher"]
    for seed in range(20):
        env = _free(3, seed)
        for agent in env.possible_agents:
            branch = env.ablate(agent)
            while not branch.done:
                branch.step(matcher(branch, branch.agent_selection, None))
            assert branch.team_rewards()["team"] == (0.0 if agent == "decider" else 1.0)


def test_free_riding_reference_is_optimal_and_random_is_a_third():
    matcher = reference_policies("free_riding-v0")["card_matcher"]
    for mode in ("discrete", "text"):
        env = make("free_riding-v0", action_mode=mode, idle_seats=3)
        assert all(play(env, matcher, seed=s)["decider"] == 1.0 for s in range(100))
    env = make("free_riding-v0", action_mode="discrete", idle_seats=1)
    assert abs(np.mean([play(env, random_legal, seed=s)["decider"] for s in range(3000)]) - 1 / 3) < 0.03


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_free_riding_bad_idle_seats_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="idle_seats"):
        make("free_riding-v0", idle_seats=bad)
