"""``python -m baselines.credit`` (baselines/credit/__main__.py) on an episodes file."""

from __future__ import annotations

import pytest

from tests.baselines.helpers import _one_episode_file


def test_the_credit_command_refuses_an_option_given_twice(tmp_path, capsys):
    # the last value won without a word
    from baselines.credit.__main__ import main

    path, _, _ = _one_episode_file(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["--episodes", str(path), "--method", "broadcast", "--option", "std=sample", "--option",
              "std=population"])
    assert stop.value.code == 2 and "argument --option: std given more than once" in capsys.readouterr().err
    assert main(["--episodes", str(path), "--method", "broadcast", "--option", "std=sample", "--json"])["episodes"] == 2
