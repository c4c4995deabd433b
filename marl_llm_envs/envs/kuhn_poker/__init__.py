# Kuhn poker, one home: the env (env.py, whose docstring is the manual and this package's docstring) and its
# reference solvers (reference.py: the equilibrium family, the ``kuhn_nash`` bot, the CFR tree, the exact-scoring map).
from marl_llm_envs.envs.kuhn_poker import env
from marl_llm_envs.envs.kuhn_poker.env import ACTIONS, BET, CALL, CARDS, CHECK, DEALS, FOLD, RULES, raw_env
from marl_llm_envs.envs.kuhn_poker.reference import EXACT, KuhnGame, kuhn_infoset, kuhn_nash, kuhn_nash_strategy

__doc__ = env.__doc__

__all__ = ["ACTIONS", "BET", "CALL", "CARDS", "CHECK", "DEALS", "EXACT", "FOLD", "RULES", "KuhnGame", "env",
           "kuhn_infoset", "kuhn_nash", "kuhn_nash_strategy", "raw_env"]
