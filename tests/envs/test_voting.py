"""voting-v0: plurality and its tie breaks, leave-one-out by hand, abstentions and spoiled ballots, clues; and the
credit suite's fraction scheme at every team size."""

from __future__ import annotations

import numpy as np
import pytest

from marl_llm_envs import make
from marl_llm_envs.scripted import play, random_legal
from marl_llm_envs.tasks import Task, TaskSource
from tests.conftest import docstring_block


def _vote(env, ballots):
    for b in ballots:
        env.step(b)
    return env.outcome()


def test_voting_plurality_groups_equal_numbers():
    env = make("voting-v0", n_voters=3, tie_break="none")
    env.reset(seed=0)
    ans = env.task.answer
    out = _vote(env, [f"\\boxed{{{ans}}}", f"\\boxed{{+{ans}.0}}", "\\boxed{-99999}"])
    assert out["correct"] and out["team_reward"] == 1.0
    assert env.infos["voter_2"]["own_correct"] is False and env.infos["voter_0"]["own_correct"] is True
    # without voter_0 or voter_1 the two remaining ballots tie, and tie_break="none" makes a tie wrong
    assert out["team_reward_without"] == {"voter_0": 0.0, "voter_1": 0.0, "voter_2": 1.0}
    assert out["votes"] == {"voter_0": ans, "voter_1": f"+{ans}.0", "voter_2": "-99999"}


def test_voting_tie_breaks():
    def run(tie_break, seed=0):
        env = make("voting-v0", n_voters=2, tie_break=tie_break)
        env.reset(seed=seed)
        return env, _vote(env, ["\\boxed{-99999}", f"\\boxed{{{env.task.answer}}}"])

    assert run("first")[1]["aggregate"] == "-99999" and not run("first")[1]["correct"]
    assert run("none")[1]["aggregate"] is None and run("none")[1]["team_reward"] == 0.0
    outcomes = {run("random", seed)[1]["correct"] for seed in range(40)}
    assert outcomes == {True, False}
    env, out = run("random", 5)
    assert env.clone().outcome() == out


class _SixTimesSeven(TaskSource):
    """One problem, always: 6 * 7 = 42 (distractors 13, 7, 48), so the ballots below can be worked out by hand."""

    name = "six_times_seven"
    feature_size = 1

    def sample(self, rng, split="train"):
        return Task("six_times_seven/train/0", "Compute the value of 6 * 7.", "42", "fixed", ("13", "7", "48"), (0.0,))

    def verify(self, task, response):
        return response.strip() == "42"

    def spec(self):
        return {"name": "six_times_seven"}


def _ballot(b: str) -> str:
    return {"?": "gibberish", "-": "[abstain]"}.get(b, f"\\boxed{{{b}}}")


# Hand-counted elections on 6 * 7 = 42 (text mode, binary reward, invalid_penalty -0.5; "?" = a spoiled ballot,
# "-" = an abstention). "first" breaks a tie by the earliest ballot of each tied answer; "none" makes a tie wrong.
# team_reward_without[i] recounts with voter i's ballot (and its penalty) removed.
VOTING_BY_HAND = [
    # tie 2-2 between 7 (first cast by voter_0) and 42 (voter_1); leaving out a voter breaks the tie either way
    ("first", "7 42 42 7", "7", 0.0, [1.0, 0.0, 0.0, 1.0]),
    ("none", "7 42 42 7", None, 0.0, [1.0, 0.0, 0.0, 1.0]),
    # 42 wins 3-2; leaving out a 42 ballot makes a 2-2 tie, whose first ballot is 7 (voter_1) without voter_0,
    # and 42 (voter_0) without voter_3 or voter_4
    ("first", "42 7 7 42 42", "42", 1.0, [0.0, 1.0, 1.0, 1.0, 1.0]),
    ("none", "42 7 7 42 42", "42", 1.0, [0.0, 1.0, 1.0, 0.0, 0.0]),
    # a three-way tie: the first ballot is 42; without voter_0 the first is 7; without voter_1 or voter_2, 42
    ("first", "42 7 13", "42", 1.0, [0.0, 1.0, 1.0]),
    ("none", "42 7 13", None, 0.0, [0.0, 0.0, 0.0]),
    # 13 and 42 tie 2-2 (voter_2 spoils, voter_3 abstains): 13 was first; the spoiled ballot costs -0.5 unless
    # it is its own voter who is left out (then the tie stands and nothing is spoiled: 0)
    ("first", "13 42 ? - 42 13", "13", -0.5, [0.5, -0.5, 0.0, -0.5, -0.5, 0.5]),
    ("none", "13 42 ? - 42 13", None, -0.5, [0.5, -0.5, 0.0, -0.5, -0.5, 0.5]),
]


@pytest.mark.parametrize("tie_break,ballots,aggregate,team_reward,without", VOTING_BY_HAND,
                         ids=[f"{case[0]}:{case[1]}" for case in VOTING_BY_HAND])
def test_voting_tie_breaks_and_leave_one_out_by_hand(tie_break, ballots, aggregate, team_reward, without):
    ballots = ballots.split()
    env = make("voting-v0", tasks=_SixTimesSeven(), n_voters=len(ballots), tie_break=tie_break, invalid_penalty=-0.5)
    env.reset(seed=0)
    out = _vote(env, [_ballot(b) for b in ballots])
    voters = env.possible_agents
    assert (out["aggregate"], out["team_reward"]) == (aggregate, team_reward)
    assert out["team_reward_without"] == dict(zip(voters, without))
    assert {v: env.infos[v]["team_reward"] for v in voters} == dict.fromkeys(voters, team_reward)
    for voter, value in zip(voters, without):
        assert env.ablate(voter).outcome()["team_reward"] == value


def test_voting_random_tie_break_by_hand():
    # "7 42 42 7": a 2-2 tie, so the aggregate is 7 or 42, drawn at reset (both happen over seeds); every
    # leave-one-out count has a strict winner, so team_reward_without is the same as under "first": [1, 0, 0, 1].
    seen = set()
    for seed in range(30):
        env = make("voting-v0", tasks=_SixTimesSeven(), n_voters=4, tie_break="random")
        env.reset(seed=seed)
        out = _vote(env, [_ballot(b) for b in "7 42 42 7".split()])
        assert out["aggregate"] in ("7", "42")
        assert out["team_reward"] == (1.0 if out["aggregate"] == "42" else 0.0)
        assert out["team_reward_without"] == {"voter_0": 1.0, "voter_1": 0.0, "voter_2": 0.0, "voter_3": 1.0}
        assert env.clone().outcome() == out
        seen.add(out["aggregate"])
    assert seen == {"7", "42"}


def test_voting_discrete_tie_goes_to_the_first_ballot_not_the_lowest_label():
    # find a deal with the true answer 42 under label C (candidates are shuffled by the env's RNG)
    for seed in range(200):
        env = make("voting-v0", tasks=_SixTimesSeven(), action_mode="discrete", n_voters=2, tie_break="first")
        env.reset(seed=seed)
        if env.candidates[2] == "42":
            break
    assert env.candidates[2] == "42"
    C, D = 2, 3
    out = _vote(env, [D, C])   # voter_0 votes D (wrong), voter_1 votes C (right): a 1-1 tie
    assert out["aggregate"] == "D" and out["team_reward"] == 0.0
    assert out["team_reward_without"] == {"voter_0": 1.0, "voter_1": 0.0}
    none = make("voting-v0", tasks=_SixTimesSeven(), action_mode="discrete", n_voters=2, tie_break="none")
    none.reset(seed=seed)
    out = _vote(none, [D, C])
    assert out["aggregate"] is None and out["team_reward"] == 0.0
    assert out["team_reward_without"] == {"voter_0": 1.0, "voter_1": 0.0}


def test_voting_all_abstain_is_wrong_and_spoiled_ballots_cost_the_penalty():
    env = make("voting-v0", n_voters=3)
    env.reset(seed=0)
    out = _vote(env, ["[abstain]", "[abstain]", "[abstain]"])
    assert out["aggregate"] is None and out["team_reward"] == 0.0
    env = make("voting-v0", n_voters=3, invalid_penalty=-0.5)
    env.reset(seed=0)
    out = _vote(env, [f"\\boxed{{{env.task.answer}}}", "gibberish", "[abstain]"])
    assert out["correct"] and out["team_reward"] == 0.5 and out["spoiled"] == ["voter_1"]
    assert env.infos["voter_1"]["invalid_action"]["reason"].startswith("no \\boxed")


def test_voting_discrete_clues_make_the_majority_better_than_one_voter():
    follow = lambda env, agent, rng: env.unwrapped._clue[agent]  # noqa: E731  (privileged: vote your clue)
    team, single = 0.0, 0.0
    for seed in range(400):
        env = make("voting-v0", action_mode="discrete", clue_accuracy=0.7, tie_break="first")
        play(env, follow, seed)
        team += env.outcome()["correct"]
        single += env.outcome()["own_correct"]["voter_0"]
    assert abs(single / 400 - 0.7) < 0.07
    assert team / 400 > single / 400 + 0.03  # Condorcet: 3 voters at 0.7 beat one


def test_voting_clue_accuracy_validation():
    with pytest.raises(ValueError, match="2 values for 3 voters"):
        make("voting-v0", clue_accuracy=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        make("voting-v0", clue_accuracy=1.5)


def test_voting_leave_one_out_of_a_spoiled_ballot_drops_its_penalty():
    env = make("voting-v0", n_voters=3, invalid_penalty=-0.5)
    env.reset(seed=0)
    _vote(env, [f"\\boxed{{{env.task.answer}}}", "gibberish", f"\\boxed{{{env.task.answer}}}"])
    out = env.outcome()
    assert out["team_reward"] == 0.5
    assert out["team_reward_without"]["voter_1"] == 1.0          # had voter_1 abstained: no spoiled ballot
    assert out["team_reward_without"]["voter_0"] == 0.5          # voter_2 still carries it; voter_1's penalty stays
    assert env.ablate("voter_1").outcome()["team_reward"] == 1.0


def _discrete_vote(n, scheme, ballots, tie_break="first", **kw):
    """A discrete voting episode in which ballot "R" is the true label, "W"/"X" two different wrong labels, "-"
    an abstention and "!" a spoiled ballot (an out-of-range index, under the penalty)."""
    env = make("voting-v0", action_mode="discrete", n_voters=n, reward_scheme=scheme, tie_break=tie_break,
               clue_accuracy=None, **kw)
    env.reset(seed=0)
    right = env.answer_index()
    wrong = [i for i in range(env.num_candidates) if i != right]
    code = {"R": right, "W": wrong[0], "X": wrong[1], "-": env.num_candidates, "!": 99}
    for b in ballots:
        env.step(code[b])
    return env


@pytest.mark.parametrize("ballots,team,without", [
    ("RRW-", 0.5, [0.25, 0.25, 0.5, 0.5]),
    ("R!RR", 0.75 - 1.0, [0.5 - 1.0, 0.75, 0.5 - 1.0, 0.5 - 1.0]),
    ("WWWR", 0.25, [0.25, 0.25, 0.25, 0.0]),   # the plurality is wrong; the fraction still pays the right voter
    ("----", 0.0, [0.0, 0.0, 0.0, 0.0]),
])
def test_voting_fraction_scheme_by_hand(ballots, team, without):
    env = _discrete_vote(4, "fraction", ballots)
    out = env.outcome()
    assert out["team_reward"] == pytest.approx(team) and env.team_rewards()["team"] == pytest.approx(team)
    assert [out["team_reward_without"][f"voter_{i}"] for i in range(4)] == pytest.approx(without)
    for i in range(4):  # the leave-one-out infos equal the ablated recount
        assert env.ablate(f"voter_{i}").outcome()["team_reward"] == pytest.approx(without[i])


def test_voting_fraction_is_additive_and_plurality_is_not():
    """Fraction: each right ballot adds exactly 1/n. Plurality: with a 3-1 majority no single ballot is pivotal."""
    frac = _discrete_vote(4, "fraction", "RRRW").outcome()
    assert {v: frac["team_reward"] - w for v, w in frac["team_reward_without"].items()} == pytest.approx(
        {"voter_0": 0.25, "voter_1": 0.25, "voter_2": 0.25, "voter_3": 0.0})
    plural = _discrete_vote(4, "plurality", "RRRW").outcome()
    assert plural["team_reward"] == 1.0 and set(plural["team_reward_without"].values()) == {1.0}


@pytest.mark.parametrize("scheme", ["plurality", "fraction", "binary", "signed"])
@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_voting_leave_one_out_equals_the_ablated_recount_at_every_team_size(scheme, n):
    rng = np.random.default_rng(n)
    for seed in range(10):
        env = make("voting-v0", action_mode="discrete", n_voters=n, reward_scheme=scheme, tie_break="random")
        env.reset(seed=seed)
        while not env.done:
            env.step(random_legal(env, env.agent_selection, rng) if rng.random() > 0.1 else 99)
        out = env.outcome()
        assert env.vector_size == env.problem_size + env.num_candidates + n
        assert env.observe("voter_0")["observation"].shape == (env.vector_size,)
        for voter in env.possible_agents:
            assert env.ablate(voter).outcome()["team_reward"] == pytest.approx(out["team_reward_without"][voter])
            assert env.infos[voter]["team_reward_without"] == out["team_reward_without"]
        if scheme == "fraction":
            right = sum(out["own_correct"].values())
            assert out["team_reward"] == pytest.approx(right / n - len(out["spoiled"]))


@pytest.mark.parametrize("scheme", ["plurality", "fraction"])
@pytest.mark.parametrize("n,ballots", [(2, "RW"), (4, "RRWW"), (4, "WWRR"), (8, "RRRRWWWW"), (16, "RW" * 8)])
def test_voting_even_team_ties_follow_the_tie_break(scheme, n, ballots):
    first = _discrete_vote(n, scheme, ballots, "first").outcome()
    none = _discrete_vote(n, scheme, ballots, "none").outcome()
    assert first["correct"] == (ballots[0] == "R")     # the tied answer whose first ballot came first
    assert none["aggregate"] is None and none["correct"] is False
    draws = {_discrete_vote(n, scheme, ballots, "random").outcome()["aggregate"] for _ in range(3)}
    assert len(draws) == 1                               # the same episode always breaks its tie the same way
    if scheme == "fraction":                             # the tie does not matter to the fraction
        assert first["team_reward"] == none["team_reward"] == pytest.approx(ballots.count("R") / n)
    else:
        assert none["team_reward"] == 0.0 and first["team_reward"] == float(ballots[0] == "R")


def test_voting_fraction_prompt_is_the_manuals():
    from marl_llm_envs.envs import voting
    from marl_llm_envs.tasks import Task, TaskSource

    class Fixed(TaskSource):
        name = "fixed"
        feature_size = 2

        def sample(self, rng, split="train"):
            return Task("fixed/train/0", "Compute the value of 3 + 4 * 2.", "11", "fixed", ("14", "9", "10"), (0, 0))

        def verify(self, task, response):
            return response.strip() == task.answer

        def spec(self):
            return {"name": "fixed"}

    env = make("voting-v0", tasks=Fixed(), reward_scheme="fraction")
    env.reset(seed=0)
    assert env.observe("voter_0")["text"] == docstring_block(voting, 'A voter\'s prompt under ``reward_scheme="fraction"``')


def test_voting_scheme_names_and_errors():
    env = make("voting-v0", reward_scheme="fraction")
    env.reset(seed=1)
    assert env.transcript()["kwargs"]["reward_scheme"] == "fraction"
    assert make("voting-v0").reward_scheme == "binary"
    with pytest.raises(ValueError, match="reward_scheme='fractions' is not one of .*'plurality', 'fraction'"):
        make("voting-v0", reward_scheme="fractions")
