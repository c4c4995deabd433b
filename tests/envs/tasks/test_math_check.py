"""The math checker (marl_llm_envs/tasks/math_check.py): an answer sympy never finishes is wrong within the time
limit, and a checker worker that died costs no wrong verdict."""

from __future__ import annotations

import pytest

from marl_llm_envs.tasks import (
    DatasetTasks,
    Task,
)


@pytest.mark.parametrize("where", ["main thread", "other thread"])
def test_an_answer_that_sympy_never_finishes_is_wrong_within_the_time_limit(math_file, monkeypatch, where):
    # math_verify's own timeout is a SIGALRM: in a thread other than the main one it was no limit at all, and
    # 9^{9^{9^{9}}} never finished. The check now runs in a worker process that is killed at the limit.
    import threading
    import time

    from marl_llm_envs.tasks import math_check

    pytest.importorskip("math_verify")
    monkeypatch.setattr(math_check, "CHECK_SECONDS", 1.0)
    src = DatasetTasks(math_file)
    half = Task("d", "q", "\\frac{1}{2}", "jsonl", (), ())
    results = []

    def check():
        for reply in ["9^{9^{9^{9}}}", "\\dfrac{1}{2}", "10^{10^{10}}", "1/2", "\\frac{2}{3}"]:
            start = time.monotonic()
            results.append((reply, src.verify(half, reply), time.monotonic() - start))

    if where == "main thread":
        check()
    else:
        thread = threading.Thread(target=check, daemon=True)
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "a check ran past the time limit"
    assert [(r, v) for r, v, _ in results] == [("9^{9^{9^{9}}}", False), ("\\dfrac{1}{2}", True),
                                               ("10^{10^{10}}", False), ("1/2", True), ("\\frac{2}{3}", False)]
    assert all(seconds < 15 for _, _, seconds in results), results     # the limit, a restart, a loaded machine


def test_a_checker_worker_that_died_between_checks_costs_no_wrong_verdict(monkeypatch):
    # killed (out of memory, by hand) after one check and before the next, whose write finds the pipe closed
    import os
    import signal

    from marl_llm_envs.tasks import math_check

    pytest.importorskip("math_verify")
    assert math_check.equal("\\frac{1}{2}", "\\dfrac{1}{2}")
    process = math_check._worker["process"]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    monkeypatch.setattr(process, "poll", lambda: None)     # its death not seen yet when the next check starts
    assert math_check.equal("\\frac{1}{2}", "\\dfrac{1}{2}")
    assert math_check._worker["process"] is not process
