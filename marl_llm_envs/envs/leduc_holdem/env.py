"""Leduc hold'em: two players, six cards, two betting rounds, one public card.

| Import             | ``from marl_llm_envs import make; make("leduc_holdem-v0")``         |
|--------------------|---------------------------------------------------------------------|
| Family             | zero_sum                                                            |
| Agents             | ``player_0``, ``player_1`` (roles = seats; each player is its own team) |
| Action space       | text: ``Text``; discrete: ``Discrete(3)`` = fold, call (or check), raise (or bet) |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (30,)), [action_mask=Box(0, 1, (3,), int8)])`` |
| Reward range       | per hand -13 .. +13 chips; a match of N hands sums them              |
| Kwargs             | ``rounds=1``, ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

Rules (standard Leduc hold'em, as in OpenSpiel's ``leduc_poker``). The deck has six cards, two suits of J < Q < K;
suits never matter. Each hand, both players ante 1 chip and get one private card from the env's RNG. Betting round 1
is played, then one public card is dealt face up and betting round 2 is played; the same player acts first in both
rounds. With no bet to answer a player may check or bet; facing a bet, fold, call (match it) or raise (match it and
bet once more). A bet or raise is 2 chips in round 1 and 4 chips in round 2, and a round allows at most two of them
(a bet counts as the first), so after a bet and a raise the only moves are fold and call. A round ends when a bet is
called or both players check. At the showdown after round 2, a private card that pairs the public card beats any
other card; otherwise the higher card wins; equal cards split the pot (0 chips each). The winner of a hand (at a
showdown, or because the opponent folded) wins the chips the loser put in: 1 to 13. ``rounds=N`` plays a match of N
hands; ``player_0`` acts first in hands 1, 3, 5, ... and ``player_1`` in hands 2, 4, ...; the match is decided by
the sum of chips.

Observation. ``text`` is the prompt below. ``observation`` (30 floats): own card rank one-hot (3), public card rank
one-hot (3, zeros before it is dealt), "I act first this hand" (1), the betting so far as (round x position x {call
or check, raise or bet}) one-hot (2 x 4 x 2 = 16), own chips in the pot / 13 (1), opponent's chips in the pot / 13
(1), "facing a bet" (1), "the public card is dealt" (1), own chips won so far / (13 * rounds) (1), hands played /
rounds (1), "previous hand went to showdown and the opponent's card was shown" (1). The opponent's card is never in
an agent's observation, except the card shown at a completed showdown (in the summary of that hand).

Actions. Text mode: the moves are named by what they do now: ``[check]`` or ``[bet]`` with no bet to answer,
``[fold]``, ``[call]`` or ``[raise]`` facing a bet (the legal ones are listed in the prompt; the last bracketed move
in the reply counts; case is ignored; a move not legal now, such as ``[call]`` with nothing to call, is invalid).
Discrete mode: 0 = fold, 1 = call (check when there is no bet to answer), 2 = raise (bet when there is none yet),
with the action mask; fold is legal only facing a bet, raise only while the round has had fewer than two.

Rewards. The chips won in a hand are the step reward at the end of that hand; ``infos[agent]["team_reward"]`` is the
player's chips so far. Rewards sum to zero.

Invalid moves. ``invalid_move="penalty"`` (default): the match ends at once; the offender gets ``invalid_penalty``
(default -1) and the opponent its negation (zero-sum kept; the chips in the pot of the unfinished hand are not paid).
``"retry"``: the player is asked again (up to ``max_retries`` times) with the error in the prompt, then the penalty.
``"random"``: a uniformly random legal move.

Ablation. The null action is "never put chips in": an ablated player checks when it can and folds facing a bet.

The prompt (player_0, first hand, before any action)::

    You are player_0 in a game of Leduc hold'em (hand 1 of 1).
    Rules: the deck has six cards, two each of J < Q < K. Each hand both players ante 1 chip and get one private
    card. There are two betting rounds, with one public card dealt face up between them; the same player acts
    first in both. With no bet to answer you may [check] or [bet]. Facing a bet you may [fold] (give up the pot),
    [call] (put in chips to match it) or [raise] (match it and bet once more). A bet or raise is 2 chips in round 1
    and 4 chips in round 2, at most two per round (a bet and a raise). A round ends when a bet is called or both
    players check. At the showdown after round 2, a card that pairs the public card wins; otherwise the higher
    card wins; equal cards split the pot. The winner of a hand wins the chips the loser put in.
    You act first in both betting rounds of this hand.
    Your card: K
    Public card: not dealt yet
    Pot: 2 chips (you put in 1, your opponent 1).
    Betting round 1 (bets of 2 chips): (none)
    Your chips won so far: +0
    Your legal moves: [check], [bet]
    Reply with exactly one move in square brackets, for example [check].

Version history. v0: first version.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from marl_llm_envs.envs.poker import PokerMatchEnv
from marl_llm_envs.text import parse_bracketed

CARDS = "JQK"  # ranks; the deck has two cards of each rank: card c (0..5) has rank c // 2
ACTIONS = ["fold", "call", "raise"]
FOLD, CALL, RAISE = range(3)
LETTERS = "fcr"  # how a move is written in a betting sequence
RAISE_SIZES = (2, 4)  # bet / raise size in round 1 and round 2
MAX_RAISES = 2  # per round; a bet counts as the first
ANTE = 1
MAX_PUT_IN = ANTE + MAX_RAISES * sum(RAISE_SIZES)  # 13: the most a player can put in (and win) in a hand

DEALS = list(itertools.permutations(range(6), 3))  # (player_0's card, player_1's card, public card), uniform
TEXT_MOVES = ("fold", "check", "call", "bet", "raise")
_TEXT_INDEX = {name: i for i, name in enumerate(TEXT_MOVES)}
_TEXT_TO_MOVE = {"fold": FOLD, "check": CALL, "call": CALL, "bet": RAISE, "raise": RAISE}
_NAMES = {False: {CALL: "check", RAISE: "bet", FOLD: "fold"}, True: {FOLD: "fold", CALL: "call", RAISE: "raise"}}

RULES = (
    "Rules: the deck has six cards, two each of J < Q < K. Each hand both players ante 1 chip and get one private\n"
    "card. There are two betting rounds, with one public card dealt face up between them; the same player acts\n"
    "first in both. With no bet to answer you may [check] or [bet]. Facing a bet you may [fold] (give up the pot),\n"
    "[call] (put in chips to match it) or [raise] (match it and bet once more). A bet or raise is 2 chips in round 1\n"
    "and 4 chips in round 2, at most two per round (a bet and a raise). A round ends when a bet is called or both\n"
    "players check. At the showdown after round 2, a card that pairs the public card wins; otherwise the higher\n"
    "card wins; equal cards split the pot. The winner of a hand wins the chips the loser put in."
)


# ---------------------------------------------------------------- the rules as pure functions (shared with reference)


def rank(card: int) -> int:
    """The rank (0 = J, 1 = Q, 2 = K) of a card 0..5."""
    return card // 2


def facing_bet(seq: str) -> bool:
    """Whether the player to move in a round with betting ``seq`` (letters ``c``/``r``) faces a bet."""
    return seq.endswith("r")


def legal_moves(seq: str) -> list[int]:
    """The legal moves (FOLD, CALL, RAISE indices) after betting ``seq`` in the current round."""
    if facing_bet(seq):
        return [FOLD, CALL, RAISE] if seq.count("r") < MAX_RAISES else [FOLD, CALL]
    return [CALL, RAISE]


def round_over(seq: str) -> bool:
    """A round ends with a call of a bet or a second check (a fold ends the hand)."""
    return len(seq) >= 2 and seq[-1] == "c"


def contributions(betting: tuple[str, ...] | list[str]) -> list[int]:
    """Chips put in by [first player, second player] of a hand after ``betting`` (one string per round)."""
    put = [ANTE, ANTE]
    for r, seq in enumerate(betting):
        for i, letter in enumerate(seq):
            p = i % 2
            if letter == "r":
                put[p] = put[1 - p] + RAISE_SIZES[r]
            elif letter == "c":
                put[p] = put[1 - p]
    return put


def showdown(rank_a: int, rank_b: int, public_rank: int) -> int:
    """+1 if a card of rank ``rank_a`` beats one of ``rank_b`` given the public card's rank, -1 if it loses, 0 tie."""
    pair_a, pair_b = rank_a == public_rank, rank_b == public_rank
    if pair_a != pair_b:
        return 1 if pair_a else -1
    return (rank_a > rank_b) - (rank_a < rank_b)


def move_name(seq: str, move: int) -> str:
    """The name of ``move`` made after betting ``seq`` in a round (check/bet with no bet to answer)."""
    return _NAMES[facing_bet(seq)][move]


class raw_env(PokerMatchEnv):
    env_id = "leduc_holdem-v0"
    version = 0
    vector_size = 30
    max_hand_payoff = float(MAX_PUT_IN)
    metadata = {"render_modes": ["human", "ansi"], "name": "leduc_holdem_v0", "is_parallelizable": False}
    _mutable = ("_betting", "_chips")

    def action_names(self, agent: str) -> list[str]:
        return ACTIONS

    # -------------------------------------------------------------- game
    def _deal(self) -> None:
        p0, p1, public = DEALS[self._random_index(len(DEALS))]
        self._cards = {"player_0": p0, "player_1": p1}
        self._public = public  # dealt face down now, shown once round 1 is over
        self._first = self._first_player()
        self._betting: list[str] = [""]  # one string of moves (f/c/r) per round started
        self.agent_selection = self._first

    def _seq(self) -> str:
        return self._betting[-1]

    def _public_shown(self) -> bool:
        return len(self._betting) > 1

    def put_in(self) -> dict[str, int]:
        """Chips each player has put in the pot in the current hand (public information)."""
        first, second = contributions(self._betting)
        return {self._first: first, self._other(self._first): second}

    def info_state(self, agent: str) -> tuple[int, int | None, tuple[str, ...]]:
        """What ``agent`` knows of the current hand: (own card rank, public card rank or None, betting per round as
        strings of ``c`` (check/call) and ``r`` (bet/raise), ``f`` for a fold). Reference policies read this."""
        public = rank(self._public) if self._public_shown() else None
        return rank(self._cards[agent]), public, tuple(self._betting)

    def _legal_ids(self, agent: str) -> list[int]:
        return legal_moves(self._seq())

    def _null_move(self, agent: str) -> int:
        return FOLD if facing_bet(self._seq()) else CALL

    def _apply(self, agent: str, move: int) -> None:
        seq = self._seq() + LETTERS[move]
        self._betting[-1] = seq
        if move == FOLD:
            self._end_hand(self._other(agent), showdown_=False)
        elif round_over(seq):
            if len(self._betting) == 1:
                self._betting.append("")
                self.agent_selection = self._first
            else:
                c, pub = self._cards, rank(self._public)
                result = showdown(rank(c["player_0"]), rank(c["player_1"]), pub)
                self._end_hand({1: "player_0", -1: "player_1", 0: None}[result], showdown_=True)
        else:
            self.agent_selection = self._other(agent)

    def _end_hand(self, winner: str | None, showdown_: bool) -> None:
        c = self._cards
        won = 0.0 if winner is None else float(self.put_in()[self._other(winner)])
        shown = (f"player_0 had {CARDS[rank(c['player_0'])]}, player_1 had {CARDS[rank(c['player_1'])]}, public card "
                 f"{CARDS[rank(self._public)]}") if showdown_ else None
        self._close_hand(winner, won, shown)

    # -------------------------------------------------------------- text moves
    def legal_actions(self, agent: str | None = None) -> list[str]:
        """The legal moves as text, named by what they do now: ``["[check]", "[bet]"]`` or ``["[fold]", "[call]",
        "[raise]"]`` (the discrete index of ``[check]`` is that of call, of ``[bet]`` that of raise)."""
        if self.episode_seed is None or (agent is not None and agent not in self.possible_agents):
            return super().legal_actions(agent)  # raises the before-reset or the unknown-agent error
        agent = self.agent_selection if agent is None else agent
        if agent not in self.agents or self.terminations[agent] or self.truncations[agent]:
            return []
        if agent != self.agent_selection:
            return []
        seq = self._seq()
        return [f"[{move_name(seq, m)}]" for m in legal_moves(seq)]

    def _interpret(self, agent: str, action: Any) -> tuple[Any, str | None]:
        if self.action_mode == "discrete" or not isinstance(action, str):
            return super()._interpret(agent, action)
        index, reason = parse_bracketed(action, _TEXT_INDEX)
        if reason is not None:
            return None, reason
        name = TEXT_MOVES[index]
        legal = self.legal_actions(agent)
        if f"[{name}]" not in legal:
            return None, f"action '[{name}]' is not legal for {agent} now; legal: {', '.join(legal)}"
        return _TEXT_TO_MOVE[name], None

    def _illegal(self, agent: str, name: str) -> str:
        seq = self._seq()
        legal = ", ".join(f"{m} ([{move_name(seq, m)}])" for m in legal_moves(seq))
        return f"action {ACTIONS.index(name)} ({name}) is not legal for {agent} now; legal: {legal}"

    # -------------------------------------------------------------- observations
    def _betting_lines(self, agent: str) -> str:
        lines = []
        for r, seq in enumerate(self._betting):
            moves = []
            for i, letter in enumerate(seq):
                actor = self._first if i % 2 == 0 else self._other(self._first)
                name = move_name(seq[:i], LETTERS.index(letter))
                moves.append(f"{'you' if actor == agent else 'opponent'}: [{name}]")
            lines.append(f"Betting round {r + 1} (bets of {RAISE_SIZES[r]} chips): {', '.join(moves) or '(none)'}")
        return "\n".join(lines)

    def _text(self, agent: str) -> str:
        other = self._other(agent)
        put = self.put_in()
        last = f"Last hand: {self._last_showdown[1]}\n" if self._last_showdown is not None else ""
        first = ("You act first" if self._first == agent else "Your opponent acts first") + \
            " in both betting rounds of this hand."
        public = CARDS[rank(self._public)] if self._public_shown() else "not dealt yet"
        legal = self.legal_actions(agent)
        turn = self._turn_text(agent, example=legal[1] if legal and legal[0] == "[fold]" else None)
        return (
            f"You are {agent} in a game of Leduc hold'em (hand {min(self._hand, self.rounds - 1) + 1} of "
            f"{self.rounds}).\n{RULES}\n{last}{first}\nYour card: {CARDS[rank(self._cards[agent])]}\n"
            f"Public card: {public}\n"
            f"Pot: {put['player_0'] + put['player_1']} chips (you put in {put[agent]}, your opponent {put[other]}).\n"
            f"{self._betting_lines(agent)}\n"
            f"Your chips won so far: {self._chips[agent]:+g}\n{turn}"
        )

    def _vector(self, agent: str, out: np.ndarray) -> None:
        own, public, betting = self.info_state(agent)
        out[own] = 1.0
        if public is not None:
            out[3 + public] = 1.0
        out[6] = 1.0 if self._first == agent else 0.0
        for r, seq in enumerate(betting):
            for i, letter in enumerate(seq[:4]):
                if letter != "f":
                    out[7 + 8 * r + 2 * i + (1 if letter == "r" else 0)] = 1.0
        put = self.put_in()
        out[23] = put[agent] / MAX_PUT_IN
        out[24] = put[self._other(agent)] / MAX_PUT_IN
        out[25] = 1.0 if facing_bet(betting[-1]) else 0.0
        out[26] = 1.0 if public is not None else 0.0
        out[27] = self._chips[agent] / (MAX_PUT_IN * self.rounds)
        out[28] = self._hand / self.rounds
        out[29] = 1.0 if self._last_showdown is not None and self._last_showdown[0] else 0.0

    def _render(self) -> str:
        c = self._cards
        betting = " / ".join(seq or "-" for seq in self._betting)
        public = CARDS[rank(self._public)] + ("" if self._public_shown() else " (face down)")
        return (f"Leduc hold'em hand {min(self._hand, self.rounds - 1) + 1}/{self.rounds} | player_0: "
                f"{CARDS[rank(c['player_0'])]}  player_1: {CARDS[rank(c['player_1'])]}  public: {public} | betting: "
                f"{betting} | first: {self._first} | chips: {self._chips['player_0']:+g} / "
                f"{self._chips['player_1']:+g} | {self._to_move()}")


env = raw_env
