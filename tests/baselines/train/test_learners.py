"""Learners (baselines/train/learners.py) score recorded decisions again: choice mode on a shared prompt as one
row per move, micro-batches packed by the tokens the forward computes, the MLP's rows bit for bit, and its
multi-tensor clip and AdamW steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig
from baselines.train.learners import build_team
from baselines.train.update import trained_samples as _samples
from marl_llm_envs import make


@pytest.mark.parametrize("scoring", ["label", "mean", "sum"])
def test_choice_scores_on_a_shared_prompt_equal_one_row_per_move_with_gradients(scoring):
    cfg = TrainConfig(env="kuhn_poker-v0", model="tiny", mode="choice", choice_scoring=scoring)
    env = make("kuhn_poker-v0")
    team = build_team(cfg, env, ["player_0", "player_1"])
    learner = team.learners[0]
    episodes = RolloutEngine(team.policies, show_progress=False).run("kuhn_poker-v0", 2, 2, seed=1)
    samples = _samples(episodes, [[1.0] * len(e.turns) for e in episodes], set(team.trainable))
    results = []
    for model in (learner.module, _Plain(learner.module)):   # shared prompt; a wrapped model: one row per move
        learner.module.zero_grad()
        lp, _ = learner._score(samples, model)
        lp.sum().backward()
        results.append((lp.detach(), [p.grad.clone() for p in learner.module.parameters()]))
    (lp_shared, g_shared), (lp_rows, g_rows) = results
    sampled = torch.tensor([s.choice.logprob for s in samples])
    assert torch.allclose(lp_shared.detach(), sampled, atol=1e-5)      # what the policy sampled from
    assert len(lp_shared) == len(samples) and torch.allclose(lp_shared, lp_rows, atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g_shared, g_rows))


class _Plain(torch.nn.Module):
    """The model behind another object, as a data-parallel wrapper would hold it."""

    def __init__(self, model):
        super().__init__()
        self.inner = model

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)


def test_llm_micro_batches_count_a_repeated_prompt_once():
    """Choice decisions are packed by the tokens the forward computes: identical prompts (Kuhn's first move with the
    same card) are prefilled once, so they share one micro-batch where packing by full length needs one each."""
    from baselines.policies.base import Choice
    from baselines.train.learners import Learner, LLMLearner, Sample

    learner = LLMLearner.__new__(LLMLearner)
    learner.hf_policy = None
    header = list(range(100, 400))
    prompts = [header + [k % 3] for k in range(12)]          # 3 distinct prompts of 301 tokens, 4 times each
    samples = [Sample(f"p{k % 2}", "choice", p, [7], [-0.7], [1.0], ["[a]", "[b]"],
                      choice=Choice(index=0, logprob=-0.7, scoring="label")) for k, p in enumerate(prompts)]
    by_prompt = learner.micro_batches(samples, 400)
    in_order = Learner.micro_batches(learner, samples, 400)
    assert len(in_order) == 12 and len(by_prompt) == 2       # one per role: a shared prefix is not across adapters
    assert sorted(id(s) for mb in by_prompt for s in mb) == sorted(id(s) for s in samples)
    assert all(len({s.role for s in mb}) == 1 for mb in by_prompt)


def test_the_mlp_scores_recorded_decisions_on_the_rows_it_read_bit_for_bit():
    # log_policy stacks the recorded inputs with one NumPy call per field; its rows, log-probabilities and gradients
    # must be those of writing each row and field by itself, with rows of one length and of several lengths
    from baselines.policies.base import Choice, VectorInputs
    from baselines.train.learners import Sample

    kwargs = {"action_mode": "discrete"}
    env = make("mini_hanabi-v1", **kwargs)
    team = build_team(TrainConfig(env="mini_hanabi-v1", action_mode="discrete", model="mlp"), env,
                      sorted(set(env.roles.values())))
    learner = team.learners[0]
    policy = learner.policy
    episodes = RolloutEngine(team.policies, show_progress=False).run("mini_hanabi-v1", 3, 2, seed=4,
                                                                     env_kwargs=kwargs)
    choices = [t.choice for e in episodes for t in e.turns]
    rng = np.random.default_rng(0)
    short = [Choice(c.index, c.logprob, "mlp", inputs=VectorInputs(
        c.inputs.observation[:int(rng.integers(1, len(c.inputs.observation)))],
        c.inputs.mask[:max(c.index + 1, int(rng.integers(1, len(c.inputs.mask) + 1)))], c.inputs.role_index))
        for c in choices[:7]]

    def row_by_row(inputs):
        x = np.zeros((len(inputs), policy.in_size), np.float32)
        mask = np.zeros((len(inputs), policy.action_size), np.float32)
        for i, v in enumerate(inputs):
            x[i, :len(v.observation)] = v.observation
            x[i, len(v.observation) + v.role_index] = 1.0
            mask[i, :len(v.mask)] = v.mask
        return policy._log_policy(x, mask)

    for batch in (choices, short + choices):
        inputs = [c.inputs for c in batch]
        grads = []
        for score in (lambda: policy.log_policy(inputs), lambda: row_by_row(inputs)):
            learner.module.zero_grad(set_to_none=True)
            logp, mask = score()
            logp.sum().backward()
            grads.append([logp.detach().numpy().tobytes(), mask.numpy().tobytes()]
                         + [p.grad.numpy().tobytes() for p in learner.parameters()])
        assert grads[0] == grads[1]
    with pytest.raises(ValueError, match="Choice.inputs"):
        learner.logprobs([Sample("r", "mlp", [], [0], [0.0], [1.0], choice=Choice(0, 0.0, "mlp"))])


def test_the_mlps_multi_tensor_clip_and_adamw_steps_give_the_per_tensor_floats():
    # MLPLearner.foreach: gradient clipping and AdamW through torch's foreach ops (fewer Python calls a step); the
    # weights after several clipped steps must be those of the per-tensor loops, bit for bit
    from baselines.policies.mlp import MLP

    weights = []
    for foreach in (None, True):
        torch.manual_seed(0)
        model = MLP(30, 5)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01, foreach=foreach)
        data = torch.Generator().manual_seed(1)
        norms = []
        for step in range(6):
            opt.zero_grad(set_to_none=True)
            x = torch.randn(64, 30, generator=data)
            (model(x) ** 2).sum().mul(10.0 ** (step - 2)).backward()
            norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=foreach).item())
            opt.step()
        weights.append((norms, [p.detach().numpy().tobytes() for p in model.parameters()]))
    assert weights[0] == weights[1]


def test_free_text_turns_of_a_group_run_their_shared_prompt_through_the_model_once():
    """A GRPO group's free-text turns share one prompt: the update scores them with that prompt computed once and
    each completion on its KV cache, so the model reads P + G * C token positions, not G * (P + C)."""
    from baselines.train.learners import Sample

    cfg = TrainConfig(env="kuhn_poker-v0", model="tiny", mode="generate")
    team = build_team(cfg, make("kuhn_poker-v0"), ["player_0", "player_1"])
    learner = team.learners[0]
    prompt = list(range(1, 201))                   # one group: 4 samples of a 200-token prompt
    samples = [Sample("player_0", "generate", prompt, [50 + k, 60 + k, 70 + k], [-1.0] * 3, [1.0] * 3)
               for k in range(4)]
    read = []
    embed = learner.module.get_input_embeddings()
    hook = embed.register_forward_hook(lambda m, args, out: read.append(args[0].numel()))
    try:
        (batch,) = learner.micro_batches(samples, 4096)
        lp, entropy = learner.logprobs(batch)
    finally:
        hook.remove()
    assert len(lp) == len(entropy) == 12
    assert sum(read) <= 200 + 4 * 3, read         # the prompt once, then each completion's tokens
