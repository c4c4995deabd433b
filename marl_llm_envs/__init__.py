"""marl_llm_envs: PettingZoo environments for credit assignment in multi-agent LLM reinforcement learning.

    from marl_llm_envs import make, list_envs
    env = make("think_solve-v0")

Every env is a PettingZoo ``AECEnv`` with text observations for LLMs and numeric ones for small policies, team
rewards, roles, and ``clone()`` / ``ablate(agent)`` / ``transcript()`` + :func:`replay` for counterfactual credit.
"""

from marl_llm_envs.core import TextEnv
from marl_llm_envs.envs import (
    connect_four,
    free_riding,
    hanabi,
    kuhn_poker,
    leduc_holdem,
    orchestrator,
    simple_negotiation,
    team_umbrella,
    think_solve,
    tic_tac_toe,
    voting,
)
from marl_llm_envs.reference.board import connect_four_search, tic_tac_toe_minimax
from marl_llm_envs.reference.credit_suite import card_matcher, forecast_follower
from marl_llm_envs.reference.hanabi import rule_bot
from marl_llm_envs.reference.orchestrator import delegator, solo
from marl_llm_envs.reference.think_solve import clue_relay
from marl_llm_envs.reference.voting import clue_follower
from marl_llm_envs.registry import EnvSpec, list_envs, make, make_parallel, register, replay, spec

__version__ = "0.1.0"

# Each game registers its env class, its reference policies (by name) and, where exact scoring covers it, its
# ExactGame (marl_llm_envs.cfr).
# orchestration
register(think_solve.raw_env, references={"clue_relay": clue_relay})
register(voting.raw_env, voting.parallel_env, references={"clue_follower": clue_follower})
register(orchestrator.raw_env, references={"delegator": delegator, "solo": solo})
# zero-sum self-play games
register(kuhn_poker.raw_env, references={"kuhn_nash": kuhn_poker.kuhn_nash}, exact=kuhn_poker.EXACT)
register(leduc_holdem.raw_env, references={"leduc_cfr": leduc_holdem.leduc_cfr}, exact=leduc_holdem.EXACT)
register(tic_tac_toe.raw_env, references={"minimax": tic_tac_toe_minimax})
register(connect_four.raw_env, references={"search": connect_four_search})
register(simple_negotiation.raw_env)
# cooperative: the Hanabi presets (one class, several default parameter sets)
for _hanabi_id, _hanabi_preset in hanabi.PRESETS.items():
    register(hanabi.raw_env, env_id=_hanabi_id, references={"rule_bot": rule_bot}, **_hanabi_preset)
# cooperative: the credit suite's controlled envs (temporal credit, free riding)
register(team_umbrella.raw_env, references={"forecast_follower": forecast_follower})
register(free_riding.raw_env, references={"card_matcher": card_matcher})

__all__ = ["EnvSpec", "TextEnv", "list_envs", "make", "make_parallel", "register", "replay", "spec"]
