"""Evaluation protocols: one small, versioned JSON file each under ``leaderboard/protocols/``.

A protocol freezes what a score means: the env versions and kwargs, the evaluation seeds, who the submission plays
with, and the normalization anchors. ``load_protocol("policy")`` (a name in ``leaderboard/protocols/`` or a path)
reads one and checks it against this package: an unknown field, a wrong type, a stale env version or a missing anchor
is an error naming the field.

The file::

    {"schema": "marl_llm_protocol", "id": "policy", "version": 1, "track": "policy" | "credit",
     "tier": "micro" | "small" | "gpu",          (credit track only)
     "description": "...", "action_mode": "discrete" | "text",
     "seeds": {"start": 1099511627776, "count": 200},
     "seeded_moves": false,                       (optional, default false; policy@2 and later: true)
     "train": {"model": ..., "mode": ..., "steps": ..., "tasks_per_step": ..., "group_size": ...,
               "seeds": [0, 1, 2, 3, 4], "max_tokens": null},   (credit track only: the fixed training budget)
     "tasks": [{"name": "kuhn_poker/vs-kuhn_nash", "env_id": "kuhn_poker-v0", "env_version": 0, "env_kwargs": {},
                "play": "versus", "opponent": "kuhn_nash", "normalize": {"zero": "random", "one": "kuhn_nash"}},
               {"name": "mini_hanabi/self-play", "env_id": "mini_hanabi-v1", "env_version": 1, "env_kwargs": {},
                "play": "self", "normalize": {"zero": "random", "one": "rule_bot"}}]}

Seeds. Every task is played on the env seeds ``start .. start + count - 1``. Training draws its env seeds from
:func:`baselines.rollout.training_seeds` (small consecutive ints from the run seed), so evaluation seeds start at
``2**40`` or above (:data:`EVAL_SEED_START`), a range no training run reaches.

Play. ``"self"``: the submission plays every seat (cooperative and orchestration envs); the score of an episode is
the team reward. ``"versus"``: a two-player zero-sum env; on every seed the submission plays each seat once against
``opponent`` (a reference policy of the env, or ``"random"``); the score of a seed is the submission's payoff averaged
over the two seats.

Seeded moves (``"seeded_moves": true``, from ``policy@2``). Every decision of an episode, the submission's and the
protocol's opponents' and partners', is seeded from (protocol, task, run, episode seed, step, deciding seat) alone
(:class:`leaderboard.players.SeededMoves`), whoever decides. ``validate`` then re-derives every move the submitter
does not own, step by step, and requires the identical move; a relabelled task, seat or opponent does not
re-derive. ``validate --reproduce`` re-plays the submission's own moves the same way for players that can run here.
Without the field (the version-1 protocols) the opponent keeps one random stream per batch, so its moves can only be
checked for legality.

Ids. A protocol id matches ``^[a-z0-9][a-z0-9_-]*$`` (:data:`PROTOCOL_ID`) and is registered: a file
``protocols/<id>.json``. Submissions name protocols by id only, never by path.

Normalization. ``normalize = {"zero": A, "one": B}`` names two policies measured in ``spec(env_id).anchors``
(``marl_llm_envs/data/anchors.json``): a score ``x`` becomes ``(x - value(A)) / (value(B) - value(A))``, so A (the
random policy) scores 0 and B (the reference policy) 1. For ``"self"``, ``value(P)`` is the anchor's mean team
reward; for ``"versus"`` it is P's payoff against the opponent averaged over the two seats, read from the
``"player_0 payoff, P vs O"`` and ``"player_0 payoff, O vs P"`` anchors (``value(O) = 0`` against itself, by symmetry).
The resolved values are part of the protocol (``Task.zero``, ``Task.one``) and of every result.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from marl_llm_envs import make, spec
from marl_llm_envs.reference import reference_policies

SCHEMA = "marl_llm_protocol"
EVAL_SEED_START = 2**40
PROTOCOL_DIR = Path(__file__).with_name("protocols")
TRACKS = ("policy", "credit")
TIERS = ("micro", "small", "gpu")
PLAYS = ("self", "versus")
ACTION_MODES = ("discrete", "text")
PROTOCOL_ID = re.compile(r"[a-z0-9][a-z0-9_-]*")

__all__ = ["EVAL_SEED_START", "PROTOCOL_ID", "Header", "Protocol", "ProtocolError", "Task", "get_field",
           "list_protocols", "load_protocol", "parse_env", "parse_header", "parse_play", "parse_protocol",
           "parse_seed_range", "parse_train_budget", "read_anchor", "registered_protocol", "reject_unknown"]


class ProtocolError(ValueError):
    """A protocol file that does not fit the schema or this package (the message names the field)."""


@dataclass(frozen=True)
class Task:
    """One scored task of a protocol: an env, who the submission plays with, and its normalization."""

    name: str
    env_id: str
    env_version: int
    env_kwargs: dict[str, Any]
    play: str                        # "self" or "versus"
    opponent: str | None             # versus: a reference policy name or "random"
    normalize: dict[str, str]        # {"zero": policy name, "one": policy name}
    zero: float                      # the anchor values the names resolve to (see the module docstring)
    one: float

    def normalized(self, x: float) -> float:
        return (x - self.zero) / (self.one - self.zero)

    def seats(self) -> list[str]:
        """The seats the submission takes: every agent at once for ``self`` (one entry ``"all"``), else each agent
        of the env."""
        return ["all"] if self.play == "self" else list(spec(self.env_id).agents)


@dataclass(frozen=True)
class Header:
    """The fields a benchmark file opens with, a protocol's or a suite's (:func:`parse_header`)."""

    id: str
    version: int
    track: str
    tier: str | None                 # credit track: "micro", "small" or "gpu"; policy track: None
    description: str
    action_mode: str

    @property
    def key(self) -> str:
        """``id@version``: what entries are grouped by."""
        return f"{self.id}@{self.version}"


@dataclass(frozen=True)
class Protocol(Header):
    seed_start: int
    seed_count: int
    tasks: tuple[Task, ...]
    train: dict[str, Any] | None = None
    seeded_moves: bool = False       # see "Seeded moves" in the module docstring
    sha256: str = ""                 # of the file's canonical JSON
    path: str = field(default="", compare=False)

    @property
    def seeds(self) -> list[int]:
        return list(range(self.seed_start, self.seed_start + self.seed_count))

    @property
    def runs(self) -> int:
        """How many runs a submission has: one per training seed on the credit track (each a trained policy), one
        on the policy track (the player as it is)."""
        return len(self.train["seeds"]) if self.track == "credit" else 1

    def task(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(f"protocol {self.key} has no task {name!r}; its tasks: {[t.name for t in self.tasks]}")

    def env_kwargs(self, task: Task) -> dict[str, Any]:
        """What evaluate passes to ``make``: the task's kwargs and the protocol's action mode."""
        return {**task.env_kwargs, "action_mode": self.action_mode}

    @property
    def env_ids(self) -> list[str]:
        """The envs the tasks play, sorted: a submission has one player (per run) for each."""
        return sorted({t.env_id for t in self.tasks})

    def env_task(self, env_id: str) -> Task:
        """The first task that plays ``env_id``: its kwargs stand for the env in :meth:`roles` and
        :meth:`env_records`."""
        return next(t for t in self.tasks if t.env_id == env_id)

    def roles(self, env_id: str) -> list[str]:
        """The roles of ``env_id`` as this protocol plays it, sorted: what a player is built for."""
        return sorted(set(make(env_id, **self.env_kwargs(self.env_task(env_id))).roles.values()))

    def env_record(self, task: Task) -> dict[str, Any]:
        """``{"env_id", "env_version", "env_kwargs"}`` with the env's full kwargs (defaults included), as its
        transcripts record them."""
        env = make(task.env_id, **self.env_kwargs(task))
        env.reset(seed=self.seed_start)
        return {"env_id": task.env_id, "env_version": int(env.version), "env_kwargs": env.transcript()["kwargs"]}

    def env_records(self) -> list[dict[str, Any]]:
        """:meth:`env_record` of every env, sorted by env id: a submission's ``envs``."""
        return [self.env_record(self.env_task(env_id)) for env_id in self.env_ids]


def list_protocols(folder: str | Path = PROTOCOL_DIR) -> list[str]:
    return sorted(p.stem for p in Path(folder).glob("*.json"))


def registered_protocol(pid: Any, where: str = "protocol.id") -> Protocol:
    """The registered protocol ``pid`` (an id, never a path): ``protocols/<pid>.json`` of this package."""
    if not isinstance(pid, str) or not PROTOCOL_ID.fullmatch(pid) or len(pid) > 64:
        raise ProtocolError(f"{where}: {str(pid)[:80]!r} is not a protocol id (^[a-z0-9][a-z0-9_-]*$, at most 64 "
                            f"characters); registered: {list_protocols()}")
    if pid not in list_protocols():
        raise ProtocolError(f"{where}: {pid!r} is not a registered protocol; registered: {list_protocols()}")
    return load_protocol(PROTOCOL_DIR / f"{pid}.json")


def load_protocol(name_or_path: str | Path) -> Protocol:
    """Read and check a protocol: a file path, or a name in ``leaderboard/protocols/`` (``"policy"``)."""
    path = Path(name_or_path)
    if not path.suffix == ".json" or not path.exists():
        candidate = PROTOCOL_DIR / f"{name_or_path}.json"
        if not candidate.exists():
            what = "a file, but not a .json one" if path.is_file() else "not a file"
            raise ProtocolError(f"no protocol {str(name_or_path)!r}: {what}, and not one of "
                                f"{list_protocols()} in {PROTOCOL_DIR}")
        path = candidate
    try:
        raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (json.JSONDecodeError, ValueError) as e:
        raise ProtocolError(f"{path}: not valid JSON ({e})") from None
    return parse_protocol(raw, where=str(path))


def canonical_sha256(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value`` (sorted keys, no spaces): how every hash here is computed."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _no_constant(name: str):
    raise ValueError(f"{name} is not allowed (JSON has no NaN or Infinity)")


def get_field(d: dict, key: str, kind: type | tuple, where: str, optional: bool = False) -> Any:
    """``d[key]`` checked to be of ``kind`` (a bool is never an int or a number here); a missing field or a wrong
    type is a :class:`ProtocolError` naming ``where.key``. ``optional``: a missing field or ``null`` gives ``None``."""
    if key not in d:
        if optional:
            return None
        raise ProtocolError(f"{where}: missing field {key!r}")
    value = d[key]
    if value is None and optional:
        return None
    if isinstance(value, bool) and kind is not bool and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ProtocolError(f"{where}.{key}: expected {_kind_name(kind)}, got a boolean")
    if not isinstance(value, kind):
        raise ProtocolError(f"{where}.{key}: expected {_kind_name(kind)}, got {type(value).__name__} {value!r}")
    return value


def _kind_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({str: "a string", int: "an integer", dict: "an object", list: "a list", float: "a number",
                        bool: "a boolean"}.get(k, k.__name__) for k in kinds)


def reject_unknown(d: dict, allowed: set[str], where: str) -> None:
    """A field of ``d`` outside ``allowed`` is a :class:`ProtocolError` listing the allowed ones."""
    extra = sorted(set(d) - allowed)
    if extra:
        raise ProtocolError(f"{where}: unknown field(s) {extra}; allowed: {sorted(allowed)}")


_TOP = {"schema", "id", "version", "track", "tier", "description", "action_mode", "seeds", "train", "tasks",
        "seeded_moves"}
_TASK = {"name", "env_id", "env_version", "env_kwargs", "play", "opponent", "normalize"}
_TRAIN = {"model", "mode", "steps", "tasks_per_step", "group_size", "seeds", "max_tokens"}


def parse_header(raw: Any, where: str, schema: str, noun: str, allowed: set[str],
                 tracks: Sequence[str] = TRACKS) -> Header:
    """Check the opening of a benchmark file's parsed JSON (``noun``: ``"protocol"`` or ``"suite"``, for the
    messages): an object with no field outside ``allowed``, the ``schema`` name, an id matching :data:`PROTOCOL_ID`, a
    version >= 1, a track of ``tracks``, a tier exactly on the credit track, a description and an action mode."""
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}: a {noun} is a JSON object")
    reject_unknown(raw, allowed, where)
    if raw.get("schema") != schema:
        raise ProtocolError(f"{where}.schema: expected {schema!r}, got {raw.get('schema')!r}")
    pid = get_field(raw, "id", str, where)
    if not PROTOCOL_ID.fullmatch(pid) or len(pid) > 64:
        raise ProtocolError(f"{where}.id: {pid[:80]!r} must match ^[a-z0-9][a-z0-9_-]*$ (at most 64 characters)")
    version = get_field(raw, "version", int, where)
    if version < 1:
        raise ProtocolError(f"{where}.version: must be >= 1, got {version}")
    track = get_field(raw, "track", str, where)
    if track not in tracks:
        raise ProtocolError(f"{where}.track: {track!r} is not one of {list(tracks)}")
    tier = get_field(raw, "tier", str, where, optional=True)
    if track == "credit" and tier not in TIERS:
        raise ProtocolError(f"{where}.tier: a credit-track {noun} names a tier, one of {list(TIERS)}; got {tier!r}")
    if track == "policy" and tier is not None:
        raise ProtocolError(f"{where}.tier: only credit-track protocols have a tier")
    description = get_field(raw, "description", str, where)
    action_mode = get_field(raw, "action_mode", str, where)
    if action_mode not in ACTION_MODES:
        raise ProtocolError(f"{where}.action_mode: {action_mode!r} is not one of {list(ACTION_MODES)}")
    return Header(pid, version, track, tier, description, action_mode)


def parse_seed_range(d: dict, where: str) -> tuple[int, int]:
    """``(start, count)`` of an evaluation seed range ``{"start", "count"}``: the seeds start at
    :data:`EVAL_SEED_START` or above, so they never meet a training seed, and there is at least one."""
    reject_unknown(d, {"start", "count"}, where)
    start = get_field(d, "start", int, where)
    count = get_field(d, "count", int, where)
    if start < EVAL_SEED_START:
        raise ProtocolError(f"{where}.start: evaluation seeds start at 2**40 = {EVAL_SEED_START} or above, "
                            f"so they never meet training seeds (training_seeds gives small ints); got {start}")
    if count < 1:
        raise ProtocolError(f"{where}.count: must be >= 1, got {count}")
    return start, count


def parse_protocol(raw: Any, where: str = "protocol") -> Protocol:
    """Check a protocol's parsed JSON against the schema and this package; resolve its anchors."""
    head = parse_header(raw, where, SCHEMA, "protocol", _TOP)
    start, count = parse_seed_range(get_field(raw, "seeds", dict, where), f"{where}.seeds")
    train = get_field(raw, "train", dict, where, optional=True)
    if head.track == "credit":
        if train is None:
            raise ProtocolError(f"{where}.train: a credit-track protocol fixes the training budget")
        train = parse_train_budget(train, f"{where}.train")
    elif train is not None:
        raise ProtocolError(f"{where}.train: only credit-track protocols have a training budget")
    seeded_moves = get_field(raw, "seeded_moves", bool, where, optional=True) or False
    raw_tasks = get_field(raw, "tasks", list, where)
    if not raw_tasks:
        raise ProtocolError(f"{where}.tasks: a protocol has at least one task")
    tasks = [_parse_task(t, f"{where}.tasks[{i}]") for i, t in enumerate(raw_tasks)]
    names = [t.name for t in tasks]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ProtocolError(f"{where}.tasks: task names must be unique; repeated: {dup}")
    return Protocol(**vars(head), seed_start=start, seed_count=count, tasks=tuple(tasks), train=train,
                    seeded_moves=seeded_moves, sha256=canonical_sha256(raw), path=where)


def parse_train_budget(d: dict, where: str) -> dict[str, Any]:
    """A credit-track training budget ``{"model", "mode", "steps", "tasks_per_step", "group_size", "seeds",
    "max_tokens"}``, checked (positive sizes; distinct run seeds below 2**40)."""
    reject_unknown(d, _TRAIN, where)
    out = {"model": get_field(d, "model", str, where), "mode": get_field(d, "mode", str, where)}
    for key in ("steps", "tasks_per_step", "group_size"):
        out[key] = get_field(d, key, int, where)
        if out[key] < 1:
            raise ProtocolError(f"{where}.{key}: must be >= 1, got {out[key]}")
    seeds = get_field(d, "seeds", list, where)
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < EVAL_SEED_START
                            for s in seeds) or len(set(seeds)) != len(seeds):
        raise ProtocolError(f"{where}.seeds: distinct non-negative integer run seeds below 2**40, got {seeds!r}")
    out["seeds"] = list(seeds)
    out["max_tokens"] = get_field(d, "max_tokens", int, where, optional=True)
    return out


def parse_env(d: dict, where: str, noun: str) -> tuple[str, Any, int, dict[str, Any]]:
    """``(env_id, spec, env_version, env_kwargs)`` of a task or setting (``noun``: who is speaking in the messages,
    ``"protocol"`` or ``"suite"``): a registered env at this package's version, with kwargs it accepts (the action
    mode is the file's, not a kwarg)."""
    env_id = get_field(d, "env_id", str, where)
    try:
        env_spec = spec(env_id)
    except KeyError as e:
        raise ProtocolError(f"{where}.env_id: {e.args[0]}") from None
    env_version = get_field(d, "env_version", int, where)
    if env_version != env_spec.version:
        raise ProtocolError(f"{where}.env_version: the {noun} is for {env_id} version {env_version}, but this "
                            f"package has version {env_spec.version}; the {noun} needs a new version")
    env_kwargs = get_field(d, "env_kwargs", dict, where)
    if "action_mode" in env_kwargs:
        raise ProtocolError(f"{where}.env_kwargs: the action mode is the {noun}'s action_mode, not a kwarg here")
    accepted = [k for k in env_spec.accepted_kwargs() if k != "action_mode"]
    bad = sorted(k for k in env_kwargs if k not in accepted)
    if bad:
        raise ProtocolError(f"{where}.env_kwargs: {env_id} does not accept {bad}; accepted: {accepted}")
    return env_id, env_spec, env_version, env_kwargs


def parse_play(d: dict, where: str, env_spec, item: str) -> tuple[str, str | None]:
    """``(play, opponent)`` of a task or setting (``item``, for the messages): ``"self"``, or ``"versus"`` in a
    two-player zero-sum env against a policy of that env (``"random"`` or a reference policy)."""
    play = get_field(d, "play", str, where)
    if play not in PLAYS:
        raise ProtocolError(f"{where}.play: {play!r} is not one of {list(PLAYS)}")
    opponent = get_field(d, "opponent", str, where, optional=True)
    if play == "versus":
        if env_spec.family != "zero_sum" or len(env_spec.agents) != 2:
            raise ProtocolError(f"{where}.play: 'versus' is for two-player zero-sum envs; {env_spec.id} is "
                                f"{env_spec.family} with {len(env_spec.agents)} agents")
        if opponent is None:
            raise ProtocolError(f"{where}.opponent: a 'versus' {item} names its opponent")

        known = ["random", *reference_policies(env_spec.id)]
        if opponent not in known:
            raise ProtocolError(f"{where}.opponent: {opponent!r} is not a policy of {env_spec.id}; known: {known}")
    elif opponent is not None:
        raise ProtocolError(f"{where}.opponent: only 'versus' {item}s have an opponent")
    return play, opponent


def _parse_task(t: Any, where: str) -> Task:
    if not isinstance(t, dict):
        raise ProtocolError(f"{where}: a task is a JSON object")
    reject_unknown(t, _TASK, where)
    name = get_field(t, "name", str, where)
    env_id, env_spec, env_version, env_kwargs = parse_env(t, where, "protocol")
    play, opponent = parse_play(t, where, env_spec, "task")
    normalize = get_field(t, "normalize", dict, where)
    reject_unknown(normalize, {"zero", "one"}, f"{where}.normalize")
    names = {k: get_field(normalize, k, str, f"{where}.normalize") for k in ("zero", "one")}
    zero = read_anchor(env_spec, play, opponent, names["zero"], f"{where}.normalize.zero")
    one = read_anchor(env_spec, play, opponent, names["one"], f"{where}.normalize.one")
    if not one > zero:
        raise ProtocolError(f"{where}.normalize: the 'one' anchor ({names['one']} = {one:.4f}) must score above the "
                            f"'zero' anchor ({names['zero']} = {zero:.4f})")
    return Task(name, env_id, env_version, dict(env_kwargs), play, opponent, names, zero, one)


def read_anchor(env_spec, play: str, opponent: str | None, name: str, where: str) -> float:
    """``value(name)`` of the module docstring's Normalization, read from ``env_spec.anchors``: the anchor's mean
    team reward for ``self``; for ``versus`` the payoff of ``name`` against ``opponent`` averaged over the seats."""
    anchors = env_spec.anchors
    if play == "self":
        entry = anchors.get(name)
        if not isinstance(entry, dict) or "mean" not in entry:
            raise ProtocolError(f"{where}: {env_spec.id} has no anchor {name!r} in anchors.json; it has "
                                f"{sorted(anchors)}")
        value = float(entry["mean"])
    elif name == opponent:
        value = 0.0          # a policy against itself, averaged over the two seats of a zero-sum game
    else:
        first = anchors.get(f"player_0 payoff, {name} vs {opponent}")
        second = anchors.get(f"player_0 payoff, {opponent} vs {name}")
        if not isinstance(first, dict) or not isinstance(second, dict):
            raise ProtocolError(f"{where}: {env_spec.id} needs the anchors 'player_0 payoff, {name} vs {opponent}' "
                                f"and 'player_0 payoff, {opponent} vs {name}' in anchors.json; it has "
                                f"{sorted(anchors)}")
        value = (float(first["mean"]) - float(second["mean"])) / 2
    if not math.isfinite(value):
        raise ProtocolError(f"{where}: anchor {name!r} of {env_spec.id} is not a finite number")
    return value
