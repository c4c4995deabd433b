"""Tests for marl_llm_envs.tasks: problem sources, verifiers, splits and the factory."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marl_llm_envs import tasks as tasks_mod
from marl_llm_envs.tasks import arithmetic
from marl_llm_envs.tasks import (
    ArithmeticTasks,
    CountdownTasks,
    DatasetTasks,
    KnightsKnavesTasks,
    Task,
    TaskSource,
    extract_boxed,
    extract_dataset_answer,
    make_task_source,
    split_of,
    to_printable_ascii,
)

PRINTABLE = set(string.printable)

# --------------------------------------------------------------------------
# fixtures / helpers
# --------------------------------------------------------------------------

GSM8K_ROWS = [
    {"question": "Tom has 3 apples and buys 4 more. How many apples does he have?",
     "answer": "He has 3 + 4 = 7 apples.\n#### 7"},
    {"question": "A box holds 12 eggs. How many eggs are in 6 boxes?",
     "answer": "12 * 6 = 72\n#### 72"},
    {"question": "Sara reads 20 pages a day for 5 days. How many pages?",
     "answer": "20 * 5 = 100\n#### 100"},
    {"question": "A shirt costs 15 dollars. How much do 3 shirts cost?",
     "answer": "15 * 3 = 45\n#### 45"},
    {"question": "There were 50 birds; 18 flew away. How many are left?",
     "answer": "50 - 18 = 32\n#### 32"},
    {"question": "A farm has 1,200 sheep and sells 200. How many remain?",
     "answer": "1200 - 200 = 1000\n#### 1,000"},
]

MATH_ROWS = [
    {"problem": "What is $\\frac{2}{4}$ in lowest terms?",
     "solution": "Divide by 2 to get $\\boxed{\\frac{1}{2}}$."},
    {"problem": "Simplify $\\sqrt{8}$.",
     "solution": "We have $\\sqrt{8} = \\boxed{2\\sqrt{2}}$."},
    {"problem": "Expand $(x+1)^2 - 2x - 1$.",
     "solution": "The result is $\\boxed{x^{2}}$."},
    {"problem": "Compute $3 \\cdot 4$.", "solution": "$\\boxed{12}$"},
    {"problem": "What is $\\frac{3}{4} + \\frac{1}{4}$? Caf\u00e9 \u20ac",
     "solution": "First \\boxed{7} was wrong; the answer is $\\boxed{1}$."},
]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def gsm8k_file(tmp_path):
    return write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K_ROWS)


@pytest.fixture
def math_file(tmp_path):
    return write_jsonl(tmp_path / "math.jsonl", MATH_ROWS)


def all_sources(gsm8k_file=None):
    sources = [ArithmeticTasks(d) for d in range(1, 6)]
    sources += [KnightsKnavesTasks(p) for p in range(2, 5)]
    sources += [CountdownTasks(3), CountdownTasks(5)]
    if gsm8k_file is not None:
        sources.append(DatasetTasks(gsm8k_file, test_fraction=0.5))
    return sources


def available_splits(src):
    if isinstance(src, DatasetTasks):
        return [s for s in ("train", "test") if src.num_problems(s)]
    return ["train", "test"]


def arith_value(question: str) -> int:
    """Independent evaluation: check the character set, then let Python evaluate it."""
    m = re.fullmatch(r"Compute the value of (.+)\.", question)
    assert m, question
    expr = m.group(1)
    assert set(expr) <= set("0123456789+-*() "), expr
    return eval(expr, {"__builtins__": {}}, {})  # noqa: S307 - restricted charset checked above


# independent re-implementation of the knights-and-knaves semantics from the question text
_ATOM = r"(?:I am|(\w+) is) a (knight|knave)"


def _atom_fn(m_name, m_kind, speaker, index):
    target = speaker if m_name is None else index[m_name]
    want = m_kind == "knight"
    return lambda a: a[target] == want


def kk_statement_fn(text: str, speaker: int, index: dict, n: int):
    m = re.fullmatch(_ATOM, text)
    if m:
        return _atom_fn(m.group(1), m.group(2), speaker, index)
    m = re.fullmatch(_ATOM + r" (and|or) " + _ATOM, text)
    if m:
        f = _atom_fn(m.group(1), m.group(2), speaker, index)
        g = _atom_fn(m.group(4), m.group(5), speaker, index)
        if m.group(3) == "and":
            return lambda a: f(a) and g(a)
        return lambda a: f(a) or g(a)
    m = re.fullmatch(r"(\w+) and (\w+) are (the same kind|of different kinds)", text)
    if m:
        x = speaker if m.group(1) == "I" else index[m.group(1)]
        y = speaker if m.group(2) == "I" else index[m.group(2)]
        if m.group(3) == "the same kind":
            return lambda a: a[x] == a[y]
        return lambda a: a[x] != a[y]
    if text == "None of us is a knight":
        return lambda a: sum(a) == 0
    m = re.fullmatch(r"Exactly (one|two|three|four) of us (?:is a knight|are knights)", text)
    if m:
        k = ["one", "two", "three", "four"].index(m.group(1)) + 1
        return lambda a: sum(a) == k
    raise AssertionError(f"unparsed statement {text!r}")


def kk_brute_force(question: str):
    names_line = re.search(r"You meet \d+ inhabitants: (.+)\.\n", question).group(1)
    names = re.split(r", | and ", names_line)
    index = {nm: i for i, nm in enumerate(names)}
    stmts = []
    for speaker_name, text in re.findall(r'^(\w+) says: "(.+)\."$', question, flags=re.M):
        s = index[speaker_name]
        stmts.append((s, kk_statement_fn(text, s, index, len(names))))
    assert len(stmts) == len(names)
    sols = [
        a for a in itertools.product((True, False), repeat=len(names))
        if all(a[s] == f(a) for s, f in stmts)
    ]
    return names, sols


# --------------------------------------------------------------------------
# determinism and splits
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# answers, distractors, questions, features
# --------------------------------------------------------------------------


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


def test_arithmetic_answer_matches_expression_tree():
    for d in range(1, 6):
        src = ArithmeticTasks(d)
        rng = np.random.default_rng(d)
        for _ in range(60):
            t = src.sample(rng, "train")
            assert int(t.answer) == arith_value(t.question)
            assert t.answer == str(int(t.answer))


def test_arithmetic_difficulty_raises_operations_and_operand_size():
    def stats(d):
        rng = np.random.default_rng(0)
        qs = [ArithmeticTasks(d).sample(rng).question for _ in range(50)]
        ops = np.mean([len(re.findall(r" [-+*] ", q)) for q in qs])
        big = np.mean([max(int(x) for x in re.findall(r"\d+", q)) for q in qs])
        return ops, big

    s = [stats(d) for d in range(1, 6)]
    assert all(a[0] < b[0] for a, b in zip(s, s[1:]))
    assert all(a[1] < b[1] for a, b in zip(s, s[1:]))


def test_arithmetic_distractors_include_precedence_and_parenthesis_mistakes():
    # a hand-built expression: (12 - 7) * 3 + 4 = 19; ignoring parens: 12 - 21 + 4 = -5;
    # left to right without parens: ((12 - 7) * 3) + 4 = 19 (same), so -5 must show up.
    tree = arithmetic._BinOp("+", arithmetic._BinOp("*", arithmetic._BinOp(
        "-", arithmetic._Num(12), arithmetic._Num(7)), arithmetic._Num(3)), arithmetic._Num(4))
    toks = arithmetic._tokens(tree)
    assert arithmetic._render(toks) == "(12 - 7) * 3 + 4"
    assert arithmetic._eval_tree(tree) == 19
    assert arithmetic._eval_flat(toks, left_to_right=False) == -5
    src = ArithmeticTasks(2, num_distractors=8)
    ds = src.expression_distractors(np.random.default_rng(0), tree, toks, 19)
    assert "-5" in ds and "19" not in ds and len(ds) == 8


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


# --------------------------------------------------------------------------
# knights and knaves
# --------------------------------------------------------------------------


@pytest.mark.parametrize("people", [2, 3, 4])
def test_knights_knaves_puzzles_have_exactly_one_solution(people):
    src = KnightsKnavesTasks(people)
    rng = np.random.default_rng(people)
    for split in ("train", "test"):
        for _ in range(40):
            t = src.sample(rng, split)
            names, sols = kk_brute_force(t.question)
            assert len(names) == people
            assert len(sols) == 1
            expected = ", ".join(f"{n}: {'knight' if k else 'knave'}" for n, k in zip(names, sols[0]))
            assert t.answer == expected


def test_knights_knaves_verify_accepts_reasonable_variants():
    src = KnightsKnavesTasks(3)
    t = Task("kk/x", "q", "Alice: knight, Bob: knave, Carol: knight", "knights_knaves", (), ())
    good = [
        "Alice: knight, Bob: knave, Carol: knight",
        "  alice: KNIGHT; bob: knave; carol: knight. ",
        "Bob: knave, Carol: knight, Alice: knight",
        "Alice is a knight, Bob is a knave and Carol is a knight",
        "Alice and Carol are knights, Bob is a knave",
        "Alice: knight\nBob: knave\nCarol: knight",
        "Knights: Alice, Carol; knaves: Bob",
        "Alice - knight and Bob - knave and Carol - knight",
        "Alice is a knight, Bob is not a knight, Carol is a knight",
        "\\text{Alice: knight, Bob: knave, Carol: knight}",
    ]
    bad = [
        "Alice: knight, Bob: knight, Carol: knight",
        "Alice: knight, Bob: knave",  # incomplete
        "Alice: knight, Bob: knave, Carol: knight, Alice: knave",  # contradictory
        "",
        "knight",
        "Alice Bob Carol",
    ]
    for r in good:
        assert src.verify(t, r), r
    for r in bad:
        assert not src.verify(t, r), r


# --------------------------------------------------------------------------
# countdown
# --------------------------------------------------------------------------


def test_countdown_verify_accepts_any_correct_expression_over_the_given_numbers():
    src = CountdownTasks(4)
    q = ("Using the numbers 2, 3, 4, 6 (each at most once) and the operations +, -, *, / with "
         "parentheses, write an expression equal to 24.")
    t = Task("c", q, "4 * 6", "countdown", (), ())
    for r in ["4 * 6", "(2 + 6) * 3", "6 * 4", "2 * 3 * 4", "6 / (3 - 2) * 4", "4 \\times 6",
              "(4*6) = 24", " 4*6. "]:
        assert src.verify(t, r), r
    for r in ["4 * 6 * 1", "6 * 4 = 25", "6 + 6 + 6 + 6", "6 * (2 + 3) - 6", "24", "4 * 6 /",
              "2 / (3 - 3)", "", "import os", "(4 * 6"]:
        assert not src.verify(t, r), r


def test_countdown_answer_reaches_target_with_given_numbers():
    src = CountdownTasks(5)
    rng = np.random.default_rng(0)
    for _ in range(30):
        t = src.sample(rng)
        m = re.search(r"numbers ([\d, ]+) \(each.*equal to (\d+)\.", t.question)
        nums = sorted(int(x) for x in m.group(1).split(","))
        assert sorted(int(x) for x in re.findall(r"\d+", t.answer)) == nums
        assert arith_value(f"Compute the value of {t.answer}.") == int(m.group(2))


# --------------------------------------------------------------------------
# verification tolerance
# --------------------------------------------------------------------------


def test_arithmetic_verify_is_tolerant_to_formatting():
    src = ArithmeticTasks(2)
    t = Task("a/train/0", "Compute the value of 40 + 2.", "42", "arithmetic", ("41", "43", "-42"), ())
    for r in [" 42 ", "42", "+42", "42.0", "42.000", "42.", "$42$", "\\boxed{42}", "x = 42",
              "\\frac{84}{2}", "84/2"]:
        assert src.verify(t, r), r
    for r in ["43", "-42", "4 2 0", "", "forty-two", "42x", "41.9", "4.2e1x", "1/0"]:
        assert not src.verify(t, r), r
    neg = Task("a/train/1", "q", "-1234", "arithmetic", (), ())
    assert src.verify(neg, "-1,234") and src.verify(neg, "\u22121234") and not src.verify(neg, "1234")


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


# --------------------------------------------------------------------------
# datasets
# --------------------------------------------------------------------------


def test_gsm8k_style_jsonl_takes_the_answer_after_hashes(gsm8k_file):
    src = DatasetTasks(gsm8k_file)
    assert len(src) == len(GSM8K_ROWS)
    answers = {q: a for q, a in src._items}
    assert answers[GSM8K_ROWS[1]["question"]] == "72"
    assert answers[GSM8K_ROWS[5]["question"]] == "1000"
    t = Task("d", GSM8K_ROWS[1]["question"], "72", "jsonl", (), ())
    for r in ["72", " 72.0 ", "+72", "$72$", "72."]:
        assert src.verify(t, r), r
    assert not src.verify(t, "73")
    got = {src.sample(np.random.default_rng(i), s).question
           for i in range(40) for s in available_splits(src)}
    assert got == {r["question"] for r in GSM8K_ROWS}


def test_math_style_jsonl_extracts_last_boxed_and_verifies_with_math_verify(math_file):
    src = DatasetTasks(math_file)  # fields auto-detected: problem / solution
    assert (src.question_field, src.answer_field) == ("problem", "solution")
    answers = [a for _, a in src._items]
    assert answers == ["\\frac{1}{2}", "2\\sqrt{2}", "x^{2}", "12", "1"]
    half = Task("d", "q", "\\frac{1}{2}", "jsonl", (), ())
    for r in ["0.5", "1/2", "\\frac12", "\\dfrac{1}{2}", "$\\frac{1}{2}$", " \\frac{1}{2} "]:
        assert src.verify(half, r), r
    for r in ["0.6", "2", "1/3", "", "\\frac{1}{2"]:
        assert not src.verify(half, r), r
    root = Task("d", "q", "2\\sqrt{2}", "jsonl", (), ())
    assert src.verify(root, "\\sqrt{8}") and not src.verify(root, "\\sqrt{2}")
    assert src.verify(Task("d", "q", "x^{2}", "jsonl", (), ()), "x^2")


@pytest.mark.parametrize("where", ["main thread", "other thread"])
def test_an_answer_that_sympy_never_finishes_is_wrong_within_the_time_limit(math_file, monkeypatch, where):
    # math_verify's own timeout is a SIGALRM: in a thread other than the main one it was no limit at all, and
    # 9^{9^{9^{9}}} never finished. The check now runs in a worker process that is killed at the limit.
    import threading
    import time

    from marl_llm_envs.tasks import math_check

    pytest.importorskip("math_verify")
    monkeypatch.setattr(math_check, "CHECK_SECONDS", 1.0)
    src = DatasetTasks(math_file)
    half = Task("d", "q", "\\frac{1}{2}", "jsonl", (), ())
    results = []

    def check():
        for reply in ["9^{9^{9^{9}}}", "\\dfrac{1}{2}", "10^{10^{10}}", "1/2", "\\frac{2}{3}"]:
            start = time.monotonic()
            results.append((reply, src.verify(half, reply), time.monotonic() - start))

    if where == "main thread":
        check()
    else:
        thread = threading.Thread(target=check, daemon=True)
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "a check ran past the time limit"
    assert [(r, v) for r, v, _ in results] == [("9^{9^{9^{9}}}", False), ("\\dfrac{1}{2}", True),
                                               ("10^{10^{10}}", False), ("1/2", True), ("\\frac{2}{3}", False)]
    assert all(seconds < 15 for _, _, seconds in results), results     # the limit, a restart, a loaded machine


def test_a_checker_worker_that_died_between_checks_costs_no_wrong_verdict(monkeypatch):
    # killed (out of memory, by hand) after one check and before the next, whose write finds the pipe closed
    import os
    import signal

    from marl_llm_envs.tasks import math_check

    pytest.importorskip("math_verify")
    assert math_check.equal("\\frac{1}{2}", "\\dfrac{1}{2}")
    process = math_check._worker["process"]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    monkeypatch.setattr(process, "poll", lambda: None)     # its death not seen yet when the next check starts
    assert math_check.equal("\\frac{1}{2}", "\\dfrac{1}{2}")
    assert math_check._worker["process"] is not process


def test_dataset_questions_are_transliterated_to_printable_ascii(math_file):
    src = DatasetTasks(math_file)
    q = [q for q, _ in src._items][-1]
    assert q.endswith("Cafe ?")
    assert set(q) <= PRINTABLE
    assert to_printable_ascii("na\u00efve \u00bd \u4e2d") == "naive 1?2 ?"


def test_extract_boxed_handles_nested_braces():
    assert extract_boxed("a \\boxed{\\frac{1}{2}} b \\boxed{\\sqrt{\\frac{a}{b}}}") == "\\sqrt{\\frac{a}{b}}"
    assert extract_boxed("no box here") is None
    assert extract_boxed("\\boxed{unterminated") is None
    assert extract_dataset_answer("work\n#### 1,234") == "1234"
    assert extract_dataset_answer(" 5 ") == "5"
    assert extract_dataset_answer(3.0) == "3"


def test_dataset_split_field_overrides_the_hash(tmp_path):
    rows = [dict(r, split="test" if i < 2 else "train") for i, r in enumerate(GSM8K_ROWS)]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    src = DatasetTasks(path, split_field="split")
    assert src.num_problems("test") == 2 and src.num_problems("train") == 4
    test_qs = {src.sample(np.random.default_rng(i), "test").question for i in range(30)}
    assert test_qs == {GSM8K_ROWS[0]["question"], GSM8K_ROWS[1]["question"]}
    bad = write_jsonl(tmp_path / "bad_split.jsonl", [dict(r, split="holdout") for r in GSM8K_ROWS])
    with pytest.raises(ValueError, match="line 1"):
        DatasetTasks(bad, split_field="split")


def test_dataset_split_without_problems_raises(gsm8k_file):
    src = DatasetTasks(gsm8k_file, test_fraction=1e-9)
    assert src.num_problems("test") == 0
    with pytest.raises(ValueError, match="test"):
        src.sample(np.random.default_rng(0), "test")


def test_corrupt_jsonl_reports_file_and_line_number(tmp_path):
    path = tmp_path / "corrupt.jsonl"
    lines = [json.dumps(r) for r in GSM8K_ROWS[:2]] + ["{not json"] + [json.dumps(GSM8K_ROWS[3])]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"corrupt\.jsonl.*line 3"):
        DatasetTasks(path)


def test_a_task_path_that_is_not_a_file_is_a_bad_kwarg_for_the_clis_too(tmp_path):
    """A missing task file is a FileNotFoundError (as it was) and a ValueError, like every other bad env kwarg: the
    trainer's and the rollout CLI's error path catches it, where a bare FileNotFoundError was a traceback."""
    import marl_llm_envs

    for path, message in ((tmp_path / "none.jsonl", r"task file not found: .*none\.jsonl$"),
                          (tmp_path, r"task file not found: .* \(a folder\)$")):
        with pytest.raises(FileNotFoundError, match=message):
            DatasetTasks(path)
        with pytest.raises(ValueError, match=message):
            marl_llm_envs.make("think_solve-v0", tasks={"name": "jsonl", "path": str(path)})


def test_missing_field_reports_line_number(tmp_path):
    rows = list(GSM8K_ROWS)
    rows[3] = {"question": "no answer here"}
    path = write_jsonl(tmp_path / "missing.jsonl", rows)
    with pytest.raises(ValueError, match=r"missing\.jsonl.*line 4.*answer"):
        DatasetTasks(path)
    path2 = write_jsonl(tmp_path / "nofields.jsonl", [{"foo": 1, "bar": 2}])
    with pytest.raises(ValueError, match="question"):
        DatasetTasks(path2)
    path3 = write_jsonl(tmp_path / "array.jsonl", [[1, 2]])
    with pytest.raises(ValueError, match="line 1"):
        DatasetTasks(path3)


def test_dataset_needs_enough_distinct_answers_for_distractors(tmp_path):
    rows = [{"question": f"q{i}", "answer": "#### 1"} for i in range(10)]
    with pytest.raises(ValueError, match="distinct answers"):
        DatasetTasks(write_jsonl(tmp_path / "same.jsonl", rows))


def test_dataset_missing_math_verify_gives_install_hint(gsm8k_file, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "math_verify" else real(name, *a))
    with pytest.raises(ImportError, match="pip install math-verify"):
        DatasetTasks(gsm8k_file)
    # procedural sources do not need it
    ArithmeticTasks(1).sample(np.random.default_rng(0))


def test_parquet_round_trip_matches_jsonl(tmp_path, gsm8k_file):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "gsm8k.parquet"
    pq.write_table(pa.Table.from_pylist(GSM8K_ROWS), path)
    src_pq = make_task_source(f"parquet:{path}")
    src_js = DatasetTasks(gsm8k_file)
    assert src_pq.name == "parquet" and len(src_pq) == len(GSM8K_ROWS)
    for i in range(10):
        a = src_pq.sample(np.random.default_rng(i), "train")
        b = src_js.sample(np.random.default_rng(i), "train")
        assert (a.question, a.answer, a.distractors, a.features) == (b.question, b.answer, b.distractors,
                                                                       b.features)
        assert a.source == "parquet"


def test_importing_tasks_does_not_import_math_verify_or_pyarrow():
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('t', {str(Path(tasks_mod.__file__))!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['t'] = m; spec.loader.exec_module(m)\n"
        "print('math_verify' in sys.modules, 'pyarrow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# --------------------------------------------------------------------------
# make_task_source
# --------------------------------------------------------------------------


def test_make_task_source_from_strings(gsm8k_file, math_file):
    assert isinstance(make_task_source("arithmetic"), ArithmeticTasks)
    assert make_task_source("arithmetic").difficulty == 2
    assert make_task_source("arithmetic:difficulty=3").difficulty == 3
    s = make_task_source("arithmetic:difficulty=4,test_fraction=0.25")
    assert (s.difficulty, s.test_fraction) == (4, 0.25)
    assert make_task_source("knights_knaves").people == 2
    assert make_task_source("knights-knaves:people=3").people == 3
    assert make_task_source("countdown:numbers=5").numbers == 5
    js = make_task_source(f"jsonl:{gsm8k_file}")
    assert isinstance(js, DatasetTasks) and js.path == str(gsm8k_file)
    m = make_task_source(f"jsonl:{math_file}?question_field=problem&answer_field=solution")
    assert m.answer_field == "solution"
    m2 = make_task_source(f"jsonl:path={math_file},test_fraction=0.5")
    assert m2.test_fraction == 0.5
    inst = ArithmeticTasks(1)
    assert make_task_source(inst) is inst


def test_make_task_source_rejects_bad_input():
    with pytest.raises(ValueError, match="arithmetic"):
        make_task_source("arithmetc")
    with pytest.raises(ValueError) as err:
        make_task_source("knight_knaves")
    assert "knights_knaves" in str(err.value) and "known sources" in str(err.value)
    with pytest.raises(ValueError, match="difficulty"):
        make_task_source("arithmetic:level=3")
    with pytest.raises(ValueError):
        make_task_source("arithmetic:difficulty")
    with pytest.raises(ValueError, match="path"):
        make_task_source("jsonl:")
    with pytest.raises(ValueError, match="name"):
        make_task_source({"difficulty": 3})
    with pytest.raises(TypeError):
        make_task_source(42)


def test_spec_round_trip_gives_the_same_tasks(gsm8k_file):
    for src in all_sources(gsm8k_file):
        spec = src.spec()
        spec = json.loads(json.dumps(spec))  # JSON-serialisable
        rebuilt = make_task_source(spec)
        assert type(rebuilt) is type(src) and rebuilt.spec() == src.spec()
        assert isinstance(rebuilt, TaskSource)
        for split in available_splits(src):
            a = [src.sample(np.random.default_rng(s), split) for s in range(3)]
            b = [rebuilt.sample(np.random.default_rng(s), split) for s in range(3)]
            assert a == b


def test_split_and_task_id_are_the_question_hash_in_any_call_order():
    # split_of and _task_id share the last question's digest: interleaved calls must still hash each question
    import hashlib

    from marl_llm_envs.tasks.base import _task_id

    questions = [f"Compute {i} + {i * 7}." for i in range(300)] + ["", "é ∑ 😀", "Compute 0 + 0."]
    for n, q in enumerate(questions):
        digest = hashlib.sha256(q.encode("utf-8"))
        want_split = "test" if int.from_bytes(digest.digest()[:8], "big") / 2.0**64 < 0.3 else "train"
        other = questions[(n * 7) % len(questions)]
        calls = [lambda: split_of(q, 0.3), lambda: split_of(other, 0.3), lambda: _task_id("t", "x", q)]
        for order in ([0, 2], [2, 0], [0, 1, 2], [1, 2, 0]):
            got = {i: calls[i]() for i in order}
            assert got[0] == want_split and got[2] == f"t/x/{digest.hexdigest()[:12]}", (q, order)
