"""The trainer: rollout -> credit -> clipped policy-gradient update, for LLM teams and small MLP policies.

    python -m baselines.train --env think_solve-v0 --credit ccpo_v2 --model tiny --steps 20 --out runs/x
    python -m baselines.train --env voting-v0 --action-mode discrete --credit loo --model mlp --steps 200 --out runs/v

:class:`~baselines.train.config.TrainConfig` holds every hyperparameter (``python -m baselines.train --help``);
:func:`~baselines.train.loop.train` runs it. Read :mod:`baselines.train.loop` first (train, prepare, step), then
:mod:`baselines.train.update` (PPO epochs and the loss call), :mod:`baselines.train.loss` (the loss),
:mod:`baselines.train.learners` (which weights are trained), :mod:`baselines.train.logging` (metrics, TensorBoard,
W&B), :mod:`baselines.train.checkpoint` (atomic checkpoints, exact resume) and :mod:`baselines.train.dist` (data
parallel).
"""

from baselines.train.config import TrainConfig
from baselines.train.loop import train

__all__ = ["TrainConfig", "train"]
