"""connect_four-v0: gravity, wins in all four directions, the draw, full columns, ablation and the manual."""

from __future__ import annotations

import numpy as np
import pytest

from marl_llm_envs import make, replay
from marl_llm_envs.envs import connect_four
from marl_llm_envs.scripted import random_legal

# A full board with no four in a line (found by search, checked below).
DRAW = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 4, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4,
        5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6]


def _play(moves, mode="discrete", **kwargs):
    env = make("connect_four-v0", action_mode=mode, **kwargs)
    env.reset(seed=0)
    for c in moves:
        assert not env.done
        env.step(c if mode == "discrete" else f"I drop here: [{c}]")
    return env


def _cell(env, row_from_bottom, col):
    return env._board[(connect_four.ROWS - 1 - row_from_bottom) * connect_four.COLS + col]


def _final(env):
    return {a: env.infos[a]["team_reward"] for a in env.possible_agents}


def test_pieces_fall_to_the_lowest_empty_cell():
    env = _play([3, 3, 3, 0])
    assert [_cell(env, r, 3) for r in range(4)] == ["player_0", "player_1", "player_0", None]
    assert _cell(env, 0, 0) == "player_1" and _cell(env, 1, 0) is None
    assert env._heights == [1, 0, 0, 3, 0, 0, 0]
    assert sum(o is not None for o in env._board) == 4


# each case: moves (player_0 first), the winner
WINS = {
    "horizontal": ([0, 0, 1, 1, 2, 2, 3], "player_0"),
    "horizontal_player_1": ([0, 1, 0, 2, 0, 3, 6, 4], "player_1"),
    "vertical": ([2, 3, 2, 3, 2, 3, 2], "player_0"),
    "vertical_player_1": ([0, 5, 1, 5, 0, 5, 1, 5], "player_1"),
    # "/" diagonal: player_0 at (0,0), (1,1), (2,2), (3,3)
    "diagonal_up": ([0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3], "player_0"),
    # "\" diagonal: player_0 at (3,0), (2,1), (1,2), (0,3)
    "diagonal_down": ([3, 2, 2, 1, 1, 0, 1, 0, 0, 6, 0], "player_0"),
    # a four completed in its middle (the last piece is not an end of the line)
    "horizontal_middle": ([0, 0, 1, 1, 3, 3, 2], "player_0"),
    "diagonal_middle": ([0, 1, 2, 2, 2, 3, 3, 3, 3, 6, 1], "player_0"),  # (1,1) completes (0,0)..(3,3)
}


@pytest.mark.parametrize("mode", ["discrete", "text"])
@pytest.mark.parametrize("case", sorted(WINS))
def test_four_in_a_line_wins_in_every_direction(case, mode):
    moves, winner = WINS[case]
    env = _play(moves[:-1], mode)
    assert not env.done
    env.step(moves[-1] if mode == "discrete" else f"[{moves[-1]}]")
    assert env.done
    loser = "player_1" if winner == "player_0" else "player_0"
    assert _final(env) == {winner: 1.0, loser: -1.0}
    assert env.infos[winner]["outcome"] == "win" and env.infos[winner]["winner"] == winner


def test_three_in_a_line_is_not_a_win():
    env = _play([0, 0, 1, 1, 2, 2])
    assert not env.done
    env = _play([0, 1, 1, 2, 2, 3, 2, 3, 3, 6])  # diagonal of three plus gaps
    assert not env.done


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_a_full_board_with_no_line_is_a_draw(mode):
    env = _play(DRAW[:-1], mode)
    assert not env.done
    env.step(DRAW[-1] if mode == "discrete" else f"[{DRAW[-1]}]")
    assert env.done and all(o is not None for o in env._board)
    assert _final(env) == {"player_0": 0.0, "player_1": 0.0}
    assert env.infos["player_0"]["outcome"] == "draw" and env.infos["player_0"]["winner"] is None


def test_a_full_column_is_illegal():
    env = _play([0] * 6)
    assert env._heights[0] == 6
    assert env.action_mask("player_0").tolist() == [0, 1, 1, 1, 1, 1, 1]
    assert "[0]" not in env.legal_actions()
    env.step(0)  # penalty: the game ends, the offender loses
    assert env.done and _final(env) == {"player_0": -1.0, "player_1": 1.0}
    assert "not legal" in env.infos["player_0"]["invalid_action"]["reason"]

    env = _play([0] * 6, mode="text", invalid_move="retry")
    env.step("[0]")
    assert not env.done and env.agent_selection == "player_0"
    assert "previous move was invalid" in env.observe("player_0")["text"]
    env.step("[1]")
    assert _cell(env, 0, 1) == "player_0" and env.agent_selection == "player_1"

    env = _play([0] * 6, invalid_move="random")
    env.step(0)
    assert env._heights[0] == 6 and sum(env._heights) == 7


def test_observation_vector_and_mask():
    env = _play([3, 4])
    v0, v1 = env.observe("player_0")["observation"], env.observe("player_1")["observation"]
    bottom = 5 * 7
    assert v0.shape == (85,) and v0[bottom + 3] == 1 and v0[42 + bottom + 4] == 1 and v0[84] == 1
    assert v1[bottom + 4] == 1 and v1[42 + bottom + 3] == 1 and v1[84] == 0
    assert v0.sum() == 3 and v1.sum() == 2


def test_ablated_player_drops_into_the_first_open_column():
    env = _play([0] * 6)
    branch = env.ablate("player_1")
    branch.step(3)
    assert _cell(branch, 0, 1) == "player_1" and branch.agent_selection == "player_0"
    branch.step(1)
    assert _cell(branch, 2, 1) == "player_1"
    again = replay(branch.transcript())
    assert again._board == branch._board


def test_the_manual_shows_the_exact_prompt_and_the_board_has_column_numbers():
    from tests.conftest import docstring_block

    env = make("connect_four-v0")
    env.reset(seed=0)
    assert env.observe("player_0")["text"] == docstring_block(connect_four, "The prompt (player_0")
    env.step("[3]")
    text = env.observe("player_1")["text"]
    assert " 0 1 2 3 4 5 6\n" in text and "|. . . X . . .|\nYour legal moves" in text
    assert "playing O" in text


def test_random_games_end_with_a_consistent_board():
    rng = np.random.default_rng(0)
    outcomes = set()
    for seed in range(60):
        env = make("connect_four-v0", action_mode="discrete")
        env.reset(seed=seed)
        while not env.done:
            env.step(random_legal(env, env.agent_selection, rng))
        pieces = [sum(o == a for o in env._board) for a in env.possible_agents]
        assert pieces[0] - pieces[1] in (0, 1)
        assert sum(env._heights) == sum(pieces)
        outcomes.add(env.infos["player_0"]["outcome"])
    assert "win" in outcomes
