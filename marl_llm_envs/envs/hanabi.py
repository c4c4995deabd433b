"""Hanabi: the cooperative card game, with the rules of DeepMind's Hanabi Learning Environment (HLE), in pure Python.

| Import             | ``make("hanabi-v1")``, ``make("mini_hanabi-v1")``, ``make("simple_hanabi-v1")``, ``make("hanabi_small-v1")`` |
|--------------------|---------------------------------------------------------------------|
| Family             | cooperative (one team, ``team``)                                     |
| Agents             | ``player_0`` ... ``player_{players-1}`` (role = seat); ``player_0`` moves first |
| Action space       | text: ``Text``; discrete: ``Discrete(2H + (P-1)(C+R))`` in HLE order (see Actions) |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (N,)), [action_mask])``, N = HLE's canonical encoding size (658 for the full 2-player game) |
| Reward range       | episode return ``min(0, invalid_penalty)`` .. ``max_score`` (= colors x ranks) |
| Kwargs             | ``players=2`` (2..5), ``colors`` (1..5), ``ranks`` (1..5), ``hand_size`` (1..8), ``max_information_tokens`` (0..1000), ``max_life_tokens`` (1..1000), ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

Presets (one class, registered four times; every parameter can be overridden, e.g.
``make("hanabi-v1", colors=3, ranks=3)``; ``players`` defaults to 2):

| id                 | colors | ranks | hand | info | lives | max_score | attainable_max_score (2 players) |
|--------------------|--------|-------|------|------|-------|-----------|------------------------|
| ``mini_hanabi-v1``   | 2 | 2 | 3 | 3 | 3 | 4  | 4  (MARSHAL's Mini)    |
| ``simple_hanabi-v1`` | 3 | 2 | 5 | 8 | 3 | 6  | 4  (MARSHAL's Simple)  |
| ``hanabi_small-v1``  | 2 | 5 | 2 | 3 | 1 | 10 | 10 (HLE's Hanabi-Small) |
| ``hanabi-v1``        | 5 | 5 | 5 | 8 | 3 | 25 | 25 (HLE's full game)   |

An instance's ``env_id`` is the preset its card/token parameters match (``players`` aside), else ``hanabi-v1``;
its transcript records every parameter, so :func:`replay` rebuilds it exactly either way. ``max_score`` is the
nominal maximum, colors x ranks. ``attainable_max_score`` is ``min(max_score, D + players)`` with D = the cards left
in the deck after the deal: every play or discard draws one card while the deck lasts, and once the last card is
drawn each player has exactly one more turn, so at most D + players cards are ever played. MARSHAL's Simple Hanabi
(12 cards, two hands of 5, D = 2) can therefore never score more than 4 of its nominal 6. For the four presets with
2 players the bound is reached on some deal (checked by a perfect-information search in ``tests/envs/test_hanabi.py``).

Rules (HLE exactly). Colours red, yellow, green, white, blue (the first ``colors``); ranks 1..``ranks``. Each colour
has three 1s, one card of the top rank and two of every rank between (with ``ranks=1``: three 1s). Each player is
dealt ``hand_size`` cards (player_0 first); a player sees every other hand but never its own. The team starts with
``max_information_tokens`` information tokens and ``max_life_tokens`` life tokens. On its turn a player does one of:

* play a card from its hand: if its rank is the next one on its colour's firework (1 on an empty one) it is added
  there; completing a firework (playing the top rank) also returns an information token, up to the maximum.
  Otherwise it is a misplay: the card is discarded and the team loses a life token;
* discard a card (illegal while the information tokens are full); this returns an information token;
* spend an information token to reveal to another player all its cards of one colour, or all its cards of one rank;
  the hint must touch at least one card (so the legal hints are every colour and every rank in that player's hand).

After a play or discard the player draws from the deck (the new card goes to the last slot; slots after the removed
card move down one, so slot 0 is the oldest card). The game ends when the last life token is lost (the score is then
0), when every firework is complete, or when, after the last card has been drawn, every player has had exactly one
more turn (the player who drew the last card included, at its next turn). The score is the sum of the firework
heights.

Observation. ``text`` is the prompt below: the rules, the information and life tokens, the fireworks, the deck size,
the discard pile, every partner's hand with what that partner knows about each card from hints, the agent's own hand
only as its hint knowledge (never its cards), whose turn it is and the last moves (one per player, at most).
``observation`` is HLE's canonical encoding (every entry 0 or 1), in HLE's order: partners' hands (one-hot card per
slot, partners in seat order from the agent) and a "hand is short" bit per player; the board (deck size
thermometer, fireworks one-hot per colour, information and life token thermometers); the discard pile (a thermometer
per card type); the last move (acting player offset, move type, target offset, colour, rank, slots the hint touched,
slot played or discarded, the card, play succeeded, token gained); and the card knowledge of every hand, the agent's
first (per slot: plausible cards, revealed colour, revealed rank). The agent's own cards are in neither.
Global state (``env.unwrapped.state()``, for a centralized critic; never part of an agent's observation): the union
of the private views, ``players * hand_size * colors * ranks + vector_size - (players - 1) * hand_size * colors *
ranks`` entries: every hand's cards (one-hot card per slot, seats in order from player_0), then player_0's observation
from its "hand is short" bits on (board, discards, last move and every hand's hint knowledge, which all players see).
A policy reads the same information without touching hidden state through ``env.unwrapped.card_knowledge(agent)``
(hint knowledge of a hand, public for every hand), ``visible_hands(agent)`` (the partners' cards) and
``public_state()`` (tokens, fireworks, deck size, discards, score); :func:`marl_llm_envs.reference.hanabi.rule_bot`
is built on them.

Actions. HLE's move list, fixed per game size: ``discard i`` (i = 0..H-1), ``play i``, then ``hint player_j COLOUR``
for each partner in seat order after the agent (offset 1 first) and each colour, then ``hint player_j RANK`` for each
partner and rank (ranks 1-based). Text mode: the move in square brackets, e.g. ``[play 0]``, ``[discard 2]``,
``[hint player_1 red]``, ``[hint player_1 3]`` (case is ignored; the last such move in the reply counts). Discrete
mode: the index in that list, with the action mask.

Rewards. Every step, every player gets the change in the team's score (a successful play +1; losing the last life
token: minus the score so far, so the episode's return is the final score). ``infos[agent]["team_reward"]`` is the
score so far. The final infos add ``score``, ``lives_left`` and ``outcome`` ("all stacks complete", "out of lives",
"deck exhausted" or "invalid move").

Invalid moves. ``invalid_move="penalty"`` (default): the game ends as a loss: that step's reward brings the team's
return to 0 (minus the score so far) and adds ``invalid_penalty`` (default -1), so the episode's return is
``invalid_penalty``; the final infos say ``outcome="invalid move"``, ``score=0`` and name the ``offender``.
``"retry"``: asked again up to ``max_retries`` times with the error shown, then the penalty. ``"random"``: a
uniformly random legal move.

Ablation. The null action is "pass the turn as cheaply as the rules allow": an ablated player discards its oldest
card (slot 0) when discarding is legal, otherwise gives the first legal hint in the action list, otherwise plays
slot 0. Its past moves are not undone.

The prompt (``mini_hanabi-v1``, seed 0, player_0, first move)::

    You are player_0 in a game of Hanabi with 2 players (player_0, player_1). It is a cooperative game: the whole
    team shares one score.
    Rules: the deck has 2 colours (red, yellow) and ranks 1 to 2; each colour has three 1s and one 2 (8 cards). Each
    player holds 3 cards and sees everyone's cards except its own. The team builds one firework per colour, from 1
    up to 2, each card one rank above the last. On your turn do exactly one of:
    - [play i]: play the card in your slot i. If it is the next rank of its colour's firework it is added (+1 point;
      completing a firework also returns one information token, up to the maximum of 3); otherwise it is a misplay:
      the card is discarded and the team loses one life token.
    - [discard i]: discard the card in your slot i and regain one information token. Not allowed while all 3
      information tokens are available.
    - [hint player_j COLOUR] or [hint player_j RANK], e.g. [hint player_1 red] or [hint player_1 1]: spend one
      information token to show player_j all of its cards of that colour (or rank). A hint must touch at least one
      card.
    After a play or discard you draw a new card into your last slot while the deck lasts; slot 0 is your oldest
    card. The game ends when the last life token is lost (the score is then 0), when every firework is complete, or
    when, after the last card has been drawn, every player has had exactly one more turn. The score is the sum of
    the firework heights (at most 4).
    Information tokens: 3 of 3. Life tokens: 3 of 3. Deck: 2 cards left.
    Fireworks: red 0, yellow 0. Score: 0.
    Discard pile: (empty)
    player_1's hand (what player_1 knows from hints in parentheses):
      slot 0: Y1 (colour ?, rank ?)
      slot 1: Y1 (colour ?, rank ?)
      slot 2: R1 (colour ?, rank ?)
    Your hand (you cannot see your cards; what you know from hints):
      slot 0: colour ?, rank ?
      slot 1: colour ?, rank ?
      slot 2: colour ?, rank ?
    Moves so far: (none)
    It is your turn. Your legal moves: [play 0], [play 1], [play 2], [hint player_1 red], [hint player_1 yellow],
    [hint player_1 1]
    Reply with exactly one move in square brackets, for example [play 0].

Version history.

* v1: the numeric observation's last-action "information token gained" bit is set only for a play that completed a
  firework, as HLE's encoder sets it (v0 also set it after every discard that returned a token). Prompts and rules
  are unchanged.
* v0: first version.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from marl_llm_envs.core import TextEnv, check_int

COLOR_NAMES = ("red", "yellow", "green", "white", "blue")
COLOR_LETTERS = "RYGWB"
DISCARD, PLAY, HINT_COLOR, HINT_RANK = range(4)
MOVE_TYPES = ("discard", "play", "hint colour", "hint rank")

PRESETS: dict[str, dict[str, int]] = {
    "mini_hanabi-v1": dict(colors=2, ranks=2, hand_size=3, max_information_tokens=3, max_life_tokens=3),
    "simple_hanabi-v1": dict(colors=3, ranks=2, hand_size=5, max_information_tokens=8, max_life_tokens=3),
    "hanabi_small-v1": dict(colors=2, ranks=5, hand_size=2, max_information_tokens=3, max_life_tokens=1),
    "hanabi-v1": dict(colors=5, ranks=5, hand_size=5, max_information_tokens=8, max_life_tokens=3),
}


# Memo tables of pure functions of their keys (a hand's hint moves, a hand's knowledge bits), shared by every env of
# the process: each key starts with the game's geometry, and an entry never changes once written (clones and envs
# share them safely, as they share the rules). Bounded: past the bound the value is computed on every call.
_MEMO: dict[tuple, tuple[int, ...] | tuple[tuple[int, ...], tuple[int, ...]]] = {}
MAX_TOKENS = 1000      # max_information_tokens, max_life_tokens: each is that many entries of the vector
TOKENS_WHY = "the observation vector encodes the tokens in unary"
_MEMO_SIZE = 10_000    # at most about 17 MB (full Hanabi: about 1.7 kB an entry)


def card_count(rank: int, ranks: int) -> int:
    """Copies of each card of a colour, as HLE's ``NumberCardInstances``: 3 for rank 0, 1 for the top, 2 between."""
    if rank == 0:
        return 3
    if rank == ranks - 1:
        return 1
    return 2


_KEPT_TEXTS = 50_000     # the most move texts, and turn texts, an env and its clones keep (a few MB each)


def _wrap(text: str, width: int = 112) -> str:
    """Greedy word wrap that keeps existing line breaks (and the leading ``- `` of list items). A paragraph that fits
    and does not start with a space is what :func:`_wrap_words` gives it (no break; only leading spaces would be
    dropped), so it passes as it is."""
    out = []
    for para in text.split("\n"):
        out.append(para if len(para) <= width and not para.startswith(" ") else _wrap_words(para, width))
    return "\n".join(out)


def _wrap_words(para: str, width: int) -> str:
    """One paragraph wrapped word by word (a continuation line of a ``- `` list item is indented by two spaces)."""
    out = []
    line = ""
    for word in para.split(" "):
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = ("  " if para.startswith("- ") else "") + word
        else:
            line = f"{line} {word}" if line else word
    out.append(line)
    return "\n".join(out)


class raw_env(TextEnv):
    env_id = "hanabi-v1"
    version = 1
    family = "cooperative"
    metadata = {"render_modes": ["human", "ansi"], "name": "hanabi_v1", "is_parallelizable": False}
    _mutable = ("_hands", "_know", "_fireworks", "_discards", "_moves")

    def __init__(self, *, players: int = 2, colors: int = 5, ranks: int = 5, hand_size: int = 5,
                 max_information_tokens: int = 8, max_life_tokens: int = 3, **kwargs: Any) -> None:
        P = check_int("players", players, 2, 5)
        C = check_int("colors", colors, 1, 5)
        R = check_int("ranks", ranks, 1, 5)
        H = check_int("hand_size", hand_size, 1, 8)
        info = check_int("max_information_tokens", max_information_tokens, 0, MAX_TOKENS, TOKENS_WHY)
        lives = check_int("max_life_tokens", max_life_tokens, 1, MAX_TOKENS, TOKENS_WHY)
        self.per_color = sum(card_count(r, R) for r in range(R))
        self.deck_size = C * self.per_color
        if P * H > self.deck_size:
            raise ValueError(f"{P} hands of {hand_size} cards need {P * H} cards, but the deck has only "
                             f"{self.deck_size} ({C} colours x {self.per_color} cards)")
        self.players, self.colors, self.ranks, self.hand_size = P, C, R, H
        self.max_information_tokens, self.max_life_tokens = info, lives
        params = dict(colors=C, ranks=R, hand_size=H, max_information_tokens=info, max_life_tokens=lives)
        self.env_id = next((k for k, v in PRESETS.items() if v == params), "hanabi-v1")
        self.max_score = C * R
        self.attainable_max_score = min(self.max_score, self.deck_size - P * H + P)
        self.possible_agents = [f"player_{i}" for i in range(P)]
        self._seats = {a: i for i, a in enumerate(self.possible_agents)}    # player -> seat (static)
        self.roles = {a: a for a in self.possible_agents}
        self.teams = {a: "team" for a in self.possible_agents}
        self._full_deck = tuple(c * R + r for c in range(C) for r in range(R) for _ in range(card_count(r, R)))
        # the move table (HLE order): (type, slot or offset, colour or rank)
        table = [(DISCARD, i, -1) for i in range(H)] + [(PLAY, i, -1) for i in range(H)]
        table += [(HINT_COLOR, k, c) for k in range(1, P) for c in range(C)]
        table += [(HINT_RANK, k, r) for k in range(1, P) for r in range(R)]
        self._table = table
        self._names = {}
        for p, agent in enumerate(self.possible_agents):
            names = []
            for kind, a, b in table:
                if kind == DISCARD:
                    names.append(f"discard {a}")
                elif kind == PLAY:
                    names.append(f"play {a}")
                elif kind == HINT_COLOR:
                    names.append(f"hint player_{(p + a) % P} {COLOR_NAMES[b]}")
                else:
                    names.append(f"hint player_{(p + a) % P} {b + 1}")
            self._names[agent] = names
        self._layout()
        self._headers: dict[str, str] = {}  # seat -> static prompt header (rules never change in a game)
        self._know_texts: dict[tuple[int, int], str] = {}   # (colour mask, rank mask) -> _know_text (shared by clones)
        self._move_texts: dict[tuple[tuple, str], str] = {}  # (move record, viewer) -> _move_text (shared by clones)
        self._turn_texts: dict[tuple, str] = {}   # (seat, legal ids, turns left once the deck is empty) -> its turn
        super().__init__(players=P, **params, **kwargs)
        self.reward_range = (min(0.0, self.invalid_penalty), float(self.max_score))

    # -------------------------------------------------------------- static layout of the canonical encoding
    def _layout(self) -> None:
        P, C, R, H = self.players, self.colors, self.ranks, self.hand_size
        CR = C * R
        o = {}
        n = 0
        o["hands"] = n; n += (P - 1) * H * CR
        o["short"] = n; n += P
        o["deck"] = n; n += self.deck_size - P * H
        o["fireworks"] = n; n += CR
        o["info"] = n; n += self.max_information_tokens
        o["life"] = n; n += self.max_life_tokens
        o["discards"] = n; n += self.deck_size
        o["la_player"] = n; n += P
        o["la_type"] = n; n += 4
        o["la_target"] = n; n += P
        o["la_color"] = n; n += C
        o["la_rank"] = n; n += R
        o["la_reveal"] = n; n += H
        o["la_slot"] = n; n += H
        o["la_card"] = n; n += CR
        o["la_scored"] = n; n += 1
        o["la_token"] = n; n += 1
        o["know"] = n; n += P * H * (CR + C + R)
        self._off = o
        self.vector_size = n
        # start of each card type's thermometer in the discard section
        starts, s = [], 0
        for c in range(C):
            for r in range(R):
                starts.append(s)
                s += card_count(r, R)
        self._discard_start = starts
        # what the memo tables' keys start with: everything the layout and the move table depend on
        self._geometry = (P, C, R, H, self.max_information_tokens, self.max_life_tokens, self.vector_size)

    def action_names(self, agent: str) -> list[str]:
        return self._names[agent]

    # -------------------------------------------------------------- game state
    def _start(self) -> None:
        order = self.np_random.permutation(len(self._full_deck)).tolist()
        full_deck = self._full_deck
        self._deck = tuple([full_deck[i] for i in order])  # drawn from the front
        self._pos = 0
        full = (1 << self.colors) - 1, (1 << self.ranks) - 1, -1, -1
        self._fresh = full
        hands, know = [], []
        for _ in range(self.players):
            hands.append(self._deck[self._pos:self._pos + self.hand_size])
            know.append((full,) * self.hand_size)
            self._pos += self.hand_size
        self._hands: list[tuple[int, ...]] = hands
        # per slot: (plausible colour bitmask, plausible rank bitmask, revealed colour or -1, revealed rank or -1)
        self._know: list[tuple[tuple[int, int, int, int], ...]] = know
        self._fireworks = [0] * self.colors
        self._discards: list[int] = []
        self._moves: list[tuple] = []   # (player, type, slot/-1, target/-1, colour, rank, card, scored, token, reveal)
        self._info = self.max_information_tokens
        self._lives = self.max_life_tokens
        self._turns_left = self.players
        self._cur = 0
        self.agent_selection = self.possible_agents[0]

    def _seat(self, agent: str) -> int:
        seat = self._seats.get(agent)
        return int(agent.rsplit("_", 1)[1]) if seat is None else seat

    def score(self) -> int:
        """The team's score now (0 once the last life token is lost)."""
        return 0 if self._lives <= 0 else sum(self._fireworks)

    def _legal_ids(self, agent: str) -> list[int]:
        p = self._seat(agent)
        P, C, R, H = self.players, self.colors, self.ranks, self.hand_size
        n = len(self._hands[p])
        legal = []
        if self._info < self.max_information_tokens:
            legal.extend(range(n))
        legal.extend(range(H, H + n))
        if self._info > 0:
            base = 2 * H
            colour_ids, rank_ids = [], []
            geometry = self._geometry
            for k in range(1, P):
                hand = self._hands[(p + k) % P]
                key = (geometry, "hints", k, hand)
                hints = _MEMO.get(key)
                if hints is None:   # the hints that touch a card of this hand, given to the player k seats on
                    cs = {card // R for card in hand}
                    rs = {card % R for card in hand}
                    hints = (tuple(base + (k - 1) * C + c for c in sorted(cs)),
                             tuple(base + (P - 1) * C + (k - 1) * R + r for r in sorted(rs)))
                    if len(_MEMO) < _MEMO_SIZE:
                        _MEMO[key] = hints
                colour_ids += hints[0]
                rank_ids += hints[1]
            legal += colour_ids
            legal += rank_ids
        return legal

    def _is_legal(self, agent: str, index: int) -> bool:
        """``index in self._legal_ids(agent)`` without listing the legal moves for a discard or a play (legal for a
        card in hand; a discard while an information token is spent); a hint is looked up in the list."""
        H = self.hand_size
        if index < 2 * H:
            if index < H and self._info >= self.max_information_tokens:
                return False
            return index % H < len(self._hands[self._seat(agent)])
        return self._info > 0 and index in self._legal_ids(agent)

    def _null_move(self, agent: str) -> int:
        legal = self._legal_ids(agent)
        H = self.hand_size
        if legal and legal[0] == 0:
            return 0                                  # discard slot 0
        hints = [i for i in legal if i >= 2 * H]
        return hints[0] if hints else H               # first legal hint, else play slot 0

    def _apply(self, agent: str, move: int) -> None:
        p = self._cur
        if self._pos >= len(self._deck):
            self._turns_left -= 1
        before = self.score()
        kind, a, b = self._table[move]
        if kind == DISCARD or kind == PLAY:
            self._play_or_discard(p, kind, a)
        else:
            self._hint(p, kind, a, b)
        self._cur = (p + 1) % self.players
        self.agent_selection = self.possible_agents[self._cur]
        after = self.score()
        rewards = {x: float(after - before) for x in self.possible_agents}
        if self._lives < 1:
            self._finish(rewards, score=0, lives_left=0, outcome="out of lives")
        elif after >= self.max_score:
            self._finish(rewards, score=after, lives_left=self._lives, outcome="all stacks complete")
        elif self._turns_left <= 0:
            self._finish(rewards, score=after, lives_left=self._lives, outcome="deck exhausted")
        else:
            self._give(rewards)

    def _play_or_discard(self, p: int, kind: int, a: int) -> None:
        """Player ``p`` plays or discards its card in slot ``a``, then draws (while the deck lasts)."""
        R = self.ranks
        hand, know = self._hands[p], self._know[p]
        card = hand[a]
        hand = hand[:a] + hand[a + 1:]
        know = know[:a] + know[a + 1:]
        scored = token = False
        if kind == DISCARD:
            if self._info < self.max_information_tokens:
                self._info += 1
                token = True
            self._discards.append(card)
        else:
            c, r = divmod(card, R)
            if self._fireworks[c] == r:
                self._fireworks[c] = r + 1
                scored = True
                if r + 1 == R and self._info < self.max_information_tokens:
                    self._info += 1
                    token = True
            else:
                self._lives -= 1
                self._discards.append(card)
        if self._pos < len(self._deck):
            hand = hand + (self._deck[self._pos],)
            know = know + (self._fresh,)
            self._pos += 1
        self._hands[p], self._know[p] = hand, know
        self._moves.append((p, kind, a, -1, card // R, card % R, card, scored, token, 0))

    def _hint(self, p: int, kind: int, a: int, b: int) -> None:
        """Player ``p`` hints colour or rank ``b`` to the player ``a`` seats after it (one information token)."""
        R = self.ranks
        t = (p + a) % self.players
        self._info -= 1
        hand, know = self._hands[t], list(self._know[t])
        reveal = 0
        for i, card in enumerate(hand):
            cm, rm, kc, kr = know[i]
            if kind == HINT_COLOR:
                if card // R == b:
                    know[i] = (1 << b, rm, b, kr)
                    reveal |= 1 << i
                else:
                    know[i] = (cm & ~(1 << b), rm, kc, kr)
            else:
                if card % R == b:
                    know[i] = (cm, 1 << b, kc, b)
                    reveal |= 1 << i
                else:
                    know[i] = (cm, rm & ~(1 << b), kc, kr)
        self._know[t] = tuple(know)
        self._moves.append((p, kind, -1, t, b if kind == HINT_COLOR else -1, b if kind == HINT_RANK else -1,
                            -1, False, False, reveal))

    def _penalize(self, agent: str) -> None:
        r = -float(self.score()) + self.invalid_penalty
        self._finish({x: r for x in self.possible_agents}, score=0, lives_left=self._lives,
                     outcome="invalid move", offender=agent)

    # -------------------------------------------------------------- what a player may know
    def card_knowledge(self, agent: str) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """What ``agent`` knows about each card in its own hand from hints, slot by slot: ``(colours, ranks)``,
        the colour indices and the 0-based ranks the card may still have (HLE's plausibility; no card counting)."""
        return [self._decode(k) for k in self._know[self._seat(agent)]]

    def visible_hands(self, agent: str) -> dict[str, tuple[tuple[int, int], ...]]:
        """The partners' hands as ``agent`` sees them: player -> ((colour, rank 0-based), ...) per slot."""
        p = self._seat(agent)
        R = self.ranks
        return {a: tuple(divmod(c, R) for c in self._hands[q])
                for q, a in enumerate(self.possible_agents) if q != p}

    def public_state(self) -> dict[str, Any]:
        """Everything every player sees: tokens, fireworks, deck size, discard pile ((colour, rank 0-based) ...)."""
        R = self.ranks
        return {"information_tokens": self._info, "life_tokens": self._lives, "fireworks": tuple(self._fireworks),
                "deck_size": len(self._deck) - self._pos, "discards": tuple(divmod(c, R) for c in self._discards),
                "score": self.score(), "turns_left": self._turns_left if self._pos >= len(self._deck) else None}

    def _decode(self, k: tuple[int, int, int, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        cm, rm = k[0], k[1]
        return (tuple(c for c in range(self.colors) if cm >> c & 1), tuple(r for r in range(self.ranks) if rm >> r & 1))

    # -------------------------------------------------------------- text
    def _card(self, card: int) -> str:
        c, r = divmod(card, self.ranks)
        return f"{COLOR_LETTERS[c]}{r + 1}"

    def _know_text(self, k: tuple[int, int, int, int]) -> str:
        """What a card's knowledge ``k`` reads as in a prompt (a function of its colour and rank masks alone: computed
        once per mask pair and env geometry)."""
        text = self._know_texts.get((k[0], k[1]))
        if text is None:
            text = self._know_texts[(k[0], k[1])] = self._render_know(k)
        return text

    def _render_know(self, k: tuple[int, int, int, int]) -> str:
        colours, ranks = self._decode(k)
        if len(colours) == self.colors and self.colors > 1:
            ct = "colour ?"
        elif len(colours) == 1:
            ct = f"colour {COLOR_NAMES[colours[0]]}"
        else:
            ct = "colour " + " or ".join(COLOR_NAMES[c] for c in colours)
        if len(ranks) == self.ranks and self.ranks > 1:
            rt = "rank ?"
        elif len(ranks) == 1:
            rt = f"rank {ranks[0] + 1}"
        else:
            rt = "rank " + " or ".join(str(r + 1) for r in ranks)
        return f"{ct}, {rt}"

    def _header(self, agent: str) -> str:
        """The static part of the prompt (who you are, the rules), wrapped once per seat and shared by clones."""
        header = self._headers.get(agent)
        if header is None:
            intro = (f"You are {agent} in a game of Hanabi with {self.players} players "
                     f"({', '.join(self.possible_agents)}). It is a cooperative game: the whole team shares one score.")
            header = self._headers[agent] = _wrap(f"{intro}\n{self._rules()}")
        return header

    def _rules(self) -> str:
        C, R, H, info = self.colors, self.ranks, self.hand_size, self.max_information_tokens
        names = ", ".join(COLOR_NAMES[:C])
        if R == 1:
            counts = "three 1s"
        elif R == 2:
            counts = "three 1s and one 2"
        else:
            mids = ", ".join(str(r) for r in range(2, R))
            counts = f"three 1s, two each of {mids} and one {R}"
        first_c = COLOR_NAMES[0]
        return (
            f"Rules: the deck has {C} colour{'s' if C > 1 else ''} ({names}) and ranks 1 to {R}; each colour has "
            f"{counts} ({self.deck_size} cards). Each player holds {H} card{'s' if H > 1 else ''} and sees everyone's "
            f"cards except its own. The team builds one firework per colour, from 1 up to {R}, each card one rank "
            f"above the last. On your turn do exactly one of:\n"
            f"- [play i]: play the card in your slot i. If it is the next rank of its colour's firework it is added "
            f"(+1 point; completing a firework also returns one information token, up to the maximum of {info}); "
            f"otherwise it is a misplay: the card is discarded and the team loses one life token.\n"
            f"- [discard i]: discard the card in your slot i and regain one information token. Not allowed while all "
            f"{info} information tokens are available.\n"
            f"- [hint player_j COLOUR] or [hint player_j RANK], e.g. [hint player_1 {first_c}] or [hint player_1 1]: "
            f"spend one information token to show player_j all of its cards of that colour (or rank). A hint must "
            f"touch at least one card.\n"
            f"After a play or discard you draw a new card into your last slot while the deck lasts; slot 0 is your "
            f"oldest card. The game ends when the last life token is lost (the score is then 0), when every firework "
            f"is complete, or when, after the last card has been drawn, every player has had exactly one more turn. "
            f"The score is the sum of the firework heights (at most {self.max_score})."
        )

    def _move_text(self, rec: tuple, agent: str) -> str:
        """How ``agent``'s prompt tells the move ``rec`` (a function of the two alone: each pair is rendered once, up
        to :data:`_KEPT_TEXTS` of them per env and its clones)."""
        key = (rec, agent)
        text = self._move_texts.get(key)
        if text is None:
            text = self._render_move(rec, agent)
            if len(self._move_texts) < _KEPT_TEXTS:
                self._move_texts[key] = text
        return text

    def _render_move(self, rec: tuple, agent: str) -> str:
        p, kind, slot, t, c, r, card, scored, token, reveal = rec
        who = "you" if self.possible_agents[p] == agent else f"player_{p}"
        if kind == DISCARD:
            return f"{who} discarded {self._card(card)} from slot {slot}" + (" (+1 information token)" if token else "")
        if kind == PLAY:
            if scored:
                return f"{who} played {self._card(card)} from slot {slot}" + (
                    " (firework complete, +1 information token)" if token else "")
            return f"{who} misplayed {self._card(card)} from slot {slot} (-1 life token)"
        target = "you" if self.possible_agents[t] == agent else f"player_{t}"
        what = COLOR_NAMES[c] if kind == HINT_COLOR else str(r + 1)
        slots = ", ".join(str(i) for i in range(self.hand_size) if reveal >> i & 1)
        return f"{who} hinted {target}: {what} (slot{'s' if ',' in slots else ''} {slots})"

    def _render_turn(self, agent: str) -> str:
        """The end of the prompt of the agent to move: its legal moves (and the turns left once the deck is empty)."""
        legal = self.legal_actions(agent)
        last = ""
        if self._pos >= len(self._deck):
            last = (f"The deck is empty: this is your last turn ({self._turns_left} turn"
                    f"{'s' if self._turns_left != 1 else ''} left in the game including this one). ")
        return _wrap(f"{last}It is your turn. Your legal moves: {', '.join(legal)}") + (
            f"\nReply with exactly one move in square brackets, for example {legal[0]}.")

    def _text(self, agent: str) -> str:
        p = self._seat(agent)
        P = self.players
        lines = [
            f"Information tokens: {self._info} of {self.max_information_tokens}. Life tokens: {self._lives} of "
            f"{self.max_life_tokens}. Deck: {len(self._deck) - self._pos} cards left.",
        ]
        fw = ", ".join(f"{COLOR_NAMES[c]} {h}" for c, h in enumerate(self._fireworks))
        lines.append(f"Fireworks: {fw}. Score: {self.score()}.")
        pile = " ".join(self._card(c) for c in sorted(self._discards))
        lines.append(f"Discard pile: {pile or '(empty)'}")
        rows = []
        for k in range(1, P):
            q = (p + k) % P
            rows.append(f"player_{q}'s hand (what player_{q} knows from hints in parentheses):")
            for i, (card, kn) in enumerate(zip(self._hands[q], self._know[q])):
                rows.append(f"  slot {i}: {self._card(card)} ({self._know_text(kn)})")
        rows.append("Your hand (you cannot see your cards; what you know from hints):")
        for i, kn in enumerate(self._know[p]):
            rows.append(f"  slot {i}: {self._know_text(kn)}")
        recent = self._moves[-P:]
        if recent:
            rows.append("Last moves (oldest first):")
            rows.extend(f"  {self._move_text(m, agent)}" for m in recent)
        else:
            rows.append("Moves so far: (none)")
        text = self._header(agent) + "\n" + _wrap("\n".join(lines)) + "\n" + "\n".join(rows)
        if self.terminations.get(agent, False) or not self.agents:
            turn = "The game is over."
        elif agent == self.agent_selection:
            # a function of the seat, its legal moves and (once the deck is empty) the turns left: rendered once
            key = (agent, tuple(self._legal_ids(agent)), self._turns_left if self._pos >= len(self._deck) else -1)
            turn = self._turn_texts.get(key)
            if turn is None:
                turn = self._render_turn(agent)
                if len(self._turn_texts) < _KEPT_TEXTS:
                    self._turn_texts[key] = turn
        else:
            turn = f"Waiting for {self.agent_selection} to move."
            if self._pos >= len(self._deck):
                turn = f"The deck is empty: {self._turns_left} turns left in the game. {turn}"
        return f"{text}\n{turn}"

    # -------------------------------------------------------------- global state (centralized critics only)
    def state(self) -> np.ndarray:
        """The union of the private views: every hand's cards, then player_0's view of everything else."""
        if self.episode_seed is None:
            return super().state()      # raises the before-reset error
        own = np.zeros(self.vector_size, np.float32)
        self._vector(self.possible_agents[0], own)
        P, H, CR = self.players, self.hand_size, self.colors * self.ranks
        hands = np.zeros(P * H * CR, np.float32)
        for q in range(P):
            for i, card in enumerate(self._hands[q]):
                hands[(q * H + i) * CR + card] = 1.0
        return np.concatenate([hands, own[self._off["short"]:]])

    @property
    def state_space(self):
        """The space of :meth:`state`."""
        size = self.players * self.hand_size * self.colors * self.ranks + self.vector_size - self._off["short"]
        return spaces.Box(-1.0, 1.0, (size,), np.float32)

    # -------------------------------------------------------------- numeric observation (HLE canonical encoding)
    def _vector(self, agent: str, out: np.ndarray) -> None:
        # The 1-bits are gathered as indices and written with one NumPy assignment (one Python-level write per bit
        # is most of the cost otherwise); the encoding is exactly HLE's, as described in the manual.
        p = self._seat(agent)
        P, C, R, H = self.players, self.colors, self.ranks, self.hand_size
        CR = C * R
        o = self._off
        hands = self._hands
        ones: list[int] = []
        base = o["hands"]
        for k in range(1, P):
            q = (p + k) % P
            for i, card in enumerate(hands[q]):
                ones.append(base + ((k - 1) * H + i) * CR + card)
        for k in range(P):
            if len(hands[(p + k) % P]) < H:
                ones.append(o["short"] + k)
        start = o["deck"]                       # thermometers (deck, tokens, discards) as index ranges
        ones += range(start, start + len(self._deck) - self._pos)
        for c, h in enumerate(self._fireworks):
            if h > 0:
                ones.append(o["fireworks"] + c * R + h - 1)
        start = o["info"]
        ones += range(start, start + self._info)
        start = o["life"]
        ones += range(start, start + self._lives)
        if self._discards:
            counts = [0] * CR
            for card in self._discards:
                counts[card] += 1
            start = o["discards"]
            for card, n in enumerate(counts):
                if n:
                    s = start + self._discard_start[card]
                    ones += range(s, s + n)
        if self._moves:
            self._last_action_bits(p, ones)
        self._knowledge_bits(p, ones)
        out[ones] = 1.0

    def _last_action_bits(self, p: int, ones: list[int]) -> None:
        """HLE's last-action section, seen by player ``p``: the indices of its 1-bits, appended to ``ones``."""
        P, H, o = self.players, self.hand_size, self._off
        q, kind, slot, t, c, r, card, scored, token, reveal = self._moves[-1]
        ones.append(o["la_player"] + (q - p) % P)
        ones.append(o["la_type"] + (1, 0, 2, 3)[kind])   # HLE's order: play, discard, reveal colour, rank
        if t >= 0:
            ones.append(o["la_target"] + (t - p) % P)
        if kind >= HINT_COLOR:
            if c >= 0:
                ones.append(o["la_color"] + c)
            if r >= 0:
                ones.append(o["la_rank"] + r)
            for i in range(H):
                if reveal >> i & 1:
                    ones.append(o["la_reveal"] + i)
        else:
            ones.append(o["la_slot"] + slot)
            ones.append(o["la_card"] + card)
            if scored:
                ones.append(o["la_scored"])
            # HLE's encoder: "information token gained" only for a play that completed a firework (a discard
            # also returns a token, but HLE leaves this bit unset for it).
            if token and kind == PLAY:
                ones.append(o["la_token"])

    def _knowledge_bits(self, p: int, ones: list[int]) -> None:
        """HLE's card-knowledge section, seen by player ``p`` (every hand, its own first): 1-bit indices into ``ones``."""
        P, C, R, H, o = self.players, self.colors, self.ranks, self.hand_size, self._off
        CR = C * R
        per = CR + C + R
        geometry = self._geometry
        know = self._know
        for k in range(P):
            hand = know[(p + k) % P]
            key = (geometry, "know", k, hand)
            bits = _MEMO.get(key)
            if bits is None:    # the 1-bits of one hand's knowledge, in the section of the player k seats on
                bits = []
                for i, (cm, rm, kc, kr) in enumerate(hand):
                    s = o["know"] + (k * H + i) * per
                    bits += [s + c * R + r for c in range(C) if cm >> c & 1 for r in range(R) if rm >> r & 1]
                    if kc >= 0:
                        bits.append(s + CR + kc)
                    if kr >= 0:
                        bits.append(s + CR + C + kr)
                bits = tuple(bits)
                if len(_MEMO) < _MEMO_SIZE:
                    _MEMO[key] = bits
            ones += bits

    def _render(self) -> str:
        hands = " | ".join(f"player_{q}: {' '.join(self._card(c) for c in h)}" for q, h in enumerate(self._hands))
        fw = " ".join(f"{COLOR_LETTERS[c]}{h}" for c, h in enumerate(self._fireworks))
        return (f"Hanabi {self.env_id} | {hands} | fireworks {fw} | info {self._info} lives {self._lives} | deck "
                f"{len(self._deck) - self._pos} | score {self.score()} | {self._to_move()}")


env = raw_env
