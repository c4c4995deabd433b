"""Credit fidelity (baselines/fidelity.py): the true advantage A* against hand computations, the engine's force
branches, the oracle control, the cluster bootstrap, and free-text turns (the leaderboard command:
tests/leaderboard/test_fidelity.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines import fidelity as fid
from baselines.credit import make_credit
from baselines.policies.base import Choice, Generation, Policy, request_for
from baselines.policies.mlp import MLPPolicy
from baselines.rollout import BranchSpec, RolloutEngine
from marl_llm_envs import make, replay

VOTING = "voting-v0"


class FixedProbs(Policy):
    """Draws among the legal moves with fixed, known probabilities (and records them, as a choice mode does), each
    draw seeded by the call seed and the request's key, as the MLP's are."""

    observes = frozenset({"legal_actions"})

    def __init__(self, probs):
        self.probs = list(probs)

    def generate(self, requests, seed=None):
        out = []
        for r in requests:
            rng = np.random.default_rng([seed or 0, *[k % 2**63 for k in r.key]])
            assert len(r.legal_actions) == len(self.probs)
            j = int(rng.choice(len(self.probs), p=self.probs))
            out.append(Generation(action=r.legal_actions[j], text=r.legal_actions[j],
                                  choice=Choice(j, math.log(self.probs[j]), "scripted", list(self.probs))))
        return out


def _voting(n, **kw):
    return dict(n_voters=n, reward_scheme="fraction", action_mode="discrete", **kw)


def _answer_index(episode) -> int:
    """The right label of the episode's problem: hidden state of the env (no voter observes it)."""
    env = make(VOTING, **episode.env_kwargs)
    env.reset(seed=episode.seed)
    return env._answer_index


def _play(policy, n, tasks=6, group=2, continuations=2, exact=True, **kw):
    episodes = RolloutEngine(policy, show_progress=False).run(
        VOTING, tasks, group, seed=5, env_kwargs=_voting(n, **kw),
        branches=fid.truth_branches(["voter"], continuations))
    return episodes, fid.ground_truth(episodes, {"voter": policy}, ["voter"], continuations, exact=exact)


def test_true_advantage_of_a_two_voter_fraction_vote_is_the_hand_computed_one():
    """Two voters, fraction reward R = ([b_0 right] + [b_1 right]) / 2, each voter draws A, B, C, D, abstain with
    probabilities p. Voter i's term is its own; the other's expected term does not depend on b, so
    Q(h, b) = [b right] / 2 + const and A*(h, a) = ([a right] - p[right label]) / 2, exactly (both turns are
    enumerated: one remaining decision, or none)."""
    p = [0.4, 0.3, 0.15, 0.1, 0.05]
    episodes, truth = _play(FixedProbs(p), 2)
    for e, row in zip(episodes, truth.turns):
        right = _answer_index(e)
        for t, tt in zip(e.turns, row):
            assert tt.exact
            a = int(t.action)
            expected = ((a == right) - p[right]) / 2
            assert abs(tt.advantage - expected) < 1e-9
            assert np.allclose(tt.advantages(), [((b == right) - p[right]) / 2 for b in range(5)], atol=1e-9)
            assert np.allclose(tt.probs, p)
    assert truth.exact_turns == 2 * len(episodes)


def test_oracle_credits_each_ballot_its_hand_computed_true_advantage():
    """The oracle method (make_credit("oracle"), its own force branches) on the two-voter fraction vote: each
    ballot's advantage is ([a right] - p[right label]) / 2, as worked by hand above."""
    p = [0.4, 0.3, 0.15, 0.1, 0.05]
    policy = FixedProbs(p)
    oracle = make_credit("oracle", k=2)
    episodes = RolloutEngine(policy, show_progress=False).run(VOTING, 6, 2, seed=5, env_kwargs=_voting(2),
                                                              branches=oracle.branches(VOTING))
    oracle.policies = {"voter": policy}     # what attach(team) hands over in training
    for e, row in zip(episodes, oracle.advantages(episodes)):
        right = _answer_index(e)
        assert row == pytest.approx([((int(t.action) == right) - p[right]) / 2 for t in e.turns], abs=1e-9)


def test_sampled_true_advantage_is_exact_where_later_voters_never_see_the_move():
    """Four voters: the first two turns have 2 or 3 decisions after them and are sampled. The continuations of
    every forced move share their sampling keys, and no voter sees another's ballot, so the later voters draw the
    same ballots after every b (a policy that seeds each draw by its request's key, as the MLP): the Q differences,
    hence A*, are exact even from 2 continuations."""
    p = [0.4, 0.3, 0.15, 0.1, 0.05]
    episodes, truth = _play(FixedProbs(p), 4, exact=False)
    for e, row in zip(episodes, truth.turns):
        right = _answer_index(e)
        for t, tt in zip(e.turns, row):
            assert not tt.exact
            assert abs(tt.advantage - ((int(t.action) == right) - p[right]) / 4) < 1e-9


def test_true_advantage_is_taken_on_the_full_state_not_on_the_observation():
    """A voter sees its clue (right 70% of the time), not the answer. A* is the credit its ballot actually earned
    in the env's full state: a ballot for a wrong clue gets A* < 0 although, from the voter's observation, its clue
    is the likeliest answer (an observation-level advantage of voting the clue would be > 0)."""
    p = [0.2] * 5
    episodes, truth = _play(FixedProbs(p), 2, tasks=40, group=1)
    misled = 0
    for e, row in zip(episodes, truth.turns):
        env = make(VOTING, **e.env_kwargs)
        env.reset(seed=e.seed)
        for t, tt in zip(e.turns, row):
            clue = env._clue[t.agent] if isinstance(env._clue, dict) else env._clue[int(t.agent.split("_")[1])]
            if int(t.action) == clue and clue != env._answer_index:
                misled += 1
                assert tt.advantage == pytest.approx(-0.2 / 2)
    assert misled > 0


def test_force_branch_plays_the_forced_move_then_the_policys_own_draws():
    """Each force branch starts with its forced move (no tokens, not a replay); every later decision is the
    policy's own draw on the branch's true state: with a greedy MLP, the argmax of the policy on the state rebuilt
    from the branch's transcript."""
    env = make(VOTING, **_voting(3))
    policy = MLPPolicy.for_env(env, temperature=0.0, seed=3)
    episodes = RolloutEngine(policy, show_progress=False).run(
        VOTING, 2, 1, seed=0, env_kwargs=_voting(3), branches=[BranchSpec("force", "voter_0", k=2,
                                                                          replay_others=False)])
    for e in episodes:
        assert [b.sample_index for b in e.branches] == list(range(10))      # 5 legal moves x 2 continuations
        for b in e.branches:
            first = b.turns[0]
            assert first.action == b.sample_index // 2 and first.extra == {"forced": True}
            assert not first.replayed and first.completion_ids == []
            actions = b.transcript["actions"]
            assert actions[0] == first.action
            for t in b.turns[1:]:
                assert not t.replayed
                state = replay({**b.transcript, "actions": actions[:t.step_index]})
                gen = policy.generate([request_for(state, t.agent, policy.observes)])[0]
                assert t.action == gen.action
                assert t.choice.inputs.observation == gen.choice.inputs.observation


def test_force_branch_spec_parses_and_checks_its_stream():
    assert BranchSpec.parse("force:voter:4") == [BranchSpec("force", "voter", 4)]
    with pytest.raises(ValueError, match="stream must be a non-negative int"):
        BranchSpec("force", "voter", 2, stream=-1)


def test_cluster_bootstrap_with_every_cluster_once_is_the_plain_correlation():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=40), rng.normal(size=40)
    clusters = np.repeat(np.arange(10), 4)
    s = fid._sums(x, y, clusters, 10)
    assert fid._corr_from(s.sum(0)) == pytest.approx(fid.pearson(x, y))


class FreeText(Policy):
    """Free text (no legal moves offered): the right answer (read from the env, as a scripted bot may) or a wrong
    one, each half the time, seeded per request key."""

    observes = frozenset({"text", "legal_actions", "env"})

    def generate(self, requests, seed=None):
        out = []
        for r in requests:
            assert not r.legal_actions
            rng = np.random.default_rng([seed or 0, *[k % 2**63 for k in r.key]])
            answer = r.env.task.answer
            text = "\\boxed{%s}" % [answer, answer + "1"][int(rng.integers(2))]
            out.append(Generation(action=text, text=text))
        return out


def test_free_text_turns_take_v_from_resampled_alternatives():
    """A free-text turn has no moves to enumerate: Q(h, a) comes from continuations with the recorded text forced
    (here the last decision, so it is the episode's own reward) and V(h) from the resample branches' mean."""
    kwargs = {"n_voters": 1, "reward_scheme": "fraction", "action_mode": "text"}
    episodes = RolloutEngine(FreeText(), show_progress=False).run(
        VOTING, 6, 1, seed=2, env_kwargs=kwargs, branches=fid.truth_branches(["voter"], 4, free_text=True))
    truth = fid.ground_truth(episodes, {"voter": FreeText()}, ["voter"], 4)
    values = []
    for e, (tt,) in zip(episodes, truth.turns):
        resampled = [b.rewards["voter_0"] for b in e.branches if b.kind == "resample"]
        assert len(resampled) == 4 and not tt.exact
        assert tt.moves == [e.turns[0].action] and tt.q[0] == e.rewards["voter_0"]
        assert tt.value == pytest.approx(np.mean(resampled))
        assert tt.advantage == pytest.approx(e.rewards["voter_0"] - np.mean(resampled))
        values.append(tt.value)
    assert 0 < np.mean(values) < 1        # right and wrong answers both occur: the values are not all 0
