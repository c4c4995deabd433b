"""Properties every env must keep: hidden information stays hidden, rewards add up, any text action is safe, and
random legal play finishes every registered env in both modes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marl_llm_envs import make, spec
from marl_llm_envs.envs import kuhn_poker, think_solve
from marl_llm_envs.scripted import play, random_legal
from marl_llm_envs.tasks import Task, TaskSource
from tests.conftest import ENV_IDS, ENV_MODES, docstring_block

# ---------------------------------------------------------------- hidden information


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_kuhn_opponent_card_never_appears_before_a_showdown(mode):
    rng = np.random.default_rng(0)
    for seed in range(200):
        env = make("kuhn_poker-v0", action_mode=mode)
        env.reset(seed=seed)
        while not env.done:
            agent = env.agent_selection
            obs = env.observe(agent)
            opp = env._cards["player_1" if agent == "player_0" else "player_0"]
            # swapping the opponent's card for the unused card changes nothing the agent sees
            alt = env.clone()
            unused = ({0, 1, 2} - set(env._cards.values())).pop()
            alt._cards = {**env._cards, ("player_1" if agent == "player_0" else "player_0"): unused}
            alt_obs = alt.observe(agent)
            assert alt_obs["text"] == obs["text"] and np.array_equal(alt_obs["observation"], obs["observation"])
            assert f"Your card: {kuhn_poker.CARDS[opp]}" not in obs["text"]
            env.step(random_legal(env, agent, rng))


class _SentinelTasks(TaskSource):
    """Problems whose answer is a string that must never reach an agent's observation."""

    name = "sentinel"
    feature_size = 2

    def sample(self, rng, split="train"):
        k = int(rng.integers(1000))
        return Task(task_id=f"sentinel/{split}/{k}", question=f"What is the secret number {k}?",
                    answer="SECRET-ANSWER-7731", source="sentinel",
                    distractors=("d1", "d2", "d3", "d4"), features=(0.5, -0.5))

    def verify(self, task, response):
        return response.strip() == task.answer

    def spec(self):
        return {"name": "sentinel"}


@pytest.mark.parametrize("env_id", ["think_solve-v0", "voting-v0"])
def test_ground_truth_answer_never_appears_in_any_text_observation(env_id):
    rng = np.random.default_rng(0)
    for seed in range(30):
        env = make(env_id, tasks=_SentinelTasks())
        env.reset(seed=seed)
        while not env.done:
            for agent in env.possible_agents:
                assert "SECRET-ANSWER-7731" not in env.observe(agent)["text"]
            env.step(random_legal(env, env.agent_selection, rng))


@pytest.mark.parametrize("env_id", ["think_solve-v0", "voting-v0"])
def test_discrete_observations_do_not_depend_on_which_candidate_is_true(env_id):
    """Relabel the true answer: every agent's text and vector stay the same (the candidate list is the same)."""
    for seed in range(30):
        env = make(env_id, action_mode="discrete", **({"clue_accuracy": None} if env_id == "voting-v0" else {}))
        env.reset(seed=seed)
        twin = env.clone()
        wrong = next(i for i in range(env.num_candidates) if i != env._answer_index)
        twin._answer_index = wrong
        twin.task = Task(env.task.task_id, env.task.question, env.candidates[wrong], env.task.source,
                         env.task.distractors, env.task.features)
        for agent in env.possible_agents:
            a, b = env.observe(agent), twin.observe(agent)
            assert a["text"] == b["text"] and np.array_equal(a["observation"], b["observation"])


def test_voters_never_see_other_ballots():
    for mode in ("text", "discrete"):
        env = make("voting-v0", action_mode=mode, n_voters=3)
        env.reset(seed=1)
        before = {a: env.observe(a)["text"] for a in env.possible_agents}
        env.step("\\boxed{12345}" if mode == "text" else 2)
        env.step("[abstain]" if mode == "text" else 4)
        for a in env.possible_agents:
            assert env.observe(a)["text"] == before[a]
            assert "12345" not in env.observe(a)["text"]


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_solver_sees_the_thought_and_thinker_never_sees_the_answer_box(mode):
    env = make("think_solve-v0", action_mode=mode)
    env.reset(seed=0)
    env.step("my plan: multiply first" if mode == "text" else 1)  # discrete: "I think the answer is (A)"
    thought = "my plan: multiply first" if mode == "text" else "I think the answer is (A)"
    assert thought in env.observe("solver")["text"]
    before = env.observe("thinker")
    env.step("So it is \\boxed{98765}" if mode == "text" else 3)  # the solver answers (D in discrete mode)
    assert env.done and env.infos["solver"]["answer"] == ("98765" if mode == "text" else "D")
    after = env.observe("thinker")
    assert after["text"] == before["text"] and np.array_equal(after["observation"], before["observation"])
    assert "98765" not in after["text"] and "boxed{9" not in after["text"]


# ---------------------------------------------------------------- rewards


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_zero_sum_rewards_sum_to_zero_and_team_members_share_the_team_reward(env_id, mode):
    s = spec(env_id)
    rng = np.random.default_rng(1)
    for seed in range(40):
        env = make(env_id, action_mode=mode, invalid_move="retry")
        totals = {}  # the agents of this episode (orchestrator-v0's workers appear at run time)
        env.reset(seed=seed)
        for agent in env.agent_iter():
            _, reward, term, trunc, info = env.last()
            totals[agent] = totals.get(agent, 0.0) + reward
            assert info["team"] == s.teams[agent] and info["role"] == s.roles[agent]
            env.step(None if term or trunc else (random_legal(env, agent, rng) if rng.random() > 0.1 else "??"))
        if s.family == "zero_sum":
            assert sum(totals.values()) == pytest.approx(0.0)
        else:
            assert len(set(totals.values())) == 1
        for agent, total in totals.items():
            assert s.reward_range[0] <= total <= s.reward_range[1]


@pytest.mark.parametrize("penalty", [-5.0, 0.0])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_return_lies_in_reward_range_whatever_the_invalid_penalty(env_id, penalty):
    """reward_range is what a wrapper or a validator reads to bound returns: it must cover a penalty below the
    game's own worst outcome, given after legal moves (a match game after some hands)."""
    kwargs = {"rounds": 3} if env_id in ("kuhn_poker-v0", "leduc_holdem-v0") else {}
    rng = np.random.default_rng(2)
    for seed in range(15):
        env = make(env_id, invalid_penalty=penalty, **kwargs)
        low, high = env.reward_range
        env.reset(seed=seed)
        invalid_at, totals = int(rng.integers(0, 12)), {}
        for n, agent in enumerate(env.agent_iter()):
            _, reward, term, trunc, _ = env.last()
            totals[agent] = totals.get(agent, 0.0) + reward
            env.step(None if term or trunc else ("??" if n == invalid_at else random_legal(env, agent, rng)))
        for agent, total in totals.items():
            assert low <= total <= high, (seed, agent, total, env.reward_range)


@pytest.mark.parametrize("penalty", [float("nan"), float("inf"), float("-inf"), 0.5, True, "-1"])
def test_an_invalid_penalty_that_is_not_a_finite_number_at_most_zero_is_refused(penalty):
    with pytest.raises(ValueError, match="invalid_penalty must be a finite number <= 0"):
        make("kuhn_poker-v0", invalid_penalty=penalty)


def test_team_reward_in_infos_is_the_running_team_return():
    env = make("kuhn_poker-v0", action_mode="discrete", rounds=3)
    env.reset(seed=0)
    running = 0.0
    while not env.done:
        env.step(env._legal_ids(env.agent_selection)[0])
        running += env.rewards["player_0"]
        assert env.infos["player_0"]["team_reward"] == running


# ---------------------------------------------------------------- fuzzing

_actions = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=50),
    st.sampled_from(["", " ", "\x00", "[", "]", "[]", "[[bet]]", "[BET] [fold]", "\\boxed{", "\\boxed{}", "\\boxed{{}}",
                     "[abstain]", "[none]", "[A]", "[4]", "[9]", "[-1]", "x" * 100_000, "\\boxed{" * 1000,
                     "junk [check] junk", "\u202e[bet]", "\\boxed{\\boxed{7}}"]),
    st.builds(lambda a, b, c: a + b + c, st.text(max_size=20),
              st.sampled_from(["[check]", "[bet]", "[call]", "[fold]", "[0]", "[4]", "[8]", "\\boxed{7}", "[A]"]),
              st.text(max_size=20)),
    st.integers(), st.floats(allow_nan=True), st.none(), st.binary(max_size=10),
    st.lists(st.integers(), max_size=3),
)


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(actions=st.lists(_actions, min_size=1, max_size=12), seed=st.integers(0, 2**32),
       policy=st.sampled_from(["penalty", "retry", "random"]))
def test_arbitrary_actions_never_raise_and_leave_a_legal_state(env_id, mode, actions, seed, policy):
    if policy == "random" and mode == "text" and env_id in ("think_solve-v0", "voting-v0", "orchestrator-v0"):
        policy = "retry"
    env = make(env_id, action_mode=mode, invalid_move=policy)
    env.reset(seed=seed)
    for action in actions:
        if env.done:
            break
        agent = env.agent_selection
        env.step(action)
        for a in env.agents:
            obs = env.observe(a)
            assert env.observation_space(a).contains(obs)
        info = env.infos.get(agent)
        if info is not None and info["invalid_action"] is not None:
            assert info["invalid_action"]["policy"] == policy and info["invalid_action"]["reason"]
    if not env.done:  # the game can still be finished with legal moves
        rng = np.random.default_rng(0)
        for _ in range(5000):
            if env.done:
                break
            env.step(random_legal(env, env.agent_selection, rng))
        assert env.done


# ---------------------------------------------------------------- the manuals


def test_kuhn_manual_shows_the_exact_prompt():
    for seed in range(100):
        env = make("kuhn_poker-v0")
        env.reset(seed=seed)
        if env._cards["player_0"] == 2:
            break
    assert env.observe("player_0")["text"] == docstring_block(kuhn_poker, "The prompt (player_0")


def test_tic_tac_toe_manual_shows_the_exact_prompt():
    from marl_llm_envs.envs import tic_tac_toe

    env = make("tic_tac_toe-v0")
    env.reset(seed=0)
    assert env.observe("player_0")["text"] == docstring_block(tic_tac_toe, "The prompt (player_0")


class _FixedTask(_SentinelTasks):
    def sample(self, rng, split="train"):
        return Task("fixed/train/0", "Compute the value of 3 + 4 * 2.", "11", "fixed", ("14", "9", "10"), (0.0, 0.0))


def test_think_solve_manual_shows_the_exact_prompts():
    env = make("think_solve-v0", tasks=_FixedTask())
    env.reset(seed=0)
    assert env.observe("thinker")["text"] == docstring_block(think_solve, "The thinker's prompt")
    solo = env.ablate("thinker")
    env.step("Multiply first: 4 * 2 = 8, then add 3.")
    assert env.observe("solver")["text"] == docstring_block(think_solve, "The solver's prompt")
    assert solo.observe("solver")["text"] == docstring_block(think_solve, "The solver's solo prompt")


def test_voting_manual_shows_the_exact_prompt():
    from marl_llm_envs.envs import voting

    env = make("voting-v0", tasks=_FixedTask())
    env.reset(seed=0)
    assert env.observe("voter_0")["text"] == docstring_block(voting, "A voter's prompt")


def test_every_env_module_docstring_is_a_manual():
    for env_id in ENV_IDS:
        doc = spec(env_id).env_class.__module__
        module = __import__(doc, fromlist=["x"])
        for section in ("Observation", "Rewards", "Invalid moves", "Version history", "Ablation"):
            assert re.search(rf"^{section}", module.__doc__, re.M), (env_id, section)


def test_scripted_random_play_finishes_every_env():
    from marl_llm_envs import list_envs

    for env_id in list_envs():
        for mode in ("text", "discrete"):
            env = make(env_id, action_mode=mode)
            totals = play(env, random_legal, seed=0)
            assert env.done and set(totals) == set(env.possible_agents)
