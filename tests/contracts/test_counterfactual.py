"""clone(), ablate() and transcript() / replay(): the primitives counterfactual credit is built on."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import ENV_MODES, record_episode
from marl_llm_envs import make, replay
from marl_llm_envs.scripted import random_legal


def _snapshot(env):
    agent = env.agent_selection
    obs = env.observe(agent)
    return (agent, obs["text"], obs["observation"].tolist(), dict(env._cumulative_rewards),
            dict(env.terminations), json.dumps(env.infos, sort_keys=True, default=str), env.transcript())


def _advance(env, rng, steps):
    for _ in range(steps):
        if env.done:
            break
        env.step(random_legal(env, env.agent_selection, rng))


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_stepping_a_clone_never_changes_the_original(env_id, mode):
    for seed in range(20):
        env = make(env_id, action_mode=mode)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        _advance(env, rng, int(rng.integers(0, 3)))
        before = _snapshot(env)
        clone = env.clone()
        _advance(clone, rng, 20)
        clone.reset(seed=seed + 1000)
        assert _snapshot(env) == before


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_two_clones_given_the_same_actions_agree(env_id, mode):
    for seed in range(20):
        env = make(env_id, action_mode=mode, invalid_move="random" if mode == "discrete" else "retry")
        env.reset(seed=seed)
        _advance(env, np.random.default_rng(seed), 1)
        a, b = env.clone(), env.clone()
        ra, rb = np.random.default_rng(7), np.random.default_rng(7)
        while not a.done:
            assert _snapshot(a) == _snapshot(b)
            a.step(random_legal(a, a.agent_selection, ra))
            b.step(random_legal(b, b.agent_selection, rb))
        assert _snapshot(a) == _snapshot(b)


def test_clone_copies_the_rng_state():
    env = make("think_solve-v0", action_mode="discrete", invalid_move="random")
    env.reset(seed=3)
    first = env.clone()
    first.step(99)   # invalid: replaced by a random legal move drawn from the env's RNG
    second = env.clone()
    second.step(99)
    assert first.infos["thinker"]["invalid_action"]["replaced_by"] == second.infos["thinker"]["invalid_action"]["replaced_by"]


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
@pytest.mark.parametrize("invalid_move", ["penalty", "retry", "random"])
def test_replay_reproduces_observations_and_rewards_exactly(env_id, mode, invalid_move):
    if invalid_move == "random" and mode == "text" and env_id in ("think_solve-v0", "voting-v0", "orchestrator-v0"):
        pytest.skip("free-text answers have no finite move set for 'random'")
    rng = np.random.default_rng(0)
    for episode in range(25):
        env = make(env_id, action_mode=mode, invalid_move=invalid_move)
        trace, _ = record_episode(env, seed=episode, rng=rng, junk=0.15)
        transcript = json.loads(json.dumps(env.transcript()))
        replayed = make(transcript["env_id"], **transcript["kwargs"])
        trace2, _ = record_episode_from(replayed, transcript)
        assert trace2 == trace
        final = replay(transcript)
        assert final.done == env.done


def record_episode_from(env, transcript):
    """Step ``env`` through a transcript's actions, recording what each agent saw (as record_episode does)."""
    env.reset(seed=transcript["seed"])
    trace, actions = [], iter(transcript["actions"])
    for agent in env.agent_iter(max_iter=5000):
        obs, reward, terminated, _, _ = env.last()
        trace.append((agent, obs["text"], obs["observation"].tolist(),
                      obs.get("action_mask", np.zeros(0)).tolist(), float(reward), terminated))
        action = next(actions)
        env.step(action["float"] if isinstance(action, dict) and "float" in action else action)
    return trace, None


def _full_state(env):
    """Everything an agent or a trainer can read from the env now: every live agent's observation, the rewards,
    the terminations, the infos and the team returns."""
    views = {}
    for a in env.agents:
        obs = env.observe(a)
        views[a] = (obs["text"], obs["observation"].tolist(), obs.get("action_mask", np.zeros(0)).tolist())
    return (env.agent_selection, list(env.agents), views, dict(env.rewards), dict(env._cumulative_rewards),
            dict(env.terminations), dict(env.truncations), json.dumps(env.infos, sort_keys=True, default=str),
            env.team_rewards())


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_replay_of_every_prefix_gives_the_same_state_with_float_and_ablation_entries(env_id, mode):
    """replay() itself, step by step: the transcript cut after i steps replays to the state the env was in then.

    The episodes contain float inputs (logged as {"float": x}; under "retry" their error text is in the next prompt)
    and one ablation taken mid-episode (the recorded env continues as the ablated branch)."""
    rng = np.random.default_rng(1)
    junk_pool = (3.5, 0.25, 1.0, "", "[nonsense]", None)
    kinds = set()
    for seed in range(20):  # at least two episodes, and until both kinds of entry have been replayed
        if seed >= 2 and kinds == {"float", "ablation"}:
            break
        env = make(env_id, action_mode=mode, invalid_move="retry")
        env.reset(seed=seed)
        states, ablate_at = [], int(rng.integers(0, 3))
        for i in range(5000):
            if i == ablate_at:
                try:
                    env = env.ablate(env.possible_agents[int(rng.integers(len(env.possible_agents)))])
                except ValueError:  # think_solve: the thinker cannot be ablated after the solver's answer
                    pass
            states.append(_full_state(env))
            if not env.agents:
                break
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                action = None
            elif rng.random() < 0.25:
                action = junk_pool[int(rng.integers(len(junk_pool)))]
            else:
                action = random_legal(env, agent, rng)
            env.step(action)
        transcript = json.loads(json.dumps(env.transcript()))
        actions, ablations = transcript["actions"], transcript["ablations"]
        assert len(states) == len(actions) + 1
        kinds.update("float" for a in actions if isinstance(a, dict) and "float" in a)
        kinds.update("ablation" for _ in ablations)
        for n, state in enumerate(states):
            prefix = {**transcript, "actions": actions[:n], "ablations": [x for x in ablations if x[0] <= n]}
            assert _full_state(replay(prefix)) == state, (seed, n)
    assert kinds == {"float", "ablation"}  # both kinds of entry were replayed


def test_reset_without_seed_records_a_concrete_seed_that_replays():
    env = make("kuhn_poker-v0", rounds=3)
    env.reset(seed=5)
    rng = np.random.default_rng(1)
    for _ in range(3):
        env.reset()
        while not env.done:
            env.step(random_legal(env, env.agent_selection, rng))
        t = env.transcript()
        assert isinstance(t["seed"], int)
        assert replay(t).infos["player_0"]["chips"] == env.infos["player_0"]["chips"]


def test_replay_rejects_a_wrong_version_and_garbage():
    env = make("tic_tac_toe-v0")
    env.reset(seed=0)
    t = env.transcript()
    with pytest.raises(ValueError, match="version"):
        replay({**t, "version": 99})
    with pytest.raises(ValueError, match="transcript"):
        replay({"nope": 1})
    with pytest.raises(KeyError, match="unknown env id"):
        replay({**t, "env_id": "tic_tac_to-v0"})


def _kuhn_transcript():
    env = make("kuhn_poker-v0")
    env.reset(seed=1)
    env.step("[bet]")
    env.step("[call]")
    return env, env.transcript()


@pytest.mark.parametrize("change, message", [
    (lambda t: "[" * 100_000, r"must be JSON \(RecursionError"),          # nesting past the stack
    (lambda t: "{", r"must be JSON \(JSONDecodeError"),
    (lambda t: {**t, "env_id": 3}, "env_id must be a string, got 3"),
    (lambda t: {**t, "kwargs": [1]}, r"kwargs must be a dict, got \[1\]"),
    (lambda t: {**t, "kwargs": {"bogus": 1}}, "transcript kwargs: kuhn_poker-v0 got an unknown keyword argument"),
    (lambda t: {**t, "seed": "1"}, "seed must be a non-negative int, got '1'"),
    (lambda t: {**t, "version": "0"}, "version must be a non-negative int, got '0'"),
    (lambda t: {**t, "actions": "[bet]"}, "actions must be a list"),            # not stepped character by character
    (lambda t: {**t, "actions": {"[bet]": 1}}, "actions must be a list"),        # nor key by key
    (lambda t: {**t, "ablations": None}, r"ablations must be a list of \[step, agent\] pairs, got None"),
    (lambda t: {**t, "ablations": [["0", "player_0"]]}, "ablations must be a list of"),
    (lambda t: {**t, "actions": [*t["actions"], None, None, "[check]"]}, r"actions\[4\]: the episode ended after 4"),
    (lambda t: {**t, "actions": ["[bet]", "[fold]", "[check]"]}, r"actions\[2\]: when an agent is dead"),
])
def test_replay_names_what_is_wrong_with_a_transcript(change, message):
    # replay is the public way to audit a result: a hand-edited or foreign transcript is a ValueError that names
    # the field or the step (it used to be a TypeError or RecursionError from inside, or steps made of a string's
    # characters)
    env, t = _kuhn_transcript()
    with pytest.raises(ValueError, match=message):
        replay(change(t))
    full = {**t, "actions": [*t["actions"], None, None]}                    # the two dead steps: still an episode
    assert replay(full).agents == [] and replay(json.dumps(full)).team_rewards() == env.team_rewards()
    pairs = {**t, "actions": tuple(t["actions"]), "ablations": ((2, "player_0"),), "seed": np.int64(1)}
    assert replay(pairs).ablated == frozenset({"player_0"})                # tuples and NumPy ints, as Python gives them


def test_replay_reproduces_an_ablated_branch():
    env = make("voting-v0", action_mode="discrete")
    env.reset(seed=4)
    env.step(1)
    branch = env.ablate("voter_1")
    branch.step(2)
    while not branch.done:
        branch.step(None)
    again = replay(branch.transcript())
    assert again.outcome() == branch.outcome()
    assert again.transcript() == branch.transcript()


# ---------------------------------------------------------------- ablation


def test_ablating_the_thinker_gives_the_solver_the_solo_prompt_and_no_message():
    env = make("think_solve-v0")
    env.reset(seed=0)
    env.step("The answer is probably 12.")
    solo = env.ablate("thinker")
    text = solo.observe("solver")["text"]
    assert text.startswith("You are the Solver. Solve the problem on your own.")
    assert "probably 12" not in text and "Thinker" not in text
    assert solo.observe("solver")["observation"][-3] == 0.0  # "a thinker is present"
    # the original still has the thought
    assert "probably 12" in env.observe("solver")["text"]


def test_ablating_the_thinker_before_it_moves_skips_its_turn():
    env = make("think_solve-v0", action_mode="discrete")
    env.reset(seed=0)
    solo = env.ablate("thinker")
    assert solo.agent_selection == "solver"
    solo.step(0)
    assert solo.done and solo.transcript()["ablations"] == [[0, "thinker"]]


def test_ablating_the_thinker_after_the_answer_is_a_clear_error():
    env = make("think_solve-v0", action_mode="discrete")
    env.reset(seed=0)
    env.step(0)
    env.step(0)
    with pytest.raises(ValueError, match="before the solver's turn"):
        env.ablate("thinker")


def test_ablating_the_solver_scores_as_no_answer():
    env = make("think_solve-v0", action_mode="discrete")
    env.reset(seed=0)
    env.step(1)
    out = env.ablate("solver")
    assert out.done and out.infos["solver"]["answer"] is None and out.infos["solver"]["team_reward"] == 0.0


def test_ablate_unknown_agent_raises():
    env = make("kuhn_poker-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown agent"):
        env.ablate("player_9")


def test_ablated_kuhn_player_checks_or_folds():
    env = make("kuhn_poker-v0", action_mode="discrete")
    env.reset(seed=0)
    branch = env.ablate("player_1")
    branch.step(1)  # player_0 bets; ablated player_1 must fold at once
    assert branch.done
    assert branch.infos["player_0"]["team_reward"] == 1.0
    env2 = make("kuhn_poker-v0", action_mode="discrete")
    env2.reset(seed=0)
    b2 = env2.ablate("player_1")
    b2.step(0)  # check; ablated player checks back: showdown for 1
    assert b2.done and abs(b2.infos["player_0"]["team_reward"]) == 1.0


def test_ablated_tic_tac_toe_player_marks_the_first_empty_cell():
    env = make("tic_tac_toe-v0", action_mode="discrete")
    env.reset(seed=0)
    branch = env.ablate("player_1")
    branch.step(4)
    assert branch._board[0] == "player_1" and branch.agent_selection == "player_0"


@pytest.mark.parametrize("mode", ["text", "discrete"])
@pytest.mark.parametrize("tie_break", ["random", "first", "none"])
@pytest.mark.parametrize("n_voters", [4, 9])     # 9: voters share groups, so _count reuses recounts
@pytest.mark.parametrize("scheme", ["signed", "fraction"])
def test_voting_leave_one_out_infos_equal_the_ablated_recount(mode, tie_break, n_voters, scheme):
    rng = np.random.default_rng(3)
    spoiled = 0
    for seed in range(30):
        env = make("voting-v0", action_mode=mode, tie_break=tie_break, n_voters=n_voters, reward_scheme=scheme)
        env.reset(seed=seed)
        while not env.done:  # random ballots, one in five spoiled
            env.step("[nonsense]" if rng.random() < 0.2 else random_legal(env, env.agent_selection, rng))
        spoiled += len(env.outcome()["spoiled"])
        without = env.infos["voter_0"]["team_reward_without"]
        for voter in env.possible_agents:
            branch = env.ablate(voter)
            assert branch.outcome()["team_reward"] == without[voter]
            assert branch.infos[voter]["team_reward"] == without[voter]
            assert branch.outcome()["spoiled"] == [v for v in env.outcome()["spoiled"] if v != voter]
    assert spoiled >= 5  # spoiled ballots (and their penalties) reached the checked episodes


def test_voting_ablated_voter_abstains_when_its_turn_comes():
    env = make("voting-v0", action_mode="discrete", tie_break="first")
    env.reset(seed=0)
    branch = env.ablate("voter_0")
    assert branch.agent_selection == "voter_1"
    branch.step(2)
    branch.step(3)
    assert branch.done and branch.infos["voter_1"]["vote"] == "C" and branch.infos["voter_0"]["vote"] is None
    assert branch.outcome()["aggregate"] == "C"  # tie 1-1 broken by the first ballot


def test_a_changed_transcript_changes_neither_the_env_nor_its_later_transcripts():
    """transcript() hands out new containers: a caller that edits one (to make a variant to replay, say) must not
    rewrite what the env records next, or that record would replay another game."""
    env = make("kuhn_poker-v0", rounds=2)
    env.reset(seed=4)
    env.step(1.5)              # logged as {"float": 1.5} (an invalid move under the penalty policy)
    first = env.transcript()
    expected = json.loads(json.dumps(first))
    first["kwargs"]["rounds"] = 7
    first["actions"][0]["float"] = 0.0
    first["actions"].append(3)
    first["ablations"].append([0, "player_1"])
    assert env.transcript() == expected
    assert replay(env.transcript()).transcript() == expected

    inventories = [[10, 5], [3, 8]]
    negotiation = make("simple_negotiation-v0", inventories=inventories)
    inventories[0][0] = 1      # the caller's own list, changed after make(): the env plays [10, 5]
    negotiation.reset(seed=0)
    record = negotiation.transcript()
    assert record["kwargs"]["inventories"] == [[10, 5], [3, 8]]
    record["kwargs"]["inventories"][1][1] = 0
    assert negotiation.transcript()["kwargs"]["inventories"] == [[10, 5], [3, 8]]
