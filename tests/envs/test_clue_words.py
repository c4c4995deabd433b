"""think_solve-v0's shortcut-free clue task (``clue_pool="words"``): the candidates are words drawn per episode, the
content behind each label is permuted per episode, the hint names a word and never a label, the train and held-out
pools are disjoint, and clone/replay stay exact."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pytest

from marl_llm_envs import make, replay
from marl_llm_envs.envs.clue_words import CLUE_WORDS, clue_words
from marl_llm_envs.reference.think_solve import clue_relay
from marl_llm_envs.scripted import play
from tests.envs.helpers import clue_words_env, thinker_message


def _env(**kw):
    return clue_words_env("discrete", **kw)


def test_solver_prompts_vary_over_hundreds_of_episodes():
    env = _env()
    prompts = set()
    for seed in range(300):
        env.reset(seed=seed)
        env.step(1 + seed % 4)            # every hint in turn
        prompts.add(env.observe("solver")["text"])
    assert len(prompts) >= 295           # the bare-label clue task has 5 solver prompts in all
    labels = make("think_solve-v0", thinker_clue_accuracy=0.9, action_mode="discrete")
    fixed = set()
    for seed in range(300):
        labels.reset(seed=seed)
        labels.step(1 + seed % 4)
        fixed.add(labels.observe("solver")["text"])
    assert len(fixed) == 4               # the shortcut this kwarg removes


def test_each_word_sits_behind_different_labels_and_the_true_label_is_uniform():
    env = _env()
    positions: dict[str, set[int]] = defaultdict(set)
    truth = np.zeros(4, int)
    for seed in range(2000):
        env.reset(seed=seed)
        for k, w in enumerate(env.candidates):
            positions[w].add(k)
        truth[env.answer_index()] += 1
        assert len(set(env.candidates)) == 4
    assert len(positions) == len(clue_words("train"))               # the whole pool is used
    assert all(len(p) >= 2 for p in positions.values())             # no word has a label of its own
    assert truth.min() > 400 and truth.max() < 600                  # 500 each, uniform (binomial sd 19)


def test_the_hint_and_the_clue_name_the_word_never_the_label():
    env = _env()
    label_like = re.compile(r"\(([A-H])\)|\[([A-H])\]|\b[A-H]\b")
    for seed in range(200):
        env.reset(seed=seed)
        thinker = env.observe("thinker")["text"]
        clue = re.search(r"the answer is (\w+)\. Such clues", thinker).group(1)
        assert clue in env.candidates and clue == env.clue()
        move = 1 + seed % 4
        env.step(move)
        message = thinker_message(env.observe("solver")["text"])
        assert message == f"I think the answer is {env.candidates[move - 1]}."
        assert not label_like.search(message), message
        assert f'[{"ABCD"[move - 1]}] ("I think the answer is {env.candidates[move - 1]}")' in thinker


def test_train_and_held_out_pools_are_disjoint_and_each_split_draws_only_its_own():
    train, test = set(clue_words("train")), set(clue_words("test"))
    assert not train & test and train | test == set(CLUE_WORDS) and "none" not in train | test
    assert len(test) >= 50 and len(train) >= 150
    for split, pool in (("train", train), ("test", test)):
        env = _env(split=split)
        for seed in range(100):
            env.reset(seed=seed)
            assert set(env.candidates) <= pool
    with pytest.raises(ValueError, match="split='dev' is not one of"):
        clue_words("dev")


def test_the_reference_pair_scores_the_clue_accuracy_and_reward_follows_the_word():
    env = _env(thinker_clue_accuracy=0.8)
    rng = np.random.default_rng(0)
    rewards = [play(env, clue_relay, seed, rng=rng)["solver"] for seed in range(600)]     # the team reward
    # the optimum max(a, (1 - a) / 3) = 0.8; binomial sd over 600 episodes is 0.016
    assert abs(np.mean(rewards) - 0.8) < 0.05


def test_clone_and_replay_are_exact():
    env = _env()
    env.reset(seed=11)
    copy = env.clone()
    env.step(2)
    copy.step(2)
    assert env.observe("solver")["text"] == copy.observe("solver")["text"]
    env.step(1)
    copy.step(1)
    assert env.rewards == copy.rewards and env.infos["solver"] == copy.infos["solver"]
    again = replay(env.transcript())
    assert again.transcript() == env.transcript()
    assert again.infos["solver"] == env.infos["solver"] and again.rewards == env.rewards
    assert env.transcript()["kwargs"]["clue_pool"] == "words"


def test_the_default_records_no_clue_pool_and_bad_settings_are_named():
    env = make("think_solve-v0", thinker_clue_accuracy=0.9, action_mode="discrete")
    env.reset(seed=0)
    assert "clue_pool" not in env.transcript()["kwargs"]
    with pytest.raises(ValueError, match="clue_pool='letters' is not one of"):
        make("think_solve-v0", clue_pool="letters")
    with pytest.raises(ValueError, match="give thinker_clue_accuracy too"):
        make("think_solve-v0", action_mode="discrete", clue_pool="words")
    with pytest.raises(ValueError, match="give thinker_clue_accuracy too"):
        make("think_solve-v0", action_mode="text", clue_pool="words")


@pytest.mark.parametrize("split", ["train", "test"])
def test_the_words_task_passes_pettingzoos_api_and_seed_tests(split):
    from pettingzoo.test import api_test, seed_test

    api_test(_env(split=split), num_cycles=50)
    seed_test(lambda: _env(split=split), num_cycles=50)
