"""Calls out of order raise PettingZoo's order-enforcing wording; bad values are named by their repr."""

from __future__ import annotations

import numpy as np
import pytest

from marl_llm_envs import list_envs, make, spec
from marl_llm_envs.scripted import random_legal


@pytest.mark.parametrize("env_id", list_envs())
def test_step_before_reset_says_to_reset(env_id):
    env = make(env_id)
    with pytest.raises(RuntimeError, match=r"^reset\(\) needs to be called before step\(\)$"):
        env.step("[0]")


@pytest.mark.parametrize("call", ["last", "observe", "render", "agent_iter", "legal_actions", "action_mask",
                                  "transcript"])
@pytest.mark.parametrize("env_id", list_envs())
def test_other_calls_before_reset_say_to_reset(env_id, call):
    env = make(env_id, render_mode="ansi")
    args = (env.possible_agents[0],) if call in ("observe", "action_mask") else ()
    with pytest.raises(RuntimeError, match=rf"^reset\(\) needs to be called before {call}\(\)$"):
        getattr(env, call)(*args)


def _finished(env_id: str):
    mode = "discrete" if "discrete" in spec(env_id).action_modes else "text"
    env = make(env_id, action_mode=mode)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for agent in env.agent_iter(10_000):
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else random_legal(env, agent, rng))
    return env


@pytest.mark.parametrize("env_id", list_envs())
def test_step_after_the_episode_ended_says_to_reset(env_id):
    env = _finished(env_id)
    assert env.agents == []
    with pytest.raises(RuntimeError, match=r"^step\(\) after the episode ended: call reset\(\)$"):
        env.step(None)
    with pytest.raises(RuntimeError, match=r"^last\(\) after the episode ended: call reset\(\)$"):
        env.last()


def test_reset_after_the_end_starts_a_new_episode():
    env = _finished("tic_tac_toe-v0")
    env.reset(seed=1)
    env.step(4)
    assert env.agent_selection == "player_1"


@pytest.mark.parametrize("call", ["step", "observe", "last"])
def test_textarena_calls_before_reset_say_to_reset(call):
    pytest.importorskip("textarena")
    env = make("textarena/TicTacToe-v0")
    args = {"step": ("[4]",), "observe": ("player_0",), "last": ()}[call]
    with pytest.raises(RuntimeError, match=rf"^reset\(\) needs to be called before {call}\(\)$"):
        getattr(env, call)(*args)


def test_render_shows_the_final_state():
    env = make("tic_tac_toe-v0", render_mode="ansi")
    env.reset(seed=0)
    for move in ("[0]", "[3]", "[1]", "[4]", "[2]"):
        env.step(move)
    while env.agents:
        env.step(None)
    text = env.render()
    assert "X" in text and text.endswith("game over")


@pytest.mark.parametrize("action, shown", [("1", "got '1'"), ("", "got ''"), (1.0, "got 1.0"), (None, "got None")])
def test_discrete_mode_reason_shows_the_repr_of_a_non_int(action, shown):
    env = make("kuhn_poker-v0", action_mode="discrete")
    env.reset(seed=0)
    env.step(action)
    assert env.infos["player_0"]["invalid_action"]["reason"] == f"expected an action index (int), {shown}"


def test_text_mode_reason_shows_the_repr_of_a_non_str():
    env = make("kuhn_poker-v0")
    env.reset(seed=0)
    env.step(b"[bet]")
    assert env.infos["player_0"]["invalid_action"]["reason"] == "expected a text action (str), got b'[bet]'"
