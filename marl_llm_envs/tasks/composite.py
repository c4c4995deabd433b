"""Composite problems (``composite``): independent parts whose results combine into the answer.

A composite task carries its parts in ``Task.parts`` (each a full :class:`~marl_llm_envs.tasks.base.Task` with its
own question, answer, distractors and features) and the formula that combines them in ``Task.combine``: an
expression over the part names ``a``, ``b``, ``c``, ... with ``+ - * /``, unary minus, integers and parentheses,
e.g. ``"a + b * c"``. :func:`combine_parts` evaluates it exactly (fractions) on part results given as text.

``composite`` (:class:`CompositeTasks`) draws ``parts`` (2..6) arithmetic sub-problems of the arithmetic source
(``difficulty`` 1..5, the arithmetic source's knob) and a random ``+ - *`` formula over them:

    Compute a + b * c, where
      a = 3 + 4 * 2
      b = (12 - 7) * 3
      c = 6 - 9

Part ``a``'s own question is the arithmetic source's question for it (``"Compute the value of 3 + 4 * 2."``), so
a sub-agent can be given one part alone. The answer is the formula's value on the parts' answers; the verifier
accepts any text that parses as that number (as the arithmetic verifier does). Distractors are the formula's value
with one part replaced by one of that part's distractors (the mistake a wrong sub-result causes), then near misses.
Train/test: the SHA-256 hash of the whole question, as for every source. Features: the parts' features (``parts`` x
the arithmetic source's feature size), then the formula's tokens (6 numbers per token, as in the arithmetic source,
a part name ``a``, ``b``, ... encoded as (index + 1) / parts).

Knights-and-knaves and countdown parts are not offered: their results (an assignment, an expression) do not combine
into one checkable answer by a formula. Local composites come from ``jsonl:``/``parquet:`` files whose records have
a ``parts`` field (see :class:`~marl_llm_envs.tasks.datasets.DatasetTasks`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Optional, Sequence

import numpy as np

from marl_llm_envs.fast_rng import choice_cdf, weighted_choice
from marl_llm_envs.tasks.arithmetic import ArithmeticTasks, _apply, _BinOp, _Num, _tokens
from marl_llm_envs.tasks.base import _MAX_RESAMPLE, Task, TaskSource, _check_fraction, _check_split, _task_id, split_of
from marl_llm_envs.tasks.verify import _finite_unit, _parse_number

_OPS = ("+", "-", "*")
_OP_CDF = choice_cdf([0.4, 0.3, 0.3])  # rng.choice(_OPS, p=[0.4, 0.3, 0.3]), drawn without its overhead

PART_NAMES = "abcdefgh"
MAX_FORMULA_CHARS = 200
_MAX_DEPTH = 16


def _formula_tokens(formula: str) -> Optional[list]:
    """Tokens of a formula in one left-to-right scan: ints, part names (one letter), operators, parentheses.
    ``None`` on any other character, a longer word, an over-long formula or parentheses nested too deep."""
    if not isinstance(formula, str) or len(formula) > MAX_FORMULA_CHARS:
        return None
    out: list = []
    i, n, depth = 0, len(formula), 0
    while i < n:
        c = formula[i]
        if c in " \t":
            i += 1
        elif c.isdigit() and c.isascii():
            j = i
            while j < n and formula[j].isdigit() and formula[j].isascii():
                j += 1
            out.append(int(formula[i:j]))
            i = j
        elif c in PART_NAMES:
            if i + 1 < n and formula[i + 1].isalpha():
                return None
            out.append(c)
            i += 1
        elif c in "+-*/()":
            depth += c == "("
            if depth > _MAX_DEPTH:
                return None
            out.append(("op", c))
            i += 1
        else:
            return None
    return out


def _parse_formula(tokens: list):
    """A tree of nested tuples from formula tokens (recursive descent; the depth is bounded by the tokenizer)."""
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def atom():
        nonlocal pos
        tok = peek()
        if tok == ("op", "-"):
            pos += 1
            return ("neg", atom())
        if tok == ("op", "("):
            pos += 1
            node = expr()
            if peek() != ("op", ")"):
                raise ValueError("missing )")
            pos += 1
            return node
        if isinstance(tok, (int, str)):
            pos += 1
            return tok
        raise ValueError("expected a number, a part name or (")

    def binary(sub, ops):
        nonlocal pos
        node = sub()
        while isinstance(peek(), tuple) and peek()[1] in ops:
            op = tokens[pos][1]
            pos += 1
            node = (op, node, sub())
        return node

    def term():
        return binary(atom, "*/")

    def expr():
        return binary(term, "+-")

    tree = expr()
    if pos != len(tokens):
        raise ValueError("unexpected token")
    return tree


def _evaluate(node, values: Mapping[str, Fraction]) -> Fraction:
    if isinstance(node, int):
        return Fraction(node)
    if isinstance(node, str):
        return values[node]
    if node[0] == "neg":
        return -_evaluate(node[1], values)
    op, left, right = node
    a, b = _evaluate(left, values), _evaluate(right, values)
    return a / b if op == "/" else _apply(op, a, b)  # a ZeroDivisionError is caught by the caller


def check_formula(formula: str, n_parts: int) -> str | None:
    """Why ``formula`` is not a valid combining formula over ``n_parts`` parts, or ``None`` when it is."""
    tokens = _formula_tokens(formula)
    if not tokens:
        return f"not a formula over the part names {PART_NAMES[:n_parts]} (at most {MAX_FORMULA_CHARS} characters)"
    bad = sorted({t for t in tokens if isinstance(t, str) and PART_NAMES.index(t) >= n_parts})
    if bad:
        return f"names {bad} are not parts (there are {n_parts}: {', '.join(PART_NAMES[:n_parts])})"
    try:
        _parse_formula(tokens)
    except ValueError as exc:
        return f"does not parse ({exc})"
    return None


def format_value(value: Fraction) -> str:
    """A number as an answer string: ``"42"``, ``"-3"`` or ``"7/2"``."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def evaluate_formula(formula: str, values: Mapping[str, Fraction]) -> Optional[Fraction]:
    """The exact value of ``formula`` with the part names bound to ``values``; ``None`` when it does not parse, names
    a missing part or divides by zero."""
    tokens = _formula_tokens(formula)
    if not tokens:
        return None
    try:
        return _evaluate(_parse_formula(tokens), values)
    except (ValueError, KeyError, ZeroDivisionError):
        return None


def combine_parts(task: Task, results: Sequence[Optional[str]]) -> Optional[str]:
    """The answer that part results (one text per part, in order) give under ``task.combine``, as an answer
    string; ``None`` when the task has no formula, a result is missing or is not a number, or the formula fails."""
    if not task.combine or len(results) != len(task.parts):
        return None
    values = {}
    for name, text in zip(PART_NAMES, results):
        number = None if text is None else _parse_number(str(text)[:200])
        if number is None:
            return None
        values[name] = number
    value = evaluate_formula(task.combine, values)
    return None if value is None else format_value(value)


class CompositeTasks(TaskSource):
    """Composite arithmetic: ``parts`` arithmetic sub-problems combined by a random ``+ - *`` formula (see the module
    docstring). Knobs: ``parts`` (2..6), ``difficulty`` (1..5, of each part), ``test_fraction``,
    ``num_distractors``."""

    name = "composite"
    _SLOT = 6

    def __init__(self, parts: int = 3, difficulty: int = 1, test_fraction: float = 0.1, num_distractors: int = 3):
        if isinstance(parts, bool) or int(parts) != parts or not 2 <= int(parts) <= 6:
            raise ValueError(f"composite parts must be an integer in 2..6, got {parts!r}")
        if int(num_distractors) < 3:
            raise ValueError("num_distractors must be >= 3")
        self.parts = int(parts)
        self.part_source = ArithmeticTasks(difficulty, test_fraction, num_distractors)
        self.difficulty = self.part_source.difficulty
        self.test_fraction = _check_fraction(test_fraction)
        self.num_distractors = int(num_distractors)
        self.max_parts = self.parts
        self.part_feature_size = self.part_source.feature_size
        self.max_tokens = (2 * self.parts - 1) + 2 * (self.parts - 2)
        self.feature_size = self.parts * self.part_feature_size + self.max_tokens * self._SLOT

    def _formula_tree(self, rng: np.random.Generator, lo: int, hi: int):
        """A random ``+ - *`` tree over the part indices ``lo..hi-1``, in order."""
        if hi - lo == 1:
            return _Num(lo)
        k = int(rng.integers(lo + 1, hi))
        op = weighted_choice(rng, _OPS, _OP_CDF)
        return _BinOp(op, self._formula_tree(rng, lo, k), self._formula_tree(rng, k, hi))

    def _features(self, parts: Sequence[Task], formula_tokens) -> tuple[float, ...]:
        feats = [x for p in parts for x in p.features]
        slots = np.zeros((self.max_tokens, self._SLOT), dtype=np.float64)
        for i, (kind, val) in enumerate(formula_tokens[: self.max_tokens]):
            if kind == "num":
                slots[i, 0], slots[i, 1] = 1.0, _finite_unit((val + 1) / self.parts)
            elif kind == "op":
                slots[i, {"+": 2, "-": 3, "*": 4}[val]] = 1.0
            else:
                slots[i, 5] = 1.0 if kind == "(" else -1.0
        return tuple(float(x) for x in feats) + tuple(float(x) for x in slots.ravel())

    def _distractors(self, rng: np.random.Generator, formula: str, parts: Sequence[Task], answer: int):
        truth = {PART_NAMES[i]: Fraction(int(p.answer)) for i, p in enumerate(parts)}
        swapped = []
        for i, p in enumerate(parts):
            for wrong in p.distractors:
                value = evaluate_formula(formula, {**truth, PART_NAMES[i]: Fraction(int(wrong))})
                if value is not None:
                    swapped.append(int(value))
        simple = [answer + 1, answer - 1, answer + 10, answer - 10, answer + 2, answer - 2]
        out: list[int] = []
        for group in (swapped, simple):
            for i in rng.permutation(len(group)):
                v = group[int(i)]
                if v != answer and v not in out:
                    out.append(v)
        return tuple(str(v) for v in out[: self.num_distractors])

    def sample(self, rng: np.random.Generator, split: str = "train") -> Task:
        _check_split(split)
        arithmetic = self.part_source
        for _ in range(_MAX_RESAMPLE):
            tree = self._formula_tree(rng, 0, self.parts)
            formula_tokens = _tokens(tree)
            formula = "".join(PART_NAMES[v] if k == "num" else f" {v} " if k == "op" else k
                              for k, v in formula_tokens)
            drawn = [arithmetic.draw_expression(rng) for _ in range(self.parts)]
            lines = [f"Compute {formula}, where"]
            lines += [f"  {PART_NAMES[i]} = {expr}" for i, (_, _, expr, _) in enumerate(drawn)]
            question = "\n".join(lines)
            if split_of(question, self.test_fraction) != split:
                continue
            parts = [arithmetic.expression_task(rng, split, *d) for d in drawn]
            answer = int(evaluate_formula(formula, {PART_NAMES[i]: Fraction(v) for i, (*_, v) in enumerate(drawn)}))
            return Task(
                task_id=_task_id(f"composite-p{self.parts}-d{self.difficulty}", split, question),
                question=question,
                answer=str(answer),
                source=self.name,
                distractors=self._distractors(rng, formula, parts, answer),
                features=self._features(parts, formula_tokens),
                parts=tuple(parts),
                combine=formula,
            )
        raise RuntimeError(f"could not draw a {split} composite problem")  # pragma: no cover

    verify = ArithmeticTasks.verify         # the answer is an integer, checked as an arithmetic one

    def spec(self) -> dict:
        return {
            "name": self.name,
            "parts": self.parts,
            "difficulty": self.difficulty,
            "test_fraction": self.test_fraction,
            "num_distractors": self.num_distractors,
        }
