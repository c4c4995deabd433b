"""The task package (marl_llm_envs/tasks/__init__.py): importing it loads no optional package, and
``make_task_source`` builds sources from strings and specs, refuses bad input, and round-trips a spec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from marl_llm_envs import tasks as tasks_mod
from marl_llm_envs.tasks import (
    ArithmeticTasks,
    DatasetTasks,
    TaskSource,
    make_task_source,
    split_of,
)
from tests.envs.tasks.helpers import all_sources, available_splits


def test_importing_tasks_does_not_import_math_verify_or_pyarrow():
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('t', {str(Path(tasks_mod.__file__))!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['t'] = m; spec.loader.exec_module(m)\n"
        "print('math_verify' in sys.modules, 'pyarrow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# --------------------------------------------------------------------------
# make_task_source
# --------------------------------------------------------------------------


def test_make_task_source_from_strings(gsm8k_file, math_file):
    assert isinstance(make_task_source("arithmetic"), ArithmeticTasks)
    assert make_task_source("arithmetic").difficulty == 2
    assert make_task_source("arithmetic:difficulty=3").difficulty == 3
    s = make_task_source("arithmetic:difficulty=4,test_fraction=0.25")
    assert (s.difficulty, s.test_fraction) == (4, 0.25)
    assert make_task_source("knights_knaves").people == 2
    assert make_task_source("knights-knaves:people=3").people == 3
    assert make_task_source("countdown:numbers=5").numbers == 5
    js = make_task_source(f"jsonl:{gsm8k_file}")
    assert isinstance(js, DatasetTasks) and js.path == str(gsm8k_file)
    m = make_task_source(f"jsonl:{math_file}?question_field=problem&answer_field=solution")
    assert m.answer_field == "solution"
    m2 = make_task_source(f"jsonl:path={math_file},test_fraction=0.5")
    assert m2.test_fraction == 0.5
    inst = ArithmeticTasks(1)
    assert make_task_source(inst) is inst


def test_make_task_source_rejects_bad_input():
    with pytest.raises(ValueError, match="arithmetic"):
        make_task_source("arithmetc")
    with pytest.raises(ValueError) as err:
        make_task_source("knight_knaves")
    assert "knights_knaves" in str(err.value) and "known sources" in str(err.value)
    with pytest.raises(ValueError, match="difficulty"):
        make_task_source("arithmetic:level=3")
    with pytest.raises(ValueError):
        make_task_source("arithmetic:difficulty")
    with pytest.raises(ValueError, match="path"):
        make_task_source("jsonl:")
    with pytest.raises(ValueError, match="name"):
        make_task_source({"difficulty": 3})
    with pytest.raises(TypeError):
        make_task_source(42)


def test_spec_round_trip_gives_the_same_tasks(gsm8k_file):
    for src in all_sources(gsm8k_file):
        spec = src.spec()
        spec = json.loads(json.dumps(spec))  # JSON-serialisable
        rebuilt = make_task_source(spec)
        assert type(rebuilt) is type(src) and rebuilt.spec() == src.spec()
        assert isinstance(rebuilt, TaskSource)
        for split in available_splits(src):
            a = [src.sample(np.random.default_rng(s), split) for s in range(3)]
            b = [rebuilt.sample(np.random.default_rng(s), split) for s in range(3)]
            assert a == b


def test_split_and_task_id_are_the_question_hash_in_any_call_order():
    # split_of and _task_id share the last question's digest: interleaved calls must still hash each question
    import hashlib

    from marl_llm_envs.tasks.base import _task_id

    questions = [f"Compute {i} + {i * 7}." for i in range(300)] + ["", "é ∑ 😀", "Compute 0 + 0."]
    for n, q in enumerate(questions):
        digest = hashlib.sha256(q.encode("utf-8"))
        want_split = "test" if int.from_bytes(digest.digest()[:8], "big") / 2.0**64 < 0.3 else "train"
        other = questions[(n * 7) % len(questions)]
        calls = [lambda: split_of(q, 0.3), lambda: split_of(other, 0.3), lambda: _task_id("t", "x", q)]
        for order in ([0, 2], [2, 0], [0, 1, 2], [1, 2, 0]):
            got = {i: calls[i]() for i in order}
            assert got[0] == want_split and got[2] == f"t/x/{digest.hexdigest()[:12]}", (q, order)
