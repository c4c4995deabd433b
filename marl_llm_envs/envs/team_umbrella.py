"""Team umbrella: one early decisive move, a late team reward, noisy distractor rounds in between (temporal credit).

| Import             | ``from marl_llm_envs import make; make("team_umbrella-v0", delay=10)``  |
|--------------------|-----------------------------------------------------------------------|
| Family             | cooperative (one team, ``team``)                                      |
| Agents             | ``player_0`` (role player_0, the decider), ``player_1`` (role player_1) |
| Action space       | text: ``Text``; discrete: player_0 ``Discrete(5)`` = umbrella, no_umbrella, walk, wait, look; player_1 ``Discrete(3)`` = walk, wait, look |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (8,)), [action_mask])``       |
| Reward range       | team return in ``[-1 - delay * noise, 1 + delay * noise]`` (``invalid_penalty`` instead of the final +-1 after an invalid move) |
| Kwargs             | ``delay=3`` (1..10000), ``noise=1.0`` (float >= 0), ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |
| Reference policy   | ``reference_policies("team_umbrella-v0")["forecast_follower"]`` (both seats) |

bsuite's ``umbrella_length`` (Osband et al., 2020, "Behaviour Suite for Reinforcement Learning", the umbrella
chain) for a team of two: the credit suite's temporal-credit family, swept over ``delay`` in {1, 3, 10, 30}.

The episode. At reset the weather is drawn, rain or sun with probability 1/2 each, and so are the ``delay``
distractor rewards (all from the env's RNG, before any move, so they never depend on the moves; a clone, an
ablated branch and a replay see the same ones). The walk has ``1 + delay`` rounds; in every round ``player_0``
moves, then ``player_1``. Round 1 is the decision: ``player_0`` alone sees the forecast (always right) and chooses
``[umbrella]`` or ``[no_umbrella]``; ``player_1`` makes a distractor move. Rounds 2 .. 1 + delay are distractor
rounds: both seats choose ``[walk]``, ``[wait]`` or ``[look]``, moves that change nothing (no observation, no
reward, no later rule depends on them).

Rewards (both seats get every team reward; the team return is their sum over the episode):

* after each distractor round ``t`` (rounds 2 .. 1 + delay): the noise reward ``eps_t``, ``+noise`` or ``-noise``
  with probability 1/2 each (bsuite's random +-1 distractor reward; ``noise=0`` turns it off);
* at the end of the last round, in addition: the final reward ``+1`` if ``player_0`` took the umbrella and it rains
  or left it and it is sunny, else ``-1``. It depends only on the decisive move (and the weather).

Optimum and random play. The team return is ``F + sum_t eps_t`` with ``F`` the final reward. No move changes the
``eps_t`` and ``E[eps_t] = 0``, so ``E[return] = E[F] = 2 P(match) - 1``. Following the forecast matches every time:
``E[return] = 1``, and no policy does better since ``F <= 1`` (the optimum; :func:`forecast_follower`). A uniformly
random ``player_0`` matches with probability 1/2 whatever the weather: ``E[return] = 0``. ``player_1``'s moves
never matter. The return's standard deviation from the noise is ``noise * sqrt(delay)``, which is what makes long
delays hard: the signal of the decisive move is ``+-1`` against that. Measured in ``spec("team_umbrella-v0").anchors``
(rows ``"random, delay=D"`` and ``"forecast_follower, delay=D"`` for D in 1, 3, 10, 30, team return, default noise).

Observation. ``text`` is the prompt below. ``observation`` (8 floats): forecast rain, forecast sun (player_0 only;
zeros for player_1), "I am player_0", "I am player_1", rounds played / (1 + delay), "this is the decision round",
umbrella taken, umbrella left (player_0 only, after its decision). player_1 never sees the forecast or the
decision; neither seat sees the weather before the end or any noise reward in its observation (rewards are
reported as rewards).

Final infos: ``weather`` ("rain"/"sun"), ``umbrella`` (True/False; None after an invalid decision),
``decisive_reward`` (the final +-1: the noise-free score of the decisive move), ``noise_total`` (the sum of the
noise rewards handed out) and ``moves`` (seat -> its list of move names).

Invalid moves. ``"penalty"`` (default): the episode ends at once; the team gets ``invalid_penalty`` (default -1)
instead of the final reward, and the remaining noise rewards are not handed out. ``"retry"``: asked again up to
``max_retries`` times with the error in the prompt, then the penalty. ``"random"``: a uniformly random legal move.

Ablation. The null moves: ``player_0`` decides ``[no_umbrella]`` and then plays ``[wait]``; ``player_1`` plays
``[wait]``. Ablating ``player_0`` before its decision therefore flips the final reward exactly when it would have
taken the umbrella, and ablating a seat at any later turn changes nothing (same noise, same final reward): the
exact leave-one-out credit is on the decisive move only.

The prompt (player_0, the decision round, rain forecast, delay=3)::

    You are player_0 in a team of two (you and player_1) walking to work together. The walk has 4 rounds; in every
    round both of you move, you first.
    In round 1 you decide: [umbrella] (take the umbrella) or [no_umbrella] (leave it). At the end of the walk the team
    scores +1 if you took the umbrella and it rains or left it and it is sunny, and -1 otherwise.
    In the other rounds each of you moves [walk], [wait] or [look]; these moves change nothing.
    After each of rounds 2 to 4 the team also gets a random reward of +1 or -1 that no move can change.

    Round 1 of 4.
    The weather forecast (only you can see it, and it is always right): rain.
    Your legal moves: [umbrella], [no_umbrella]
    Reply with exactly one move in square brackets.

The prompt (player_1, round 2, delay=3)::

    You are player_1 in a team of two (you and player_0) walking to work together. The walk has 4 rounds; in every
    round both of you move, player_0 first.
    In round 1 player_0 decides whether to take the umbrella. At the end of the walk the team scores +1 if it took
    the umbrella and it rains or left it and it is sunny, and -1 otherwise. Only player_0 sees the weather forecast.
    Each of your moves is [walk], [wait] or [look]; these moves change nothing.
    After each of rounds 2 to 4 the team also gets a random reward of +1 or -1 that no move can change.

    Round 2 of 4.
    Your legal moves: [walk], [wait], [look]
    Reply with exactly one move in square brackets.

Version history. v0: first version.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marl_llm_envs.core import TextEnv, check_int

MAX_DELAY = 10_000   # an episode of 20,002 turns, about 0.5 s (a move copies the tuple of its seat's moves)
DECISIONS = ["umbrella", "no_umbrella"]
DISTRACTORS = ["walk", "wait", "look"]
WEATHER = ("rain", "sun")


class raw_env(TextEnv):
    env_id = "team_umbrella-v0"
    version = 0
    family = "cooperative"
    vector_size = 8
    possible_agents = ["player_0", "player_1"]
    roles = {"player_0": "player_0", "player_1": "player_1"}
    teams = {"player_0": "team", "player_1": "team"}
    metadata = {"render_modes": ["human", "ansi"], "name": "team_umbrella_v0", "is_parallelizable": False}
    first_move_decides = "player_0"     # the umbrella; every later move of either player is a distractor
    _mutable = ("_moves",)

    def __init__(self, *, delay: int = 3, noise: float = 1.0, **kwargs: Any) -> None:
        delay = check_int("delay", delay, 1, MAX_DELAY, "an episode has 2 * (1 + delay) turns")
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not np.isfinite(noise) or noise < 0:
            raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
        self.delay = delay
        self.noise = float(noise)
        self.rounds = 1 + self.delay
        super().__init__(delay=self.delay, noise=self.noise, **kwargs)
        low = min(-1.0, self.invalid_penalty)
        self.reward_range = (low - self.delay * self.noise, 1.0 + self.delay * self.noise)

    def action_names(self, agent: str) -> list[str]:
        names = self.__dict__.get("_names")      # built once per env (read-only for callers, as Hanabi's)
        if names is None:
            names = self._names = {"player_0": [*DECISIONS, *DISTRACTORS], "player_1": list(DISTRACTORS)}
        return names["player_0"] if agent == "player_0" else names["player_1"]

    # -------------------------------------------------------------- game
    def _start(self) -> None:
        self.weather = WEATHER[self._random_index(2)]
        self._eps = (self.np_random.integers(2, size=self.delay) * 2 - 1).astype(float) * self.noise
        self.round = 0                      # 0-based: round 0 is the decision
        self.umbrella: bool | None = None
        self._noise_total = 0.0
        self._moves: dict[str, tuple[str, ...]] = {a: () for a in self.possible_agents}  # tuples: clones share them
        self.agent_selection = "player_0"

    def _legal_ids(self, agent: str) -> list[int]:
        if agent == "player_0":
            return [0, 1] if self.round == 0 else [2, 3, 4]
        return [0, 1, 2]

    def _null_move(self, agent: str) -> Any:
        if agent == "player_0":
            return 1 if self.round == 0 else 3  # no_umbrella, then wait
        return 1  # wait

    def _apply(self, agent: str, move: Any) -> None:
        name = self.action_names(agent)[move]
        self._moves[agent] = self._moves[agent] + (name,)
        if agent == "player_0":
            if self.round == 0:
                self.umbrella = name == "umbrella"
            self.agent_selection = "player_1"
            return
        self._end_round()

    def _end_round(self) -> None:
        reward = 0.0
        if self.round >= 1:
            reward = float(self._eps[self.round - 1])
            self._noise_total += reward
        if self.round == self.delay:  # the last round
            final = 1.0 if self.umbrella == (self.weather == "rain") else -1.0
            self._finish({a: reward + final for a in self.agents}, **self._final_info(final))
            return
        if reward:
            self._give({a: reward for a in self.agents})
        self.round += 1
        self.agent_selection = "player_0"

    def _final_info(self, final: float | None) -> dict[str, Any]:
        return {"weather": self.weather, "umbrella": self.umbrella, "decisive_reward": final,
                "noise_total": self._noise_total, "moves": {a: list(m) for a, m in self._moves.items()}}

    def _penalize(self, agent: str) -> None:
        if agent == "player_0" and self.round == 0:
            self.umbrella = None
        self._finish({a: self.invalid_penalty for a in self.agents}, outcome="invalid_move", offender=agent,
                     **self._final_info(None))

    # -------------------------------------------------------------- observations
    def _text(self, agent: str) -> str:
        # The rules part of the prompt depends only on the seat and the env's settings: built once per seat.
        intro = self.__dict__.get("_intro")
        if intro is None:
            intro = self._intro = {}
        head = intro.get(agent)
        if head is None:
            head = intro[agent] = self._intro_text(agent)
        n = self.rounds
        lines = [head]
        if self.done:
            lines.append(f"The walk is over: it was {'rainy' if self.weather == 'rain' else 'sunny'}.")
            return "\n".join(lines)
        lines.append(f"Round {self.round + 1} of {n}.")
        if agent == "player_0":
            if self.round == 0:
                lines.append(f"The weather forecast (only you can see it, and it is always right): {self.weather}.")
            else:
                lines.append(f"You {'took' if self.umbrella else 'left'} the umbrella.")
        if agent == self.agent_selection:
            lines.append(f"Your legal moves: {', '.join(self.legal_actions(agent))}")
            lines.append("Reply with exactly one move in square brackets.")
        else:
            lines.append("Waiting for your teammate to move.")
        return "\n".join(lines)

    def _intro_text(self, agent: str) -> str:
        n, last = self.rounds, self.rounds
        noise = (f"After each of rounds 2 to {last} the team also gets a random reward of +{self.noise:g} or "
                 f"-{self.noise:g} that no move can change." if self.noise else
                 "There are no other rewards.")
        if last == 2 and self.noise:
            noise = (f"After round 2 the team also gets a random reward of +{self.noise:g} or -{self.noise:g} that "
                     "no move can change.")
        if agent == "player_0":
            lines = [
                "You are player_0 in a team of two (you and player_1) walking to work together. The walk has "
                f"{n} rounds; in every\nround both of you move, you first.",
                "In round 1 you decide: [umbrella] (take the umbrella) or [no_umbrella] (leave it). At the end of the "
                "walk the team\nscores +1 if you took the umbrella and it rains or left it and it is sunny, and -1 "
                "otherwise.",
                "In the other rounds each of you moves [walk], [wait] or [look]; these moves change nothing.",
                noise,
                "",
            ]
        else:
            lines = [
                "You are player_1 in a team of two (you and player_0) walking to work together. The walk has "
                f"{n} rounds; in every\nround both of you move, player_0 first.",
                "In round 1 player_0 decides whether to take the umbrella. At the end of the walk the team scores +1 "
                "if it took\nthe umbrella and it rains or left it and it is sunny, and -1 otherwise. Only player_0 "
                "sees the weather forecast.",
                "Each of your moves is [walk], [wait] or [look]; these moves change nothing.",
                noise,
                "",
            ]
        return "\n".join(lines)

    def _vector(self, agent: str, out: np.ndarray) -> None:
        if agent == "player_0":
            out[0 if self.weather == "rain" else 1] = 1.0
            out[2] = 1.0
            if self.umbrella is not None:
                out[6 if self.umbrella else 7] = 1.0
        else:
            out[3] = 1.0
        out[4] = min(self.round, self.rounds) / self.rounds
        out[5] = 1.0 if self.round == 0 and not self.done else 0.0

    def _render(self) -> str:
        moves = " | ".join(f"{a}: {' '.join(m) or '-'}" for a, m in self._moves.items())
        return (f"[team_umbrella] weather: {self.weather} | round {min(self.round + 1, self.rounds)} of {self.rounds} "
                f"| noise so far {self._noise_total:+g} | {moves} | {self._to_move()}")


env = raw_env
