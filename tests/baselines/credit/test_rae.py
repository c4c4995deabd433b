"""rae (SPIRAL's role-conditioned EMA baseline) against hand-worked numbers: the baseline is read before
its update, per batch, and survives a state round trip."""

from __future__ import annotations

import json

import pytest

from baselines.credit import make_credit
from tests.baselines.credit.helpers import approx, episode


def kuhn(r0, sample=0):
    seats = {"player_0": "player_0", "player_1": "player_1"}
    return episode(0, {"player_0": r0, "player_1": -r0}, [("player_0", 0.0), ("player_1", 0.0), ("player_0", r0)],
                   teams=seats, env_id="kuhn_poker-v0", sample=sample)


def test_rae_reads_the_baseline_before_its_update():
    rae = make_credit("rae")
    adv = rae.advantages([kuhn(1.0), kuhn(-2.0, 1), kuhn(1.0, 2)])
    # player_0: b = 0 -> A = 1, b = 0.05; A = -2 - 0.05 = -2.05, b = 0.0475 - 0.1 = -0.0525; A = 1.0525.
    # player_1 mirrors it. Every turn of a role gets the same A.
    assert adv == [[approx(1.0), approx(-1.0), approx(1.0)],
                   [approx(-2.05), approx(2.05), approx(-2.05)],
                   [approx(1.0525), approx(-1.0525), approx(1.0525)]]
    assert rae.state_dict()["baselines"]["kuhn_poker-v0"] == {"player_0": approx(0.000125),
                                                              "player_1": approx(-0.000125)}


def test_rae_batch_update_uses_the_baseline_from_before_the_batch():
    rae = make_credit("rae", update="batch")
    assert [a[0] for a in rae.advantages([kuhn(1.0), kuhn(-2.0, 1), kuhn(2.0, 2)])] == approx([1.0, -2.0, 2.0])
    # one update with the batch mean 1/3: b = 0.05 / 3
    assert rae.state_dict()["baselines"]["kuhn_poker-v0"]["player_0"] == approx(0.05 / 3)
    assert [a[0] for a in rae.advantages([kuhn(1.0)])] == approx([1.0 - 0.05 / 3])


def test_rae_state_dict_round_trip_gives_identical_next_advantages():
    first, second = [kuhn(1.0), kuhn(-1.0, 1)], [kuhn(1.0), kuhn(1.0, 1)]
    a = make_credit("rae")
    a.advantages(first)
    b = make_credit("rae")
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b.advantages(second) == a.advantages(second)
    with pytest.raises(ValueError, match="rae state"):
        b.load_state_dict({"wrong": 1})
