"""Reference policies for the board games: perfect tic-tac-toe and a shallow Connect Four search.

Both read only the public board, from the agent's own numeric observation (own pieces, then the opponent's), and
return an action in the env's action mode: the cell / column index in discrete mode, ``"[k]"`` in text mode.

* :func:`tic_tac_toe_minimax` plays perfectly (full minimax, memoized over board states). Among the optimal moves
  (same game value; a faster win and a slower loss are preferred) it picks uniformly at random with ``rng``.
* :func:`connect_four_search` is a depth-limited negamax with alpha-beta pruning (default ``depth=4`` plies) on
  bitboards, with a heuristic that scores open windows of four (two or three of a player's pieces with the rest
  empty), centre-column pieces, and wins found in the search (sooner is better). It takes an immediate win, blocks an
  immediate loss when it can, and breaks ties among equally scored moves uniformly at random with ``rng``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from marl_llm_envs.envs.connect_four import COLS, ROWS
from marl_llm_envs.envs.tic_tac_toe import LINES

__all__ = ["connect_four_search", "tic_tac_toe_minimax"]


def _as_action(env, index: int) -> Any:
    return int(index) if env.unwrapped.action_mode == "discrete" else f"[{int(index)}]"


def _own_and_opponent(env, agent: str, cells: int) -> tuple[np.ndarray, np.ndarray]:
    vec = env.unwrapped.observe(agent)["observation"]
    return vec[:cells] > 0.5, vec[cells:2 * cells] > 0.5


# ------------------------------------------------------------------ tic-tac-toe

def _ttt_won(board: tuple[int, ...], who: int) -> bool:
    return any(board[a] == who and board[b] == who and board[c] == who for a, b, c in LINES)


@cache
def _ttt_value(board: tuple[int, ...]) -> int:
    """The value of ``board`` for the player to move (1 = own piece, 2 = opponent's, 0 = empty; the opponent has
    just moved): +(10 - plies) for a win, -(10 - plies) for a loss, 0 for a draw."""
    empty = [i for i, v in enumerate(board) if v == 0]
    if not empty:
        return 0
    best = -100
    for i in empty:
        child = board[:i] + (1,) + board[i + 1:]
        if _ttt_won(child, 1):
            value = len(empty)  # win now: more empty cells left = sooner
        else:
            swapped = tuple((0, 2, 1)[v] for v in child)
            value = -_ttt_value(swapped)
        best = max(best, value)
    return best


def tic_tac_toe_scores(board: tuple[int, ...]) -> dict[int, int]:
    """The minimax value of each empty cell for the player to move (board as in :func:`_ttt_value`)."""
    empty = [i for i, v in enumerate(board) if v == 0]
    scores = {}
    for i in empty:
        child = board[:i] + (1,) + board[i + 1:]
        if _ttt_won(child, 1):
            scores[i] = len(empty)
        else:
            scores[i] = -_ttt_value(tuple((0, 2, 1)[v] for v in child))
    return scores


def tic_tac_toe_minimax(env, agent: str, rng: np.random.Generator) -> Any:
    """tic_tac_toe-v0: a perfect move (minimax, memoized); ties among optimal moves broken uniformly with ``rng``."""
    own, opp = _own_and_opponent(env, agent, 9)
    board = tuple(1 if own[i] else 2 if opp[i] else 0 for i in range(9))
    scores = tic_tac_toe_scores(board)
    best = max(scores.values())
    moves = [i for i, s in scores.items() if s == best]
    return _as_action(env, moves[int(rng.integers(len(moves)))])


# ------------------------------------------------------------------ Connect Four

H = ROWS + 1  # bits per column in the bitboard (one sentinel bit on top)
_BOTTOM = [1 << (c * H) for c in range(COLS)]
_COLUMN = [((1 << ROWS) - 1) << (c * H) for c in range(COLS)]
_TOP = [1 << (c * H + ROWS - 1) for c in range(COLS)]
_ORDER = (3, 2, 4, 1, 5, 0, 6)  # centre first: better alpha-beta pruning
_CENTRE = _COLUMN[3]
_WIN = 1_000_000


def _bit(row: int, col: int) -> int:
    """Bit of (row from the bottom, column)."""
    return 1 << (col * H + row)


def _windows() -> list[int]:
    out = []
    for r in range(ROWS):
        for c in range(COLS):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (-1, 1)):
                cells = [(r + k * dr, c + k * dc) for k in range(4)]
                if all(0 <= rr < ROWS and 0 <= cc < COLS for rr, cc in cells):
                    mask = 0
                    for rr, cc in cells:
                        mask |= _bit(rr, cc)
                    out.append(mask)
    return out


_WINDOWS = _windows()  # the 69 lines of four


def _four(b: int) -> bool:
    for s in (1, H, H - 1, H + 1):  # vertical, horizontal, the two diagonals
        m = b & (b >> s)
        if m & (m >> (2 * s)):
            return True
    return False


def _evaluate(me: int, opp: int) -> int:
    """Heuristic value for ``me`` (the player to move): open windows and centre control."""
    score = 3 * ((me & _CENTRE).bit_count() - (opp & _CENTRE).bit_count())
    for w in _WINDOWS:
        a, b = me & w, opp & w
        if a and not b:
            n = a.bit_count()
            score += 2 if n == 2 else 10 if n == 3 else 0
        elif b and not a:
            n = b.bit_count()
            score -= 2 if n == 2 else 12 if n == 3 else 0
    return score


def _negamax(me: int, opp: int, depth: int, alpha: int, beta: int) -> int:
    mask = me | opp
    moves = [c for c in _ORDER if not mask & _TOP[c]]
    if not moves:
        return 0
    for c in moves:  # a win now ends the search
        if _four(me | ((mask + _BOTTOM[c]) & _COLUMN[c])):
            return _WIN + depth
    if depth == 0:
        return _evaluate(me, opp)
    best = -10 * _WIN
    for c in moves:
        move = (mask + _BOTTOM[c]) & _COLUMN[c]
        value = -_negamax(opp, me | move, depth - 1, -beta, -alpha)
        if value > best:
            best = value
            if value > alpha:
                alpha = value
                if alpha >= beta:
                    break
    return best


def connect_four_scores(me: int, opp: int, depth: int = 4) -> dict[int, int]:
    """Search value of each legal column for the player to move (exact for the best columns, an upper bound for the
    others; bitboards: bit ``column * 7 + row``, row 0 at the bottom)."""
    mask = me | opp
    moves = [c for c in _ORDER if not mask & _TOP[c]]
    scores: dict[int, int] = {}
    best = -10 * _WIN
    for c in moves:
        move = (mask + _BOTTOM[c]) & _COLUMN[c]
        if _four(me | move):
            scores[c] = _WIN + depth + 1
        else:
            # window (best - 1, inf): a column as good as the best so far gets its exact value
            scores[c] = -_negamax(opp, me | move, depth - 1, -10 * _WIN, -(best - 1))
        best = max(best, scores[c])
    return scores


def connect_four_search(env, agent: str, rng: np.random.Generator, depth: int = 4) -> Any:
    """connect_four-v0: alpha-beta negamax ``depth`` plies deep with a window/centre heuristic; ties among the best
    columns broken uniformly with ``rng``."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive int, got {depth!r}")
    own, opp = _own_and_opponent(env, agent, ROWS * COLS)
    me = them = 0
    for i in np.flatnonzero(own):
        me |= _bit(ROWS - 1 - i // COLS, i % COLS)
    for i in np.flatnonzero(opp):
        them |= _bit(ROWS - 1 - i // COLS, i % COLS)
    scores = connect_four_scores(me, them, depth)
    best = max(scores.values())
    moves = sorted(c for c, s in scores.items() if s == best)
    return _as_action(env, moves[int(rng.integers(len(moves)))])
