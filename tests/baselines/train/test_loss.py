"""The loss (baselines/train/loss.py): the clip bounds of the surrogate, the k3 KL, the aggregation weights, and
truncated importance sampling of the sampler against the trainer (``tis_weights``) with the mismatch metrics the
trainer logs."""

from __future__ import annotations

import math

import pytest
import torch

from baselines.train.loss import policy_loss, tis_weights, token_weight


def test_tis_weights_by_hand():
    old = torch.tensor([math.log(0.5), math.log(0.2), math.log(0.3)])
    sampler = torch.tensor([math.log(0.25), math.log(0.4), math.log(0.05)])     # ratios 2, 0.5, 6
    w, stats = tis_weights(old, sampler, cap=2.0)
    assert torch.allclose(w, torch.tensor([2.0, 0.5, 2.0]), atol=1e-6)
    assert stats["max_ratio"] == pytest.approx(6.0, rel=1e-5)
    k3 = (2 - 1 - math.log(2)) + (0.5 - 1 - math.log(0.5)) + (6 - 1 - math.log(6))
    assert stats["kl"] == pytest.approx(k3, rel=1e-5) and stats["tokens"] == 3


def test_a_sampler_logprob_of_minus_inf_gets_the_cap_and_stays_out_of_the_statistics():
    w, stats = tis_weights(torch.tensor([-1.0, -2.0]), torch.tensor([-math.inf, -2.0]), cap=3.0)
    assert w.tolist() == [3.0, 1.0]
    assert stats == {"kl": 0.0, "tokens": 1, "max_ratio": 1.0}


def test_the_weight_multiplies_each_tokens_clipped_surrogate():
    new = torch.zeros(3, requires_grad=True)
    old = torch.zeros(3)
    adv = torch.tensor([1.0, -1.0, 2.0])
    tok_w = torch.full((3,), 1 / 3)
    base, _ = policy_loss(new, old, adv, tok_w, clip_low=0.2, clip_high=0.28)
    weighted, _ = policy_loss(new, old, adv, tok_w, clip_low=0.2, clip_high=0.28,
                              is_weight=torch.tensor([2.0, 0.5, 2.0]))
    # ratio 1: the surrogate of each token is -A; weighted -(2*1 - 0.5*1 + 2*2) / 3
    assert float(base.detach()) == pytest.approx(-(1 - 1 + 2) / 3)
    assert float(weighted.detach()) == pytest.approx(-(2 * 1 - 0.5 * 1 + 2 * 2) / 3)
    weighted.backward()
    assert torch.allclose(new.grad, -torch.tensor([2 * 1, 0.5 * -1, 2 * 2]) / 3)


@pytest.mark.parametrize("mode", ["choice", "generate"])
def test_with_the_hf_backend_the_sampler_is_the_trainer_and_the_weight_is_one(tmp_path, mode):
    from baselines.train import TrainConfig, train

    cfg = TrainConfig(env="think_solve-v0", model="tiny", mode=mode, steps=1, tasks_per_step=2, group_size=2,
                      max_new_tokens=4, out=str(tmp_path / "run"), progress=False, tensorboard=False, ppo_epochs=1)
    metrics = train(cfg)
    assert metrics["mismatch/max_ratio"] == pytest.approx(1.0, abs=1e-4)
    assert 0.0 <= metrics["mismatch/kl"] < 1e-8
    assert metrics["trained_tokens"] > 0      # the tiny model's entropy bonus keeps zero-advantage turns scored


def test_tis_flags_are_checked_and_new_defaults_keep_old_hashes():
    from baselines.train import TrainConfig

    cfg = TrainConfig()
    with pytest.raises(ValueError, match="--backend must be one of"):
        TrainConfig(backend="trt").check()
    with pytest.raises(ValueError, match="--tis-cap"):
        TrainConfig(tis_cap=-1.0).check()
    d = cfg.to_dict()
    assert TrainConfig(**{**d, "tis_cap": 2.0}).hash() == cfg.hash()
    assert TrainConfig(**{**d, "tis_cap": 3.0}).hash() != cfg.hash()
    assert TrainConfig(**{**d, "backend": "vllm"}).hash() != cfg.hash()


def test_clip_bounds_cut_the_gradient_outside_the_trust_region():
    old = torch.zeros(4)
    new = torch.log(torch.tensor([1.5, 1.1, 0.5, 0.9])).requires_grad_(True)
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0])
    w = torch.full((4,), 0.25)
    loss, stats = policy_loss(new, old, adv, w, clip_low=0.2, clip_high=0.28)
    loss.backward()
    # token 0: ratio 1.5 > 1.28 with A > 0 -> clipped at 1.28, no gradient; token 2: ratio 0.5 < 0.8 with A < 0 ->
    # clipped at 0.8, no gradient; tokens 1 and 3 inside: d/dl (-A r) = -A r.
    assert loss.item() == pytest.approx(0.25 * (-1.28 - 1.1 + 0.8 + 0.9))
    assert new.grad.tolist() == pytest.approx([0.0, -0.25 * 1.1, 0.0, 0.25 * 0.9])
    assert stats["clipped"] == pytest.approx(0.5)


def test_k3_kl_and_finite_loss_for_a_token_outside_the_nucleus():
    new = torch.tensor([-1.0, -2.0])
    d = torch.tensor([0.5, -0.5])        # ref - new
    _, stats = policy_loss(new, new.clone(), torch.zeros(2), torch.full((2,), 0.5), clip_low=0.2, clip_high=0.2,
                           ref_lp=new + d, kl_coef=0.1)
    assert stats["kl"] == pytest.approx(float(0.5 * (torch.exp(d) - d - 1).sum()))
    old = torch.tensor([-math.inf, -1.0])   # a sampler's -inf (outside its top-p nucleus) never reaches exp()
    loss, _ = policy_loss(torch.tensor([-3.0, -1.0]), old, torch.ones(2), torch.ones(2), clip_low=0.2, clip_high=0.2)
    assert math.isfinite(loss.item())


def test_aggregation_weights_token_mean_and_seq_mean():
    # two turns of 2 and 6 tokens: token-mean weighs every token 1/8; seq-mean every turn 1/2, spread on its tokens
    assert [token_weight(n, [2, 6], "token-mean") for n in (2, 6)] == [0.125, 0.125]
    assert [token_weight(n, [2, 6], "seq-mean") for n in (2, 6)] == [0.25, 1 / 12]
