"""The credit suite's verdict from its scored methods (issue 40): the method under test against every other one on
the aggregate of the families both cover and on each family, and the control check, all in one Holm family; every
sentence true of its own numbers, the control's count taken from those sentences."""

from __future__ import annotations

import numpy as np
import pytest

from leaderboard.verdicts import suite_comparisons, suite_verdicts
from tests.leaderboard.helpers import _check_sentence_against_its_numbers

FAMILIES = ["team_size", "temporal", "zero_sum"]


def _method(per_family: dict[str, list[float]], seeds=None) -> dict:
    n = len(next(iter(per_family.values())))
    return {"seeds": list(range(n)) if seeds is None else seeds,
            "families": {f: {"seeds": list(v), "settings": [f"{f}/a"]} for f, v in per_family.items()},
            "settings": {f"{f}/a": {"seeds": list(v)} for f, v in per_family.items()}}


@pytest.fixture(scope="module")
def methods():
    effect = np.array([0.3, -0.3, 0.2, -0.2, 0.1, -0.1, 0.25, -0.25, 0.15, -0.15])
    base = {f: 0.5 + effect for f in FAMILIES}
    return {"broadcast": _method(base),
            # shuffled: at random's score on every family but zero_sum, where it matches broadcast
            "shuffled": _method({f: (0.0 * effect if f != "zero_sum" else base[f]) for f in FAMILIES}),
            "loo": _method({f: base[f] + 0.04 for f in FAMILIES}),
            "ccpo_v1": _method({"temporal": base["temporal"] - 0.5})}


def test_every_suite_sentence_is_true_of_its_numbers_and_shares_one_holm_family(methods):
    lines = suite_verdicts(methods, "loo", FAMILIES)
    parsed = [_check_sentence_against_its_numbers(line) for line in lines[:-1]]
    # loo vs broadcast, vs shuffled: aggregate + 3 families each; vs ccpo_v1: temporal only; control: 3 families
    assert len(parsed) == 4 + 4 + 1 + 3 and {p["m"] for p in parsed} == {12}
    assert {p["n"] for p in parsed} == {10}
    loo_vs_broadcast = [p for p in parsed if (p["a"], p["b"]) == ("loo", "broadcast")]
    assert [p["word"] for p in loo_vs_broadcast] == ["above"] * 4           # +0.04 on every seed, paired
    assert lines[-1].startswith("control: broadcast above shuffled on 2/3 families (team_size, temporal); "
                                "not separated on zero_sum (the family lines above, Holm over their 12 comparisons")
    ccpo = next(line for line in lines if line.startswith("ccpo_v1") or " ccpo_v1 on " in line)
    assert " on temporal" in ccpo and "aggregate" not in ccpo                # only the family both cover


def test_the_control_is_not_counted_twice_when_broadcast_is_under_test(methods):
    lines = suite_verdicts(methods, "broadcast", FAMILIES)
    parsed = [_check_sentence_against_its_numbers(line) for line in lines[:-1]]
    assert len(parsed) == 4 + 4 + 1 and {p["m"] for p in parsed} == {9}
    assert "broadcast above shuffled on 2/3 families" in lines[-1]


def test_one_method_and_no_control_are_said():
    lines = suite_verdicts({"loo": _method({"team_size": [0.1, 0.2]})}, "loo", FAMILIES)
    assert lines == ["loo only: no other method to compare with (add --baselines)",
                     "control: not run (the suite's check needs both broadcast and shuffled among the methods)"]


def test_settings_are_compared_when_asked_and_seeds_must_match(methods):
    cs = suite_comparisons(methods, "loo", "broadcast", FAMILIES, settings=True)
    assert [c.where for c in cs] == ["the aggregate of 3 families", "team_size", "team_size/a", "temporal",
                                     "temporal/a", "zero_sum", "zero_sum/a"]
    other = dict(methods, loo={**methods["loo"], "seeds": list(range(5, 15))})
    with pytest.raises(ValueError, match="different seeds"):
        suite_comparisons(other, "loo", "broadcast", FAMILIES)
