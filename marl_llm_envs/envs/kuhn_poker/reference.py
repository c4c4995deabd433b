"""Kuhn poker reference: the known one-parameter family of Nash equilibria, as a policy for ``kuhn_poker-v0``.

In Kuhn poker (J < Q < K, ante 1, one bet of 1) every equilibrium is, up to the unreached choices, the following,
for a parameter alpha in [0, 1/3] (Kuhn 1950). "First" is the player who acts first in the hand.

* First player, to open: with J bet with probability alpha, with Q always check, with K bet with probability
  3 alpha. Facing a bet after checking: with J fold, with Q call with probability alpha + 1/3, with K call.
* Second player, facing a bet: with J fold, with Q call with probability 1/3, with K call. After a check: with J bet
  with probability 1/3 (a bluff), with Q check, with K bet.

The game value is -1/18 for the first player whatever alpha is. Both facts are checked in
``tests/envs/reference/test_cfr.py`` by exact enumeration and by :mod:`marl_llm_envs.cfr` (best-response
exploitability 0; CFR on :class:`KuhnGame` converges to the same value).

:func:`kuhn_nash` uses only what the acting player may know: its own card and the public betting of the hand.
:data:`EXACT` is what exact scoring (``leaderboard.exact``) needs: the tree of one hand, the env-to-tree maps, and the
alpha = 0 equilibrium as the reference (as the ``kuhn_nash`` bot plays it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marl_llm_envs.cfr import CHANCE, TERMINAL, ExactGame
from marl_llm_envs.envs.kuhn_poker.env import ACTIONS, CALL, CARDS, CHECK, FOLD
from marl_llm_envs.envs.kuhn_poker.env import BET as ENV_BET
from marl_llm_envs.envs.kuhn_poker.env import CALL as ENV_CALL

PASS, BET = "p", "b"  # abstract moves: pass = check or fold, bet = bet or call


class KuhnGame:
    """Kuhn poker for :mod:`marl_llm_envs.cfr`: player 0 acts first; a state is (cards, history).

    Info sets are ``"<own card>:<history>"`` over ``p`` (check/fold) and ``b`` (bet/call), e.g. ``"Q:pb"``."""

    def initial_state(self):
        return ((), "")

    def current_player(self, state) -> int:
        cards, h = state
        if len(cards) < 2:
            return CHANCE
        if h in ("pp", "bp", "bb", "pbp", "pbb"):
            return TERMINAL
        return len(h) % 2

    def chance_outcomes(self, state):
        cards, _ = state
        left = [c for c in range(3) if c not in cards]
        return [(c, 1.0 / len(left)) for c in left]

    def legal_actions(self, state):
        return [PASS, BET]

    def infoset(self, state) -> str:
        cards, h = state
        return f"{CARDS[cards[len(h) % 2]]}:{h}"

    def next_state(self, state, action):
        cards, h = state
        if len(cards) < 2:
            return (cards + (action,), h)
        return (cards, h + action)

    def utility(self, state) -> float:
        cards, h = state
        if h == "bp":
            return 1.0
        if h == "pbp":
            return -1.0
        stake = 2.0 if h.endswith("bb") else 1.0
        return stake if cards[0] > cards[1] else -stake


def kuhn_nash_strategy(alpha: float = 0.0) -> dict[str, list[float]]:
    """The equilibrium with parameter ``alpha`` as ``{infoset: [P(pass), P(bet)]}`` over :class:`KuhnGame`'s info
    sets (pass = check or fold, bet = bet or call)."""
    if not 0.0 <= alpha <= 1.0 / 3.0 + 1e-12:
        raise ValueError(f"alpha must be in [0, 1/3], got {alpha!r}")
    bet = {
        # first player opens
        "J:": alpha, "Q:": 0.0, "K:": 3.0 * alpha,
        # first player, checked and facing a bet: call
        "J:pb": 0.0, "Q:pb": alpha + 1.0 / 3.0, "K:pb": 1.0,
        # second player facing a bet: call
        "J:b": 0.0, "Q:b": 1.0 / 3.0, "K:b": 1.0,
        # second player after a check: bet
        "J:p": 1.0 / 3.0, "Q:p": 0.0, "K:p": 1.0,
    }
    return {key: [1.0 - p, p] for key, p in bet.items()}


def kuhn_infoset(env, agent: str) -> str:
    """``agent``'s info set in the current hand of a ``kuhn_poker-v0`` env (own card and the hand's betting)."""
    card, moves = env.unwrapped.info_state(agent)
    history = "".join(BET if move in (ENV_BET, ENV_CALL) else PASS for move in moves)
    return f"{CARDS[card]}:{history}"


def kuhn_nash(env, agent: str, rng: np.random.Generator, alpha: float = 0.0) -> Any:
    """Play the alpha-equilibrium in ``kuhn_poker-v0`` (any ``rounds``; the first player alternates): an index in
    discrete mode, ``"[check]"`` / ``"[bet]"`` / ``"[call]"`` / ``"[fold]"`` in text mode."""
    base = env.unwrapped
    if base.done or agent != base.agent_selection:
        raise ValueError(f"kuhn_nash: it is not {agent}'s turn")
    p_bet = kuhn_nash_strategy(alpha)[kuhn_infoset(base, agent)][1]
    bets = rng.random() < p_bet
    moves = base.info_state(agent)[1]
    facing = bool(moves) and moves[-1] == ENV_BET
    move = (CALL if bets else FOLD) if facing else (ENV_BET if bets else CHECK)
    return move if base.action_mode == "discrete" else f"[{ACTIONS[move]}]"


def _onto_tree(env, agent: str, p: np.ndarray) -> list[float]:
    """The env's discrete-action probabilities onto the tree's: pass (check or fold), bet (bet or call)."""
    return [float(p[CHECK] + p[FOLD]), float(p[ENV_BET] + p[CALL])]


EXACT = ExactGame("kuhn_nash", KuhnGame, kuhn_infoset, _onto_tree, lambda tree: kuhn_nash_strategy(0.0),
                  kwargs={"rounds": 1})
