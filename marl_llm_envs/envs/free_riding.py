"""Free riding: one seat decides the team reward; ``idle_seats`` more seats act but never change it.

| Import             | ``from marl_llm_envs import make; make("free_riding-v0", idle_seats=3)`` |
|--------------------|-----------------------------------------------------------------------|
| Family             | cooperative (one team, ``team``)                                      |
| Agents             | ``decider`` (role decider), then ``idle_0`` ... ``idle_{idle_seats-1}`` (role idle) |
| Action space       | text: ``Text``; discrete: decider ``Discrete(3)`` = red, green, blue; idle seats ``Discrete(3)`` = hum, nod, wait |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (5 + idle_seats,)), [action_mask])`` |
| Reward range       | {0, 1}; ``invalid_penalty`` after an invalid move of the decider       |
| Kwargs             | ``idle_seats=1`` (0..1024), ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |
| Reference policy   | ``reference_policies("free_riding-v0")["card_matcher"]`` (every seat)   |

The credit suite's free-riding family, swept over ``idle_seats`` in e.g. {0, 1, 3, 7}: with one global reward,
how fast does the deciding seat learn as seats that contribute nothing are added, and how far do those seats'
policies drift under each credit method (difference rewards, Wolpert & Tumer 2002, give them exactly zero credit)?

The episode. At reset a card is drawn from the env's RNG: red, green or blue, each with probability 1/3. Only
the ``decider`` sees it. Each seat moves once, in order: the decider names a colour (``[red]``, ``[green]``,
``[blue]``), then each idle seat plays ``[hum]``, ``[nod]`` or ``[wait]``. Idle moves change nothing: no
observation, no reward and no rule depends on them.

Rewards. At the end every seat gets the team reward: ``1`` if the decider named the colour of the card, else
``0``. Optimum and random play: naming the card is right every time, ``1`` (the optimum, since rewards are at most
1; :func:`card_matcher`); a uniformly random decider is right with probability 1/3 whatever the card, ``1/3``.
The idle seats' moves never matter, so every idle policy is optimal. Measured in ``spec("free_riding-v0").anchors``
(rows ``"random, idle_seats=K"`` and ``"card_matcher, idle_seats=K"``, K in 0, 1, 3, 7).

Measuring drift. An idle seat's optimal policy is any policy, and its observation is the same in every episode
(its seat index), so a learned idle policy is one distribution ``p`` over its 3 moves. The reference for "no
drift" is its starting policy; for a policy started uniform (an MLP at init, or an LLM's choice distribution, which
need not be uniform) report, per idle seat, the total-variation distance ``TV(p, p_0) = 0.5 * sum_m |p(m) -
p_0(m)|`` and ``KL(p || uniform) = log 3 - H(p)`` over training, read from the policy's probabilities on the seat's
observation (exact; no sampling needed). From episodes alone, use the empirical frequencies of ``moves[idle_i]`` in
the final infos over a window of episodes (with its sampling noise, about ``sqrt(2 / (3 n))`` in TV for ``n``
episodes of a uniform policy). Any drift is pure noise that a credit method put into the idle seats' updates.

Observation. ``text`` is the prompt below. ``observation`` (5 + idle_seats floats): the card one-hot (3;
decider only, zeros for idle seats), "I am the decider" (1), "I have moved" (1), own idle-seat index one-hot
(idle_seats; zeros for the decider). Idle seats never see the card or any other seat's move; the decider sees no
idle move.

Final infos: ``card``, ``choice`` (the decider's colour, None after an invalid move or when ablated), ``correct``
and ``moves`` (seat -> its move name, None for a seat that did not move).

Invalid moves. The decider: ``"penalty"`` (default) ends the episode at once with team reward ``invalid_penalty``
(default -1); ``"retry"``: asked again up to ``max_retries`` times with the error in the prompt, then the penalty;
``"random"``: a uniformly random legal move. An idle seat cannot change the reward even by an invalid move: under
``"penalty"`` (and after the retries of ``"retry"``) its invalid move counts as ``[wait]``, recorded in its
``infos["invalid_action"]`` as usual, and the team reward is untouched.

Ablation. The decider's null move names no colour (scored 0, the "no answer" of the solver in think_solve-v0); an
idle seat's null move is ``[wait]``. So ablating an idle seat never changes the team reward (its exact
leave-one-out credit is 0) and ablating the decider before it moves gives 0.

The prompt (decider, the card is green, idle_seats=1)::

    You are the decider in a team of 2 seats (you and 1 idle seat). You alone see a card: red, green or blue.
    Name its colour: the whole team scores 1 if you name the card's colour and 0 otherwise. The other seats'
    moves change nothing.

    Your card: green
    Your legal moves: [red], [green], [blue]
    Reply with exactly one move in square brackets.

The prompt (idle_0, idle_seats=1)::

    You are idle_0 in a team of 2 seats (the decider and 1 idle seat). The decider alone sees a card (red, green or
    blue) and names its colour: the whole team scores 1 if it names the card's colour and 0 otherwise. Your move
    changes nothing.

    Your legal moves: [hum], [nod], [wait]
    Reply with exactly one move in square brackets.

Version history. v0: first version.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marl_llm_envs.core import TextEnv, check_int

MAX_IDLE_SEATS = 1024   # an episode with 1,024 idle seats takes about 0.1 s (4,096: about 1.7 s)
COLOURS = ["red", "green", "blue"]
IDLE_MOVES = ["hum", "nod", "wait"]
NO_CHOICE = -1


class raw_env(TextEnv):
    env_id = "free_riding-v0"
    version = 0
    family = "cooperative"
    metadata = {"render_modes": ["human", "ansi"], "name": "free_riding_v0", "is_parallelizable": False}
    reward_range = (0.0, 1.0)
    idle_roles = ("idle",)          # idle moves change nothing; the decider's move decides the team reward
    _mutable = ("_moves",)

    def __init__(self, *, idle_seats: int = 1, **kwargs: Any) -> None:
        self.idle_seats = check_int("idle_seats", idle_seats, 0, MAX_IDLE_SEATS,
                                    "each idle seat is an agent, and every observation has an idle_seats-long one-hot")
        self.possible_agents = ["decider", *(f"idle_{i}" for i in range(self.idle_seats))]
        self.roles = {a: "decider" if a == "decider" else "idle" for a in self.possible_agents}
        self.teams = {a: "team" for a in self.possible_agents}
        self.vector_size = 5 + self.idle_seats
        super().__init__(idle_seats=self.idle_seats, **kwargs)
        self.reward_range = (min(0.0, self.invalid_penalty), 1.0)

    def action_names(self, agent: str) -> list[str]:
        return list(COLOURS) if agent == "decider" else list(IDLE_MOVES)

    # -------------------------------------------------------------- game
    def _start(self) -> None:
        self.card = COLOURS[self._random_index(3)]
        self.choice: str | None = None
        self._moves: dict[str, str | None] = {a: None for a in self.possible_agents}
        self._moved: frozenset[str] = frozenset()
        self.agent_selection = "decider"

    def _legal_ids(self, agent: str) -> list[int]:
        return [0, 1, 2]

    def _null_move(self, agent: str) -> Any:
        return NO_CHOICE if agent == "decider" else IDLE_MOVES.index("wait")

    def _apply(self, agent: str, move: Any) -> None:
        if agent == "decider":
            self.choice = None if move == NO_CHOICE else COLOURS[move]
            self._moves[agent] = self.choice
        else:
            self._moves[agent] = IDLE_MOVES[move]
        self._moved = self._moved | {agent}
        self._next(agent)

    def _next(self, agent: str) -> None:
        i = self.possible_agents.index(agent)
        if i + 1 < len(self.possible_agents):
            self.agent_selection = self.possible_agents[i + 1]
            return
        correct = self.choice == self.card
        self._finish({a: 1.0 if correct else 0.0 for a in self.agents}, **self._final_info(correct))

    def _final_info(self, correct: bool) -> dict[str, Any]:
        return {"card": self.card, "choice": self.choice, "correct": correct, "moves": dict(self._moves)}

    def _penalize(self, agent: str) -> None:
        if agent == "decider":
            self._finish({a: self.invalid_penalty for a in self.agents}, outcome="invalid_move", offender=agent,
                         **self._final_info(False))
            return
        self._apply(agent, IDLE_MOVES.index("wait"))  # an idle seat cannot change the reward

    # -------------------------------------------------------------- observations
    def _text(self, agent: str) -> str:
        k = self.idle_seats
        seats = f"{k} idle seat{'s' if k != 1 else ''}"
        if agent == "decider" and k == 0:
            lines = [
                "You are the decider, alone in your team. You see a card: red, green or blue.\nName its colour: you "
                "score 1 if you name the card's colour and 0 otherwise.",
                "",
                f"Your card: {self.card}",
            ]
        elif agent == "decider":
            lines = [
                f"You are the decider in a team of {k + 1} seats (you and {seats}). You alone see a "
                "card: red, green or blue.\nName its colour: the whole team scores 1 if you name the card's colour "
                "and 0 otherwise. The other seats'\nmoves change nothing.",
                "",
                f"Your card: {self.card}",
            ]
        else:
            lines = [
                f"You are {agent} in a team of {k + 1} seats (the decider and {seats}). The decider alone sees a card "
                "(red, green or\nblue) and names its colour: the whole team scores 1 if it names the card's colour "
                "and 0 otherwise. Your move\nchanges nothing.",
                "",
            ]
        if self.done:
            lines.append("The game is over.")
        elif agent == self.agent_selection:
            lines.append(f"Your legal moves: {', '.join(self.legal_actions(agent))}")
            lines.append("Reply with exactly one move in square brackets.")
        else:
            lines.append("You have moved." if agent in self._moved else "Waiting for another seat to move.")
        return "\n".join(lines)

    def _vector(self, agent: str, out: np.ndarray) -> None:
        if agent == "decider":
            out[COLOURS.index(self.card)] = 1.0
            out[3] = 1.0
        else:
            out[5 + int(agent.split("_")[1])] = 1.0
        out[4] = 1.0 if agent in self._moved else 0.0

    def _render(self) -> str:
        moves = ", ".join(f"{a}: {m}" for a, m in self._moves.items())
        return f"[free_riding] card: {self.card} | {moves} | {self._to_move()}"


env = raw_env
