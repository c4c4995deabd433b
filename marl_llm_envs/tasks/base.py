"""The task-source interface (:class:`Task`, :class:`TaskSource`) and the train/test split by question hash."""

from __future__ import annotations

import abc
import hashlib
from dataclasses import dataclass

import numpy as np

SPLITS = ("train", "test")
_MAX_RESAMPLE = 2000


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
        parts: composite problems only: the independent sub-problems (each a
            :class:`Task` with its own answer, distractors and features of
            length ``source.part_feature_size``), named ``a``, ``b``, ``c``, ...
            in order; ``()`` for a plain problem.
        combine: composite problems only: the formula over the part names that
            gives the answer from the parts' answers (e.g. ``"a + b * c"``; see
            :func:`marl_llm_envs.tasks.composite.combine_parts`); ``""`` when the
            parts do not combine by a formula.
    """

    task_id: str
    question: str
    answer: str
    source: str
    distractors: tuple[str, ...]
    features: tuple[float, ...]
    parts: tuple["Task", ...] = ()
    combine: str = ""


class TaskSource(abc.ABC):
    """A sampler of :class:`Task` objects plus an exact verifier.

    Subclasses set ``name`` and ``feature_size`` and implement
    :meth:`sample`, :meth:`verify` and :meth:`spec`.
    """

    name: str = "abstract"
    feature_size: int = 0
    max_parts: int = 0  # composite sources: the most parts a task can have (0: the source's tasks have no parts)
    part_feature_size: int = 0  # composite sources: the length of each part's ``features``

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator, split: str = "train") -> Task:
        """Draw one task of ``split`` (``"train"`` or ``"test"``) using only ``rng``."""

    @abc.abstractmethod
    def verify(self, task: Task, response: str) -> bool:
        """Whether ``response`` (the raw text inside ``\\boxed{...}``) answers ``task``.

        Never raises on arbitrary strings; returns ``False`` instead.
        """

    def verify_part(self, task: Task, index: int, response: str) -> bool:
        """Whether ``response`` answers part ``index`` of a composite ``task``; ``False`` for anything else. Never
        raises on arbitrary strings. By default a part is verified like a problem of this source."""
        if not isinstance(index, int) or not 0 <= index < len(task.parts):
            return False
        try:
            return bool(self.verify(task.parts[index], response))
        except Exception:
            return False

    @abc.abstractmethod
    def spec(self) -> dict:
        """JSON-serialisable description; ``make_task_source(spec)`` rebuilds the source."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.spec().items() if k != "name")
        return f"{type(self).__name__}({params})"


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def _check_fraction(test_fraction: float) -> float:
    test_fraction = float(test_fraction)
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    return test_fraction


_last_digest: tuple[str, bytes] = ("", hashlib.sha256(b"").digest())


def _digest(question: str) -> bytes:
    """SHA-256 of the question's UTF-8 text. A source hashes each drawn question twice (its split, then its task id),
    so the last one is kept: the same str object (held here, so never another one at its address) has that digest."""
    global _last_digest
    last = _last_digest
    if last[0] is question:
        return last[1]
    digest = hashlib.sha256(question.encode("utf-8")).digest()
    _last_digest = (question, digest)
    return digest


def split_of(question: str, test_fraction: float = 0.1) -> str:
    """Split (``"train"``/``"test"``) of a question, from a stable SHA-256 hash of its text."""
    u = int.from_bytes(_digest(question)[:8], "big") / 2.0**64
    return "test" if u < test_fraction else "train"


def _task_id(tag: str, split: str, question: str) -> str:
    return f"{tag}/{split}/{_digest(question)[:6].hex()}"      # the hash's first 12 hex digits
