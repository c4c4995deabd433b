"""Local ``.jsonl`` / ``.parquet`` datasets (``jsonl``, ``parquet``), verified with ``math_verify``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import zlib
from typing import Any, Optional, Sequence

import numpy as np

from marl_llm_envs.tasks import math_check
from marl_llm_envs.tasks.base import Task, TaskSource, _check_fraction, _check_split, _task_id, split_of
from marl_llm_envs.tasks.composite import PART_NAMES, check_formula
from marl_llm_envs.tasks.verify import _THOUSANDS_RE, _normalise_text, _parse_number, answer_key, extract_boxed
from marl_llm_envs.text import printable as to_printable_ascii

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


class TaskFileNotFound(FileNotFoundError, ValueError):
    """A task source's ``path`` is not a file. Also a ``ValueError``, as every other bad kwarg of an env, so that the
    command-line tools report it as one (``error: ...``) instead of a traceback."""


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
        import pyarrow.parquet as pq  # lazy: an optional package (the datasets extra)
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

    Composite files: when records have a ``parts`` field (a list of 1..8
    ``{"question": ..., "answer": ...}`` objects) every record must have one;
    each task then carries its parts (answers extracted as above, distractors
    drawn from the other parts' answers of the file, the same hashed features)
    and the optional ``combine`` field (a formula over ``a``, ``b``, ...; see
    :mod:`marl_llm_envs.tasks.composite`), checked when the file is read.
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
            raise TaskFileNotFound(f"task file not found: {self.path}" + (" (a folder)" if os.path.isdir(self.path)
                                                                          else ""))

        rows = _read_jsonl(self.path) if fmt == "jsonl" else _read_parquet(self.path)
        if not rows:
            raise ValueError(f"{self.path}: no records")
        first = rows[0][1]
        self.question_field = self._detect(first, question_field, "question", _QUESTION_CANDIDATES, rows[0][0])
        self.answer_field = self._detect(first, answer_field, "answer", _ANSWER_CANDIDATES, rows[0][0])

        self._items: list[tuple[str, str]] = []  # (question, answer)
        self._parts: list[tuple[tuple[tuple[str, str], ...], str]] = []  # composite files: ((question, answer)...), combine
        self._by_split: dict[str, list[int]] = {"train": [], "test": []}
        composite = "parts" in first
        for lineno, rec in rows:
            where = f"{self.path}: {'line' if fmt == 'jsonl' else 'row'} {lineno}"
            if ("parts" in rec) != composite:
                raise ValueError(f"{where}: {'no' if composite else 'a'} 'parts' field, but the first record has "
                                 f"{'one' if composite else 'none'}; either every record has parts or none does")
            if composite:
                self._parts.append(self._read_parts(rec, where))
            question, answer = self._read_item(rec, where)
            self._by_split[self._split(rec, question, where)].append(len(self._items))
            self._items.append((question, answer))
        self._check_answers(composite)

    def _read_item(self, rec: dict, where: str) -> tuple[str, str]:
        """A record's question and extracted answer (both printable ASCII, non-empty)."""
        for field in (self.question_field, self.answer_field):
            if field not in rec or rec[field] is None:
                raise ValueError(f"{where}: missing field {field!r}")
        question = to_printable_ascii(str(rec[self.question_field])).strip()
        if not question:
            raise ValueError(f"{where}: empty question")
        answer = to_printable_ascii(extract_dataset_answer(rec[self.answer_field])).strip()
        if not answer:
            raise ValueError(f"{where}: empty answer after extraction")
        return question, answer

    def _split(self, rec: dict, question: str, where: str) -> str:
        """``"train"`` or ``"test"``: the record's ``split_field`` when there is one, else the question's hash."""
        split_field = self.split_field
        if split_field is None:
            return split_of(question, self.test_fraction)
        if split_field not in rec:
            raise ValueError(f"{where}: missing split field {split_field!r}")
        value = str(rec[split_field]).strip().lower()
        if value in _TEST_NAMES:
            return "test"
        if value in _TRAIN_NAMES:
            return "train"
        raise ValueError(f"{where}: unknown split value {rec[split_field]!r}")

    def _check_answers(self, composite: bool) -> None:
        """Enough distinct answers (and part answers) to draw every task's distractors from; sets the parts' sizes."""
        keys = {answer_key(a) for _, a in self._items}
        if len(keys) < self.num_distractors + 1:
            raise ValueError(
                f"{self.path}: needs at least {self.num_distractors + 1} distinct answers "
                f"to draw distractors, found {len(keys)}"
            )
        self._part_answers = [a for parts, _ in self._parts for _, a in parts]
        if composite:
            self.max_parts = max(len(parts) for parts, _ in self._parts)
            self.part_feature_size = self.feature_size
            keys = {answer_key(a) for a in self._part_answers}
            if len(keys) < self.num_distractors + 1:
                raise ValueError(f"{self.path}: needs at least {self.num_distractors + 1} distinct part answers to "
                                 f"draw the parts' distractors, found {len(keys)}")

    @staticmethod
    def _read_parts(rec: dict, where: str) -> tuple[tuple[tuple[str, str], ...], str]:
        raw = rec["parts"]
        if not isinstance(raw, (list, tuple)) or not 1 <= len(raw) <= len(PART_NAMES):
            raise ValueError(f"{where}: 'parts' must be a list of 1..{len(PART_NAMES)} objects")
        parts = []
        for i, part in enumerate(raw):
            if not isinstance(part, dict) or part.get("question") is None or part.get("answer") is None:
                raise ValueError(f"{where}: part {i} must be an object with 'question' and 'answer'")
            question = to_printable_ascii(str(part["question"])).strip()
            answer = to_printable_ascii(extract_dataset_answer(part["answer"])).strip()
            if not question or not answer:
                raise ValueError(f"{where}: part {i} has an empty question or answer")
            parts.append((question, answer))
        combine = rec.get("combine") or ""
        if combine:
            reason = check_formula(str(combine), len(parts))
            if reason is not None:
                raise ValueError(f"{where}: 'combine' {str(combine)[:80]!r}: {reason}")
        return tuple(parts), str(combine)

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

    def _distractors(self, rng: np.random.Generator, task_answer: str, pool: Optional[Sequence[str]] = None
                     ) -> tuple[str, ...]:
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

        pool = [a for _, a in self._items] if pool is None else pool
        n = len(pool)
        for _ in range(8 * self.num_distractors):
            if len(out) >= self.num_distractors:
                break
            consider(pool[int(rng.integers(n))])
        if len(out) < self.num_distractors:
            for i in rng.permutation(n):
                if len(out) >= self.num_distractors:
                    break
                consider(pool[int(i)])
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
        task_id = _task_id(f"{self.name}-{stem}", split, question)
        distractors = self._distractors(rng, answer)
        parts, combine = self._parts[i] if self._parts else ((), "")
        return Task(
            task_id=task_id,
            question=question,
            answer=answer,
            source=self.name,
            distractors=distractors,
            features=self._features(question),
            parts=tuple(Task(task_id=f"{task_id}#{j}", question=q, answer=a, source=self.name,
                             distractors=self._distractors(rng, a, self._part_answers),
                             features=self._features(q)) for j, (q, a) in enumerate(parts)),
            combine=combine,
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
        return math_check.equal(gold, response)

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
