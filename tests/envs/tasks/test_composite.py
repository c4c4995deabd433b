"""The composite task source and composite jsonl files (the problems of orchestrator-v0)."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from marl_llm_envs.tasks import CompositeTasks, combine_parts, make_task_source, split_of
from marl_llm_envs.tasks.composite import evaluate_formula


@pytest.mark.parametrize("parts,difficulty", [(2, 1), (3, 1), (4, 2), (6, 3)])
def test_composite_answer_is_the_formula_over_the_part_answers(parts, difficulty):
    source = CompositeTasks(parts=parts, difficulty=difficulty)
    for seed in range(30):
        task = source.sample(np.random.default_rng(seed))
        assert len(task.parts) == parts and task.combine
        assert combine_parts(task, [p.answer for p in task.parts]) == task.answer
        assert source.verify(task, task.answer) and source.verify(task, f"{task.answer}.0")
        assert not any(source.verify(task, d) for d in task.distractors)
        assert len(set(task.distractors)) == len(task.distractors) == 3
        for i, part in enumerate(task.parts):
            expression = part.question[len("Compute the value of "):-1]
            assert f"\n  {'abcdef'[i]} = {expression}" in task.question
            assert source.verify_part(task, i, part.answer)
            assert not any(source.verify_part(task, i, d) for d in part.distractors)
        assert len(task.features) == source.feature_size
        assert all(-1.0 <= x <= 1.0 for x in task.features)


def test_composite_wrong_part_gives_a_wrong_answer_under_its_distractor():
    source = CompositeTasks(parts=3)
    task = source.sample(np.random.default_rng(7))
    results = [p.answer for p in task.parts]
    changed = [combine_parts(task, [d, *results[1:]]) for d in task.parts[0].distractors]
    assert any(not source.verify(task, c) for c in changed)
    assert combine_parts(task, [None, *results[1:]]) is None
    assert combine_parts(task, ["twelve", *results[1:]]) is None
    assert combine_parts(task, results[:2]) is None


@pytest.mark.parametrize("split", ["train", "test"])
def test_composite_splits_are_fixed_by_the_question_hash(split):
    source = CompositeTasks(parts=3, test_fraction=0.3)
    for seed in range(20):
        a = source.sample(np.random.default_rng(seed), split)
        assert split_of(a.question, 0.3) == split and f"/{split}/" in a.task_id
        assert a == source.sample(np.random.default_rng(seed), split)


def test_composite_knobs_and_spec_round_trip():
    source = make_task_source("composite:parts=4,difficulty=2")
    assert (source.parts, source.difficulty, source.max_parts) == (4, 2, 4)
    assert make_task_source(source.spec()).spec() == source.spec()
    assert source.part_feature_size == source.part_source.feature_size
    task = source.sample(np.random.default_rng(0))
    assert all(p.question.count(" * ") + p.question.count(" + ") + p.question.count(" - ") == 3 for p in task.parts)
    for bad in ({"parts": 1}, {"parts": 7}, {"parts": 2.5}, {"difficulty": 0}, {"num_distractors": 2}):
        with pytest.raises(ValueError):
            CompositeTasks(**bad)


def test_formula_evaluation_is_exact_and_total():
    v = {"a": Fraction(3), "b": Fraction(-4), "c": Fraction(2)}
    assert evaluate_formula("a + b * c", v) == -5
    assert evaluate_formula("(a + b) * c", v) == -2
    assert evaluate_formula("-a / c", v) == Fraction(-3, 2)
    assert evaluate_formula("a / (c - 2)", v) is None          # division by zero
    assert evaluate_formula("a + d", v) is None                 # no such part
    assert evaluate_formula("a +", v) is None
    assert evaluate_formula("ab + c", v) is None
    assert evaluate_formula("a; import os", v) is None
    assert evaluate_formula("(" * 100 + "a" + ")" * 100, v) is None
    assert evaluate_formula("a + " * 1000 + "a", v) is None      # longer than the cap


def _write(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


def _composite_rows(n=12):
    return [{"question": f"Compute x_{i} + y_{i}, where x_{i} = {i} + 1 and y_{i} = {i} * 3.",
             "answer": str(4 * i + 1),
             "parts": [{"question": f"Compute {i} + 1.", "answer": str(i + 1)},
                       {"question": f"Compute {i} * 3.", "answer": f"#### {3 * i}"}],
             "combine": "a + b"} for i in range(n)]


def test_jsonl_records_with_parts_are_composite_tasks(tmp_path):
    pytest.importorskip("math_verify")
    source = make_task_source(f"jsonl:{_write(tmp_path / 'c.jsonl', _composite_rows())}")
    assert (source.max_parts, source.part_feature_size) == (2, source.feature_size)
    task = source.sample(np.random.default_rng(0))
    assert len(task.parts) == 2 and task.combine == "a + b"
    assert combine_parts(task, [p.answer for p in task.parts]) == task.answer
    assert source.verify_part(task, 1, task.parts[1].answer) and not source.verify_part(task, 5, "1")
    for part in task.parts:
        assert len(part.distractors) == 3 and part.answer not in part.distractors


def test_jsonl_parts_must_be_on_every_record_and_well_formed(tmp_path):
    pytest.importorskip("math_verify")
    rows = _composite_rows()
    mixed = rows[:5] + [{"question": "q", "answer": "1"}] + rows[5:]
    with pytest.raises(ValueError, match="either every record has parts or none"):
        make_task_source(f"jsonl:{_write(tmp_path / 'm.jsonl', mixed)}")
    bad = [dict(r, combine="a + c") for r in rows]
    with pytest.raises(ValueError, match="not parts"):
        make_task_source(f"jsonl:{_write(tmp_path / 'b.jsonl', bad)}")
    empty = [dict(r, parts=[]) for r in rows]
    with pytest.raises(ValueError, match="'parts' must be a list"):
        make_task_source(f"jsonl:{_write(tmp_path / 'e.jsonl', empty)}")
