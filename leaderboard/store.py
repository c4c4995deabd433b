"""``python -m leaderboard submit DIR``: a validated submission becomes one JSON entry in the store.

The store (default ``board/entries/`` in the current folder: the repository's board, outside the package;
``--store`` names another; git-friendly: a public entry is a pull request) holds one file per
entry, ``<protocol id>@<version>/<method>--<first 12 hex of the episodes' SHA-256>.json``, and ``index.json`` listing
them. An entry is the submission's manifest plus what validation computed from the episodes (per-seed normalized
scores per task and run, win/draw/loss counts for versus tasks), so the ranking can be recomputed without the
episodes. Every submission is kept (several of one method are all shown); the same episodes twice are refused.

Writes are atomic (a temporary file renamed into place) and serialized by a lock file; nothing is written unless
validation passed.
"""

from __future__ import annotations

import fcntl
import json
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from baselines.outputs import read_json_object, replace_text
from leaderboard.reproduce import reproduce as reproduce_player
from leaderboard.validate import Limits, SubmissionError, Validated, validate

ENTRY_SCHEMA = "marl_llm_entry"
ENTRY_VERSION = 1
DEFAULT_STORE = Path("board") / "entries"        # relative to the current folder (the repository root); data, not code
INDEX = "index.json"

__all__ = ["DEFAULT_STORE", "add_entry", "entry_from", "load_entries", "read_index", "submit", "write_entry"]


def _write_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_text(path, json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n")


@contextmanager
def _locked(store: Path):
    store.mkdir(parents=True, exist_ok=True)
    with open(store / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_store_json(path: Path, what: str) -> dict[str, Any]:
    """A JSON object of the store (its index or an entry). The store's files are written only by
    :func:`write_entry`, atomically, so damage comes from outside and is left as it is."""
    return read_json_object(path, "restore it", what, missing="the store's index lists it")


def read_index(store: Path) -> list[dict[str, Any]]:
    path = Path(store) / INDEX
    if not path.exists():
        return []
    rows = _read_store_json(path, "the store's index").get("entries", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("file"), str)
                                             and isinstance(r.get("protocol"), str) for r in rows):
        raise ValueError(f"{path}: the store's index is damaged ('entries' must be a list of rows, each with a "
                         "'file' and a 'protocol'); restore it")
    return list(rows)


def entry_from(v: Validated, seeds: str = "public") -> dict[str, Any]:
    m = v.manifest
    sha = v.content_sha256 or m["episodes"]["sha256"]
    return {
        "schema": ENTRY_SCHEMA,
        "schema_version": ENTRY_VERSION,
        "id": f"{v.protocol.key}/{m['method']}--{sha[:12]}",
        "label": f"{m['method']}#{sha[:6]}",
        "method": m["method"],
        "track": m["track"],
        "protocol": v.protocol.key,
        "submitted": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "self_reported": v.self_reported,
        "seeds": seeds,
        "manifest": m,
        "results": {
            "episodes": v.episodes,
            "replayed": v.replayed,
            "rederived": v.rederived,
            "reproduced": v.reproduced,
            "audit_seed": v.audit_seed,
            "anchors": {t.name: {"zero": t.zero, "one": t.one, "names": t.normalize} for t in v.protocol.tasks},
            "task_means": v.task_means(),
            "scores": v.scores,
            "games": v.games,
        },
    }


def _inside(store: Path, rel: str) -> Path:
    path = (store / rel).resolve()
    if not path.is_relative_to(store.resolve()):
        raise SubmissionError(f"store path {rel!r} resolves outside the store {store}")
    return path


def submit(folder: str | Path, store: str | Path = DEFAULT_STORE, protocol=None, sample: int | None = None,
           limits: Limits = Limits(), reproduce: bool = False, reproduce_sample: int | None = None,
           seeds: str = "public", audit_seed: int | None = None, retrain: int | None = None) -> dict[str, Any]:
    """Validate the submission in ``folder`` and add it to ``store``; returns the entry. A failed validation or a
    duplicate raises :class:`SubmissionError` and writes nothing. Every episode is replayed (an env replay is cheap),
    unless ``sample`` (>= 1) asks for that many random ones. ``reproduce``: then re-run the player
    (:func:`leaderboard.reproduce.reproduce`); otherwise the entry is marked self-reported. A protocol without seeded
    moves (version 1) is refused without ``reproduce``."""
    validated = validate(folder, protocol=protocol, sample=sample, limits=limits, audit_seed=audit_seed)
    if not validated.protocol.seeded_moves and not reproduce:
        raise SubmissionError(f"{validated.protocol.key} has no seeded moves (a version-1 protocol): the moves of its "
                              f"opponents, the seats and the engine's seed cannot be re-derived from the episodes, "
                              f"so such a submission is unverifiable; submit it with --reproduce (every cell is "
                              f"re-played whole with the player, which re-derives every move)")
    if reproduce:
        reproduce_player(validated, sample=reproduce_sample, retrain=retrain)
    return add_entry(validated, store, seeds)


def add_entry(validated: Validated, store: str | Path = DEFAULT_STORE, seeds: str = "public") -> dict[str, Any]:
    """Add a validated submission to ``store`` (duplicates refused, paths kept inside the store)."""
    entry = entry_from(validated, seeds=seeds)
    write_entry(entry, store, validated.manifest["episodes"]["sha256"], validated.content_sha256)
    return entry


def write_entry(entry: dict[str, Any], store: str | Path, episodes_sha256: str, content_sha256: str) -> str:
    """Write ``entry`` (a submission's, or a suite's: :func:`leaderboard.suite.add_suite_entry`) into ``store`` as
    ``<protocol>/<method>--<first 12 hex of content_sha256>.json`` and list it in the index, atomically and under the
    store's lock; returns that path. Episodes already in the store (by either hash) or an existing file are refused
    with a :class:`SubmissionError`, and nothing is written."""
    store = Path(store)
    rel = f"{entry['protocol']}/{entry['method']}--{content_sha256[:12]}.json"
    target = _inside(store, rel)
    with _locked(store):
        index = read_index(store)
        for row in index:
            if content_sha256 == row.get("content_sha256") or row.get("episodes_sha256") in (episodes_sha256,
                                                                                            content_sha256):
                raise SubmissionError(f"duplicate: these episodes were submitted already as {row['id']} "
                                      f"({row['file']}); every submission is kept, the same one is not added twice")
        if target.exists():
            raise SubmissionError(f"duplicate: {target} exists already")
        _write_atomic(target, entry)
        index.append({"id": entry["id"], "file": rel, "protocol": entry["protocol"], "method": entry["method"],
                      "label": entry["label"], "submitted": entry["submitted"], "episodes_sha256": episodes_sha256,
                      "content_sha256": content_sha256, "self_reported": entry["self_reported"]})
        index.sort(key=lambda r: (r["protocol"], r["method"], r["submitted"], r["id"]))
        _write_atomic(store / INDEX, {"schema": "marl_llm_entries_index", "entries": index})
    return rel


def load_entries(store: str | Path = DEFAULT_STORE, protocol: str | None = None) -> list[dict[str, Any]]:
    """The entries listed in the store's index (optionally of one ``protocol`` key ``id@version``)."""
    store = Path(store)
    out = []
    for row in read_index(store):
        if protocol is not None and row["protocol"] != protocol:
            continue
        entry = _read_store_json(_inside(store, row["file"]), "an entry")
        if entry.get("schema") != ENTRY_SCHEMA:
            raise ValueError(f"{store / row['file']}: not a leaderboard entry")
        out.append(entry)
    return out
