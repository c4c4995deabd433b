"""kuhn_poker-v0's rules, pinned by hand-checked examples: a fold, the showdowns, every terminal history's pot,
the legal moves, a match of hands, text moves with reasoning around them, an illegal text move."""

from __future__ import annotations

import itertools

import pytest

from marl_llm_envs import make
from tests.envs.helpers import final

CHECK, BET, CALL, FOLD = range(4)


def kuhn_with_cards(p0: int, p1: int, mode: str = "discrete"):
    """A Kuhn env whose first deal is (p0, p1): search seeds for it (the deal comes from the env's RNG)."""
    for seed in range(1000):
        env = make("kuhn_poker-v0", action_mode=mode)
        env.reset(seed=seed)
        if (env._cards["player_0"], env._cards["player_1"]) == (p0, p1):
            return env
    raise AssertionError("no seed deals these cards")


def test_kuhn_fold_loses_the_pot_to_the_other_player():
    env = kuhn_with_cards(2, 0)  # player_0 K, player_1 J
    env.step(BET)
    env.step(FOLD)
    assert final(env) == {"player_0": 1.0, "player_1": -1.0}
    env = kuhn_with_cards(0, 2)  # the better card folds: still loses its ante
    env.step(CHECK)
    env.step(BET)
    env.step(FOLD)
    assert final(env) == {"player_0": -1.0, "player_1": 1.0}


def test_kuhn_called_showdown_pays_two_to_the_higher_card():
    for p0, p1 in itertools.permutations(range(3), 2):
        env = kuhn_with_cards(p0, p1)
        env.step(BET)
        env.step(CALL)
        win = 2.0 if p0 > p1 else -2.0
        assert final(env) == {"player_0": win, "player_1": -win}
        env = kuhn_with_cards(p0, p1)
        env.step(CHECK)
        env.step(BET)
        env.step(CALL)
        assert final(env) == {"player_0": win, "player_1": -win}


def test_kuhn_checked_showdown_pays_one():
    env = kuhn_with_cards(1, 0)
    env.step(CHECK)
    env.step(CHECK)
    assert final(env) == {"player_0": 1.0, "player_1": -1.0}


# The five terminal histories of a Kuhn hand, worked out by hand from the manual (both ante 1; a bet or a call puts in
# 1 more; a fold hands the pot to the other player, a showdown to the higher card; the winner gains what the loser
# put in). Chips won by the player who acts first in the hand, (if it holds the higher card, if it holds the lower).
KUHN_TERMINALS = {
    ("check", "check"): (+1.0, -1.0),        # showdown, pot 1 + 1: the loser put in 1
    ("bet", "fold"): (+1.0, +1.0),           # second folds its ante, whatever the cards
    ("bet", "call"): (+2.0, -2.0),           # showdown, pot 2 + 2
    ("check", "bet", "fold"): (-1.0, -1.0),  # first folds its ante, whatever the cards
    ("check", "bet", "call"): (+2.0, -2.0),  # showdown, pot 2 + 2
}


# The pot the player to move sees in its prompt after each prefix of a history: (pot, its own chips in, opponent's).
KUHN_POTS = {(): (2, 1, 1), ("check",): (2, 1, 1), ("bet",): (3, 1, 2), ("check", "bet"): (3, 1, 2)}


def _kuhn_hand_with(first: str, cards: dict):
    """A discrete Kuhn env at the start of a hand in which ``first`` acts first with ``cards`` (p0, p1 by seat).

    player_0 acts first in hand 1 of a 1-hand match; player_1 in hand 2 of a 2-hand match, after a hand 1 in
    which player_0 bet and player_1 folded (player_0 +1). Seeds are searched for the deal."""
    for seed in range(1000):
        env = make("kuhn_poker-v0", action_mode="discrete", rounds=1 if first == "player_0" else 2)
        env.reset(seed=seed)
        if first == "player_1":
            env.step(BET)
            env.step(FOLD)
        if env._cards == cards:
            assert env.agent_selection == first
            return env
    raise AssertionError("no seed deals these cards")


@pytest.mark.parametrize("first", ["player_0", "player_1"])
@pytest.mark.parametrize("history", list(KUHN_TERMINALS), ids="-".join)
def test_kuhn_every_terminal_history_pays_the_pot_by_hand(first, history):
    moves = {"check": CHECK, "bet": BET, "call": CALL, "fold": FOLD}
    second = "player_1" if first == "player_0" else "player_0"
    before = 0.0 if first == "player_0" else -1.0  # the first player's chips from hand 1 (see _kuhn_hand_with)
    for first_card, second_card in itertools.permutations(range(3), 2):   # J=0 < Q=1 < K=2, both orders
        env = _kuhn_hand_with(first, {first: first_card, second: second_card})
        for i, move in enumerate(history):
            mover = first if i % 2 == 0 else second
            assert env.agent_selection == mover and not env.done
            pot, mine, theirs = KUHN_POTS[history[:i]]
            assert f"Pot: {pot} chips (you put in {mine}, your opponent {theirs})." in env.observe(mover)["text"]
            env.step(moves[move])
        won = KUHN_TERMINALS[history][0 if first_card > second_card else 1]
        assert env.done
        assert env.rewards == {first: won, second: -won}              # the hand's step reward
        assert final(env) == {first: before + won, second: -(before + won)}  # the match total
        assert env.infos[first]["chips"] == {first: before + won, second: -(before + won)}


def test_kuhn_legal_moves_follow_the_betting():
    env = kuhn_with_cards(1, 2)
    assert env.legal_actions("player_0") == ["[check]", "[bet]"]
    assert env.legal_actions("player_1") == []  # not its turn
    env.step(BET)
    assert env.legal_actions("player_1") == ["[call]", "[fold]"]
    assert env.observe("player_1")["action_mask"].tolist() == [0, 0, 1, 1]


def test_kuhn_match_alternates_the_first_player_and_sums_chips():
    env = make("kuhn_poker-v0", action_mode="discrete", rounds=4)
    env.reset(seed=0)
    firsts, total = [], {"player_0": 0.0, "player_1": 0.0}
    while not env.done:
        firsts.append(env.agent_selection)
        env.step(BET)          # first player bets
        env.step(FOLD)         # second folds: first wins 1
        for a in total:
            total[a] += env.rewards[a]
    assert firsts == ["player_0", "player_1", "player_0", "player_1"]
    assert total == {"player_0": 0.0, "player_1": 0.0}
    assert env.infos["player_0"]["chips"] == {"player_0": 0.0, "player_1": 0.0}


def test_kuhn_text_moves_tolerate_reasoning_and_case():
    env = kuhn_with_cards(2, 0, "text")
    env.step("I hold the King, so I [Bet]. Final answer: [BET]")
    assert env.agent_selection == "player_1"
    env.step("Ugh. [fold]")
    assert final(env)["player_0"] == 1.0


def test_kuhn_illegal_text_move_under_penalty_ends_the_game_zero_sum():
    env = kuhn_with_cards(2, 0, "text")
    env.step("[call]")  # nothing to call
    assert env.done and final(env) == {"player_0": -1.0, "player_1": 1.0}
    record = env.infos["player_0"]["invalid_action"]
    assert record["action"] == "[call]" and "legal: [check], [bet]" in record["reason"]
