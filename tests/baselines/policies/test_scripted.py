"""Scripted policies (baselines/policies/scripted.py): a function of the env played through the policy protocol,
seeded and replayable, the uniformly random policy that needs no env, and a reference bot mixed with random
moves that draws from the distribution it reports."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.policies.base import Generation, request_for
from baselines.policies.scripted import RandomPolicy, ScriptedPolicy
from marl_llm_envs import make
from marl_llm_envs.scripted import random_legal
from tests.baselines.policies.helpers import _play, _requests


def test_scripted_policy_plays_kuhn_poker():
    env = make("kuhn_poker-v0")
    policy = ScriptedPolicy(random_legal, seed=0)
    assert policy.name == "scripted:random_legal"
    totals, gens = _play(env, policy, seed=3)
    assert gens and all(isinstance(g, Generation) and g.action.startswith("[") for g in gens)
    assert all(g.completion_ids == [] and g.logprobs == [] for g in gens)
    assert abs(sum(totals.values())) < 1e-9 and any(totals.values())
    # the same seeds replay the same game
    totals2, gens2 = _play(make("kuhn_poker-v0"), ScriptedPolicy(random_legal, seed=0), seed=3)
    assert totals2 == totals and [g.action for g in gens2] == [g.action for g in gens]


def test_scripted_policy_needs_env_and_random_policy_does_not():
    with pytest.raises(ValueError, match="request.env"):
        ScriptedPolicy(random_legal).generate(_requests(["x"], legal=("[a]",)))
    pol = RandomPolicy(seed=1)
    outs = pol.generate(_requests(["x"] * 50, legal=("[check]", "[bet]")), seed=5)
    assert {g.action for g in outs} == {"[check]", "[bet]"}
    assert [g.action for g in outs] == [g.action for g in pol.generate(_requests(["x"] * 50, ("[check]", "[bet]")),
                                                                        seed=5)]
    assert pol.generate(_requests(["free"]))[0].action == pol.free_text


def test_mixed_reference_policy_draws_from_the_distribution_it_reports():
    """The reference bot (free riding's card matcher, deterministic) with epsilon = 0.2: its move with probability
    0.8 + 0.2/3, each other 0.2/3; the draws follow exactly that, and the true advantage can be computed at it."""
    from baselines.policies.scripted import MixedPolicy
    from marl_llm_envs.reference import reference_policies

    bot = reference_policies("free_riding-v0")["card_matcher"]
    policy = MixedPolicy(bot, 0.2)
    env = make("free_riding-v0", idle_seats=1, action_mode="discrete")
    env.reset(seed=4)
    request = request_for(env, "decider", policy.observes)
    probs = policy.probs(env, "decider", request.legal_actions)
    card = int(np.argmax(env.observe("decider", text=False)["observation"][:3]))
    assert np.allclose(probs, [0.8 + 0.2 / 3 if j == card else 0.2 / 3 for j in range(3)])
    draws = [policy.generate([request_for(env, "decider", policy.observes, key=(k,))], seed=1)[0].choice.index
             for k in range(600)]
    assert abs(np.mean(np.asarray(draws) == card) - probs[card]) < 0.05
    with pytest.raises(ValueError, match="epsilon must be in"):
        MixedPolicy(bot, 1.5)
