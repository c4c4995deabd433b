"""The voting-v0 reference voter: follow your own private clue.

:func:`clue_follower` votes for the label its private clue points to (read from its own observation vector, where
voting-v0 puts the clue one-hot; see the env's manual). It is not privileged: the clue is that voter's own
information. Without a clue (``clue_accuracy=None``) it votes for a uniformly random label; in text mode, where there
are no labelled candidates, it answers like :func:`marl_llm_envs.scripted.random_legal` (a random ``\\boxed`` number).
With the default clues (right 70% of the time, independently per voter; a wrong clue names one of the 3 wrong
labels at random, so wrong clues rarely agree) three clue followers elect the true answer 82.7% of the time
(``spec("voting-v0").anchors``, 10,000 games).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marl_llm_envs.scripted import random_legal

__all__ = ["clue_follower"]


def clue_follower(env, agent: str, rng: np.random.Generator) -> Any:
    """Vote for the label of your own clue (discrete mode); a random label without one; random text in text mode."""
    base = env.unwrapped
    if base.action_mode != "discrete":
        return random_legal(env, agent, rng)
    k = base.problem_size
    clue = base.observe(agent)["observation"][k:k + base.num_candidates]
    if clue.any():
        return int(clue.argmax())
    return int(rng.integers(base.num_candidates))
