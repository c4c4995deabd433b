"""Where the command-line tools write: a path checked before any work, so that a run does not end (after hours of
training or rollouts) in an OSError traceback from ``mkdir`` or ``open``, with what it made lost; a file replaced in
one step, so that a process killed while writing it leaves the old file, never a cut one; a JSON object read
back from such a file, where damage done from outside is an error that names the file and says what to do; and a
folder held by one writing process at a time."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

__all__ = ["FolderBusy", "file_problem", "folder_problem", "read_json_object", "replace_text", "replacing", "writing"]

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
    import fcntl

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


def read_json_object(path: str | Path, remedy: str, what: str = "", *, line: int | None = None,
                     text: str | None = None, missing: str | None = None) -> dict:
    """The JSON object in the file ``path`` (or in ``text``, its line ``line``). Anything else (not readable, not JSON,
    not an object) is a ``ValueError``: ``"<path>[:<line>]: [<what> is ]damaged (<why>); <remedy>"``. With
    ``missing``, an absent file says so instead: ``"<path>: <what> is missing (<missing>); <remedy>"``."""
    where = f"{path}:{line}" if line is not None else str(path)
    subject = f"{what} is " if what else ""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8") if text is None else text)
    except FileNotFoundError as e:
        if missing is None:
            why = f"{type(e).__name__}: {e}"
        else:
            raise ValueError(f"{where}: {subject}missing ({missing}); {remedy}") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        why = f"{type(e).__name__}: {e}"
    else:
        if isinstance(value, dict):
            return value
        why = f"a JSON {type(value).__name__}, not an object"
    raise ValueError(f"{where}: {subject}damaged ({why}); {remedy}")


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
