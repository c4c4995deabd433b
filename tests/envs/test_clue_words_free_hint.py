"""think_solve-v0's free-text hint (``clue_pool="words"`` in text mode): the thinker writes its hint in words, the
solver answers a label; the thinker's view has no labels and no menu order, the hint the solver sees never holds a
label, the scripted reader takes the first candidate word of the hint (linear, capped), and the reference pair scores
the clue's accuracy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from marl_llm_envs import replay
from marl_llm_envs.envs.clue_words import clue_words
from marl_llm_envs.envs.think_solve import without_labels
from marl_llm_envs.reference.think_solve import clue_relay
from marl_llm_envs.scripted import follower_solver, play
from tests.envs.helpers import clue_words_env, thinker_message


def _env(**kw):
    return clue_words_env("text", **kw)


def test_the_thinker_writes_free_text_and_the_solver_answers_a_label():
    env = _env()
    env.reset(seed=3)
    base = env.unwrapped
    assert base.free_hint and env.legal_actions("thinker") == []
    env.step("I think it is " + base.clue())
    assert env.legal_actions("solver") == ["[A]", "[B]", "[C]", "[D]"]
    env.step(f"[{base.labels[base.candidates.index(base.clue())]}]")
    info = env.infos["solver"]
    assert info["answer"] == base.labels[base.candidates.index(base.clue())]
    assert info["correct"] == info["clue_correct"] and env.rewards["solver"] == float(info["correct"])


def test_the_thinkers_view_lists_the_words_alphabetically_without_labels():
    env = _env()
    for seed in range(50):
        env.reset(seed=seed)
        text = env.observe("thinker")["text"]
        listed = text.split("(the Solver sees them in another order): ")[1].split("\n")[0]
        assert listed.split(", ") == sorted(env.unwrapped.candidates)
        assert not re.search(r"[(\[][A-D][)\]]", text)          # no label anywhere in the thinker's prompt
        assert f"the answer is {env.unwrapped.clue()}." in text
        solver_list = ", ".join(f"({x}) {w}" for x, w in zip("ABCD", env.unwrapped.candidates))
        env.step("hello")
        assert solver_list in env.observe("solver")["text"]     # the solver's menu: the drawn order, labelled


@pytest.mark.parametrize("hint", ["The answer is (B).", "pick [c] or ( D )", "(a)(b)[C]", "B) and (B"])
def test_the_hint_the_solver_sees_never_holds_a_label(hint):
    env = _env()
    env.reset(seed=1)
    env.step(hint)
    shown = thinker_message(env.observe("solver")["text"])
    assert not re.search(r"[(\[]\s*[A-Za-z]\s*[)\]]", shown), shown
    assert shown == without_labels(hint)


def test_a_long_hint_is_cut_to_max_thought_chars():
    env = _env(max_thought_chars=50)
    env.reset(seed=2)
    env.step("x" * 500)
    assert len(thinker_message(env.observe("solver")["text"])) == 50
    assert env.infos["thinker"]["thought_truncated"]


def test_the_reader_takes_the_first_candidate_word_named_as_a_whole_word():
    env = _env()
    env.reset(seed=5)
    base = env.unwrapped
    a, b, c, d = base.candidates
    assert base.hint_candidate(f"not {b.upper()}, it is {a}!") == 1
    assert base.hint_candidate(f"{c}{d} is no word; {d}.") == 3       # "camelsand" names neither
    assert base.hint_candidate(f"{a}s") is None                        # a plural is another word
    assert base.hint_candidate("no idea") is None and base.hint_candidate("") is None


def test_the_reader_reads_only_the_capped_hint():
    # one regex pass over at most max_thought_chars characters: a word after the cap is never read, however long
    # the text (what the solver is shown is cut at the same place)
    env = _env(max_thought_chars=100)
    env.reset(seed=5)
    base = env.unwrapped
    assert base.hint_candidate("z " * 60 + base.candidates[2]) is None      # the word starts after character 100
    assert base.hint_candidate("z " * 45 + base.candidates[2]) == 2
    assert base.hint_candidate("ab " * 2_000_000 + base.candidates[0]) is None


def test_the_scripted_reader_follows_the_hint_and_guesses_uniformly_without_one():
    env = _env()
    rng = np.random.default_rng(0)
    env.reset(seed=8)
    base = env.unwrapped
    env.step(f"surely {base.candidates[2]}, not {base.candidates[0]}")
    assert follower_solver(env, "solver", rng) == "[C]"
    env.reset(seed=8)
    env.step("no word of the list here")
    counts = {x: 0 for x in ("[A]", "[B]", "[C]", "[D]")}
    for _ in range(800):
        counts[follower_solver(env, "solver", rng)] += 1
    assert min(counts.values()) > 150                       # 200 each (binomial sd 12)


def test_the_reference_pair_scores_the_clue_accuracy():
    env = _env(thinker_clue_accuracy=0.8)
    rng = np.random.default_rng(0)
    rewards = [play(env, clue_relay, seed, rng=rng)["solver"] for seed in range(600)]     # the team reward
    assert abs(np.mean(rewards) - 0.8) < 0.05              # the optimum; binomial sd 0.016


def test_held_out_split_clone_and_replay():
    env = _env(split="test")
    env.reset(seed=4)
    assert set(env.unwrapped.candidates) <= set(clue_words("test"))
    copy = env.clone()
    env.step("maybe " + env.unwrapped.candidates[1])
    copy.step("maybe " + copy.unwrapped.candidates[1])
    assert env.observe("solver")["text"] == copy.observe("solver")["text"]
    env.step("[B]")
    again = replay(env.transcript())
    assert again.infos["solver"] == env.infos["solver"] and again.rewards == env.rewards


def test_the_free_hint_passes_pettingzoos_api_and_seed_tests():
    from pettingzoo.test import api_test, seed_test

    api_test(_env(), num_cycles=50)
    seed_test(_env, num_cycles=50)
