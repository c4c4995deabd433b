"""baselines.policies.base: the requests a policy is asked on outside a rollout."""

from __future__ import annotations

from baselines.policies.base import first_turn_requests, request_for
from marl_llm_envs import make


def test_first_turn_requests_are_the_first_movers_requests_of_seeds_zero_to_n():
    requests = first_turn_requests("kuhn_poker-v0", 6)
    env = make("kuhn_poker-v0")
    assert len(requests) == 6
    for seed, request in enumerate(requests):
        env.reset(seed=seed)
        assert request == request_for(env, env.agent_selection)
    assert len({r.text for r in requests}) > 1                      # the deal, and so the prompt, follows the seed


def test_first_turn_requests_pass_the_env_kwargs_on():
    (discrete,) = first_turn_requests("think_solve-v0", 1, action_mode="discrete", thinker_clue_accuracy=0.9)
    (text,) = first_turn_requests("think_solve-v0", 1)
    assert discrete.legal_actions == ("[none]", "[A]", "[B]", "[C]", "[D]") and text.legal_actions == ()
    assert "private clue" in discrete.text and "private clue" not in text.text
