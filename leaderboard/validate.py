"""``python -m leaderboard validate DIR``: check a submission folder and compute its statistics from the episodes.

The checks, in order (the first failure raises :class:`SubmissionError` with a message naming the file, line or
field; nothing is computed from a submission that fails):

1. Files: the folder holds exactly ``submission.json`` and ``episodes.jsonl`` (JSON only: no pickle, nothing that
   runs code), each within its size limit (:class:`Limits`).
2. ``submission.json``: strict JSON (NaN and Infinity rejected), the schema (every field, its type; unknown fields
   rejected; text shown on the board without control characters or ``| < > & ```), the protocol it names (a
   registered id, never a path; version and the SHA-256 of the protocol file), the config hash, credit-track
   runs against the protocol's training budget and seeds, the envs it lists (current versions, the kwargs the
   protocol gives, the hash of the list), the episodes file's size, count and SHA-256.
3. ``episodes.jsonl``: strict JSON line by line (integers within +-2**63, finite floats, nesting the parser can
   take; blank lines are ignored), the episode schema of :mod:`baselines.episode`, current env versions and the
   protocol's kwargs, transcripts that describe the episode, exactly one turn per move of the transcript with the
   move's action, turn rewards that add up to the episode's rewards, a reward for every agent of the env and a team
   reward for every team, each within ``spec(env_id).reward_range``, the opponent policy the protocol names, and
   completeness: exactly one episode for every (task, seat, run, seed) of the protocol. Token counts are
   non-negative ints; each episode's count is its turns' completion tokens, and the manifest's totals are the sums
   over the episodes and over the runs' ``train_tokens``.
4. Replay audit: every episode (or a random ``sample`` of at least 1) is replayed step by step with its transcript:
   a live agent's step must be a legal move of the env's type (an allowed ``int`` in discrete mode, a string in text
   mode), ``None`` only a dead agent's step; with the protocol's ``seeded_moves`` each move of the protocol's
   opponent is re-derived from the seed and must be identical; the replayed rewards and team rewards must equal the
   recorded ones and the episode must be over. :func:`leaderboard.reproduce.reproduce` (``--reproduce``, run by the
   CLI and :func:`leaderboard.store.submit` after this) then re-plays the submitter's own moves with the claimed
   player; without it they are self-reported.
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
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.episode import READABLE_VERSIONS, SCHEMA, Episode, json_safe
from baselines.outputs import escape_controls, json_shape_problem, read_capped
from baselines.policies.base import request_for
from baselines.rollout import env_action
from leaderboard.evaluate import (EPISODES_FILE, SUBMISSION_FILE, SUBMISSION_SCHEMA, SUBMISSION_VERSION, check_method,
                                  check_run, config_sha256, file_sha256, opponent_for, parse_run_label, run_label)
from leaderboard.protocol import Protocol, ProtocolError, Task, canonical_sha256, load_protocol, registered_protocol
from marl_llm_envs import make, spec
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.text import short_repr

__all__ = ["Limits", "SubmissionError", "Validated", "validate"]

METHOD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+=-]{0,79}")
METHOD_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\.py")     # a credit method's own source, shipped with its runs
TOL = 1e-9


class SubmissionError(ValueError):
    """A submission that fails validation; the message says what and where. It quotes the submission's text with
    every control character escaped (:func:`~baselines.outputs.escape_controls`): a move made of terminal escape
    sequences is shown as ``\\x1b[2J``, never sent to the maintainer's terminal."""

    def __init__(self, message: object) -> None:
        super().__init__(escape_controls(message))


@dataclass(frozen=True)
class Limits:
    submission_bytes: int = 1 << 20          # submission.json: 1 MiB
    episodes_bytes: int = 256 << 20          # episodes.jsonl: 256 MiB
    line_bytes: int = 8 << 20                # one episode line: 8 MiB
    method_bytes: int = 256 << 10            # a credit method's source file: 256 KiB


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
    content_sha256: str = ""                        # of the canonical episode content (duplicates are found on it)
    rederived: int = 0                              # moves of the protocol's opponents re-derived and matched
    reproduced: dict[str, Any] | None = None        # what --reproduce re-ran (None: the player's moves are
    #                                                 self-reported)
    cells: dict = field(default_factory=dict, repr=False)   # (task, seat, run) -> seed -> (line, episode): the
    #                                                         checked episodes, which reproduce re-plays
    audit_seed: int | None = None                   # the seed of the validator's draws (replay and re-run samples)
    method_file: str | None = None                  # the credit method's shipped source (checked, never imported)

    @property
    def self_reported(self) -> bool:
        return self.reproduced is None

    def task_means(self) -> dict[str, float]:
        return {t: float(np.mean([np.mean(r) for r in runs])) for t, runs in self.scores.items()}


# ---------------------------------------------------------------------- strict JSON
def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number (NaN and Infinity are rejected)")


MAX_INT = 2**63          # integers beyond +-2**63 are rejected (no count, seed or reward of ours comes near)


def _loads(text: str, where: str) -> Any:
    """Strict JSON: NaN, Infinity, numbers that overflow a float and integers beyond +-2**63 are rejected with the
    field named; so is nesting too deep for the parser."""
    out_of_range = []

    def parse_int(digits: str) -> int | float:
        if len(digits) > 20:            # not even parsed: int() of a long digit string is slow
            out_of_range.append(digits)
            return math.inf
        value = int(digits)
        if abs(value) >= MAX_INT:
            out_of_range.append(digits)
        return value

    def parse_float(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            out_of_range.append(digits)
        return value

    problem = json_shape_problem(text)
    if problem is not None:
        raise SubmissionError(f"{where}: {problem}")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_int=parse_int, parse_float=parse_float)
    except json.JSONDecodeError as e:
        raise SubmissionError(f"{where}: malformed JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise SubmissionError(f"{where}: JSON nested too deeply") from None
    except ValueError as e:
        raise SubmissionError(f"{where}: {e}") from None
    if out_of_range:
        path = _find_out_of_range(value)
        shown = out_of_range[0][:30] + ("..." if len(out_of_range[0]) > 30 else "")
        raise SubmissionError(f"{where}{path}: the number {shown} is out of range (integers within +-2**63, finite "
                              f"floats)")
    return value


def _find_out_of_range(value: Any) -> str:
    """The path (``.rewards.player_0``) of the first out-of-range number in ``value`` (parsed as a huge int or an
    infinite float)."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and abs(v) >= MAX_INT or isinstance(v, float) and not math.isfinite(v):
            return path
        if isinstance(v, dict):
            stack += [(f"{path}.{k}", x) for k, x in reversed(list(v.items()))]
        elif isinstance(v, list):
            stack += [(f"{path}[{i}]", x) for i, x in reversed(list(enumerate(v)))]
    return ""


# strings that reach LEADERBOARD.md or the page: no control characters (newlines included), no | < > & or `
_UNSAFE_TEXT = re.compile(r"[\x00-\x1f\x7f-\x9f|<>&`\u2028\u2029]")


def _safe_text(value: Any, where: str, limit: int = 200) -> None:
    if not isinstance(value, str):
        raise SubmissionError(f"{where}: expected a string, got {type(value).__name__}")
    if len(value) > limit:
        raise SubmissionError(f"{where}: at most {limit} characters, got {len(value)}")
    bad = _UNSAFE_TEXT.search(value)
    if bad:
        raise SubmissionError(f"{where}: the character {bad.group()!r} is not allowed (no control characters or "
                              f"newlines, no | < > & `: this text is shown on the leaderboard)")


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
    _safe_text(m["note"], f"{where}.note", limit=2000)
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
            _safe_text(p["spec"], f"{w}.spec", limit=400)
            _safe_text(p["model_id"], f"{w}.model_id")
            _check_model_id(p, env_id, w)
    for i, e in enumerate(m["envs"]):
        if not isinstance(e, dict):
            raise SubmissionError(f"{where}.envs[{i}]: must be an object")
        _check_fields(e, {"env_id": _STR, "env_version": _INT, "env_kwargs": _DICT}, f"{where}.envs[{i}]")


# ---------------------------------------------------------------------- validate
def draw_audit_seed() -> int:
    """A seed for the validator's draws, from the OS's randomness (:mod:`secrets`): unknown to the submitter when
    the runs and episodes were made. It is printed, so a maintainer can repeat the same draws (``--audit-seed``)."""
    return secrets.randbits(63)


def validate(folder: str | Path, protocol: str | Path | Protocol | None = None, full: bool = False,
             sample: int | None = None, audit_seed: int | None = None, limits: Limits = Limits()) -> Validated:
    """Check the submission in ``folder`` (see the module docstring) and return its statistics.

    ``protocol``: the protocol (or its name or path); default: the registered one the manifest names.
    Every episode is replayed, unless ``sample`` (>= 1) asks for that many random ones (``full=True`` replays all
    in any case). Every draw comes from ``audit_seed``, by default drawn now from the OS's randomness
    (:func:`draw_audit_seed`; ``Validated.audit_seed`` says which, to repeat them). The player's own moves are
    self-reported until :func:`leaderboard.reproduce.reproduce` re-plays them (the CLI and
    :func:`leaderboard.store.submit` call it after this, with ``--reproduce``)."""
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 1):
        raise ValueError(f"sample: replay at least 1 episode (got {sample!r}); leave it out to replay every episode")
    folder = Path(folder)
    _check_files(folder, limits)
    manifest = _read_manifest(folder / SUBMISSION_FILE, limits)
    proto = _protocol_of(manifest, protocol)
    _check_envs(manifest, proto)
    method_file = _check_method_file(folder, manifest, proto)
    episodes = _read_sealed_episodes(folder / EPISODES_FILE, manifest["episodes"], limits)
    cells = _check_episodes(episodes, manifest, proto)
    _check_tokens(episodes, manifest, proto)
    if audit_seed is None:
        audit_seed = draw_audit_seed()
    replayed, rederived = _audit(episodes, proto, None if full else sample, audit_seed)
    scores, raw, games = _statistics(cells, proto)
    v = Validated(manifest, proto, scores, raw, games, len(episodes), replayed, dict(manifest["tokens"]),
                  content_sha256(episodes, manifest), rederived, cells=cells, audit_seed=audit_seed,
                  method_file=method_file)
    return v


def _check_files(folder: Path, limits: Limits) -> None:
    """The folder holds exactly the two plain files, each within its size limit."""
    if not folder.is_dir():
        raise SubmissionError(f"{folder}: not a folder (a submission is a folder with {SUBMISSION_FILE} and "
                              f"{EPISODES_FILE})")
    names = sorted(p.name for p in folder.iterdir())
    extra = [n for n in names if n not in (SUBMISSION_FILE, EPISODES_FILE)]
    source = [n for n in extra if METHOD_FILE.fullmatch(n) and (folder / n).is_file() and
              not (folder / n).is_symlink()][:1]
    if sorted(extra) != source:
        raise SubmissionError(f"{folder}: unexpected file(s) {sorted(set(extra) - set(source))}; a submission holds "
                              f"only {SUBMISSION_FILE}, {EPISODES_FILE} and, on the credit track, the source file of "
                              f"its own credit method as <module>.py (JSON only, and that one source file, run only "
                              f"by --reproduce in a sandbox: pickles, weights and other code are never read)")
    if source and (folder / source[0]).stat().st_size > limits.method_bytes:
        raise SubmissionError(f"{source[0]}: {(folder / source[0]).stat().st_size} bytes, over the limit of "
                              f"{limits.method_bytes} bytes for a method's source")
    for name in (SUBMISSION_FILE, EPISODES_FILE):
        path = folder / name
        if not path.is_file() or path.is_symlink():
            raise SubmissionError(f"{folder}: {name} is missing (or not a plain file)")
    for name, limit in ((SUBMISSION_FILE, limits.submission_bytes), (EPISODES_FILE, limits.episodes_bytes)):
        size = (folder / name).stat().st_size
        if size > limit:
            raise SubmissionError(f"{name}: {size} bytes, over the limit of {limit} bytes")


def _read_manifest(path: Path, limits: Limits) -> dict[str, Any]:
    """``submission.json``, strict JSON of the schema."""
    try:
        text = read_capped(path, limits.submission_bytes, SUBMISSION_FILE).decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionError(f"{SUBMISSION_FILE}: not UTF-8 text") from None
    except ValueError as e:
        raise SubmissionError(str(e)) from None
    manifest = _loads(text, SUBMISSION_FILE)
    _check_manifest(manifest)
    return manifest


def _read_sealed_episodes(path: Path, seal: dict[str, Any], limits: Limits) -> list:
    """The episodes of ``path``, which must be the file the manifest's ``episodes`` block (``seal``) names, with its
    size, SHA-256 and episode count."""
    if seal["file"] != EPISODES_FILE:
        raise SubmissionError(f"{SUBMISSION_FILE}.episodes.file: must be {EPISODES_FILE!r}")
    if seal["bytes"] != path.stat().st_size:
        raise SubmissionError(f"{SUBMISSION_FILE}.episodes.bytes: {seal['bytes']}, but {EPISODES_FILE} has "
                              f"{path.stat().st_size} bytes (the file was changed after evaluate)")
    if seal["sha256"] != file_sha256(path):
        raise SubmissionError(f"{SUBMISSION_FILE}.episodes.sha256 does not match {EPISODES_FILE} (the file was "
                              f"changed after evaluate)")
    episodes = _read_episodes(path, limits)
    if len(episodes) != seal["count"]:
        raise SubmissionError(f"{SUBMISSION_FILE}.episodes.count: {seal['count']}, but {EPISODES_FILE} has "
                              f"{len(episodes)} episodes")
    return episodes


def content_sha256(episodes: list, manifest: dict) -> str:
    """SHA-256 of what the episodes hold, independent of how the files are laid out (blank lines, spacing, key
    order, episode order, timings, notes) and of any hash the submitter merely claims (the weights'): the protocol,
    the method (on the credit track tied to the runs' credit method: two methods whose few evaluation episodes
    happen to be identical are two entries) and, per episode, its run id, seed, moves and rewards, sorted.
    Duplicates are found on it."""
    rows = sorted(json.dumps([e.run_id, e.seed, e.transcript.get("actions"), e.rewards, e.team_rewards],
                             sort_keys=True, separators=(",", ":")) for _, e in episodes)
    return canonical_sha256({"protocol": manifest["protocol"]["id"], "version": manifest["protocol"]["version"],
                             "method": manifest["method"], "episodes": rows})


def _check_tokens(episodes: list, manifest: dict, proto: Protocol) -> None:
    """Token counts: non-negative ints (checked with the schema), each episode's count is its turns' completion
    tokens, and the manifest's totals are the sums over the episodes and the runs' provenance."""
    where = f"{SUBMISSION_FILE}.tokens"
    main = branches = 0
    for line, e in episodes:
        for name in ("tokens_generated", "branch_tokens_generated"):
            value = getattr(e, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_INT:
                raise SubmissionError(f"{EPISODES_FILE}:{line}.{name}: {value!r} is not a non-negative integer")
        main += e.tokens_generated
        branches += e.branch_tokens_generated
    tokens = manifest["tokens"]
    if (tokens["eval_main"], tokens["eval_branches"]) != (main, branches):
        raise SubmissionError(f"{where}: eval_main {tokens['eval_main']} and eval_branches {tokens['eval_branches']} "
                              f"are not the episodes' sums ({main} and {branches})")
    train = {"main": 0, "branches": 0}
    for env_id, runs in manifest["players"].items():
        for r, p in enumerate(runs):
            spent = p.get("train_tokens")
            if proto.track == "policy" and spent is None:
                continue
            if not isinstance(spent, dict) or sorted(spent) != ["branches", "main"] or any(
                    isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < MAX_INT for x in spent.values()):
                raise SubmissionError(f"{SUBMISSION_FILE}.players.{env_id}[{r}].train_tokens: "
                                      f"{{'main': N, 'branches': N}} with non-negative integer counts, got "
                                      f"{str(spent)[:120]}")
            for k in train:
                train[k] += spent[k]
    if (tokens["train_main"], tokens["train_branches"]) != (train["main"], train["branches"]):
        raise SubmissionError(f"{where}: train_main {tokens['train_main']} and train_branches "
                              f"{tokens['train_branches']} are not the sums over the runs' train_tokens "
                              f"({train['main']} and {train['branches']})")


def _protocol_of(manifest: dict, protocol) -> Protocol:
    named = manifest["protocol"]
    try:
        if isinstance(protocol, Protocol):
            proto = protocol
        elif protocol is not None:
            proto = load_protocol(protocol)
        else:
            proto = registered_protocol(named["id"], f"{SUBMISSION_FILE}.protocol.id")
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
    if sorted(manifest["players"]) != proto.env_ids:
        raise SubmissionError(f"{SUBMISSION_FILE}.players: names envs {sorted(manifest['players'])}, the protocol "
                              f"has {proto.env_ids}")
    for env_id in proto.env_ids:
        if len(manifest["players"][env_id]) != proto.runs:
            raise SubmissionError(f"{SUBMISSION_FILE}.players.{env_id}: {len(manifest['players'][env_id])} runs, "
                                  f"the protocol has {proto.runs}")
        if proto.track == "credit":
            for r, provenance in enumerate(manifest["players"][env_id]):
                try:
                    check_run(proto, provenance, env_id, r, f"{SUBMISSION_FILE}.players.{env_id}[{r}]")
                except ValueError as e:
                    raise SubmissionError(str(e)) from None
    if proto.track == "credit":
        try:
            check_method(manifest["method"], [p for env_id in proto.env_ids for p in manifest["players"][env_id]],
                         f"{SUBMISSION_FILE}.players")
        except ValueError as e:
            raise SubmissionError(str(e).replace(f"{SUBMISSION_FILE}.players.method", f"{SUBMISSION_FILE}.method"))
    if config_sha256(named["sha256"], manifest["players"]) != manifest["config_sha256"]:
        raise SubmissionError(f"{SUBMISSION_FILE}.config_sha256 does not match the protocol and players listed")
    return proto


def _check_method_file(folder: Path, manifest: dict, proto: Protocol) -> str | None:
    """The shipped source of the submission's own credit method (``<module>.py``), or None: only on the credit
    track, only for a method ``<module>:<Class>`` of that module, and its SHA-256 must be every run's
    ``credit_sha256`` (the source that trained them). It is read as bytes here, never imported."""
    found = sorted(p for p in folder.iterdir() if METHOD_FILE.fullmatch(p.name))
    if not found:
        return None
    path = found[0]
    credits = {str((p.get("train_config") or {}).get("credit")) for runs in manifest["players"].values() for p in runs}
    module, _, name = (next(iter(credits)) if len(credits) == 1 else "").partition(":")
    if proto.track != "credit" or module != path.stem or not name.isidentifier():
        raise SubmissionError(f"{path.name}: a shipped source is the credit method <module>:<Class> that trained the "
                              f"runs, in <module>.py; the runs were trained with {sorted(credits)[:3]}")
    digest = file_sha256(path)
    for env_id, runs in manifest["players"].items():
        for r, p in enumerate(runs):
            if p.get("credit_sha256") != digest:
                raise SubmissionError(f"{SUBMISSION_FILE}.players.{env_id}[{r}].credit_sha256: not the SHA-256 of the "
                                      f"shipped {path.name} ({digest[:12]}...): the runs were trained by another "
                                      f"source")
    return str(path)


def _check_model_id(p: dict, env_id: str, where: str) -> None:
    """A run's ``model_id`` is the one its player spec gives (:func:`leaderboard.players.load_player`): the bot's
    name for ``random`` and ``reference[:NAME]``, ``MODEL`` for ``hf:MODEL[:MODE]``, the trained model
    (``train_config.model``) for ``checkpoint:``; ``--reproduce`` then ties it to the re-loaded weights. Any other
    spec is not one evaluate writes."""
    spec, model_id = p["spec"], p["model_id"]
    if spec == "random" or spec.startswith("reference:"):
        want = spec
    elif spec == "reference":
        want = f"reference:{next(iter(reference_policies(env_id)), '')}"
    elif spec.startswith("hf:"):
        want = spec[len("hf:"):].partition(":")[0]
    elif spec.startswith("checkpoint:"):
        config = p.get("train_config")
        want = config.get("model") if isinstance(config, dict) else None
        if want is None:
            raise SubmissionError(f"{where}.train_config: a checkpoint's provenance records its train_config (the "
                                  f"model it trained names model_id)")
    else:
        raise SubmissionError(f"{where}.spec: {spec!r} is not random, reference[:NAME], hf:MODEL[:MODE] or "
                              f"checkpoint:PATH")
    if model_id != want:
        raise SubmissionError(f"{where}.model_id: {model_id!r}, but the player {spec!r} is {want!r} (the model id is "
                              f"the player's, not a free label; name the entry with --method)")


def _check_envs(manifest: dict, proto: Protocol) -> None:
    envs = manifest["envs"]
    if canonical_sha256(envs) != manifest["envs_sha256"]:
        raise SubmissionError(f"{SUBMISSION_FILE}.envs_sha256 does not match the envs listed")
    listed = sorted(e["env_id"] for e in envs)
    if listed != proto.env_ids:
        raise SubmissionError(f"{SUBMISSION_FILE}.envs: lists {listed}, the protocol has {proto.env_ids}")
    current = {r["env_id"]: r for r in proto.env_records()}
    for i, e in enumerate(envs):
        version, kwargs = current[e["env_id"]]["env_version"], current[e["env_id"]]["env_kwargs"]
        if e["env_version"] != version:
            raise SubmissionError(f"{SUBMISSION_FILE}.envs[{i}].env_version: {e['env_id']} version "
                                  f"{e['env_version']}, but the current version is {version}")
        if e["env_kwargs"] != kwargs:
            raise SubmissionError(f"{SUBMISSION_FILE}.envs[{i}].env_kwargs: {e['env_kwargs']} are not the "
                                  f"protocol's kwargs for {e['env_id']} ({kwargs})")


def _read_episodes(path: Path, limits: Limits) -> list:
    """``[(line number, Episode)]`` read strictly (see the module docstring)."""
    episodes = []
    with open(path, "rb") as f:
        for lineno, line in enumerate(iter(lambda: f.readline(limits.line_bytes + 1), b""), 1):
            where = f"{EPISODES_FILE}:{lineno}"
            if len(line) > limits.line_bytes:       # read no further than one byte past the limit
                raise SubmissionError(f"{where}: a line of more than {limits.line_bytes} bytes, over the limit")
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
                episode = Episode.from_json(d)
            except (TypeError, ValueError, KeyError, AttributeError) as e:
                raise SubmissionError(f"{where}: not an episode ({short_repr(str(e), 300)})") from None
            del d
            episodes.append((lineno, _kept(episode, where)))
    return episodes


def _kept(e, where: str):
    """What validation keeps of an episode: its own token count checked here (its turns' completion tokens), then
    everything but the moves, rewards, labels and counts dropped (prompts, log-probabilities, texts, branches; the
    final infos reduced to their hash, checked against the replay), so the memory held for a whole submission is a
    fraction of its file, whatever the free-form fields carry."""
    own = sum(len(t.completion_ids) for t in e.turns)
    if isinstance(e.tokens_generated, bool) or not isinstance(e.tokens_generated, int) or \
            not 0 <= e.tokens_generated < MAX_INT:
        raise SubmissionError(f"{where}.tokens_generated: {e.tokens_generated!r} is not a non-negative integer")
    if e.tokens_generated != own:
        raise SubmissionError(f"{where}.tokens_generated: {e.tokens_generated}, but its turns hold {own} completion "
                              f"tokens")
    e.final_infos = {"sha256": canonical_sha256(e.final_infos)}
    e.branches = []
    for t in e.turns:
        t.prompt_ids, t.completion_ids, t.logprobs, t.legal_actions = [], [], [], []
        t.text, t.extra, t.state, t.choice, t.obs_digest = "", {}, None, None, ""
    return e


def _finite(values, where: str) -> None:
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SubmissionError(f"{where}: {k} = {v!r} is not a finite number")


def _check_episodes(episodes: list, manifest: dict, proto: Protocol) -> dict:
    """Every per-episode check (in the order of the module docstring), then completeness; returns
    (task, seat, run) -> {seed: (line, episode)}."""
    versions = {e["env_id"]: (e["env_version"], e["env_kwargs"]) for e in manifest["envs"]}
    tasks = {t.name: t for t in proto.tasks}
    seeds = set(proto.seeds)
    cells: dict[tuple[str, str, int], dict[int, Any]] = {}
    for line, e in episodes:
        where = f"{EPISODES_FILE}:{line}"
        task, seat, run = _cell_of(e, where, proto, tasks)
        _check_env(e, where, proto, task, *versions[task.env_id])
        _check_place(e, where, proto, task, seat, run, seeds)
        _check_rewards(e, where, task.env_id)
        _check_turns(e, where)
        if seat != "all":
            _check_opponent(e, where, task, seat)
        cell = cells.setdefault((task.name, seat, run), {})
        if e.seed in cell:
            raise SubmissionError(f"{where}: a second episode for {run_label(task.name, seat, run)} seed {e.seed}")
        cell[e.seed] = (line, e)
    _check_complete(cells, proto, seeds)
    return cells


def _cell_of(e, where: str, proto: Protocol, tasks: dict[str, Task]) -> tuple[Task, str, int]:
    """The (task, seat, run) an episode's ``run_id`` names."""
    label = parse_run_label(e.run_id)
    if label is None or label[0] not in tasks:
        raise SubmissionError(f"{where}.run_id: {e.run_id!r} is not '<task>|<seat>|run<r>' with a task of "
                              f"{proto.key}")
    return tasks[label[0]], label[1], label[2]


def _check_env(e, where: str, proto: Protocol, task: Task, version: int, kwargs: dict) -> None:
    """The episode plays the task's env at its current ``version`` with the protocol's kwargs, and its transcript
    describes it (``kwargs``: the env's full kwargs, as the manifest lists them)."""
    if e.env_id != task.env_id:
        raise SubmissionError(f"{where}.env_id: {e.env_id!r}, task {task.name} plays {task.env_id}")
    if e.env_version != version or e.transcript.get("version") != version:
        raise SubmissionError(f"{where}.env_version: {task.env_id} version {e.env_version} (transcript "
                              f"{e.transcript.get('version')!r}), but the current version is {version}")
    if e.env_kwargs != proto.env_kwargs(task):
        raise SubmissionError(f"{where}.env_kwargs: {e.env_kwargs} are not the protocol's {proto.env_kwargs(task)}")
    tr = e.transcript
    if tr.get("env_id") != e.env_id or tr.get("kwargs") != kwargs or tr.get("seed") != e.seed or \
            not isinstance(tr.get("actions"), list) or tr.get("ablations", []) != []:
        raise SubmissionError(f"{where}.transcript: does not describe this episode (env id, full kwargs, seed, "
                              f"a list of actions, no ablations)")


def _check_place(e, where: str, proto: Protocol, task: Task, seat: str, run: int, seeds: set[int]) -> None:
    """The seat is one the task plays, the run one of the protocol's, the seed an evaluation seed."""
    if seat not in task.seats():
        raise SubmissionError(f"{where}.run_id: seat {seat!r} is not one of {task.seats()}")
    if not 0 <= run < proto.runs:
        raise SubmissionError(f"{where}.run_id: run {run}, the protocol has {proto.runs} run(s)")
    if e.seed not in seeds:
        raise SubmissionError(f"{where}.seed: {e.seed} is not an evaluation seed of {proto.key}")


def _check_rewards(e, where: str, env_id: str) -> None:
    """Finite rewards for exactly the env's agents and team rewards for exactly its teams, within its reward
    range."""
    env_spec = _spec(env_id)
    _finite(e.rewards, f"{where}.rewards")
    _finite(e.team_rewards, f"{where}.team_rewards")
    if sorted(e.rewards) != sorted(env_spec.agents):
        raise SubmissionError(f"{where}.rewards: has rewards for {sorted(e.rewards)}; every agent of {env_id} needs "
                              f"one: {sorted(env_spec.agents)}")
    teams = sorted(set(env_spec.teams.values()))
    if sorted(e.team_rewards) != teams:
        raise SubmissionError(f"{where}.team_rewards: has {sorted(e.team_rewards)}; {env_id}'s teams are {teams}")
    low, high = env_spec.reward_range
    for name, values in (("rewards", e.rewards), ("team_rewards", e.team_rewards)):
        for k, value in values.items():
            if not low - TOL <= value <= high + TOL:
                raise SubmissionError(f"{where}.{name}.{k}: {value!r} is outside {env_id}'s reward range "
                                      f"[{low}, {high}]")


def _check_turns(e, where: str) -> None:
    """Exactly one turn per move of the transcript, with the move's action; the turns' rewards are finite and add
    up to each agent's episode reward."""
    actions = e.transcript["actions"]
    totals: dict[str, float] = {}
    for t in e.turns:
        if isinstance(t.reward, bool) or not isinstance(t.reward, (int, float)) or not math.isfinite(t.reward):
            raise SubmissionError(f"{where}.turns[{t.turn_index}].reward: {t.reward!r} is not a finite number")
        totals[t.agent] = totals.get(t.agent, 0.0) + t.reward
        if not (isinstance(t.step_index, int) and 0 <= t.step_index < len(actions)) or \
                actions[t.step_index] != t.action:
            raise SubmissionError(f"{where}.turns[{t.turn_index}]: its action {t.action!r} is not the "
                                  f"transcript's action at step {t.step_index}")
    steps = sorted(t.step_index for t in e.turns)
    moves = [i for i, a in enumerate(actions) if a is not None]
    if steps != moves:
        raise SubmissionError(f"{where}.turns: the turns are at steps {steps[:8]}..., the transcript has moves at "
                              f"steps {moves[:8]}... (every move of the transcript has exactly one turn)")
    for agent, total in totals.items():
        if abs(total - e.rewards.get(agent, math.nan)) > TOL:
            raise SubmissionError(f"{where}.rewards.{agent}: {e.rewards.get(agent)!r}, but its turns' rewards add "
                                  f"up to {total!r}")


def _check_opponent(e, where: str, task: Task, seat: str) -> None:
    """A versus episode's other seat is played by the protocol's opponent."""
    opp = next(a for a in _spec(task.env_id).agents if a != seat)
    name = (e.policies.get(opp) or {}).get("name")
    want = "random" if task.opponent == "random" else f"reference:{task.opponent}"
    if name != want:
        raise SubmissionError(f"{where}.policies.{opp}: played by {name!r}, the protocol's opponent is {want!r}")


def _check_complete(cells: dict, proto: Protocol, seeds: set[int]) -> None:
    """Exactly one episode for every (task, seat, run, seed) of the protocol (none twice: checked as they are
    read)."""
    for task in proto.tasks:
        for seat in task.seats():
            for run in range(proto.runs):
                got = cells.get((task.name, seat, run), {})
                if len(got) != len(seeds):
                    lacking = sorted(seeds - set(got))
                    raise SubmissionError(f"{EPISODES_FILE}: incomplete: {run_label(task.name, seat, run)} lacks "
                                          f"{len(lacking)} of the protocol's {len(seeds)} seeds (e.g. {lacking[:3]})")


def _spec(env_id: str):
    return spec(env_id)


def _audit(episodes: list, proto: Protocol, sample: int | None, audit_seed: int | None) -> tuple[int, int]:
    """Replay every episode (or ``sample`` random ones) step by step from its transcript:

    * a step of a dead agent (terminated or truncated) is ``None``, and only such a step is;
    * a live agent's step is a move of the type the env defines: an ``int`` index that the action mask allows in
      discrete mode, a string in text mode;
    * with ``proto.seeded_moves``, each move of the protocol's opponent is re-derived (the opponent policy is asked
      again with the seed of that step, see :func:`leaderboard.evaluate.opponent_for`) and must be the same move;
    * the replayed rewards and team rewards equal the recorded ones, and the episode is over at the end.

    Returns (episodes replayed, opponent moves re-derived)."""
    if sample is None or sample >= len(episodes):
        chosen = list(range(len(episodes)))
    else:
        rng = random.Random(audit_seed) if audit_seed is not None else random.SystemRandom()
        chosen = sorted(rng.sample(range(len(episodes)), sample))
    tasks = {t.name: t for t in proto.tasks}
    opponents: dict[tuple[str, str, int], Any] = {}
    envs: dict[tuple[str, str], Any] = {}       # one env per (env id, kwargs), reset for each episode
    rederived = 0
    for i in chosen:
        line, e = episodes[i]
        where = f"{EPISODES_FILE}:{line}"
        task_name, seat, run = parse_run_label(e.run_id)
        task = tasks[task_name]
        opponent = None
        if proto.seeded_moves and seat != "all":
            key = (task.name, seat, run)
            if key not in opponents:
                opponents[key] = opponent_for(proto, task, run)
            opponent = opponents[key]
        totals, env, n = _replay(e, where, seat, opponent, envs)
        rederived += n
        if not env.done:
            raise SubmissionError(f"{where}: the transcript does not replay to the end of the episode")
        for a, r in totals.items():
            if abs(r - e.rewards.get(a, math.nan)) > TOL:
                raise SubmissionError(f"{where}: replay gives {a} the reward {r!r}, the episode records "
                                      f"{e.rewards.get(a)!r}")
        replayed = {k: float(v) for k, v in env.team_rewards().items()}
        if set(replayed) != set(e.team_rewards) or any(abs(v - e.team_rewards[k]) > TOL for k, v in replayed.items()):
            raise SubmissionError(f"{where}: replay gives the team rewards {replayed}, the episode records "
                                  f"{e.team_rewards}")
        infos = json_safe({a: env.infos[a] for a in env.agents if a in env.infos})
        if canonical_sha256(infos) != e.final_infos.get("sha256"):     # (_kept reduced them to their hash)
            raise SubmissionError(f"{where}.final_infos: not the infos the replayed episode ends with "
                                  f"({short_repr(infos, 160)})")
    return len(chosen), rederived


def _replay(e, where: str, seat: str, opponent, envs: dict) -> tuple[dict[str, float], Any, int]:
    """Replay ``e``'s transcript (see :func:`_audit`): the rewards it gives each agent, the env at its end, and the
    opponent moves re-derived. ``envs``: made envs by (env id, kwargs), reused (``reset(seed)`` starts afresh)."""
    tr = e.transcript
    try:
        key = (tr["env_id"], json.dumps(tr["kwargs"], sort_keys=True))
        env = envs.get(key)
        if env is None:
            env = envs[key] = make(tr["env_id"], **tr["kwargs"])
        env.reset(seed=tr["seed"])
    except Exception as exc:  # noqa: BLE001 - any failure of a submitted transcript is a rejection
        raise SubmissionError(f"{where}.transcript: the env does not start ({type(exc).__name__}: {exc})") from None
    discrete = env.action_mode == "discrete"
    totals = {a: 0.0 for a in env.possible_agents}
    rederived = 0
    for step, action in enumerate(tr["actions"]):
        w = f"{where}.transcript.actions[{step}]"
        if env.done:
            raise SubmissionError(f"{w}: the transcript goes on after the episode ended")
        agent = env.agent_selection
        dead = bool(env.terminations.get(agent) or env.truncations.get(agent))
        if dead:
            if action is not None:
                raise SubmissionError(f"{w}: {agent} is done, so its step is None; the transcript has {action!r}")
        elif action is None:
            raise SubmissionError(f"{w}: None is a dead agent's step, but {agent} is live and must move")
        elif discrete:
            if isinstance(action, bool) or not isinstance(action, int):
                raise SubmissionError(f"{w}: {agent}'s move must be an action index (int) in discrete mode, got "
                                      f"{short_repr(action, 60)}")
            legal = [int(x) for x in np.flatnonzero(env.action_mask(agent))]
            if action not in legal:
                raise SubmissionError(f"{w}: {agent}'s move {action} is not legal now; legal indices: {legal}")
        elif not isinstance(action, str):
            raise SubmissionError(f"{w}: {agent}'s move must be text (a string) in text mode, got "
                                  f"{short_repr(action, 60)}")
        if opponent is not None and not dead and agent != seat:
            legal_text = tuple(env.legal_actions(agent))
            request = request_for(env, agent, opponent.observes, key=(int(tr["seed"]), 0, step))
            try:
                move = env_action(env, agent, opponent.generate([request])[0].action, legal_text)
            except Exception as exc:  # noqa: BLE001
                raise SubmissionError(f"{w}: the protocol's opponent {opponent.name} fails on this state "
                                      f"({type(exc).__name__}: {exc})") from None
            if json_safe(move) != action:
                raise SubmissionError(f"{w}: {agent} is the protocol's opponent {opponent.name}; re-derived from the "
                                      f"seed it plays {json_safe(move)!r}, the transcript has {action!r} (a move the "
                                      f"submitter does not own was changed, or the task, seat or opponent relabelled)")
            rederived += 1
        try:
            env.step(action)
        except Exception as exc:  # noqa: BLE001
            raise SubmissionError(f"{w}: the transcript does not replay ({type(exc).__name__}: {exc})") from None
        for a, r in env.rewards.items():
            totals[a] = totals.get(a, 0.0) + float(r)
    return totals, env, rederived


def _statistics(cells: dict, proto: Protocol):
    scores: dict[str, list[list[float]]] = {}
    raw: dict[str, list[list[float]]] = {}
    games: dict[str, dict[str, dict[str, int]]] = {}
    for task in proto.tasks:
        seats = task.seats()
        scores[task.name], raw[task.name] = [], []
        for run in range(proto.runs):
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
