"""Kuhn poker: two players, three cards, one bet.

| Import             | ``from marl_llm_envs import make; make("kuhn_poker-v0")``          |
|--------------------|---------------------------------------------------------------------|
| Family             | zero_sum                                                            |
| Agents             | ``player_0``, ``player_1`` (roles = seats; each player is its own team) |
| Action space       | text: ``Text``; discrete: ``Discrete(4)`` = check, bet, call, fold   |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (14,)), [action_mask=Box(0, 1, (4,), int8)])`` |
| Reward range       | per hand -2 .. +2 chips; a match of N hands sums them                |
| Kwargs             | ``rounds=1``, ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

Rules (standard Kuhn poker). The deck is J < Q < K. Each hand, both players ante 1 chip into the pot and get one card
from the env's RNG; the third card is not used. The first player may check or bet 1 chip. After a check, the second
player may check (showdown for a pot of 2) or bet 1. Facing a bet, a player calls (puts in 1; showdown for a pot of 4)
or folds (the bettor takes the pot of 3). At a showdown the higher card takes the pot. Bets and calls go into the pot
(unlike TextArena's and SPIRAL's Kuhn poker), so a hand pays +1/-1 after a fold or a checked showdown and +2/-2 after a
called bet. ``rounds=N`` plays a match of N hands; ``player_0`` acts first in hands 1, 3, 5, ... and ``player_1`` in
hands 2, 4, ...; the match is decided by the sum of chips.

Observation. ``text`` is the prompt below. ``observation`` (14 floats): own card one-hot (3), "I act first this hand"
(1), the betting so far as (position x {check, bet}) one-hot (3 x 2 = 6), own chips won so far / (2 * rounds) (1),
hands played / rounds (1), "facing a bet" (1), "previous hand went to showdown and the opponent's card was shown"
(1). The opponent's card is never in an agent's observation, except the card shown at a completed showdown.

Actions. Text mode: ``[check]``, ``[bet]``, ``[call]`` or ``[fold]`` anywhere in the reply (the last bracketed move
counts; case is ignored). Discrete mode: 0 = check, 1 = bet, 2 = call, 3 = fold, with the action mask.

Rewards. The chips won in a hand are the step reward at the end of that hand; ``infos[agent]["team_reward"]`` is the
player's chips so far. Rewards sum to zero.

Invalid moves. ``invalid_move="penalty"`` (default): the match ends at once; the offender gets ``invalid_penalty``
(default -1) and the opponent its negation (zero-sum kept). ``"retry"``: the player is asked again (up to
``max_retries`` times) with the error in the prompt, then the penalty. ``"random"``: a uniformly random legal move.

Ablation. The null action is "never put chips in": an ablated player checks when it can and folds facing a bet.

The prompt (player_0, first hand, before any action)::

    You are player_0 in a game of Kuhn poker (hand 1 of 1).
    Rules: the deck has three cards, J < Q < K. Each hand both players ante 1 chip and get one card; the third card
    is not used. With no bet to answer you may [check] or [bet] (put 1 more chip in the pot). Facing a bet you may
    [call] (put 1 chip in) or [fold] (give up the pot). If both players check, or a bet is called, the higher card
    wins the pot. A hand pays the pot to its winner: +1 after a fold or two checks, +2 after a called bet.
    Your card: K
    Pot: 2 chips (you put in 1, your opponent 1).
    Betting so far this hand: (none)
    Your chips won so far: +0
    Your legal moves: [check], [bet]
    Reply with exactly one move in square brackets, for example [check].

For scripted players: ``env.info_state(agent)`` is what the agent's prompt shows as data: its card (0 = J, 1 = Q,
2 = K) and the current hand's moves (indices into the action list).

Version history. v0: first version.
"""

from __future__ import annotations

import itertools

import numpy as np

from marl_llm_envs.envs.poker import PokerMatchEnv

CARDS = "JQK"
ACTIONS = ["check", "bet", "call", "fold"]
CHECK, BET, CALL, FOLD = range(4)

DEALS = list(itertools.permutations(range(3), 2))  # (player_0's card, player_1's card), uniformly at random
RULES = (
    "Rules: the deck has three cards, J < Q < K. Each hand both players ante 1 chip and get one card; the third card\n"
    "is not used. With no bet to answer you may [check] or [bet] (put 1 more chip in the pot). Facing a bet you may\n"
    "[call] (put 1 chip in) or [fold] (give up the pot). If both players check, or a bet is called, the higher card\n"
    "wins the pot. A hand pays the pot to its winner: +1 after a fold or two checks, +2 after a called bet."
)


class raw_env(PokerMatchEnv):
    env_id = "kuhn_poker-v0"
    version = 0
    vector_size = 14
    max_hand_payoff = 2.0
    metadata = {"render_modes": ["human", "ansi"], "name": "kuhn_poker_v0", "is_parallelizable": False}
    _mutable = ("_history", "_put_in", "_chips")

    def action_names(self, agent: str) -> list[str]:
        return ACTIONS

    # -------------------------------------------------------------- game
    def _deal(self) -> None:
        p0, p1 = DEALS[self._random_index(len(DEALS))]
        self._cards = {"player_0": p0, "player_1": p1}
        self._first = self._first_player()
        self._history: list[tuple[str, int]] = []
        self._put_in = {"player_0": 1, "player_1": 1}
        self.agent_selection = self._first

    def _facing_bet(self) -> bool:
        return bool(self._history) and self._history[-1][1] == BET

    def info_state(self, agent: str) -> tuple[int, tuple[int, ...]]:
        """``agent``'s information state in the current hand, as its prompt shows it: its card (0 = J, 1 = Q, 2 = K)
        and the hand's moves so far (indices into ``ACTIONS``, in order)."""
        return self._cards[agent], tuple(move for _, move in self._history)

    def _legal_ids(self, agent: str) -> list[int]:
        return [CALL, FOLD] if self._facing_bet() else [CHECK, BET]

    def _null_move(self, agent: str) -> int:
        return FOLD if self._facing_bet() else CHECK

    def _apply(self, agent: str, move: int) -> None:
        other = self._other(agent)
        self._history.append((agent, move))
        if move == BET or move == CALL:
            self._put_in[agent] += 1
        if move == FOLD:
            self._end_hand(winner=other, showdown=False)
        elif move == CALL or (move == CHECK and len(self._history) == 2):
            c = self._cards
            self._end_hand(winner="player_0" if c["player_0"] > c["player_1"] else "player_1", showdown=True)
        else:
            self.agent_selection = other

    def _end_hand(self, winner: str, showdown: bool) -> None:
        c = self._cards
        shown = f"player_0 had {CARDS[c['player_0']]}, player_1 had {CARDS[c['player_1']]}" if showdown else None
        self._close_hand(winner, float(self._put_in[self._other(winner)]), shown)

    # -------------------------------------------------------------- observations
    def _text(self, agent: str) -> str:
        other = self._other(agent)
        put_in = self._put_in
        last = f"Last hand: {self._last_showdown[1]}\n" if self._last_showdown is not None else ""
        betting = ", ".join(f"{'you' if a == agent else 'opponent'}: [{ACTIONS[m]}]" for a, m in self._history)
        turn = self._turn_text(agent)
        return (
            f"You are {agent} in a game of Kuhn poker (hand {min(self._hand, self.rounds - 1) + 1} of {self.rounds}).\n"
            f"{RULES}\n{last}Your card: {CARDS[self._cards[agent]]}\n"
            f"Pot: {put_in['player_0'] + put_in['player_1']} chips (you put in {put_in[agent]}, your opponent "
            f"{put_in[other]}).\nBetting so far this hand: {betting or '(none)'}\n"
            f"Your chips won so far: {self._chips[agent]:+g}\n{turn}"
        )

    def _vector(self, agent: str, out: np.ndarray) -> None:
        # ``out`` is zeroed: only the non-zero entries are written
        out[self._cards[agent]] = 1.0
        if self._first == agent:
            out[3] = 1.0
        history = self._history
        for i, (_, move) in enumerate(history[:3]):
            out[4 + 2 * i + (1 if move == BET or move == CALL else 0)] = 1.0
        chips, hand = self._chips[agent], self._hand
        if chips:
            out[10] = chips / (2.0 * self.rounds)
        if hand:
            out[11] = hand / self.rounds
        if self._facing_bet():
            out[12] = 1.0
        if self._last_showdown is not None and self._last_showdown[0]:
            out[13] = 1.0

    def _render(self) -> str:
        c = self._cards
        betting = ", ".join(f"{a}: [{ACTIONS[m]}]" for a, m in self._history) or "(none)"
        return (f"Kuhn poker hand {min(self._hand, self.rounds - 1) + 1}/{self.rounds} | player_0: "
                f"{CARDS[c['player_0']]}  player_1: {CARDS[c['player_1']]} | betting: {betting} | "
                f"chips: {self._chips['player_0']:+g} / {self._chips['player_1']:+g} | {self._to_move()}")


env = raw_env
