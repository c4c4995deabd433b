"""think_solve-v0's ``hint_optional=False``: the clue task's thinker must name a candidate (its menu has no
``[none]``), and everything else of the task holds: the optimum, the vector layout, clone/replay, the API."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from marl_llm_envs import make, replay
from marl_llm_envs.reference.think_solve import clue_relay
from marl_llm_envs.scripted import play
from tests.envs.helpers import clue_words_env, thinker_message


def _env(**kw):
    return clue_words_env("discrete", hint_optional=False, **kw)


def test_the_thinker_moves_are_the_labels_and_its_prompt_offers_no_none():
    env, default = _env(), clue_words_env("discrete")
    assert env.action_space("thinker") == spaces.Discrete(4)
    assert default.action_space("thinker") == spaces.Discrete(5)
    assert env.unwrapped.action_names("thinker") == ["A", "B", "C", "D"]
    for seed in range(20):
        env.reset(seed=seed)
        default.reset(seed=seed)
        text = env.observe("thinker")["text"]
        assert "[none]" not in text and "send no hint" not in text
        assert "[none] (send no hint)" in default.observe("thinker")["text"]
        u = env.unwrapped
        # the same episode, laid out like the solver's prompt: the candidates as the default shows them, the clue's
        # accuracy, then the clue as a message naming its word just before the question, and the labels last
        assert u.candidates == default.unwrapped.candidates and u.clue() == default.unwrapped.clue()
        candidates = next(line for line in text.splitlines() if line.startswith("Candidate answers: "))
        assert candidates in default.observe("thinker")["text"].splitlines()
        assert "(the Solver cannot see it) is right 90% of the time" in text
        assert text.endswith(f"Message from your informant:\nI think the answer is {u.clue()}.\n\nAnswer with the label "
                             "of your choice in square brackets: [A], [B], [C], [D].")
        assert text.count(u.clue()) == 2                # in the candidates' list and in the clue, nowhere else
        assert env.observe("thinker")["action_mask"].tolist() == [1, 1, 1, 1]
        k = u.candidates.index(u.clue())
        env.step(k)                                   # move k names candidate k by its word
        assert thinker_message(env.observe("solver")["text"]) == f"I think the answer is {u.candidates[k]}."


def test_the_sent_message_keeps_the_vector_layout_of_the_default():
    env, default = _env(), clue_words_env("discrete")
    for seed in range(10):
        env.reset(seed=seed)
        default.reset(seed=seed)
        np.testing.assert_array_equal(env.observe("thinker")["observation"], default.observe("thinker")["observation"])
        env.step(2)                                   # [C] here is move 3 of the default ([none] first)
        default.step(3)
        np.testing.assert_array_equal(env.observe("solver")["observation"], default.observe("solver")["observation"])
        assert env.observe("solver")["text"] == default.observe("solver")["text"]


def test_the_reference_pair_scores_the_clue_accuracy():
    env = _env(thinker_clue_accuracy=0.8)
    rng = np.random.default_rng(0)
    rewards = [play(env, clue_relay, seed, rng=rng)["solver"] for seed in range(600)]
    assert abs(np.mean(rewards) - 0.8) < 0.05          # the optimum a = 0.8; binomial sd 0.016


def test_the_setting_is_recorded_replayed_and_checked():
    env = _env()
    env.reset(seed=3)
    env.step(1)
    env.step(0)
    assert env.transcript()["kwargs"]["hint_optional"] is False
    again = replay(env.transcript())
    assert again.transcript() == env.transcript() and again.rewards == env.rewards
    default = clue_words_env("discrete")
    default.reset(seed=3)
    assert "hint_optional" not in default.transcript()["kwargs"]    # older transcripts stay the same
    with pytest.raises(ValueError, match="hint_optional must be True or False"):
        clue_words_env("discrete", hint_optional=0)
    with pytest.raises(ValueError, match="a setting of the clue task in discrete mode"):
        make("think_solve-v0", action_mode="discrete", hint_optional=False)
    with pytest.raises(ValueError, match="a setting of the clue task in discrete mode"):
        clue_words_env("text", hint_optional=False)


def test_it_passes_pettingzoos_api_and_seed_tests():
    from pettingzoo.test import api_test, seed_test

    api_test(_env(), num_cycles=50)
    seed_test(_env, num_cycles=50)
