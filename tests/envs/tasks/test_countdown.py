"""Countdown (marl_llm_envs/tasks/countdown.py): any correct expression over the given numbers verifies, and the
answer reaches the target."""

from __future__ import annotations

import re

import numpy as np

from marl_llm_envs.tasks import (
    CountdownTasks,
    Task,
)
from tests.envs.tasks.helpers import arith_value


def test_countdown_verify_accepts_any_correct_expression_over_the_given_numbers():
    src = CountdownTasks(4)
    q = ("Using the numbers 2, 3, 4, 6 (each at most once) and the operations +, -, *, / with "
         "parentheses, write an expression equal to 24.")
    t = Task("c", q, "4 * 6", "countdown", (), ())
    for r in ["4 * 6", "(2 + 6) * 3", "6 * 4", "2 * 3 * 4", "6 / (3 - 2) * 4", "4 \\times 6",
              "(4*6) = 24", " 4*6. "]:
        assert src.verify(t, r), r
    for r in ["4 * 6 * 1", "6 * 4 = 25", "6 + 6 + 6 + 6", "6 * (2 + 3) - 6", "24", "4 * 6 /",
              "2 / (3 - 3)", "", "import os", "(4 * 6"]:
        assert not src.verify(t, r), r


def test_countdown_answer_reaches_target_with_given_numbers():
    src = CountdownTasks(5)
    rng = np.random.default_rng(0)
    for _ in range(30):
        t = src.sample(rng)
        m = re.search(r"numbers ([\d, ]+) \(each.*equal to (\d+)\.", t.question)
        nums = sorted(int(x) for x in m.group(1).split(","))
        assert sorted(int(x) for x in re.findall(r"\d+", t.answer)) == nums
        assert arith_value(f"Compute the value of {t.answer}.") == int(m.group(2))
