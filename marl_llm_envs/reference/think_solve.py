"""The think_solve-v0 reference pair: a thinker that passes on its private clue, a solver that follows the hint.

:func:`clue_relay` plays either seat (the trainer's ``--partners thinker=reference`` or ``solver=reference`` picks
the first reference policy of an env for any role, so one function serves both):

* as the **thinker** it names the candidate its own private clue points to (``thinker_clue_accuracy``; discrete mode:
  read from its observation vector's clue one-hot; text mode: read from its prompt's clue line) and sends
  ``[none]`` / "No hint from me." when it has no clue (``thinker_clue_accuracy=None``);
* as the **solver** it answers what the thinker named and guesses uniformly among the candidates when there is no
  hint (:func:`marl_llm_envs.scripted.follower_solver`).

It is not privileged: the clue is the thinker's own information and the message is the solver's. With clue accuracy
``a`` and ``K`` candidates the pair scores ``a`` in discrete mode, which is the optimum (proof in the env's manual);
measured in ``spec("think_solve-v0").anchors``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from marl_llm_envs.scripted import follower_solver

__all__ = ["clue_relay"]

_CLUE = re.compile(r"Your private clue \(the Solver cannot see it\): the answer is (.{1,200}?)\. Such clues")


def clue_relay(env, agent: str, rng: np.random.Generator) -> Any:
    """Thinker: name the candidate of your own clue (no hint without one). Solver: follow the hint."""
    base = env.unwrapped
    if agent != "thinker":
        return follower_solver(env, agent, rng)
    obs = base.observe(agent)
    if base.action_mode == "discrete":
        if not base.clue_task:
            return 0  # [none]
        k = base.problem_size + (1 + base.num_candidates) + 3
        clue = obs["observation"][k:k + base.num_candidates]
        if not clue.any():
            return 0
        return base.action_names(agent).index(base.labels[int(clue.argmax())])    # with or without [none] first
    found = _CLUE.search(obs["text"])
    if found is None:
        return "No hint from me."
    return f"I think the answer is {found.group(1).strip('()')}."
