"""``python -m leaderboard validate DIR``: check a submission folder and compute its statistics from the episodes.

The checks, in order (the first failure raises :class:`SubmissionError` with a message naming the file, line or
field; nothing is computed from a submission that fails):

1. Files: the folder holds exactly ``submission.json`` and ``episodes.jsonl`` (JSON only: no pickle, nothing that
   runs code), each within its size limit (:class:`Limits`).
2. ``submission.json``: strict JSON (NaN and Infinity rejected), the schema (every field, its type; unknown fields
   rejected), the protocol it names (id, version and the SHA-256 of the protocol file), the config hash, credit-track
   runs against the protocol's training budget and seeds, the envs it lists (current versions, the kwargs the
   protocol gives, the hash of the list), the episodes file's size, count and SHA-256.
3. ``episodes.jsonl``: strict JSON line by line, the episode schema of :mod:`baselines.episode`, current env
   versions and the protocol's kwargs, transcripts that describe the episode, exactly one turn per move of the
   transcript with the move's action, turn rewards that add up to the episode's rewards, finite numbers, the opponent policy the protocol
   names, and completeness: exactly one episode for every (task, seat, run, seed) of the protocol.
4. Replay audit: a random sample (or every episode with ``full=True``) is replayed with its transcript
   (:func:`marl_llm_envs.replay`'s inputs, stepped here so every step's rewards are summed): the replayed rewards and
   team rewards must equal the recorded ones and the episode must be over.
5. Statistics, from the episodes only (the manifest has none): per task and run, the per-seed scores (team reward
   for self play; the payoff averaged over both seats for versus play), normalized with the protocol's anchors, and
   for versus tasks the win / draw / loss counts against the opponent (for Bradley-Terry), one game per seed: the
   sign of the payoff summed over both seats (duplicate play, so a lucky deal does not count as a win).
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.evaluate import (EPISODES_FILE, SUBMISSION_FILE, SUBMISSION_SCHEMA, SUBMISSION_VERSION, check_run,
                                  config_sha256, file_sha256, run_label)
from leaderboard.protocol import PROTOCOL_DIR, Protocol, ProtocolError, canonical_sha256, load_protocol

__all__ = ["Limits", "SubmissionError", "Validated", "validate"]

METHOD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+=-]{0,79}")
TOL = 1e-9


class SubmissionError(ValueError):
    """A submission that fails validation; the message says what and where."""


@dataclass(frozen=True)
class Limits:
    submission_bytes: int = 1 << 20          # submission.json: 1 MiB
    episodes_bytes: int = 256 << 20          # episodes.jsonl: 256 MiB
    line_bytes: int = 8 << 20                # one episode line: 8 MiB


@dataclass
class Validated:
    """A submission that passed: its manifest, the protocol and the statistics computed from its episodes."""

    manifest: dict[str, Any]
    protocol: Protocol
    scores: dict[str, list[list[float]]]            # task -> per run, per seed normalized score
    raw_scores: dict[str, list[list[float]]]        # the same, before normalization
    games: dict[str, dict[str, dict[str, int]]]     # versus tasks: env id -> opponent -> win/draw/loss counts
    episodes: int
    replayed: int
    tokens: dict[str, int] = field(default_factory=dict)

    def task_means(self) -> dict[str, float]:
        return {t: float(np.mean([np.mean(r) for r in runs])) for t, runs in self.scores.items()}


# ---------------------------------------------------------------------- strict JSON
def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number (NaN and Infinity are rejected)")


def _loads(text: str, where: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise SubmissionError(f"{where}: malformed JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except ValueError as e:
        raise SubmissionError(f"{where}: {e}") from None


# ---------------------------------------------------------------------- manifest schema
_STR, _INT, _NUM, _DICT, _LIST = str, int, (int, float), dict, list
_MANIFEST = {
    "schema": _STR, "schema_version": _INT, "method": _STR, "note": _STR, "track": _STR, "protocol": _DICT,
    "players": _DICT, "envs": _LIST, "envs_sha256": _STR, "packages": _DICT, "git_sha": (str, type(None)),
    "config_sha256": _STR, "seeds": _DICT, "tokens": _DICT, "wall_time_s": _NUM, "created": _STR, "episodes": _DICT,
}
_SUB = {
    "protocol": {"id": _STR, "version": _INT, "sha256": _STR},
    "seeds": {"eval_start": _INT, "eval_count": _INT, "train": _LIST},
    "tokens": {"eval_main": _INT, "eval_branches": _INT, "train_main": _INT, "train_branches": _INT},
    "episodes": {"file": _STR, "count": _INT, "bytes": _INT, "sha256": _STR},
}


def _check_fields(d: dict, schema: dict, where: str) -> None:
    missing = [k for k in schema if k not in d]
    if missing:
        raise SubmissionError(f"{where}: missing field(s) {missing}")
    extra = sorted(set(d) - set(schema))
    if extra:
        raise SubmissionError(f"{where}: unknown field(s) {extra}")
    for key, kind in schema.items():
        value = d[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise SubmissionError(f"{where}.{key}: expected {kind if isinstance(kind, type) else kind}, got "
                                  f"{type(value).__name__}")


def _check_manifest(m: Any) -> None:
    where = SUBMISSION_FILE
    if not isinstance(m, dict):
        raise SubmissionError(f"{where}: must be a JSON object")
    _check_fields(m, _MANIFEST, where)
    for key, schema in _SUB.items():
        _check_fields(m[key], schema, f"{where}.{key}")
    if m["schema"] != SUBMISSION_SCHEMA or m["schema_version"] != SUBMISSION_VERSION:
        raise SubmissionError(f"{where}.schema: expected {SUBMISSION_SCHEMA!r} version {SUBMISSION_VERSION}, got "
                              f"{m['schema']!r} version {m['schema_version']!r}")
    if not METHOD_NAME.fullmatch(m["method"]):
        raise SubmissionError(f"{where}.method: {m['method']!r} must be 1-80 characters of letters, digits and ._:+=- "
                              f"starting with a letter or digit")
    if len(m["note"]) > 2000:
        raise SubmissionError(f"{where}.note: at most 2000 characters")
    if not math.isfinite(m["wall_time_s"]) or m["wall_time_s"] < 0:
        raise SubmissionError(f"{where}.wall_time_s: must be a finite number >= 0")
    for key, value in m["tokens"].items():
        if value < 0:
            raise SubmissionError(f"{where}.tokens.{key}: must be >= 0")
    for env_id, runs in m["players"].items():
        if not isinstance(runs, list) or not runs:
            raise SubmissionError(f"{where}.players.{env_id}: a list of one provenance object per run")
        for i, p in enumerate(runs):
            w = f"{where}.players.{env_id}[{i}]"
            if not isinstance(p, dict):
                raise SubmissionError(f"{w}: must be an object")
            for key, kind in (("spec", str), ("model_id", str), ("weights_sha256", (str, type(None))),
                              ("decoding", dict)):
                if key not in p:
                    raise SubmissionError(f"{w}: missing field {key!r}")
                if not isinstance(p[key], kind):
                    raise SubmissionError(f"{w}.{key}: wrong type {type(p[key]).__name__}")
    for i, e in enumerate(m["envs"]):
        if not isinstance(e, dict):
            raise SubmissionError(f"{where}.envs[{i}]: must be an object")
        _check_fields(e, {"env_id": _STR, "env_version": _INT, "env_kwargs": _DICT}, f"{where}.envs[{i}]")


# ---------------------------------------------------------------------- validate
def validate(folder: str | Path, protocol: str | Path | Protocol | None = None, full: bool = False,
             sample: int = 200, audit_seed: int | None = None, limits: Limits = Limits()) -> Validated:
    """Check the submission in ``folder`` (see the module docstring) and return its statistics.

    ``protocol``: the protocol (or its name or path); default: the one named in the manifest, from
    ``leaderboard/protocols/``. ``full``: replay every episode, else ``sample`` episodes drawn at random
    (``audit_seed`` fixes the draw)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SubmissionError(f"{folder}: not a folder (a submission is a folder with {SUBMISSION_FILE} and "
                              f"{EPISODES_FILE})")
    names = sorted(p.name for p in folder.iterdir())
    extra = [n for n in names if n not in (SUBMISSION_FILE, EPISODES_FILE)]
    if extra:
        raise SubmissionError(f"{folder}: unexpected file(s) {extra}; a submission holds only {SUBMISSION_FILE} and "
                              f"{EPISODES_FILE} (JSON only: pickles, weights and code are never read)")
    for name in (SUBMISSION_FILE, EPISODES_FILE):
        path = folder / name
        if not path.is_file() or path.is_symlink():
            raise SubmissionError(f"{folder}: {name} is missing (or not a plain file)")
    size = (folder / SUBMISSION_FILE).stat().st_size
    if size > limits.submission_bytes:
        raise SubmissionError(f"{SUBMISSION_FILE}: {size} bytes, over the limit of {limits.submission_bytes} bytes")
    size = (folder / EPISODES_FILE).stat().st_size
    if size > limits.episodes_bytes:
        raise SubmissionError(f"{EPISODES_FILE}: {size} bytes, over the limit of {limits.episodes_bytes} bytes")

    try:
        text = (folder / SUBMISSION_FILE).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SubmissionError(f"{SUBMISSION_FILE}: not UTF-8 text") from None
    manifest = _loads(text, SUBMISSION_FILE)
    _check_manifest(manifest)
    proto = _protocol_of(manifest, protocol)
    _check_envs(manifest, proto)
    ep = manifest["episodes"]
    path = folder / EPISODES_FILE
    if ep["file"] != EPISODES_FILE:
        raise SubmissionError(f"{SUBMISSION_FILE}.episodes.file: must be {EPISODES_FILE!r}")
    if ep["bytes"] != path.stat().st_size:
        raise SubmissionError(f"{SUBMISSION_FILE}.episodes.bytes: {ep['bytes']}, but {EPISODES_FILE} has "
                              f"{path.stat().st_size} bytes (the file was changed after evaluate)")
    if ep["sha256"] != file_sha256(path):
        raise SubmissionError(f"{SUBMISSION_FILE}.episodes.sha256 does not match {EPISODES_FILE} (the file was "
                              f"changed after evaluate)")
    episodes = _read_episodes(path, limits)
    if len(episodes) != ep["count"]:
        raise SubmissionError(f"{SUBMISSION_FILE}.episodes.count: {ep['count']}, but {EPISODES_FILE} has "
                              f"{len(episodes)} episodes")
    cells = _check_episodes(episodes, manifest, proto)
    replayed = _audit(episodes, full, sample, audit_seed)
    scores, raw, games = _statistics(cells, proto, len(manifest["players"][proto.tasks[0].env_id]))
    return Validated(manifest, proto, scores, raw, games, len(episodes), replayed, dict(manifest["tokens"]))


def _protocol_of(manifest: dict, protocol) -> Protocol:
    named = manifest["protocol"]
    try:
        if isinstance(protocol, Protocol):
            proto = protocol
        elif protocol is not None:
            proto = load_protocol(protocol)
        else:
            proto = load_protocol(PROTOCOL_DIR / f"{named['id']}.json")
    except ProtocolError as e:
        raise SubmissionError(f"{SUBMISSION_FILE}.protocol: {e}") from None
    if (proto.id, proto.version) != (named["id"], named["version"]):
        raise SubmissionError(f"{SUBMISSION_FILE}.protocol: the submission is for {named['id']}@{named['version']}, "
                              f"the protocol given is {proto.key}")
    if proto.sha256 != named["sha256"]:
        raise SubmissionError(f"{SUBMISSION_FILE}.protocol.sha256: the submission was made with another text of "
                              f"{proto.key} (sha256 {named['sha256'][:12]}..., the file has {proto.sha256[:12]}...)")
    if manifest["track"] != proto.track:
        raise SubmissionError(f"{SUBMISSION_FILE}.track: {manifest['track']!r}, the protocol's is {proto.track!r}")
    seeds = manifest["seeds"]
    if (seeds["eval_start"], seeds["eval_count"]) != (proto.seed_start, proto.seed_count):
        raise SubmissionError(f"{SUBMISSION_FILE}.seeds: evaluation seeds {seeds['eval_start']}+{seeds['eval_count']}"
                              f" are not the protocol's {proto.seed_start}+{proto.seed_count}")
    runs = 1 if proto.track == "policy" else len(proto.train["seeds"])
    env_ids = sorted({t.env_id for t in proto.tasks})
    if sorted(manifest["players"]) != env_ids:
        raise SubmissionError(f"{SUBMISSION_FILE}.players: names envs {sorted(manifest['players'])}, the protocol "
                              f"has {env_ids}")
    for env_id in env_ids:
        if len(manifest["players"][env_id]) != runs:
            raise SubmissionError(f"{SUBMISSION_FILE}.players.{env_id}: {len(manifest['players'][env_id])} runs, "
                                  f"the protocol has {runs}")
        if proto.track == "credit":
            for r, provenance in enumerate(manifest["players"][env_id]):
                try:
                    check_run(proto, provenance, env_id, r, f"{SUBMISSION_FILE}.players.{env_id}[{r}]")
                except ValueError as e:
                    raise SubmissionError(str(e)) from None
    if config_sha256(named["sha256"], manifest["players"]) != manifest["config_sha256"]:
        raise SubmissionError(f"{SUBMISSION_FILE}.config_sha256 does not match the protocol and players listed")
    return proto


def _current_env(proto: Protocol, env_id: str) -> tuple[int, dict]:
    record = proto.env_record(next(t for t in proto.tasks if t.env_id == env_id))
    return record["env_version"], record["env_kwargs"]


def _check_envs(manifest: dict, proto: Protocol) -> None:
    envs = manifest["envs"]
    if canonical_sha256(envs) != manifest["envs_sha256"]:
        raise SubmissionError(f"{SUBMISSION_FILE}.envs_sha256 does not match the envs listed")
    listed = sorted(e["env_id"] for e in envs)
    wanted = sorted({t.env_id for t in proto.tasks})
    if listed != wanted:
        raise SubmissionError(f"{SUBMISSION_FILE}.envs: lists {listed}, the protocol has {wanted}")
    for i, e in enumerate(envs):
        version, kwargs = _current_env(proto, e["env_id"])
        if e["env_version"] != version:
            raise SubmissionError(f"{SUBMISSION_FILE}.envs[{i}].env_version: {e['env_id']} version "
                                  f"{e['env_version']}, but the current version is {version}")
        if e["env_kwargs"] != kwargs:
            raise SubmissionError(f"{SUBMISSION_FILE}.envs[{i}].env_kwargs: {e['env_kwargs']} are not the "
                                  f"protocol's kwargs for {e['env_id']} ({kwargs})")


def _read_episodes(path: Path, limits: Limits) -> list:
    """``[(line number, Episode)]`` read strictly (see the module docstring)."""
    from baselines.episode import READABLE_VERSIONS, SCHEMA, Episode

    episodes = []
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            where = f"{EPISODES_FILE}:{lineno}"
            if len(line) > limits.line_bytes:
                raise SubmissionError(f"{where}: a line of {len(line)} bytes, over the limit of {limits.line_bytes}")
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise SubmissionError(f"{where}: not UTF-8 text") from None
            if not text.strip():
                continue
            d = _loads(text, where)
            if lineno == 1:
                if not isinstance(d, dict) or d.get("schema") != SCHEMA or \
                        d.get("schema_version") not in READABLE_VERSIONS:
                    raise SubmissionError(f"{where}: not an episodes file (header {SCHEMA!r} with schema_version in "
                                          f"{list(READABLE_VERSIONS)})")
                continue
            if not isinstance(d, dict):
                raise SubmissionError(f"{where}: an episode is a JSON object")
            try:
                episodes.append((lineno, Episode.from_json(d)))
            except (TypeError, ValueError, KeyError, AttributeError) as e:
                raise SubmissionError(f"{where}: not an episode ({e})") from None
    return episodes


def _finite(values, where: str) -> None:
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SubmissionError(f"{where}: {k} = {v!r} is not a finite number")


_EPISODE_TYPES = {"env_id": str, "env_version": int, "env_kwargs": dict, "seed": int, "run_id": str, "rewards": dict,
                  "team_rewards": dict, "transcript": dict, "policies": dict, "turns": list}
_TURN_TYPES = {"agent": str, "step_index": int, "turn_index": int}


def _check_types(e, where: str) -> None:
    for name, kind in _EPISODE_TYPES.items():
        value = getattr(e, name)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise SubmissionError(f"{where}.{name}: expected {kind.__name__}, got {type(value).__name__}")
    for k, t in enumerate(e.turns):
        for name, kind in _TURN_TYPES.items():
            value = getattr(t, name)
            if isinstance(value, bool) or not isinstance(value, kind):
                raise SubmissionError(f"{where}.turns[{k}].{name}: expected {kind.__name__}, got "
                                      f"{type(value).__name__}")
    for role, settings in e.policies.items():
        if not isinstance(settings, dict):
            raise SubmissionError(f"{where}.policies.{role}: expected an object")


def _check_episodes(episodes: list, manifest: dict, proto: Protocol) -> dict:
    """Every per-episode check and completeness; returns (task, seat, run) -> {seed: episode}."""
    versions = {e["env_id"]: (e["env_version"], e["env_kwargs"]) for e in manifest["envs"]}
    tasks = {t.name: t for t in proto.tasks}
    runs = 1 if proto.track == "policy" else len(proto.train["seeds"])
    seeds = set(proto.seeds)
    cells: dict[tuple[str, str, int], dict[int, Any]] = {}
    agents_of: dict[str, tuple[str, ...]] = {}
    for line, e in episodes:
        where = f"{EPISODES_FILE}:{line}"
        _check_types(e, where)
        label = e.run_id.split("|")
        if len(label) != 3 or label[0] not in tasks or not re.fullmatch(r"run\d+", label[2]):
            raise SubmissionError(f"{where}.run_id: {e.run_id!r} is not '<task>|<seat>|run<r>' with a task of "
                                  f"{proto.key}")
        task, seat, run = tasks[label[0]], label[1], int(label[2][3:])
        if e.env_id != task.env_id:
            raise SubmissionError(f"{where}.env_id: {e.env_id!r}, task {task.name} plays {task.env_id}")
        version, kwargs = versions[task.env_id]
        if e.env_version != version or e.transcript.get("version") != version:
            raise SubmissionError(f"{where}.env_version: {task.env_id} version {e.env_version} (transcript "
                                  f"{e.transcript.get('version')!r}), but the current version is {version}")
        if e.env_kwargs != proto.env_kwargs(task):
            raise SubmissionError(f"{where}.env_kwargs: {e.env_kwargs} are not the protocol's "
                                  f"{proto.env_kwargs(task)}")
        tr = e.transcript
        if tr.get("env_id") != e.env_id or tr.get("kwargs") != kwargs or tr.get("seed") != e.seed or \
                not isinstance(tr.get("actions"), list) or tr.get("ablations", []) != []:
            raise SubmissionError(f"{where}.transcript: does not describe this episode (env id, full kwargs, seed, "
                                  f"a list of actions, no ablations)")
        if task.env_id not in agents_of:
            from marl_llm_envs import spec

            agents_of[task.env_id] = spec(task.env_id).agents
        agents = agents_of[task.env_id]
        if seat not in task.seats(agents):
            raise SubmissionError(f"{where}.run_id: seat {seat!r} is not one of {task.seats(agents)}")
        if not 0 <= run < runs:
            raise SubmissionError(f"{where}.run_id: run {run}, the protocol has {runs} run(s)")
        if e.seed not in seeds:
            raise SubmissionError(f"{where}.seed: {e.seed} is not an evaluation seed of {proto.key}")
        _finite(e.rewards, f"{where}.rewards")
        _finite(e.team_rewards, f"{where}.team_rewards")
        totals: dict[str, float] = {}
        for t in e.turns:
            if isinstance(t.reward, bool) or not isinstance(t.reward, (int, float)) or not math.isfinite(t.reward):
                raise SubmissionError(f"{where}.turns[{t.turn_index}].reward: {t.reward!r} is not a finite number")
            totals[t.agent] = totals.get(t.agent, 0.0) + t.reward
            if not (isinstance(t.step_index, int) and 0 <= t.step_index < len(tr["actions"])) or \
                    tr["actions"][t.step_index] != t.action:
                raise SubmissionError(f"{where}.turns[{t.turn_index}]: its action {t.action!r} is not the "
                                      f"transcript's action at step {t.step_index}")
        steps = sorted(t.step_index for t in e.turns)
        moves = [i for i, a in enumerate(tr["actions"]) if a is not None]
        if steps != moves:
            raise SubmissionError(f"{where}.turns: the turns are at steps {steps[:8]}..., the transcript has moves at "
                                  f"steps {moves[:8]}... (every move of the transcript has exactly one turn)")
        for agent, total in totals.items():
            if abs(total - e.rewards.get(agent, math.nan)) > TOL:
                raise SubmissionError(f"{where}.rewards.{agent}: {e.rewards.get(agent)!r}, but its turns' rewards "
                                      f"add up to {total!r}")
        if seat != "all":
            opp = next(a for a in agents if a != seat)
            name = (e.policies.get(opp) or {}).get("name")
            want = "random" if task.opponent == "random" else f"reference:{task.opponent}"
            if name != want:
                raise SubmissionError(f"{where}.policies.{opp}: played by {name!r}, the protocol's opponent is "
                                      f"{want!r}")
        cell = cells.setdefault((task.name, seat, run), {})
        if e.seed in cell:
            raise SubmissionError(f"{where}: a second episode for {run_label(task.name, seat, run)} seed {e.seed}")
        cell[e.seed] = (line, e)
    for task in proto.tasks:
        for seat in task.seats(agents_of.get(task.env_id) or _agents(task.env_id)):
            for run in range(runs):
                got = cells.get((task.name, seat, run), {})
                if len(got) != len(seeds):
                    lacking = sorted(seeds - set(got))
                    raise SubmissionError(f"{EPISODES_FILE}: incomplete: {run_label(task.name, seat, run)} lacks "
                                          f"{len(lacking)} of the protocol's {len(seeds)} seeds (e.g. {lacking[:3]})")
    return cells


def _agents(env_id: str) -> tuple[str, ...]:
    from marl_llm_envs import spec

    return spec(env_id).agents


def _audit(episodes: list, full: bool, sample: int, audit_seed: int | None) -> int:
    """Replay ``sample`` random episodes (all with ``full``); the rewards must come out as recorded."""
    from marl_llm_envs import make
    from marl_llm_envs.core import _unlog

    if full or sample >= len(episodes):
        chosen = list(range(len(episodes)))
    else:
        rng = random.Random(audit_seed) if audit_seed is not None else random.SystemRandom()
        chosen = sorted(rng.sample(range(len(episodes)), sample))
    for i in chosen:
        line, e = episodes[i]
        where = f"{EPISODES_FILE}:{line}"
        tr = e.transcript
        try:
            env = make(tr["env_id"], **tr["kwargs"])
            env.reset(seed=tr["seed"])
            totals = {a: 0.0 for a in env.possible_agents}
            for action in tr["actions"]:
                if env.done:
                    raise ValueError("the transcript goes on after the episode ended")
                env.step(_unlog(action))
                for a, r in env.rewards.items():
                    totals[a] = totals.get(a, 0.0) + float(r)
        except Exception as exc:  # noqa: BLE001 - any failure of a submitted transcript is a rejection
            raise SubmissionError(f"{where}: the transcript does not replay ({type(exc).__name__}: {exc})") from None
        if not env.done:
            raise SubmissionError(f"{where}: the transcript does not replay to the end of the episode")
        for a, r in totals.items():
            if abs(r - e.rewards.get(a, 0.0)) > TOL:
                raise SubmissionError(f"{where}: replay gives {a} the reward {r!r}, the episode records "
                                      f"{e.rewards.get(a)!r}")
        replayed = {k: float(v) for k, v in env.team_rewards().items()}
        if set(replayed) != set(e.team_rewards) or any(abs(v - e.team_rewards[k]) > TOL for k, v in replayed.items()):
            raise SubmissionError(f"{where}: replay gives the team rewards {replayed}, the episode records "
                                  f"{e.team_rewards}")
    return len(chosen)


def _statistics(cells: dict, proto: Protocol, runs: int):
    scores: dict[str, list[list[float]]] = {}
    raw: dict[str, list[list[float]]] = {}
    games: dict[str, dict[str, dict[str, int]]] = {}
    for task in proto.tasks:
        agents = _agents(task.env_id)
        seats = task.seats(agents)
        scores[task.name], raw[task.name] = [], []
        for run in range(runs):
            values = []
            for seed in proto.seeds:
                per_seat = []
                for seat in seats:
                    line, e = cells[(task.name, seat, run)][seed]
                    if seat == "all":
                        if len(e.team_rewards) != 1:
                            raise SubmissionError(f"{EPISODES_FILE}:{line}: self play scores one "
                                                  f"team reward; the episode has {sorted(e.team_rewards)}")
                        per_seat.append(next(iter(e.team_rewards.values())))
                    else:
                        per_seat.append(float(e.rewards[seat]))
                value = float(np.mean(per_seat))
                if task.play == "versus":    # one game = one seed, both seats (duplicate play: the deal's luck cancels)
                    counts = games.setdefault(task.env_id, {}).setdefault(task.opponent,
                                                                          {"win": 0, "draw": 0, "loss": 0})
                    counts["win" if value > TOL else "loss" if value < -TOL else "draw"] += 1
                values.append(value)
            raw[task.name].append(values)
            scores[task.name].append([task.normalized(v) for v in values])
    return scores, raw, games
