"""marshal (MARSHAL's turn-level returns minus the role mean) against hand-worked numbers, and its
per-token roll variant."""

from __future__ import annotations

from baselines.credit import make_credit
from tests.baselines.credit.helpers import approx, episode


def marshal_batch():
    seats = {"player_0": "player_0", "player_1": "player_1"}
    a = episode(0, {"player_0": 1.5, "player_1": -1.0},
                [("player_0", 0.0), ("player_1", 0.0), ("player_0", 0.5), ("player_1", -1.0), ("player_0", 1.0)],
                teams=seats, env_id="tic_tac_toe-v0")
    b = episode(1, {"player_0": 1.0, "player_1": 2.0}, [("player_0", 1.0), ("player_1", 0.0), ("player_1", 2.0)],
                teams=seats, env_id="tic_tac_toe-v0")
    return [a, b]


def test_marshal_turn_level_returns_minus_the_role_mean():
    adv = make_credit("marshal").advantages(marshal_batch())
    # G (gamma 1): A: player_0 [1.5, 1.5, 1], player_1 [-1, -1]; B: player_0 [1], player_1 [2, 2].
    # Role means over every turn of the batch: player_0 (1.5+1.5+1+1)/4 = 1.25, player_1 (-1-1+2+2)/4 = 0.5.
    assert adv == [[approx(0.25), approx(-1.5), approx(0.25), approx(-1.5), approx(-0.25)],
                   [approx(-0.25), approx(1.5), approx(1.5)]]


def test_marshal_discounts_by_the_seats_own_turns():
    adv = make_credit("marshal", gamma=0.5).advantages(marshal_batch())
    # player_0 in A: G2 = 1, G1 = 0.5 + 0.5 * 1 = 1, G0 = 0 + 0.5 * 1 = 0.5; in B: 1. Mean 3.5 / 4 = 0.875.
    # player_1 in A: G1 = -1, G0 = 0 + 0.5 * -1 = -0.5; in B: G1 = 2, G0 = 1. Mean 1.5 / 4 = 0.375.
    assert adv == [[approx(-0.375), approx(-0.875), approx(0.125), approx(-1.375), approx(0.125)],
                   [approx(0.125), approx(0.625), approx(1.625)]]


def test_marshal_roll_variant_is_per_token_as_released():
    seat = {"player_0": "player_0"}
    a = episode(0, {"player_0": 1.0}, [("player_0", 1.0)], teams=seat, tokens={0: 2})
    b = episode(1, {"player_0": 0.0}, [("player_0", 0.0)], teams=seat, tokens={0: 1})
    method = make_credit("marshal", variant="roll")
    assert method.per_token
    adv = method.advantages([a, b])
    # 1. centre per role: r~ = [0.5, -0.5]; 2. tokens [0, 0.5], [-0.5]: mean 0, unbiased var 0.25 -> [0, 1], [-1];
    # 3. reverse cumsum per seat -> [1, 1], [-1]; 4. distinct values {-1, 1}, mean 0; 5. whiten [1, 1, -1]:
    # mean 1/3, unbiased var 4/3 -> [0.57735, 0.57735], [-1.154701].
    assert adv == [[approx([0.57735, 0.57735])], [approx([-1.154701])]]
