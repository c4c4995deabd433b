"""Problem sources with exact verifiers for the orchestration environments.

The orchestration environments (``think_solve-v0``, ``voting-v0``) need a
stream of problems with a known answer, an exact verifier for the solver's
``\\boxed{...}`` content, a few plausible wrong answers (for voting and for
scripted "wrong" agents) and a fixed-length numeric encoding of each question
(for small MLP policies).  This module provides them.

Sources
-------
``arithmetic``  (:class:`ArithmeticTasks`)
    Multi-step integer expressions with ``+ - *`` and parentheses, built as an
    expression tree and evaluated exactly (no ``eval``).  ``difficulty`` 1..5
    raises the number of operations and the operand size.

``knights_knaves``  (:class:`KnightsKnavesTasks`)
    Knights (always truthful) and knaves (always lying) puzzles with 2..4
    inhabitants; only puzzles with exactly one consistent assignment (checked
    by brute force) are emitted.  Canonical answer: ``"Alice: knight, Bob: knave"``
    in the order the inhabitants are introduced.

``countdown``  (:class:`CountdownTasks`)
    Reach a target number from 3..6 given numbers with ``+ - * /``; any
    correct expression is accepted (exact rational evaluation, own parser).

``jsonl`` / ``parquet``  (:class:`DatasetTasks`)
    Local GSM8K-style (``"... #### 72"``) or MATH-style (``\\boxed{...}``)
    datasets.  Verification uses ``math_verify`` (``pip install math-verify``)
    with a normalised string / number fallback.  Parquet needs ``pyarrow``.

Spec strings accepted by :func:`make_task_source`
-------------------------------------------------
* ``"arithmetic"``, ``"arithmetic:difficulty=3"``,
  ``"arithmetic:difficulty=3,test_fraction=0.2"``
* ``"knights_knaves"``, ``"knights_knaves:people=3"`` (``knights-knaves`` works too)
* ``"countdown"``, ``"countdown:numbers=5,max_number=20"``
* ``"jsonl:/path/to/file.jsonl"``, ``"parquet:/path/to/file.parquet"``
  (everything after the first colon is the path), optionally with parameters
  after a ``?``: ``"jsonl:/data/math.jsonl?question_field=problem&answer_field=solution"``,
  or the explicit form ``"jsonl:path=/data/x.jsonl,split_field=split"``
* a ``dict`` as returned by :meth:`TaskSource.spec`, e.g.
  ``{"name": "arithmetic", "difficulty": 3, "test_fraction": 0.1}``
* a :class:`TaskSource` instance (returned unchanged)

Train/test splits
-----------------
Every problem belongs to exactly one split, decided by a SHA-256 hash of its
question text (:func:`split_of`, about ``test_fraction`` = 10% test).  The
procedural sources resample until the drawn problem lies in the requested
split; datasets may override the hash with a ``split_field``.  All randomness
comes from the ``numpy.random.Generator`` passed to ``sample``; the same
generator state and split always give the same task.
"""

from __future__ import annotations

import abc
import difflib
import hashlib
import importlib.util
import inspect
import itertools
import json
import os
import re
import string
import threading
import zlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence

import numpy as np

from marl_llm_envs.text import find_boxed as extract_boxed
from marl_llm_envs.text import printable as to_printable_ascii

__all__ = [
    "Task",
    "TaskSource",
    "ArithmeticTasks",
    "KnightsKnavesTasks",
    "CountdownTasks",
    "DatasetTasks",
    "make_task_source",
    "split_of",
    "to_printable_ascii",
    "answer_key",
    "extract_boxed",
    "extract_dataset_answer",
    "SPLITS",
]

SPLITS = ("train", "test")
_PRINTABLE = frozenset(string.printable)
_MAX_RESAMPLE = 2000


# --------------------------------------------------------------------------
# Core types
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One problem with its canonical answer.

    Attributes:
        task_id: stable id ``"<source-tag>/<split>/<12 hex digits of sha256(question)>"``,
            unique per distinct question.
        question: the problem text, printable ASCII only, without the answer.
        answer: canonical answer string (e.g. ``"42"``, ``"Alice: knight, Bob: knave"``).
        source: source name (``"arithmetic"``, ``"knights_knaves"``, ``"jsonl"``, ``"parquet"``).
        distractors: at least three plausible wrong answers, distinct from each
            other and from the answer under the source's normalisation.
        features: fixed-length numeric encoding of the question
            (length ``source.feature_size``), values in ``[-1, 1]``.
    """

    task_id: str
    question: str
    answer: str
    source: str
    distractors: tuple[str, ...]
    features: tuple[float, ...]


class TaskSource(abc.ABC):
    """A sampler of :class:`Task` objects plus an exact verifier.

    Subclasses set ``name`` and ``feature_size`` and implement
    :meth:`sample`, :meth:`verify` and :meth:`spec`.
    """

    name: str = "abstract"
    feature_size: int = 0

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator, split: str = "train") -> Task:
        """Draw one task of ``split`` (``"train"`` or ``"test"``) using only ``rng``."""

    @abc.abstractmethod
    def verify(self, task: Task, response: str) -> bool:
        """Whether ``response`` (the raw text inside ``\\boxed{...}``) answers ``task``.

        Never raises on arbitrary strings; returns ``False`` instead.
        """

    @abc.abstractmethod
    def spec(self) -> dict:
        """JSON-serialisable description; ``make_task_source(spec)`` rebuilds the source."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.spec().items() if k != "name")
        return f"{type(self).__name__}({params})"


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def _check_fraction(test_fraction: float) -> float:
    test_fraction = float(test_fraction)
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    return test_fraction


def split_of(question: str, test_fraction: float = 0.1) -> str:
    """Split (``"train"``/``"test"``) of a question, from a stable SHA-256 hash of its text."""
    digest = hashlib.sha256(question.encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    return "test" if u < test_fraction else "train"


_NUMBER_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_THOUSANDS_RE = re.compile(r"^([+-]?)(\d{1,3}(?:,\d{3})+)(\.\d+)?$")
_FRAC_RE = re.compile(r"^([+-]?)\\[dt]?frac\{([+-]?\d+)\}\{([+-]?\d+)\}$")
_SLASH_RE = re.compile(r"^([+-]?\d+)/([+-]?\d+)$")


def _task_id(tag: str, split: str, question: str) -> str:
    return f"{tag}/{split}/{hashlib.sha256(question.encode('utf-8')).hexdigest()[:12]}"


_TEXT_COMMANDS = ("\\text{", "\\textbf{", "\\mathrm{", "\\mbox{")
_MAX_EXPONENT = 1000  # "1e999999999" would build a billion-digit integer: larger exponents are not read as numbers


def _strip_wrappers(text: str) -> str:
    """Remove the usual decorations around a final answer (``$``, ``\\boxed{}``, trailing period)."""
    s = str(text).strip()
    for _ in range(4):
        prev = s
        s = s.strip()
        if s.startswith("$") and s.endswith("$") and len(s) >= 2:
            s = s.strip("$")
        if s.startswith("\\(") and s.endswith("\\)"):
            s = s[2:-2]
        if s.startswith("\\[") and s.endswith("\\]"):
            s = s[2:-2]
        if s.startswith(("\\boxed", "\\fbox")) and s.endswith("}"):
            boxed = extract_boxed(s)
            s = s if boxed is None else boxed
        if s.startswith(_TEXT_COMMANDS) and s.endswith("}"):
            s = s[s.index("{") + 1:-1]
        s = s.strip().rstrip(".").strip()
        if s == prev:
            break
    return s


def _parse_number(text: str) -> Optional[Fraction]:
    """Parse a plain number (``"+42"``, ``"42.0"``, ``"1,234"``, ``"-3/4"``, ``"\\frac{1}{2}"``) or ``None``."""
    s = _strip_wrappers(text)
    if len(s) > 200:
        return None
    s = s.replace("\u2212", "-").replace("\\!", "").replace("\\,", "")
    s = re.sub(r"^(?:[a-zA-Z]\s*)?=\s*", "", s)  # "x = 42", "= 42"
    s = re.sub(r"\s+", "", s)
    m = _THOUSANDS_RE.match(s)
    if m:
        s = m.group(1) + m.group(2).replace(",", "") + (m.group(3) or "")
    if _NUMBER_RE.match(s):
        mantissa, e, exponent = s.lower().partition("e")
        if e and abs(int(exponent)) > _MAX_EXPONENT:
            return None
        return Fraction(s.rstrip(".") if s.endswith(".") else s)
    m = _FRAC_RE.match(s) or _SLASH_RE.match(s)
    if m:
        sign, num, den = m.groups() if len(m.groups()) == 3 else ("", *m.groups())
        if int(den) == 0:
            return None
        value = Fraction(int(num), int(den))
        return -value if sign == "-" else value
    return None


def _normalise_text(text: str) -> str:
    """Loose string normal form for answers: no wrappers, no whitespace, lower case."""
    s = _strip_wrappers(text)
    s = s.replace("\\left", "").replace("\\right", "").replace("\\!", "").replace("\\,", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\s+", "", s).lower()
    return s


def answer_key(text: str) -> str:
    """Key that decides whether two answers are "the same": equal numbers ("42", "+42", "42.0", "84/2") share a key,
    other answers compare as loose text (no wrappers, spaces or case). Used to deduplicate distractors and to group
    ballots in voting-v0."""
    num = _parse_number(text)
    if num is not None:
        return f"#num:{num}"
    return _normalise_text(text)


def _finite_unit(x: float) -> float:
    """Clip into [-1, 1]."""
    return float(max(-1.0, min(1.0, x)))


# --------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------

_PREC = {"+": 1, "-": 1, "*": 2}


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
        op = str(rng.choice(["+", "-", "*"], p=[0.38, 0.38, 0.24]))
        left = self._random_tree(rng, n_left)
        right = self._random_tree(rng, n_ops - 1 - n_left)
        return _BinOp(op, left, right)

    def _draw(self, rng: np.random.Generator):
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

    def _distractors(self, rng: np.random.Generator, tree, toks, answer: int) -> tuple[str, ...]:
        structural = [_eval_flat(toks, left_to_right=True), _eval_flat(toks, left_to_right=False)]
        structural += [_eval_tree(t) for t in _op_variants(tree)]
        structural += [_eval_tree(t) for t in _leaf_variants(tree, int(rng.choice([-1, 1])))]
        if answer != 0:
            structural.append(-answer)
        simple = [answer + 1, answer - 1, answer + 10, answer - 10, answer + 2, answer - 2]
        out: list[int] = []
        for group in (structural, simple):
            order = rng.permutation(len(group))
            for i in order:
                v = int(group[int(i)])
                if v != answer and v not in out:
                    out.append(v)
        return tuple(str(v) for v in out[: self.num_distractors])

    def _features(self, toks: Sequence[tuple[str, int]]) -> tuple[float, ...]:
        feats = np.zeros((self.max_tokens, self._SLOT), dtype=np.float64)
        for i, (kind, val) in enumerate(toks[: self.max_tokens]):
            if kind == "num":
                feats[i, 0] = 1.0
                feats[i, 1] = _finite_unit(val / self.max_operand)
            elif kind == "op":
                feats[i, {"+": 2, "-": 3, "*": 4}[val]] = 1.0  # type: ignore[index]
            elif kind == "(":
                feats[i, 5] = 1.0
            else:
                feats[i, 5] = -1.0
        return tuple(float(x) for x in feats.ravel())

    def sample(self, rng: np.random.Generator, split: str = "train") -> Task:
        _check_split(split)
        for _ in range(_MAX_RESAMPLE):
            tree, toks, expr, answer = self._draw(rng)
            question = f"Compute the value of {expr}."
            if split_of(question, self.test_fraction) != split:
                continue
            return Task(
                task_id=_task_id(f"arithmetic-d{self.difficulty}", split, question),
                question=question,
                answer=str(answer),
                source=self.name,
                distractors=self._distractors(rng, tree, toks, answer),
                features=self._features(toks),
            )
        raise RuntimeError(f"could not draw a {split} arithmetic problem")  # pragma: no cover

    def verify(self, task: Task, response: str) -> bool:
        try:
            got = _parse_number(response)
            return got is not None and got == Fraction(int(task.answer))
        except Exception:
            return False

    def spec(self) -> dict:
        return {
            "name": self.name,
            "difficulty": self.difficulty,
            "test_fraction": self.test_fraction,
            "num_distractors": self.num_distractors,
        }


# --------------------------------------------------------------------------
# Knights and knaves
# --------------------------------------------------------------------------

_KK_NAMES = (
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Henry", "Iris", "Jack",
    "Kate", "Leo", "Mia", "Noah", "Olga", "Paul", "Quinn", "Rosa", "Sam", "Tina",
    "Uma", "Victor", "Wendy", "Xavier", "Yara", "Zack",
)
_KK_TYPES = ("is", "and", "or", "same", "diff", "count")
_NUM_WORDS = {0: "none", 1: "exactly one", 2: "exactly two", 3: "exactly three", 4: "exactly four"}


@dataclass(frozen=True)
class _Statement:
    """A statement by ``speaker``.  ``kinds`` are True for knight, False for knave."""

    kind: str
    speaker: int
    targets: tuple[int, ...] = ()
    kinds: tuple[bool, ...] = ()
    count: int = 0

    def holds(self, assignment: Sequence[bool]) -> bool:
        if self.kind == "is":
            return assignment[self.targets[0]] == self.kinds[0]
        if self.kind == "and":
            return all(assignment[t] == k for t, k in zip(self.targets, self.kinds))
        if self.kind == "or":
            return any(assignment[t] == k for t, k in zip(self.targets, self.kinds))
        if self.kind == "same":
            return assignment[self.targets[0]] == assignment[self.targets[1]]
        if self.kind == "diff":
            return assignment[self.targets[0]] != assignment[self.targets[1]]
        if self.kind == "count":
            return sum(bool(a) for a in assignment) == self.count
        raise ValueError(self.kind)

    def _atom(self, names: Sequence[str], target: int, knight: bool) -> str:
        word = "knight" if knight else "knave"
        if target == self.speaker:
            return f"I am a {word}"
        return f"{names[target]} is a {word}"

    def text(self, names: Sequence[str]) -> str:
        if self.kind == "is":
            return self._atom(names, self.targets[0], self.kinds[0])
        if self.kind in ("and", "or"):
            a = self._atom(names, self.targets[0], self.kinds[0])
            b = self._atom(names, self.targets[1], self.kinds[1])
            return f"{a} {self.kind} {b}"
        if self.kind in ("same", "diff"):
            t0, t1 = self.targets
            if t1 == self.speaker:
                t0, t1 = t1, t0
            who = f"{names[t1]} and I" if t0 == self.speaker else f"{names[t0]} and {names[t1]}"
            return f"{who} are {'the same kind' if self.kind == 'same' else 'of different kinds'}"
        if self.kind == "count":
            if self.count == 0:
                return "None of us is a knight"
            verb = "is a knight" if self.count == 1 else "are knights"
            return f"{_NUM_WORDS[self.count].capitalize()} of us {verb}"
        raise ValueError(self.kind)


def _kk_solutions(statements: Sequence[_Statement], n: int) -> list[tuple[bool, ...]]:
    """All assignments consistent with the statements (brute force over 2^n)."""
    sols = []
    for assignment in itertools.product((True, False), repeat=n):
        if all(assignment[s.speaker] == s.holds(assignment) for s in statements):
            sols.append(assignment)
    return sols


def _kk_answer(names: Sequence[str], assignment: Sequence[bool]) -> str:
    return ", ".join(f"{nm}: {'knight' if k else 'knave'}" for nm, k in zip(names, assignment))


_KIND_WORDS = {
    "knight": True, "knights": True, "truthteller": True, "truthtellers": True,
    "knave": False, "knaves": False, "liar": False, "liars": False,
}


def _parse_kk_response(response: str, names: Sequence[str]) -> Optional[tuple[bool, ...]]:
    """Parse a free-form assignment such as ``"alice: knight; bob: knave"``,
    ``"Alice is a knight and Bob is a knave"``, ``"Alice and Bob are knights"``
    or ``"knights: Alice; knaves: Bob"``.  Returns ``None`` if incomplete or contradictory."""
    text = _strip_wrappers(response).lower().replace("truth-teller", "truthteller")
    words = re.findall(r"[a-z]+", text)
    index = {nm.lower(): i for i, nm in enumerate(names)}
    result: dict[int, bool] = {}

    def assign(i: int, k: bool) -> bool:
        if i in result and result[i] != k:
            return False
        result[i] = k
        return True

    relevant = [w for w in words if w in index or w in _KIND_WORDS]
    if not relevant:
        return None
    if relevant[0] in _KIND_WORDS:
        # kind-first form: "knights: alice, carol; knaves: bob"
        current: Optional[bool] = None
        for w in relevant:
            if w in _KIND_WORDS:
                current = _KIND_WORDS[w]
            elif not assign(index[w], bool(current)):
                return None
    else:
        pending: list[int] = []
        negate = False
        for w in words:
            if w in index:
                if not pending:
                    negate = False
                pending.append(index[w])
            elif w in ("not", "isn", "aren", "never") and pending:
                negate = True
            elif w in _KIND_WORDS and pending:
                k = _KIND_WORDS[w] != negate
                for i in pending:
                    if not assign(i, k):
                        return None
                pending = []
                negate = False
        if pending:
            return None
    if len(result) != len(names):
        return None
    return tuple(result[i] for i in range(len(names)))


class KnightsKnavesTasks(TaskSource):
    """Knights-and-knaves logic puzzles with a unique solution.

    Each of ``people`` (2..4) inhabitants makes one statement of one of the
    forms "Y is a knight/knave", "A is a ... and B is a ...", "A is a ... or
    B is a ...", "A and B are the same kind / of different kinds", "Exactly k
    of us are knights".  Puzzles are kept only if exactly one knight/knave
    assignment is consistent (brute force over all 2^n assignments).

    Canonical answer: ``"Alice: knight, Bob: knave"`` in the order of
    introduction; :meth:`verify` accepts any case, order, separator
    (``,``/``;``/``and``/newlines) and sentence forms like "Alice is a knight".

    Features: ``[people / 4]`` followed by one slot per speaker:
    statement type one-hot (6), two (target one-hot, kind +-1) pairs, and
    ``count / people``.
    """

    name = "knights_knaves"

    def __init__(self, people: int = 2, test_fraction: float = 0.1, num_distractors: int = 3):
        if isinstance(people, bool) or int(people) != people or not 2 <= int(people) <= 4:
            raise ValueError(f"knights_knaves people must be an integer in 2..4, got {people!r}")
        if int(num_distractors) < 3:
            raise ValueError("num_distractors must be >= 3")
        self.people = int(people)
        self.test_fraction = _check_fraction(test_fraction)
        self.num_distractors = int(num_distractors)
        if self.num_distractors > 2**self.people - 1:
            raise ValueError(
                f"only {2**self.people - 1} wrong assignments exist for {self.people} people"
            )
        self._slot = len(_KK_TYPES) + 2 * (self.people + 1) + 1
        self.feature_size = 1 + self.people * self._slot

    def _random_statement(self, rng: np.random.Generator, speaker: int) -> _Statement:
        n = self.people
        others = [i for i in range(n) if i != speaker]
        kind = str(rng.choice(_KK_TYPES, p=[0.3, 0.15, 0.2, 0.15, 0.1, 0.1]))
        if kind == "is":
            return _Statement("is", speaker, (int(rng.choice(others)),), (bool(rng.random() < 0.5),))
        if kind in ("and", "or"):
            pair = rng.choice(n, size=2, replace=False)
            ks = tuple(bool(rng.random() < 0.5) for _ in range(2))
            return _Statement(kind, speaker, tuple(int(t) for t in sorted(pair)), ks)
        if kind in ("same", "diff"):
            pair = rng.choice(n, size=2, replace=False)
            return _Statement(kind, speaker, tuple(int(t) for t in sorted(pair)))
        return _Statement("count", speaker, count=int(rng.integers(0, n + 1)))

    def _features(self, statements: Sequence[_Statement]) -> tuple[float, ...]:
        n = self.people
        feats = [n / 4.0]
        for s in statements:
            slot = [0.0] * self._slot
            slot[_KK_TYPES.index(s.kind)] = 1.0
            base = len(_KK_TYPES)
            for j, t in enumerate(s.targets[:2]):
                slot[base + j * (n + 1) + t] = 1.0
                if s.kinds:
                    slot[base + j * (n + 1) + n] = 1.0 if s.kinds[j] else -1.0
            if s.kind == "count":
                slot[-1] = s.count / n
            feats.extend(slot)
        return tuple(float(x) for x in feats)

    def _draw(self, rng: np.random.Generator):
        n = self.people
        for _ in range(_MAX_RESAMPLE):
            name_idx = rng.choice(len(_KK_NAMES), size=n, replace=False)
            names = [_KK_NAMES[int(i)] for i in name_idx]
            statements = [self._random_statement(rng, s) for s in range(n)]
            sols = _kk_solutions(statements, n)
            if len(sols) == 1:
                return names, statements, sols[0]
        raise RuntimeError("could not draw a knights-and-knaves puzzle")  # pragma: no cover

    def _question(self, names: Sequence[str], statements: Sequence[_Statement]) -> str:
        listed = ", ".join(names[:-1]) + " and " + names[-1]
        lines = [
            "On an island every inhabitant is either a knight, who always tells the truth, "
            "or a knave, who always lies.",
            f"You meet {len(names)} inhabitants: {listed}.",
        ]
        for s in statements:
            lines.append(f'{names[s.speaker]} says: "{s.text(names)}."')
        lines.append(
            "Who is a knight and who is a knave? Answer with 'Name: knight' or "
            "'Name: knave' for every inhabitant, separated by commas, in the order they were introduced."
        )
        return "\n".join(lines)

    def _distractors(self, rng: np.random.Generator, names, solution) -> tuple[str, ...]:
        others = [a for a in itertools.product((True, False), repeat=self.people) if a != solution]
        dist = lambda a: sum(x != y for x, y in zip(a, solution))  # noqa: E731
        order = rng.permutation(len(others))
        shuffled = [others[int(i)] for i in order]
        shuffled.sort(key=dist)  # stable: close (plausible) mistakes first
        return tuple(_kk_answer(names, a) for a in shuffled[: self.num_distractors])

    def sample(self, rng: np.random.Generator, split: str = "train") -> Task:
        _check_split(split)
        for _ in range(_MAX_RESAMPLE):
            names, statements, solution = self._draw(rng)
            question = self._question(names, statements)
            if split_of(question, self.test_fraction) != split:
                continue
            return Task(
                task_id=_task_id(f"knights_knaves-p{self.people}", split, question),
                question=question,
                answer=_kk_answer(names, solution),
                source=self.name,
                distractors=self._distractors(rng, names, solution),
                features=self._features(statements),
            )
        raise RuntimeError(f"could not draw a {split} knights-and-knaves puzzle")  # pragma: no cover

    @staticmethod
    def _names_and_assignment(answer: str) -> tuple[list[str], tuple[bool, ...]]:
        names, kinds = [], []
        for part in answer.split(","):
            nm, kind = part.split(":")
            names.append(nm.strip())
            kinds.append(kind.strip() == "knight")
        return names, tuple(kinds)

    def verify(self, task: Task, response: str) -> bool:
        try:
            names, truth = self._names_and_assignment(task.answer)
            return _parse_kk_response(str(response), names) == truth
        except Exception:
            return False

    def spec(self) -> dict:
        return {
            "name": self.name,
            "people": self.people,
            "test_fraction": self.test_fraction,
            "num_distractors": self.num_distractors,
        }


# --------------------------------------------------------------------------
# Countdown
# --------------------------------------------------------------------------

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
            v = expr()
            if peek() != ")":
                raise ValueError("missing )")
            pos += 1
            return v
        if tok.isdigit():
            pos += 1
            used.append(int(tok))
            return Fraction(int(tok))
        raise ValueError(f"unexpected {tok}")

    def term() -> Fraction:
        nonlocal pos
        v = atom()
        while peek() in ("*", "/"):
            op = tokens[pos]
            pos += 1
            w = atom()
            if op == "/" and w == 0:
                raise ZeroDivisionError
            v = v * w if op == "*" else v / w
        return v

    def expr() -> Fraction:
        nonlocal pos
        v = term()
        while peek() in ("+", "-"):
            op = tokens[pos]
            pos += 1
            w = term()
            v = v + w if op == "+" else v - w
        return v

    try:
        value = expr()
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
        op = str(rng.choice(["+", "-", "*"], p=[0.4, 0.3, 0.3]))
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


# --------------------------------------------------------------------------
# Datasets (jsonl / parquet)
# --------------------------------------------------------------------------

_QUESTION_CANDIDATES = ("question", "problem", "prompt", "input", "query", "instruction")
_ANSWER_CANDIDATES = ("answer", "solution", "final_answer", "target", "output", "response")
_TEST_NAMES = {"test", "testing", "eval", "evaluation", "validation", "valid", "val", "dev"}
_TRAIN_NAMES = {"train", "training"}


def extract_dataset_answer(raw: Any) -> str:
    """Final answer from a dataset answer field.

    GSM8K style ``"...reasoning... #### 72"`` gives ``"72"``; MATH style
    solutions give the content of the last ``\\boxed{...}``; anything else is
    returned stripped.
    """
    if isinstance(raw, bool):
        return str(raw)
    if isinstance(raw, (int, float)):
        if isinstance(raw, float) and raw.is_integer():
            return str(int(raw))
        return str(raw)
    text = str(raw)
    if "####" in text:
        ans = text.rsplit("####", 1)[1].strip()
        m = _THOUSANDS_RE.match(ans)
        if m:
            ans = m.group(1) + m.group(2).replace(",", "") + (m.group(3) or "")
        return ans
    boxed = extract_boxed(text)
    if boxed is not None:
        return boxed
    return text.strip()


def _require_math_verify() -> None:
    if importlib.util.find_spec("math_verify") is None:
        raise ImportError(
            "Dataset task sources verify answers with the 'math_verify' package; "
            "install it with `pip install math-verify`."
        )


def _math_verify_equal(gold: str, response: str) -> bool:
    """Equivalence via math_verify; ``False`` on any failure."""
    try:
        from math_verify import parse, verify
    except ImportError as exc:  # pragma: no cover - checked at construction
        raise ImportError(
            "Dataset task sources need 'math_verify': `pip install math-verify`."
        ) from exc
    in_main = threading.current_thread() is threading.main_thread()
    timeout = 5 if in_main else None

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
    except Exception:
        return False


def _read_jsonl(path: str) -> list[tuple[int, dict]]:
    rows = []
    with open(path, "r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}")
            rows.append((lineno, obj))
    return rows


def _read_parquet(path: str) -> list[tuple[int, dict]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(
            "Reading parquet task files needs 'pyarrow': `pip install pyarrow`."
        ) from exc
    table = pq.read_table(path)
    # row numbers are 1-based, like jsonl line numbers
    return [(i + 1, row) for i, row in enumerate(table.to_pylist())]


class DatasetTasks(TaskSource):
    """Problems loaded from a local ``.jsonl`` or ``.parquet`` file (never downloaded).

    Args:
        path: the file; the format is taken from ``fmt`` or the extension
            (``.parquet``/``.pq`` is parquet, anything else jsonl).
        question_field / answer_field: record fields.  When the default field
            is missing, common alternatives are detected (``problem`` /
            ``solution`` for MATH, ``prompt``, ``input``, ``target``, ...).
        split_field: optional field whose value (``train``/``test``/``validation``...)
            decides the split; otherwise a SHA-256 hash of the question does.
        test_fraction: fraction of problems in the test split (hash mode).
        num_distractors: how many wrong answers (other answers of the file) per task.

    Answers: GSM8K ``"... #### 72"`` gives ``"72"``, MATH solutions give the last
    ``\\boxed{...}``.  :meth:`verify` accepts a normalised string or numeric match,
    then asks ``math_verify`` (so ``"0.5"`` and ``"1/2"`` match ``\\frac{1}{2}``).
    Features: a hashed bag of words of the question (``feature_size`` = 32).
    """

    feature_size = 32

    def __init__(
        self,
        path: str,
        question_field: str = "question",
        answer_field: str = "answer",
        split_field: Optional[str] = None,
        test_fraction: float = 0.1,
        num_distractors: int = 3,
        fmt: Optional[str] = None,
    ):
        _require_math_verify()
        self.path = os.path.abspath(os.fspath(path))
        if fmt is None:
            fmt = "parquet" if self.path.lower().endswith((".parquet", ".pq")) else "jsonl"
        if fmt not in ("jsonl", "parquet"):
            raise ValueError(f"fmt must be 'jsonl' or 'parquet', got {fmt!r}")
        self.fmt = fmt
        self.name = fmt
        self.split_field = split_field
        self.test_fraction = _check_fraction(test_fraction)
        self.num_distractors = int(num_distractors)
        if self.num_distractors < 3:
            raise ValueError("num_distractors must be >= 3")
        if not os.path.isfile(self.path):
            raise FileNotFoundError(f"task file not found: {self.path}")

        rows = _read_jsonl(self.path) if fmt == "jsonl" else _read_parquet(self.path)
        if not rows:
            raise ValueError(f"{self.path}: no records")
        first = rows[0][1]
        self.question_field = self._detect(first, question_field, "question", _QUESTION_CANDIDATES, rows[0][0])
        self.answer_field = self._detect(first, answer_field, "answer", _ANSWER_CANDIDATES, rows[0][0])

        self._items: list[tuple[str, str]] = []  # (question, answer)
        self._by_split: dict[str, list[int]] = {"train": [], "test": []}
        for lineno, rec in rows:
            where = f"{self.path}: {'line' if fmt == 'jsonl' else 'row'} {lineno}"
            for field in (self.question_field, self.answer_field):
                if field not in rec or rec[field] is None:
                    raise ValueError(f"{where}: missing field {field!r}")
            question = to_printable_ascii(str(rec[self.question_field])).strip()
            if not question:
                raise ValueError(f"{where}: empty question")
            answer = to_printable_ascii(extract_dataset_answer(rec[self.answer_field])).strip()
            if not answer:
                raise ValueError(f"{where}: empty answer after extraction")
            if split_field is not None:
                if split_field not in rec:
                    raise ValueError(f"{where}: missing split field {split_field!r}")
                value = str(rec[split_field]).strip().lower()
                if value in _TEST_NAMES:
                    split = "test"
                elif value in _TRAIN_NAMES:
                    split = "train"
                else:
                    raise ValueError(f"{where}: unknown split value {rec[split_field]!r}")
            else:
                split = split_of(question, self.test_fraction)
            self._by_split[split].append(len(self._items))
            self._items.append((question, answer))

        keys = {answer_key(a) for _, a in self._items}
        if len(keys) < self.num_distractors + 1:
            raise ValueError(
                f"{self.path}: needs at least {self.num_distractors + 1} distinct answers "
                f"to draw distractors, found {len(keys)}"
            )

    @staticmethod
    def _detect(record: dict, field: str, default: str, candidates: Sequence[str], lineno: int) -> str:
        if field in record:
            return field
        if field == default:
            for cand in candidates:
                if cand in record:
                    return cand
        raise ValueError(
            f"line {lineno}: field {field!r} not found (available: {sorted(record)}); "
            f"pass question_field=/answer_field="
        )

    def __len__(self) -> int:
        return len(self._items)

    def num_problems(self, split: str) -> int:
        """Number of problems in ``split``."""
        return len(self._by_split[_check_split(split)])

    def _features(self, question: str) -> tuple[float, ...]:
        counts = np.zeros(self.feature_size, dtype=np.float64)
        for word in re.findall(r"[a-z0-9]+", question.lower()):
            counts[zlib.crc32(word.encode("ascii")) % self.feature_size] += 1.0
        if counts.max() > 0:
            counts /= counts.max()
        return tuple(float(x) for x in counts)

    def _distractors(self, rng: np.random.Generator, task_answer: str) -> tuple[str, ...]:
        gold_key = answer_key(task_answer)
        probe = Task("", "", task_answer, self.name, (), ())
        out: list[str] = []
        seen = {gold_key}

        def consider(cand: str) -> None:
            key = answer_key(cand)
            if key in seen:
                return
            seen.add(key)
            if self.verify(probe, cand):
                return
            out.append(cand)

        n = len(self._items)
        for _ in range(8 * self.num_distractors):
            if len(out) >= self.num_distractors:
                break
            consider(self._items[int(rng.integers(n))][1])
        if len(out) < self.num_distractors:
            for i in rng.permutation(n):
                if len(out) >= self.num_distractors:
                    break
                consider(self._items[int(i)][1])
        if len(out) < self.num_distractors:
            raise ValueError(
                f"{self.path}: not enough answers different from {task_answer!r} for distractors"
            )
        return tuple(out[: self.num_distractors])

    def sample(self, rng: np.random.Generator, split: str = "train") -> Task:
        idxs = self._by_split[_check_split(split)]
        if not idxs:
            raise ValueError(f"{self.path}: no problems in the {split!r} split")
        i = idxs[int(rng.integers(len(idxs)))]
        question, answer = self._items[i]
        stem = os.path.splitext(os.path.basename(self.path))[0]
        return Task(
            task_id=_task_id(f"{self.name}-{stem}", split, question),
            question=question,
            answer=answer,
            source=self.name,
            distractors=self._distractors(rng, answer),
            features=self._features(question),
        )

    def verify(self, task: Task, response: str) -> bool:
        try:
            response = str(response)
            if len(response) > 2000:
                return False
            gold = task.answer
            if _normalise_text(gold) == _normalise_text(response) and _normalise_text(gold):
                return True
            g_num, r_num = _parse_number(gold), _parse_number(response)
            if g_num is not None and r_num is not None:
                return g_num == r_num
            if not _normalise_text(response):
                return False
        except Exception:
            return False
        return _math_verify_equal(gold, response)

    def spec(self) -> dict:
        return {
            "name": self.name,
            "path": self.path,
            "question_field": self.question_field,
            "answer_field": self.answer_field,
            "split_field": self.split_field,
            "test_fraction": self.test_fraction,
            "num_distractors": self.num_distractors,
        }


# --------------------------------------------------------------------------
# Factory
# --------------------------------------------------------------------------


def _make_dataset(fmt: str) -> Callable[..., DatasetTasks]:
    def factory(path: Optional[str] = None, **kwargs: Any) -> DatasetTasks:
        if not path:
            raise ValueError(f"the {fmt!r} task source needs a path, e.g. '{fmt}:/data/file.{fmt}'")
        return DatasetTasks(path, fmt=fmt, **kwargs)

    return factory


_REGISTRY: dict[str, tuple[Callable[..., TaskSource], Callable]] = {
    "arithmetic": (ArithmeticTasks, ArithmeticTasks.__init__),
    "knights_knaves": (KnightsKnavesTasks, KnightsKnavesTasks.__init__),
    "countdown": (CountdownTasks, CountdownTasks.__init__),
    "jsonl": (_make_dataset("jsonl"), DatasetTasks.__init__),
    "parquet": (_make_dataset("parquet"), DatasetTasks.__init__),
}
_ALIASES = {"knights_and_knaves": "knights_knaves", "kk": "knights_knaves", "json": "jsonl"}


def _coerce(value: str) -> Any:
    v = value.strip()
    low = v.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def _parse_params(text: str, sep: str, where: str) -> dict:
    params: dict[str, Any] = {}
    for piece in text.split(sep):
        if not piece.strip():
            continue
        if "=" not in piece:
            raise ValueError(f"bad task-source parameter {piece!r} in {where!r}; expected key=value")
        k, v = piece.split("=", 1)
        params[k.strip()] = _coerce(v)
    return params


def _resolve_name(name: str) -> str:
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        known = sorted(_REGISTRY)
        close = difflib.get_close_matches(key, known + sorted(_ALIASES), n=3, cutoff=0.5)
        close = [_ALIASES.get(c, c) for c in close]
        hint = f"; did you mean {', '.join(repr(c) for c in dict.fromkeys(close))}?" if close else ""
        raise ValueError(f"unknown task source {name!r}; known sources: {', '.join(known)}{hint}")
    return key


def _build(name: str, params: dict) -> TaskSource:
    factory, init = _REGISTRY[name]
    allowed = [p for p in inspect.signature(init).parameters if p not in ("self", "fmt")]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {unknown} for task source {name!r}; accepted: {allowed}"
        )
    return factory(**params)


def make_task_source(spec: Any) -> TaskSource:
    """Build a :class:`TaskSource` from an instance, a spec string or a spec dict.

    See the module docstring for the accepted string forms.  Unknown names
    raise ``ValueError`` listing the known sources and close matches.
    """
    if isinstance(spec, TaskSource):
        return spec
    if isinstance(spec, dict):
        params = dict(spec)
        if "name" not in params:
            raise ValueError(f"task-source spec dict needs a 'name' key, got {spec!r}")
        name = _resolve_name(params.pop("name"))
        return _build(name, params)
    if isinstance(spec, str):
        text = spec.strip()
        name_part, _, rest = text.partition(":")
        name = _resolve_name(name_part)
        if name in ("jsonl", "parquet"):
            rest = rest.strip()
            if rest.startswith("path="):
                params = _parse_params(rest, ",", spec)
                if isinstance(params.get("path"), (int, float)):
                    params["path"] = str(params["path"])
            else:
                path, _, query = rest.partition("?")
                params = _parse_params(query, "&", spec)
                params["path"] = path
            return _build(name, params)
        return _build(name, _parse_params(rest, ",", spec))
    raise TypeError(f"cannot build a task source from {type(spec).__name__}: {spec!r}")
