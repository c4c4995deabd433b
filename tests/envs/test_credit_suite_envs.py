"""The credit suite's envs and kwargs (issue 16): think_solve-v0's clue task, voting-v0's fraction scheme,
team_umbrella-v0 and free_riding-v0. Rules by hand, hidden information, the optimum the manuals prove, PettingZoo's
API and seed tests in both action modes, clone / ablate / replay for every new kwarg."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from tests.conftest import docstring_block, record_episode
from marl_llm_envs import make, replay
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import follower_solver, play, random_legal

# (env id, kwargs) of every new kwarg setting; the new env ids are also in conftest's ENV_IDS (every generic test)
VARIANTS = [
    ("think_solve-v0", {"thinker_clue_accuracy": 0.9}),
    ("think_solve-v0", {"thinker_clue_accuracy": 0.0}),
    ("voting-v0", {"reward_scheme": "fraction", "n_voters": 4}),
    ("voting-v0", {"reward_scheme": "plurality", "n_voters": 2}),
    ("team_umbrella-v0", {"delay": 1}),
    ("team_umbrella-v0", {"delay": 30, "noise": 0.5}),
    ("free_riding-v0", {"idle_seats": 0}),
    ("free_riding-v0", {"idle_seats": 7}),
]
VARIANT_MODES = [pytest.param(e, k, m, id=f"{e}-{json.dumps(k, sort_keys=True)}-{m}")
                 for e, k in VARIANTS for m in ("text", "discrete")]


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
    assert env.observe("thinker")["text"] == docstring_block(think_solve, "The thinker's prompt in the clue task")
    env.step(2)  # [B]
    assert env.observe("solver")["text"] == docstring_block(think_solve, "The solver's prompt in the clue task")


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


@pytest.mark.parametrize("a,n", [(0.0, 200), (0.6, 1000), (1.0, 200)])
def test_think_solve_clue_names_the_truth_with_the_stated_accuracy(a, n):
    right, env = 0, _clue_env(a=a)
    for seed in range(n):
        env.reset(seed=seed)
        right += env.clue() == env.labels[env.answer_index()]
    assert abs(right / n - a) < 4 * np.sqrt(max(a * (1 - a), 1e-4) / n) + 1e-9


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_think_solve_clue_relay_scores_the_accuracy_and_the_solver_alone_is_at_chance(mode):
    relay = reference_policies("think_solve-v0")["clue_relay"]
    n, env = 800, _clue_env(mode, 0.8)
    team = np.mean([play(env, relay, seed=s)["solver"] for s in range(n)])
    assert abs(team - 0.8) < 0.06
    assert play(_clue_env(mode, 1.0), relay, seed=0)["solver"] == 1.0
    if mode == "discrete":
        solo = []
        for s in range(n):
            env.reset(seed=s)
            branch = env.ablate("thinker")
            branch.step(follower_solver(branch, "solver", np.random.default_rng(s)))
            solo.append(branch.team_rewards()["team"])
        assert abs(np.mean(solo) - 0.25) < 0.06


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
    assert env.observe("voter_0")["text"] == docstring_block(voting, 'A voter\'s prompt under ``reward_scheme="fraction"``')


def test_voting_scheme_names_and_errors():
    env = make("voting-v0", reward_scheme="fraction")
    env.reset(seed=1)
    assert env.transcript()["kwargs"]["reward_scheme"] == "fraction"
    assert make("voting-v0").reward_scheme == "binary"
    with pytest.raises(ValueError, match="reward_scheme='fractions' is not one of .*'plurality', 'fraction'"):
        make("voting-v0", reward_scheme="fractions")


# ---------------------------------------------------------------- team_umbrella-v0
def _umbrella(delay=3, seed=0, **kw):
    env = make("team_umbrella-v0", action_mode="discrete", delay=delay, **kw)
    env.reset(seed=seed)
    return env


def _walk(env, decision, distractor=3, p1=1):
    """Play an umbrella episode: player_0 decides (0 umbrella, 1 no_umbrella) then plays ``distractor``; player_1
    always plays ``p1``. Returns the rewards each step handed to player_0."""
    got = []
    first = True
    while not env.done:
        agent = env.agent_selection
        env.step((decision if first else distractor) if agent == "player_0" else p1)
        first = first and agent != "player_0"
        got.append(env.rewards["player_0"])
    return got


def test_umbrella_manual_shows_the_exact_prompts():
    from marl_llm_envs.envs import team_umbrella

    env = next(e for e in (_umbrella(seed=s) for s in range(20)) if e.weather == "rain")
    assert env.observe("player_0")["text"] == docstring_block(team_umbrella, "The prompt (player_0")
    env.step(0)
    env.step(1)
    env.step(3)  # round 2: player_0 waits, player_1 to move
    assert env.observe("player_1")["text"] == docstring_block(team_umbrella, "The prompt (player_1")


@pytest.mark.parametrize("delay", [1, 3, 10, 30])
def test_umbrella_final_reward_depends_only_on_the_decisive_move_and_comes_last(delay):
    for seed in range(12):
        matched = _umbrella(delay, seed)
        right = 0 if matched.weather == "rain" else 1
        rng = np.random.default_rng(seed)
        got = []
        while not matched.done:  # the right decision, then random distractors from both seats
            agent = matched.agent_selection
            move = right if agent == "player_0" and not got else random_legal(matched, agent, rng)
            matched.step(move)
            got.append(matched.rewards["player_0"])
        wrong = _umbrella(delay, seed)
        got_wrong = _walk(wrong, 1 - right, distractor=2, p1=0)
        assert len(got) == len(got_wrong) == 2 * (delay + 1)
        noise = got[3:-1:2]                  # after player_1's move in rounds 2 .. delay (the last one adds the final)
        assert len(noise) == delay - 1 and all(abs(x) == 1.0 for x in noise)
        assert got[1] == 0.0 and all(got[i] == 0.0 for i in range(0, len(got), 2))   # no reward in round 1
        assert got[-1] - got_wrong[-1] == 2.0                        # +1 vs -1, on the last step only
        assert got[:-1] == got_wrong[:-1]                            # the same noise whatever the moves
        assert matched.infos["player_0"]["decisive_reward"] == 1.0 and wrong.infos["player_0"]["decisive_reward"] == -1.0
        assert matched.team_rewards()["team"] == pytest.approx(1.0 + matched.infos["player_0"]["noise_total"])
        assert matched.infos["player_1"]["moves"]["player_0"][0] == ("umbrella" if right == 0 else "no_umbrella")


def test_umbrella_noise_kwarg_scales_the_distractor_rewards_and_zero_turns_them_off():
    env = _umbrella(10, 4, noise=0.25)
    assert {abs(r) for r in _walk(env, 0)[3:-1:2]} == {0.25}
    quiet = _umbrella(10, 4, noise=0)
    rewards = _walk(quiet, 0)
    assert rewards[:-1] == [0.0] * (len(rewards) - 1) and abs(rewards[-1]) == 1.0
    assert "There are no other rewards." in quiet.observe("player_0")["text"]


def test_umbrella_only_player_0_sees_the_forecast():
    for seed in range(30):
        env = _umbrella(3, seed)
        twin = env.clone()
        twin.weather = "sun" if env.weather == "rain" else "rain"
        rng = np.random.default_rng(seed)
        while not env.done:
            a, b = env.observe("player_1"), twin.observe("player_1")
            assert a["text"] == b["text"] and np.array_equal(a["observation"], b["observation"])
            assert "forecast (only you" not in a["text"] and not a["observation"][:2].any()
            move = random_legal(env, env.agent_selection, rng)
            env.step(move)
            twin.step(move)
        first = _umbrella(3, seed)
        assert first.observe("player_0")["observation"][:2].sum() == 1.0
        assert f"always right): {first.weather}" in first.observe("player_0")["text"]


def test_umbrella_ablating_player_0_decides_no_umbrella_and_later_ablations_change_nothing():
    for seed in range(20):
        env = _umbrella(3, seed)
        base = env.clone()
        _walk(base, 0)
        ablated = env.ablate("player_0")
        _walk(ablated, 0)  # player_0's moves are the env's null moves now
        assert ablated.infos["player_0"]["umbrella"] is False
        assert ablated.infos["player_0"]["moves"]["player_0"] == ["no_umbrella", "wait", "wait", "wait"]
        env.step(0)
        env.step(1)
        later, other = env.ablate("player_0"), env.ablate("player_1")
        for branch in (env, later, other):
            while not branch.done:
                branch.step(2 if branch.agent_selection == "player_0" else 0)   # [look] / [walk]
        assert later.team_rewards() == other.team_rewards() == env.team_rewards()
        gain = env.team_rewards()["team"] - ablated.team_rewards()["team"]   # umbrella vs the null no_umbrella
        assert gain == (2.0 if env.weather == "rain" else -2.0)


def test_umbrella_reference_is_optimal_and_random_is_zero_in_expectation():
    follow = reference_policies("team_umbrella-v0")["forecast_follower"]
    for mode in ("discrete", "text"):
        env = make("team_umbrella-v0", action_mode=mode, delay=3)
        for seed in range(200):
            env.reset(seed=seed)
            while not env.done:
                env.step(follow(env, env.agent_selection, None))
            assert env.infos["player_0"]["decisive_reward"] == 1.0
    env = make("team_umbrella-v0", action_mode="discrete", delay=1)
    decisive, rng = [], np.random.default_rng(0)
    for seed in range(2000):
        env.reset(seed=seed)
        while not env.done:
            env.step(random_legal(env, env.agent_selection, rng))
        decisive.append(env.infos["player_0"]["decisive_reward"])
    assert abs(np.mean(decisive)) < 0.07


def test_umbrella_invalid_decision_ends_with_the_penalty():
    env = _umbrella(3, 0)
    env.step(3)   # [wait] is not legal in the decision round
    assert env.done and env.team_rewards()["team"] == -1.0
    assert env.infos["player_0"]["outcome"] == "invalid_move" and env.infos["player_0"]["decisive_reward"] is None


@pytest.mark.parametrize("bad", [{"delay": 0}, {"delay": 2.5}, {"delay": True}, {"noise": -1}, {"noise": "x"},
                                 {"noise": float("inf")}])
def test_umbrella_bad_kwargs_are_clear_errors(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        make("team_umbrella-v0", **bad)


# ---------------------------------------------------------------- free_riding-v0
def _free(idle=3, seed=0, mode="discrete", **kw):
    env = make("free_riding-v0", action_mode=mode, idle_seats=idle, **kw)
    env.reset(seed=seed)
    return env


def test_free_riding_manual_shows_the_exact_prompts():
    from marl_llm_envs.envs import free_riding

    env = next(e for e in (_free(1, s) for s in range(20)) if e.card == "green")
    assert env.observe("decider")["text"] == docstring_block(free_riding, "The prompt (decider")
    env.step(0)
    assert env.observe("idle_0")["text"] == docstring_block(free_riding, "The prompt (idle_0")


@pytest.mark.parametrize("idle", [0, 1, 3, 7])
def test_free_riding_only_the_deciders_move_sets_the_reward(idle):
    for seed in range(10):
        rewards = set()
        for idle_move in range(3):
            env = _free(idle, seed)
            env.step(["red", "green", "blue"].index(env.card))
            while not env.done:
                env.step(idle_move)
            rewards.add(env.team_rewards()["team"])
            assert env.infos["decider"]["moves"] == {"decider": env.card,
                                                     **{f"idle_{i}": ["hum", "nod", "wait"][idle_move]
                                                        for i in range(idle)}}
        assert rewards == {1.0}
        wrong = _free(idle, seed)
        wrong.step((["red", "green", "blue"].index(wrong.card) + 1) % 3)
        while not wrong.done:
            wrong.step(0)
        assert wrong.team_rewards()["team"] == 0.0 and wrong.infos["decider"]["correct"] is False
        assert len(wrong.possible_agents) == idle + 1 and wrong.vector_size == 5 + idle


def test_free_riding_idle_seats_never_see_the_card_or_other_moves():
    for seed in range(20):
        env = _free(3, seed)
        twin = env.clone()
        twin.card = next(c for c in ("red", "green", "blue") if c != env.card)
        views = {a: env.observe(a) for a in env.possible_agents[1:]}
        for a in env.possible_agents[1:]:
            b = twin.observe(a)
            assert views[a]["text"] == b["text"] and np.array_equal(views[a]["observation"], b["observation"])
            assert not views[a]["observation"][:3].any() and env.card not in views[a]["text"].split("Reply")[0][-40:]
        env.step(0)
        assert env.observe("idle_1")["text"] == views["idle_1"]["text"]  # the decider's move is not shown


def test_free_riding_idle_invalid_move_never_changes_the_reward():
    env = _free(2, 0, mode="text")
    env.step(f"[{env.card}]")
    env.step("I refuse to move")
    assert env.infos["idle_0"]["invalid_action"] is not None and not env.done
    env.step("[hum]")
    assert env.done and env.team_rewards()["team"] == 1.0
    assert env.infos["decider"]["moves"]["idle_0"] == "wait"
    bad = _free(2, 0, mode="text")
    bad.step("no colour")
    assert bad.done and bad.team_rewards()["team"] == -1.0


def test_free_riding_ablations_give_idle_seats_zero_credit_and_the_decider_all_of_it():
    matcher = reference_policies("free_riding-v0")["card_matcher"]
    for seed in range(20):
        env = _free(3, seed)
        for agent in env.possible_agents:
            branch = env.ablate(agent)
            while not branch.done:
                branch.step(matcher(branch, branch.agent_selection, None))
            assert branch.team_rewards()["team"] == (0.0 if agent == "decider" else 1.0)


def test_free_riding_reference_is_optimal_and_random_is_a_third():
    matcher = reference_policies("free_riding-v0")["card_matcher"]
    for mode in ("discrete", "text"):
        env = make("free_riding-v0", action_mode=mode, idle_seats=3)
        assert all(play(env, matcher, seed=s)["decider"] == 1.0 for s in range(100))
    env = make("free_riding-v0", action_mode="discrete", idle_seats=1)
    assert abs(np.mean([play(env, random_legal, seed=s)["decider"] for s in range(3000)]) - 1 / 3) < 0.03


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_free_riding_bad_idle_seats_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="idle_seats"):
        make("free_riding-v0", idle_seats=bad)


# ---------------------------------------------------------------- the measured anchors agree with the proofs
def _row(env_id, name):
    from marl_llm_envs import spec

    row = spec(env_id).anchors[name]
    assert row["games"] >= 300 and row["ci95"] >= 0, (env_id, name)
    return row


def _near(row, value):
    return abs(row["mean"] - value) <= 2 * max(row["ci95"], 0.01)   # 2 x the 95% half-width: about 4 sigma


def test_credit_suite_anchors_match_the_manuals_optimum_and_random_values():
    for a in (0.4, 0.6, 0.8, 0.9, 1.0):
        assert _near(_row("think_solve-v0", f"clue_relay, thinker_clue_accuracy={a}"), a)
        assert _near(_row("think_solve-v0", f"random, thinker_clue_accuracy={a}"), 0.25)
        assert _near(_row("think_solve-v0", f"follower_solver, thinker ablated, thinker_clue_accuracy={a}"), 0.25)
    for n in (2, 4, 8, 16):
        assert _near(_row("voting-v0", f"clue_follower, reward_scheme=fraction, n_voters={n}"), 0.7)
        assert _near(_row("voting-v0", f"random, reward_scheme=fraction, n_voters={n}"), 0.2)
        plural = _row("voting-v0", f"clue_follower, reward_scheme=plurality, n_voters={n}")
        assert plural["mean"] > _row("voting-v0", f"random, reward_scheme=plurality, n_voters={n}")["mean"] + 0.3
    for d in (1, 3, 10, 30):
        assert _row("team_umbrella-v0", f"forecast_follower, delay={d}, decisive reward")["mean"] == 1.0
        assert _near(_row("team_umbrella-v0", f"random, delay={d}, decisive reward"), 0.0)
        assert _near(_row("team_umbrella-v0", f"random, delay={d}"), 0.0)
        assert _near(_row("team_umbrella-v0", f"forecast_follower, delay={d}"), 1.0)
    for k in (0, 1, 3, 7):
        assert _row("free_riding-v0", f"card_matcher, idle_seats={k}")["mean"] == 1.0
        assert _near(_row("free_riding-v0", f"random, idle_seats={k}"), 1 / 3)


def test_new_envs_are_registered_with_specs_and_in_pettingzoos_namespace():
    import pettingzoo

    from marl_llm_envs import list_envs, spec

    assert {"team_umbrella-v0", "free_riding-v0"} <= set(list_envs("cooperative"))
    assert spec("team_umbrella-v0").reward_range == (-4.0, 4.0)           # delay 3, noise 1
    assert make("team_umbrella-v0", delay=30, noise=0.5).reward_range == (-16.0, 16.0)
    assert spec("free_riding-v0").reward_range == (-1.0, 1.0)
    assert spec("free_riding-v0").roles == {"decider": "decider", "idle_0": "idle"}
    for env_id in ("team_umbrella-v0", "free_riding-v0"):
        env = pettingzoo.make("aec", f"marl_llm/{env_id}")
        env.reset(seed=0)
        assert env.unwrapped.env_id == env_id
