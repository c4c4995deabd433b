"""The suite file: its schema (``marl_llm_suite``), its families and settings, and the anchors that normalise a
setting's score (see :mod:`leaderboard.suite` for the manual)."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import marl_llm_envs
from baselines.outputs import read_json_object
from baselines.rollout import RolloutEngine
from leaderboard import exact
from leaderboard.players import opponent_policy
from leaderboard.protocol import PROTOCOL_DIR, Header, ProtocolError, canonical_sha256, get_field, parse_env, \
    parse_header, parse_play, parse_seed_range, parse_train_budget, read_anchor, reject_unknown

SUITE_SCHEMA = "marl_llm_suite"
SUITE_DIR = PROTOCOL_DIR / "suite"

__all__ = ["EVALUATE", "SCORES", "SUITE_DIR", "SUITE_SCHEMA", "Family", "Setting", "Suite", "anchor_value",
           "cached_anchors", "latest_suite", "list_suites", "load_suite", "parse_suite"]


@dataclass(frozen=True)
class Setting:
    """One point of a family's sweep: an env with its kwargs, trained and scored on its own."""

    name: str
    family: str
    env_id: str
    env_version: int
    env_kwargs: dict[str, Any]
    knob: Any                         # the family's knob value at this setting (None where the family has no knob)
    play: str                         # "self" or "versus"
    opponent: str | None
    normalize: dict[str, Any]         # {"zero": name or number, "one": name or number}
    partners: str = ""
    train: dict[str, Any] = field(default_factory=dict)      # overrides of the suite's budget
    eval_count: int | None = None                             # versus: evaluation seeds, if not the suite's
    evaluate: str = "sampled"         # versus: "sampled", "exact" or "exploitability" (see leaderboard.suite)
    score: str = "team_reward"        # self: the tail of "team_reward" or of the noise-free "decisive_reward"


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    knob: str | None
    settings: tuple[Setting, ...]


@dataclass(frozen=True)
class Suite(Header):
    train: dict[str, Any]
    score: dict[str, Any]
    families: tuple[Family, ...]
    sha256: str = ""

    @property
    def settings(self) -> list[Setting]:
        return [s for f in self.families for s in f.settings]

    def budget(self, setting: Setting) -> dict[str, Any]:
        return {**self.train, **setting.train}


def list_suites(folder: str | Path = SUITE_DIR) -> list[str]:
    return sorted(p.stem for p in Path(folder).glob("*.json"))


def latest_suite(suite_id: str, folder: str | Path = SUITE_DIR) -> str | None:
    """The key of the newest version of ``suite_id`` shipped in ``folder`` (``"credit-micro"`` ->
    ``"credit-micro@3"``), or ``None`` when there is none."""
    versions = [int(k.rsplit("@", 1)[1]) for k in list_suites(folder) if k.rsplit("@", 1)[0] == suite_id]
    return f"{suite_id}@{max(versions)}" if versions else None


def load_suite(name_or_path: str | Path) -> Suite:
    """A suite by key (``"credit-micro@2"``, a file in ``leaderboard/protocols/suite/``) or path; checked against the
    schema and this package (errors name the field)."""
    path = Path(name_or_path)
    if path.suffix != ".json" or not path.exists():
        path = SUITE_DIR / f"{name_or_path}.json"
        if not path.exists():
            raise ProtocolError(f"no suite {str(name_or_path)!r}; the suites: {list_suites()} (in {SUITE_DIR})")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ProtocolError(f"{path}: not valid JSON ({e})") from None
    return parse_suite(raw, where=str(path))


_TOP = {"schema", "id", "version", "track", "tier", "description", "action_mode", "train", "score", "families"}
_SCORE = {"last_fraction", "eval_seeds", "anchor_episodes", "checkpoints"}
_FAMILY = {"name", "title", "knob", "settings"}
_SETTING = {"name", "env_id", "env_version", "env_kwargs", "knob", "play", "opponent", "normalize", "partners",
            "train", "eval_count", "evaluate", "score"}
EVALUATE = ("sampled", "exact", "exploitability")
SCORES = ("team_reward", "decisive_reward")
_OVERRIDE = {"steps", "tasks_per_step", "group_size", "seeds"}
SETTING_SEED_LIMIT = 2 ** 16      # the trainer's --seed bound (each seed owns its own 2**24 training tasks)


def parse_suite(raw: Any, where: str = "suite") -> Suite:
    """Check a suite's parsed JSON against the schema and this package (the header as a protocol's,
    :func:`leaderboard.protocol.parse_header`); errors name the field."""
    head = parse_header(raw, where, SUITE_SCHEMA, "suite", _TOP, tracks=("credit",))
    train = parse_train_budget(get_field(raw, "train", dict, where), f"{where}.train")
    score = _parse_score(get_field(raw, "score", dict, where), f"{where}.score")
    families = []
    seen: set[str] = set()
    for i, f in enumerate(get_field(raw, "families", list, where)):
        families.append(_parse_family(f, f"{where}.families[{i}]", seen))
    if not families:
        raise ProtocolError(f"{where}.families: a suite has at least one family")
    counts = {len(s.train.get("seeds", train["seeds"])) for f in families for s in f.settings}
    if len(counts) > 1:
        raise ProtocolError(f"{where}.families: every setting trains on as many seeds (its train.seeds or the "
                            f"suite's train.seeds): methods are paired seed by seed, got {sorted(counts)} seeds")
    for f in families:
        for s in f.settings:
            steps = s.train.get("steps", train["steps"])
            if steps % score["checkpoints"]:
                raise ProtocolError(f"{where}.score.checkpoints: {score['checkpoints']} evenly spaced checkpoints "
                                    f"must divide setting {s.name}'s {steps} steps")
    return Suite(**vars(head), train=train, score=score, families=tuple(families), sha256=canonical_sha256(raw))


def _parse_score(sc: dict, where: str) -> dict[str, Any]:
    reject_unknown(sc, _SCORE, where)
    frac = get_field(sc, "last_fraction", (int, float), where)
    if not 0 < frac <= 1:
        raise ProtocolError(f"{where}.last_fraction: in (0, 1], got {frac!r}")
    start, count = parse_seed_range(get_field(sc, "eval_seeds", dict, where), f"{where}.eval_seeds")
    anchor_episodes = get_field(sc, "anchor_episodes", int, where)
    if anchor_episodes < 1:
        raise ProtocolError(f"{where}.anchor_episodes: >= 1, got {anchor_episodes}")
    checkpoints = get_field(sc, "checkpoints", int, where, optional=True) or 1
    if checkpoints < 1:
        raise ProtocolError(f"{where}.checkpoints: >= 1 (how many evenly spaced checkpoints a run keeps), got "
                            f"{checkpoints}")
    return {"last_fraction": float(frac), "eval_start": start, "eval_count": count, "anchor_episodes": anchor_episodes,
            "checkpoints": checkpoints}


def _parse_family(f: Any, where: str, seen: set[str]) -> Family:
    """One family; ``seen``: the setting names of the families before it (a name is used once in a suite)."""
    if not isinstance(f, dict):
        raise ProtocolError(f"{where}: a family is a JSON object")
    reject_unknown(f, _FAMILY, where)
    name = get_field(f, "name", str, where)
    settings = []
    for j, s in enumerate(get_field(f, "settings", list, where)):
        setting = _parse_setting(s, f"{where}.settings[{j}]", name)
        if setting.name in seen:
            raise ProtocolError(f"{where}.settings[{j}].name: {setting.name!r} is used twice")
        seen.add(setting.name)
        settings.append(setting)
    if not settings:
        raise ProtocolError(f"{where}.settings: a family has at least one setting")
    return Family(name, get_field(f, "title", str, where), get_field(f, "knob", str, where, optional=True),
                  tuple(settings))


def _parse_setting(s: Any, where: str, family: str) -> Setting:
    if not isinstance(s, dict):
        raise ProtocolError(f"{where}: a setting is a JSON object")
    reject_unknown(s, _SETTING, where)
    env_id, env_spec, version, kwargs = parse_env(s, where, "suite")
    play, opponent = parse_play(s, where, env_spec, "setting")
    normalize = get_field(s, "normalize", dict, where)
    reject_unknown(normalize, {"zero", "one"}, f"{where}.normalize")
    for k in ("zero", "one"):
        get_field(normalize, k, (str, int, float), f"{where}.normalize")
    override = get_field(s, "train", dict, where, optional=True) or {}
    reject_unknown(override, _OVERRIDE, f"{where}.train")
    for k, v in override.items():
        if k == "seeds":
            if not isinstance(v, list) or not v or len(set(v)) != len(v) or not all(
                    isinstance(x, int) and not isinstance(x, bool) and 0 <= x < SETTING_SEED_LIMIT for x in v):
                raise ProtocolError(f"{where}.train.seeds: distinct non-negative integer run seeds below 2**16, "
                                    f"got {v!r}")
        elif isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ProtocolError(f"{where}.train.{k}: a positive int, got {v!r}")
    eval_count = get_field(s, "eval_count", int, where, optional=True)
    if eval_count is not None and (eval_count < 1 or play != "versus"):
        raise ProtocolError(f"{where}.eval_count: a positive int, for 'versus' settings; got {eval_count!r}")
    evaluate = get_field(s, "evaluate", str, where, optional=True) or "sampled"
    score = get_field(s, "score", str, where, optional=True) or "team_reward"
    if score not in SCORES:
        raise ProtocolError(f"{where}.score: one of {list(SCORES)}, got {score!r}")
    if score != "team_reward" and play != "self":
        raise ProtocolError(f"{where}.score: {score!r} scores a 'self' setting (its team's reward), not a {play!r} one")
    if evaluate not in EVALUATE:
        raise ProtocolError(f"{where}.evaluate: one of {list(EVALUATE)}, got {evaluate!r}")
    if evaluate != "sampled":
        if play != "versus" or eval_count is not None:
            raise ProtocolError(f"{where}.evaluate: {evaluate!r} scores a 'versus' setting without evaluation seeds "
                                "(drop eval_count)")
        try:
            reference = exact.reference_name(env_id, kwargs)
        except ValueError as e:
            raise ProtocolError(f"{where}.evaluate: {e}") from None
        if opponent != reference:
            raise ProtocolError(f"{where}.opponent: exact evaluation of {env_id} is against {reference!r}, "
                                f"not {opponent!r}")
        for k in ("zero", "one"):
            if isinstance(normalize[k], str) and normalize[k] not in ("random", reference):
                raise ProtocolError(f"{where}.normalize.{k}: exact evaluation knows 'random' and {reference!r}, "
                                    f"not {normalize[k]!r}")
    return Setting(get_field(s, "name", str, where), family, env_id, version, dict(kwargs), s.get("knob"), play,
                   opponent, dict(normalize), get_field(s, "partners", str, where, optional=True) or "",
                   dict(override), eval_count, evaluate, score)


# ---------------------------------------------------------------------- anchors
@functools.lru_cache(maxsize=None)
def _measured(env_id: str, kwargs_json: str, action_mode: str, policy: str, start: int, episodes: int) -> float:
    """Mean team reward of ``policy`` (random or a reference policy of the env) in every seat, on ``episodes`` seeds
    from ``start``."""
    kwargs = {**json.loads(kwargs_json), "action_mode": action_mode}
    env = marl_llm_envs.make(env_id, **kwargs)
    bot = opponent_policy(env_id, policy, seed=0)
    engine = RolloutEngine({role: bot for role in set(env.roles.values())}, show_progress=False)
    eps = engine.run(env_id, num_tasks=episodes, seeds=list(range(start, start + episodes)), env_kwargs=kwargs)
    return float(sum(_team_reward(e.team_rewards) for e in eps) / len(eps))


def _team_reward(team_rewards: dict[str, float]) -> float:
    return float(sum(team_rewards.values()) / len(team_rewards))


def cached_anchors(cache: str | Path, suite: Suite) -> dict[str, dict[str, float]]:
    """The anchors an earlier :func:`leaderboard.suite.score.score` call on this suite's text measured and kept in
    ``cache``: setting -> ``{"zero", "one"}``. It is only a cache: a file that is missing, damaged, of another suite's
    text, or an entry that is not two finite numbers, is measured again."""
    try:
        saved = read_json_object(cache, "measured again")
    except ValueError:
        return {}
    if saved.get("suite_sha256") != suite.sha256 or not isinstance(saved.get("anchors"), dict):
        return {}
    return {name: {"zero": float(a["zero"]), "one": float(a["one"])} for name, a in saved["anchors"].items()
            if isinstance(a, dict) and all(type(a.get(k)) in (int, float) and math.isfinite(a[k])
                                           for k in ("zero", "one"))}


def anchor_value(suite: Suite, setting: Setting, which: str) -> float:
    """The value the setting's ``normalize[which]`` names (see :mod:`leaderboard.suite`, Normalization)."""
    name = setting.normalize[which]
    if not isinstance(name, str):
        return float(name)
    if setting.evaluate != "sampled":
        table = exact.random_strategy(setting.env_id) if name == "random" else exact.reference_strategy(setting.env_id)
        return exact.raw_score(setting.env_id, table, setting.evaluate)
    if setting.play == "versus":
        return read_anchor(marl_llm_envs.spec(setting.env_id), "versus", setting.opponent, name,
                           f"{suite.key}:{setting.name}.normalize.{which}")
    return _measured(setting.env_id, json.dumps(setting.env_kwargs, sort_keys=True), suite.action_mode, name,
                     suite.score["eval_start"], suite.score["anchor_episodes"])
