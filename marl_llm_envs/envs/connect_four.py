"""Connect Four.

| Import             | ``from marl_llm_envs import make; make("connect_four-v0")``          |
|--------------------|---------------------------------------------------------------------|
| Family             | zero_sum                                                            |
| Agents             | ``player_0`` (X, moves first), ``player_1`` (O); each its own team   |
| Action space       | text: ``Text``; discrete: ``Discrete(7)`` = the column index         |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (85,)), [action_mask=Box(0, 1, (7,), int8)])`` |
| Reward range       | -1 .. +1                                                            |
| Kwargs             | ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

Rules (standard). The board has 6 rows and 7 columns, numbered 0-6 from the left. Players alternate dropping a piece
into a column that is not full; it falls to the lowest empty cell of that column. Four of a player's pieces in a line
(horizontal, vertical or either diagonal) win (+1 to the winner, -1 to the loser); a full board with no line is a draw
(0 each).

Observation. ``text`` is the prompt below (the board with the column numbers above it; ``X`` / ``O`` are pieces,
``.`` empty cells). ``observation`` (85 floats): own pieces (42), opponent pieces (42), "it is my turn" (1); a cell's
index is ``row * 7 + column`` with row 0 at the top.

Actions. Text mode: the column number in square brackets, e.g. ``[3]`` (the last bracketed move in the reply
counts). Discrete mode: the column index, with the action mask (1 = the column is not full).

Rewards. At the end only: +1 / -1, or 0 each for a draw.

Invalid moves. A full column (or anything that is not a column) is invalid. ``invalid_move="penalty"`` (default): the
game ends; the offender gets ``invalid_penalty`` (default -1) and the opponent its negation. ``"retry"``: asked again
up to ``max_retries`` times with the error shown, then the penalty. ``"random"``: a uniformly random non-full column.

Ablation. The null action is "the first open column": an ablated player always drops into the lowest-numbered column
that is not full.

The prompt (player_0, first move)::

    You are player_0 playing X in Connect Four. Your opponent plays O.
    Rules: players take turns dropping a piece into one of the 7 columns; it falls to the lowest empty cell of that
    column. Four of your pieces in a line (horizontal, vertical or diagonal) wins; a full board with no line is a draw.
    Board (X and O are pieces, . is empty; the bottom row is the last):
     0 1 2 3 4 5 6
    |. . . . . . .|
    |. . . . . . .|
    |. . . . . . .|
    |. . . . . . .|
    |. . . . . . .|
    |. . . . . . .|
    Your legal moves: [0], [1], [2], [3], [4], [5], [6]
    Reply with exactly one move in square brackets, for example [0].

Version history. v0: first version.
"""

from __future__ import annotations

from marl_llm_envs.envs.board_game import BoardGameEnv

ROWS, COLS = 6, 7
CELLS = ROWS * COLS
ACTIONS = [str(c) for c in range(COLS)]
MARK = {"player_0": "X", "player_1": "O", None: "."}
DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))  # (row step, column step): horizontal, vertical, two diagonals
RULES = (
    "Rules: players take turns dropping a piece into one of the 7 columns; it falls to the lowest empty cell of that\n"
    "column. Four of your pieces in a line (horizontal, vertical or diagonal) wins; a full board with no line is a draw."
)
HEADER = " " + " ".join(ACTIONS)


class raw_env(BoardGameEnv):
    env_id = "connect_four-v0"
    version = 0
    vector_size = 2 * CELLS + 1
    metadata = {"render_modes": ["human", "ansi"], "name": "connect_four_v0", "is_parallelizable": False}
    _mutable = ("_board", "_heights")
    game_name, rules = "Connect Four", RULES
    board_caption = "Board (X and O are pieces, . is empty; the bottom row is the last):"
    actions, cells, marks = ACTIONS, CELLS, MARK

    def _start(self) -> None:
        self._board: list[str | None] = [None] * CELLS  # row-major, row 0 at the top
        self._heights: list[int] = [0] * COLS  # pieces in each column
        self._moves = 0
        self.agent_selection = "player_0"

    def _legal_ids(self, agent: str) -> list[int]:
        return [c for c in range(COLS) if self._heights[c] < ROWS]

    def _null_move(self, agent: str) -> int:
        return next(c for c in range(COLS) if self._heights[c] < ROWS)

    def _apply(self, agent: str, move: int) -> None:
        row = ROWS - 1 - self._heights[move]
        self._heights[move] += 1
        self._board[row * COLS + move] = agent
        self._moves += 1
        if self._wins(agent, row, move):
            self._win(agent)
        elif self._moves == CELLS:
            self._draw()
        else:
            self.agent_selection = self._other(agent)

    def _wins(self, agent: str, row: int, col: int) -> bool:
        """Whether the piece just placed at (row, col) completes four in a line (only lines through it are checked)."""
        board = self._board
        for dr, dc in DIRECTIONS:
            count = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < ROWS and 0 <= c < COLS and board[r * COLS + c] == agent:
                    count += 1
                    r += sign * dr
                    c += sign * dc
            if count >= 4:
                return True
        return False

    def _grid(self) -> str:
        board = self._board
        rows = ["|" + " ".join(MARK[board[r * COLS + c]] for c in range(COLS)) + "|" for r in range(ROWS)]
        return HEADER + "\n" + "\n".join(rows)


env = raw_env
