"""TrainConfig is resolved once, when the team is built, into each learner's update settings
(``TrainConfig.learner_settings``): the per-model defaults of ``--lr 0``, ``--ppo-epochs 0`` and ``--entropy-coef -1``
are those the trainer used to look up late, per learner, at every update (``cfg.learning_rate(model)``,
``cfg.epochs(model)``, ``cfg.entropy(model)``)."""

from __future__ import annotations

import dataclasses

import pytest

from baselines.train import TrainConfig, train
from baselines.train.config import LearnerSettings
from baselines.train.dist import Dist
from baselines.train.learners import build_team
from marl_llm_envs import make


# (TrainConfig overrides, model name) -> (lr, epochs, entropy_coef), as the old late calls resolved them
OLD_DEFAULTS = [
    ({}, "mlp", (3e-3, 1, 0.0)),
    ({}, "tiny", (3e-4, 4, 0.05)),
    ({}, "smollm2-135m", (1e-5, 1, 0.0)),
    ({"adapters": "per_role"}, "tiny", (1e-4, 4, 0.05)),
    ({"adapters": "shared"}, "smollm2-135m", (1e-4, 1, 0.0)),
    ({"adapters": "shared"}, "mlp", (3e-3, 1, 0.0)),          # an MLP's rate whatever --adapters says
    ({"lr": 0.02, "ppo_epochs": 3, "entropy_coef": 0.0}, "tiny", (0.02, 3, 0.0)),    # given flags win
    ({"lr": 0.02, "ppo_epochs": 2, "entropy_coef": 0.1}, "mlp", (0.02, 2, 0.1)),
]


@pytest.mark.parametrize("overrides,model,expected", OLD_DEFAULTS)
def test_learner_settings_fill_in_the_per_model_defaults(overrides, model, expected):
    s = TrainConfig(**overrides).learner_settings(model)
    assert (s.lr, s.epochs, s.entropy_coef) == pytest.approx(expected)


def test_learner_settings_carry_the_update_flags_as_given():
    cfg = TrainConfig(clip_low=0.1, clip_high=0.3, kl_coef=0.05, grad_clip=0.5, aggregation="seq-mean",
                      micro_batch_tokens=512, weight_decay=0.01, tis_cap=3.0, dtype="bfloat16", device="cpu")
    s = cfg.learner_settings("tiny")
    assert (s.clip_low, s.clip_high, s.kl_coef, s.grad_clip, s.aggregation, s.micro_batch_tokens, s.weight_decay,
            s.tis_cap, s.dtype, s.device) == (0.1, 0.3, 0.05, 0.5, "seq-mean", 512, 0.01, 3.0, "bfloat16", "cpu")
    # TIS weights apply only to an outside sampler (--backend vllm) with a cap; the statistics are logged either way
    assert not s.apply_tis
    assert TrainConfig(backend="vllm").learner_settings("tiny").apply_tis
    assert not TrainConfig(backend="vllm", tis_cap=0.0).learner_settings("tiny").apply_tis


def test_each_learner_gets_its_own_models_settings_when_the_team_is_built():
    cfg = TrainConfig(env="kuhn_poker-v0", model="player_0=mlp,player_1=tiny", mode="choice")
    env = make("kuhn_poker-v0", action_mode="discrete")
    team = build_team(cfg, env, ["player_0", "player_1"], prepare=Dist(cfg).prepare)
    by_model = {lr.model_name: lr for lr in team.learners}
    assert by_model["mlp"].settings == cfg.learner_settings("mlp")
    assert by_model["tiny"].settings == cfg.learner_settings("tiny")
    assert by_model["mlp"].settings.epochs == 1 and by_model["tiny"].settings.epochs == 4
    # the optimizer runs at the resolved rate
    assert [g["lr"] for lr in team.learners for g in lr.optimizer.param_groups] == [
        lr.settings.lr for lr in team.learners]
    # a team that only plays (the leaderboard's checkpoint player) resolves nothing
    assert all(lr.settings is None for lr in build_team(cfg, env, ["player_0", "player_1"]).learners)


def test_a_run_resolves_its_config_once_per_learner_before_step_zero(tmp_path, monkeypatch):
    calls: list[str] = []
    resolve = TrainConfig.learner_settings

    def counted(self, model_name: str) -> LearnerSettings:
        calls.append(model_name)
        return resolve(self, model_name)

    monkeypatch.setattr(TrainConfig, "learner_settings", counted)
    cfg = TrainConfig(env="kuhn_poker-v0", model="player_0=mlp,player_1=mlp", action_mode="discrete", steps=3,
                      tasks_per_step=2, group_size=2, out=str(tmp_path / "run"), progress=False, tensorboard=False)
    train(cfg)
    assert calls == ["mlp", "mlp"]       # two learners, three steps: once each, never again in the loop


def test_learner_settings_are_frozen():
    s = TrainConfig().learner_settings("tiny")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epochs = 1


def test_the_credit_method_gets_the_training_seed_unless_its_options_give_one():
    assert TrainConfig(credit="shuffled", seed=7).credit_kwargs() == {"seed": 7}
    assert TrainConfig(credit="shuffled", seed=7, credit_options={"seed": 3}).credit_kwargs() == {"seed": 3}
    assert TrainConfig(credit="broadcast", seed=7).credit_kwargs() == {}      # no seed option: none added
