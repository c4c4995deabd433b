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
from marl_llm_envs.registry import EnvSpec, list_envs, make, make_parallel, register, replay, spec

__version__ = "0.1.0"

# orchestration
register(think_solve.raw_env)
register(voting.raw_env, voting.parallel_env)
register(orchestrator.raw_env)
# zero-sum self-play games
register(kuhn_poker.raw_env)
register(leduc_holdem.raw_env)
register(tic_tac_toe.raw_env)
register(connect_four.raw_env)
register(simple_negotiation.raw_env)
# cooperative: the Hanabi presets (one class, several default parameter sets)
for _hanabi_id, _hanabi_preset in hanabi.PRESETS.items():
    register(hanabi.raw_env, env_id=_hanabi_id, **_hanabi_preset)
# cooperative: the credit suite's controlled envs (temporal credit, free riding)
register(team_umbrella.raw_env)
register(free_riding.raw_env)

__all__ = ["EnvSpec", "TextEnv", "list_envs", "make", "make_parallel", "register", "replay", "spec"]
