"""Leduc hold'em reference: an approximate Nash equilibrium (CFR+) as a policy for ``leduc_holdem-v0``.

The strategy was computed by ``scripts/solve_leduc.py`` with :mod:`marl_llm_envs.cfr` on :class:`LeducGame` (the
same rules as the env, from the env module's rule functions) and is cached in ``data/leduc_cfr.json`` beside this
file: ``{"strategy": {infoset: [P(fold), P(call), P(raise)]}, ...}`` plus how it was made (iterations, seconds,
exploitability in chips per hand, the game value). An info set is written
``"<own rank><public rank>:<round 1 betting>[/<round 2 betting>]"`` with ``c`` = check/call and ``r`` = bet/raise,
e.g. ``"K:"`` (first to act, holding a K), ``"Q:r"`` (second to act, facing a bet), ``"JQ:rc/"`` (first to act in
round 2, J in hand, Q on the board). Suits never matter, so there are 288 info sets.

:func:`leduc_cfr` uses only what the acting player may know (``env.info_state(agent)``: its own card, the public
card once dealt, the public betting). :data:`EXACT` is what exact scoring (``leaderboard.exact``) needs: the tree of
one hand, the env-to-tree maps, and the cached strategy as the reference (as the ``leduc_cfr`` bot plays it).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from marl_llm_envs.cfr import CHANCE, TERMINAL, ExactGame
from marl_llm_envs.envs.leduc_holdem.env import (
    ACTIONS,
    CARDS,
    LETTERS,
    contributions,
    legal_moves,
    move_name,
    rank,
    round_over,
    showdown,
)

DATA = Path(__file__).resolve().parent / "data" / "leduc_cfr.json"


def infoset_key(own_rank: int, public_rank: int | None, betting: tuple[str, ...] | list[str]) -> str:
    """The info set name used in the cached strategy (see the module docstring)."""
    return f"{CARDS[own_rank]}{'' if public_rank is None else CARDS[public_rank]}:{'/'.join(betting)}"


class LeducGame:
    """Leduc hold'em for :mod:`marl_llm_envs.cfr`; player 0 acts first in both rounds.

    A state is ``(cards, betting)``: the cards dealt so far (player 0's, player 1's, then the public card; 0..5,
    rank = card // 2) and a tuple of one betting string per round started (``f``/``c``/``r``). Actions are the env's
    discrete indices (0 fold, 1 call/check, 2 raise/bet)."""

    def initial_state(self):
        return ((), ("",))

    def current_player(self, state) -> int:
        cards, betting = state
        seq = betting[-1]
        if seq.endswith("f"):
            return TERMINAL
        if len(cards) < 2:
            return CHANCE
        if round_over(seq):
            return TERMINAL if len(betting) == 2 else CHANCE
        return len(seq) % 2

    def chance_outcomes(self, state):
        cards, _ = state
        left = [c for c in range(6) if c not in cards]
        return [(c, 1.0 / len(left)) for c in left]

    def legal_actions(self, state):
        return legal_moves(state[1][-1])

    def infoset(self, state) -> str:
        cards, betting = state
        me = len(betting[-1]) % 2
        return infoset_key(rank(cards[me]), rank(cards[2]) if len(cards) > 2 else None, betting)

    def next_state(self, state, action):
        cards, betting = state
        if len(cards) < 2:
            return (cards + (action,), betting)
        if round_over(betting[-1]):  # the public card
            return (cards + (action,), betting + ("",))
        return (cards, betting[:-1] + (betting[-1] + LETTERS[action],))

    def utility(self, state) -> float:
        cards, betting = state
        put = contributions(betting)
        seq = betting[-1]
        if seq.endswith("f"):
            folder = (len(seq) - 1) % 2
            return float(put[1]) if folder == 1 else -float(put[0])
        result = showdown(rank(cards[0]), rank(cards[1]), rank(cards[2]))
        return float(result * put[1 - (result < 0)]) if result else 0.0


@functools.lru_cache(maxsize=1)
def load_strategy(path: str | None = None) -> dict[str, Any]:
    """The cached CFR+ solution: the JSON document (``strategy``, ``iterations``, ``exploitability``, ...)."""
    with open(path or DATA) as f:
        return json.load(f)


def leduc_cfr_probs(env, agent: str) -> np.ndarray:
    """The cached strategy's probabilities of the env's three discrete actions for ``agent`` now (0 where illegal)."""
    base = env.unwrapped
    own, public, betting = base.info_state(agent)
    legal = legal_moves(betting[-1])
    probs = np.zeros(len(ACTIONS))
    stored = load_strategy()["strategy"].get(infoset_key(own, public, betting))
    if stored is not None:
        probs[legal] = np.asarray(stored, np.float64)[legal]
    total = probs.sum()
    if total <= 0:  # never happens for the cached table; uniform over the legal moves as a fallback
        probs[legal] = 1.0
        total = float(len(legal))
    return probs / total


def leduc_cfr(env, agent: str, rng: np.random.Generator) -> Any:
    """Play the cached CFR+ strategy in ``leduc_holdem-v0`` (any ``rounds``; the first player alternates): an index
    in discrete mode, the move's current name (``"[check]"``, ``"[raise]"``, ...) in text mode."""
    base = env.unwrapped
    if base.done or agent != base.agent_selection:
        raise ValueError(f"leduc_cfr: it is not {agent}'s turn")
    probs = leduc_cfr_probs(base, agent)
    move = int(np.searchsorted(np.cumsum(probs), rng.random() * probs.sum(), side="right"))
    move = min(move, len(probs) - 1)
    while probs[move] == 0:  # guard against rounding at the top of the cumulative sum
        move -= 1
    if base.action_mode == "discrete":
        return move
    return f"[{move_name(base.info_state(agent)[2][-1], move)}]"


def _infoset(env, agent: str) -> str:
    return infoset_key(*env.unwrapped.info_state(agent))


def _onto_tree(env, agent: str, p: np.ndarray) -> list[float]:
    """The env's discrete-action probabilities onto the tree's actions (the env's legal discrete indices)."""
    return [float(p[a]) for a in legal_moves(env.unwrapped.info_state(agent)[2][-1])]


def _reference_table(tree) -> dict[str, list[float]]:
    """The cached strategy over the tree's actions at each of its info sets."""
    stored = load_strategy()["strategy"]
    return {key: [stored[key][a] for a in tree.iset_actions[i]] for key, i in tree.infosets.items() if key in stored}


EXACT = ExactGame("leduc_cfr", LeducGame, _infoset, _onto_tree, _reference_table, kwargs={"rounds": 1})
