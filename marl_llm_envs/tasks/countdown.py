"""Countdown puzzles: reach a target from given numbers (``countdown``)."""

from __future__ import annotations

import operator
import re
from fractions import Fraction
from typing import Optional, Sequence

import numpy as np

from marl_llm_envs.fast_rng import choice_cdf, weighted_choice
from marl_llm_envs.tasks.arithmetic import _BinOp, _eval_tree, _leaf_variants, _Num, _render, _tokens
from marl_llm_envs.tasks.base import _MAX_RESAMPLE, Task, TaskSource, _check_fraction, _check_split, _task_id, split_of
from marl_llm_envs.tasks.verify import _parse_number, _strip_wrappers

_OPS = ("+", "-", "*")
_OP_CDF = choice_cdf([0.4, 0.3, 0.3])  # rng.choice(_OPS, p=[0.4, 0.3, 0.3]), drawn without its overhead

_CD_TOKEN_RE = re.compile(r"\s*(\d+|\\times|\\cdot|\\div|[-+*/()x\u00d7\u00f7])")
_CD_OPS = {"\\times": "*", "\\cdot": "*", "x": "*", "\u00d7": "*", "\\div": "/", "\u00f7": "/"}


def _cd_tokenize(text: str) -> Optional[list[str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _CD_TOKEN_RE.match(text, pos)
        if not m:
            return None
        tok = m.group(1)
        out.append(_CD_OPS.get(tok, tok))
        pos = m.end()
    return out


_FRACTION_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def _cd_evaluate(tokens: list[str]) -> Optional[tuple[Fraction, list[int]]]:
    """Evaluate ``+ - * /`` with parentheses exactly; returns (value, numbers used) or ``None``."""
    pos = 0
    used: list[int] = []

    def peek() -> Optional[str]:
        return tokens[pos] if pos < len(tokens) else None

    def atom() -> Fraction:
        nonlocal pos
        tok = peek()
        if tok is None:
            raise ValueError("unexpected end")
        if tok == "(":
            pos += 1
            v = binary(0)
            if peek() != ")":
                raise ValueError("missing )")
            pos += 1
            return v
        if tok.isdigit():
            pos += 1
            used.append(int(tok))
            return Fraction(int(tok))
        raise ValueError(f"unexpected {tok}")

    def binary(level: int) -> Fraction:
        """Level 0: a sum of level-1 terms (``+ -``); level 1: a product of atoms (``* /``), left to right."""
        nonlocal pos
        ops = ("+", "-") if level == 0 else ("*", "/")
        v = binary(1) if level == 0 else atom()
        while peek() in ops:
            op = tokens[pos]
            pos += 1
            w = binary(1) if level == 0 else atom()
            if op == "/" and w == 0:
                raise ZeroDivisionError
            v = _FRACTION_OPS[op](v, w)
        return v

    try:
        value = binary(0)
    except (ValueError, ZeroDivisionError, RecursionError):
        return None
    if pos != len(tokens):
        return None
    return value, used


class CountdownTasks(TaskSource):
    """Countdown-style puzzles: reach a target from given numbers.

    ``numbers`` (3..6) integers in 1..``max_number`` are drawn and combined by a
    random ``+ - *`` expression tree using each exactly once; its value is the
    target (kept in 1..999 and different from every given number).  The
    canonical answer is that expression; :meth:`verify` accepts ANY expression
    over ``+ - * /`` and parentheses that uses each given number at most once
    and evaluates exactly to the target (``"... = 24"`` suffixes allowed).

    Distractors are near misses (one operator or one number changed) that do
    not reach the target or use unavailable numbers.
    Features: ``[n_i / max_number]`` for the sorted numbers (zero padded to 6)
    followed by ``target / 1000``.
    """

    name = "countdown"
    _MAX_NUMBERS = 6

    def __init__(self, numbers: int = 4, max_number: int = 13, test_fraction: float = 0.1,
                 num_distractors: int = 3):
        if isinstance(numbers, bool) or int(numbers) != numbers or not 3 <= int(numbers) <= 6:
            raise ValueError(f"countdown numbers must be an integer in 3..6, got {numbers!r}")
        if not 2 <= int(max_number) <= 100:
            raise ValueError(f"countdown max_number must be in 2..100, got {max_number!r}")
        if int(num_distractors) < 3:
            raise ValueError("num_distractors must be >= 3")
        self.numbers = int(numbers)
        self.max_number = int(max_number)
        self.test_fraction = _check_fraction(test_fraction)
        self.num_distractors = int(num_distractors)
        self.feature_size = self._MAX_NUMBERS + 1

    def _tree_from(self, rng: np.random.Generator, leaves: list[int]):
        if len(leaves) == 1:
            return _Num(leaves[0])
        k = int(rng.integers(1, len(leaves)))
        op = weighted_choice(rng, _OPS, _OP_CDF)
        return _BinOp(op, self._tree_from(rng, leaves[:k]), self._tree_from(rng, leaves[k:]))

    @staticmethod
    def _parse_question(question: str) -> tuple[list[int], int]:
        m = re.search(r"numbers ([\d, ]+) \(each.*?equal to (\d+)\.", question, flags=re.S)
        if not m:
            raise ValueError("not a countdown question")
        return [int(x) for x in m.group(1).split(",")], int(m.group(2))

    def _check(self, numbers: Sequence[int], target: int, response: str) -> bool:
        text = _strip_wrappers(response)
        if len(text) > 300:
            return False
        if "=" in text:
            left, _, right = text.partition("=")
            right_v = _parse_number(right)
            if right_v is not None and right_v != target:
                return False
            text = left
        toks = _cd_tokenize(text)
        if not toks:
            return False
        res = _cd_evaluate(toks)
        if res is None:
            return False
        value, used = res
        pool = list(numbers)
        for u in used:
            if u not in pool:
                return False
            pool.remove(u)
        return value == target

    def sample(self, rng: np.random.Generator, split: str = "train") -> Task:
        _check_split(split)
        for _ in range(_MAX_RESAMPLE):
            nums = [int(x) for x in rng.integers(1, self.max_number + 1, size=self.numbers)]
            tree = self._tree_from(rng, nums)
            target = _eval_tree(tree)
            if not 1 <= target <= 999 or target in nums:
                continue
            shown = sorted(nums)
            question = (
                f"Using the numbers {', '.join(map(str, shown))} (each at most once) and the "
                f"operations +, -, *, / with parentheses, write an expression equal to {target}."
            )
            if split_of(question, self.test_fraction) != split:
                continue
            answer = _render(_tokens(tree))
            cands = [_eval_variant for _eval_variant in _op_variants_all(tree)]
            cands += _leaf_variants(tree, 1) + _leaf_variants(tree, -1)
            order = rng.permutation(len(cands))
            distractors: list[str] = []
            for i in order:
                text = _render(_tokens(cands[int(i)]))
                if text not in distractors and text != answer and not self._check(nums, target, text):
                    distractors.append(text)
                if len(distractors) == self.num_distractors:
                    break
            if len(distractors) < self.num_distractors:
                continue
            feats = [x / self.max_number for x in shown] + [0.0] * (self._MAX_NUMBERS - len(shown))
            return Task(
                task_id=_task_id(f"countdown-n{self.numbers}", split, question),
                question=question,
                answer=answer,
                source=self.name,
                distractors=tuple(distractors),
                features=tuple(float(x) for x in feats) + (target / 1000.0,),
            )
        raise RuntimeError(f"could not draw a {split} countdown puzzle")  # pragma: no cover

    def verify(self, task: Task, response: str) -> bool:
        try:
            numbers, target = self._parse_question(task.question)
            return self._check(numbers, target, str(response))
        except Exception:
            return False

    def spec(self) -> dict:
        return {
            "name": self.name,
            "numbers": self.numbers,
            "max_number": self.max_number,
            "test_fraction": self.test_fraction,
            "num_distractors": self.num_distractors,
        }


def _op_variants_all(node) -> list:
    """All trees with exactly one operator replaced by another of ``+ - *``."""
    if isinstance(node, _Num):
        return []
    out = [_BinOp(op, node.left, node.right) for op in ("+", "-", "*") if op != node.op]
    out += [_BinOp(node.op, l, node.right) for l in _op_variants_all(node.left)]
    out += [_BinOp(node.op, node.left, r) for r in _op_variants_all(node.right)]
    return out
