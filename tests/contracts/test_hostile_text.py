"""Hostile replies get the documented invalid-move outcome (their speed is benchmarks/hostile_text.py's job)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from marl_llm_envs import list_envs, make, replay
from marl_llm_envs.tasks import answer_key, make_task_source
from marl_llm_envs.text import TEXT_MAX_LENGTH, bracketed_tokens, find_boxed, parse_bracketed, short_repr

HOSTILE = {
    "unclosed_boxed": "\\boxed{" * 9000,
    "open_braces": "\\boxed{" + "{" * 70_000,
    "bracket_run": "[" * 70_000,
    "closing_run": "]" * 70_000,
    "long_tokens": ("[" + "x" * 70) * 1000,
    "unicode": "\u00e9\u20ac\u3042\U0001F600" * 20_000,
    "nul_and_controls": "\x00\x01\x1b[0m" * 20_000,
}


def _at_parsed_turn(env_id: str, **kwargs):
    env = make(env_id, **kwargs)
    env.reset(seed=0)
    if env_id == "think_solve-v0":
        env.step("a thought")
    return env


BOXED_ANSWER_ENVS = ("think_solve-v0", "voting-v0")  # free-text turns whose reply must hold a \boxed answer


@pytest.mark.parametrize("pattern", sorted(HOSTILE))
@pytest.mark.parametrize("env_id", list_envs())
def test_hostile_reply_is_a_recorded_invalid_move(env_id, pattern):
    env = _at_parsed_turn(env_id)
    agent = env.agent_selection
    parsed = bool(env.legal_actions()) or env_id in BOXED_ANSWER_ENVS
    env.step(HOSTILE[pattern])
    if not parsed:  # a free-text message turn of an env added later: any text is a move; it must only not crash
        return
    record = env.infos[agent]["invalid_action"]
    assert record is not None and record["policy"] == "penalty"
    assert len(record["action"]) <= 203 and record["action"].isprintable()
    assert env.infos[agent]["invalid_count"] == 1


def test_thousands_of_unclosed_boxed_openers_are_an_invalid_answer():
    env = _at_parsed_turn("think_solve-v0")
    env.step("\\boxed{" * 8000)
    assert env.infos["solver"]["invalid_action"]["reason"].startswith("no \\boxed{...} answer found")
    assert env.team_rewards()["team"] == -1.0


def test_text_beyond_the_cap_is_ignored_and_the_count_recorded():
    env = _at_parsed_turn("think_solve-v0")
    reply = "x" * TEXT_MAX_LENGTH + "\\boxed{7}"
    env.step(reply)
    info = env.infos["solver"]
    assert info["invalid_action"]["ignored_chars"] == len("\\boxed{7}")
    assert info["ignored_chars"] == len("\\boxed{7}")


def test_an_answer_inside_the_cap_still_counts_after_a_long_reply():
    env = _at_parsed_turn("think_solve-v0")
    answer = env.unwrapped.task.answer
    env.step(f"\\boxed{{{answer}}}" + " " * (TEXT_MAX_LENGTH + 10))
    assert env.infos["solver"]["correct"] is True
    assert env.infos["solver"]["ignored_chars"] == 10 + len(f"\\boxed{{{answer}}}")


def test_ignored_chars_is_dropped_after_a_step_that_fits():
    env = make("tic_tac_toe-v0")
    env.reset(seed=0)
    env.step("[4]" + " " * TEXT_MAX_LENGTH)
    assert env.infos["player_0"]["ignored_chars"] == 3
    env.step("[0]")
    env.step("[8]")
    assert "ignored_chars" not in env.infos["player_0"]


def test_a_capped_reply_replays_to_the_same_rewards():
    env = _at_parsed_turn("voting-v0")
    env.step("[abstain]" + "\\boxed{" * 20_000)
    env.step("\\boxed{1}")
    env.step("\\boxed{" * 20_000)
    again = replay(json.loads(json.dumps(env.transcript())))
    assert again.team_rewards() == env.team_rewards()


def test_exponent_bomb_is_not_read_as_a_number():
    env = _at_parsed_turn("think_solve-v0")
    env.step("\\boxed{1e999999999}")
    assert env.infos["solver"]["correct"] is False
    assert answer_key("1e999999999") != answer_key("1e999999998")


def test_countdown_verifier_rejects_an_exponent_bomb_after_the_equals_sign():
    source = make_task_source("countdown")
    task = source.sample(np.random.default_rng(0))
    assert source.verify(task, "1 = 1e999999999") is False


def test_huge_int_action_in_discrete_mode_is_an_invalid_move():
    env = make("kuhn_poker-v0", action_mode="discrete")
    env.reset(seed=0)
    env.step(10 ** 5000)
    reason = env.infos["player_0"]["invalid_action"]["reason"]
    assert "out of range" in reason and len(reason) < 200
    json.dumps(env.transcript())  # the transcript stays serialisable


def test_object_whose_repr_fails_is_an_invalid_move():
    class Hostile:
        def __repr__(self):
            raise RuntimeError("no")

    env = make("tic_tac_toe-v0")
    env.reset(seed=0)
    env.step(Hostile())
    assert "got <Hostile instance" in env.infos["player_0"]["invalid_action"]["reason"]


def test_textarena_crash_on_a_huge_cell_number_is_a_recorded_invalid_move():
    pytest.importorskip("textarena")
    env = make("textarena/TicTacToe-v0")
    env.reset(seed=0)
    env.step("[" + "9" * 30_000 + "]")
    record = env.infos["player_0"]["invalid_action"]
    assert record is not None and "TextArena raised ValueError" in record["reason"]


# ------------------------------------------------------------------ the parsers themselves


def test_find_boxed_takes_the_last_complete_box():
    assert find_boxed("\\boxed{1} then \\boxed{2}") == "2"
    assert find_boxed("\\boxed{1} then \\boxed{2") == "1"
    assert find_boxed("\\boxed{a \\boxed{b}}") == "b"
    assert find_boxed("\\boxed {\\frac{1}{2}}") == "\\frac{1}{2}"
    assert find_boxed("\\fbox{x \\} y}") == "x \\} y"
    assert find_boxed("} \\boxed{3}") == "3"
    assert find_boxed("\\boxed x {3}") is None


def test_find_boxed_reads_only_up_to_the_cap():
    assert find_boxed(" " * TEXT_MAX_LENGTH + "\\boxed{5}") is None
    assert find_boxed(" " * (TEXT_MAX_LENGTH - 9) + "\\boxed{5}") == "5"


def test_bracketed_tokens_bounds_and_separators():
    assert bracketed_tokens("[a] [] [b\nc] [[d]] [" + "x" * 65 + "] [" + "y" * 64 + "]") == ["a", "d", "y" * 64]
    assert bracketed_tokens("]]][e]]") == ["e"]


def test_parse_bracketed_last_named_move_wins():
    names = {"check": 0, "bet": 1}
    assert parse_bracketed("[bet] no, [note] [check] [hm]", names) == (0, None)
    assert parse_bracketed("  Bet ", names) == (1, None)
    index, reason = parse_bracketed("[" * 1000, names)
    assert index is None and reason.startswith("no move found")


def test_short_repr_is_bounded_and_quotes_strings():
    assert short_repr("1") == "'1'"
    assert short_repr("") == "''"
    assert short_repr(10 ** 5000).startswith("<int of about 50")
    assert len(short_repr(list(range(10 ** 5)))) < 210
    assert len(short_repr("z" * 10 ** 6)) < 210
