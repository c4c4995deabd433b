"""loo (leave-one-out: the outcome minus the outcome without the agent) against hand-worked numbers: from
voting's recount in the final infos, or from the agent's ablate branch."""

from __future__ import annotations

from baselines.credit import make_credit
from baselines.episode import Branch
from baselines.rollout import BranchSpec
from tests.baselines.credit.helpers import episode, think_solve


def test_loo_reads_voting_leave_one_out_from_the_final_infos():
    voters = ["voter_0", "voter_1", "voter_2"]
    without = {"voter_0": 0.0, "voter_1": 1.0, "voter_2": 1.0}   # voter_0's ballot was pivotal
    infos = {v: {"team_reward_without": without} for v in voters}
    e = episode(0, {v: 1.0 for v in voters}, [(v, 1.0 if v == "voter_2" else 0.0) for v in voters],
                env_id="voting-v0", final_infos=infos, roles={v: "voter" for v in voters})
    assert make_credit("loo").advantages([e]) == [[1.0, 0.0, 0.0]]
    assert make_credit("loo").branches("voting-v0") == []


def test_loo_uses_the_agents_ablate_branch_and_can_centre_per_role():
    def ep(sample, r, thinker_out, solver_out):
        return think_solve(0, r, sample=sample, branches=[
            Branch("ablate", "thinker", 0, team_rewards={"team": thinker_out}),
            Branch("ablate", "solver", 1, team_rewards={"team": solver_out})])
    es = [ep(0, 1.0, 0.0, 0.0), ep(1, 1.0, 1.0, 0.0)]
    assert make_credit("loo").advantages(es) == [[1.0, 1.0], [0.0, 1.0]]
    assert make_credit("loo", normalize=True).advantages(es) == [[0.5, 0.0], [-0.5, 0.0]]
    assert make_credit("loo").diagnostics(es) == {"mean_R_minus_R_without/solver": 1.0,
                                                  "mean_R_minus_R_without/thinker": 0.5}
    assert make_credit("loo").branches("think_solve-v0") == [BranchSpec("ablate", "solver"),
                                                              BranchSpec("ablate", "thinker")]
