"""The rollout layer: play episodes of the envs with policies, in batches, with counterfactual branches.

- :mod:`baselines.rollout.engine`: :class:`RolloutEngine` (the batched loop, env reuse), :func:`training_seeds`;
- :mod:`baselines.rollout.branches`: :class:`BranchSpec` and how branches are played (their replay of the main
  episode, following it, shadowing a sibling); :mod:`baselines.rollout.job`: what every played env keeps (a main
  episode's job, and the record its branches replay);
- :mod:`baselines.rollout.summary`: what a batch of episodes amounts to (:func:`episode_stats`, :func:`summarize`),
  shared with the trainer's metrics;
- :mod:`baselines.rollout.cli`: ``python -m baselines.rollout`` (:func:`main`), and :mod:`baselines.rollout.backends`:
  the model policies it builds (imported only when a model is asked for: torch).

What the engine records (``Turn``, ``Branch``, ``Episode``, JSONL) is in :mod:`baselines.episode`.
"""

from baselines.rollout.cli import _build_policy, build_parser, main  # noqa: F401 (_build_policy: the CLI's tests)
from baselines.rollout.engine import BranchSpec, RolloutEngine, env_action, training_seeds
from baselines.rollout.summary import EpisodeStats, episode_stats, summarize

__all__ = ["BranchSpec", "EpisodeStats", "RolloutEngine", "build_parser", "env_action", "episode_stats", "main",
           "summarize", "training_seeds"]
