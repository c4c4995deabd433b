"""dr_mas (Dr. MAS: GRPO normalization per role within the group) against hand-worked numbers."""

from __future__ import annotations

from baselines.credit import make_credit
from tests.baselines.credit.helpers import approx, episode


def test_dr_mas_normalizes_each_role_over_its_own_turns():
    roles = {"a": "a", "b": "b"}
    e0 = episode(0, {"a": 2.0, "b": 2.0}, [("a", 0.0), ("b", 0.0), ("a", 2.0)], roles=roles)
    e1 = episode(0, {"a": 0.0, "b": 0.0}, [("a", 0.0), ("b", 0.0)], roles=roles, sample=1)
    adv = make_credit("dr_mas").advantages([e0, e1])
    # Role a: Y_a = [2, 2, 0] (a acts twice in e0): mean 4/3, std sqrt(8/9) = 0.942809 -> 0.707107, -1.414214.
    # Role b: [2, 0] -> +-1. Broadcast would give +-1 to both roles.
    assert adv == [[approx(0.707107), approx(1.0), approx(0.707107)], [approx(-1.414214), approx(-1.0)]]
    assert make_credit("broadcast").advantages([e0, e1]) == [[approx(1.0)] * 3, [approx(-1.0)] * 2]
