"""A small tabular CFR / CFR+ solver for two-player zero-sum extensive-form games, with exact best responses.

A game is described by an object with these methods (states are any hashable-free Python values; the solver only
passes them back to the game)::

    initial_state()            -> state
    current_player(state)      -> 0, 1, CHANCE or TERMINAL
    utility(state)             -> player 0's payoff at a terminal state (player 1 gets its negation)
    chance_outcomes(state)     -> [(outcome, probability), ...] at a chance node
    legal_actions(state)       -> [action, ...] at a decision node (the same list at every state of an info set)
    infoset(state)             -> a string naming the acting player's information set
    next_state(state, action)  -> the state after ``action`` (or a chance outcome)

The game must have perfect recall. :class:`Tree` enumerates it once into flat NumPy arrays; :func:`solve` runs CFR+
(regret matching+, alternating updates, linearly weighted averaging; Tammelin 2014) or vanilla CFR (alternating
updates, uniform averaging; Zinkevich et al. 2007) over the whole tree level by level, vectorised with NumPy.
:func:`best_response_value` is an exact best response (the responder knows the opponent's strategy, not the
hidden state), so :func:`exploitability` is exact.

A strategy is a flat array over the tree's (info set, action) edges, or a dict ``{infoset: probabilities over
legal_actions}`` (see :meth:`Tree.to_dict` / :meth:`Tree.from_dict`).

:class:`ExactGame` is what a game registers (``register(..., exact=...)`` in :mod:`marl_llm_envs`) so that
``leaderboard.exact`` can score a policy on its tree exactly: the tree, the env-to-tree maps and the reference.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CHANCE = -1
TERMINAL = -2

__all__ = [
    "CHANCE",
    "TERMINAL",
    "ExactGame",
    "SolveResult",
    "Tree",
    "best_response_value",
    "expected_value",
    "exploitability",
    "solve",
]


@dataclass(frozen=True)
class ExactGame:
    """How a game's env maps onto its CFR tree, for exact scoring (``spec(env_id).exact``; ``leaderboard.exact``).

    The tree describes the env made with ``kwargs`` (and any ``action_mode``); other kwargs are not covered."""

    reference: str                                              # the reference bot's name (the protocol's opponent)
    game: Callable[[], Any]                                     # () -> the game description (module docstring)
    infoset: Callable[[Any, str], str]                          # (env, agent) -> the tree's info set name
    onto_tree: Callable[[Any, str, np.ndarray], list[float]]    # env-action probabilities -> the tree's actions
    reference_table: Callable[[Any], dict[str, list[float]]]    # tree -> {infoset: probs over the tree's actions}
    kwargs: dict[str, Any] = field(default_factory=dict)        # the env kwargs the tree describes


class Tree:
    """The game tree of ``game``, enumerated once (breadth first) into flat arrays."""

    def __init__(self, game: Any) -> None:
        self.infosets: dict[str, int] = {}
        self.iset_player: list[int] = []
        self.iset_actions: list[list[Any]] = []
        self._index(*self._enumerate(game))

    def _enumerate(self, game: Any) -> tuple[list, ...]:
        """Every state breadth first: per node its parent, depth, player, info set, in-edge, chance probability and
        utility (lists); fills the info-set tables on the way."""
        parent, depth, player, iset, edge, chance_p, util = [], [], [], [], [], [], []
        frontier = [(game.initial_state(), -1, 0, -1, 1.0)]
        while frontier:
            nxt = []
            for state, par, d, e, p in frontier:
                n = len(parent)
                parent.append(par)
                depth.append(d)
                edge.append(e)
                chance_p.append(p)
                who = game.current_player(state)
                player.append(who)
                if who == TERMINAL:
                    util.append(float(game.utility(state)))
                    iset.append(-1)
                elif who == CHANCE:
                    util.append(0.0)
                    iset.append(-1)
                    for outcome, prob in game.chance_outcomes(state):
                        nxt.append((game.next_state(state, outcome), n, d + 1, -1, float(prob)))
                else:
                    util.append(0.0)
                    key = game.infoset(state)
                    actions = list(game.legal_actions(state))
                    i = self.infosets.get(key)
                    if i is None:
                        i = self.infosets[key] = len(self.iset_player)
                        self.iset_player.append(who)
                        self.iset_actions.append(actions)
                    elif self.iset_actions[i] != actions or self.iset_player[i] != who:
                        raise ValueError(f"info set {key!r} has states with different players or legal actions")
                    iset.append(i)
                    for a_index, action in enumerate(actions):
                        nxt.append((game.next_state(state, action), n, d + 1, (i, a_index), 1.0))
            frontier = nxt
        return parent, depth, player, iset, edge, chance_p, util

    def _index(self, parent: list, depth: list, player: list, iset: list, edge: list, chance_p: list,
               util: list) -> None:
        """The flat NumPy arrays the passes run on (levels, edges, each level's children by kind of parent)."""
        self.n = len(parent)
        sizes = np.array([len(a) for a in self.iset_actions], np.int64)
        self.iset_offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.iset_size = sizes
        self.n_edges = int(sizes.sum())
        self.edge_iset = np.repeat(np.arange(len(sizes)), sizes)
        self.edge_player = np.asarray(self.iset_player, np.int64)[self.edge_iset]
        self.parent = np.asarray(parent, np.int64)
        self.depth = np.asarray(depth, np.int64)
        self.player = np.asarray(player, np.int64)
        self.iset = np.asarray(iset, np.int64)
        self.edge = np.array([-1 if e == -1 else self.iset_offset[e[0]] + e[1] for e in edge], np.int64)
        self.chance_p = np.asarray(chance_p, np.float64)
        self.util = np.asarray(util, np.float64)
        # the nodes of each depth are contiguous (breadth-first order); children of depth d are levels[d + 1]
        bounds = np.flatnonzero(np.diff(self.depth)) + 1
        starts, ends = np.concatenate([[0], bounds]), np.concatenate([bounds, [self.n]])
        self.levels = [np.arange(a, b) for a, b in zip(starts, ends)]
        self.parent_player = np.where(self.parent >= 0, self.player[np.maximum(self.parent, 0)], CHANCE)
        self.children: list[list[int]] = [[] for _ in range(self.n)]
        for c in range(1, self.n):
            self.children[self.parent[c]].append(c)
        # per level, the children of each kind of parent (precomputed once: the passes below are pure NumPy)
        self._level_parts = []
        for level in self.levels[1:]:
            pp = self.parent_player[level]
            parts = [(level[pp == p], self.edge[level[pp == p]]) for p in (0, 1)]
            chance = level[pp == CHANCE]
            self._level_parts.append((level, self.parent[level], parts, chance, self.chance_p[chance]))
        self._chance_child = self.parent_player == CHANCE
        # every child of a decision node of player p, with its parent and edge (for regret and average updates)
        self.moves = []
        for p in (0, 1):
            kids = np.flatnonzero(self.parent_player == p)
            self.moves.append((kids, self.parent[kids], self.edge[kids]))

    # ---------------------------------------------------------------- strategies
    def uniform(self) -> np.ndarray:
        return 1.0 / self.iset_size[self.edge_iset].astype(np.float64)

    def normalize(self, weights: np.ndarray) -> np.ndarray:
        """Per info set, ``weights`` / their sum (uniform where the sum is 0)."""
        totals = np.add.reduceat(weights, self.iset_offset) if self.n_edges else np.zeros(0)
        t = totals[self.edge_iset]
        return np.where(t > 0, weights / np.where(t > 0, t, 1.0), self.uniform())

    def to_dict(self, strategy: np.ndarray) -> dict[str, list[float]]:
        return {key: strategy[self.iset_offset[i]: self.iset_offset[i] + self.iset_size[i]].tolist()
                for key, i in self.infosets.items()}

    def from_dict(self, table: dict[str, Any], default: Callable[[str], Any] | None = None) -> np.ndarray:
        """A flat strategy from ``{infoset: probabilities over legal_actions}`` (missing keys: ``default(key)`` or
        uniform); each info set's probabilities are renormalised."""
        out = self.uniform()
        for key, i in self.infosets.items():
            probs = table.get(key) if key in table else (default(key) if default is not None else None)
            if probs is not None:
                probs = np.asarray(probs, np.float64)
                if probs.shape != (self.iset_size[i],):
                    raise ValueError(f"info set {key!r}: expected {self.iset_size[i]} probabilities, got {probs.shape}")
                out[self.iset_offset[i]: self.iset_offset[i] + self.iset_size[i]] = probs
        return self.normalize(out)

    # ---------------------------------------------------------------- passes over the tree
    def reaches(self, strategy: np.ndarray) -> np.ndarray:
        """Reach probabilities, shape (3, n): row p in {0, 1} is player p's own contribution, row 2 chance's."""
        reach = np.ones((3, self.n))
        for level, par, parts, chance, chance_p in self._level_parts:
            reach[:, level] = reach[:, par]
            for p, (kids, edges) in enumerate(parts):
                reach[p, kids] *= strategy[edges]
            reach[2, chance] *= chance_p
        return reach

    def values(self, strategy: np.ndarray) -> np.ndarray:
        """Player 0's expected payoff below every node when both players follow ``strategy``."""
        v = self.util.copy()
        w = np.where(self._chance_child, self.chance_p, strategy[np.maximum(self.edge, 0)])
        for level, par, _, _, _ in reversed(self._level_parts):
            v += np.bincount(par, weights=w[level] * v[level], minlength=self.n)
        return v


def expected_value(tree: Tree, strategy: np.ndarray) -> float:
    """Player 0's expected payoff when both players follow ``strategy`` (each its own info sets)."""
    return float(tree.values(strategy)[0])


def best_response_value(tree: Tree, strategy: np.ndarray, player: int) -> float:
    """The expected payoff of ``player``'s best response to the other player's part of ``strategy`` (exact)."""
    sign = 1.0 if player == 0 else -1.0
    reach = tree.reaches(strategy)
    cf = reach[1 - player] * reach[2]  # opponent and chance reach of every node
    members: dict[int, list[int]] = {}
    for n in np.flatnonzero(tree.player == player):
        members.setdefault(int(tree.iset[n]), []).append(int(n))
    value = np.full(tree.n, np.nan)
    choice: dict[int, int] = {}
    util, kind, children, chance_p, edge = tree.util, tree.player, tree.children, tree.chance_p, tree.edge

    def decide(i: int) -> int:
        if i not in choice:
            q = np.zeros(tree.iset_size[i])
            for h in members[i]:
                if cf[h] > 0:
                    for a, c in enumerate(children[h]):
                        q[a] += cf[h] * node_value(c)
            choice[i] = int(np.argmax(q))
        return choice[i]

    def node_value(n: int) -> float:
        if not np.isnan(value[n]):
            return value[n]
        who = kind[n]
        if who == TERMINAL:
            v = sign * util[n]
        elif who == player:
            v = node_value(children[n][decide(int(tree.iset[n]))])
        elif who == CHANCE:
            v = sum(chance_p[c] * node_value(c) for c in children[n])
        else:
            v = sum(strategy[edge[c]] * node_value(c) for c in children[n] if strategy[edge[c]] > 0)
        value[n] = v
        return v

    return float(node_value(0))


def exploitability(tree: Tree, strategy: np.ndarray) -> float:
    """Half the NashConv: the mean over both players of what a best response gains against ``strategy`` over the
    game value (0 exactly at a Nash equilibrium; chips per hand for poker)."""
    return 0.5 * (best_response_value(tree, strategy, 0) + best_response_value(tree, strategy, 1))


@dataclass
class SolveResult:
    average: np.ndarray  # the average strategy (what converges to an equilibrium)
    current: np.ndarray  # the last iteration's strategy
    iterations: int
    seconds: float
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (iteration, seconds, exploitability)


def solve(tree: Tree, iterations: int, plus: bool = True, delay: int = 0, check_every: int = 0,
          callback: Callable[[int, float, float], None] | None = None) -> SolveResult:
    """Run CFR+ (``plus=True``) or vanilla CFR for ``iterations`` iterations, alternating the updated player.

    CFR+ weights iteration t's strategy by ``max(t - delay, 0)`` in the average; vanilla CFR weights all equally.
    Every ``check_every`` iterations (0 = never) the exploitability of the average is computed, recorded in
    ``history`` and passed to ``callback(iteration, seconds, exploitability)``.
    """
    regret = np.zeros(tree.n_edges)
    avg = np.zeros(tree.n_edges)
    sigma = tree.uniform()
    history: list[tuple[int, float, float]] = []
    start = time.perf_counter()
    for t in range(1, iterations + 1):
        for p in (0, 1):
            sigma = tree.normalize(np.maximum(regret, 0.0))
            reach = tree.reaches(sigma)
            v = tree.values(sigma)
            if p == 1:
                v = -v
            kids, par, edges = tree.moves[p]
            cf = reach[1 - p] * reach[2]
            inst = np.bincount(edges, weights=cf[par] * (v[kids] - v[par]), minlength=tree.n_edges)
            mine = tree.edge_player == p
            regret[mine] += inst[mine]
            if plus:
                np.maximum(regret, 0.0, out=regret)
            weight = max(t - delay, 0) if plus else 1.0
            if weight:
                own = np.bincount(edges, weights=reach[p][par], minlength=tree.n_edges)
                avg[mine] += weight * own[mine] * sigma[mine]
        if check_every and t % check_every == 0:
            seconds = time.perf_counter() - start
            e = exploitability(tree, tree.normalize(avg))
            history.append((t, seconds, e))
            if callback is not None:
                callback(t, seconds, e)
    return SolveResult(tree.normalize(avg), tree.normalize(np.maximum(regret, 0.0)), iterations,
                       time.perf_counter() - start, history)
