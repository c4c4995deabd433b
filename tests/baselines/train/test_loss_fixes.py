"""The update's details that issue 43 found wrong, each pinned: the entropy bonus reaches free-text tokens (or is
refused, never dropped); each role's adapter has its gradient clipped on its own; the KL reference is the initial
policy also after ``--resume``; top-p below 1 is refused for training."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig, train
from baselines.train.config import read_run_config, write_run_config
from baselines.train.learners import build_team
from baselines.train.dist import Dist as _Dist
from baselines.train.update import trained_samples as _samples, update as _update
from baselines.train.loss import policy_loss
from marl_llm_envs import make


def _team_and_samples(cfg: TrainConfig, kwargs: dict, adv: dict[str, float], tasks: int = 2):
    env = make(cfg.env, **kwargs)
    roles = sorted(set(env.roles.values()))
    team = build_team(cfg, env, roles, prepare=_Dist(cfg).prepare)
    episodes = RolloutEngine(team.policies, show_progress=False).run(cfg.env, tasks, 2, seed=3, env_kwargs=kwargs)
    samples = _samples(episodes, [[adv.get(t.role, 0.0) for t in e.turns] for e in episodes], set(team.trainable))
    return team, samples


# ---------------------------------------------------------------------- the entropy bonus
def test_free_text_tokens_get_the_entropy_of_their_sampling_distribution():
    """Before the fix a micro-batch of free-text turns had no entropy, and the bonus was silently left out."""
    cfg = TrainConfig(env="think_solve-v0", model="tiny", max_new_tokens=5)
    team, samples = _team_and_samples(cfg, {}, {"thinker": 1.0, "solver": 1.0})
    learner = team.learners[0]
    assert samples and all(s.kind == "generate" for s in samples)
    lp, ent = learner.logprobs(samples)
    assert ent is not None and ent.shape == lp.shape
    # independent check, one sample at a time: -sum p log p of softmax(logits / T) at each completion position
    s = samples[0]
    ids = torch.tensor([s.prompt_ids + s.completion_ids])
    with torch.no_grad():
        logits = learner.module(input_ids=ids).logits[0, len(s.prompt_ids) - 1:-1].float() / cfg.temperature
        logq = torch.log_softmax(logits, -1)
        expected = -(logq.exp() * logq).sum(-1)
    assert torch.allclose(ent[:s.n].detach(), expected, atol=1e-4)
    # the bonus moves the weights even where every advantage is 0
    learner.module.zero_grad()
    n = len(lp)
    loss, _ = policy_loss(lp, lp.detach(), torch.zeros(n), torch.full((n,), 1.0 / n), clip_low=0.2, clip_high=0.2,
                          entropy=ent, entropy_coef=0.1)
    loss.backward()
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in learner.module.parameters())


def test_an_entropy_bonus_without_entropies_is_refused_not_dropped():
    x = torch.zeros(3)
    with pytest.raises(ValueError, match="entropy_coef=0.05 but no entropy was given"):
        policy_loss(x, x, x, x, clip_low=0.2, clip_high=0.2, entropy=None, entropy_coef=0.05)
    loss, _ = policy_loss(x, x, x, x, clip_low=0.2, clip_high=0.2, entropy=None, entropy_coef=0.0)   # off: fine
    assert float(loss) == 0.0


# ---------------------------------------------------------------------- gradient clipping per role
def test_each_roles_adapter_is_clipped_on_its_own():
    """One clip over both roles' adapters let the larger gradient shrink the other role's step: with a small
    --grad-clip, each adapter's clipped gradient norm must be the clip itself, not a share of it."""
    pytest.importorskip("peft")
    clip = 1e-6
    cfg = TrainConfig(env="think_solve-v0", model="tiny", mode="choice", adapters="per_role", lora_r=4,
                      grad_clip=clip, ppo_epochs=1, entropy_coef=0.0)
    kwargs = {"thinker_clue_accuracy": 0.9, "action_mode": "discrete"}
    team, samples = _team_and_samples(cfg, kwargs, {"thinker": 1.0, "solver": -3.0}, tasks=3)
    learner = team.learners[0]
    norms: list[dict[str, float]] = []

    def record_then_skip():      # the gradients as the optimizer would see them, after clipping
        by_role: dict[str, float] = {}
        for name, p in learner.module.named_parameters():
            if "lora_" in name and p.grad is not None:
                role = "thinker" if ".thinker." in name else "solver"
                by_role[role] = by_role.get(role, 0.0) + float(p.grad.pow(2).sum())
        norms.append({r: v ** 0.5 for r, v in by_role.items()})

    learner.optimizer.step = record_then_skip
    total = {lr.name: [s.n for s in samples if s.role in lr.trainable] for lr in team.learners}
    stats = _update(team, _Dist(cfg), samples, total, {"thinker", "solver"})
    assert {s.role for s in samples} == {"thinker", "solver"}
    (seen,) = norms
    assert set(seen) == {"thinker", "solver"}
    assert seen["thinker"] == pytest.approx(clip, rel=1e-3) and seen["solver"] == pytest.approx(clip, rel=1e-3)
    assert stats["grad_norm"] > clip          # the largest pre-clip norm of the two


# ---------------------------------------------------------------------- the KL reference and --resume
def _kl_run(tmp_path: Path, name: str, steps: int, model: str, resume: bool = False) -> TrainConfig:
    extra = {"mode": "choice", "tasks_per_step": 2} if model == "tiny" else {"tasks_per_step": 4}
    return TrainConfig(env="kuhn_poker-v0", model=model, action_mode="discrete" if model == "mlp" else "", steps=steps,
                       group_size=2, kl_coef=0.5, lr=3e-2 if model == "mlp" else 3e-3, save_every=2,
                       out=str(tmp_path / name), progress=False, tensorboard=False, resume=resume, **extra)


@pytest.mark.parametrize("model", ["mlp", "tiny"])
def test_the_kl_reference_is_the_initial_policy_after_resume(tmp_path, model):
    """Before the fix the reference was copied lazily from the weights at the first KL term of the process, so a
    resumed run anchored to the resumed weights: its KL restarted near 0."""
    train(_kl_run(tmp_path, "whole", 4, model))
    train(_kl_run(tmp_path, "split", 2, model))
    train(_kl_run(tmp_path, "split", 4, model, resume=True))
    rows = {n: [json.loads(x) for x in (tmp_path / n / "metrics.jsonl").read_text().splitlines()]
            for n in ("whole", "split")}
    assert [r["kl"] for r in rows["split"]] == [r["kl"] for r in rows["whole"]]
    assert rows["whole"][3]["kl"] > 0


def test_a_checkpoint_without_the_kl_reference_is_refused_on_resume(tmp_path):
    from baselines.train import checkpoint

    train(_kl_run(tmp_path, "run", 2, "mlp"))
    folder = tmp_path / "run" / "checkpoints" / "step-0000002"
    meta, tensors = checkpoint.load(folder)
    for state in tensors["learners"]:
        del state["reference"]            # as a checkpoint written before the reference was kept
    shutil.rmtree(folder)
    checkpoint.save(folder.parent, 2, meta, tensors)
    with pytest.raises(ValueError, match="holds no KL reference"):
        train(_kl_run(tmp_path, "run", 4, "mlp", resume=True))


# ---------------------------------------------------------------------- top-p
def test_training_refuses_top_p_below_one_and_a_run_made_with_it_still_loads(tmp_path):
    with pytest.raises(ValueError, match="--top-p 0.9: training refuses top-p below 1"):
        TrainConfig(top_p=0.9, out=str(tmp_path / "run")).check()
    TrainConfig(top_p=1.0, out=str(tmp_path / "run")).check()
    (tmp_path / "old").mkdir()
    write_run_config(tmp_path / "old", TrainConfig(top_p=0.9, out=str(tmp_path / "old")), "text")
    assert read_run_config(tmp_path / "old").config.top_p == 0.9      # a config written before is still read
