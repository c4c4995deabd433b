"""Verifiers never raise on arbitrary text (hypothesis), procedural and dataset sources alike."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marl_llm_envs.tasks import (
    ArithmeticTasks,
    CountdownTasks,
    DatasetTasks,
    KnightsKnavesTasks,
    Task,
)

_ANY_TEXT = st.one_of(
    st.text(max_size=60),
    st.from_regex(r"[-+ 0-9.,/$\\{}a-z:;]{0,30}", fullmatch=True),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response=_ANY_TEXT)
def test_procedural_verify_never_raises_on_arbitrary_text(response):
    a = Task("a", "q", "42", "arithmetic", (), ())
    k = Task("k", "q", "Alice: knight, Bob: knave", "knights_knaves", (), ())
    assert ArithmeticTasks(2).verify(a, response) in (True, False)
    assert KnightsKnavesTasks(2).verify(k, response) in (True, False)
    c = Task("c", "Using the numbers 2, 3, 4 (each at most once) and the operations +, -, *, / "
                  "with parentheses, write an expression equal to 10.", "2 + 3 * 4", "countdown", (), ())
    assert CountdownTasks(3).verify(c, response) in (True, False)
    assert CountdownTasks(3).verify(c, "(" * 400 + "2" + ")" * 400) is False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(response=_ANY_TEXT)
def test_dataset_verify_never_raises_on_arbitrary_text(math_file, response):
    src = DatasetTasks(math_file)
    t = Task("d", "q", "\\frac{1}{2}", "jsonl", (), ())
    assert src.verify(t, response) in (True, False)
