"""A GSM8K-style and a MATH-style task file for the task sources' tests."""

from __future__ import annotations

import pytest

from tests.envs.tasks.helpers import GSM8K_ROWS, MATH_ROWS, write_jsonl


@pytest.fixture
def gsm8k_file(tmp_path):
    return write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K_ROWS)


@pytest.fixture
def math_file(tmp_path):
    return write_jsonl(tmp_path / "math.jsonl", MATH_ROWS)
