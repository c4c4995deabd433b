"""``--partners ROLE=BOT:N``, the curriculum (issue 43 item 3): the bot plays ROLE in steps 0..N-1, then ROLE's own
model plays it and is trained; the switch follows from the step, so a run resumed across it equals an uninterrupted
one."""

from __future__ import annotations

import re

import pytest

from baselines.train import TrainConfig, train
from baselines.train.learners import build_team
from marl_llm_envs import make
from tests.baselines.train.helpers import _comparable, _metrics

CLUE = {"thinker_clue_accuracy": 0.9, "clue_pool": "words"}


def _same(rows: list[dict]) -> list[dict]:
    """The metrics two runs of the same config share: all but the times (the evaluation's too)."""
    return [{k: v for k, v in r.items() if not k.endswith("/time")} for r in _comparable(rows)]


def _cfg(tmp_path, name="run", **kw) -> TrainConfig:
    base = dict(env="think_solve-v0", env_kwargs=CLUE, action_mode="discrete", model="tiny", mode="choice",
                adapters="per_role", partners="thinker=reference:2", steps=4, tasks_per_step=2,
                group_size=2, seed=3, out=str(tmp_path / name), progress=False, tensorboard=False)
    return TrainConfig(**{**base, **kw})


@pytest.mark.parametrize("partners", ["thinker=reference:0", "thinker=reference:-1", "thinker=reference:x",
                                      "thinker=reference:", "thinker=reference:1.5", "thinker=reference:١",
                                      "thinker=reference:" + "9" * 5000])
def test_a_switch_step_that_is_not_a_whole_number_from_1_is_refused(tmp_path, partners):
    with pytest.raises(ValueError, match=re.escape("N in ROLE=BOT:N is the step at which ROLE's own model takes "
                                                   "over, a whole number >= 1")):
        _cfg(tmp_path, partners=partners).partner_steps(["solver", "thinker"])


def test_oracle_with_a_curriculum_is_refused_before_the_run(tmp_path):
    with pytest.raises(ValueError, match=re.escape("--credit oracle scores its counterfactuals")):
        _cfg(tmp_path, credit="oracle").check()


@pytest.mark.parametrize("change, message", [
    # the bots would play every trained role at step 0: nothing trained then
    (dict(partners="thinker=reference:2,solver=reference"), r"at step 0 the bots play every trained role"),
    (dict(partners="thinker=reference:2,solver=reference:3"), r"at step 0 the bots play every trained role"),
    (dict(frozen="solver"), r"at step 0 the bots play every trained role"),
    # the thinker has no model to hand its role to at step 2
    (dict(model="solver=tiny"), r"--model gives no model for role\(s\) \['thinker'\].*ROLE=BOT:N"),
    (dict(partners="thinker=reference:2,thinker=reference:3"), r"two switch steps"),
])
def test_a_team_the_curriculum_cannot_switch_is_refused(tmp_path, change, message):
    cfg = _cfg(tmp_path, **change)
    cfg.check()
    env = make("think_solve-v0", **CLUE, action_mode="discrete")
    with pytest.raises(ValueError, match=message):
        build_team(cfg, env, sorted(set(env.roles.values())))


def test_without_a_switch_step_the_bot_plays_all_run(tmp_path):
    env = make("think_solve-v0", **CLUE, action_mode="discrete")
    team = build_team(_cfg(tmp_path, partners="thinker=reference", model="solver=tiny"), env, ["solver", "thinker"])
    assert team.trainable == ["solver"] and not team.scripted
    assert team.playing(10**6)["thinker"].name.startswith("reference:")


def test_the_bot_plays_and_only_the_solver_learns_until_step_n_then_the_thinkers_model(tmp_path):
    cfg = _cfg(tmp_path, eval_every=1, eval_episodes=4)
    env = make("think_solve-v0", **CLUE, action_mode="discrete")
    team = build_team(cfg, env, ["solver", "thinker"])
    assert team.trainable == ["solver", "thinker"]
    assert team.playing(1)["thinker"].name.startswith("reference:")
    assert team.playing(2)["thinker"] is team.policies["thinker"] and "reference" not in team.policies["thinker"].name
    assert team.trainable_at(1) == ["solver"] and team.trainable_at(2) == ["solver", "thinker"]

    train(cfg)
    rows = _metrics(tmp_path / "run" / "metrics.jsonl")
    assert [r["partners_playing"] for r in rows] == ["thinker", "thinker", "", ""]
    assert [r["roles_trained"] for r in rows] == ["solver", "solver", "solver,thinker", "solver,thinker"]
    # the bot's turns carry no choice distribution: the thinker's entropy is logged from the switch on
    assert ["policy_entropy/thinker" in r for r in rows] == [False, False, True, True]
    # the thinker's adapter is not updated while the bot plays (its exact held-out P(pass) is that of the untrained
    # adapter), and is from the switch on; the solver's moves from step 0
    p_pass = [rows[0]["eval_start/p_pass"]] + [r["eval/p_pass"] for r in rows]
    assert p_pass[0] == p_pass[1] == p_pass[2] and p_pass[4] != p_pass[2]
    assert rows[0]["eval/p_follow"] != rows[0]["eval_start/p_follow"]


@pytest.mark.slow
def test_a_run_resumed_across_the_switch_equals_an_uninterrupted_one(tmp_path):
    train(_cfg(tmp_path, name="whole", save_every=1))
    train(_cfg(tmp_path, name="split", steps=1))                  # stops before the switch (step 2) ...
    train(_cfg(tmp_path, name="split", steps=4, resume=True))     # ... and is resumed across it
    whole = _same(_metrics(tmp_path / "whole" / "metrics.jsonl"))
    split = _same(_metrics(tmp_path / "split" / "metrics.jsonl"))
    assert [r["partners_playing"] for r in split] == ["thinker", "thinker", "", ""]
    assert split == whole
