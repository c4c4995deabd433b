"""Dataset task files (marl_llm_envs/tasks/datasets.py): GSM8K- and MATH-style JSONL, boxed answers, printable
questions, split fields, corrupt files and missing fields named by line, distractors, missing optional packages,
parquet."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from marl_llm_envs.tasks import (
    ArithmeticTasks,
    DatasetTasks,
    Task,
    extract_boxed,
    extract_dataset_answer,
    make_task_source,
    to_printable_ascii,
)
from tests.envs.tasks.helpers import GSM8K_ROWS, PRINTABLE, available_splits, write_jsonl


def test_gsm8k_style_jsonl_takes_the_answer_after_hashes(gsm8k_file):
    src = DatasetTasks(gsm8k_file)
    assert len(src) == len(GSM8K_ROWS)
    answers = {q: a for q, a in src._items}
    assert answers[GSM8K_ROWS[1]["question"]] == "72"
    assert answers[GSM8K_ROWS[5]["question"]] == "1000"
    t = Task("d", GSM8K_ROWS[1]["question"], "72", "jsonl", (), ())
    for r in ["72", " 72.0 ", "+72", "$72$", "72."]:
        assert src.verify(t, r), r
    assert not src.verify(t, "73")
    got = {src.sample(np.random.default_rng(i), s).question
           for i in range(40) for s in available_splits(src)}
    assert got == {r["question"] for r in GSM8K_ROWS}


def test_math_style_jsonl_extracts_last_boxed_and_verifies_with_math_verify(math_file):
    src = DatasetTasks(math_file)  # fields auto-detected: problem / solution
    assert (src.question_field, src.answer_field) == ("problem", "solution")
    answers = [a for _, a in src._items]
    assert answers == ["\\frac{1}{2}", "2\\sqrt{2}", "x^{2}", "12", "1"]
    half = Task("d", "q", "\\frac{1}{2}", "jsonl", (), ())
    for r in ["0.5", "1/2", "\\frac12", "\\dfrac{1}{2}", "$\\frac{1}{2}$", " \\frac{1}{2} "]:
        assert src.verify(half, r), r
    for r in ["0.6", "2", "1/3", "", "\\frac{1}{2"]:
        assert not src.verify(half, r), r
    root = Task("d", "q", "2\\sqrt{2}", "jsonl", (), ())
    assert src.verify(root, "\\sqrt{8}") and not src.verify(root, "\\sqrt{2}")
    assert src.verify(Task("d", "q", "x^{2}", "jsonl", (), ()), "x^2")


def test_dataset_questions_are_transliterated_to_printable_ascii(math_file):
    src = DatasetTasks(math_file)
    q = [q for q, _ in src._items][-1]
    assert q.endswith("Cafe ?")
    assert set(q) <= PRINTABLE
    assert to_printable_ascii("na\u00efve \u00bd \u4e2d") == "naive 1?2 ?"


def test_extract_boxed_handles_nested_braces():
    assert extract_boxed("a \\boxed{\\frac{1}{2}} b \\boxed{\\sqrt{\\frac{a}{b}}}") == "\\sqrt{\\frac{a}{b}}"
    assert extract_boxed("no box here") is None
    assert extract_boxed("\\boxed{unterminated") is None
    assert extract_dataset_answer("work\n#### 1,234") == "1234"
    assert extract_dataset_answer(" 5 ") == "5"
    assert extract_dataset_answer(3.0) == "3"


def test_dataset_split_field_overrides_the_hash(tmp_path):
    rows = [dict(r, split="test" if i < 2 else "train") for i, r in enumerate(GSM8K_ROWS)]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    src = DatasetTasks(path, split_field="split")
    assert src.num_problems("test") == 2 and src.num_problems("train") == 4
    test_qs = {src.sample(np.random.default_rng(i), "test").question for i in range(30)}
    assert test_qs == {GSM8K_ROWS[0]["question"], GSM8K_ROWS[1]["question"]}
    bad = write_jsonl(tmp_path / "bad_split.jsonl", [dict(r, split="holdout") for r in GSM8K_ROWS])
    with pytest.raises(ValueError, match="line 1"):
        DatasetTasks(bad, split_field="split")


def test_dataset_split_without_problems_raises(gsm8k_file):
    src = DatasetTasks(gsm8k_file, test_fraction=1e-9)
    assert src.num_problems("test") == 0
    with pytest.raises(ValueError, match="test"):
        src.sample(np.random.default_rng(0), "test")


def test_corrupt_jsonl_reports_file_and_line_number(tmp_path):
    path = tmp_path / "corrupt.jsonl"
    lines = [json.dumps(r) for r in GSM8K_ROWS[:2]] + ["{not json"] + [json.dumps(GSM8K_ROWS[3])]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"corrupt\.jsonl.*line 3"):
        DatasetTasks(path)


def test_a_task_path_that_is_not_a_file_is_a_bad_kwarg_for_the_clis_too(tmp_path):
    """A missing task file is a FileNotFoundError (as it was) and a ValueError, like every other bad env kwarg: the
    trainer's and the rollout CLI's error path catches it, where a bare FileNotFoundError was a traceback."""
    import marl_llm_envs

    for path, message in ((tmp_path / "none.jsonl", r"task file not found: .*none\.jsonl$"),
                          (tmp_path, r"task file not found: .* \(a folder\)$")):
        with pytest.raises(FileNotFoundError, match=message):
            DatasetTasks(path)
        with pytest.raises(ValueError, match=message):
            marl_llm_envs.make("think_solve-v0", tasks={"name": "jsonl", "path": str(path)})


def test_missing_field_reports_line_number(tmp_path):
    rows = list(GSM8K_ROWS)
    rows[3] = {"question": "no answer here"}
    path = write_jsonl(tmp_path / "missing.jsonl", rows)
    with pytest.raises(ValueError, match=r"missing\.jsonl.*line 4.*answer"):
        DatasetTasks(path)
    path2 = write_jsonl(tmp_path / "nofields.jsonl", [{"foo": 1, "bar": 2}])
    with pytest.raises(ValueError, match="question"):
        DatasetTasks(path2)
    path3 = write_jsonl(tmp_path / "array.jsonl", [[1, 2]])
    with pytest.raises(ValueError, match="line 1"):
        DatasetTasks(path3)


def test_dataset_needs_enough_distinct_answers_for_distractors(tmp_path):
    rows = [{"question": f"q{i}", "answer": "#### 1"} for i in range(10)]
    with pytest.raises(ValueError, match="distinct answers"):
        DatasetTasks(write_jsonl(tmp_path / "same.jsonl", rows))


def test_dataset_missing_math_verify_gives_install_hint(gsm8k_file, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "math_verify" else real(name, *a))
    with pytest.raises(ImportError, match="pip install math-verify"):
        DatasetTasks(gsm8k_file)
    # procedural sources do not need it
    ArithmeticTasks(1).sample(np.random.default_rng(0))


def test_parquet_round_trip_matches_jsonl(tmp_path, gsm8k_file):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "gsm8k.parquet"
    pq.write_table(pa.Table.from_pylist(GSM8K_ROWS), path)
    src_pq = make_task_source(f"parquet:{path}")
    src_js = DatasetTasks(gsm8k_file)
    assert src_pq.name == "parquet" and len(src_pq) == len(GSM8K_ROWS)
    for i in range(10):
        a = src_pq.sample(np.random.default_rng(i), "train")
        b = src_js.sample(np.random.default_rng(i), "train")
        assert (a.question, a.answer, a.distractors, a.features) == (b.question, b.answer, b.distractors,
                                                                       b.features)
        assert a.source == "parquet"
