"""What the poker games share (``marl_llm_envs/envs/poker.py``): the public summary of the last hand, which the next
hand's prompt shows, after a fold, a showdown and a split pot."""

from __future__ import annotations

from marl_llm_envs import make
from marl_llm_envs.envs import kuhn_poker, leduc_holdem


def _second_hand_prompt(env_id: str, seed: int, moves: list[int]) -> tuple[str, dict]:
    env = make(env_id, action_mode="discrete", rounds=2)
    env.reset(seed=seed)
    cards = dict(env.unwrapped._cards)
    for move in moves:
        env.step(move)
    return env.observe(env.agent_selection)["text"], cards


def test_kuhn_fold_summary_shows_no_cards():
    text, _ = _second_hand_prompt("kuhn_poker-v0", 0, [kuhn_poker.BET, kuhn_poker.FOLD])
    assert "Last hand: Hand 1: player_1 folded; player_0 won 1 chips (no cards shown).\n" in text


def test_kuhn_showdown_summary_shows_both_cards_and_the_winner():
    text, cards = _second_hand_prompt("kuhn_poker-v0", 0, [kuhn_poker.CHECK, kuhn_poker.CHECK])
    c0, c1 = (kuhn_poker.CARDS[cards[a]] for a in ("player_0", "player_1"))
    winner = "player_0" if cards["player_0"] > cards["player_1"] else "player_1"
    assert f"Last hand: Hand 1: showdown, player_0 had {c0}, player_1 had {c1}; {winner} won 1 chips.\n" in text


def test_leduc_split_pot_summary_shows_the_public_card():
    def deal(seed):
        env = make("leduc_holdem-v0", action_mode="discrete")
        env.reset(seed=seed)
        return env.unwrapped._cards, env.unwrapped._public

    seed = next(s for s in range(100) if deal(s)[0]["player_0"] // 2 == deal(s)[0]["player_1"] // 2)
    text, _ = _second_hand_prompt("leduc_holdem-v0", seed, [leduc_holdem.CALL] * 4)    # check x 2, both rounds
    cards, public = deal(seed)
    rank, board = leduc_holdem.CARDS[cards["player_0"] // 2], leduc_holdem.CARDS[public // 2]
    assert (f"Last hand: Hand 1: showdown, player_0 had {rank}, player_1 had {rank}, public card {board}; equal "
            f"cards, the pot is split (0 chips each).\n") in text
