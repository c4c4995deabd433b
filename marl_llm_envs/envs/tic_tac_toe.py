"""Tic-tac-toe.

| Import             | ``from marl_llm_envs import make; make("tic_tac_toe-v0")``           |
|--------------------|---------------------------------------------------------------------|
| Family             | zero_sum                                                            |
| Agents             | ``player_0`` (X, moves first), ``player_1`` (O); each its own team   |
| Action space       | text: ``Text``; discrete: ``Discrete(9)`` = the cell index           |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (19,)), [action_mask=Box(0, 1, (9,), int8)])`` |
| Reward range       | -1 .. +1                                                            |
| Kwargs             | ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

Rules (standard). Cells are numbered 0-8, row by row from the top left. Players alternate placing their mark in an
empty cell; three of a mark in a row, column or diagonal wins (+1 to the winner, -1 to the loser); a full board with
no line is a draw (0 each).

Observation. ``text`` is the prompt below (the board, with the numbers of the empty cells). ``observation`` (19
floats): own marks (9), opponent marks (9), "it is my turn" (1).

Actions. Text mode: the cell number in square brackets, e.g. ``[4]`` (the last bracketed move in the reply counts).
Discrete mode: the cell index, with the action mask.

Rewards. At the end only: +1 / -1, or 0 each for a draw.

Invalid moves. ``invalid_move="penalty"`` (default): the game ends; the offender gets ``invalid_penalty`` (default
-1) and the opponent its negation. ``"retry"``: asked again up to ``max_retries`` times with the error shown, then
the penalty. ``"random"``: a uniformly random empty cell.

Ablation. The null action is "the first empty cell": an ablated player always marks the lowest-numbered empty cell.

The prompt (player_0, first move)::

    You are player_0 playing X in tic-tac-toe. Your opponent plays O.
    Rules: players take turns marking an empty cell; three of your marks in a row, column or diagonal wins; a full
    board with no line is a draw.
    Board (numbers are empty cells):
     0 | 1 | 2
    ---+---+---
     3 | 4 | 5
    ---+---+---
     6 | 7 | 8
    Your legal moves: [0], [1], [2], [3], [4], [5], [6], [7], [8]
    Reply with exactly one move in square brackets, for example [0].

Version history. v0: first version.
"""

from __future__ import annotations

from marl_llm_envs.envs.board_game import BoardGameEnv

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
ACTIONS = [str(i) for i in range(9)]
MARK = {"player_0": "X", "player_1": "O"}
RULES = (
    "Rules: players take turns marking an empty cell; three of your marks in a row, column or diagonal wins; a full\n"
    "board with no line is a draw."
)


class raw_env(BoardGameEnv):
    env_id = "tic_tac_toe-v0"
    version = 0
    vector_size = 19
    metadata = {"render_modes": ["human", "ansi"], "name": "tic_tac_toe_v0", "is_parallelizable": False}
    _mutable = ("_board",)
    game_name, board_caption, rules = "tic-tac-toe", "Board (numbers are empty cells):", RULES
    actions, cells, marks = ACTIONS, 9, MARK

    def _start(self) -> None:
        self._board: list[str | None] = [None] * 9  # "player_0" / "player_1" / None
        self.agent_selection = "player_0"

    def _legal_ids(self, agent: str) -> list[int]:
        return [i for i, owner in enumerate(self._board) if owner is None]

    def _null_move(self, agent: str) -> int:
        return self._board.index(None)

    def _apply(self, agent: str, move: int) -> None:
        board = self._board
        board[move] = agent
        for a, b, c in LINES:
            if board[a] == agent and board[b] == agent and board[c] == agent:
                self._win(agent)
                return
        if None not in board:
            self._draw()
            return
        self.agent_selection = self._other(agent)

    def _grid(self) -> str:
        cells = [MARK[o] if o is not None else str(i) for i, o in enumerate(self._board)]
        rows = [f" {cells[r]} | {cells[r + 1]} | {cells[r + 2]}" for r in (0, 3, 6)]
        return "\n---+---+---\n".join(rows)


env = raw_env
