"""The credit suite's envs and kwargs (issue 16): think_solve-v0's clue task, voting-v0's fraction scheme,
team_umbrella-v0 and free_riding-v0. Rules by hand, hidden information, the optimum the manuals prove, PettingZoo's
API and seed tests in both action modes, clone / ablate / replay for every new kwarg."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from conftest import record_episode
from marl_llm_envs import make, replay
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import follower_solver, play, random_legal

# (env id, kwargs) of every new kwarg setting; the new env ids are also in conftest's ENV_IDS (every generic test)
VARIANTS = [
    ("think_solve-v0", {"thinker_clue_accuracy": 0.9}),
    ("think_solve-v0", {"thinker_clue_accuracy": 0.0}),
    ("voting-v0", {"reward_scheme": "fraction", "n_voters": 4}),
    ("voting-v0", {"reward_scheme": "plurality", "n_voters": 2}),
]
VARIANT_MODES = [pytest.param(e, k, m, id=f"{e}-{json.dumps(k, sort_keys=True)}-{m}")
                 for e, k in VARIANTS for m in ("text", "discrete")]


def _docstring_block(module, heading):
    block = module.__doc__[module.__doc__.index(heading):].split("::\n\n", 1)[1]
    lines = []
    for line in block.split("\n"):
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines).strip("\n")


# ---------------------------------------------------------------- generic: API, seeds, clone, ablate, replay
@pytest.mark.parametrize("env_id,kwargs,mode", VARIANT_MODES)
def test_new_kwargs_pass_pettingzoo_api_and_seed_tests(env_id, kwargs, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(make(env_id, action_mode=mode, **kwargs), num_cycles=100)
        seed_test(lambda: make(env_id, action_mode=mode, **kwargs), num_cycles=100)


@pytest.mark.parametrize("env_id,kwargs,mode", VARIANT_MODES)
def test_new_kwargs_replay_and_clones_reproduce_episodes(env_id, kwargs, mode):
    rng = np.random.default_rng(0)
    for seed in range(15):
        env = make(env_id, action_mode=mode, invalid_move="retry", **kwargs)
        env.reset(seed=seed)
        random_legal(env, env.agent_selection, rng)
        clone = env.clone()
        trace, _ = record_episode(env, seed=seed, rng=np.random.default_rng(seed), junk=0.15)
        transcript = json.loads(json.dumps(env.transcript()))
        assert transcript["kwargs"].items() >= {k: float(v) if isinstance(v, float) else v
                                                for k, v in kwargs.items()}.items()
        again, _ = record_episode(make(env_id, **transcript["kwargs"]), seed=seed, rng=np.random.default_rng(seed),
                                  junk=0.15)
        assert again == trace
        final = replay(transcript)
        assert final.done and final.team_rewards() == env.team_rewards()
        assert not clone.done  # stepping the original never moved its clone


@pytest.mark.parametrize("env_id,kwargs,mode", VARIANT_MODES)
def test_new_kwargs_ablated_agents_play_the_null_move_and_replay(env_id, kwargs, mode):
    rng = np.random.default_rng(3)
    for seed in range(10):
        env = make(env_id, action_mode=mode, **kwargs)
        env.reset(seed=seed)
        agent = env.possible_agents[seed % len(env.possible_agents)]
        branch = env.ablate(agent)
        while not branch.done:
            branch.step(random_legal(branch, branch.agent_selection, rng))
        assert replay(json.loads(json.dumps(branch.transcript()))).team_rewards() == branch.team_rewards()


# ---------------------------------------------------------------- think_solve-v0: the clue task
def _clue_env(mode="discrete", a=0.9, **kw):
    return make("think_solve-v0", action_mode=mode, thinker_clue_accuracy=a, **kw)


def test_think_solve_manual_shows_the_exact_clue_task_prompts():
    from marl_llm_envs.envs import think_solve

    for seed in range(50):
        env = _clue_env()
        env.reset(seed=seed)
        if env.clue() == "B":
            break
    assert env.observe("thinker")["text"] == _docstring_block(think_solve, "The thinker's prompt in the clue task")
    env.step(2)  # [B]
    assert env.observe("solver")["text"] == _docstring_block(think_solve, "The solver's prompt in the clue task")


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_think_solve_solver_never_sees_the_clue(mode):
    """Change the thinker's clue: the thinker's view changes, the solver's text and vector do not."""
    for seed in range(30):
        env = _clue_env(mode)
        env.reset(seed=seed)
        twin = env.clone()
        if mode == "discrete":
            twin._clue = (env._clue + 1) % env.num_candidates
        else:
            twin._clue = "SECRET-CLUE-4242"
        a, b = env.observe("solver"), twin.observe("solver")
        assert a["text"] == b["text"] and np.array_equal(a["observation"], b["observation"])
        if mode == "text":
            assert "SECRET-CLUE-4242" in twin.observe("thinker")["text"]
        ta, tb = env.observe("thinker"), twin.observe("thinker")
        assert ta["text"] != tb["text"]
        if mode == "discrete":
            assert not np.array_equal(ta["observation"], tb["observation"])
        env.step(0 if mode == "discrete" else "no hint")
        twin.step(0 if mode == "discrete" else "no hint")
        assert env.observe("solver")["text"] == twin.observe("solver")["text"]


def test_think_solve_clue_task_hides_the_problem_and_the_true_label_from_both_seats():
    """Discrete clue task: relabel the true candidate (keeping the clue): no seat's observation changes."""
    for seed in range(30):
        env = _clue_env()
        env.reset(seed=seed)
        twin = env.clone()
        twin._answer_index = (env._answer_index + 1) % env.num_candidates
        for agent in env.possible_agents:
            a, b = env.observe(agent), twin.observe(agent)
            assert a["text"] == b["text"] and np.array_equal(a["observation"], b["observation"])
            assert env.task.question not in a["text"]
            assert not a["observation"][:env.problem_size].any()


@pytest.mark.parametrize("a", [0.0, 0.25, 0.6, 0.9, 1.0])
def test_think_solve_clue_names_the_truth_with_the_stated_accuracy(a):
    n = 2000
    right = 0
    for seed in range(n):
        env = _clue_env(a=a)
        env.reset(seed=seed)
        right += env.clue() == env.labels[env.answer_index()]
    assert abs(right / n - a) < 4 * np.sqrt(max(a * (1 - a), 1e-4) / n) + 1e-9


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_think_solve_clue_relay_scores_the_accuracy_and_the_solver_alone_is_at_chance(mode):
    relay = reference_policies("think_solve-v0")["clue_relay"]
    n = 1500
    team = np.mean([play(_clue_env(mode, 0.8), relay, seed=s)["solver"] for s in range(n)])
    assert abs(team - 0.8) < 0.04
    assert play(_clue_env(mode, 1.0), relay, seed=0)["solver"] == 1.0
    if mode == "discrete":
        solo = []
        for s in range(n):
            env = _clue_env(mode, 0.8)
            env.reset(seed=s)
            env = env.ablate("thinker")
            env.step(follower_solver(env, "solver", np.random.default_rng(s)))
            solo.append(env.team_rewards()["team"])
        assert abs(np.mean(solo) - 0.25) < 0.04


def test_think_solve_clue_final_infos_say_what_the_clue_named():
    env = _clue_env(a=1.0)
    env.reset(seed=4)
    env.step(0)
    env.step(0)
    info = env.infos["solver"]
    assert info["clue"] == env.labels[env.answer_index()] and info["clue_correct"] is True


def test_think_solve_without_the_clue_is_unchanged():
    env = make("think_solve-v0", action_mode="discrete")
    env.reset(seed=0)
    assert env.vector_size == make("think_solve-v0", action_mode="discrete",
                                   thinker_clue_accuracy=0.5).vector_size - env.num_candidates
    assert "thinker_clue_accuracy" not in env.transcript()["kwargs"]   # old transcripts replay as before
    assert "clue" not in env.observe("thinker")["text"]
    env.step(0)
    env.step(0)
    assert "clue" not in env.infos["solver"]
    assert reference_policies("think_solve-v0")["clue_relay"](env, "thinker", None) == 0  # no clue: [none]


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.9", True, [0.5]])
def test_think_solve_bad_clue_accuracy_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="thinker_clue_accuracy"):
        make("think_solve-v0", thinker_clue_accuracy=bad)


def test_trainer_runs_the_clue_task_with_the_reference_thinker(tmp_path):
    """``--partners thinker=reference`` resolves to clue_relay, which passes on its clue; the learning solver's
    batches carry the relayed hints (2 steps of the MLP tier)."""
    from baselines.train import TrainConfig, train
    from baselines.train.learners import build_team

    args = ["--env", "think_solve-v0", "--env-kwargs", '{"thinker_clue_accuracy": 1.0}', "--action-mode",
            "discrete", "--model", "mlp", "--partners", "thinker=reference", "--steps", "2", "--tasks-per-step", "8",
            "--group-size", "2", "--out", str(tmp_path / "run"), "--no-progress", "--no-tensorboard"]
    cfg = TrainConfig.from_args(args)
    team = build_team(cfg, make("think_solve-v0", action_mode="discrete", thinker_clue_accuracy=1.0),
                      ["thinker", "solver"])
    assert team.policies["thinker"].name == "reference:clue_relay" and team.trainable == ["solver"]
    train(cfg)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(0.0 <= r["reward/team/team"] <= 1.0 for r in rows)


# ---------------------------------------------------------------- voting-v0: the fraction scheme, team sizes
def _vote(n, scheme, ballots, tie_break="first", **kw):
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
    env = _vote(4, "fraction", ballots)
    out = env.outcome()
    assert out["team_reward"] == pytest.approx(team) and env.team_rewards()["team"] == pytest.approx(team)
    assert [out["team_reward_without"][f"voter_{i}"] for i in range(4)] == pytest.approx(without)
    for i in range(4):  # the leave-one-out infos equal the ablated recount
        assert env.ablate(f"voter_{i}").outcome()["team_reward"] == pytest.approx(without[i])


def test_voting_fraction_is_additive_and_plurality_is_not():
    """Fraction: each right ballot adds exactly 1/n. Plurality: with a 3-1 majority no single ballot is pivotal."""
    frac = _vote(4, "fraction", "RRRW").outcome()
    assert {v: frac["team_reward"] - w for v, w in frac["team_reward_without"].items()} == pytest.approx(
        {"voter_0": 0.25, "voter_1": 0.25, "voter_2": 0.25, "voter_3": 0.0})
    plural = _vote(4, "plurality", "RRRW").outcome()
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
    first = _vote(n, scheme, ballots, "first").outcome()
    none = _vote(n, scheme, ballots, "none").outcome()
    assert first["correct"] == (ballots[0] == "R")     # the tied answer whose first ballot came first
    assert none["aggregate"] is None and none["correct"] is False
    draws = {_vote(n, scheme, ballots, "random").outcome()["aggregate"] for _ in range(3)}
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
    assert env.observe("voter_0")["text"] == _docstring_block(voting, 'A voter\'s prompt under ``reward_scheme="fraction"``')


def test_voting_scheme_names_and_errors():
    env = make("voting-v0", reward_scheme="fraction")
    env.reset(seed=1)
    assert env.transcript()["kwargs"]["reward_scheme"] == "fraction"
    assert make("voting-v0").reward_scheme == "binary"
    with pytest.raises(ValueError, match="reward_scheme='fractions' is not one of .*'plurality', 'fraction'"):
        make("voting-v0", reward_scheme="fractions")
