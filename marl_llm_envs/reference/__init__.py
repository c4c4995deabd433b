"""Reference policies: the normalization anchors and the evaluation opponents/partners.

Each is a function ``policy(env, agent, rng) -> action`` (the same signature as :mod:`marl_llm_envs.scripted`),
returning an action in the env's action mode. A reference policy uses only what ``agent`` may know (its own
observation and the public history), never hidden state, unless its docstring says it is privileged.
"""

import importlib
from typing import Any, Callable

# env id prefix -> (name, "module:function") of its reference policies; imported on first use
_REFERENCES: dict[str, list[tuple[str, str]]] = {
    "kuhn_poker": [("kuhn_nash", "marl_llm_envs.reference.kuhn:kuhn_nash")],
    "leduc_holdem": [("leduc_cfr", "marl_llm_envs.reference.leduc:leduc_cfr")],
    "tic_tac_toe": [("minimax", "marl_llm_envs.reference.board:tic_tac_toe_minimax")],
    "connect_four": [("search", "marl_llm_envs.reference.board:connect_four_search")],
    "mini_hanabi": [("rule_bot", "marl_llm_envs.reference.hanabi:rule_bot")],
    "simple_hanabi": [("rule_bot", "marl_llm_envs.reference.hanabi:rule_bot")],
    "hanabi_small": [("rule_bot", "marl_llm_envs.reference.hanabi:rule_bot")],
    "hanabi": [("rule_bot", "marl_llm_envs.reference.hanabi:rule_bot")],
    "orchestrator": [("delegator", "marl_llm_envs.reference.orchestrator:delegator"),
                     ("solo", "marl_llm_envs.reference.orchestrator:solo")],
    "voting": [("clue_follower", "marl_llm_envs.reference.voting:clue_follower")],
    "think_solve": [("clue_relay", "marl_llm_envs.reference.think_solve:clue_relay")],
    "team_umbrella": [("forecast_follower", "marl_llm_envs.reference.credit_suite:forecast_follower")],
    "free_riding": [("card_matcher", "marl_llm_envs.reference.credit_suite:card_matcher")],
}


def reference_policies(env_id: str) -> dict[str, Callable[[Any, str, Any], Any]]:
    """The reference policies of an env id, by name (``{}`` when it has none), e.g.
    ``reference_policies("kuhn_poker-v0") == {"kuhn_nash": kuhn_nash}``."""
    base = env_id.split("-v")[0]
    out = {}
    for name, target in _REFERENCES.get(base, []):
        module, function = target.split(":")
        out[name] = getattr(importlib.import_module(module), function)
    return out
