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
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.outputs import read_capped
from leaderboard.audit import TOL, audit, check_episodes, read_episodes
from leaderboard.evaluate import EPISODES_FILE, SUBMISSION_FILE, check_method, check_run, config_sha256, file_sha256
from leaderboard.protocol import Protocol, ProtocolError, canonical_sha256, load_protocol, registered_protocol
from leaderboard.submission_json import MAX_INT, Limits, SubmissionError, check_manifest, loads_strict

__all__ = ["Limits", "SubmissionError", "Validated", "draw_audit_seed", "validate"]

METHOD_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\.py")     # a credit method's own source, shipped with its runs


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
    cells = check_episodes(episodes, manifest, proto)
    _check_tokens(episodes, manifest, proto)
    if audit_seed is None:
        audit_seed = draw_audit_seed()
    replayed, rederived = audit(episodes, proto, None if full else sample, audit_seed)
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
    manifest = loads_strict(text, SUBMISSION_FILE)
    check_manifest(manifest)
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
    episodes = read_episodes(path, limits)
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
