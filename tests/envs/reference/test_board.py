"""The board-game reference bots: perfect tic-tac-toe and the Connect Four search."""

from __future__ import annotations

import numpy as np
import pytest

from marl_llm_envs import make
from marl_llm_envs.reference.board import connect_four_search, tic_tac_toe_minimax
from marl_llm_envs.scripted import play, random_legal


def _other(agent):
    return "player_1" if agent == "player_0" else "player_0"


def test_minimax_never_loses_to_random_in_300_games():
    results = []
    for game in range(300):
        env = make("tic_tac_toe-v0", action_mode="discrete" if game % 2 else "text")
        bot = "player_0" if game % 4 < 2 else "player_1"
        totals = play(env, {bot: tic_tac_toe_minimax, _other(bot): random_legal}, seed=game)
        results.append(totals[bot])
    assert min(results) >= 0.0
    assert results.count(1.0) > 200  # and it wins most of them


def test_minimax_draws_against_itself():
    for game in range(40):
        env = make("tic_tac_toe-v0", action_mode="discrete" if game % 2 else "text")
        assert play(env, tic_tac_toe_minimax, seed=game) == {"player_0": 0.0, "player_1": 0.0}


def _ttt(moves, mode="discrete"):
    env = make("tic_tac_toe-v0", action_mode=mode)
    env.reset(seed=0)
    for m in moves:
        env.step(m if mode == "discrete" else f"[{m}]")
    return env


def test_minimax_takes_a_win_and_blocks_a_loss_in_both_modes():
    rng = np.random.default_rng(0)
    env = _ttt([0, 3, 1, 4])  # X to move: 2 wins (O threatens 5)
    assert tic_tac_toe_minimax(env, "player_0", rng) == 2
    env = _ttt([0, 4, 8], "text")  # O must take an edge (a corner loses to the double threat)
    for _ in range(10):
        assert tic_tac_toe_minimax(env, "player_1", rng) in ("[1]", "[3]", "[5]", "[7]")
    env = _ttt([0, 4, 1])  # O must block at 2
    assert tic_tac_toe_minimax(env, "player_1", rng) == 2


def test_minimax_breaks_ties_at_random_with_the_given_rng():
    env = _ttt([])
    picks = {tic_tac_toe_minimax(env, "player_0", np.random.default_rng(s)) for s in range(60)}
    assert len(picks) > 1  # every first move draws with perfect play
    a = [tic_tac_toe_minimax(env, "player_0", np.random.default_rng(1)) for _ in range(3)]
    assert len(set(a)) == 1


def test_connect_four_search_beats_random_in_at_least_90_of_100_games():
    wins = 0
    for game in range(100):
        env = make("connect_four-v0", action_mode="discrete" if game % 2 else "text")
        bot = "player_0" if game % 4 < 2 else "player_1"
        totals = play(env, {bot: connect_four_search, _other(bot): random_legal}, seed=game)
        wins += totals[bot] == 1.0
    assert wins >= 90


def _c4(moves, mode="discrete"):
    env = make("connect_four-v0", action_mode=mode)
    env.reset(seed=0)
    for m in moves:
        env.step(m if mode == "discrete" else f"[{m}]")
    return env


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_connect_four_search_wins_now_and_blocks(mode):
    rng = np.random.default_rng(0)
    want = (lambda c: c) if mode == "discrete" else (lambda c: f"[{c}]")
    env = _c4([0, 6, 1, 6, 2, 5], mode)  # X has 0, 1, 2 on the bottom: 3 wins
    assert connect_four_search(env, "player_0", rng) == want(3)
    env = _c4([0, 6, 0, 6, 0], mode)  # O must block the vertical at 0
    assert connect_four_search(env, "player_1", rng) == want(0)
    env = _c4([1, 6, 2, 6], mode)  # X plays 3 or 0 for an open three; O's vertical threat is not yet urgent
    assert connect_four_search(env, "player_0", rng) in (want(0), want(3))


def test_connect_four_search_sees_a_double_threat_coming():
    # O has 2 and 3 on the bottom with 1 and 4 empty; X must play 1 or 4 (else O makes an open three and wins)
    env = _c4([6, 2, 6, 3])
    move = connect_four_search(env, "player_0", np.random.default_rng(0))
    assert move in (1, 4)


def test_depth_must_be_positive():
    env = _c4([])
    with pytest.raises(ValueError, match="depth"):
        connect_four_search(env, "player_0", np.random.default_rng(0), depth=0)
