"""Small readers of an env's state for the envs' tests, a scripted episode played to its end, and the
shortcut-free clue task they share."""

from __future__ import annotations

import numpy as np

from marl_llm_envs import make


def final(env):
    return {a: env.infos[a]["team_reward"] for a in env.possible_agents}


def play_out(env, policy, seed: int):
    """Reset ``env`` with ``seed`` and let ``policy(env, agent, rng)`` move for whoever is to act until the episode
    is done (``rng`` seeded with ``[seed, 1]``, a stream apart from the env's); returns ``env``."""
    rng = np.random.default_rng([seed, 1])
    env.reset(seed=seed)
    while not env.done:
        env.step(policy(env, env.agent_selection, rng))
    return env


def clue_words_env(action_mode: str, **kwargs):
    """think_solve-v0's shortcut-free clue task (``clue_pool="words"``, clue accuracy 0.9) in ``action_mode``
    (``"discrete"``: the thinker picks a hint from a menu; ``"text"``: it writes one); ``kwargs`` override."""
    return make("think_solve-v0", **{"thinker_clue_accuracy": 0.9, "action_mode": action_mode, "clue_pool": "words",
                                     **kwargs})


def thinker_message(solver_text: str) -> str:
    """The thinker's message as the solver's prompt ``solver_text`` shows it: all between its heading and the
    answer instruction."""
    return solver_text.split("Message from the Thinker:\n")[1].split("\n\nAnswer with")[0]
