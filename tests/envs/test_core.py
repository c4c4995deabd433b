"""The base env's invalid-move policies (marl_llm_envs/core.py): ``retry`` shows the error, then penalizes after
``max_retries``; ``random`` replaces the move with a legal one."""

from __future__ import annotations

from marl_llm_envs import make
from tests.envs.helpers import final


def test_retry_shows_the_error_then_penalizes_after_max_retries():
    env = make("tic_tac_toe-v0", invalid_move="retry", max_retries=2)
    env.reset(seed=0)
    env.step("no idea")
    assert env.agent_selection == "player_0" and "previous move was invalid" in env.observe("player_0")["text"]
    env.step("[4]")
    assert env.agent_selection == "player_1"
    assert "previous move was invalid" not in env.observe("player_0")["text"]
    for _ in range(2):
        env.step("[4]")  # taken
        assert not env.done
    env.step("[4]")
    assert env.done and env.infos["player_1"]["invalid_count"] == 3
    assert final(env) == {"player_0": 1.0, "player_1": -1.0}


def test_random_policy_replaces_an_invalid_move_with_a_legal_one():
    env = make("tic_tac_toe-v0", action_mode="discrete", invalid_move="random")
    env.reset(seed=0)
    env.step(4)
    env.step(4)
    record = env.infos["player_1"]["invalid_action"]
    assert record["policy"] == "random" and record["replaced_by"] != "[4]"
    assert env._board.count("player_1") == 1 and env.agent_selection == "player_0"
