"""The clone contract (core.py, "Clone contract"): nothing that playing changes is shared between an env and its clone.

``clone()`` shares static data (spaces, rules, task sources, the agent lists) on purpose: that keeps it at a few
microseconds. So sharing an object is no bug by itself; sharing one that an episode changes is. For every registered
env, in every action mode it supports, from a few seeds and random points of an episode, these tests take a clone
(and an ablation), fingerprint everything the copy can reach (nested containers and objects included), then play the
original on to the end and into a new episode, and check that the copy's fingerprint is unchanged, and the same the
other way round. The positive controls are games that break the contract (one forgets a container in ``_mutable``,
one changes a list nested in a listed container, one refills a shared array at reset): the check must catch each.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from gymnasium import spaces

from marl_llm_envs import list_envs, make
from marl_llm_envs.envs import connect_four, tic_tac_toe
from marl_llm_envs.scripted import random_legal
from marl_llm_envs.tasks import TaskSource

# Shared by design (the contract's static data): their contents are not part of an episode's state.
STATIC_TYPES = (spaces.Space, TaskSource, type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                types.MethodType)


def fingerprint(obj, memo=None):
    """A comparable value that changes when anything reachable from ``obj`` changes (static data excepted)."""
    memo = {} if memo is None else memo
    key = id(obj)
    if key in memo:
        return memo[key]
    if obj is None or isinstance(obj, (bool, int, str, bytes)):
        return obj
    if isinstance(obj, (float, complex, np.generic)):
        return ("num", type(obj).__name__, repr(obj))
    memo[key] = ("cycle",)      # a reference back to an object still being fingerprinted
    if isinstance(obj, STATIC_TYPES):
        out = ("static", type(obj).__name__)
    elif isinstance(obj, np.ndarray):
        out = ("ndarray", str(obj.dtype), obj.shape,
               tuple(fingerprint(x, memo) for x in obj.ravel()) if obj.dtype == object else obj.tobytes())
    elif isinstance(obj, (list, tuple)):
        out = (type(obj).__name__, tuple(fingerprint(x, memo) for x in obj))
    elif isinstance(obj, dict):
        out = ("dict", tuple((fingerprint(k, memo), fingerprint(v, memo)) for k, v in obj.items()))
    elif isinstance(obj, (set, frozenset)):
        out = (type(obj).__name__, tuple(sorted(repr(fingerprint(x, memo)) for x in obj)))
    elif isinstance(obj, np.random.Generator):
        out = ("rng", repr(obj.bit_generator.state))
    else:
        fields = dict(getattr(obj, "__dict__", {}))
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if hasattr(obj, slot):
                    fields[slot] = getattr(obj, slot)
        out = (type(obj).__qualname__, fingerprint(fields, memo))
    memo[key] = out
    return out


def _state(env) -> dict:
    memo: dict = {}
    return {name: fingerprint(value, memo) for name, value in vars(env).items()}


def _changed(before: dict, env) -> list[str]:
    after = _state(env)
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


JUNK = ("", "[nonsense]", "\\boxed{", 3.5, None, 10**6)


def _move(env, rng):
    """A random legal move, or (one time in six) an invalid one, so the invalid-move paths change state too."""
    if rng.random() < 1 / 6:
        return JUNK[int(rng.integers(len(JUNK)))]
    return random_legal(env, env.agent_selection, rng)


def _steps(env, rng, n):
    for _ in range(n):
        if env.done:
            break
        env.step(_move(env, rng))


def _play_on(env, rng, seed):
    """Play ``env`` to the end of its episode, then into a new one (a reset can refill shared state too)."""
    _steps(env, rng, 400)
    env.reset(seed=seed + 1000)
    _steps(env, rng, int(rng.integers(1, 6)))


def _copy(env, kind, rng):
    if kind == "clone":
        return env.clone()
    try:
        return env.ablate(env.possible_agents[int(rng.integers(len(env.possible_agents)))])
    except (ValueError, NotImplementedError):   # think_solve: no ablating the thinker after the answer
        return env.clone()


def clone_leaks(new_env, mode: str, seeds=range(6), kinds=("clone", "ablate")) -> list[str]:
    """What a copy shares with its original and one of them changes: ``"<seed> <kind> <direction>: <attribute>"``.

    ``new_env(mode, invalid_move)`` makes the env; the seeds take turns at the invalid-move policies."""
    leaks = []
    for seed in seeds:
        for kind in kinds:
            for direction in ("original changes copy", "copy changes original"):
                rng = np.random.default_rng([seed, len(kind), len(direction)])
                env = new_env(mode, INVALID_MOVES[seed % len(INVALID_MOVES)])
                env.reset(seed=seed)
                _steps(env, rng, int(rng.integers(0, 6)))
                copy = _copy(env, kind, rng)
                played, watched = (env, copy) if direction == "original changes copy" else (copy, env)
                before = _state(watched)
                _play_on(played, rng, seed)
                leaks += [f"seed {seed} {kind} {direction}: {name}" for name in _changed(before, watched)]
    return leaks


INVALID_MOVES = ("retry", "penalty", "random")


def _make(env_id, mode, invalid_move, cls=None):
    if invalid_move == "random" and mode == "text":
        invalid_move = "retry"          # free-text answers have no finite move set to draw from
    if cls is not None:
        return cls(action_mode=mode, invalid_move=invalid_move)
    return make(env_id, action_mode=mode, invalid_move=invalid_move)


ENV_MODES = [pytest.param(e, m, id=f"{e}-{m}") for e in list_envs() for m in make(e).supported_action_modes]


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_a_clone_shares_nothing_that_playing_changes(env_id, mode):
    assert clone_leaks(lambda m, invalid: _make(env_id, m, invalid), mode) == []


# ---------------------------------------------------------------------- positive controls
class ForgetsItsBoard(tic_tac_toe.raw_env):
    """Tic-tac-toe whose ``_mutable`` forgets the board (its one container)."""

    _mutable = ()


class NestedHistory(tic_tac_toe.raw_env):
    """Tic-tac-toe that lists a dict in ``_mutable`` but appends to a list inside it (a shallow copy shares it)."""

    _mutable = ("_board", "_history")

    def _start(self):
        super()._start()
        self._history = {"moves": []}

    def _apply(self, agent, move):
        self._history["moves"].append(move)
        super()._apply(agent, move)


class RefillsAtReset(connect_four.raw_env):
    """Connect Four with a per-episode array it refills in place at reset and never changes during play."""

    def _start(self):
        super()._start()
        if "_tally" not in self.__dict__:
            self._tally = np.zeros(2, np.int64)
        self._tally[:] = self.np_random.integers(0, 100, 2)


@pytest.mark.parametrize("game,leaked", [(ForgetsItsBoard, "_board"), (NestedHistory, "_history"),
                                         (RefillsAtReset, "_tally")])
def test_the_clone_check_catches_a_game_that_shares_what_it_changes(game, leaked):
    leaks = clone_leaks(lambda mode, invalid: _make(None, mode, invalid, game), "discrete", seeds=range(2))
    assert leaks and all(leak.endswith(f": {leaked}") for leak in leaks), leaks


MUTABLE = [pytest.param(e, name, id=f"{e}-{name}") for e in list_envs() for name in type(make(e))._mutable]


@pytest.mark.slow  # about 15 s for the lot; the three controls above run by default
@pytest.mark.parametrize("env_id,name", MUTABLE)
def test_every_container_a_game_lists_in_mutable_is_caught_when_forgotten(env_id, name):
    """Each entry of each game's ``_mutable``, dropped in turn: the check names that attribute (in some mode)."""
    game = type(make(env_id))
    forgetful = type(f"Forgets{name}", (game,), {"_mutable": tuple(n for n in game._mutable if n != name)})
    found = set()
    for mode in game.supported_action_modes:
        leaks = clone_leaks(lambda m, invalid: _make(None, m, invalid, forgetful), mode)
        found |= {leak.rsplit(": ", 1)[1] for leak in leaks}
    assert found == {name}


def test_the_fingerprint_sees_a_change_deep_inside_nested_objects():
    class Box:
        def __init__(self):
            self.inner = {"a": [1, {2, 3}, np.zeros(2)]}
    box = Box()
    before = fingerprint(box)
    box.inner["a"][2][1] = 1.0
    assert fingerprint(box) != before
    box.inner["a"][2][1] = 0.0
    assert fingerprint(box) == before
