"""Knights-and-knaves logic puzzles with a unique solution (``knights_knaves``)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from marl_llm_envs.tasks.base import _MAX_RESAMPLE, Task, TaskSource, _check_fraction, _check_split, _task_id, split_of
from marl_llm_envs.tasks.verify import _strip_wrappers

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
