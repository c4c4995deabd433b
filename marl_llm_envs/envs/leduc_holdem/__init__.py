# Leduc hold'em, one home: the env (env.py, whose docstring is the manual and this package's docstring; its rules as
# pure functions) and its reference solvers (reference.py: the CFR tree on those rules, the cached CFR+ strategy and
# the ``leduc_cfr`` bot, the exact-scoring map; data/leduc_cfr.json).
from marl_llm_envs.envs.leduc_holdem import env
from marl_llm_envs.envs.leduc_holdem.env import (
    ACTIONS,
    CALL,
    CARDS,
    DEALS,
    FOLD,
    RAISE,
    RULES,
    contributions,
    facing_bet,
    legal_moves,
    move_name,
    rank,
    raw_env,
    round_over,
    showdown,
)
from marl_llm_envs.envs.leduc_holdem.reference import (
    EXACT,
    LeducGame,
    infoset_key,
    leduc_cfr,
    leduc_cfr_probs,
    load_strategy,
)

__doc__ = env.__doc__

__all__ = ["ACTIONS", "CALL", "CARDS", "DEALS", "EXACT", "FOLD", "RAISE", "RULES", "LeducGame", "contributions", "env",
           "facing_bet", "infoset_key", "leduc_cfr", "leduc_cfr_probs", "legal_moves", "load_strategy", "move_name",
           "rank", "raw_env", "round_over", "showdown"]
