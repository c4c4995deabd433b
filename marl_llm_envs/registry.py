"""The env registry: ``make``, ``make_parallel``, ``list_envs``, ``spec``, and ``replay`` (a transcript back into its env).

Layers, bottom-up: ``text`` and ``cfr`` (the CFR solver) <- ``core`` <- ``envs/*`` (the games, a game package's
reference solvers, and the TextArena bridge) <- ``registry`` <- ``reference`` (the bots) <- the package's
``__init__`` (which registers each game with its bots); nothing below imports what is above it.

Every id is also registered with PettingZoo's registry as ``marl_llm/<id>``, so
``pettingzoo.make("aec", "marl_llm/kuhn_poker-v0")`` works too.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import json
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pettingzoo

from marl_llm_envs.cfr import ExactGame
from marl_llm_envs.core import TextEnv, _unlog, short_repr
from marl_llm_envs.envs.textarena_bridge import PREFIX, UNMEASURED_ANCHORS, TextArenaEnv, _check_id

FAMILIES = ("zero_sum", "cooperative", "orchestration")
_ANCHORS_FILE = Path(__file__).with_name("data") / "anchors.json"
_ANCHORS: dict[str, dict] = json.loads(_ANCHORS_FILE.read_text())["envs"] if _ANCHORS_FILE.exists() else {}


@dataclass(frozen=True)
class EnvSpec:
    """What a user needs to know about an env id before making it (read from the env class, one place)."""

    id: str
    version: int
    family: str
    agents: tuple[str, ...]
    roles: dict[str, str]
    teams: dict[str, str]
    reward_range: tuple[float, float]
    action_modes: tuple[str, ...]
    env_class: type[TextEnv] = field(repr=False)
    parallel_class: type | None = field(default=None, repr=False)
    kwargs: dict[str, Any] = field(default_factory=dict)
    anchors: dict[str, Any] = field(default_factory=dict)  # reference scores, measured by benchmarks/anchors.py
    references: dict[str, Callable[..., Any]] = field(default_factory=dict, repr=False)  # reference policies by name
    exact: ExactGame | None = field(default=None, repr=False)  # the game's CFR tree map, for exact scoring
    # the env class's flags (TextEnv: records_without, idle_roles, first_move_decides)
    records_without: bool = False
    idle_roles: tuple[str, ...] = ()
    first_move_decides: str = ""

    @property
    def has_parallel(self) -> bool:
        return self.parallel_class is not None

    @classmethod
    def describe(cls, env_id: str, sample: TextEnv, parallel_class: type | None = None,
                 kwargs: dict[str, Any] | None = None, references: dict[str, Callable[..., Any]] | None = None,
                 exact: ExactGame | None = None) -> "EnvSpec":
        """The spec of ``env_id``, read from an instance made with the id's default ``kwargs``."""
        return cls(
            id=env_id,
            version=sample.version,
            family=sample.family,
            agents=tuple(sample.possible_agents),
            roles=dict(sample.roles),
            teams=dict(sample.teams),
            reward_range=sample.reward_range,
            action_modes=tuple(sample.supported_action_modes),
            env_class=type(sample),
            parallel_class=parallel_class,
            kwargs=dict(kwargs or {}),
            anchors=_ANCHORS.get(env_id, {}),
            references=dict(references or {}),
            exact=exact,
            records_without=sample.records_without,
            idle_roles=tuple(sample.idle_roles),
            first_move_decides=sample.first_move_decides,
        )

    def accepted_kwargs(self) -> list[str]:
        """The keyword arguments ``make`` accepts for this id: those of the env class's ``__init__`` and its bases'
        (a new list on each call)."""
        return list(_accepted_kwargs(self.env_class))


@functools.cache
def _accepted_kwargs(env_class: type) -> tuple[str, ...]:
    """What :meth:`EnvSpec.accepted_kwargs` lists, read once per class (``inspect.signature`` of every ``__init__``
    in the MRO cost a tenth of a ``make``)."""
    names: list[str] = []
    for klass in env_class.__mro__:
        if not issubclass(klass, TextEnv) or "__init__" not in vars(klass):
            continue
        for p in inspect.signature(klass.__init__).parameters.values():
            if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in names:
                names.append(p.name)
    return tuple(names)


_REGISTRY: dict[str, EnvSpec] = {}


def register(env_class: type[TextEnv], parallel_class: type | None = None, env_id: str | None = None, *,
             references: dict[str, Callable[..., Any]] | None = None, exact: ExactGame | None = None,
             **kwargs: Any) -> EnvSpec:
    """Register an env class (and its parallel twin) under ``env_id`` (default: the class's ``env_id``).

    ``references``: the game's reference policies by name (``policy(env, agent, rng) -> action``, see
    :mod:`marl_llm_envs.reference`); ``exact``: its :class:`~marl_llm_envs.cfr.ExactGame`, for a game that
    exact scoring covers. ``kwargs`` are defaults for that id (a preset). The id is also registered with PettingZoo as
    ``marl_llm/<id>``.
    """
    env_id = env_id or env_class.env_id
    if env_class.family not in FAMILIES:
        raise ValueError(f"{env_class.__name__}.family must be one of {FAMILIES}")
    new = EnvSpec.describe(env_id, env_class(**kwargs), parallel_class, kwargs, references, exact)
    _REGISTRY[env_id] = new
    try:
        pettingzoo.register("aec", f"marl_llm/{env_id}", entry_point=functools.partial(make, env_id))
        if parallel_class is not None:
            pettingzoo.register("parallel", f"marl_llm/{env_id}", entry_point=functools.partial(make_parallel, env_id))
    except AttributeError:  # pettingzoo < 1.27 has no registry; ours still works
        pass
    return new


def list_envs(family: str | None = None) -> list[str]:
    """Registered env ids, sorted; optionally only one family ("zero_sum", "cooperative", "orchestration")."""
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family={family!r} is not one of {list(FAMILIES)}")
    return sorted(k for k, s in _REGISTRY.items() if family is None or s.family == family)


def spec(env_id: str) -> EnvSpec:
    """The :class:`EnvSpec` of a registered id; an unknown id raises ``KeyError`` naming the close matches."""
    try:
        return _REGISTRY[env_id]
    except (KeyError, TypeError):
        # --- TextArena bridge hook: "textarena/<id>" is resolved on demand (textarena imported lazily) ---
        if isinstance(env_id, str) and env_id.startswith("textarena/"):
            return _textarena_spec(env_id)
        # --- end of the TextArena bridge hook ---
        close = _close_ids(str(env_id))
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"unknown env id {env_id!r}{hint} Registered: {', '.join(list_envs())}") from None


def _close_ids(env_id: str) -> list[str]:
    """Registered ids whose names are close to ``env_id``'s, compared without the ``-vN`` suffix that every id has
    (with it, any ``x-v0`` was close to every ``...-v0``)."""
    def name(i: str) -> str:
        return re.sub(r"-v[0-9]+$", "", i)

    by_name: dict[str, list[str]] = {}
    for i in _REGISTRY:
        by_name.setdefault(name(i), []).append(i)
    return [i for n in difflib.get_close_matches(name(env_id), list(by_name), n=3, cutoff=0.5) for i in by_name[n]]


def _check_kwargs(env_spec: EnvSpec, kwargs: dict[str, Any]) -> dict[str, Any]:
    accepted = _accepted_kwargs(env_spec.env_class)
    for name in kwargs:
        if name not in accepted:
            close = difflib.get_close_matches(name, accepted, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise TypeError(f"{env_spec.id} got an unknown keyword argument {name!r}{hint} "
                            f"Accepted: {', '.join(accepted)}")
    return {**env_spec.kwargs, **kwargs}


def make(env_id: str, **kwargs: Any) -> TextEnv:
    """Make a registered env as a PettingZoo ``AECEnv``: ``make("think_solve-v0", action_mode="discrete")``."""
    env_spec = spec(env_id)
    return env_spec.env_class(**_check_kwargs(env_spec, kwargs))


def make_parallel(env_id: str, **kwargs: Any):
    """Make the PettingZoo ``ParallelEnv`` of an env whose turns are simultaneous (e.g. ``voting-v0``)."""
    env_spec = spec(env_id)
    if env_spec.parallel_class is None:
        with_parallel = [k for k, s in _REGISTRY.items() if s.has_parallel]
        raise ValueError(f"{env_id} has sequential turns and no parallel env; use make(). "
                         f"Envs with a parallel env: {', '.join(sorted(with_parallel))}")
    return env_spec.parallel_class(**_check_kwargs(env_spec, kwargs))


@functools.cache
def _textarena_spec(env_id: str) -> EnvSpec:
    """The spec of ``"textarena/<TextArena id>"``, built on the fly (cached); TextArena is imported only here."""
    if not env_id.startswith(PREFIX):
        raise KeyError(f"{env_id!r} is not a TextArena id (they start with {PREFIX!r})")
    ta_id = env_id[len(PREFIX):]
    _check_id(ta_id)
    new = EnvSpec.describe(env_id, TextArenaEnv(ta_id=ta_id), kwargs={"ta_id": ta_id})
    if not new.anchors:
        new = dataclasses.replace(new, anchors=UNMEASURED_ANCHORS)
    return new


def replay(transcript: dict[str, Any] | str) -> TextEnv:
    """Rebuild the env a transcript describes: same env id, kwargs and seed, the same step inputs and ablations.

    Returns the env in the state where the transcript ended. Accepts the dict or its JSON string. A transcript that
    does not describe an episode of a registered env raises ``ValueError`` naming the field or the step: not JSON, a
    field of the wrong type, another version, kwargs the env does not take, a step the env refuses, a step after
    the episode ended. An env id that is not registered is ``make``'s ``KeyError``."""
    if isinstance(transcript, str):
        try:
            transcript = json.loads(transcript)
        except (ValueError, RecursionError) as e:       # JSONDecodeError is a ValueError; nesting past the stack
            raise ValueError(f"a transcript string must be JSON ({type(e).__name__}: {e})") from None
    ablations = _check_transcript(transcript)
    env_spec = spec(transcript["env_id"])
    if "version" in transcript and transcript["version"] != env_spec.version:
        raise ValueError(
            f"transcript is for {transcript['env_id']} version {transcript['version']!r}, "
            f"but this package has version {env_spec.version}"
        )
    try:
        env = make(transcript["env_id"], **transcript["kwargs"])
    except TypeError as e:                              # an unknown kwarg (make names the close match)
        raise ValueError(f"transcript kwargs: {e}") from None
    env.reset(seed=transcript["seed"])
    k = 0
    for i, action in enumerate(transcript["actions"]):
        while k < len(ablations) and ablations[k][0] == i:
            env = env.ablate(ablations[k][1])
            k += 1
        if not env.agents:
            raise ValueError(f"transcript actions[{i}]: the episode ended after {i} steps, but the transcript has "
                             f"{len(transcript['actions'])}")
        try:
            env.step(_unlog(action))
        except ValueError as e:
            raise ValueError(f"transcript actions[{i}]: {e}") from None
    while k < len(ablations):
        env = env.ablate(ablations[k][1])
        k += 1
    return env


def _check_transcript(t: Any) -> list[tuple[int, str]]:
    """The shape :meth:`TextEnv.transcript` writes, or a ``ValueError`` naming the field; returns the ablations as
    sorted (step, agent) pairs."""
    if not isinstance(t, dict) or not {"env_id", "kwargs", "seed", "actions"} <= set(t):
        raise ValueError("a transcript is a dict with env_id, version, kwargs, seed, actions (and ablations)")
    for name, kind, what in (("env_id", str, "a string"), ("kwargs", dict, "a dict"),
                             ("actions", (list, tuple), "a list")):
        if not isinstance(t[name], kind):
            raise ValueError(f"transcript {name} must be {what}, got {short_repr(t[name], 40)}")
    for name in ("seed", "version"):
        value = t.get(name, 0)
        if not _natural(value):
            raise ValueError(f"transcript {name} must be a non-negative int, got {short_repr(value, 40)}")
    pairs = t.get("ablations", [])
    if not isinstance(pairs, (list, tuple)) or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 and _natural(p[0]) and isinstance(p[1], str) for p in pairs):
        raise ValueError(f"transcript ablations must be a list of [step, agent] pairs, got {short_repr(pairs, 60)}")
    return sorted((int(i), a) for i, a in pairs)


def _natural(value: Any) -> bool:
    """A non-negative int (a NumPy integer too; not a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0
