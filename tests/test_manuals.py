"""The manuals name what a user can pass: think_solve-v0's lists every task source the registry knows."""

from __future__ import annotations

import pytest

from marl_llm_envs.envs import think_solve
from marl_llm_envs.tasks import make_task_source


def _known_task_sources() -> list[str]:
    with pytest.raises(ValueError) as err:
        make_task_source("no_such_source")
    return str(err.value).split("known sources: ")[1].split(";")[0].split(", ")


def test_think_solve_manual_lists_every_task_source():
    sources = _known_task_sources()
    assert "countdown" in sources
    for name in sources:
        assert f'``"{name}' in think_solve.__doc__, name
