"""coma (the outcome minus the mean of resampled outcomes, others fixed) against hand-worked numbers."""

from __future__ import annotations

import pytest

from baselines.credit import make_credit
from baselines.episode import Branch
from tests.baselines.credit.helpers import approx, think_solve


def test_coma_subtracts_the_mean_of_the_resampled_outcomes():
    branches = [Branch("resample", "thinker", 0, k, team_rewards={"team": r}) for k, r in enumerate([1.0, 0.0])]
    branches += [Branch("resample", "solver", 1, k, team_rewards={"team": 1.0}) for k in range(2)]
    e = think_solve(0, 1.0, branches=branches)
    assert make_credit("coma").advantages([e]) == [[0.5, 0.0]]


def test_coma_falls_back_to_broadcast_for_roles_it_does_not_resample():
    es = [think_solve(0, r, sample=j, branches=[Branch("resample", "solver", 1, 0, team_rewards={"team": 0.0})])
          for j, r in enumerate([1.0, 0.0])]
    adv = make_credit("coma", roles=["solver"]).advantages(es)
    assert adv == [[approx(1.0), 1.0], [approx(-1.0), 0.0]]
    with pytest.raises(ValueError, match=r"episode 0 .* has no resample branch at turn 0 \(thinker\)"):
        make_credit("coma").advantages(es)
