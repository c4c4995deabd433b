"""What the rollout engine records: :class:`Turn`, :class:`Branch`, :class:`Episode`, and their JSONL files.

Everything here is plain data (JSON-safe fields), so episodes can be written by one process and read by another
(a trainer, a credit method, an audit with :func:`marl_llm_envs.replay`).

Turn rewards. ``Turn.reward`` is what the env gave the acting agent (``env.rewards[agent]`` after every step) from
this turn's step up to, but not including, the agent's next turn (the last turn of an agent collects everything up to
the end of the episode). Rewards an agent receives before its first turn are added to its first turn. So for every
agent with at least one turn, ``sum(t.reward for t in episode.turns if t.agent == a) == episode.rewards[a]``.

Indices. ``Turn.turn_index`` is the turn's position in its list (``Episode.turns`` or ``Branch.turns``);
``Turn.step_index`` is the position of its ``env.step`` input in the transcript (``transcript["actions"]``) of the
episode or branch it belongs to, so ``replay`` of the first ``step_index`` actions rebuilds the state the agent saw.

Groups. The ``group_size`` samples of one task share ``(run_id, group_id)`` (:attr:`Episode.group_key`): ``group_id``
is the task's index in its :meth:`~baselines.rollout.RolloutEngine.run` call and ``run_id`` names the call (the
trainer passes ``"step-17"``; by default a digest of the env, its kwargs and the seeds), so groups of different calls
never merge. Credit methods form groups by ``group_key``, never by list order.

What a trainer must know to read the log-probabilities: ``Turn.choice`` (:class:`~baselines.policies.base.Choice`:
the chosen move's index, its behaviour log-probability, the distribution and how it was scored; None for free text),
``Turn.legal_actions`` (the moves offered; ``Turn.choice.probs`` are aligned with them; empty for free-text turns) and ``Episode.policies`` (per role:
the policy's name, version and sampling settings, see :meth:`~baselines.policies.base.Policy.settings`).

JSONL. :func:`write_jsonl` writes a header line ``{"schema": "marl_llm_episodes", "schema_version": 2}`` then one
episode per line; :func:`read_jsonl` checks the header and raises ``ValueError`` naming the line of a corrupt entry.
Version 1 files (no ``run_id``, ``policies`` or ``legal_actions``) are still read, with those fields empty. Turns
written before ``Turn.choice`` kept the choice in ``extra`` (``mode``, ``choice_index``, ``choice_logprob``,
``choice_probs``, ``choice_scoring``); reading them fills ``choice`` from those keys
(:meth:`~baselines.policies.base.Choice.from_legacy_extra`) and leaves ``extra`` as written.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from baselines.outputs import json_shape_problem, replacing
from baselines.policies.base import Choice, VectorInputs

SCHEMA = "marl_llm_episodes"
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

__all__ = ["Branch", "Episode", "SCHEMA_VERSION", "Turn", "json_safe", "read_jsonl", "write_jsonl"]


def json_safe(value: Any, _seen: dict[int, Any] | None = None) -> Any:
    """``value`` with NumPy scalars/arrays, tuples and sets turned into JSON types (unknown objects -> ``repr``).

    A dict of more than 8 items that appears more than once in ``value`` (the voting env puts one
    ``team_reward_without`` dict in every voter's infos) is converted once: where its converted form holds no
    container, later appearances get a copy of it (the result never shares a dict between two places, as a fresh
    conversion would not). ``_seen`` is internal (a dict's items share it; a comprehension's do not, which would make
    it a closure cell in every call)."""
    kind = type(value)      # the exact built-in types first (the rollout calls this on every episode's infos)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else repr(value)
    if kind is dict:        # plain values inline: no call per leaf (final infos hold per-voter dicts of floats)
        out = {}
        for k, v in value.items():
            t = type(v)
            if t is float:
                if not math.isfinite(v):
                    v = repr(v)
            elif t is str or t is int or t is bool or v is None:
                pass
            elif t is dict and len(v) > 8:             # (a small dict converts about as fast as it is looked up)
                if _seen is None:
                    _seen = {}
                seen = _seen.get(id(v))
                if seen is None:
                    safe = json_safe(v, _seen)
                    _seen[id(v)] = [v, safe, None]      # v is kept so that its id is not reused during this call
                    v = safe
                else:
                    if seen[2] is None:                 # its second appearance: is the converted form flat?
                        seen[2] = not any(type(x) is dict or type(x) is list for x in seen[1].values())
                    v = dict(seen[1]) if seen[2] else json_safe(v, _seen)
            else:
                v = json_safe(v, _seen)
            out[k if type(k) is str else str(k)] = v
        return out
    if kind is list or kind is tuple:
        return [v if (type(v) is str or type(v) is int or type(v) is bool or v is None
                      or (type(v) is float and math.isfinite(v))) else json_safe(v) for v in value]
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays, torch tensors
    if callable(tolist):
        try:
            return json_safe(tolist())
        except Exception:  # noqa: BLE001 - fall through to repr
            pass
    return repr(value)


@dataclass
class Turn:
    """One decision of one agent: the prompt it saw (as token ids), what it produced and what followed."""

    agent: str
    role: str
    team: str
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)   # one per completion token, under the sampling distribution
    text: str = ""                  # the decoded completion
    action: Any = None              # what was passed to env.step (JSON-safe)
    invalid: bool = False           # infos[agent]["invalid_action"] was set after the step
    invalid_reason: str | None = None
    reward: float = 0.0             # see the module docstring
    turn_index: int = 0             # position in Episode.turns / Branch.turns
    step_index: int = 0             # position of this step in the transcript's actions
    obs_digest: str = ""            # sha1 of the observation text and legal actions (replay-eligibility check);
    #                                 computed in runs with branches only ("" otherwise)
    legal_actions: list[str] = field(default_factory=list)  # the moves offered ([] = a free-text turn, or a policy
    #                                 that reads no legal moves, e.g. the MLP: its mask is in choice.inputs)
    replayed: bool = False          # branches only: the recorded action of the main episode was reused (no new tokens)
    extra: dict[str, Any] = field(default_factory=dict)  # the policy's Generation.extra (JSON-safe)
    state: list[float] | None = None  # what a learned critic reads, recorded before the step only when asked
    #                                   (RolloutEngine(record_state=...): "global" = env.state(), "observation")
    choice: Choice | None = None    # the policy's Generation.choice: the move it chose among the legal ones and the
    #                                 distribution it drew it from (None: a free-text turn)

    @property
    def num_tokens(self) -> int:
        return len(self.completion_ids)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "") -> "Turn":
        """The turn a record of :meth:`to_dict` describes; a field of the wrong type is a ``ValueError`` naming it
        (``where``: the path of the record, e.g. ``"turns[3]"``)."""
        _check_fields(d, _TURN_FIELDS, where)
        turn = cls(**_known(cls, d))
        if isinstance(turn.choice, dict):
            try:
                turn.choice = Choice.from_dict(turn.choice)
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"{where}.choice: not a choice ({type(e).__name__}: {e})") from None
            if turn.choice.kind == "mlp" and turn.choice.inputs is None:    # written before Choice.inputs: in extra
                turn.choice = replace(turn.choice, inputs=VectorInputs.from_legacy_extra(turn.extra))
        elif turn.choice is None and turn.extra and "choice" not in d:   # written before Turn.choice: in extra
            turn.choice = Choice.from_legacy_extra(turn.extra, turn.action, turn.logprobs, turn.legal_actions)
        return turn


@dataclass
class Branch:
    """A counterfactual continuation from a clone of the env taken just before ``agent``'s turn ``turn_index``.

    ``kind="ablate"``: the agent was ablated (``env.ablate(agent)``) and the episode continued without it.
    ``kind="resample"``: the agent's action was sampled anew (sample ``sample_index`` of K) and the episode continued.
    ``turns`` are the branch's decisions from the branch point on (``replayed`` marks recorded actions reused from the
    main episode); ``tokens_generated`` counts only new tokens.
    """

    kind: str
    agent: str
    turn_index: int                 # index in Episode.turns of the agent's turn the branch replaces
    sample_index: int = 0
    team_rewards: dict[str, float] = field(default_factory=dict)  # the branch env's team_rewards() at the end
    rewards: dict[str, float] = field(default_factory=dict)       # per agent: main-episode rewards before the branch
    #                                                               point + the branch's rewards after it (including
    #                                                               those the ablation itself handed out)
    tokens_generated: int = 0
    turns: list[Turn] = field(default_factory=list)
    transcript: dict[str, Any] = field(default_factory=dict)       # the branch env's transcript (ablations included)
    wall_time_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return self._record(Turn.to_dict)

    def _record(self, turn_record) -> dict[str, Any]:
        """The fields, then ``turns`` (each made by ``turn_record``): :meth:`to_dict`, and :meth:`Episode.to_json`'s
        record, whose turns :func:`_plain` makes."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "turns"}
        d["turns"] = [turn_record(t) for t in self.turns]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "") -> "Branch":
        _check_fields(d, _BRANCH_FIELDS, where)
        d = _known(cls, d)
        d["turns"] = [Turn.from_dict(t, f"{where}.turns[{k}]") for k, t in enumerate(d.get("turns", []))]
        return cls(**d)


@dataclass
class Episode:
    """One played episode of an env (one member of a GRPO group), with its counterfactual branches."""

    env_id: str
    env_version: int
    env_kwargs: dict[str, Any]      # the kwargs given to make() (the transcript has the full set)
    seed: int                       # the env's reset seed (shared by the group)
    task_id: str | None             # from the final infos when the env has one
    group_id: int
    sample_index: int = 0           # position in the group
    turns: list[Turn] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)       # per agent, summed over the episode
    team_rewards: dict[str, float] = field(default_factory=dict)  # env.team_rewards() at the end
    transcript: dict[str, Any] = field(default_factory=dict)      # env.transcript(); replay() rebuilds the episode
    tokens_generated: int = 0       # completion tokens of the main episode
    branch_tokens_generated: int = 0
    wall_time_s: float = 0.0        # from this episode's reset to its end
    branches: list[Branch] = field(default_factory=list)
    final_infos: dict[str, Any] = field(default_factory=dict)    # infos of every agent when the episode ended
    run_id: str = ""                # names the run() call; (run_id, group_id) is the group (see the module docstring)
    policies: dict[str, Any] = field(default_factory=dict)       # role -> the policy's Policy.settings()

    @property
    def group_key(self) -> tuple[str, int]:
        """The GRPO group this episode belongs to: the samples of one task in one ``run`` call."""
        return (self.run_id, self.group_id)

    @property
    def num_tokens(self) -> int:
        return self.tokens_generated + self.branch_tokens_generated

    @property
    def invalid_count(self) -> int:
        return sum(t.invalid for t in self.turns)

    def to_json(self) -> str:
        # the JSON of json_safe({...fields, "turns": [t.to_dict()...], "branches": [b.to_dict()...]}), the records made
        # by _plain: to_dict's asdict deep-copies every leaf, and json_safe copies everything again anyway
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("turns", "branches")}
        d["turns"] = [_plain(t) for t in self.turns]
        d["branches"] = [b._record(_plain) for b in self.branches]
        return json.dumps(json_safe(d), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | dict[str, Any]) -> "Episode":
        d = json.loads(text) if isinstance(text, str) else dict(text)
        if not isinstance(d, dict):
            raise ValueError("an episode is a JSON object")
        missing = {"env_id", "env_version", "env_kwargs", "seed", "task_id", "group_id"} - set(d)
        if missing:
            raise ValueError(f"episode is missing {sorted(missing)}")
        _check_fields(d, _EPISODE_FIELDS, "")
        d = _known(cls, d)
        d["turns"] = [Turn.from_dict(t, f"turns[{k}]") for k, t in enumerate(d.get("turns", []))]
        d["branches"] = [Branch.from_dict(b, f"branches[{k}]") for k, b in enumerate(d.get("branches", []))]
        return cls(**d)


# What a record's fields hold (what to_dict / to_json write): checked on reading, so that a file edited or written
# elsewhere stops with the field named, not with a TypeError from inside a credit method, or advantages silently
# computed from a reward that is a string. (action, extra's and final_infos' contents, and transcripts' are free.)
def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_number(v: Any) -> bool:
    return type(v) is float or type(v) is int


def _is_finite(v: Any) -> bool:
    return (type(v) is float and math.isfinite(v)) or type(v) is int


def _list_of(test):
    return lambda v: type(v) is list and all(test(x) for x in v)


def _values(test):
    return lambda v: type(v) is dict and all(test(x) for x in v.values())


def _or_none(test):
    return lambda v: v is None or test(v)


def _is(kind):
    return lambda v: type(v) is kind


_STR, _INT, _BOOL, _DICT, _LIST = ((_is(str), "a string"), (_is_int, "an int"), (_is(bool), "true or false"),
                                   (_is(dict), "an object"), (_is(list), "a list"))
_REWARDS = (_values(_is_finite), "an object of finite numbers")
_TURN_FIELDS = {
    "agent": _STR, "role": _STR, "team": _STR, "prompt_ids": (_list_of(_is_int), "a list of ints"),
    "completion_ids": (_list_of(_is_int), "a list of ints"), "logprobs": (_list_of(_is_number), "a list of numbers"),
    "text": _STR, "invalid": _BOOL, "invalid_reason": (_or_none(_is(str)), "a string or null"),
    "reward": (_is_finite, "a finite number"), "turn_index": _INT, "step_index": _INT, "obs_digest": _STR,
    "legal_actions": (_list_of(_is(str)), "a list of strings"), "replayed": _BOOL, "extra": _DICT,
    "state": (_or_none(_list_of(_is_number)), "a list of numbers or null"),
    "choice": (_or_none(_is(dict)), "an object or null"),
}
_BRANCH_FIELDS = {
    "kind": _STR, "agent": _STR, "turn_index": _INT, "sample_index": _INT, "team_rewards": _REWARDS,
    "rewards": _REWARDS, "tokens_generated": _INT, "turns": _LIST, "transcript": _DICT,
    "wall_time_s": (_is_number, "a number"),
}
_EPISODE_FIELDS = {
    "env_id": _STR, "env_version": _INT, "env_kwargs": _DICT, "seed": _INT,
    "task_id": (_or_none(_is(str)), "a string or null"), "group_id": _INT, "sample_index": _INT, "turns": _LIST,
    "rewards": _REWARDS, "team_rewards": _REWARDS, "transcript": _DICT, "tokens_generated": _INT,
    "branch_tokens_generated": _INT, "wall_time_s": (_is_number, "a number"), "branches": _LIST,
    "final_infos": _DICT, "run_id": _STR, "policies": (_values(_is(dict)), "an object of objects"),
}


def _check_fields(d: Any, kinds: dict[str, tuple[Any, str]], where: str) -> None:
    """Raise ``ValueError`` for the first field of ``d`` (a record) that ``kinds`` does not allow (absent fields take
    their defaults)."""
    if type(d) is not dict:
        raise ValueError(f"{where or 'the episode'}: expected an object, got {_shown(d)}")
    for name, (test, what) in kinds.items():
        if name in d and not test(d[name]):
            raise ValueError(f"{where + '.' if where else ''}{name}: expected {what}, got {_shown(d[name])}")


def _shown(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


_SCALARS = frozenset((str, int, float, bool, type(None)))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """``value`` with every dataclass instance in it (a :class:`Turn`, its :class:`~baselines.policies.base.Choice`
    and :class:`~baselines.policies.base.VectorInputs`) made a dict of its fields, in field order, as
    ``dataclasses.asdict`` makes it, but without asdict's deep copies of the leaves and the containers that hold no
    dataclass (what this returns goes to :func:`json_safe`, which copies; ``tests/baselines/test_episode.py`` checks
    that :meth:`Episode.to_json` writes what ``json_safe`` of the ``to_dict`` records writes)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple:
        for v in value:
            if type(v) not in _SCALARS:
                return [_plain(v) for v in value]
        return value
    if kind is dict:
        for v in value.values():
            if type(v) not in _SCALARS:
                return {_plain(k): _plain(v) for k, v in value.items()}
        return value
    names = _FIELD_NAMES.get(kind)
    if names is None and is_dataclass(value) and not isinstance(value, type):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(value))
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):        # subclasses (a namedtuple): json_safe makes them lists
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


def _known(cls, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def write_jsonl(path: str | Path, episodes: Iterable[Episode]) -> int:
    """Write a header line and one episode per line; return the number of episodes written. A regular file is
    replaced in one step (:func:`baselines.outputs.replacing`): a run that fails while writing (an episode that does
    not serialise, a killed process) leaves the file that was there, never a cut one."""
    n = 0
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() and path.is_file():
        path = path.resolve()                            # the file the link names is the one replaced
    direct = path.exists() and not path.is_file()       # a device or a pipe (/dev/stdout): written in place
    with (open(path, "w", encoding="utf-8") if direct else replacing(path)) as f:
        f.write(json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION}) + "\n")
        for episode in episodes:
            f.write(episode.to_json() + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> list[Episode]:
    """Read a file written by :func:`write_jsonl`. A corrupt line raises ``ValueError`` naming its line number."""
    episodes: list[Episode] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            problem = json_shape_problem(line)         # too deep for the code that walks it, or padding
            if problem is not None:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({problem.removeprefix('JSON ')})")
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
            except RecursionError:
                raise ValueError(f"{path}:{lineno}: not valid JSON (nested too deeply)") from None
            if lineno == 1:
                if not isinstance(d, dict) or d.get("schema") != SCHEMA:
                    raise ValueError(f"{path}:1: not an episodes file (no {SCHEMA!r} header)")
                if d.get("schema_version") not in READABLE_VERSIONS:
                    raise ValueError(f"{path}:1: schema_version {d.get('schema_version')!r} is not supported "
                                     f"(this code reads versions {list(READABLE_VERSIONS)})")
                continue
            try:
                episodes.append(Episode.from_json(d))
            except (TypeError, ValueError, KeyError, AttributeError) as e:
                raise ValueError(f"{path}:{lineno}: corrupt episode ({e})") from None
    return episodes
