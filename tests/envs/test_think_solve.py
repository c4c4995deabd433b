"""think_solve-v0: the oracle thinker and the solver alone, verified boxed answers, capped printable thoughts, one
problem per seed in every mode, knights-and-knaves tasks, a local GSM8K-style file; and the credit suite's clue task
(its manual's prompts, what each seat may see, the clue's accuracy, the clue relay, bad kwargs, a trainer run); its
manual lists every task source the registry knows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from marl_llm_envs import make, replay
from marl_llm_envs.envs import think_solve
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import follower_solver, oracle_thinker, play
from marl_llm_envs.tasks import make_task_source
from tests.conftest import docstring_block


def _mean_team_reward(mode, policies, episodes=300, ablate_thinker=False):
    total = 0.0
    for seed in range(episodes):
        env = make("think_solve-v0", action_mode=mode)
        rng = np.random.default_rng([seed, 1])  # the policies' stream, apart from the env seed
        env.reset(seed=seed)
        if ablate_thinker:
            env = env.ablate("thinker")
        while not env.done:
            agent = env.agent_selection
            env.step(policies[agent](env, agent, rng))
        total += env.infos["solver"]["team_reward"]
    return total / episodes


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_oracle_thinker_makes_the_team_score_while_the_solver_alone_is_at_chance(mode):
    pair = {"thinker": oracle_thinker, "solver": follower_solver}
    with_thinker = _mean_team_reward(mode, pair)
    solo = _mean_team_reward(mode, pair, ablate_thinker=True)
    assert with_thinker >= 0.9
    if mode == "discrete":
        assert abs(solo - 0.25) < 0.08   # 4 candidates: chance is 1/4
    else:
        assert solo < 0.1


def test_think_solve_text_answer_is_verified_and_needs_a_box():
    env = make("think_solve-v0")
    env.reset(seed=0)
    env.step("hint")
    env.step(f"It is \\boxed{{{env.task.answer}}}.")
    assert env.infos["solver"]["correct"] and env.infos["thinker"]["team_reward"] == 1.0
    env = make("think_solve-v0", reward_scheme="signed")
    env.reset(seed=0)
    env.step("hint")
    env.step(f"{env.task.answer}")  # no box: invalid, penalty
    assert env.infos["solver"]["team_reward"] == -1.0 and env.infos["solver"]["outcome"] == "invalid_move"
    env = make("think_solve-v0", reward_scheme="signed")
    env.reset(seed=0)
    env.step("hint")
    env.step("\\boxed{definitely wrong}")
    assert env.infos["solver"]["team_reward"] == -1.0 and env.infos["solver"]["correct"] is False


def test_think_solve_thought_is_capped_and_made_printable():
    env = make("think_solve-v0", max_thought_chars=50)
    env.reset(seed=0)
    env.step("caf\u00e9 \u2603 " + "x" * 100)
    text = env.observe("solver")["text"]
    assert "cafe ? xxx" in text and "x" * 51 not in text
    assert env.infos["thinker"]["thought_truncated"] is True
    assert env.observation_space("solver").contains(env.observe("solver"))


def test_think_solve_same_seed_same_problem_across_modes_of_use():
    a, b = make("think_solve-v0"), make("think_solve-v0")
    a.reset(seed=11)
    b.reset(seed=11)
    assert a.task == b.task
    c = make("think_solve-v0", split="test")
    c.reset(seed=11)
    assert "/test/" in c.task.task_id


def test_think_solve_knights_knaves_tasks():
    env = make("think_solve-v0", tasks="knights_knaves:people=3")
    env.reset(seed=0)
    assert "knight" in env.observe("thinker")["text"].lower()
    env.step("think")
    env.step(f"\\boxed{{{env.task.answer}}}")
    assert env.infos["solver"]["correct"]


def test_think_solve_and_voting_run_on_a_local_gsm8k_style_jsonl(tmp_path):
    import json

    path = tmp_path / "gsm8k.jsonl"
    rows = [{"question": f"Tom has {i} apples and buys {i + 3} more. How many apples does he have?",
             "answer": f"He has {i} + {i + 3} = {2 * i + 3} apples.\n#### {2 * i + 3}"} for i in range(1, 40)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    env = make("think_solve-v0", tasks=f"jsonl:{path}")
    env.reset(seed=0)
    assert "apples" in env.observe("thinker")["text"]
    env.step("Add the two numbers.")
    env.step(f"So \\boxed{{{env.task.answer}}}")
    assert env.team_rewards() == {"team": 1.0}
    again = replay(env.transcript())
    assert again.team_rewards() == {"team": 1.0} and again.task == env.task
    voting = make("voting-v0", tasks=f"jsonl:{path}", action_mode="discrete")
    voting.reset(seed=1)
    assert len(voting.candidates) == 4 and voting.task.answer in voting.candidates


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


def _known_task_sources() -> list[str]:
    with pytest.raises(ValueError) as err:
        make_task_source("no_such_source")
    return str(err.value).split("known sources: ")[1].split(";")[0].split(", ")


def test_think_solve_manual_lists_every_task_source():
    sources = _known_task_sources()
    assert "countdown" in sources
    for name in sources:
        assert f'``"{name}' in think_solve.__doc__, name
