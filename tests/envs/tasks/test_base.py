"""What every task source keeps (marl_llm_envs/tasks/base.py): the same tasks from the same seed without the
global RNG, disjoint and stable train/test splits (split_of), the same tasks in processes with other hash seeds,
task ids, right answers and wrong distractors, printable questions, fixed-length features, bad arguments refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from marl_llm_envs.tasks import (
    ArithmeticTasks,
    DatasetTasks,
    KnightsKnavesTasks,
    Task,
    split_of,
)
from tests.envs.tasks.helpers import PRINTABLE, all_sources, available_splits


def test_same_rng_seed_gives_same_tasks(gsm8k_file):
    for src in all_sources(gsm8k_file):
        for split in available_splits(src):
            a = [src.sample(np.random.default_rng(123), split) for _ in range(3)]
            rng1, rng2 = np.random.default_rng(7), np.random.default_rng(7)
            seq1 = [src.sample(rng1, split) for _ in range(5)]
            seq2 = [src.sample(rng2, split) for _ in range(5)]
            assert a[0] == a[1] == a[2]
            assert seq1 == seq2


def test_sampling_does_not_touch_global_random_state():
    import random

    random.seed(0)
    np.random.seed(0)
    before = (random.getstate(), np.random.get_state()[1].copy())
    for src in all_sources():
        src.sample(np.random.default_rng(1), "train")
    assert random.getstate() == before[0]
    assert np.array_equal(np.random.get_state()[1], before[1])


@pytest.mark.parametrize("src", [ArithmeticTasks(1), ArithmeticTasks(3), KnightsKnavesTasks(2),
                                 KnightsKnavesTasks(3)], ids=repr)
def test_train_and_test_splits_are_disjoint_over_many_samples(src):
    rng = np.random.default_rng(0)
    train = {src.sample(rng, "train").question for _ in range(300)}
    test = {src.sample(rng, "test").question for _ in range(150)}
    assert train.isdisjoint(test)
    assert all(split_of(q, src.test_fraction) == "train" for q in train)
    assert all(split_of(q, src.test_fraction) == "test" for q in test)
    assert len(test) > 20  # the test split is not degenerate


def test_split_of_is_stable_and_roughly_ten_percent():
    qs = [f"question number {i}" for i in range(4000)]
    frac = sum(split_of(q) == "test" for q in qs) / len(qs)
    assert 0.07 < frac < 0.13
    # fixed values, the same in every process and Python version: the first 8 bytes of sha256(question), big-endian,
    # over 2**64, below 0.1 (worked out with hashlib alone); Python's salted hash() would differ per process
    assert [i for i in range(200) if split_of(qs[i]) == "test"] == [9, 29, 31, 49, 53, 62, 69, 90, 107, 113, 141, 148,
                                                                   153, 156, 157, 160, 161, 168, 173, 177, 188]
    assert split_of("abc", 0.999) == "test" and split_of("abc", 1e-9) == "train"


_PLAY_40_SEEDS = r"""
import hashlib, json
import numpy as np
from marl_llm_envs import make
from marl_llm_envs.scripted import random_legal
from marl_llm_envs.tasks import split_of

out = {"split_of": [split_of(f"question number {i}") for i in range(200)]}
for env_id, kw in [("think_solve-v0", {}), ("think_solve-v0", {"split": "test", "tasks": "countdown"}),
                   ("voting-v0", {"tasks": "knights_knaves", "action_mode": "discrete"}),
                   ("voting-v0", {"split": "test", "n_voters": 2}), ("kuhn_poker-v0", {"rounds": 3}),
                   ("mini_hanabi-v1", {"action_mode": "discrete"})]:
    for seed in range(40):
        env = make(env_id, **kw)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        seen = hashlib.sha256()
        while not env.done:
            seen.update(env.observe(env.agent_selection)["text"].encode())
            env.step(random_legal(env, env.agent_selection, rng))
        task = getattr(env, "task", None)
        out[f"{env_id} {kw} {seed}"] = {
            "task": None if task is None else [task.task_id, task.question, task.answer, split_of(task.question)],
            "transcript": env.transcript(), "prompts": seen.hexdigest(), "team_rewards": env.team_rewards()}
print(json.dumps(out, sort_keys=True))
"""


def test_tasks_splits_and_transcripts_are_the_same_in_processes_with_different_hash_seeds():
    """Python salts str hashes per process (PYTHONHASHSEED): nothing an episode depends on may use them."""
    root = Path(__file__).resolve().parents[3]
    runs = [subprocess.Popen([sys.executable, "-c", _PLAY_40_SEEDS], cwd=root, text=True, stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONHASHSEED": str(h)}) for h in (1, 2)]
    outs = [json.loads(run.communicate(timeout=300)[0]) for run in runs]
    assert all(run.returncode == 0 for run in runs)
    assert outs[0] == outs[1]
    episodes = [v for k, v in outs[0].items() if k != "split_of"]
    assert len(episodes) == 6 * 40
    splits = [e["task"][3] for e in episodes if e["task"] is not None]
    assert splits.count("test") == 80 and splits.count("train") == 80  # each env drew from the split it asked


def test_task_ids_are_stable_and_encode_the_split():
    src = ArithmeticTasks(2)
    t = src.sample(np.random.default_rng(5), "test")
    assert re.fullmatch(r"arithmetic-d2/test/[0-9a-f]{12}", t.task_id)
    rng = np.random.default_rng(9)
    seen = {}
    for _ in range(300):
        t = src.sample(rng, "train")
        assert seen.setdefault(t.task_id, t.question) == t.question


def test_unknown_split_is_rejected(gsm8k_file):
    for src in all_sources(gsm8k_file):
        with pytest.raises(ValueError, match="split"):
            src.sample(np.random.default_rng(0), "validation")


def test_every_distractor_is_wrong_and_the_answer_is_right(gsm8k_file):
    for src in all_sources(gsm8k_file):
        rng = np.random.default_rng(3)
        for split in available_splits(src):
            for _ in range(40 if not isinstance(src, DatasetTasks) else 8):
                t = src.sample(rng, split)
                assert isinstance(t, Task) and t.source == src.name
                assert src.verify(t, t.answer)
                assert len(t.distractors) >= 3
                assert len(set(t.distractors)) == len(t.distractors)
                assert t.answer not in t.distractors
                for d in t.distractors:
                    assert not src.verify(t, d), (t.question, t.answer, d)
                    assert set(d) <= PRINTABLE


def test_questions_are_printable_ascii_and_do_not_leak_the_answer():
    for src in all_sources():
        rng = np.random.default_rng(11)
        for _ in range(40):
            t = src.sample(rng, "train")
            assert set(t.question) <= PRINTABLE
            assert set(t.answer) <= PRINTABLE
            if isinstance(src, ArithmeticTasks):
                assert t.answer not in re.findall(r"-?\d+", t.question.replace("(-", "-"))
            else:
                assert t.answer not in t.question
                assert all(d not in t.question for d in t.distractors)


def test_features_have_fixed_length_and_unit_range(gsm8k_file):
    for src in all_sources(gsm8k_file):
        rng = np.random.default_rng(2)
        for _ in range(20):
            t = src.sample(rng, available_splits(src)[0])
            assert len(t.features) == src.feature_size > 0
            assert all(isinstance(x, float) and -1.0 <= x <= 1.0 for x in t.features)


def test_features_distinguish_different_questions():
    src = ArithmeticTasks(3)
    rng = np.random.default_rng(4)
    ts = [src.sample(rng) for _ in range(50)]
    assert len({t.features for t in ts}) == len({t.question for t in ts})


def test_invalid_constructor_arguments_are_rejected():
    for bad in (0, 6, 2.5):
        with pytest.raises(ValueError):
            ArithmeticTasks(bad)
    for bad in (1, 5):
        with pytest.raises(ValueError):
            KnightsKnavesTasks(bad)
    with pytest.raises(ValueError):
        ArithmeticTasks(2, test_fraction=0.0)
