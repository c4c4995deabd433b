"""Knights-and-knaves puzzles (marl_llm_envs/tasks/knights_knaves.py): exactly one solution by brute force over an
independent reading of the question, and verification of reasonable answer variants."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from marl_llm_envs.tasks import (
    KnightsKnavesTasks,
    Task,
)

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
