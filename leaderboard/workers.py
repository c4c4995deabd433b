"""Where independent runs are played: this process, a pool of spawned processes, or a Ray cluster
(:class:`Workers`). The credit suite (:func:`leaderboard.suite.execute`) and ``benchmark-credit`` fan their runs out
with it; a run is a module-level function of a JSON-able spec, so a process pool and Ray can import it by name, and
its result does not depend on where it ran."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import socket
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["Workers"]


class Workers:
    """Where :func:`leaderboard.suite.execute` and benchmark-credit run specs, kept for several calls of :meth:`map`:
    this process (``jobs=1``), a pool of ``jobs`` spawned processes, or Ray (``ray``: see
    :func:`leaderboard.suite.execute`). The pool is started by the first :meth:`map` with more than one spec, and
    Ray is initialised by the first :meth:`map` (unless the caller's process has initialised it already); both are
    stopped by :meth:`close` (a ``with`` block). A command that runs its specs in phases (benchmark-credit's
    training runs, then the evaluations of those runs) starts its workers once: a spawned worker begins by
    importing torch, and a local Ray instance takes seconds to start."""

    def __init__(self, jobs: int = 1, ray: str | None = None) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"--jobs must be a positive int, got {jobs!r}")
        self.jobs, self.ray = jobs, ray
        self._pool = None
        self._ray = None            # the ray module once initialised (here or by the caller)
        self._started_ray = False

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def map(self, fn: Callable[[dict[str, Any]], Any], specs: Sequence[dict[str, Any]],
            progress: bool = False) -> list[Any]:
        """``fn`` of every spec, in the order of ``specs`` (see :func:`leaderboard.suite.execute`); no specs, no workers
        started."""
        specs = list(specs)
        if not specs:
            return []
        if self.ray is not None:
            ray = self._start_ray()
            remote = ray.remote(num_cpus=1)(fn)
            out = ray.get([remote.remote(s) for s in specs])
            if progress:
                print(f"ray: {len(out)} runs done", file=sys.stderr)
            return out
        if self.jobs == 1 or (len(specs) <= 1 and self._pool is None):
            out = []
            for i, s in enumerate(specs):
                if progress:        # before each run here
                    _progress(i, specs)
                out.append(fn(s))
            return out
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(max_workers=self.jobs,
                                                             mp_context=multiprocessing.get_context("spawn"))
        out = []
        for i, r in enumerate(self._pool.map(fn, specs)):
            if progress:        # as each run's result comes back, in order
                _progress(i, specs)
            out.append(r)
        return out

    def _start_ray(self):
        if self._ray is not None:
            return self._ray
        try:
            import ray  # lazy: an optional extra (marl-llm-envs[ray]), loaded only for --ray
        except ImportError:
            raise ValueError("--ray needs ray: pip install 'marl-llm-envs[ray]'") from None
        if not ray.is_initialized():
            _check_reachable(self.ray)
            root = str(Path(__file__).resolve().parent.parent)
            env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}}
            try:
                if self.ray == "local":
                    ray.init(num_cpus=None, include_dashboard=False, runtime_env=env, log_to_driver=False)
                else:
                    ray.init(address=self.ray, runtime_env=env, log_to_driver=False)
            except (ConnectionError, ValueError) as e:   # no cluster at that address, or not an address
                raise ValueError(f"--ray {self.ray}: {e} (--ray auto joins the cluster running on this machine, "
                                 "started with `ray start --head`; --ray local starts a private instance for this "
                                 "command)") from None
            self._started_ray = True
        self._ray = ray
        return ray

    def close(self) -> None:
        """Stop the pool, and Ray if :meth:`map` initialised it."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()
        if self._started_ray:
            self._started_ray = False
            self._ray.shutdown()
        self._ray = None


def _progress(i: int, specs: list[dict[str, Any]]) -> None:
    s = specs[i]
    print(f"[{i + 1}/{len(specs)}] {s['method']} on {s['setting']}, seed {s['seed']}", file=sys.stderr)


def _check_reachable(address: str) -> None:
    """A ``--ray HOST:PORT`` (or ``ray://HOST:PORT``) that nothing answers on is a clear error within seconds: Ray
    itself retries such an address for minutes before it fails. ``auto``, ``local`` and anything that is not
    ``HOST:PORT`` are left to ``ray.init``."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as e:
        raise ValueError(f"--ray {address}: nothing answers at {host}:{port} ({e.strerror or e}); give the address "
                         "`ray start --head` printed, auto for the cluster running on this machine, or local for a "
                         "private instance") from None
