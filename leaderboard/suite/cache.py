"""What the suite keeps between runs, outside the output folder and keyed by content (issue 42).

``--out`` is the submitter's (a pull request can carry files there), so nothing the suite reads back to save work
lives in it:

* Anchors: the measured value of each setting's ``random`` and reference anchors, cached in
  ``<cache>/anchors/<key>.json``, where the key is the SHA-256 of the suite's text and of the code that computes
  the anchors (:func:`code_sha256`: the envs, the reference bots, the rollout engine, the anchor code). A planted
  ``OUT/<suite>/anchors.json`` is never read; another suite text or another version of that code misses the cache
  and measures again.
* Run receipts: a trainer run the suite trained itself leaves a receipt in ``<cache>/runs/<key>.json`` (the key: the
  SHA-256 of the run folder's absolute path), holding the run's spec and the SHA-256 of its content (config,
  metrics, latest checkpoint: :func:`run_content_sha256`). A complete run found in ``--out`` is reused only when its
  receipt matches both (:func:`verified_run`); a run made elsewhere, or edited after it was trained (a raised
  ``metrics.jsonl``), is trained again.

* Run scores: the score of a finished run (:func:`leaderboard.suite.runs.score_run`: its held-out evaluation plays
  every kept checkpoint) in ``<cache>/scores/<key>.json``, where the key is the SHA-256 of the run's content (the
  files the score is read from, hashed from the folder being scored: :func:`run_content_sha256`), of the scoring
  spec and of the code the score depends on (:data:`_SCORE_CODE`). A suite scores its runs, then validates its own
  submission folders, which copy the same files: the validator re-derives the content hash from the copies and
  finds the score this machine computed from those very bytes (:func:`cached_score`). A submitted folder this machine
  never scored misses the cache and is scored; an edited file changes the key.

``<cache>`` is ``$MARL_LLM_CACHE``, else ``$XDG_CACHE_HOME/marl_llm_envs``, else ``~/.cache/marl_llm_envs``: the
maintainer's machine, never a folder a submission travels in."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from baselines.outputs import read_json_object, replace_text
from baselines.train import checkpoint
from leaderboard.evaluate import file_sha256
from leaderboard.protocol import canonical_sha256

__all__ = ["PLACEMENT_DEFAULTS", "anchor_cache", "cache_root", "cached_score", "code_sha256", "run_content_sha256",
           "verified_run", "write_receipt"]

MAX_HASHED_BYTES = 1 << 30          # a run file larger than this is not hashed (nor reused): trained again
_ROOT = Path(__file__).resolve().parent.parent.parent
# the code an anchor's value depends on: envs and their reference bots, the rollout engine and scripted policies,
# the suite's anchor code and the exact solver
_ANCHOR_CODE = ("marl_llm_envs", "baselines/rollout", "baselines/policies", "leaderboard/suite/spec.py",
                "leaderboard/exact.py", "leaderboard/players.py", "leaderboard/protocol.py")


# the code a run's score depends on: the anchor code, the suite's scoring, and how a checkpoint is loaded and played
_SCORE_CODE = (*_ANCHOR_CODE, "leaderboard/suite/runs.py", "baselines/train", "baselines/models.py",
               "baselines/hf_models.py")


def cache_root() -> Path:
    """The cache folder (see the module docstring)."""
    if os.environ.get("MARL_LLM_CACHE"):
        return Path(os.environ["MARL_LLM_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "marl_llm_envs"


@functools.lru_cache(maxsize=4)
def code_sha256(parts: tuple[str, ...] = _ANCHOR_CODE) -> str:
    """SHA-256 over the source files ``parts`` (default: those that compute the anchors, :data:`_ANCHOR_CODE`), each
    with its path; computed once per process (the sources do not change under a running suite)."""
    h = hashlib.sha256()
    for part in parts:
        path = _ROOT / part
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            h.update(str(f.relative_to(_ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def anchor_cache(suite) -> Path:
    """Where the anchors of ``suite`` (a :class:`~leaderboard.suite.spec.Suite`) are cached: keyed by the suite's
    text and the anchor code."""
    key = canonical_sha256({"suite": suite.sha256, "code": code_sha256()})
    return cache_root() / "anchors" / f"{key}.json"


def _file_sha256(path: Path) -> str | None:
    if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_HASHED_BYTES:
        return None
    return file_sha256(path)


def run_content_sha256(run: Path) -> str | None:
    """SHA-256 of what a run's result is read from: ``config.json``, ``metrics.jsonl`` and every kept checkpoint's
    files (the suite scores each one: the final policy and the best checkpoint); ``None`` when one is missing, a link, or over :data:`MAX_HASHED_BYTES`."""
    try:
        latest = checkpoint.latest(run / "checkpoints")
    except ValueError:          # a damaged pointer: nothing to verify
        return None
    if latest is None:
        return None
    parts = {}
    kept = sorted(p for p in (run / "checkpoints").iterdir() if p.is_dir() and not p.is_symlink())
    for path in (run / "config.json", run / "metrics.jsonl", *(f for c in kept for f in sorted(c.iterdir()))):
        digest = _file_sha256(path)
        if digest is None:
            return None
        parts[str(path.relative_to(run))] = digest
    return canonical_sha256(parts)


def _receipt(run: Path) -> Path:
    return cache_root() / "runs" / f"{hashlib.sha256(str(run.resolve()).encode()).hexdigest()}.json"


# What a run is trained from (:func:`leaderboard.suite.runs.train_run`): a receipt is keyed by these alone, so a
# change to how a finished run is scored (its tail, its held-out seeds, its opponent) re-scores the run it has, and
# only a change to its training trains it again.
TRAINING_KEYS = ("method", "env_id", "env_kwargs", "action_mode", "model", "mode", "steps", "tasks_per_step",
                 "group_size", "seed", "partners", "checkpoints", "device", "dtype", "backend", "out")


def _spec_key(spec: dict[str, Any], resolve: bool = True) -> str:
    """The receipt's key of ``spec``: its training keys, with ``out`` as the resolved path (the receipt's own file is
    named by the resolved run folder, so one folder reached through a symlink or a relative ``--out`` is one run;
    ``resolve=False``: the key receipts were written with before, the path as given)."""
    keys = {k: spec[k] for k in TRAINING_KEYS if k in spec}
    if resolve and "out" in keys:
        keys["out"] = str(Path(keys["out"]).resolve())
    return canonical_sha256(keys)


def write_receipt(run: Path, spec: dict[str, Any]) -> None:
    """Record that this machine trained ``run`` from ``spec``, with the content it has now."""
    path = _receipt(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_text(path, json.dumps({"run": str(run.resolve()), "spec": _spec_key(spec),
                                   "content": run_content_sha256(run)}))


def verified_run(run: Path, spec: dict[str, Any]) -> str | None:
    """``None`` when ``run`` is one this machine trained from ``spec`` and has not changed since (its receipt), else
    why it cannot be reused."""
    try:
        receipt = read_json_object(_receipt(run), "it is trained again")
    except ValueError:
        return f"{run}: no receipt of this machine's training in {cache_root() / 'runs'} (a run made elsewhere)"
    if receipt.get("spec") not in (_spec_key(spec), _spec_key(spec, resolve=False)):
        return f"{run}: trained here from another spec"
    content = run_content_sha256(run)
    if content is None or receipt.get("content") != content:
        return f"{run}: its files changed after it was trained here (config, metrics.jsonl or checkpoint)"
    return None


# The trainer's placement defaults (where a run trains unless its spec says otherwise; runs.complete_run compares
# with them): a run trained with them spelt out and the validator's spec, which leaves them out, are the same spec.
PLACEMENT_DEFAULTS = {"device": "cpu", "dtype": "float32", "backend": "hf"}


def cached_score(spec: dict[str, Any], run: Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``compute()`` (the score of the finished run in ``run`` under ``spec``), or the score this machine computed
    before from a run of the same content under the same scoring spec and code (see the module docstring). A run
    whose content cannot be hashed is scored without the cache."""
    content = run_content_sha256(run)
    if content is None:
        return compute()
    spec = {**PLACEMENT_DEFAULTS, **{k: v for k, v in spec.items() if k not in ("out", "progress")}}
    key = canonical_sha256({"content": content, "code": code_sha256(_SCORE_CODE), "spec": spec})
    path = cache_root() / "scores" / f"{key}.json"
    if path.is_file():
        try:
            return read_json_object(path, "it is scored again")
        except ValueError:
            pass
    text = json.dumps(compute())
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_text(path, text)
    return json.loads(text)             # the same types (lists, not tuples) whether it was cached or not
