"""Arithmetic problems (marl_llm_envs/tasks/arithmetic.py): answers against the expression tree, difficulty,
precedence and parenthesis distractors, verification tolerant to formatting."""

from __future__ import annotations

import re

import numpy as np

from marl_llm_envs.tasks import (
    ArithmeticTasks,
    Task,
    arithmetic,
)
from tests.envs.tasks.helpers import arith_value


def test_arithmetic_answer_matches_expression_tree():
    for d in range(1, 6):
        src = ArithmeticTasks(d)
        rng = np.random.default_rng(d)
        for _ in range(60):
            t = src.sample(rng, "train")
            assert int(t.answer) == arith_value(t.question)
            assert t.answer == str(int(t.answer))


def test_arithmetic_difficulty_raises_operations_and_operand_size():
    def stats(d):
        rng = np.random.default_rng(0)
        qs = [ArithmeticTasks(d).sample(rng).question for _ in range(50)]
        ops = np.mean([len(re.findall(r" [-+*] ", q)) for q in qs])
        big = np.mean([max(int(x) for x in re.findall(r"\d+", q)) for q in qs])
        return ops, big

    s = [stats(d) for d in range(1, 6)]
    assert all(a[0] < b[0] for a, b in zip(s, s[1:]))
    assert all(a[1] < b[1] for a, b in zip(s, s[1:]))


def test_arithmetic_distractors_include_precedence_and_parenthesis_mistakes():
    # a hand-built expression: (12 - 7) * 3 + 4 = 19; ignoring parens: 12 - 21 + 4 = -5;
    # left to right without parens: ((12 - 7) * 3) + 4 = 19 (same), so -5 must show up.
    tree = arithmetic._BinOp("+", arithmetic._BinOp("*", arithmetic._BinOp(
        "-", arithmetic._Num(12), arithmetic._Num(7)), arithmetic._Num(3)), arithmetic._Num(4))
    toks = arithmetic._tokens(tree)
    assert arithmetic._render(toks) == "(12 - 7) * 3 + 4"
    assert arithmetic._eval_tree(tree) == 19
    assert arithmetic._eval_flat(toks, left_to_right=False) == -5
    src = ArithmeticTasks(2, num_distractors=8)
    ds = src.expression_distractors(np.random.default_rng(0), tree, toks, 19)
    assert "-5" in ds and "19" not in ds and len(ds) == 8


def test_arithmetic_verify_is_tolerant_to_formatting():
    src = ArithmeticTasks(2)
    t = Task("a/train/0", "Compute the value of 40 + 2.", "42", "arithmetic", ("41", "43", "-42"), ())
    for r in [" 42 ", "42", "+42", "42.0", "42.000", "42.", "$42$", "\\boxed{42}", "x = 42",
              "\\frac{84}{2}", "84/2"]:
        assert src.verify(t, r), r
    for r in ["43", "-42", "4 2 0", "", "forty-two", "42x", "41.9", "4.2e1x", "1/0"]:
        assert not src.verify(t, r), r
    neg = Task("a/train/1", "q", "-1234", "arithmetic", (), ())
    assert src.verify(neg, "-1,234") and src.verify(neg, "\u22121234") and not src.verify(neg, "1234")
