"""What the board games (tic_tac_toe-v0, connect_four-v0) share: two players marking cells of one board."""

from __future__ import annotations

import numpy as np

from marl_llm_envs.core import TwoPlayerZeroSumEnv


class BoardGameEnv(TwoPlayerZeroSumEnv):
    """Two players, X (``player_0``, first) and O, mark the cells of one board (``self._board``: a list of
    ``cells`` owners, an agent or None). A game sets the class attributes below, implements ``_grid()`` (the board
    as text) and ends the game with :meth:`_win` or :meth:`_draw`.

    The prompt is the game's opening line, ``rules``, ``board_caption``, the grid and the turn text. The observation
    vector is own marks (``cells``), the opponent's marks (``cells``) and "my turn" (1)."""

    game_name: str = ""                 # as the prompt names it: "tic-tac-toe"
    board_caption: str = ""             # the line above the grid
    rules: str = ""
    actions: list[str] = []
    cells: int = 0
    marks = {"player_0": "X", "player_1": "O"}

    def action_names(self, agent: str) -> list[str]:
        return self.actions

    def _win(self, agent: str) -> None:
        self._finish({agent: 1.0, self._other(agent): -1.0}, outcome="win", winner=agent)

    def _draw(self) -> None:
        self._finish({"player_0": 0.0, "player_1": 0.0}, outcome="draw", winner=None)

    def _grid(self) -> str:
        raise NotImplementedError

    def _text(self, agent: str) -> str:
        mark = self.marks
        lines = [
            (f"You are {agent} playing {mark[agent]} in {self.game_name}. Your opponent plays "
             f"{mark[self._other(agent)]}."),
            self.rules,
            self.board_caption,
            self._grid(),
        ]
        lines.append(self._turn_text(agent))
        return "\n".join(lines)

    def _vector(self, agent: str, out: np.ndarray) -> None:
        cells = self.cells
        for i, owner in enumerate(self._board):
            if owner is not None:
                out[i if owner == agent else cells + i] = 1.0
        out[2 * cells] = 1.0 if agent == self.agent_selection and not self.done else 0.0

    def _render(self) -> str:
        return f"{self._grid()}\n{self._to_move()}"
