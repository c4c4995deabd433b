"""``--partners-steps N``, the curriculum (issue 43 item 3): the ``--partners`` bots play their roles in steps
0..N-1, then the roles' own models play them and are trained; the switch follows from the step, so a run resumed
across it equals an uninterrupted one."""

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
                adapters="per_role", partners="thinker=reference", partners_steps=2, steps=4, tasks_per_step=2,
                group_size=2, seed=3, out=str(tmp_path / name), progress=False, tensorboard=False)
    return TrainConfig(**{**base, **kw})


@pytest.mark.parametrize("change, message", [
    (dict(partners_steps=-1), "--partners-steps must be a finite number >= 0"),
    (dict(partners=""), "--partners-steps 2 hands the roles of --partners to their models at that step, and "
                        "--partners is empty"),
    (dict(credit="oracle"), "--credit oracle scores its counterfactuals"),
])
def test_a_curriculum_that_makes_no_sense_is_refused_before_the_run(tmp_path, change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _cfg(tmp_path, **change).check()


@pytest.mark.parametrize("change, message", [
    # the bots would play every trained role in steps 0..1: nothing trained then
    (dict(partners="thinker=reference,solver=reference"), r"in steps 0\.\.1 the bots play every trained role"),
    (dict(partners="thinker=reference", frozen="solver"), r"in steps 0\.\.1 the bots play every trained role"),
    # the thinker has no model to hand its role to at step 2
    (dict(model="solver=tiny"), r"--model gives no model for role\(s\) \['thinker'\].*--partners-steps 2"),
])
def test_a_team_the_curriculum_cannot_switch_is_refused(tmp_path, change, message):
    cfg = _cfg(tmp_path, **change)
    cfg.check()
    env = make("think_solve-v0", **CLUE, action_mode="discrete")
    with pytest.raises(ValueError, match=message):
        build_team(cfg, env, sorted(set(env.roles.values())))


def test_without_partners_steps_a_partner_is_scripted_all_run_and_the_hash_is_unchanged(tmp_path, monkeypatch):
    # a run made before the option existed keeps its config hash (and so its --resume)
    cfg = _cfg(tmp_path, partners_steps=0)
    new = cfg.hash()
    fields = cfg.to_dict()
    monkeypatch.setattr(cfg, "to_dict", lambda: {k: v for k, v in fields.items() if k != "partners_steps"})
    assert new == cfg.hash()
    assert new != _cfg(tmp_path, partners_steps=2).hash()
    env = make("think_solve-v0", **CLUE, action_mode="discrete")
    team = build_team(cfg, env, ["solver", "thinker"])
    assert team.trainable == ["solver"] and not team.scripted
    assert team.playing(0)["thinker"].name.startswith("reference:")


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
