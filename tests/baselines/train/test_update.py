"""The update (baselines.train.update): every learner is updated with its own resolved settings, a learner whose
roles are not trained this step is left alone, zero advantages are skipped without changing the aggregation, and a
team that was never set up for training is refused with a clear error."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig
from baselines.train.dist import Dist
from baselines.train.learners import build_team
from baselines.train.update import trained_samples, update
from marl_llm_envs import make

ROLES = ["player_0", "player_1"]


def _team_and_samples(cfg: TrainConfig, adv: dict[str, float], prepare: bool = True):
    env = make("kuhn_poker-v0", action_mode="discrete")
    team = build_team(cfg, env, ROLES, prepare=Dist(cfg).prepare if prepare else None)
    episodes = RolloutEngine(team.policies, show_progress=False).run("kuhn_poker-v0", 3, 2, seed=5,
                                                                      env_kwargs={"action_mode": "discrete"})
    samples = trained_samples(episodes, [[adv[t.role] for t in e.turns] for e in episodes], set(ROLES))
    total = {lr.name: [s.n for s in samples if s.role in lr.trainable] for lr in team.learners}
    return team, samples, total


def _count_steps(learner) -> list[int]:
    count = [0]
    step = learner.optimizer.step

    def counted(*args, **kwargs):
        count[0] += 1
        return step(*args, **kwargs)

    learner.optimizer.step = counted
    return count


def test_each_learner_runs_its_own_number_of_epochs():
    cfg = TrainConfig(env="kuhn_poker-v0", model="player_0=mlp,player_1=mlp", action_mode="discrete")
    team, samples, total = _team_and_samples(cfg, {"player_0": 1.0, "player_1": -1.0})
    first, second = team.learners
    first.settings = dataclasses.replace(first.settings, epochs=3)
    counts = [_count_steps(first), _count_steps(second)]
    update(team, Dist(cfg), samples, total, set(ROLES))
    assert [c[0] for c in counts] == [3, 1]


def test_a_learner_whose_roles_rest_this_step_is_left_alone():
    cfg = TrainConfig(env="kuhn_poker-v0", model="player_0=mlp,player_1=mlp", action_mode="discrete")
    team, samples, total = _team_and_samples(cfg, {"player_0": 1.0, "player_1": 1.0})
    first, second = team.learners
    before = [p.detach().clone() for p in second.module.parameters()]
    counts = [_count_steps(first), _count_steps(second)]
    stats = update(team, Dist(cfg), samples, total, {"player_0"})
    assert [c[0] for c in counts] == [1, 0]
    assert all(torch.equal(a, b) for a, b in zip(before, second.module.parameters()))
    assert stats["trained_tokens"] == sum(s.n for s in samples if s.role == "player_0")


def test_zero_advantages_are_skipped_but_still_weigh_in_the_token_mean():
    cfg = TrainConfig(env="kuhn_poker-v0", model="mlp", action_mode="discrete", entropy_coef=0.0)
    team, samples, total = _team_and_samples(cfg, {"player_0": 1.0, "player_1": 0.0})
    (learner,) = team.learners
    stats = update(team, Dist(cfg), samples, total, set(ROLES))
    trained = [s for s in samples if s.role == "player_0"]
    assert trained and len(trained) < len(samples)
    assert stats["trained_tokens"] == sum(s.n for s in trained)           # the zero ones ran no forward pass
    n_all = sum(total[learner.name])
    assert all(s.weight == pytest.approx(1.0 / n_all) for s in trained)    # ... yet count in the token-mean


def test_a_team_built_only_to_play_is_refused_by_the_update():
    cfg = TrainConfig(env="kuhn_poker-v0", model="mlp", action_mode="discrete")
    team, samples, total = _team_and_samples(cfg, {"player_0": 1.0, "player_1": 1.0}, prepare=False)
    with pytest.raises(ValueError, match="no update settings: build the team with build_team"):
        update(team, Dist(cfg), samples, total, set(ROLES))
