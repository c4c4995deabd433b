"""The training loop: one update moves a decision's log-probability the right way (free generation, choice mode,
per-role LoRA), kill -9 and resume, data parallel, the MLP tier learns, logged entropy, per-token advantages, and
a run folder another process writes into."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig, checkpoint, train
from baselines.train.learners import build_team
from baselines.train.dist import Dist as _Dist
from baselines.train.update import trained_samples as _samples, update as _update
from marl_llm_envs import make
from tests.baselines.train.helpers import (MLP_ARGS, _comparable, _kill_after_step, _kuhn_one_step, _metrics,
                                          _one_and_two_processes, _run)


# ---------------------------------------------------------------------- one update, the right direction
def _one_update(cfg: TrainConfig, env_id: str, kwargs: dict, sign: dict[str, float], roles_now=None):
    env = make(env_id, **kwargs)
    roles = sorted(set(env.roles.values()))
    team = build_team(cfg, env, roles, prepare=_Dist(cfg).prepare)
    episodes = RolloutEngine(team.policies, show_progress=False).run(env_id, 2, 2, seed=3, env_kwargs=kwargs)
    adv = [[sign.get(t.role, 0.0) for t in e.turns] for e in episodes]
    roles_now = set(roles_now or team.trainable)
    samples = _samples(episodes, adv, roles_now)
    total = {lr.name: [s.n for s in samples if s.role in lr.trainable] for lr in team.learners}
    learner = team.learners[0]
    params = {n: p.detach().clone() for n, p in learner.module.named_parameters()}
    with torch.no_grad():
        before = learner.logprobs(samples)[0].clone()
    stats = _update(team, _Dist(cfg), samples, total, roles_now)
    with torch.no_grad():
        after = learner.logprobs(samples)[0]
    return team, samples, before, after, stats, params


def test_a_positive_advantage_raises_the_turns_logprob_in_free_generation():
    cfg = TrainConfig(env="think_solve-v0", model="tiny", max_new_tokens=6, lr=1e-3)
    _, samples, before, after, stats, _ = _one_update(cfg, "think_solve-v0", {}, {"thinker": 1.0, "solver": 1.0})
    assert samples and all(s.kind == "generate" for s in samples)
    assert float(after.sum()) > float(before.sum())
    assert stats["recompute_gap_max"] < 1e-3          # float32: the recompute matches the sampler


def test_the_free_text_hint_trains_the_writing_thinker_against_the_scripted_reader():
    # issue 43 item 4's setting: the thinker writes its hint (generate mode, per-role LoRA), the solver is the
    # scripted reader; a group's samples share the thinker's prompt, and a positive advantage raises the hints
    pytest.importorskip("peft")
    kwargs = {"thinker_clue_accuracy": 0.9, "clue_pool": "words", "action_mode": "text"}
    cfg = TrainConfig(env="think_solve-v0", env_kwargs={k: v for k, v in kwargs.items() if k != "action_mode"},
                      action_mode="text", model="tiny", mode="generate", adapters="per_role",
                      partners="solver=reference", max_new_tokens=6, lr=1e-3)
    team, samples, before, after, stats, _ = _one_update(cfg, "think_solve-v0", kwargs, {"thinker": 1.0})
    assert team.trainable == ["thinker"] and samples and {s.role for s in samples} == {"thinker"}
    assert all(s.kind == "generate" for s in samples)
    assert len({tuple(s.prompt_ids) for s in samples}) == 2          # 2 tasks x 2 samples: one prompt per group
    assert float(after.sum()) > float(before.sum())
    assert stats["recompute_gap_max"] < 1e-3


@pytest.mark.parametrize("scoring", ["label", "mean", "sum"])
def test_a_negative_advantage_lowers_a_choice_mode_decision(scoring):
    cfg = TrainConfig(env="kuhn_poker-v0", model="tiny", mode="choice", choice_scoring=scoring, lr=1e-3)
    _, samples, before, after, stats, _ = _one_update(cfg, "kuhn_poker-v0", {}, {"player_0": -1.0, "player_1": -1.0})
    assert samples and all(s.kind == "choice" and s.n == 1 for s in samples)
    assert {s.choice.scoring for s in samples} == {scoring}
    # the ratio's denominator is the sampled distribution: the trainer's recompute equals the sampler's logprob
    assert stats["recompute_gap_max"] < 1e-4
    assert float(after.sum()) < float(before.sum())


def test_per_role_lora_updates_only_the_trained_roles_adapter():
    pytest.importorskip("peft")
    cfg = TrainConfig(env="think_solve-v0", model="tiny", adapters="per_role", lora_r=4, max_new_tokens=4, lr=1e-2)
    team, samples, before, after, _, params = _one_update(cfg, "think_solve-v0", {}, {"thinker": 1.0, "solver": 1.0},
                                                          roles_now={"thinker"})
    assert {s.role for s in samples} == {"thinker"}
    assert float(after.sum()) > float(before.sum())
    changed = {n for n, p in team.learners[0].module.named_parameters() if not torch.equal(p, params[n])}
    assert changed and all(".thinker." in n for n in changed)     # neither the solver's adapter nor the base moved


def test_kill_minus_nine_and_resume_ends_with_the_same_metrics(tmp_path):
    args = [*MLP_ARGS, "--steps", "5", "--save-every", "2"]
    whole = _run(tmp_path, *args, name="whole")
    assert whole.returncode == 0, whole.stderr
    killed = _kill_after_step(tmp_path, 3, *args, name="killed")    # killed after step 3, checkpoint at 2
    assert killed.returncode == -9
    assert len(_metrics(tmp_path / "killed" / "metrics.jsonl")) == 3
    again = _run(tmp_path, *args, name="killed")
    assert "already holds a run" in again.stderr and again.returncode == 2
    resumed = _run(tmp_path, *args, "--resume", name="killed")
    assert resumed.returncode == 0, resumed.stderr
    assert _comparable(_metrics(tmp_path / "killed" / "metrics.jsonl")) == _comparable(
        _metrics(tmp_path / "whole" / "metrics.jsonl"))
    assert (tmp_path / "killed" / "checkpoints" / "latest").read_text() == "step-0000005"


def _kuhn_run(tmp_path: Path, steps: int, save_every: int = 2, resume: bool = False) -> TrainConfig:
    """A small seeded Kuhn MLP run in ``tmp_path / "run"`` (the resume tests train, damage and resume it)."""
    return TrainConfig(env="kuhn_poker-v0", model="mlp", action_mode="discrete", steps=steps, tasks_per_step=2,
                       group_size=2, save_every=save_every, out=str(tmp_path / "run"), progress=False,
                       tensorboard=False, resume=resume)


def _back_to_step_2(run: Path) -> None:
    """Leave a 3-step run as if it had been killed after its checkpoint at step 2."""
    import shutil

    shutil.rmtree(run / "checkpoints" / "step-0000003")
    (run / "checkpoints" / "latest").write_text("step-0000002")


@pytest.mark.parametrize("damage", ["cut", "edited", "deleted"])
def test_resume_refuses_metrics_that_miss_steps_before_its_checkpoint_and_leaves_them(tmp_path, damage):
    """A resumed run writes the steps after its checkpoint again; the lines before it must be there, or the run's
    metrics would miss steps for good. The file is left as it was (nothing more is lost), and the error says what to
    do."""
    train(_kuhn_run(tmp_path, 3))       # metrics of steps 0..2; checkpoints at 2 and 3
    metrics = tmp_path / "run" / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    _back_to_step_2(tmp_path / "run")
    if damage == "cut":
        metrics.write_text(lines[0] + "\n")
        expected = "holds the metrics of 1 steps, but the checkpoint continues from step 2"
    elif damage == "edited":
        metrics.write_text("\n".join([lines[1], lines[0], lines[2]]) + "\n")
        expected = "line 1 of .* is not the metrics of step 0"
    else:
        metrics.unlink()
        expected = "holds the metrics of 0 steps, but the checkpoint continues from step 2"
    before = metrics.read_bytes() if metrics.exists() else None
    with pytest.raises(ValueError, match=expected):
        train(_kuhn_run(tmp_path, 4, resume=True))
    assert (metrics.read_bytes() if metrics.exists() else None) == before
    assert not list((tmp_path / "run").glob(".metrics.jsonl*"))


def test_resume_without_a_usable_latest_names_the_complete_checkpoints(tmp_path):
    train(_kuhn_run(tmp_path, 2, save_every=1))
    folder = tmp_path / "run" / "checkpoints"
    (folder / "latest").write_text("step-9")
    with pytest.raises(ValueError, match=r"its 'latest' names 'step-9', not a complete checkpoint; complete ones: "
                                         r"step-0000001, step-0000002: write one of those names into "):
        train(_kuhn_run(tmp_path, 3, save_every=1, resume=True))
    from leaderboard.players import load_player

    with pytest.raises(ValueError, match=r"complete ones: step-0000001, step-0000002: give checkpoint:.*/checkpoints/"
                                         r"<one of them>\); a player is a trainer run folder"):
        load_player(f"checkpoint:{tmp_path / 'run'}", "kuhn_poker-v0", ["player_0", "player_1"], "discrete")
    (folder / "latest").write_text("step-0000001")          # as the message says: resumes from step 1
    before = (folder / "step-0000002" / "state.safetensors").read_bytes()
    train(_kuhn_run(tmp_path, 3, save_every=1, resume=True))    # saves step 2 again (over the old one), then step 3
    assert [json.loads(x)["step"] for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2]
    assert sorted(p.name for p in folder.iterdir()) == ["latest", "step-0000002", "step-0000003"]   # nothing aside
    assert checkpoint.load(folder / "step-0000002")[0]["step"] == 2
    assert (folder / "step-0000002" / "state.safetensors").read_bytes() == before      # the same run, saved again


def test_resume_keeps_the_metrics_before_its_checkpoint_and_writes_no_stray_file(tmp_path):
    train(_kuhn_run(tmp_path, 3))
    metrics = tmp_path / "run" / "metrics.jsonl"
    first = metrics.read_text().splitlines()
    _back_to_step_2(tmp_path / "run")
    train(_kuhn_run(tmp_path, 3, resume=True))      # step 2 again, from the checkpoint at 2
    assert (tmp_path / "run" / "checkpoints" / "step-0000003").is_dir()
    again = metrics.read_text().splitlines()
    assert again[:2] == first[:2] and [json.loads(x)["step"] for x in again] == [0, 1, 2]
    assert _comparable([json.loads(again[2])]) == _comparable([json.loads(first[2])])
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")) == []


def test_two_process_data_parallel_matches_one_process(tmp_path):
    a, b = _one_and_two_processes(tmp_path, *MLP_ARGS, "--steps", "2", "--ppo-epochs", "2")
    for x, y in zip(a, b):
        assert x["reward/team/team"] == y["reward/team/team"]          # the same episodes
        assert x["grad_norm"] == pytest.approx(y["grad_norm"], rel=1e-4)
    wa = checkpoint.load(tmp_path / "one" / "checkpoints" / "step-0000002")[1]
    wb = checkpoint.load(tmp_path / "two" / "checkpoints" / "step-0000002")[1]
    for k, v in wa["learners"][0]["model"].items():
        assert torch.allclose(v, wb["learners"][0]["model"][k].reshape(v.shape), atol=1e-6), k


def test_the_mlp_tier_learns_to_vote_with_its_clues(tmp_path):
    # voting-v0 discrete: each voter sees a private clue naming the true label with probability 0.7; following it
    # is the learnable strategy (random ballots score about 0.25).
    result = _run(tmp_path, *MLP_ARGS[:-4], "--credit", "broadcast", "--tasks-per-step", "16", "--group-size", "4",
                  "--steps", "60", "--ppo-epochs", "4", "--save-every", "60")
    assert result.returncode == 0, result.stderr
    rewards = [r["reward/team/team"] for r in _metrics(tmp_path / "run" / "metrics.jsonl")]
    first, last = float(np.mean(rewards[:10])), float(np.mean(rewards[-10:]))
    assert last > first + 0.2, (first, last)


def test_logged_entropy_is_the_mean_over_trained_decisions_not_diluted_by_skipped_zero_advantages(tmp_path):
    # credit "none" on free_riding: the advantage is the raw reward, 0 for the 2/3 of random decisions that miss, and
    # zero-advantage samples are skipped by the update. The metric must still read the policy's own entropy (an MLP
    # at init is close to uniform over 3 moves), not entropy x the share of non-zero advantages (~0.37).
    import json
    import math

    from baselines.train import TrainConfig, train

    train(TrainConfig(env="free_riding-v0", env_kwargs={"idle_seats": 1}, action_mode="discrete", model="mlp",
                      credit="none", steps=1, tasks_per_step=8, group_size=4, seed=0, out=str(tmp_path / "r"),
                      tensorboard=False, progress=False))
    row = json.loads((tmp_path / "r" / "metrics.jsonl").read_text().splitlines()[0])
    assert 0.9 * math.log(3) < row["entropy"] <= math.log(3) + 1e-6


def test_per_token_advantages_reach_each_generated_token_and_a_flag_that_disagrees_is_named():
    kwargs = {"action_mode": "discrete"}
    team = build_team(TrainConfig(env="voting-v0", action_mode="discrete", model="mlp"), make("voting-v0", **kwargs),
                      ["voter"])
    episodes = RolloutEngine(team.policies, show_progress=False).run("voting-v0", 1, 2, seed=0, env_kwargs=kwargs)
    per_token = [[[0.5, 9.0] for _ in e.turns] for e in episodes]
    roles = set(team.trainable)
    assert all(s.adv == [0.5] for s in _samples(episodes, per_token, roles, per_token=True))   # one unit: first
    with pytest.raises(ValueError, match="sets per_token = True"):
        _samples(episodes, per_token, roles)
    with pytest.raises(ValueError, match="one number, not one per completion token"):
        _samples(episodes, [[0.5] * len(e.turns) for e in episodes], roles, per_token=True)
    team = build_team(TrainConfig(model="tiny", max_new_tokens=3), make("think_solve-v0"), ["solver", "thinker"])
    episodes = RolloutEngine(team.policies, show_progress=False).run("think_solve-v0", 1, 1, seed=0)
    values = [[[float(j) for j in range(len(t.completion_ids))] for t in e.turns] for e in episodes]
    samples = _samples(episodes, values, set(team.trainable), per_token=True)
    assert samples and all(s.kind == "generate" and s.adv == [float(j) for j in range(s.n)] for s in samples)


def test_a_run_folder_another_process_writes_into_is_refused_and_a_suite_run_waits_for_it(tmp_path):
    # two trainers with one --out wrote one run together (interleaved metrics, each other's checkpoints), and a suite
    # sharing a baseline's run with another deleted that run while it trained ("unfinished")
    import fcntl
    import os
    import threading
    import time

    from baselines.outputs import FolderBusy
    from leaderboard.suite import complete_run, train_run

    out = tmp_path / "run"
    out.mkdir()
    other = os.open(out, os.O_RDONLY)            # another process's hold (a separate open: flock conflicts with it)
    fcntl.flock(other, fcntl.LOCK_EX)
    cfg = _kuhn_one_step(out)
    with pytest.raises(FolderBusy, match="another process is writing into it now"):
        train(cfg)
    assert list(out.iterdir()) == []
    spec = {"env_id": "kuhn_poker-v0", "method": "broadcast", "seed": 0, "action_mode": "discrete", "model": "mlp",
            "mode": "generate", "steps": 1, "tasks_per_step": 2, "group_size": 2, "out": str(out)}
    threading.Timer(1.0, lambda: os.close(other)).start()       # the other process ends in a second
    start = time.monotonic()
    assert train_run(spec) == str(out)
    assert time.monotonic() - start >= 0.9 and complete_run(out, 1)
    with pytest.raises(ValueError, match="already holds a run"):      # free again: the folder's own check speaks
        train(cfg)
