"""A submission's manifest read as hostile input: strict JSON (NaN, Infinity, out-of-range numbers and nesting too deep
for the parser rejected with the field named), text shown on the board without control characters or markup, and the
``submission.json`` schema (every field, its type, no unknown field; a player's ``model_id`` is the one its spec
gives). Used by :mod:`leaderboard.validate` and the suite's validation (:mod:`leaderboard.suite.submission`)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from baselines.outputs import escape_controls, json_shape_problem
from leaderboard.evaluate import SUBMISSION_FILE, SUBMISSION_SCHEMA, SUBMISSION_VERSION
from marl_llm_envs.reference import reference_policies

__all__ = ["MAX_INT", "METHOD_NAME", "Limits", "SubmissionError", "check_manifest", "loads_strict", "safe_text"]

METHOD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+=-]{0,79}")


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



# ---------------------------------------------------------------------- strict JSON
def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number (NaN and Infinity are rejected)")


MAX_INT = 2**63          # integers beyond +-2**63 are rejected (no count, seed or reward of ours comes near)


def loads_strict(text: str, where: str) -> Any:
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


def safe_text(value: Any, where: str, limit: int = 200) -> None:
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


def check_manifest(m: Any) -> None:
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
    safe_text(m["note"], f"{where}.note", limit=2000)
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
            safe_text(p["spec"], f"{w}.spec", limit=400)
            safe_text(p["model_id"], f"{w}.model_id")
            _check_model_id(p, env_id, w)
    for i, e in enumerate(m["envs"]):
        if not isinstance(e, dict):
            raise SubmissionError(f"{where}.envs[{i}]: must be an object")
        _check_fields(e, {"env_id": _STR, "env_version": _INT, "env_kwargs": _DICT}, f"{where}.envs[{i}]")


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
