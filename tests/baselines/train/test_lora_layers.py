"""``--lora-layers K``: LoRA adapters on the top K transformer layers only. The layers below stay the frozen base
model, so the update's graph (and its backward, and the activations it keeps) stops at the lowest adapted layer;
the option is refused where it means nothing, and a checkpoint and ``--resume`` carry it. On a 3-layer variant of
the ``tiny`` model (``tiny`` itself has one layer), saved as a local model folder."""

from __future__ import annotations

import json

import pytest
import torch

from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig, checkpoint, train
from baselines.train.dist import Dist
from baselines.train.learners import build_team
from baselines.train.update import trained_samples
from marl_llm_envs import make

pytest.importorskip("peft")

KWARGS = {"thinker_clue_accuracy": 0.9, "clue_pool": "words"}
LAYERS = 3


@pytest.fixture(scope="module")
def deep_tiny(tmp_path_factory) -> str:
    """A folder holding ``tiny`` with 3 transformer layers (the same shape otherwise) and its tokenizer."""
    from baselines import hf_models
    from baselines.models import TINY_CONFIG, TINY_SEED

    folder = tmp_path_factory.mktemp("deep_tiny")
    model, tok = hf_models.tiny_model({**TINY_CONFIG, "num_hidden_layers": LAYERS}, TINY_SEED, "cpu", None)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def _cfg(model: str, **kw) -> TrainConfig:
    base = dict(env="think_solve-v0", env_kwargs=KWARGS, action_mode="discrete", model=model, mode="choice",
                adapters="per_role", lr=1e-2, tasks_per_step=2, group_size=2, progress=False, tensorboard=False)
    return TrainConfig(**{**base, **kw})


def _team(cfg: TrainConfig):
    env = make(cfg.env, **cfg.env_kwargs, action_mode=cfg.action_mode)
    return build_team(cfg, env, sorted(set(env.roles.values())), prepare=Dist(cfg).prepare)


def _samples(team, tasks: int = 3):
    episodes = RolloutEngine(team.policies, show_progress=False).run(
        "think_solve-v0", tasks, 2, seed=5, env_kwargs={**KWARGS, "action_mode": "discrete"})
    adv = [[1.0 if k % 2 else -1.0 for k, _ in enumerate(e.turns)] for e in episodes]
    return trained_samples(episodes, adv, set(team.trainable))


def _adapted(module) -> dict[str, set[str]]:
    """Transformer layer index -> the names of its linear modules that hold an adapter."""
    out: dict[str, set[str]] = {}
    for name, p in module.named_parameters():
        if ".lora_A." in name:
            layer, rest = name.split("layers.")[1].split(".", 1)
            out.setdefault(layer, set()).add(rest.split(".lora_A.")[0].rpartition(".")[2])
    return out


def test_the_top_k_layers_get_the_same_adapters_as_every_layer_does_and_the_rest_none(deep_tiny):
    every = _adapted(_team(_cfg(deep_tiny)).learners[0].module)
    top = _adapted(_team(_cfg(deep_tiny, lora_layers=1)).learners[0].module)
    assert set(every) == {"0", "1", "2"} and set(top) == {"2"}
    assert top["2"] == every["2"] == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    two = _team(_cfg(deep_tiny, lora_layers=2)).learners[0]
    assert set(_adapted(two.module)) == {"1", "2"}
    # only adapter weights are trained, and each role's adapter is a clip group of its own
    assert {n for n, p in two.module.named_parameters() if p.requires_grad} == {
        n for n, _ in two.module.named_parameters() if "lora_" in n}
    assert len(two.clip_groups()) == 2


def test_at_init_the_model_with_top_layer_adapters_is_the_base_model(deep_tiny):
    from baselines.models import load_model

    base, _ = load_model(deep_tiny)
    learner = _team(_cfg(deep_tiny, lora_layers=1)).learners[0]
    ids = torch.tensor([[7, 40, 41, 42, 90, 91, 12]])
    with torch.no_grad():
        expected = base(input_ids=ids).logits
        for role in ("thinker", "solver"):
            learner.module.set_adapter(role)
            assert torch.equal(learner.module(input_ids=ids).logits, expected)


def _layer_outputs_requiring_grad(learner, samples) -> tuple[list[bool], int]:
    """Run the update's scoring of ``samples`` with gradient: whether each transformer layer's output is part of
    the autograd graph, and how many tensors autograd saved for the backward."""
    tracked: dict[int, bool] = {}
    hooks = []
    layers = learner.module.base_model.model.model.layers
    for k, layer in enumerate(layers):
        def hook(module, args, out, k=k):
            h = out[0] if isinstance(out, tuple) else out
            tracked[k] = tracked.get(k, False) or h.requires_grad
        hooks.append(layer.register_forward_hook(hook))
    saved = []
    try:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(1) or t, lambda t: t):
            new, _ = learner.logprobs(samples)
    finally:
        for h in hooks:
            h.remove()
    new.sum().backward()
    return [tracked[k] for k in range(len(layers))], len(saved)


def test_the_update_graph_stops_at_the_lowest_adapted_layer(deep_tiny):
    runs = {}
    for k in (0, 1):
        team = _team(_cfg(deep_tiny, lora_layers=k))
        learner, samples = team.learners[0], _samples(team)
        assert {s.role for s in samples} == {"thinker", "solver"}
        runs[k] = (*_layer_outputs_requiring_grad(learner, samples), learner)
    tracked_all, saved_all, _ = runs[0]
    tracked_top, saved_top, learner = runs[1]
    assert tracked_all == [True, True, True]      # every layer adapted: the graph reaches down to the first
    assert tracked_top == [False, False, True]    # top layer only: layers 0 and 1 are outside the graph
    assert saved_top < saved_all / 2              # and keep no activations for a backward
    # the adapted layer's adapters (A and B of both roles) get a gradient, nothing else has one
    grads = {n: p.grad for n, p in learner.module.named_parameters() if p.grad is not None}
    assert grads and all("layers.2." in n and "lora_" in n for n in grads)
    assert any(float(g.abs().sum()) > 0 for n, g in grads.items() if ".lora_B.thinker." in n)
    assert any(float(g.abs().sum()) > 0 for n, g in grads.items() if ".lora_B.solver." in n)


def test_the_top_layers_get_the_gradient_they_get_when_every_layer_is_adapted(deep_tiny):
    """At init every lora_B is 0, so both models compute the base model's activations: with the same top-layer
    adapter weights, the top layer's adapters get the same gradient whether the layers below hold adapters or not
    (dropping the lower adapters changes what can be learned there, nothing above)."""
    top_team = _team(_cfg(deep_tiny, lora_layers=1))
    every_team = _team(_cfg(deep_tiny))
    top, every = top_team.learners[0], every_team.learners[0]
    state = top.module.state_dict()
    every.module.load_state_dict(state, strict=False)         # the top layer's adapter weights, copied
    samples = _samples(top_team)
    grads = []
    for learner in (top, every):
        new, _ = learner.logprobs(samples)
        new.sum().backward()
        grads.append({n: p.grad.clone() for n, p in learner.module.named_parameters()
                      if p.grad is not None and "layers.2." in n})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) == 2 * 2 * 7
    for name, g in grads[0].items():
        assert torch.allclose(g, grads[1][name], atol=1e-6, rtol=1e-5), name


@pytest.mark.parametrize("k, message", [(4, r"--lora-layers 4: model .* has 3 transformer layers; give 1\.\.3"),
                                        (-1, r"--lora-layers must be a finite number >= 0, got -1")])
def test_a_layer_count_the_model_does_not_have_is_refused(deep_tiny, tmp_path, k, message):
    with pytest.raises(ValueError, match=message):
        train(_cfg(deep_tiny, lora_layers=k, steps=1, out=str(tmp_path / "r")))


def test_lora_layers_without_adapters_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--lora-r, --lora-alpha and --lora-layers shape LoRA adapters, and "
                                         "--adapters is 'none'"):
        train(_cfg("tiny", adapters="none", lora_layers=1, steps=1, out=str(tmp_path / "r")))
    assert not (tmp_path / "r").exists()


def test_a_run_with_lora_layers_checkpoints_only_its_adapters_and_resumes_exactly(deep_tiny, tmp_path):
    def run(name: str, steps: int, **kw) -> None:
        train(_cfg(deep_tiny, lora_layers=1, steps=steps, save_every=2, seed=1, out=str(tmp_path / name), **kw))

    run("whole", 4)
    run("split", 2)
    saved = json.loads((tmp_path / "split" / "config.json").read_text())
    assert saved["lora_layers"] == 1
    (ckpt,) = (tmp_path / "split" / "checkpoints").glob("step-*")
    (learner,) = checkpoint.load(ckpt)[1]["learners"]
    assert len(learner["model"]) == 2 * 2 * 7 and all("layers.2." in n for n in learner["model"])
    # another --lora-layers is another run: refused on --resume
    with pytest.raises(ValueError, match="--resume: the run in .* was made with another config"):
        train(_cfg(deep_tiny, lora_layers=2, steps=4, save_every=2, seed=1, out=str(tmp_path / "split"),
                   resume=True))
    run("split", 4, resume=True)
    rows = {n: [json.loads(x) for x in (tmp_path / n / "metrics.jsonl").read_text().splitlines()]
            for n in ("whole", "split")}
    keep = ("reward/team/team", "grad_norm", "entropy", "clip_frac", "policy_entropy/solver", "policy_entropy/thinker")
    assert [{k: r.get(k) for k in keep} for r in rows["split"]] == [{k: r.get(k) for k in keep} for r in rows["whole"]]
    assert all(r[k] is not None for r in rows["whole"] for k in keep) and any(r["grad_norm"] > 0 for r in rows["whole"])


def test_a_config_without_lora_layers_keeps_its_hash():
    """Runs hashed before the field existed resume and score as before: the default is left out of the hash (the
    value below is what the trainer computed for issue 43's campaign config before --lora-layers existed)."""
    cfg = TrainConfig(env="think_solve-v0", env_kwargs=KWARGS, action_mode="discrete", model="smollm2-135m",
                      mode="choice", adapters="per_role", credit="ccpo_v2", lr=2e-4, steps=60)
    assert cfg.hash() == "3b2f3fc9a7e7"
    assert TrainConfig(**{**cfg.to_dict(), "lora_layers": 4}).hash() != cfg.hash()
