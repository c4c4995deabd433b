"""Where the command-line tools write: a path checked before any work, so that a run does not end (after hours of
training or rollouts) in an OSError traceback from ``mkdir`` or ``open``, with what it made lost; a file replaced in
one step, so that a process killed while writing it leaves the old file, never a cut one; a JSON object read
back from such a file, where damage done from outside is an error that names the file and says what to do; and a
folder held by one writing process at a time.

Bounded reading. Every JSON or text file read from a checkpoint, a run folder or a submission goes through
:func:`read_capped` and :func:`loads_bounded` (:func:`read_json_object` uses both): the size is checked on the open
file before a byte is read, and at most ``cap + 1`` bytes are read (a sparse 1 GiB ``latest`` pointer costs nothing);
nesting deeper than :data:`MAX_JSON_DEPTH` is an error naming the file, never a ``RecursionError`` from the parser
or from code that walks the value; and text whose objects and lists are so dense that parsing it would take more
than about 8 times its size in memory (padding such as ``[[],[],...]``) is refused before it is parsed, so memory
stays a small multiple of the file size."""

from __future__ import annotations

import fcntl
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator

import numpy as np

__all__ = ["JSON_CAP", "MAX_JSON_DEPTH", "FolderBusy", "escape_controls", "file_problem", "folder_problem",
           "json_shape_problem", "loads_bounded", "read_capped", "read_json_object", "replace_text", "replacing",
           "safe_name", "writing"]

JSON_CAP = 64 << 20          # default size cap of a JSON file read back (the largest we write is far smaller)
MAX_JSON_DEPTH = 64          # nesting: ours is at most ~10 deep (a checkpoint's optimizer state)

_HELD: set[str] = set()     # the folders this process holds (writing() within writing() for the same folder passes)


class FolderBusy(ValueError):
    """Another process holds the folder (see :func:`writing`)."""


@contextmanager
def writing(folder: str | Path, wait: bool = False) -> Iterator[Path]:
    """Hold ``folder`` (made if missing) while the block writes into it: an exclusive ``flock`` on the folder itself,
    released when the block ends or the process dies. Another process that holds it makes this a
    :class:`FolderBusy` error at once, or, with ``wait``, makes this wait for it. Two trainers given the same
    ``--out``, or two suites sharing a baseline's run, used to write into one run together (interleaved metrics,
    one's checkpoints over the other's, a finished run deleted as unfinished). The same folder held again inside the
    block, in this process, passes through; a file system without ``flock`` on folders gives no lock."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    key = str(folder.resolve())
    if key in _HELD:
        yield folder
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:                 # a folder that cannot be opened for reading (permissions): no lock
        yield folder
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise FolderBusy(f"{folder}: another process is writing into it now; wait for it to end, or write "
                             f"somewhere else") from None
        except OSError:
            pass
        _HELD.add(key)
        try:
            yield folder
        finally:
            _HELD.discard(key)
    finally:
        os.close(fd)


@contextmanager
def replacing(path: str | Path) -> Iterator[IO[str]]:
    """A text file (UTF-8) that takes the place of ``path`` in one step: the block writes a temporary file beside it,
    which is flushed to disk and moved onto ``path`` (``os.replace``) when the block ends. A block that fails (an
    exception, a killed process) leaves ``path`` as it was; the temporary file is removed (but for a kill)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def replace_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` in one step (:func:`replacing`)."""
    with replacing(path) as f:
        f.write(text)


def _read_upto(path: str | Path, cap: int) -> tuple[int, bytes]:
    """``(size, data)``: the size the opened file reports (``fstat``) and, unless it is over ``cap``, at most
    ``cap + 1`` of its bytes (nothing is read of a file over the cap)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        return size, (f.read(cap + 1) if size <= cap else b"")


def read_capped(path: str | Path, cap: int, what: str = "the file") -> bytes:
    """The bytes of ``path``, at most ``cap`` of them: the size is checked on the opened file (``fstat``) before
    reading, and at most ``cap + 1`` bytes are read (a file that grows meanwhile, or a device that reports no size).
    Over the cap: ``ValueError`` naming the file, its size and the cap. ``OSError`` (a missing file) passes."""
    size, data = _read_upto(path, cap)
    if size > cap:
        raise ValueError(f"{path}: {what} has {size} bytes, over the limit of {cap} bytes")
    if len(data) > cap:
        raise ValueError(f"{path}: {what} has more than {cap} bytes, over the limit")
    return data


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CONTAINER_BYTES = 8        # a parsed list costs >= 56 bytes, a dict >= 64: at most one per 8 bytes of text


def json_shape_problem(data: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why the JSON text ``data`` is refused before parsing, or ``None``: nesting deeper than ``max_depth``, or more
    objects and lists than one per 8 bytes (parsed, such padding takes ~20 times its size in memory). Linear time
    (strings are skipped by one regular expression, the brackets counted in C)."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    opened = len(brackets) - brackets.count(b"]") - brackets.count(b"}")
    if opened > max_depth:
        steps = np.frombuffer(brackets, dtype=np.uint8)
        deepest = int(np.cumsum(np.where((steps == ord("[")) | (steps == ord("{")), 1, -1), dtype=np.int64).max())
        if deepest > max_depth:
            return f"JSON nested too deeply ({deepest} levels; the limit is {max_depth})"
    if opened * _CONTAINER_BYTES > max(len(raw), 1024):
        return (f"{opened} JSON objects and lists in {len(raw)} bytes, more than one per {_CONTAINER_BYTES} bytes "
                f"(padding, not data of ours)")
    return None


def loads_bounded(data: bytes | str, where: str, max_depth: int = MAX_JSON_DEPTH, **json_options) -> Any:
    """``json.loads(data, **json_options)`` after :func:`json_shape_problem`'s checks; any failure (not UTF-8, not
    JSON, too deep, padded) is a ``ValueError`` ``"<where>: <why>"``."""
    problem = json_shape_problem(data, max_depth)
    if problem is not None:
        raise ValueError(f"{where}: {problem}")
    try:
        return json.loads(data, **json_options)
    except UnicodeDecodeError:
        raise ValueError(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply") from None


def read_json_object(path: str | Path, remedy: str, what: str = "", *, line: int | None = None,
                     text: str | None = None, missing: str | None = None, cap: int = JSON_CAP) -> dict:
    """The JSON object in the file ``path`` (or in ``text``, its line ``line``), read within ``cap`` bytes and
    :data:`MAX_JSON_DEPTH` levels (:func:`read_capped`, :func:`json_shape_problem`). Anything else (not readable, too
    large, not JSON, not an object) is a ``ValueError``: ``"<path>[:<line>]: [<what> is ]damaged (<why>); <remedy>"``.
    With ``missing``, an absent file says so instead: ``"<path>: <what> is missing (<missing>); <remedy>"``."""
    where = f"{path}:{line}" if line is not None else str(path)
    subject = f"{what} is " if what else ""
    why = None
    try:
        if text is None:
            size, data = _read_upto(path, cap)
            if max(size, len(data)) > cap:
                why = f"{max(size, len(data))} bytes, over the limit of {cap}"
        else:
            data = text
        why = why or json_shape_problem(data)
        if why is None:
            value = json.loads(data)
    except FileNotFoundError as e:
        if missing is None:
            why = f"{type(e).__name__}: {e}"
        else:
            raise ValueError(f"{where}: {subject}missing ({missing}); {remedy}") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        why = f"{type(e).__name__}: {e}"
    else:
        if why is None and isinstance(value, dict):
            return value
        why = why or f"a JSON {type(value).__name__}, not an object"
    raise ValueError(f"{where}: {subject}damaged ({why}); {remedy}")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def escape_controls(text: object) -> str:
    """``text`` with every control character (escape sequences, newlines, bidi overrides) written as its Python
    escape (``\\x1b``, ``\\n``, ``\\u202e``): what a message or a terminal table echoes of a file someone else
    wrote can then not move the cursor, recolour the terminal or hide text."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def safe_name(name: str) -> str:
    """``name`` as one path component: every character but letters, digits and ``._-`` becomes ``_`` (a method
    ``package.module:Class`` or a setting ``voting/plurality/n2`` names one run folder; a learner's label its vLLM
    engine's folder)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def folder_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be a folder to write into (it, or the nearest of its parents that exists, is not a folder),
    or ``None``. Permissions are left to the write itself."""
    path = Path(path)
    for at in (path, *path.parents):
        if at.exists():
            return None if at.is_dir() else f"{at} is a file, not a folder"
    return None


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be a file to write (it is a folder, or its folder cannot be one), or ``None``."""
    path = Path(path)
    if path.is_dir():
        return f"{path} is a folder; give the path of a file in it"
    return folder_problem(path.parent)
