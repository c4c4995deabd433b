"""Weight sync to a vLLM engine without vLLM: the name mapping from peft/HF to vLLM's ``load_weights``, tied
weights, and the per-role adapter folders a ``LoRARequest`` loads (baselines/policies/weight_sync.py)."""

from __future__ import annotations

import json

import pytest
import torch

from baselines.models import load_model
from baselines.policies import weight_sync as ws

peft = pytest.importorskip("peft")


def _peft_tiny(roles=("thinker", "solver"), r=4, seed=0):
    from peft import LoraConfig, get_peft_model

    model, tok = load_model("tiny")
    lora = LoraConfig(r=r, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0, task_type="CAUSAL_LM")
    pm = get_peft_model(model, lora, adapter_name=roles[0])
    for role in roles[1:]:
        pm.add_adapter(role, lora)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():     # a trained adapter: lora_B is zero at init, so give every LoRA tensor values
        for name, p in pm.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return pm.eval(), tok


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0]


IDS = [1, 4, 40, 50, 60, 70, 80, 90, 5]


def test_tied_state_of_a_cpu_model_saves_once_under_the_embedding_name(tmp_path):
    from safetensors.torch import save_file

    model, _ = load_model("tiny")
    state = model.state_dict()
    assert state["lm_head.weight"].data_ptr() == state["model.embed_tokens.weight"].data_ptr()
    with pytest.raises(RuntimeError, match="share memory"):   # what VLLMPolicy.load_weights did before the mapping
        save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, str(tmp_path / "raw.safetensors"))
    weights = ws.model_weights(model)
    assert "lm_head.weight" not in weights and "model.embed_tokens.weight" in weights
    path = ws.save_weights(weights, tmp_path / "w.safetensors")
    from safetensors.torch import load_file

    back = load_file(str(path))
    assert set(back) == set(state) - {"lm_head.weight"}
    for k, v in back.items():
        assert torch.equal(v, state[k])
    # copies: a later optimizer step on the trainer's model does not reach what was sent
    with torch.no_grad():
        model.model.embed_tokens.weight.add_(1.0)
    assert not torch.equal(weights["model.embed_tokens.weight"], model.model.embed_tokens.weight)


def test_save_weights_takes_a_raw_tied_state_dict(tmp_path):
    model, _ = load_model("tiny")
    ws.save_weights(model.state_dict(), tmp_path / "w.safetensors")      # shared tensors: copied, no RuntimeError


def test_peft_names_map_to_the_base_model_names_and_skip_the_adapters():
    pm, _ = _peft_tiny()
    plain, _ = load_model("tiny")
    weights = ws.model_weights(pm)
    assert set(weights) == set(plain.state_dict()) - {"lm_head.weight"}
    assert not any("base_model" in k or "lora_" in k or "base_layer" in k for k in weights)
    for k, v in plain.state_dict().items():       # no merge: the base weights, untouched by the adapters
        if k != "lm_head.weight":
            assert torch.equal(weights[k], v), k


@pytest.mark.parametrize("role", ["thinker", "solver"])
def test_merged_weights_give_the_adapted_models_logits(role):
    pm, _ = _peft_tiny()
    pm.set_adapter(role)
    want = _logits(pm, IDS)
    fresh, _ = load_model("tiny")
    weights = ws.model_weights(pm, merge=role)
    missing, unexpected = fresh.load_state_dict(weights, strict=False)
    assert missing == ["lm_head.weight"] and not unexpected      # tied: the head is the embedding
    got = _logits(fresh, IDS)
    assert torch.allclose(got, want, atol=1e-5), float((got - want).abs().max())
    base = _logits(load_model("tiny")[0], IDS)
    assert not torch.allclose(base, want, atol=1e-3)            # the adapter changed the model: the test can fail


def test_merge_scaling_is_alpha_over_r_by_hand():
    a = torch.tensor([[1.0, 2.0]])            # r = 1, in = 2
    b = torch.tensor([[3.0], [4.0]])          # out = 2
    state = {"base_model.model.layer.base_layer.weight": torch.zeros(2, 2),
             "base_model.model.layer.lora_A.x.weight": a, "base_model.model.layer.lora_B.x.weight": b,
             "base_model.model.layer.lora_A.y.weight": a * 0, "base_model.model.layer.lora_B.y.weight": b * 0}
    out = ws.engine_weights(state, merge="x", scaling=0.5)
    assert torch.equal(out["layer.weight"], torch.tensor([[1.5, 3.0], [2.0, 4.0]]))
    with pytest.raises(ValueError, match="no lora_A/lora_B tensors of adapter 'z'"):
        ws.engine_weights(state, merge="z")
    with pytest.raises(ValueError, match="cannot map"):
        ws.engine_weights({"base_model.model.emb.lora_embedding_A.x": a})


def test_adapter_folder_loads_back_into_a_fresh_model_with_the_same_logits(tmp_path):
    from peft import PeftModel

    pm, _ = _peft_tiny()
    for role in ("thinker", "solver"):
        pm.set_adapter(role)
        want = _logits(pm, IDS)
        folder = ws.write_adapter(pm, role, tmp_path / role)
        assert sorted(p.name for p in folder.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
        config = json.loads((folder / "adapter_config.json").read_text())
        assert config["r"] == 4 and sorted(config["target_modules"]) == sorted(
            ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        fresh, _ = load_model("tiny")
        loaded = PeftModel.from_pretrained(fresh, str(folder)).eval()
        got = _logits(loaded, IDS)
        assert torch.allclose(got, want, atol=1e-5), float((got - want).abs().max())
    with pytest.raises(ValueError, match="not an adapter"):
        ws.write_adapter(pm, "voter", tmp_path / "voter")


def test_adapter_versions_get_new_ids_and_keep_staleness_plus_one_folders(tmp_path):
    pm, _ = _peft_tiny()
    versions = ws.AdapterVersions(tmp_path, staleness=1)
    seen = []
    for v in range(3):
        for role in ("thinker", "solver"):
            name, lora_id, folder = versions.publish(pm, role, role, v)
            assert name == f"{role}@v{v}" and folder.is_dir()
            seen.append(lora_id)
    assert seen == [1, 2, 3, 4, 5, 6]          # a new lora_int_id per (role, version), never 0
    assert sorted(p.name for p in (tmp_path / "thinker").iterdir()) == ["v1", "v2"]
    assert versions.current("solver")[:2] == ("solver@v2", 6)
    assert ws.max_loras(2, staleness=1) == 4 and ws.max_loras(3) == 3
    with pytest.raises(ValueError):
        ws.max_loras(0)
