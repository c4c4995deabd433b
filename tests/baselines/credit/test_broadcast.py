"""broadcast (GRPO on the shared outcome) and none (the raw return) against hand-worked groups."""

from __future__ import annotations

from baselines.credit import make_credit
from tests.baselines.credit.helpers import approx, episode, think_solve


def test_broadcast_textbook_group():
    episodes = [think_solve(0, r, sample=j) for j, r in enumerate([1.0, 0.0, 0.0, 1.0])]
    adv = make_credit("broadcast").advantages(episodes)
    assert adv == [[approx(1.0)] * 2, [approx(-1.0)] * 2, [approx(-1.0)] * 2, [approx(1.0)] * 2]
    sample = make_credit("broadcast", std="sample").advantages(episodes)
    assert [a[0] for a in sample] == approx([0.866025, -0.866025, -0.866025, 0.866025])  # 0.5 / sqrt(1/3)
    centred = make_credit("broadcast", std=None).advantages(episodes)
    assert [a[0] for a in centred] == approx([0.5, -0.5, -0.5, 0.5])
    maxrl = make_credit("broadcast", std="mean").advantages(episodes)     # (r - 0.5) / 0.5
    assert [a[0] for a in maxrl] == approx([1.0, -1.0, -1.0, 1.0])
    one = [think_solve(1, r, sample=j) for j, r in enumerate([0.0, 1.0, 0.0, 0.0])]
    assert [a[0] for a in make_credit("broadcast", std="mean").advantages(one)] == approx([-1.0, 3.0, -1.0, -1.0])


def test_broadcast_zero_sum_seats_and_a_group_of_one():
    seats = {"player_0": "player_0", "player_1": "player_1"}
    e1 = episode(0, {"player_0": 1.0, "player_1": -1.0}, [("player_0", 0.0), ("player_1", 0.0)], teams=seats,
                 env_id="kuhn_poker-v0")
    e2 = episode(0, {"player_0": -1.0, "player_1": 1.0}, [("player_0", 0.0), ("player_1", 0.0)], teams=seats,
                 env_id="kuhn_poker-v0", sample=1)
    assert make_credit("broadcast").advantages([e1, e2]) == [[approx(1), approx(-1)], [approx(-1), approx(1)]]
    # A group of one sample has no baseline: its advantage is the return (verl's rule).
    assert make_credit("broadcast").advantages([think_solve(5, 0.5)]) == [[0.5, 0.5]]
    assert make_credit("none").advantages([e1]) == [[1.0, -1.0]]
