"""TrainConfig (baselines/train/config.py): bad values fail before any rollout, the CLI is generated from the
dataclass, --model's spec, and a run folder's config.json with its resolved block (also as older runs wrote it).
TrainConfig is resolved once, when the team is built, into each learner's update settings
(``TrainConfig.learner_settings``): the per-model defaults of ``--lr 0``, ``--ppo-epochs 0`` and ``--entropy-coef -1``
are those the trainer used to look up late, per learner, at every update (``cfg.learning_rate(model)``,
``cfg.epochs(model)``, ``cfg.entropy(model)``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from baselines.train import TrainConfig, train
from baselines.train.config import LearnerSettings
from baselines.train.dist import Dist
from baselines.train.learners import build_team
from marl_llm_envs import make
from tests.baselines.train.helpers import _comparable, _kuhn_one_step, _metrics


@pytest.mark.parametrize("overrides,message", [
    (dict(model="thinkr=tiny,solver=tiny"), "names role 'thinkr'"),
    (dict(model="thinker=tiny"), r"no model for role\(s\) \['solver'\]"),
    (dict(env="voting-v0", credit="ccpo_v1"), "needs a 'thinker' role"),
    (dict(steps=0), "--steps must be > 0"),
    (dict(tasks_per_step=0), "--tasks-per-step must be > 0"),
    (dict(model="mlp", action_mode="text"), "an MLP policy plays discrete mode"),
    (dict(frozen="thinker,solver"), "nothing would be trained"),
    (dict(partners="judge=reference"), "names role 'judge'"),
    (dict(partners="solver=random,solver=reference"), "--partners gives role 'solver' two bots"),
    (dict(credit="grpo"), "unknown credit method 'grpo'"),
    (dict(aggregation="sum"), "--aggregation must be one of"),
    (dict(choice_scoring="max"), "--choice-scoring must be one of"),
    (dict(env_kwargs={"n_voters": 3}), "--env-kwargs: think_solve-v0 got an unknown keyword argument 'n_voters'"),
    (dict(env="textarena/KuhnPoker-v0", credit="loo"), "has no null action"),
    (dict(env="kuhn-poker-v0"), "--env: unknown env id 'kuhn-poker-v0'; did you mean kuhn_poker-v0"),
    (dict(lr=float("nan")), "--lr must be a finite number >= 0, got nan"),
    (dict(steps=2_000_000, tasks_per_step=16), "--steps x --tasks-per-step is 32,000,000 training tasks; a seed owns "
                                               "16,777,216"),
    (dict(grad_clip=float("nan")), "--grad-clip must be a finite number >= 0"),
    (dict(temperature=float("inf")), "--temperature must be a finite number >= 0, got inf"),
    (dict(entropy_coef=float("nan")), "--entropy-coef must be >= 0, or -1"),
])
def test_bad_configs_fail_before_any_rollout(tmp_path, overrides, message):
    cfg = TrainConfig(**{"env": "think_solve-v0", "model": "tiny", "out": str(tmp_path / "r"), "progress": False,
                         **overrides})
    with pytest.raises(ValueError, match=message):
        train(cfg)
    assert not (tmp_path / "r" / "metrics.jsonl").exists()


def test_the_cli_is_generated_from_the_config():
    cfg = TrainConfig.from_args(["--env", "voting-v0", "--credit-options", '{"std": "sample"}', "--no-tensorboard",
                                 "--clip-high", "0.3"])
    assert (cfg.env, cfg.credit_options, cfg.tensorboard, cfg.clip_high) == ("voting-v0", {"std": "sample"}, False, 0.3)
    help_text = TrainConfig.parser().format_help()
    assert "--micro-batch-tokens" in help_text and "DAPO" in help_text


def test_model_spec_is_one_model_for_every_role_or_one_per_role_and_errors_name_the_flag():
    from baselines.train.config import ModelSpec, parse_model

    assert parse_model(" tiny ") == ModelSpec(shared="tiny")
    spec = parse_model("thinker=smollm2-135m, solver=mlp")
    assert spec.by_role == (("thinker", "smollm2-135m"), ("solver", "mlp")) and spec.names == {"smollm2-135m", "mlp"}
    assert spec.for_roles(["solver", "thinker"], "think_solve-v0") == {"thinker": "smollm2-135m", "solver": "mlp"}
    assert parse_model("thinker=tiny").for_roles(["solver", "thinker"], "think_solve-v0", partners=["solver"]) == {
        "thinker": "tiny"}
    for bad, message in [("", "--model is empty"), ("tiny,solver=mlp", "--model part 'tiny' is not ROLE=MODEL"),
                         ("tiny,mlp", "--model 'tiny,mlp' lists several models"),
                         ("thinker=", "--model part 'thinker=' is not ROLE=MODEL"),
                         ("solver=tiny,solver=mlp", "--model names role 'solver' twice")]:
        with pytest.raises(ValueError, match=message):
            parse_model(bad)
        with pytest.raises(ValueError, match=message):
            TrainConfig(model=bad).check()


def _old_layout(run: Path) -> dict:
    """Rewrite run/config.json as the trainer wrote it before the "resolved" block: the resolved action mode and the
    config hash as top-level keys (as in the stored suite runs)."""
    raw = json.loads((run / "config.json").read_text())
    resolved = raw.pop("resolved")
    raw.update(config_hash=resolved["config_hash"], action_mode_resolved=resolved["action_mode"])
    (run / "config.json").write_text(json.dumps(raw, indent=1))
    return raw


def test_config_json_holds_the_config_fields_and_one_resolved_block(tmp_path):
    from baselines.train.config import read_run_config

    cfg = _kuhn_one_step(tmp_path / "r")
    train(cfg)
    raw = json.loads((tmp_path / "r" / "config.json").read_text())
    assert raw == {**cfg.to_dict(), "resolved": {"action_mode": "discrete", "config_hash": cfg.hash()}}
    run = read_run_config(tmp_path / "r")
    assert run.config == cfg and run.resolved.action_mode == "discrete" and run.resolved.config_hash == cfg.hash()
    (tmp_path / "r" / "config.json").write_text(json.dumps({**cfg.to_dict(), "resolved": "discrete"}))
    with pytest.raises(ValueError, match="'resolved' must be an object"):
        read_run_config(tmp_path / "r")


@pytest.mark.parametrize("change, message", [
    ({"env_kwargs": [1]}, "env_kwargs must be an object, got \\[1\\]"),
    ({"seed": "3"}, "seed must be an int, got '3'"),
    ({"lr": True}, "lr must be a number, got True"),
    ({"model": 3}, "model must be a string, got 3"),
    ({"action_mode": "bogus"}, "--action-mode must be text or discrete, got 'bogus'"),
    ({"steps": 0}, "--steps must be > 0"),
    ({"resolved": {"action_mode": 3, "config_hash": "x"}}, "resolved.action_mode must be a string, got 3"),
])
def test_a_config_json_edited_to_values_the_trainer_refuses_is_a_clear_error(tmp_path, change, message):
    # a checkpoint player and the suite read a run's config.json back: a wrong type used to reach the trainer's
    # code (a TypeError traceback from evaluate: env_kwargs [1], a string seed) or pass (action_mode 'bogus')
    from baselines.train.config import read_run_config
    from leaderboard.players import load_player

    cfg = _kuhn_one_step(tmp_path / "r")
    train(cfg)
    raw = json.loads((tmp_path / "r" / "config.json").read_text())
    (tmp_path / "r" / "config.json").write_text(json.dumps({**raw, **change}))
    with pytest.raises(ValueError, match=rf"config.json: {message}"):
        read_run_config(tmp_path / "r")
    with pytest.raises(ValueError, match=rf"checkpoint:.*config.json: {message}"):
        load_player(f"checkpoint:{tmp_path / 'r'}", "kuhn_poker-v0", ["player_0", "player_1"], "discrete")


def test_a_run_written_before_the_resolved_block_loads_resumes_and_counts_as_finished(tmp_path):
    from baselines.train.config import OUTPUT_FIELDS, read_run_config
    from leaderboard.players import load_player
    from leaderboard.suite import complete_run, score_run

    def cfg(out, steps, resume=False):
        return TrainConfig(env="kuhn_poker-v0", model="mlp", steps=steps, tasks_per_step=2, group_size=2, seed=3,
                           save_every=2, out=str(out), resume=resume, progress=False, tensorboard=False)

    run = tmp_path / "old"
    train(cfg(run, 2))
    old = _old_layout(run)
    assert read_run_config(run).resolved.config_hash == old["config_hash"] == cfg(run, 2).hash()
    player = load_player(f"checkpoint:{run}", "kuhn_poker-v0", ["player_0", "player_1"], "discrete")
    assert player.provenance["config_hash"] == old["config_hash"]
    assert player.provenance["train_config"] == {k: v for k, v in old.items() if k not in OUTPUT_FIELDS
                                                 and k not in ("config_hash", "action_mode_resolved")}
    # a finished run is scored as it is (a suite submission's run, read by the validator) and keeps its hash
    assert complete_run(run, 2)
    spec = {"out": str(run), "steps": 2, "play": "self", "last_fraction": 1.0, "method": "broadcast",
            "setting": "kuhn", "seed": 3, "env_id": "kuhn_poker-v0", "env_kwargs": {}}
    assert score_run(spec, run)["config_hash"] == old["config_hash"]
    assert json.loads((run / "config.json").read_text()) == old
    # --resume continues it exactly: the same metrics as one run of 3 steps
    train(cfg(run, 3, resume=True))
    train(cfg(tmp_path / "whole", 3))
    assert _comparable(_metrics(run / "metrics.jsonl")) == _comparable(_metrics(tmp_path / "whole" / "metrics.jsonl"))
    assert complete_run(run, 3) and read_run_config(run).resolved.config_hash == old["config_hash"]


@pytest.mark.parametrize("lora", [{"lora_r": 4}, {"lora_alpha": 32.0}, {"lora_layers": 2}])
def test_lora_settings_without_adapters_are_refused_and_a_run_made_with_them_still_loads(tmp_path, lora):
    # --lora-r without --adapters trained the full weights without a word
    from baselines.train.config import read_run_config

    with pytest.raises(ValueError, match="--lora-r, --lora-alpha and --lora-layers shape LoRA adapters, and "
                                         "--adapters is 'none'"):
        train(_kuhn_one_step(tmp_path / "new", **lora))
    assert not (tmp_path / "new").exists()
    cfg = _kuhn_one_step(tmp_path / "old")
    train(cfg)
    raw = json.loads((tmp_path / "old" / "config.json").read_text())
    (tmp_path / "old" / "config.json").write_text(json.dumps({**raw, **lora}))    # as a run made before the rule
    assert read_run_config(tmp_path / "old").config == dataclasses.replace(cfg, **lora)


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
