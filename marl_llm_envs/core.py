"""The shared base of every marl_llm_envs environment.

One place for what all our text environments have in common (the games only write their rules):

* **Observations.** Every agent observes a ``Dict`` with ``"text"`` (the prompt an LLM sees; gymnasium ``Text`` over
  ``string.printable``), ``"observation"`` (a numeric information-state vector, ``float32`` in ``[-1, 1]``, meaningful
  for an MLP) and, in discrete mode only, ``"action_mask"`` (``int8``, 1 = legal). Hidden information is a property of
  whose view is asked for: ``observe(agent)`` never shows what that agent may not know.
* **Observing without text.** The prompt is rendered only when it is asked for. ``observe(agent)`` and ``last()`` are
  PettingZoo's exact API (text included); ``observe(agent, text=False)`` and ``last(text=False)`` return the same
  dict without the ``"text"`` key and never render the prompt: the cheap path for a policy that reads only the vector
  and the mask (an MLP). ``action_mask(agent)`` and ``legal_actions(agent)`` are cheap on their own too, and
  ``observe_text(agent)`` is the text alone.
* **One env, many episodes.** ``reset(seed)`` rebuilds all episode state in place, so one env serves any number of
  episodes and plays each exactly as a fresh env would (the rollout engine keeps its envs across episodes and
  training steps; ``make`` costs about a millisecond, a ``reset`` a small fraction of that).
* **Two action modes.** ``action_mode="text"``: an action is a free-text string, parsed by the game (moves are written
  in square brackets such as ``[bet]``; answers as ``\\boxed{...}``); the last well-formed move in the text counts, so
  reasoning around it is fine, and case is ignored. ``action_mode="discrete"``: an action is an index into the agent's
  fixed action list (``action_names(agent)``) and the observation carries the mask.
* **Invalid moves** follow ``invalid_move``: ``"penalty"`` (the game's documented penalty, of size
  ``invalid_penalty``, a finite number <= 0, which ``reward_range`` covers), ``"retry"`` (the same agent moves again,
  with the error in its next observation, up to ``max_retries`` times, then the penalty) or ``"random"`` (a uniformly
  random legal move from the env's RNG). Every invalid move is recorded in ``infos[agent]["invalid_action"]``
  (``None`` after a valid move) and counted in ``infos[agent]["invalid_count"]``. Any input (wrong type, empty, huge,
  unicode, control characters) is handled by this policy; ``step`` never raises on a bad action of a live agent. A
  text action is read up to ``TEXT_MAX_LENGTH`` (65,536) characters, the ``max_length`` of the ``Text`` action space,
  and parsed in one linear scan; the rest is ignored, and ``infos[agent]["ignored_chars"]`` says how many characters
  were (the key is there only after such a step, and also in the ``invalid_action`` record when the move was invalid).
* **Call order.** Calls out of order raise ``RuntimeError`` with the wording of PettingZoo's order-enforcing
  wrapper, without its per-step cost: ``step``, ``last``, ``observe``, ``observe_text``, ``render``, ``agent_iter``,
  ``legal_actions``, ``action_mask``, ``ablate`` and ``transcript`` before the first ``reset`` ("reset() needs to be called before step()"); ``step`` or ``last`` once
  the episode has ended and every agent has been removed ("step() after the episode ended: call reset()"). While
  the episode is ending, each finished agent still takes its ``step(None)``, as in every PettingZoo AEC env. A call
  about an agent that is not in ``possible_agents`` (``observe``, ``observe_text``, ``action_mask``,
  ``legal_actions``, ``observation_space``, ``action_space``) raises ``KeyError`` naming the possible agents.
* **Seeding.** Each env owns a ``numpy.random.Generator``; ``reset(seed)`` seeds it: the episode draws exactly what
  ``numpy.random.default_rng(seed)`` draws (the env keeps one generator and sets it to the state ``default_rng(seed)``
  starts in, rather than building one per episode; see ``np_random``). ``reset()`` without a seed draws the next
  episode's seed from the env's own RNG, so every episode has a concrete seed in its transcript. The global
  ``random`` module and NumPy's global state are never touched.
* **Global state.** ``state()`` (PettingZoo's API) is the concatenation of every agent's ``"observation"`` vector,
  for a centralized critic (``baselines.credit``'s ``mappo``); a game overrides it where a shorter union of the
  private views exists (Hanabi).
* **Infos.** ``infos[agent]`` carries ``team``, ``role``, ``team_reward`` (the team's return so far; final at the end),
  ``invalid_action`` and ``invalid_count``; games add their own keys at the end of an episode.
* **Counterfactuals.** ``clone()`` is an independent copy (RNG included) that shares all static data;
  ``ablate(agent)`` is a clone in which that agent's contribution is clamped to the game's documented null action
  (its future turns are played by the env with that null action, and the game may also undo its past contribution
  where its manual says so); ``transcript()`` is a JSON record (env id and version, kwargs, seed, every ``step`` input
  and every ablation) and :func:`marl_llm_envs.replay` (in :mod:`marl_llm_envs.registry`) rebuilds the same episode, observation for observation and reward for reward.
* **Clone contract.** ``clone()`` copies the base's per-episode containers and every attribute a game names in
  ``_mutable`` (a shallow ``.copy()`` each); everything else is shared with the original. A game therefore lists in
  ``_mutable`` every container it changes in place during an episode, and keeps anything nested in them immutable
  (tuples, strings, numbers) or replaces it rather than changing it. ``tests/contracts/test_clone.py`` holds every
  registered env to that (both action modes, several seeds, clones and ablations taken at random points, invalid
  moves included): it fails when playing on or resetting an env changes anything its copy can reach (nested
  containers and objects too), or the other way round. Sharing by itself is no bug: static data is shared on
  purpose, which keeps ``clone()`` at a few microseconds. Its positive controls: a game that forgets its one
  container, one that changes a list nested in a listed container, one that refills a shared array at reset, and
  (``-m slow``) every entry of every game's ``_mutable`` dropped in turn: each is caught and named.

Writing a game (the hook list). A game subclasses :class:`TextEnv` (or :class:`TwoPlayerZeroSumEnv`), sets the class
attributes ``env_id``, ``version``, ``family``, ``possible_agents``, ``roles``, ``teams``, ``vector_size``,
``reward_range`` and ``_mutable`` (above), and talks to the base only through the members named in the two lists
below; every other underscore member of the base is private to this module (``tests/contracts/test_env_hooks.py`` fails when
an env module overrides, reads or writes one). Where they hold, it also declares the flags credit methods and the
suite read instead of env ids: ``records_without``, ``idle_roles``, ``first_move_decides`` (see :class:`TextEnv`;
``tests/envs/test_registry.py`` plays every registered env to hold them). It is registered in
:mod:`marl_llm_envs` with its reference policies and, for exact scoring, its ``ExactGame``; a game with reference
solvers is a package, ``envs/<game>/{env.py, reference.py}`` (e.g. ``envs/kuhn_poker/``).

**Hooks a game writes** (the first eight always; the others where the game needs them):

* ``_start()``: deal / set up a new episode from ``self.np_random``; set ``agent_selection``.
* ``action_names(agent)``: the fixed action list (discrete indices; text moves are ``[name]``); ``[]`` = free text.
* ``_legal_ids(agent)``: the legal indices now.
* ``_apply(agent, move)``: play a legal move (an index, or the parsed value of a free-text turn).
* ``_text(agent)``: the prompt.
* ``_vector(agent, out)``: fill the numeric observation (``out`` is a zeroed float32 array of ``vector_size``).
* ``_null_move(agent)``: the move an ablated agent plays (documented in the game's manual).
* ``_penalize(agent)``: the invalid-move penalty.
* ``_parse_free(agent, text)``: ``(move, None)`` or ``(None, reason)`` for a free-text turn.
* ``_interpret(agent, action)``: ``(move, None)`` or ``(None, reason)`` for any step input (the default reads an
  index or one bracketed move name; a game with its own text grammar extends it).
* ``_illegal(agent, name)``: the reason given for a well-formed move that is not legal now.
* ``_index_to_move(agent, index)``: the move a legal index stands for (default: the index itself).
* ``_is_legal(agent, index)``: ``index in _legal_ids(agent)`` for an index in range, which ``step`` asks of every
  move (default: that expression; a game whose legal list is long to build answers it directly).
* ``_on_ablate(agent)``: undo the agent's past contribution where the game's manual says so (default: nothing).
* ``_null_turn(agent)``: whether the ablated ``agent``'s turn now is played by the env with ``_null_move`` (default:
  every turn; orchestrator-v0's ablated orchestrator still gives its final answer itself).
* ``_render()``: the text of ``render()`` (default: the prompt of the agent to move).
* ``_return_before_a_move()``: two-player zero-sum games: the range of a player's return before any move, which
  ``reward_range`` widens by ``invalid_penalty`` (default ``(0, 0)``: rewards come at the end; a match of hands
  overrides it).

**Helpers a game calls** (never overrides or assigns):

* ``_give(rewards)``: add step rewards; a team's return grows by the mean of its members' rewards (its seats, or,
  once agents have joined or left, its members in ``agents``).
* ``_finish(rewards, **info)``: the last ``_give``, then every agent terminated, ``info`` added to every info.
* ``_add_agent(agent)``: an agent of ``possible_agents`` joins the episode now, as ``reset`` brings in the first ones
  (zero rewards, live, a fresh info, no retry pending); its spaces are seeded from the episode seed and its seat.
* ``_remove_agent(agent)``: the agent leaves the episode (``agents`` and every per-agent table); ``_start`` uses it for
  the agents that are not there from the start.
* ``_reopen(agents)``: take the episode back to before any reward was handed out, with ``agents`` live (zero rewards
  and team returns, fresh infos keeping ``invalid_count``, no retry or error pending); the game then sets its own
  state and ``agent_selection``. For an ablation that replays the end of an episode.
* ``_set_team_return(team, value)``: overwrite a team's return so far (and ``team_reward`` in its members' infos), for
  an ablation that rescores a finished episode.
* ``ablated`` (the ablated agents, a frozenset), ``episode_seed`` (``None`` before the first ``reset``) and
  ``np_random``: read-only.
* ``_random_index(n)``: ``int(self.np_random.integers(n))``, the same draw from the same stream, for a game's scalar
  draw (a deal); cheaper than the generator's own while nothing else has drawn from it this episode.
* ``_action_index``: agent -> {action name in lower case: index}, built from ``action_names``; read-only.
* ``_to_move()``: the last words of a render ("to move: player_1" or "game over").
* ``_begin_step(action)`` and ``_read_text(agent, action)``: the opening of ``step``, for a game that writes its own
  ``step`` (the TextArena bridge): log the input and take a dead agent's step; cut a text action to
  ``TEXT_MAX_LENGTH``.
* ``_other(agent)`` and ``_turn_text(agent, example)``: :class:`TwoPlayerZeroSumEnv` only: the opponent, and the
  closing lines of a prompt.
* :func:`check_int` (a function of this module, for ``__init__``): an int kwarg in its range, or a ``ValueError`` that
  names it. A kwarg that sizes the game (seats, rounds, tokens) has an upper bound where more would only exhaust
  memory or time deep inside, with the reason in the message.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from marl_llm_envs.fast_rng import pcg64_integer, pcg64_seed_state
from marl_llm_envs.text import (CHARSET, PRINTABLE, TEXT_MAX_LENGTH, find_boxed, parse_bracketed, printable,
                                 short_repr, short_text)

__all__ = ["CHARSET", "PRINTABLE", "TEXT_MAX_LENGTH", "TextEnv", "TwoPlayerZeroSumEnv", "check_int", "find_boxed",
           "parse_bracketed", "printable", "short_repr", "short_text"]

ACTION_MODES = ("text", "discrete")
# (mask length, *legal ids) -> that action mask: a pure function of its key, so one table serves every env in the
# process (never changed once built; action_mask hands out copies). Bounded: past the bound masks are built per call.
_MASKS: dict[tuple[int, ...], np.ndarray] = {}
_MASK_CACHE_SIZE = 16384    # at most about 6 MB (full Hanabi: about 350 bytes a mask)
INVALID_MOVE_POLICIES = ("penalty", "retry", "random")
_NO_AGENTS: frozenset[str] = frozenset()
_2_64 = 2**64    # a plain int of at most 64 bits is logged as it is (_loggable's first case)


class TextEnv(AECEnv):
    """Base class of every marl_llm_envs environment (a PettingZoo ``AECEnv``).

    A game subclass sets its class attributes and writes the hooks of the module docstring's hook list ("Writing a
    game"); it reaches the base only through the hooks and helpers named there.
    """

    metadata: dict[str, Any] = {"render_modes": ["human", "ansi"], "name": "text_env", "is_parallelizable": False}
    env_id: str = ""
    version: int = 0
    family: str = ""
    roles: dict[str, str] = {}
    teams: dict[str, str] = {}
    vector_size: int = 1
    reward_range: tuple[float, float] = (-1.0, 1.0)
    supported_action_modes: tuple[str, ...] = ACTION_MODES
    # What credit methods and the suite may rely on, read into the registry's EnvSpec (tests/envs/test_registry.py
    # plays every registered env to hold each flag to its behaviour):
    records_without: bool = False           # final infos carry team_reward_without for every agent, in every mode
    idle_roles: tuple[str, ...] = ()        # roles whose moves never change the team reward (the others decide it)
    first_move_decides: str = ""            # the agent whose first move alone decides the team reward ("" = none)
    _mutable: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        action_mode: str = "text",
        invalid_move: str = "penalty",
        invalid_penalty: float = -1.0,
        max_retries: int = 1,
        render_mode: str | None = None,
        **game_kwargs: Any,
    ) -> None:
        super().__init__()
        self.possible_agents = list(self.possible_agents)
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode={action_mode!r} is not one of {list(ACTION_MODES)}")
        if invalid_move not in INVALID_MOVE_POLICIES:
            raise ValueError(f"invalid_move={invalid_move!r} is not one of {list(INVALID_MOVE_POLICIES)}")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {max_retries!r}")
        if isinstance(invalid_penalty, bool) or not isinstance(invalid_penalty, (int, float)) \
                or not -math.inf < invalid_penalty <= 0:
            raise ValueError(f"invalid_penalty must be a finite number <= 0 (the offender's reward for an invalid "
                             f"move), got {invalid_penalty!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} is not one of {self.metadata['render_modes']}")
        self.action_mode = action_mode
        self.invalid_move = invalid_move
        self.invalid_penalty = float(invalid_penalty)
        self.max_retries = max_retries
        self.render_mode = render_mode
        self._kwargs: dict[str, Any] = _fresh({     # (copied: a caller's list or dict changed later is not ours)
            "action_mode": action_mode,
            "invalid_move": invalid_move,
            "invalid_penalty": self.invalid_penalty,
            "max_retries": max_retries,
            **game_kwargs,
        })
        self._kwarg_containers = tuple(k for k, v in self._kwargs.items() if type(v) is dict or type(v) is list)
        self.agents = []
        self._rng: np.random.Generator | None = np.random.default_rng()
        # while no generator is live (_rng is None): its state as plain ints, (state, inc, has_uint32, uinteger), or
        # None for the state default_rng(episode seed) starts in (see np_random and _random_index)
        self._pcg: tuple[int, int, int, int] | None = None
        self._spare_rng: np.random.Generator | None = None  # the last episode's generator, reseeded by np_random
        self._seed: int | None = None
        self._log: tuple | None = None
        self._ablations: tuple = ()
        self._ablated: frozenset[str] = frozenset()
        self._steps = 0
        self._present: dict[str, list[str]] | bool | None = None
        cls = type(self)
        # step's shortcut for a plain int is what the base's _read_text / _interpret / _accumulate_rewards do with it
        self._plain_discrete = (action_mode == "discrete" and cls._interpret is TextEnv._interpret
                                and cls._read_text is TextEnv._read_text
                                and cls._accumulate_rewards is AECEnv._accumulate_rewards)
        self._own_is_legal = cls._is_legal is not TextEnv._is_legal   # else step's shortcut inlines the default
        self._build_spaces()

    # ------------------------------------------------------------------ spaces
    def _build_spaces(self) -> None:
        text = spaces.Text(TEXT_MAX_LENGTH, min_length=0, charset=PRINTABLE)
        vector = spaces.Box(-1.0, 1.0, (self.vector_size,), np.float32)
        self._observation_spaces: dict[str, spaces.Space] = {}
        self._action_spaces: dict[str, spaces.Space] = {}
        self._action_index: dict[str, dict[str, int]] = {}
        self._n_actions: dict[str, int] = {}   # agent -> len(action_names(agent)): the mask's length (static)
        for agent in self.possible_agents:
            names = self.action_names(agent)
            self._action_index[agent] = {n.lower(): i for i, n in enumerate(names)}
            self._n_actions[agent] = len(names)
            obs = {"text": text, "observation": vector}
            if self.action_mode == "discrete":
                obs["action_mask"] = spaces.Box(0, 1, (len(names),), np.int8)
                self._action_spaces[agent] = spaces.Discrete(len(names))
            else:
                self._action_spaces[agent] = spaces.Text(TEXT_MAX_LENGTH, min_length=0, charset=PRINTABLE)
            self._observation_spaces[agent] = spaces.Dict(obs)

    def observation_space(self, agent: str) -> spaces.Space:
        try:
            return self._observation_spaces[agent]
        except (KeyError, TypeError):
            raise self._unknown(agent) from None

    def action_space(self, agent: str) -> spaces.Space:
        try:
            return self._action_spaces[agent]
        except (KeyError, TypeError):
            raise self._unknown(agent) from None

    def _unknown(self, agent: Any) -> KeyError:
        """The error for an agent that is not one of ``possible_agents`` (a ``KeyError``, as PettingZoo's tables)."""
        return KeyError(f"unknown agent {agent!r}; possible agents: {self.possible_agents}")

    # ------------------------------------------------------------------ game hooks (overridden)
    def action_names(self, agent: str) -> list[str]:
        raise NotImplementedError

    def _start(self) -> None:
        raise NotImplementedError

    def _legal_ids(self, agent: str) -> list[int]:
        raise NotImplementedError

    def _apply(self, agent: str, move: Any) -> None:
        raise NotImplementedError

    def _text(self, agent: str) -> str:
        raise NotImplementedError

    def _vector(self, agent: str, out: np.ndarray) -> None:
        raise NotImplementedError

    def _null_move(self, agent: str) -> Any:
        raise NotImplementedError

    def _penalize(self, agent: str) -> None:
        raise NotImplementedError

    def _parse_free(self, agent: str, text: str) -> tuple[Any, str | None]:
        raise NotImplementedError(f"{self.env_id} has no free-text turn for {agent}")

    def _on_ablate(self, agent: str) -> None:
        """Undo the agent's past contribution where the game's manual says so (default: nothing to undo)."""

    def _null_turn(self, agent: str) -> bool:
        """Whether the ablated ``agent``'s turn now is played by the env with ``_null_move`` (default: every turn)."""
        return True

    def _render(self) -> str:
        return self._text(self.agent_selection)

    def _to_move(self) -> str:
        """The last words of a render: whose move it is, or that the game is over."""
        return "game over" if self.done else f"to move: {self.agent_selection}"

    # ------------------------------------------------------------------ public API
    @property
    def ablated(self) -> frozenset[str]:
        """The agents ablated in this env (empty unless it was made by :meth:`ablate`)."""
        return self._ablated

    @property
    def episode_seed(self) -> int | None:
        """The seed of the current episode (``None`` before the first ``reset``)."""
        return self._seed

    @property
    def np_random(self) -> np.random.Generator:
        """The env's own RNG: ``numpy.random.default_rng(seed)`` after ``reset(seed)``, seeded on first use; a clone
        builds its copy of the parent's RNG state on first use too.

        The same draws as a new ``default_rng(seed)``, without building one per episode: ``reset`` keeps the previous
        episode's generator and sets its ``bit_generator.state`` to the one ``default_rng(seed)`` starts in
        (:func:`marl_llm_envs.fast_rng.pcg64_seed_state`), or to where :meth:`_random_index`'s draws have taken it.
        A generator taken from ``np_random`` is therefore reseeded by the env's next ``reset``."""
        rng = self._rng
        if rng is not None:
            return rng
        pcg = self._pcg
        if pcg is None:
            if self._seed is None:
                rng = self._rng = np.random.default_rng()
                return rng
            pcg = (*pcg64_seed_state(self._seed), 0, 0)     # after reset(seed): where default_rng(seed) starts
        rng = self._spare_rng       # the generator of this env's previous episode, reseeded (never a clone's)
        if rng is None:
            rng = np.random.Generator(np.random.PCG64(0))
        rng.bit_generator.state = {"bit_generator": "PCG64", "state": {"state": pcg[0], "inc": pcg[1]},
                                   "has_uint32": pcg[2], "uinteger": pcg[3]}
        self._rng, self._pcg, self._spare_rng = rng, None, None
        return rng

    def _random_index(self, n: int) -> int:
        """``int(self.np_random.integers(n))``: the same draw, and the generator's stream after it is the same. While
        no generator is live this episode (nothing has asked for ``np_random`` since ``reset``), it is drawn from the
        generator's state in plain ints (:func:`marl_llm_envs.fast_rng.pcg64_integer`), without setting up a NumPy
        generator; ``np_random`` later continues from there."""
        if self._rng is not None or type(n) is not int or not 1 <= n <= 1 << 32:
            return int(self.np_random.integers(n))
        pcg = self._pcg
        if pcg is None:
            pcg = (*pcg64_seed_state(self._seed), 0, 0)
        index, self._pcg = pcg64_integer(pcg, n)
        return index

    def legal_actions(self, agent: str | None = None) -> list[str]:
        """The legal moves of ``agent`` (default: the agent to move) as text actions, e.g. ``["[check]", "[bet]"]``.

        An empty list means the turn is free text (see the prompt for its format) or the agent cannot move now.
        """
        if self._seed is None:
            raise _before_reset("legal_actions()")
        agent = self.agent_selection if agent is None else agent
        if agent not in self._n_actions:
            raise self._unknown(agent)
        if agent != self.agent_selection or agent not in self.agents or self.terminations[agent] \
                or self.truncations[agent]:
            return []
        names = self.action_names(agent)
        if not names:
            return []
        return [f"[{names[i]}]" for i in self._legal_ids(agent)]

    def action_mask(self, agent: str) -> np.ndarray:
        """1 for each legal index of ``agent`` now (``int8``, ``len(action_names(agent))`` long), all 0 when it is not
        this agent's turn; a new array on every call."""
        if self._seed is None:
            raise _before_reset("action_mask()")
        if agent not in self._n_actions:
            raise self._unknown(agent)
        return self._mask(agent)

    def _mask(self, agent: str) -> np.ndarray:
        n = self._n_actions.get(agent)
        if n is None:                                         # not one of possible_agents: what its names give
            n = len(self.action_names(agent))
        elif agent == self.agent_selection and agent in self.agents and not self.terminations[agent]:
            legal = self._legal_ids(agent)
            key = (n, *legal)
            mask = _MASKS.get(key)       # a mask is a function of its length and legal ids: built once, copied out
            if mask is None:
                mask = np.zeros(n, np.int8)
                mask[legal] = 1
                if len(_MASKS) < _MASK_CACHE_SIZE:
                    _MASKS[key] = mask
            return mask.copy()
        return np.zeros(n, np.int8)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if type(seed) is not int or seed < 0:          # a plain non-negative int needs no further checks
            if seed is None:
                seed = int(self.np_random.integers(2**63 - 1))
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
            seed = int(seed)
        self._seed = seed
        rng = self._rng
        if rng is not None:
            self._spare_rng = rng           # np_random reseeds it on first use (the state of default_rng(seed))
            self._rng = None
        self._pcg = None
        seats = self.possible_agents
        start = self.__dict__.get("_start_tables")
        if start is None or start[0] is not seats or start[1] is not self.teams or start[2] is not self.roles:
            start = self._start_tables = self._build_start_tables()
        _, _, _, infos, zeros, falses, retries, team_zeros = start
        self.agents = list(seats)
        self.rewards = zeros.copy()
        self._cumulative_rewards = zeros.copy()
        self.terminations = falses.copy()
        self.truncations = falses.copy()
        self._team_return = team_zeros.copy()
        self.infos = {a: info.copy() for a, info in infos}
        self._retries = retries.copy()
        self._error: dict[str, str] = {}
        self._log = None
        self._ablations = ()
        self._ablated = _NO_AGENTS
        self._steps = 0
        self._present = None    # the teams' members: every seat until agents join or leave (see _give)
        self._start()

    def _build_start_tables(self) -> tuple:
        """What every ``reset`` starts from, built once per env (static, shared by clones; never changed in place,
        only copied): the seats, teams and roles it was built from, each seat's info at the start of an episode
        (:meth:`_base_info` while every team's return is 0, as ``reset`` sets it), and the seat -> 0.0, seat ->
        False, seat -> 0 and team -> 0.0 tables ``reset`` copies."""
        seats = self.possible_agents
        self._team_return = dict.fromkeys(self.teams.values(), 0.0)     # (reset sets it again right after)
        infos = tuple((agent, self._base_info(agent)) for agent in seats)
        return (seats, self.teams, self.roles, infos, dict.fromkeys(seats, 0.0), dict.fromkeys(seats, False),
                dict.fromkeys(seats, 0), dict.fromkeys(self.teams.values(), 0.0))

    def _base_info(self, agent: str) -> dict[str, Any]:
        team = self.teams[agent]
        return {
            "team": team,
            "role": self.roles[agent],
            "team_reward": self._team_return[team],
            "invalid_action": None,
            "invalid_count": 0,
        }

    def observe(self, agent: str, text: bool = True) -> dict[str, Any]:
        """The agent's observation (PettingZoo's ``observe``): ``{"text", "observation"[, "action_mask"]}``.

        ``text=False`` is the cheap path for policies that read only numbers (an MLP): the same dict without the
        ``"text"`` key, and the prompt is never rendered. Everything else is identical."""
        if self._seed is None or agent not in self._n_actions:
            raise _before_reset("observe()") if self._seed is None else self._unknown(agent)
        size = self.vector_size
        zero = self.__dict__.get("_zero_vector")       # (size, a zero vector of it): never changed, copied out
        if zero is None or zero[0] != size:
            zero = self._zero_vector = (size, np.zeros(size, np.float32))
        vector = zero[1].copy()
        self._vector(agent, vector)
        if self._plain_discrete or self.action_mode == "discrete":
            if text:
                return {"text": self._prompt(agent), "observation": vector, "action_mask": self._mask(agent)}
            return {"observation": vector, "action_mask": self._mask(agent)}
        return {"text": self._prompt(agent), "observation": vector} if text else {"observation": vector}

    def observe_text(self, agent: str) -> str:
        """``observe(agent)["text"]`` alone: the prompt, without computing the vector or the mask (the rollout engine
        checks a branch's observation against the recorded one by the text's digest before anything else)."""
        if self._seed is None or agent not in self._n_actions:
            raise _before_reset("observe_text()") if self._seed is None else self._unknown(agent)
        return self._prompt(agent)

    def _prompt(self, agent: str) -> str:
        prompt = self._text(agent)
        error = self._error.get(agent)
        if error is not None:
            prompt = f"{prompt}\n\nYour previous move was invalid: {error}. Try again."
        return prompt

    def state(self) -> np.ndarray:
        """PettingZoo's global state (for a centralized critic): every possible agent's ``"observation"`` vector,
        concatenated in ``possible_agents`` order (``len(possible_agents) * vector_size`` float32 entries). A game
        where the union of the private views is shorter overrides it (Hanabi)."""
        if self._seed is None:
            raise _before_reset("state()")
        n = self.vector_size
        out = np.zeros(len(self.possible_agents) * n, np.float32)
        for i, agent in enumerate(self.possible_agents):
            self._vector(agent, out[i * n:(i + 1) * n])
        return out

    @property
    def state_space(self) -> spaces.Box:
        """The space of :meth:`state` (PettingZoo's ``state_space``)."""
        return spaces.Box(-1.0, 1.0, (len(self.possible_agents) * self.vector_size,), np.float32)

    def last(self, observe: bool = True, text: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last()``; ``text=False`` observes without the text (see :meth:`observe`)."""
        try:
            agent = self.agent_selection
            obs = self.observe(agent, text) if observe else None
            return (obs, self._cumulative_rewards[agent], self.terminations[agent], self.truncations[agent],
                    self.infos[agent])
        except (AttributeError, KeyError):
            self._check_order("last()")
            raise

    def agent_iter(self, max_iter: int = 2**63):
        """PettingZoo's ``agent_iter``: the agent to move while any agent is left, at most ``max_iter`` times (a
        generator, cheaper per step than PettingZoo's iterator class; the same agents and the same stop)."""
        if self._seed is None:
            raise _before_reset("agent_iter()")
        return self._agents_to_move(max_iter)

    def _agents_to_move(self, max_iter: int):
        while self.agents and max_iter > 0:
            max_iter -= 1
            yield self.agent_selection

    def _check_order(self, call: str) -> None:
        """Raise the out-of-order error for ``call`` if there is one (called only on a failing path)."""
        if self._seed is None:
            raise _before_reset(call) from None
        if not self.agents:
            raise RuntimeError(f"{call} after the episode ended: call reset()") from None

    def _begin_step(self, action: Any) -> str | None:
        """What every ``step`` starts with: log the input, take a dead agent's step (then return ``None``), else
        clear the step rewards and return the acting agent."""
        try:
            agent = self.agent_selection
            dead = self.terminations[agent] or self.truncations[agent]
        except (AttributeError, KeyError):
            self._check_order("step()")
            raise
        if dead:
            self._log = (self._log, None)
            self._was_dead_step(action)
            return None
        self._log = (self._log, action if type(action) is int and -_2_64 < action < _2_64 else _loggable(action))
        self._steps += 1
        self._cumulative_rewards[agent] = 0.0
        rewards = self.rewards
        for a in rewards:
            rewards[a] = 0.0
        return agent

    def _was_dead_step(self, action: Any) -> None:
        """PettingZoo's ``_was_dead_step`` (the same checks, tables and next agent), finding the next dead agent by
        stopping at the first one instead of listing them all (every voter's dead step used to scan every voter)."""
        if action is not None:
            raise ValueError("when an agent is dead, the only valid action is None")
        agent = self.agent_selection
        terms, truncs = self.terminations, self.truncations
        assert terms[agent] or truncs[agent], "an agent that was not dead as attempted to be removed"
        del terms[agent]
        del truncs[agent]
        del self.rewards[agent]
        del self._cumulative_rewards[agent]
        del self.infos[agent]
        self.agents.remove(agent)
        dead = None
        for a in self.agents:
            if terms[a] or truncs[a]:
                dead = a
                break
        skip = self.__dict__.get("_skip_agent_selection")
        if dead is not None:
            if skip is None:
                self._skip_agent_selection = self.agent_selection
            self.agent_selection = dead
        else:
            if skip is not None:
                self.agent_selection = skip
            self._skip_agent_selection = None
        rewards = self.rewards
        for a in rewards:
            rewards[a] = 0

    def _read_text(self, agent: str, action: Any) -> Any:
        """A text action cut to ``TEXT_MAX_LENGTH`` characters; ``infos[agent]["ignored_chars"]`` records the cut
        (and is dropped again on the agent's next step without one). Anything else is returned unchanged."""
        info = self.infos[agent]
        if isinstance(action, str) and len(action) > TEXT_MAX_LENGTH:
            self.infos[agent] = {**info, "ignored_chars": len(action) - TEXT_MAX_LENGTH}
            return action[:TEXT_MAX_LENGTH]
        if "ignored_chars" in info:
            self.infos[agent] = {k: v for k, v in info.items() if k != "ignored_chars"}
        return action

    def step(self, action: Any) -> None:
        agent = self._begin_step(action)
        if agent is None:
            return
        if type(action) is int and self._plain_discrete:
            # the common case: a legal index from a live agent in discrete mode, the base's own reading of it (what
            # _read_text and _interpret do for a plain int, then the valid branch below)
            info = self.infos[agent]
            n = self._n_actions.get(agent)
            if n is not None and 0 <= action < n and "ignored_chars" not in info and (
                    self._is_legal(agent, action) if self._own_is_legal else action in self._legal_ids(agent)):
                self._retries[agent] = 0
                if self._error:
                    self._error.pop(agent, None)
                if info["invalid_action"] is not None:
                    self.infos[agent] = {**info, "invalid_action": None}
                self._apply(agent, self._index_to_move(agent, action))
                if self._ablated:
                    self._play_ablated()
                cumulative = self._cumulative_rewards
                for a, r in self.rewards.items():      # PettingZoo's _accumulate_rewards
                    cumulative[a] += r
                if self.render_mode == "human":
                    self.render()
                return
        action = self._read_text(agent, action)
        move, reason = self._interpret(agent, action)
        info = self.infos[agent]
        if reason is None:
            self._retries[agent] = 0
            self._error.pop(agent, None)
            if info["invalid_action"] is not None:
                self.infos[agent] = {**info, "invalid_action": None}
            self._apply(agent, move)
        else:
            record = {
                "action": short_text(action),
                "reason": reason,
                "policy": self.invalid_move,
                "attempt": self._retries[agent] + 1,
            }
            if "ignored_chars" in info:
                record["ignored_chars"] = info["ignored_chars"]
            self.infos[agent] = {**info, "invalid_action": record, "invalid_count": info["invalid_count"] + 1}
            if self.invalid_move == "retry" and self._retries[agent] < self.max_retries:
                self._retries[agent] += 1
                self._error[agent] = reason
            else:
                self._retries[agent] = 0
                self._error.pop(agent, None)
                if self.invalid_move == "random":
                    legal = self._legal_ids(agent)
                    index = legal[self._random_index(len(legal))]
                    record["replaced_by"] = f"[{self.action_names(agent)[index]}]"
                    self._apply(agent, self._index_to_move(agent, index))
                else:
                    self._penalize(agent)
        self._play_ablated()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _index_to_move(self, agent: str, index: int) -> Any:
        return index

    def _is_legal(self, agent: str, index: int) -> bool:
        return index in self._legal_ids(agent)

    def _interpret(self, agent: str, action: Any) -> tuple[Any, str | None]:
        if self.action_mode == "discrete":
            if type(action) is not int:         # a plain int is the common case: no further checks
                if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
                    if (isinstance(action, np.ndarray) and action.shape == ()
                            and np.issubdtype(action.dtype, np.integer)):
                        action = int(action)
                    else:
                        return None, f"expected an action index (int), got {short_repr(action, 40)}"
                action = int(action)
            n = self._n_actions.get(agent)
            if n is None:
                n = len(self.action_names(agent))
            if not 0 <= action < n:
                return None, f"action index {short_repr(action, 40)} is out of range 0..{n - 1}"
            if not self._is_legal(agent, action):
                return None, self._illegal(agent, self.action_names(agent)[action])
            return self._index_to_move(agent, action), None
        names = self.action_names(agent)
        if not isinstance(action, str):
            return None, f"expected a text action (str), got {short_repr(action, 40)}"
        if not names:
            return self._parse_free(agent, action)
        index, reason = parse_bracketed(action, self._action_index[agent])
        if reason is not None:
            return None, reason
        if not self._is_legal(agent, index):
            return None, self._illegal(agent, names[index])
        return self._index_to_move(agent, index), None

    def _illegal(self, agent: str, name: str) -> str:
        legal = ", ".join(self.legal_actions(agent))
        return f"action '[{name}]' is not legal for {agent} now; legal: {legal}"

    def _play_ablated(self) -> None:
        while self._ablated and self.agent_selection in self._ablated and self.agents:
            agent = self.agent_selection
            if self.terminations[agent] or self.truncations[agent] or not self._null_turn(agent):
                return
            self._apply(agent, self._null_move(agent))

    # ------------------------------------------------------------------ outcomes (used by games)
    def _give(self, rewards: dict[str, float], _extra: dict[str, Any] | None = None) -> None:
        """Add step rewards and publish each team's return so far in ``infos[agent]["team_reward"]``.

        A team's return is the mean of its members' rewards (team members are always given equal rewards): every seat
        of the team, or, once agents have joined or left the episode (``_add_agent``, ``_remove_agent``,
        ``_reopen``), its members in ``agents``. A team with no member there keeps its return. (``_extra``:
        :meth:`_finish`'s info keys, added in the same update of each info.)"""
        step_rewards = self.rewards
        for agent, r in rewards.items():
            step_rewards[agent] += r
        members_of = self._present
        if members_of is None:     # the seats did not change: team -> its seats in seat order (static; built once)
            members_of = self.__dict__.get("_members_of")
            if members_of is None or members_of[0] is not self.teams:
                members_of = self._members_of = (self.teams, {
                    team: [a for a in self.possible_agents if self.teams[a] == team] for team in self._team_return})
            members_of = members_of[1]
        elif members_of is False:  # agents joined or left: team -> its members in agents, until they change again
            members_of = self._present = {team: [a for a in self.agents if self.teams[a] == team]
                                          for team in self._team_return}
        team_return = self._team_return
        for team in team_return:
            members = members_of[team]
            if len(members) == 1:      # sum([r]) / len([r]) is (0 + r) / 1 (sum starts from the int 0)
                team_return[team] += (0 + rewards.get(members[0], 0.0)) / 1
            elif members:
                team_return[team] += sum([rewards.get(a, 0.0) for a in members]) / len(members)
        infos, teams = self.infos, self.teams
        if _extra:
            for agent in self.agents:
                infos[agent] = {**infos[agent], "team_reward": team_return[teams[agent]], **_extra}
        else:
            for agent in self.agents:
                infos[agent] = {**infos[agent], "team_reward": team_return[teams[agent]]}

    def _finish(self, rewards: dict[str, float] | None = None, **extra_info: Any) -> None:
        """End the episode: add final rewards, mark every agent terminated, add ``extra_info`` to every info."""
        self._give(rewards or {}, extra_info)
        terminations = self.terminations
        for agent in self.agents:
            terminations[agent] = True

    def _set_team_return(self, team: str, value: float) -> None:
        """Overwrite ``team``'s return so far, and ``team_reward`` in its members' infos (for an ablation that rescores
        a finished episode)."""
        self._team_return[team] = value
        infos, teams = self.infos, self.teams
        for agent in self.agents:
            if teams[agent] == team:
                infos[agent] = {**infos[agent], "team_reward": value}

    # ------------------------------------------------------------------ agents that join or leave mid-episode
    def _add_agent(self, agent: str) -> None:
        """``agent`` (one of ``possible_agents``) joins the episode now, as ``reset`` brings in the first agents: it
        is appended to ``agents`` with zero rewards, live, a fresh info and no retry pending. Its spaces are seeded
        with ``(episode seed + its index in possible_agents) % 2**32``: an agent that appears after ``reset`` misses
        the seeding that PettingZoo's ``seed_test`` gives the agents present, so sampling from its spaces is
        reproducible too."""
        if agent not in self.possible_agents or agent in self.agents:
            raise ValueError(f"{agent!r} cannot join: it is not one of {self.possible_agents} or is already in "
                             f"the episode ({self.agents})")
        self.agents.append(agent)
        self.rewards[agent] = 0.0
        self._cumulative_rewards[agent] = 0.0
        self.terminations[agent] = False
        self.truncations[agent] = False
        self.infos[agent] = self._base_info(agent)
        self._retries[agent] = 0
        self._present = False
        seed = (self._seed + self.possible_agents.index(agent)) % 2**32
        self._action_spaces[agent].seed(seed)
        self._observation_spaces[agent].seed(seed)

    def _remove_agent(self, agent: str) -> None:
        """``agent`` leaves the episode: out of ``agents`` and of every per-agent table (no reward reaches it)."""
        if agent in self.agents:
            self.agents.remove(agent)
        for table in (self.rewards, self._cumulative_rewards, self.terminations, self.truncations, self.infos,
                      self._retries, self._error):
            table.pop(agent, None)
        self._present = False

    def _reopen(self, agents: list[str]) -> None:
        """Take the episode back to before any reward was handed out, with ``agents`` (in that order) live: zero
        rewards, every team's return 0, fresh infos that keep each agent's ``invalid_count``, no retry or error
        pending. The game then sets its own state and ``agent_selection`` (an ablation that replays the end of a
        finished episode: orchestrator-v0)."""
        self.agents = list(agents)
        self._present = False
        for team in self._team_return:
            self._team_return[team] = 0.0
        for agent in self.agents:
            self.rewards[agent] = 0.0
            self._cumulative_rewards[agent] = 0.0
            self.terminations[agent] = False
            self.truncations[agent] = False
            old = self.infos.get(agent) or {}
            self.infos[agent] = {**self._base_info(agent), "invalid_count": old.get("invalid_count", 0)}
            self._retries[agent] = 0
        self._error = {}

    def team_rewards(self) -> dict[str, float]:
        """Each team's return so far in this episode (final once ``done``; still there after the dead steps have
        removed the agents and their infos)."""
        return dict(self._team_return)

    @property
    def done(self) -> bool:
        """True once the episode has ended (every agent terminated or truncated)."""
        agents = self.agents
        if not agents:
            return True
        agent, terms, truncs = self.agent_selection, self.terminations, self.truncations
        if agent in terms and not (terms[agent] or truncs[agent]) and agent in agents:
            return False            # the agent to move is live (the common case: no scan over every agent)
        return all(terms[a] or truncs[a] for a in agents)

    # ------------------------------------------------------------------ counterfactuals
    def clone(self) -> "TextEnv":
        """An independent copy of this env, RNG included; static data (spaces, rules, tasks) is shared. Copies the
        base's per-episode containers and the game's ``_mutable`` (see "Clone contract" in the module docstring)."""
        new = object.__new__(type(self))
        d = self.__dict__.copy()
        for name in ("agents", "rewards", "_cumulative_rewards", "terminations", "truncations", "infos",
                     "_retries", "_error", "_team_return", *self._mutable):
            value = d.get(name)
            if value is not None:
                d[name] = value.copy()
        if self._rng is not None:               # the clone's generator starts where the parent's is now
            state = self._rng.bit_generator.state
            d["_rng"], d["_pcg"] = None, (state["state"]["state"], state["state"]["inc"], state["has_uint32"],
                                          state["uinteger"])
        d["_spare_rng"] = None                  # the parent's own; a clone builds its own generator
        new.__dict__ = d
        return new

    def ablate(self, agent: str) -> "TextEnv":
        """A clone in which ``agent`` plays the game's null action from now on (and, where documented, its past
        contribution is undone), so the episode can be continued as the counterfactual "without this agent"."""
        if agent not in self.possible_agents:
            raise ValueError(f"unknown agent {agent!r}; agents: {self.possible_agents}")
        if self._seed is None:
            raise _before_reset("ablate()")
        new = self.clone()
        new._ablated = self._ablated | {agent}
        new._ablations = self._ablations + ((self._step_count_logged(), agent),)
        new._on_ablate(agent)
        new._play_ablated()
        return new

    def _step_count_logged(self) -> int:
        n, node = 0, self._log
        while node is not None:
            node, n = node[0], n + 1
        return n

    def _kwargs_copy(self) -> dict[str, Any]:
        """The kwargs as new containers (the values that hold none are shared: numbers and strings)."""
        kwargs = dict(self._kwargs)
        for name in self._kwarg_containers:
            kwargs[name] = _fresh(kwargs[name])
        return kwargs

    def transcript(self) -> dict[str, Any]:
        """A JSON-serialisable record that :func:`marl_llm_envs.replay` turns back into the same episode. Every call
        returns new containers: changing a transcript (its ``kwargs``, a logged ``{"float": x}`` action) changes
        neither the env nor its later transcripts."""
        if self._seed is None:
            raise _before_reset("transcript()")
        actions, node = [], self._log
        while node is not None:
            node, action = node
            actions.append(action if type(action) is not dict else dict(action))   # _loggable's {"float"/"repr": ...}
        actions.reverse()
        return {
            "env_id": self.env_id,
            "version": self.version,
            "kwargs": self._kwargs_copy(),
            "seed": self._seed,
            "actions": actions,
            "ablations": [[i, a] for i, a in self._ablations],
        }

    # ------------------------------------------------------------------ rendering
    def render(self) -> str | None:
        """The game's state as text (``render_mode="ansi"``: returned; ``"human"``: printed), the final state too once
        the episode is over."""
        if self.render_mode is None:
            return None
        if self._seed is None:
            raise _before_reset("render()")
        text = self._render()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.env_id}>"

    def __str__(self) -> str:
        return self.env_id


def check_int(name: str, value: Any, low: int, high: int | None = None, why: str = "") -> int:
    """``value`` as a plain int in ``low..high`` (``high=None``: no upper bound), else a ``ValueError`` naming the
    kwarg (a bool is not an int; a NumPy integer is). ``why``: the reason for ``high``, added to its message (a size
    kwarg is bounded where more would only exhaust memory or time)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {short_repr(value, 40)}")
    value = int(value)
    if value < low or (high is not None and value > high):
        if high is None:
            raise ValueError(f"{name} must be an int >= {low}, got {value}")
        reason = f" ({why})" if why and value > high else ""
        raise ValueError(f"{name} must be in {low}..{high}{reason}, got {value}")
    return value


def _before_reset(call: str) -> RuntimeError:
    return RuntimeError(f"reset() needs to be called before {call}")


def _loggable(action: Any) -> Any:
    """Make a step input JSON-safe without losing what is needed to replay it."""
    if type(action) is int and action.bit_length() <= 64:     # the common case first (a discrete index)
        return action
    if action is None or isinstance(action, (str, bool)):
        return action
    if isinstance(action, (int, np.integer)) and int(action).bit_length() <= 64:
        return int(action)
    if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
        return int(action)
    if isinstance(action, float) and np.isfinite(action):
        return {"float": action}
    return {"repr": short_repr(action)}


def _fresh(value: Any) -> Any:
    """``value`` with each dict and list in it copied (the rest shared: kwargs hold numbers, strings and the like)."""
    if type(value) is dict:
        return {k: _fresh(v) if type(v) is dict or type(v) is list else v for k, v in value.items()}
    if type(value) is list:
        return [_fresh(v) if type(v) is dict or type(v) is list else v for v in value]
    return value


def _unlog(action: Any) -> Any:
    if isinstance(action, dict):
        return action.get("float", action)
    return action


class TwoPlayerZeroSumEnv(TextEnv):
    """Base of the two-player zero-sum games: seats ``player_0`` / ``player_1``, each its own team.

    Invalid-move penalty: the episode ends; the offender gets ``invalid_penalty`` and the opponent its negation, so
    rewards still sum to zero (unlike SPIRAL's -1.5 / +0.5)."""

    family = "zero_sum"
    possible_agents = ["player_0", "player_1"]
    roles = {"player_0": "player_0", "player_1": "player_1"}
    teams = {"player_0": "player_0", "player_1": "player_1"}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # reward_range covers the penalty too: the offender ends with what it had won before the move, plus
        # invalid_penalty (a game sets reward_range before this, for its own outcomes)
        low, high = self.reward_range
        before_low, before_high = self._return_before_a_move()
        p = self.invalid_penalty
        self.reward_range = (min(low, before_low + p), max(high, before_high - p))

    def _return_before_a_move(self) -> tuple[float, float]:
        """The range of a player's return before any move of the episode: 0 in a one-game episode (rewards come at
        its end); a match of several games overrides it."""
        return 0.0, 0.0

    @staticmethod
    def _other(agent: str) -> str:
        return "player_1" if agent == "player_0" else "player_0"

    def _penalize(self, agent: str) -> None:
        p = self.invalid_penalty
        self._finish({agent: p, self._other(agent): -p}, outcome="invalid_move", offender=agent)

    def _turn_text(self, agent: str, example: str | None = None) -> str:
        """The closing lines of a prompt: the game is over, or the legal moves and the reply format, or waiting."""
        if self.done:
            return "The game is over."
        if agent != self.agent_selection:
            return "Waiting for your opponent to move."
        legal = self.legal_actions(agent)
        return (f"Your legal moves: {', '.join(legal)}\n"
                f"Reply with exactly one move in square brackets, for example {example or legal[0]}.")
