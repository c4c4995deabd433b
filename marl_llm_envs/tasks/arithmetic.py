"""Multi-step integer arithmetic (``arithmetic``) and the expression trees it shares with countdown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from marl_llm_envs.fast_rng import choice_cdf, uniform_choice, weighted_choice
from marl_llm_envs.tasks.base import _MAX_RESAMPLE, Task, TaskSource, _check_fraction, _check_split, _task_id, split_of
from marl_llm_envs.tasks.verify import _finite_unit, number_matches

_OPS = ("+", "-", "*")
_OP_CDF = choice_cdf([0.38, 0.38, 0.24])  # rng.choice(_OPS, p=[0.38, 0.38, 0.24]), drawn without its overhead

_PREC = {"+": 1, "-": 1, "*": 2}
_OP_SLOT = {"+": 2, "-": 3, "*": 4}    # an operator's place in its feature slot


@dataclass(frozen=True)
class _Num:
    value: int


@dataclass(frozen=True)
class _BinOp:
    op: str
    left: Any
    right: Any


def _apply(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    raise ValueError(f"unknown operator {op!r}")


def _eval_tree(node) -> int:
    if isinstance(node, _Num):
        return node.value
    return _apply(node.op, _eval_tree(node.left), _eval_tree(node.right))


def _tokens(node, parent_op: Optional[str] = None, is_right: bool = False) -> list[tuple[str, int]]:
    """Infix tokens with the minimal parentheses; negative literals are single num tokens."""
    if isinstance(node, _Num):
        return [("num", node.value)]
    inner = _tokens(node.left, node.op, False) + [("op", node.op)] + _tokens(node.right, node.op, True)
    need = False
    if parent_op is not None:
        if _PREC[node.op] < _PREC[parent_op]:
            need = True
        elif is_right and parent_op == "-" and _PREC[node.op] == _PREC[parent_op]:
            need = True
    return [("(", 0)] + inner + [(")", 0)] if need else inner


def _render(tokens: Sequence[tuple[str, int]]) -> str:
    out = []
    for kind, val in tokens:
        if kind == "num":
            out.append(f"(-{-val})" if val < 0 else str(val))
        elif kind == "op":
            out.append(f" {val} ")
        else:
            out.append(kind)
    return "".join(out)


def _eval_flat(tokens: Sequence[tuple[str, int]], left_to_right: bool) -> int:
    """Evaluate the token stream ignoring parentheses.

    ``left_to_right=True`` also ignores operator precedence (a classic mistake);
    otherwise ``*`` binds tighter than ``+``/``-``.
    """
    nums: list[int] = []
    ops: list[str] = []
    for kind, val in tokens:
        if kind == "num":
            nums.append(val)
        elif kind == "op":
            ops.append(val)  # type: ignore[arg-type]
    if left_to_right:
        acc = nums[0]
        for op, v in zip(ops, nums[1:]):
            acc = _apply(op, acc, v)
        return acc
    # collapse products first
    terms = [nums[0]]
    signs: list[str] = []
    for op, v in zip(ops, nums[1:]):
        if op == "*":
            terms[-1] = terms[-1] * v
        else:
            signs.append(op)
            terms.append(v)
    acc = terms[0]
    for op, v in zip(signs, terms[1:]):
        acc = _apply(op, acc, v)
    return acc


def _leaf_variants(node, delta: int) -> list:
    """All trees with exactly one leaf changed by ``delta``."""
    if isinstance(node, _Num):
        return [_Num(node.value + delta)]
    out = [_BinOp(node.op, l, node.right) for l in _leaf_variants(node.left, delta)]
    out += [_BinOp(node.op, node.left, r) for r in _leaf_variants(node.right, delta)]
    return out


def _op_variants(node) -> list:
    """All trees with exactly one ``+``/``-`` operator flipped."""
    if isinstance(node, _Num):
        return []
    flip = {"+": "-", "-": "+"}
    out = []
    if node.op in flip:
        out.append(_BinOp(flip[node.op], node.left, node.right))
    out += [_BinOp(node.op, l, node.right) for l in _op_variants(node.left)]
    out += [_BinOp(node.op, node.left, r) for r in _op_variants(node.right)]
    return out


_FLIP = {"+": "-", "-": "+"}


def _variant_values(node, delta: int) -> tuple[int, list[int], list[int]]:
    """``(value, op_values, leaf_values)`` of ``node``: its value, the values of :func:`_op_variants` (node)` and of
    :func:`_leaf_variants` (node, delta)`, in those functions' order, computed in one pass without building the
    variant trees (each variant differs from ``node`` along one path, so its value is the path's operators applied
    to the changed subtree's value and the unchanged siblings' values)."""
    if isinstance(node, _Num):
        v = node.value
        return v, [], [v + delta]
    op = node.op
    lv, lops, lleaf = _variant_values(node.left, delta)
    rv, rops, rleaf = _variant_values(node.right, delta)
    ops = [_apply(_FLIP[op], lv, rv)] if op in _FLIP else []
    ops += [_apply(op, x, rv) for x in lops]
    ops += [_apply(op, lv, x) for x in rops]
    leaf = [_apply(op, x, rv) for x in lleaf]
    leaf += [_apply(op, lv, x) for x in rleaf]
    return _apply(op, lv, rv), ops, leaf


class ArithmeticTasks(TaskSource):
    """Multi-step integer arithmetic with ``+ - *`` and parentheses.

    The expression is a random binary tree; it is rendered with the minimal
    parentheses and evaluated exactly from the tree.  Difficulty 1..5 sets the
    number of operations (2..6) and the operand range (up to 9, 20, 50, 99, 199;
    difficulties 4 and 5 also use negative operands, written ``(-7)``).

    Distractors are typical mistakes: evaluating left to right, ignoring the
    parentheses, flipping a sign, one operand off by one, off-by-one/ten results.

    Features: one slot per infix token (``max_tokens`` slots of 6 numbers:
    ``[is_number, value / max_operand, is_plus, is_minus, is_times, paren (+1 open / -1 close)]``),
    zero padded.
    """

    name = "arithmetic"
    _OPS = {1: 2, 2: 3, 3: 4, 4: 5, 5: 6}
    _MAX_OPERAND = {1: 9, 2: 20, 3: 50, 4: 99, 5: 199}
    _SLOT = 6

    def __init__(self, difficulty: int = 2, test_fraction: float = 0.1, num_distractors: int = 3):
        if isinstance(difficulty, bool) or int(difficulty) != difficulty or not 1 <= int(difficulty) <= 5:
            raise ValueError(f"arithmetic difficulty must be an integer in 1..5, got {difficulty!r}")
        if int(num_distractors) < 3:
            raise ValueError("num_distractors must be >= 3")
        self.difficulty = int(difficulty)
        self.test_fraction = _check_fraction(test_fraction)
        self.num_distractors = int(num_distractors)
        self.n_ops = self._OPS[self.difficulty]
        self.max_operand = self._MAX_OPERAND[self.difficulty]
        # numbers + operators + at most one pair of parentheses per non-root operator
        self.max_tokens = (2 * self.n_ops + 1) + 2 * (self.n_ops - 1)
        self.feature_size = self.max_tokens * self._SLOT

    # -- generation -------------------------------------------------------
    def _random_tree(self, rng: np.random.Generator, n_ops: int):
        if n_ops == 0:
            v = int(rng.integers(1, self.max_operand + 1))
            if self.difficulty >= 4 and rng.random() < 0.15:
                v = -v
            return _Num(v)
        n_left = int(rng.integers(0, n_ops))
        # multiplication is rarer so the results stay readable
        op = weighted_choice(rng, _OPS, _OP_CDF)
        left = self._random_tree(rng, n_left)
        right = self._random_tree(rng, n_ops - 1 - n_left)
        return _BinOp(op, left, right)

    # One expression, its distractors and its features: what sample() is made of, public for a source that composes
    # arithmetic expressions into bigger problems (CompositeTasks).
    def draw_expression(self, rng: np.random.Generator):
        """``(tree, tokens, text, value)`` of a random expression of this source's difficulty (never a problem whose
        value is one of its operands)."""
        for _ in range(_MAX_RESAMPLE):
            tree = self._random_tree(rng, self.n_ops)
            toks = _tokens(tree)
            expr = _render(toks)
            answer = _eval_tree(tree)
            # reject problems whose answer is literally one of the operands
            if answer in {v for k, v in toks if k == "num"}:
                continue
            return tree, toks, expr, answer
        raise RuntimeError("could not draw an arithmetic problem")  # pragma: no cover

    def expression_distractors(self, rng: np.random.Generator, tree, toks, answer: int) -> tuple[str, ...]:
        """``num_distractors`` wrong values: structural mistakes (precedence, parentheses, a wrong operator or
        operand) first, then near misses, each group in random order."""
        structural = [_eval_flat(toks, left_to_right=True), _eval_flat(toks, left_to_right=False)]
        _, op_values, leaf_values = _variant_values(tree, uniform_choice(rng, (-1, 1)))
        structural += op_values       # = [_eval_tree(t) for t in _op_variants(tree)]
        structural += leaf_values     # = [_eval_tree(t) for t in _leaf_variants(tree, delta)]
        if answer != 0:
            structural.append(-answer)
        simple = [answer + 1, answer - 1, answer + 10, answer - 10, answer + 2, answer - 2]
        out: list[int] = []
        for group in (structural, simple):
            for i in rng.permutation(len(group)).tolist():
                v = int(group[i])
                if v != answer and v not in out:
                    out.append(v)
        return tuple(str(v) for v in out[: self.num_distractors])

    def expression_features(self, toks: Sequence[tuple[str, int]]) -> tuple[float, ...]:
        """The tokens one-hot per slot (number with its scaled value, operator, parenthesis), flattened."""
        slot = self._SLOT
        feats = [0.0] * (self.max_tokens * slot)
        for i, (kind, val) in enumerate(toks[: self.max_tokens]):
            at = i * slot
            if kind == "num":
                feats[at] = 1.0
                feats[at + 1] = _finite_unit(val / self.max_operand)
            elif kind == "op":
                feats[at + _OP_SLOT[val]] = 1.0  # type: ignore[index]
            elif kind == "(":
                feats[at + 5] = 1.0
            else:
                feats[at + 5] = -1.0
        return tuple(feats)

    def expression_task(self, rng: np.random.Generator, split: str, tree, toks, expr: str, answer: int) -> Task:
        """The task of a drawn expression (:meth:`draw_expression`'s four values): "Compute the value of ...", its
        distractors drawn from ``rng``, its features."""
        question = f"Compute the value of {expr}."
        return Task(
            task_id=_task_id(f"arithmetic-d{self.difficulty}", split, question),
            question=question,
            answer=str(answer),
            source=self.name,
            distractors=self.expression_distractors(rng, tree, toks, answer),
            features=self.expression_features(toks),
        )

    def sample(self, rng: np.random.Generator, split: str = "train") -> Task:
        _check_split(split)
        for _ in range(_MAX_RESAMPLE):
            drawn = self.draw_expression(rng)
            if split_of(f"Compute the value of {drawn[2]}.", self.test_fraction) != split:
                continue
            return self.expression_task(rng, split, *drawn)
        raise RuntimeError(f"could not draw a {split} arithmetic problem")  # pragma: no cover

    def verify(self, task: Task, response: str) -> bool:
        return number_matches(response, task.answer)

    def spec(self) -> dict:
        return {
            "name": self.name,
            "difficulty": self.difficulty,
            "test_fraction": self.test_fraction,
            "num_distractors": self.num_distractors,
        }
