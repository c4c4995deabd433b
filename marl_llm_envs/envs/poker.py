"""What the poker games (kuhn_poker-v0, leduc_holdem-v0) share: a match of ``rounds`` hands."""

from __future__ import annotations

from typing import Any

from marl_llm_envs.core import TwoPlayerZeroSumEnv, check_int


class PokerMatchEnv(TwoPlayerZeroSumEnv):
    """A match of ``rounds`` hands: ``player_0`` acts first in hands 1, 3, 5, ... and ``player_1`` in hands 2, 4, ...;
    each hand's chips are that step's reward, and the match is decided by the sum (``infos[...]["chips"]`` at the
    end). A game sets ``max_hand_payoff`` and implements ``_deal()`` (a new hand from the env's RNG, setting
    ``self._first``) and ends each hand with :meth:`_close_hand`."""

    max_hand_payoff: float = 1.0

    def __init__(self, *, rounds: int = 1, **kwargs: Any) -> None:
        rounds = check_int("rounds", rounds, 1)
        self.rounds = rounds
        self.reward_range = (-self.max_hand_payoff * rounds, self.max_hand_payoff * rounds)
        super().__init__(rounds=rounds, **kwargs)

    def _return_before_a_move(self) -> tuple[float, float]:
        """Chips change hands at the end of a hand: before a move, a player has won or lost at most ``rounds - 1``
        hands' payoffs."""
        most = self.max_hand_payoff * (self.rounds - 1)
        return -most, most

    def _start(self) -> None:
        self._hand = 0
        self._chips = {"player_0": 0.0, "player_1": 0.0}
        self._last_showdown: tuple[bool, str] | None = None  # (went to showdown, public summary of the last hand)
        self._deal()

    def _deal(self) -> None:
        raise NotImplementedError

    def _first_player(self) -> str:
        return "player_0" if self._hand % 2 == 0 else "player_1"

    def _close_hand(self, winner: str | None, won: float, shown: str | None) -> None:
        """Pay the hand (``won`` chips from the loser to ``winner``; ``winner=None`` splits the pot), keep its public
        summary for the next prompts, then deal the next hand or end the match. ``shown``: the cards a showdown
        showed (``"player_0 had J, player_1 had Q"``), or None when a player folded."""
        result = "equal cards, the pot is split (0 chips each)" if winner is None else f"{winner} won {won:g} chips"
        if shown is not None:
            summary = f"Hand {self._hand + 1}: showdown, {shown}; {result}."
        else:
            summary = f"Hand {self._hand + 1}: {self._other(winner)} folded; {result} (no cards shown)."
        rewards = {"player_0": 0.0, "player_1": 0.0}
        if winner is not None:
            loser = self._other(winner)
            self._chips[winner] += won
            self._chips[loser] -= won
            rewards = {winner: won, loser: -won}
        self._last_showdown = (shown is not None, summary)
        self._hand += 1
        if self._hand >= self.rounds:
            self._finish(rewards, chips=dict(self._chips))
        else:
            self._give(rewards)
            self._deal()
