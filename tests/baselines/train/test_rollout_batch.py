"""``--rollout-batch N``: a bound on the rows an LLM plays at once (coma's K resamples of every turn made one call of
32 x 8 x 4 SmolLM2 rows, 15 GB). What is played does not depend on it, and runs that leave it at 0 keep their hash."""

from __future__ import annotations

import pytest

from baselines.credit import make_credit
from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig
from baselines.train.dist import Dist
from baselines.train.learners import build_team
from marl_llm_envs import make

KWARGS = {"thinker_clue_accuracy": 0.9, "clue_pool": "words", "hint_optional": False}


def _cfg(**kw) -> TrainConfig:
    base = dict(env="think_solve-v0", env_kwargs=KWARGS, action_mode="discrete", model="tiny", mode="choice",
                adapters="per_role", tasks_per_step=3, group_size=2, progress=False, tensorboard=False, out="")
    return TrainConfig(**{**base, **kw})


def _played(cfg: TrainConfig):
    env = make(cfg.env, **cfg.env_kwargs, action_mode=cfg.action_mode)
    team = build_team(cfg, env, sorted(set(env.roles.values())), prepare=Dist(cfg).prepare)
    engine = RolloutEngine(team.policies, show_progress=False)
    episodes = engine.run(cfg.env, 3, 2, seed=7, env_kwargs={**KWARGS, "action_mode": "discrete"},
                          branches=make_credit("coma").branches(cfg.env))
    return team, [([(t.agent, t.action, round(t.choice.probs[t.choice.index], 5)) for t in e.turns],
                   [[(t.agent, t.action) for t in b.turns] for b in e.branches]) for e in episodes]


def test_the_policies_play_at_most_n_rows_at_once_and_play_the_same_moves():
    team, whole = _played(_cfg())
    assert team.learners[0].hf_policy.batch_size is None
    team, chunked = _played(_cfg(rollout_batch=3))
    assert team.learners[0].hf_policy.batch_size == 3
    assert chunked == whole and sum(len(b) for _, b in whole) == 6 * 4 * 2      # coma: K = 4 per turn, two roles


def test_a_run_that_leaves_it_at_0_keeps_its_hash_and_a_bad_value_is_refused():
    assert _cfg().hash() == _cfg(rollout_batch=0).hash() != _cfg(rollout_batch=256).hash()
    assert TrainConfig.from_args(["--env", "think_solve-v0", "--rollout-batch", "256"]).rollout_batch == 256
    with pytest.raises(ValueError, match="--rollout-batch must be a finite number >= 0"):
        _cfg(rollout_batch=-1).check()
