"""tic_tac_toe-v0's rules: every line wins, a full board without a line is a draw, an occupied cell is illegal."""

from __future__ import annotations

import pytest

from marl_llm_envs import make
from marl_llm_envs.envs.tic_tac_toe import LINES
from tests.envs.helpers import final


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("winner", [0, 1])
def test_tic_tac_toe_every_line_wins(line, winner):
    other_cells = [c for c in range(9) if c not in line]
    env = make("tic_tac_toe-v0", action_mode="discrete")
    env.reset(seed=0)
    # the loser plays cells off the line that never complete a line of their own
    filler = [c for c in other_cells if True]
    moves_w, moves_l = list(line), []
    for c in filler:
        trial = moves_l + [c]
        if not any(set(l) <= set(trial) for l in LINES):
            moves_l.append(c)
    if winner == 1:  # player_1 needs player_0 to move first without winning
        seq = []
        for i in range(3):
            seq += [moves_l[i], moves_w[i]]
    else:
        seq = [moves_w[0], moves_l[0], moves_w[1], moves_l[1], moves_w[2]]
    for m in seq:
        assert not env.done
        env.step(m)
    w, l = f"player_{winner}", f"player_{1 - winner}"
    assert env.done and final(env) == {w: 1.0, l: -1.0} and env.infos[w]["winner"] == w


def test_tic_tac_toe_full_board_without_a_line_is_a_draw():
    env = make("tic_tac_toe-v0", action_mode="discrete")
    env.reset(seed=0)
    for m in [0, 1, 2, 4, 3, 5, 7, 6, 8]:  # X O X / X O O / O X X
        env.step(m)
    assert env.done and final(env) == {"player_0": 0.0, "player_1": 0.0} and env.infos["player_0"]["outcome"] == "draw"


def test_tic_tac_toe_occupied_cell_is_illegal():
    env = make("tic_tac_toe-v0", action_mode="discrete")
    env.reset(seed=0)
    env.step(0)
    assert env.observe("player_1")["action_mask"][0] == 0
    env.step(0)
    assert env.done and final(env)["player_1"] == -1.0
