"""The credit suite's envs and kwargs together (issue 16): PettingZoo's API and seed tests, replay, clones and
ablations for every new kwarg setting in both action modes, the measured anchors against the optimum and random
values the manuals prove, and their registration. Each env's own rules: test_think_solve.py (the clue task),
test_voting.py (the fraction scheme), test_team_umbrella.py and test_free_riding.py."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from marl_llm_envs import make, replay
from marl_llm_envs.scripted import random_legal
from tests.conftest import record_episode

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
