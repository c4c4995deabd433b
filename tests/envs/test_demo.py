"""The demo's output (marl_llm_envs/demo.py) stays short and readable (issue 10)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def default_output():
    import contextlib
    import io

    from marl_llm_envs import demo

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        demo.main([])
    return out.getvalue()


def test_default_demo_shows_one_prompt_per_env(default_output):
    from marl_llm_envs import list_envs

    assert default_output.count("--- prompt of") == len(list_envs())
    assert len(default_output.splitlines()) < 700


def test_demo_shows_discrete_moves_as_index_and_label(default_output):
    assert "thinker 2 [B], solver 1 [B]" in default_output


def test_demo_renders_the_final_state_and_counts_moves(default_output):
    assert "(episode over)" not in default_output
    assert "game over" in default_output
    assert "transcript: 9 moves (and 2 step(None) of finished agents)" in default_output  # tic-tac-toe


def test_demo_prompt_margin_is_kept_on_blank_lines(default_output):
    prompt_lines = [line for line in default_output.splitlines() if line.startswith("  |")]
    assert "  | " in prompt_lines  # an empty prompt line keeps its margin
    assert all(line.startswith("  |") for line in default_output.split("--- prompt of thinker ---")[1]
               .split("  moves:")[0].splitlines()[1:])


def test_demo_explains_the_thinker_credit_gap_between_modes(default_output):
    assert "why the modes differ" in default_output


def test_a_negative_seed_is_a_usage_error(capsys):
    from marl_llm_envs.demo import main

    with pytest.raises(SystemExit) as exit_:
        main(["--seed", "-1"])
    assert exit_.value.code == 2 and "argument --seed: a non-negative int" in capsys.readouterr().err
