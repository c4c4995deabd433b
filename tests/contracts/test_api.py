"""PettingZoo conformance and the registry."""

from __future__ import annotations

import re
import sys

import pettingzoo
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test

from tests.conftest import ENV_IDS, ENV_MODES, MODES
from marl_llm_envs import list_envs, make, make_parallel, spec


pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
@pytest.mark.parametrize("invalid_move", ["penalty", "retry"])
def test_pettingzoo_api_test(env_id, mode, invalid_move):
    api_test(make(env_id, action_mode=mode, invalid_move=invalid_move), num_cycles=200)


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_pettingzoo_seed_test(env_id, mode):
    seed_test(lambda: make(env_id, action_mode=mode), num_cycles=200)


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_pettingzoo_render_test(env_id, mode):
    render_test(lambda render_mode=None: make(env_id, action_mode=mode, render_mode=render_mode))


@pytest.mark.parametrize("mode", MODES)
def test_voting_parallel_api_and_seed_tests(mode):
    parallel_api_test(make_parallel("voting-v0", action_mode=mode), num_cycles=100)
    parallel_seed_test(lambda: make_parallel("voting-v0", action_mode=mode))


def test_render_ansi_returns_a_string():
    for env_id in ENV_IDS:
        env = make(env_id, render_mode="ansi")
        env.reset(seed=0)
        assert isinstance(env.render(), str) and env.render()


def test_list_envs_includes_the_core_games_and_filters_by_family():
    assert {"think_solve-v0", "voting-v0", "kuhn_poker-v0", "tic_tac_toe-v0"} <= set(list_envs())
    assert set(list_envs("zero_sum")) >= {"kuhn_poker-v0", "tic_tac_toe-v0"}
    assert set(list_envs("orchestration")) >= {"think_solve-v0", "voting-v0"}
    with pytest.raises(ValueError, match="family"):
        list_envs("cooperativ")


def test_unknown_env_id_names_the_close_match():
    with pytest.raises(KeyError, match="think_solve-v0"):
        make("think_solv-v0")


def test_unknown_kwarg_names_the_close_match_and_the_accepted_ones():
    with pytest.raises(TypeError, match="did you mean max_thought_chars"):
        make("think_solve-v0", max_thought_char=10)
    with pytest.raises(TypeError, match="Accepted: .*rounds"):
        make("kuhn_poker-v0", bogus=1)


@pytest.mark.parametrize("bad", [{"action_mode": "txt"}, {"invalid_move": "crash"}, {"max_retries": -1},
                                 {"invalid_penalty": "x"}, {"render_mode": "rgb_array"}])
def test_bad_common_kwarg_values_raise_clear_errors(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        make("kuhn_poker-v0", **bad)


# (env id, the kwarg that sizes the game, its documented largest value): one more is refused with the reason, at once,
# where it used to exhaust memory (a NumPy array of 10^18 entries) or never finish building the env
SIZE_BOUNDS = [("voting-v0", "n_voters", 1024), ("free_riding-v0", "idle_seats", 1024),
               ("team_umbrella-v0", "delay", 10_000), ("mini_hanabi-v1", "max_information_tokens", 1000),
               ("mini_hanabi-v1", "max_life_tokens", 1000)]


@pytest.mark.parametrize("env_id, name, most", SIZE_BOUNDS)
def test_a_size_kwarg_past_its_bound_is_refused_with_the_reason_and_the_bound_plays(env_id, name, most):
    import numpy as np

    from marl_llm_envs.scripted import random_legal

    for too_many in (most + 1, 10**18):
        with pytest.raises(ValueError, match=rf"{name} must be in \d+\.\.{most} \(.+\), got {too_many}"):
            make(env_id, **{name: too_many})
    manual = sys.modules[type(make(env_id).unwrapped).__module__].__doc__      # the Kwargs row states the range
    assert re.search(rf"``{name}[^`]*`` \(\d+\.\.{most}\)", manual), name
    env = make(env_id, action_mode="discrete", **{name: np.int64(most)})     # the bound itself builds and plays
    env.reset(seed=0)
    assert type(getattr(env.unwrapped, name)) is int and env.transcript()["kwargs"][name] == most
    rng = np.random.default_rng(0)
    for _ in range(50):
        if env.done:
            break
        agent = env.agent_selection
        env.step(None if env.terminations[agent] or env.truncations[agent] else random_legal(env, agent, rng))


def test_random_invalid_policy_is_rejected_where_moves_are_free_text():
    with pytest.raises(ValueError, match="finite set of legal moves"):
        make("think_solve-v0", action_mode="text", invalid_move="random")
    make("think_solve-v0", action_mode="discrete", invalid_move="random")


def test_every_id_is_registered_with_pettingzoo_under_marl_llm_namespace():
    for env_id in ENV_IDS:
        env = pettingzoo.make("aec", f"marl_llm/{env_id}")
        assert isinstance(env, pettingzoo.AECEnv)
        env.reset(seed=0)
    par = pettingzoo.make("parallel", "marl_llm/voting-v0")
    assert isinstance(par, pettingzoo.ParallelEnv)


def test_specs_carry_family_agents_roles_teams_reward_range_and_modes():
    s = spec("think_solve-v0")
    assert s.family == "orchestration" and s.agents == ("thinker", "solver")
    assert s.roles == {"thinker": "thinker", "solver": "solver"} and set(s.teams.values()) == {"team"}
    assert s.reward_range == (-1.0, 1.0) and s.action_modes == ("text", "discrete")
    k = spec("kuhn_poker-v0")
    assert k.family == "zero_sum" and k.teams == {"player_0": "player_0", "player_1": "player_1"}
    assert k.reward_range == (-2.0, 2.0)
    assert spec("voting-v0").has_parallel and not spec("tic_tac_toe-v0").has_parallel
    with pytest.raises(ValueError, match="no parallel env"):
        make_parallel("kuhn_poker-v0")


def test_reset_rejects_a_non_integer_seed():
    env = make("kuhn_poker-v0")
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed="abc")


def test_specs_carry_the_measured_anchors():
    hanabi = spec("mini_hanabi-v1").anchors
    assert hanabi["rule_bot"]["mean"] > hanabi["random"]["mean"] > 0 and hanabi["random"]["games"] >= 10_000
    assert "player_0 payoff, kuhn_nash vs kuhn_nash" in spec("kuhn_poker-v0").anchors


@pytest.mark.parametrize("mode", MODES)
def test_every_game_reference_policy_plays_only_legal_moves(mode):
    import numpy as np

    from marl_llm_envs.reference import reference_policies

    covered = set()
    for env_id in ENV_IDS:
        for name, bot in reference_policies(env_id).items():
            env = make(env_id, action_mode=mode)
            env.reset(seed=3)
            rng = np.random.default_rng(0)
            while not env.done:
                agent = env.agent_selection
                env.step(bot(env, agent, rng))
                assert env.infos.get(agent, {}).get("invalid_count", 0) == 0, (env_id, name)
            covered.add(env_id)
    assert {"kuhn_poker-v0", "leduc_holdem-v0", "tic_tac_toe-v0", "connect_four-v0", "hanabi-v1"} <= covered


@pytest.mark.parametrize("query, suggested", [
    ("kuhn-poker-v0", "kuhn_poker-v0"), ("tictactoe-v0", "tic_tac_toe-v0"), ("leduc-v0", "leduc_holdem-v0"),
    ("voting", "voting-v0"), ("hanabi-v0", "hanabi-v1, mini_hanabi-v1, hanabi_small-v1"), ("nope-v0", None),
])
def test_an_unknown_env_id_suggests_the_ids_whose_names_are_close(query, suggested):
    """Names are compared without the -vN suffix every id has: with it, 'nope-v0' was 'close' to three unrelated
    ids."""
    with pytest.raises(KeyError) as error:
        make(query)
    message = error.value.args[0]
    assert message.startswith(f"unknown env id {query!r}")
    assert (f"; did you mean {suggested}?" in message) if suggested else "did you mean" not in message


@pytest.mark.parametrize("env_id,mode", ENV_MODES)
def test_an_unknown_agent_is_a_key_error_that_names_the_possible_agents(env_id, mode):
    """PettingZoo's tables raise KeyError for an agent they do not have; here every per-agent call does, with the
    agents it has. Before, observe('nobody') returned an observation in three envs, and action_mask and
    legal_actions answered in most (all zeros, [])."""
    env = make(env_id, action_mode=mode)
    env.reset(seed=0)
    for call in ("observe", "observe_text", "action_mask", "legal_actions", "observation_space", "action_space"):
        with pytest.raises(KeyError, match=r"unknown agent 'nobody'; possible agents: \[") as error:
            getattr(env, call)("nobody")
        assert repr(env.possible_agents[0]) in str(error.value), call
    env.observe(env.possible_agents[0])          # the known ones still answer


@pytest.mark.parametrize("actions, message", [
    ({"voter_0": 0}, r"missing \['voter_1', 'voter_2'\], not agents of this env \[\]"),
    ({"voter_0": 0, "voter_1": 0, "voter_2": 0, "voter_9": 1}, r"missing \[\], not agents of this env \['voter_9'\]"),
])
def test_voting_parallel_step_names_missing_and_unknown_agents(actions, message):
    env = make_parallel("voting-v0", n_voters=3, action_mode="discrete")
    env.reset(seed=0)
    with pytest.raises(KeyError, match=message):
        env.step(actions)
    _, rewards, terms, _, _ = env.step({a: 0 for a in env.agents})      # nothing was played by the refused calls
    assert all(terms.values()) and len(rewards) == 3
