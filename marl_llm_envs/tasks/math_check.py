"""``math_verify`` behind a hard time limit: an LLM's answer is hostile input, and sympy, which ``math_verify`` parses
and compares with, can take any time on a short one (``9^{9^{9^{9}}}`` or ``10^{10^{10}}`` never finish; 500 nested
parentheses take seconds). ``math_verify``'s own timeout is a ``SIGALRM``, which works only in a process's main
thread (elsewhere the call runs unbounded) and cancels any alarm of the caller's.

:func:`equal` sends the pair to one worker per calling process and waits at most :data:`CHECK_SECONDS` for the
verdict. A check that takes longer counts as not equal (a wrong answer, as any answer ``math_verify`` cannot parse);
the worker is killed and the next check starts a new one. The worker is this file run by the same Python
(``python math_check.py``), a fresh interpreter that imports only ``math_verify``: nothing of the caller is forked
or imported again (``multiprocessing``'s ``spawn`` would run a script's unguarded top-level code once more). It reads
one JSON ``[gold, response]`` per line and writes ``true`` or ``false``. Where no worker starts, the check runs here
with ``math_verify``'s own timeout, as before: bounded in the main thread only.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any

CHECK_SECONDS = 5.0         # the most one check may take once the worker is ready
START_SECONDS = 120.0       # the most a new worker may take to import math_verify and say it is ready

_lock = threading.Lock()
_worker: dict[str, Any] = {}    # "pid": the process that started it; "process": the worker (a Popen)
_no_worker: set[int] = set()    # processes where a worker could not be started (not tried again)


def equal(gold: str, response: str) -> bool:
    """Whether ``math_verify`` finds ``response`` equivalent to ``gold``; ``False`` on any failure, and when the check
    takes more than :data:`CHECK_SECONDS`."""
    with _lock:
        for _ in range(2):                 # a second try only for a worker found dead before the check
            process = _process()
            if process is None:
                return compare(gold, response, timeout=5)
            try:
                process.stdin.write((json.dumps([gold, response]) + "\n").encode())
                process.stdin.flush()
            except OSError:                 # it had died (out of memory, killed) before this check: a new one
                _stop()
                continue
            line = _read_line(process, CHECK_SECONDS)
            if line in (b"true\n", b"false\n"):
                return line == b"true\n"
            _stop()                         # past the limit, or it died during this check: wrong; the next starts anew
            return False
        return False


def compare(gold: str, response: str, timeout: int | None = None) -> bool:
    """The check itself (run in the worker): ``math_verify``'s ``parse`` of each side (wrapped in ``$...$`` unless it
    already has ``$`` or ``\\boxed``), then ``verify``; ``False`` on any failure. ``timeout``: ``math_verify``'s own
    (``SIGALRM``, main thread only; ``None`` in the worker, whose limit is the caller's)."""
    from math_verify import parse, verify  # lazy: an optional package (the datasets extra), slow to import

    if threading.current_thread() is not threading.main_thread():
        timeout = None

    def _parse(s: str):
        s = s.strip()
        wrapped = s if "$" in s or "\\boxed" in s else f"${s}$"
        res = parse(wrapped, parsing_timeout=timeout)
        if not res and wrapped != s:
            res = parse(s, parsing_timeout=timeout)
        return res

    try:
        g = _parse(gold)
        p = _parse(response)
        if not g or not p:
            return False
        return bool(verify(g, p, timeout_seconds=timeout))
    except Exception:       # noqa: BLE001 - math_verify and sympy raise anything on odd input: not equal
        return False


def _serve() -> None:
    """The worker's loop (``python math_check.py``): import ``math_verify``, say ``ready``, then answer each line."""
    logging.disable(logging.WARNING)    # math_verify logs each timeout it is told it has not got
    parent = os.getppid()
    _die_with_parent()

    def orphaned() -> None:             # a caller killed during a check would leave this computing for ever
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=orphaned, daemon=True).start()     # (where the kernel does not: outside Linux)
    compare("1", "1")      # its first call makes the slow import, before "ready": outside any check's time limit

    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        try:
            gold, response = json.loads(line)
            verdict = compare(str(gold), str(response))
        except ValueError:
            verdict = False
        out.write("true\n" if verdict else "false\n")
        out.flush()


def _die_with_parent() -> None:
    """On Linux, ask the kernel to kill this process when its parent goes (``prctl(PR_SET_PDEATHSIG, SIGKILL)``): a
    check stuck in one long C call (sympy's integer power) holds the GIL, so no thread of this process could notice."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)   # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def _read_line(process: subprocess.Popen, seconds: float) -> bytes | None:
    """One line of the worker's output, or ``None`` when none comes within ``seconds``."""
    fd = process.stdout.fileno()
    buffer = b""
    deadline = time.monotonic() + seconds
    while not buffer.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 64)
        if not chunk:
            return None
        buffer += chunk
    return buffer


def _process() -> subprocess.Popen | None:
    """This process's worker, started if needed; ``None`` where none can be started."""
    process = _worker.get("process")
    if _worker.get("pid") == os.getpid() and process.poll() is None:
        return process
    if _worker.get("pid") == os.getpid():
        _stop()
    _worker.clear()                 # a worker of the process this one was forked from is not this one's
    if os.getpid() in _no_worker:
        return None
    try:
        process = subprocess.Popen([sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    except OSError:
        _no_worker.add(os.getpid())
        return None
    if _read_line(process, START_SECONDS) != b"ready\n":
        process.kill()
        process.wait()
        _no_worker.add(os.getpid())
        return None
    _worker.update(pid=os.getpid(), process=process)
    return process


def _stop() -> None:
    process = _worker.get("process")
    _worker.clear()
    if process is not None:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            pipe.close()


if __name__ == "__main__":
    _serve()
