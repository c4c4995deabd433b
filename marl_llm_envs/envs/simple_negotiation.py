"""Simple negotiation: trade Wood and Gold with opposite valuations (SPIRAL's SimpleNegotiation).

| Import             | ``from marl_llm_envs import make; make("simple_negotiation-v0")``    |
|--------------------|---------------------------------------------------------------------|
| Family             | zero_sum                                                            |
| Agents             | ``player_0`` (moves first), ``player_1``; each its own team          |
| Action space       | text: ``Text``; discrete: ``Discrete(3 + 2 * max_offer ** 2)`` = accept, deny, pass, then the offers |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (16,)), [action_mask=Box(0, 1, (53,), int8)])`` (default ``max_offer=5``) |
| Reward range       | -1 .. +1                                                            |
| Kwargs             | ``max_turns=10``, ``max_offer=5`` (at most 100), ``inventories=None``, ``valuations=None``, ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

Rules (SPIRAL's / TextArena's SimpleNegotiation with two resources). There are two resources, Wood and Gold. Both
players start with 10 Wood and 10 Gold (``inventories=[[w0, g0], [w1, g1]]`` changes this; nothing is random). Their
values per unit are fixed and opposite: ``player_0`` values Wood 5 and Gold 15, ``player_1`` values Wood 15 and Gold
5 (``valuations=[[w0, g0], [w1, g1]]`` changes this). The game lasts ``max_turns=10`` turns in total; the players
alternate, ``player_0`` first. On a turn a player makes exactly one move:

* **offer** ``A <resource> -> B <other resource>``: give A units of one resource for B units of the other
  (``1 <= A, B <= max_offer``). The offerer must hold A units and the opponent B units, otherwise the offer is
  invalid. The offer becomes the one standing offer: it replaces the offerer's own standing offer, and a counter-offer
  implicitly denies the offer made to the offerer.
* **accept** the standing offer made to you: the exchange happens at once and atomically (both sides' resources
  move together; no resource is ever created or destroyed) and the offer is cleared.
* **deny** the standing offer made to you: it is cleared.
* **pass** (talk only, no move): a standing offer stays standing.

Accept and deny are legal only while an offer made to you stands. After the last turn each player's inventory is
valued at that player's own values; the player whose value gained more (final minus initial) wins (+1 / -1); equal
gains are a draw (0 each).

Deviations from SPIRAL, all documented here: (1) one move per turn; SPIRAL lets a message contain a deny and a new
offer, which here is a counter-offer (the implicit deny is the same). (2) Talk is not relayed: the opponent sees the
moves, not the text around them, and a reply with no move is invalid instead of "talk only"; write ``[pass]`` to
talk only. (3) An offer names one resource on each side, with 1 to ``max_offer`` units (SPIRAL parses any list, e.g.
``3 Wood, 1 Gold -> 2 Gold``). (4) An offer the opponent cannot afford is invalid when made (SPIRAL only checks it at
acceptance); the inventories are public, so both players can check. As in SPIRAL, the opponent's values are private;
unlike SPIRAL's prompt, both inventories are shown (SPIRAL's players can only work the opponent's out from the public
trades). (5) An invalid move follows the env's invalid-move policy (``invalid_move``), not SPIRAL's -1.5 / +0.5.

Observation. ``text`` is the prompt below: the rules, own values (the opponent's are not shown), both inventories,
own gain so far, the standing offer, the history of moves, turns left and the legal moves. ``observation`` (16
floats): own inventory (Wood, Gold) and the opponent's, each divided by the total of that resource (4); own values
divided by the larger of them (2); "the standing offer is mine" (1), "an offer to me stands" (1); the standing offer
seen from me: Wood I would give, Gold I would give, Wood I would get, Gold I would get, each / ``max_offer`` (4);
turns played / ``max_turns`` (1); "it is my turn" (1); own gain so far / the most value I could hold (1); "I move
first" (1).

Actions. Text mode: ``[offer: A wood -> B gold]``, ``[offer: A gold -> B wood]``, ``[accept]``, ``[deny]`` or
``[pass]``. Case, spacing and a plural ``s`` are ignored, and SPIRAL's forms are accepted too:
``[Offer: 3 Wood -> 2 Gold]``, ``[Offer: I give 3 Woods -> 2 Gold.]``. The last bracketed move in the reply counts.
Discrete mode: 0 = accept, 1 = deny, 2 = pass, then ``3 + (A - 1) * max_offer + (B - 1)`` = offer A Wood for B Gold
and ``3 + max_offer ** 2 + (A - 1) * max_offer + (B - 1)`` = offer A Gold for B Wood (``action_names``), with the
mask of legal (affordable) moves.

Rewards. At the end only: +1 / -1, or 0 each for a draw. ``infos[agent]`` then has ``outcome`` ("win" / "draw"),
``winner``, ``gains`` (each player's value gained) and ``inventories``.

Invalid moves. An unaffordable offer, an accept or deny with no offer made to you, or anything that is not a move is
invalid. ``invalid_move="penalty"`` (default): the game ends; the offender gets ``invalid_penalty`` (default -1) and
the opponent its negation. ``"retry"``: asked again up to ``max_retries`` times with the error shown (a retry does
not use up a turn), then the penalty. ``"random"``: a uniformly random legal move.

Ablation. The null action is "make no deal": an ablated player denies an offer made to it and otherwise passes (it
never offers or accepts). Its past trades stand.

The prompt (player_0, first turn, default kwargs)::

    You are player_0 in a negotiation game with two resources, Wood and Gold.
    Rules: the game lasts 10 turns in total; the players alternate and player_0 moves first.
    On your turn make one move: offer a trade, [offer: A wood -> B gold] (you give A Wood, you get B Gold)
    or [offer: A gold -> B wood], with A and B from 1 to 5; [accept] or [deny] the offer your opponent made
    you; or [pass]. Both players must hold what an offer names. One offer stands at a time: a new offer
    replaces yours and denies the one made to you. An accepted trade happens at once. At the end each
    inventory is valued at its owner's own values (the values differ between players and are private);
    whoever gained more value wins, equal gains are a draw.
    Your values: Wood 5, Gold 15 per unit.
    Your inventory: 10 Wood, 10 Gold (worth 200 to you; you started with 200; gain +0).
    Your opponent's inventory: 10 Wood, 10 Gold.
    Standing offer: none.
    History: none.
    Turn 1 of 10 (10 turns left, this one included).
    Your legal moves: [pass]
      [offer: A wood -> B gold] with A from 1 to 5 and B from 1 to 5
      [offer: A gold -> B wood] with A from 1 to 5 and B from 1 to 5
    Reply with exactly one move in square brackets, for example [offer: 1 wood -> 1 gold].

Version history. v0: first version.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from marl_llm_envs.core import TwoPlayerZeroSumEnv, check_int, printable
from marl_llm_envs.text import BRACKET_TOKEN_MAX, bracketed_tokens, no_move_reason

RESOURCES = ("Wood", "Gold")
ACCEPT, DENY, PASS = 0, 1, 2
FIRST_OFFER = 3
DEFAULT_INVENTORIES = ((10, 10), (10, 10))
DEFAULT_VALUATIONS = ((5, 15), (15, 5))
AGENTS = ("player_0", "player_1")

_OFFER = re.compile(
    r"offer\s*:?\s*(?:i\s+(?:give|offer)\s+)?(\d{1,6})\s*(wood|gold)s?\s*(?:->|=>|for)\s*(\d{1,6})\s*(wood|gold)s?\s*[.!]*"
)


def _canonical(token: str) -> str:
    """A bracketed token in canonical form: lower case, single spaces, offers as ``offer: A wood -> B gold``."""
    key = " ".join(token.split()).lower()
    m = _OFFER.fullmatch(key)
    if m:
        return f"offer: {int(m.group(1))} {m.group(2)} -> {int(m.group(3))} {m.group(4)}"
    return key


def _pairs(value: Any, name: str, default: tuple) -> tuple[tuple, tuple]:
    if value is None:
        return default
    if isinstance(value, dict):
        value = [value.get(a) for a in AGENTS]
    try:
        pairs = tuple(tuple(p) for p in value)
    except TypeError:
        pairs = ()
    ok = len(pairs) == 2 and all(len(p) == 2 for p in pairs) and all(
        isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and np.isfinite(x) and x >= 0
        for p in pairs for x in p)
    if not ok:
        raise ValueError(f"{name} must be two [wood, gold] pairs of non-negative numbers (player_0's, player_1's), "
                         f"got {value!r}")
    return pairs


MAX_OFFER = 100
"""The largest ``max_offer`` (20,003 discrete moves); 10,000 would be 2 * 10^8, which building the env never ends."""


class raw_env(TwoPlayerZeroSumEnv):
    env_id = "simple_negotiation-v0"
    version = 0
    vector_size = 16
    metadata = {"render_modes": ["human", "ansi"], "name": "simple_negotiation_v0", "is_parallelizable": False}
    _mutable = ("_events",)  # _inv is replaced on every trade, never changed in place

    def __init__(self, *, max_turns: int = 10, max_offer: int = 5, inventories: Any = None, valuations: Any = None,
                 **kwargs: Any) -> None:
        max_turns = check_int("max_turns", max_turns, 1)
        # the action list, its names and every mask grow as max_offer ** 2
        max_offer = check_int("max_offer", max_offer, 1, MAX_OFFER,
                              "the discrete action list has 3 + 2 * max_offer ** 2 moves")
        inv = _pairs(inventories, "inventories", DEFAULT_INVENTORIES)
        if not all(float(x).is_integer() for p in inv for x in p):
            raise ValueError(f"inventories must be whole numbers of units, got {inventories!r}")
        self.max_turns = max_turns
        self.max_offer = max_offer
        self.initial_inventories = {a: (int(p[0]), int(p[1])) for a, p in zip(AGENTS, inv)}
        self.valuations = {a: (float(p[0]), float(p[1])) for a, p in
                           zip(AGENTS, _pairs(valuations, "valuations", DEFAULT_VALUATIONS))}
        self._totals = tuple(sum(self.initial_inventories[a][r] for a in AGENTS) for r in (0, 1))
        k = max_offer
        # offer index -> (give resource, A, get resource, B)
        self._offers = [(give, a, 1 - give, b) for give in (0, 1) for a in range(1, k + 1) for b in range(1, k + 1)]
        self._names = ["accept", "deny", "pass"] + [
            f"offer: {a} {RESOURCES[g].lower()} -> {b} {RESOURCES[t].lower()}" for g, a, t, b in self._offers]
        super().__init__(max_turns=max_turns, max_offer=max_offer, inventories=inventories, valuations=valuations,
                         **kwargs)

    def action_names(self, agent: str) -> list[str]:
        return self._names

    # -------------------------------------------------------------- game
    def _start(self) -> None:
        self._inv: dict[str, tuple[int, int]] = dict(self.initial_inventories)
        self._offer: tuple[str, int, int, int, int] | None = None  # (offerer, give res, A, get res, B)
        self._events: list[tuple[int, str, int, tuple | None]] = []  # (turn, agent, move, offer or None)
        self._turn = 0
        self.agent_selection = "player_0"

    def _offer_to(self, agent: str) -> bool:
        return self._offer is not None and self._offer[0] != agent

    def _legal_ids(self, agent: str) -> list[int]:
        ids = [ACCEPT, DENY, PASS] if self._offer_to(agent) else [PASS]
        mine, theirs = self._inv[agent], self._inv[self._other(agent)]
        k = self.max_offer
        for give in (0, 1):
            base = FIRST_OFFER + give * k * k
            for a in range(1, min(k, mine[give]) + 1):
                start = base + (a - 1) * k
                ids.extend(range(start, start + min(k, theirs[1 - give])))
        return ids

    def _null_move(self, agent: str) -> int:
        return DENY if self._offer_to(agent) else PASS

    def _apply(self, agent: str, move: int) -> None:
        offer = self._offer
        if move == ACCEPT:
            offerer, give, a, get, b = offer
            # one atomic exchange: offerer gives A of `give` and gets B of `get`; the acceptor the reverse
            src, dst = list(self._inv[offerer]), list(self._inv[agent])
            src[give] -= a
            dst[give] += a
            dst[get] -= b
            src[get] += b
            self._inv = {**self._inv, offerer: tuple(src), agent: tuple(dst)}
            self._events.append((self._turn, agent, ACCEPT, offer))
            self._offer = None
        elif move == DENY:
            self._events.append((self._turn, agent, DENY, offer))
            self._offer = None
        elif move == PASS:
            self._events.append((self._turn, agent, PASS, None))
        else:
            new = (agent, *self._offers[move - FIRST_OFFER])
            self._events.append((self._turn, agent, move, offer if self._offer_to(agent) else None))
            self._offer = new
        self._turn += 1
        if self._turn >= self.max_turns:
            gains = self.gains()
            g0, g1 = gains["player_0"], gains["player_1"]
            if g0 == g1:
                rewards, winner = {"player_0": 0.0, "player_1": 0.0}, None
            else:
                winner = "player_0" if g0 > g1 else "player_1"
                rewards = {winner: 1.0, self._other(winner): -1.0}
            self._finish(rewards, outcome="win" if winner else "draw", winner=winner, gains=gains,
                         inventories={a: list(v) for a, v in self._inv.items()})
        else:
            self.agent_selection = self._other(agent)

    # -------------------------------------------------------------- public helpers
    def value(self, agent: str) -> float:
        """``agent``'s inventory valued at its own values."""
        (w, g), (vw, vg) = self._inv[agent], self.valuations[agent]
        return w * vw + g * vg

    def initial_value(self, agent: str) -> float:
        (w, g), (vw, vg) = self.initial_inventories[agent], self.valuations[agent]
        return w * vw + g * vg

    def gains(self) -> dict[str, float]:
        """Each player's value gained so far (own values, final minus initial)."""
        return {a: self.value(a) - self.initial_value(a) for a in AGENTS}

    def inventories(self) -> dict[str, tuple[int, int]]:
        """Each player's (Wood, Gold) now."""
        return dict(self._inv)

    @property
    def standing_offer(self) -> dict[str, Any] | None:
        """The standing offer: ``{"from", "to", "give": {res: A}, "get": {res: B}}`` or ``None``."""
        if self._offer is None:
            return None
        offerer, give, a, get, b = self._offer
        return {"from": offerer, "to": self._other(offerer), "give": {RESOURCES[give]: a}, "get": {RESOURCES[get]: b}}

    # -------------------------------------------------------------- text actions
    def _interpret(self, agent: str, action: Any) -> tuple[Any, str | None]:
        if self.action_mode != "text" or not isinstance(action, str):
            return super()._interpret(agent, action)
        index_map = self._action_index[agent]
        index, bad_offer = None, None
        tokens = bracketed_tokens(action)
        for token in reversed(tokens):
            key = _canonical(token)
            if key in index_map:
                index = index_map[key]
                break
            if bad_offer is None and key.startswith("offer"):
                bad_offer = token
        if index is None and len(action) <= BRACKET_TOKEN_MAX:
            index = index_map.get(_canonical(action))
        if index is None:
            if bad_offer is not None:
                k = self.max_offer
                return None, (f"[{printable(bad_offer.strip(), 40)}] is not a valid offer; write [offer: A wood -> B "
                              f"gold] or [offer: A gold -> B wood] with A and B from 1 to {k}")
            return None, no_move_reason(tokens, index_map)
        if index not in self._legal_ids(agent):
            return None, self._illegal(agent, self._names[index])
        return index, None

    def _illegal(self, agent: str, name: str) -> str:
        index = self._action_index[agent][name.lower()]
        if index in (ACCEPT, DENY):
            return f"[{name}] needs an offer made to you, and none stands"
        if index >= FIRST_OFFER:
            give, a, get, _ = self._offers[index - FIRST_OFFER]
            if self._inv[agent][give] < a:
                return f"[{name}] is not affordable: you have only {self._inv[agent][give]} {RESOURCES[give]}"
            other = self._inv[self._other(agent)][get]
            return f"[{name}] is not affordable: your opponent has only {other} {RESOURCES[get]}"
        return super()._illegal(agent, name)

    # -------------------------------------------------------------- observations
    @staticmethod
    def _offer_text(offer: tuple, viewer: str) -> str:
        offerer, give, a, get, b = offer
        who = "you give" if offerer == viewer else "your opponent gives"
        return f"{who} {a} {RESOURCES[give]} for {b} {RESOURCES[get]}"

    def _event_text(self, event: tuple, viewer: str) -> str:
        turn, agent, move, offer = event
        who = "you" if agent == viewer else "opponent"
        if move == PASS:
            what = "passed"
        elif move in (ACCEPT, DENY):
            offerer, give, a, get, b = offer
            whose = "your" if offerer == viewer else "your opponent's"
            what = (f"{'accepted' if move == ACCEPT else 'denied'} {whose} offer of {a} {RESOURCES[give]} "
                    f"for {b} {RESOURCES[get]}")
        else:
            give, a, get, b = self._offers[move - FIRST_OFFER]
            what = f"offered {a} {RESOURCES[give]} for {b} {RESOURCES[get]}"
            if offer is not None:
                what += " (denying your offer)" if who == "opponent" else " (denying your opponent's offer)"
        return f"turn {turn + 1}, {who}: {what}"

    def _moves_text(self, agent: str) -> str:
        k = self.max_offer
        mine, theirs = self._inv[agent], self._inv[self._other(agent)]
        parts = ["[accept], [deny], [pass]" if self._offer_to(agent) else "[pass]"]
        for give in (0, 1):
            top_a, top_b = min(k, mine[give]), min(k, theirs[1 - give])
            if top_a >= 1 and top_b >= 1:
                g, t = RESOURCES[give].lower(), RESOURCES[1 - give].lower()
                parts.append(f"  [offer: A {g} -> B {t}] with A from 1 to {top_a} and B from 1 to {top_b}")
        return "\n".join(parts)

    def _text(self, agent: str) -> str:
        other = self._other(agent)
        k = self.max_offer
        (vw, vg), (w, g), (ow, og) = self.valuations[agent], self._inv[agent], self._inv[other]
        value, start = self.value(agent), self.initial_value(agent)
        rules = (
            f"Rules: the game lasts {self.max_turns} turns in total; the players alternate and player_0 moves first.\n"
            f"On your turn make one move: offer a trade, [offer: A wood -> B gold] (you give A Wood, you get B Gold)\n"
            f"or [offer: A gold -> B wood], with A and B from 1 to {k}; [accept] or [deny] the offer your opponent made\n"
            "you; or [pass]. Both players must hold what an offer names. One offer stands at a time: a new offer\n"
            "replaces yours and denies the one made to you. An accepted trade happens at once. At the end each\n"
            "inventory is valued at its owner's own values (the values differ between players and are private);\n"
            "whoever gained more value wins, equal gains are a draw."
        )
        if self._offer is None:
            standing = "Standing offer: none."
        else:
            standing = f"Standing offer: {self._offer_text(self._offer, agent)}."
            if self._offer_to(agent):
                standing += " You may [accept] or [deny] it."
        history = "".join(f"\n  {self._event_text(e, agent)}" for e in self._events)
        lines = [
            f"You are {agent} in a negotiation game with two resources, Wood and Gold.",
            rules,
            f"Your values: Wood {vw:g}, Gold {vg:g} per unit.",
            (f"Your inventory: {w} Wood, {g} Gold (worth {value:g} to you; you started with {start:g}; "
             f"gain {value - start:+g})."),
            f"Your opponent's inventory: {ow} Wood, {og} Gold.",
            standing,
            f"History:{history}" if history else "History: none.",
        ]
        if self.done:
            lines.append("The game is over.")
        else:
            left = self.max_turns - self._turn
            lines.append(f"Turn {self._turn + 1} of {self.max_turns} ({left} turn{'s' if left != 1 else ''} left, "
                         f"this one included).")
            if agent == self.agent_selection:
                lines.append(f"Your legal moves: {self._moves_text(agent)}")
                example = next((f"[{self._names[i]}]" for i in self._legal_ids(agent) if i >= FIRST_OFFER), "[pass]")
                lines.append(f"Reply with exactly one move in square brackets, for example {example}.")
            else:
                lines.append("Waiting for your opponent to move.")
        return "\n".join(lines)

    def _vector(self, agent: str, out: np.ndarray) -> None:
        other = self._other(agent)
        tw, tg = (t or 1 for t in self._totals)
        mine, theirs = self._inv[agent], self._inv[other]
        out[0], out[1], out[2], out[3] = mine[0] / tw, mine[1] / tg, theirs[0] / tw, theirs[1] / tg
        vw, vg = self.valuations[agent]
        top = max(vw, vg) or 1.0
        out[4], out[5] = vw / top, vg / top
        if self._offer is not None:
            offerer, give, a, get, b = self._offer
            k = self.max_offer
            if offerer == agent:
                out[6] = 1.0
                out[8 + give], out[10 + get] = a / k, b / k
            else:
                out[7] = 1.0
                out[8 + get], out[10 + give] = b / k, a / k
        out[12] = self._turn / self.max_turns
        out[13] = 1.0 if agent == self.agent_selection and not self.done else 0.0
        most = self._totals[0] * vw + self._totals[1] * vg
        if most > 0:
            out[14] = (self.value(agent) - self.initial_value(agent)) / most
        out[15] = 1.0 if agent == "player_0" else 0.0

    def _render(self) -> str:
        inv = self._inv
        offer = "none"
        if self._offer is not None:
            offerer, give, a, get, b = self._offer
            offer = f"{offerer} gives {a} {RESOURCES[give]} for {b} {RESOURCES[get]}"
        gains = self.gains()
        return (f"simple negotiation turn {min(self._turn + 1, self.max_turns)}/{self.max_turns} | "
                f"player_0: {inv['player_0'][0]} Wood {inv['player_0'][1]} Gold (gain {gains['player_0']:+g}) | "
                f"player_1: {inv['player_1'][0]} Wood {inv['player_1'][1]} Gold (gain {gains['player_1']:+g}) | "
                f"offer: {offer} | {self._to_move()}")


env = raw_env
