"""Checkpoints are data, never code: safetensors + JSON, exact round trips, pickles refused."""

from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest
import torch

from baselines.train import TrainConfig, checkpoint, train


class _Payload:
    """Unpickling this writes a marker file: proof that code ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _crafted_pickle_checkpoint(folder, marker):
    step = folder / "step-0000001"
    step.mkdir(parents=True)
    (step / "meta.json").write_text(json.dumps({"step": 1, "config_hash": "x", "credit": {}}))
    (step / "state.pt").write_bytes(pickle.dumps({"learners": [_Payload(str(marker))]}))
    (folder / "latest").write_text(step.name)
    return step


def test_a_crafted_pickle_checkpoint_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    step = _crafted_pickle_checkpoint(tmp_path / "checkpoints", marker)
    with pytest.raises(checkpoint.CheckpointError, match="state.pt, a pickle"):
        checkpoint.load(step)
    with pytest.raises(checkpoint.CheckpointError, match="a pickle"):
        checkpoint.latest(tmp_path / "checkpoints")
    assert not marker.exists()


def test_the_checkpoint_player_refuses_a_pickle_and_nothing_runs(tmp_path):
    from leaderboard.players import load_player

    marker = tmp_path / "pwned"
    run = tmp_path / "run"
    _crafted_pickle_checkpoint(run / "checkpoints", marker)
    cfg = TrainConfig(env="kuhn_poker-v0", action_mode="discrete", model="mlp", credit="none", steps=1)
    (run / "config.json").write_text(json.dumps(cfg.to_dict()))
    with pytest.raises(ValueError, match="a pickle"):
        load_player(f"checkpoint:{run}", "kuhn_poker-v0", ["player"], "discrete")
    assert not marker.exists()


def test_a_pickle_renamed_to_safetensors_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    step = tmp_path / "step-0000001"
    step.mkdir()
    (step / "meta.json").write_text("{}")
    (step / "state.json").write_text("{}")
    (step / "state.safetensors").write_bytes(pickle.dumps(_Payload(str(marker))))
    with pytest.raises(checkpoint.CheckpointError, match="not a safetensors file"):
        checkpoint.load(step)
    assert not marker.exists()


def test_weights_optimizer_and_rng_states_round_trip_exactly(tmp_path):
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    random.random(), np.random.rand(), torch.rand(1)
    state = {"learners": [{"model": model.state_dict(), "optimizer": opt.state_dict()}],
             "rng": checkpoint.rng_state(), "half": torch.ones(2, dtype=torch.bfloat16) / 3}
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    path = checkpoint.save(tmp_path, 1, {"step": 1, "config_hash": "0" * 12, "credit": {}}, state)
    assert sorted(p.name for p in path.iterdir()) == ["meta.json", "state.json", "state.safetensors"]
    _, back = checkpoint.load(path)
    for k, v in model.state_dict().items():
        assert torch.equal(back["learners"][0]["model"][k], v)
    assert back["half"].dtype == torch.bfloat16 and torch.equal(back["half"], state["half"])
    opt2 = torch.optim.AdamW(torch.nn.Linear(3, 2).parameters(), lr=1e-3)
    opt2.load_state_dict(back["learners"][0]["optimizer"])
    a, b = opt.state_dict(), opt2.state_dict()
    assert a["param_groups"] == b["param_groups"]
    for i in a["state"]:
        for k in a["state"][i]:
            assert torch.equal(a["state"][i][k], b["state"][i][k])
    checkpoint.set_rng_state(back["rng"])
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected


def _mlp_run(out, seed=0, steps=2):
    cfg = TrainConfig(env="kuhn_poker-v0", action_mode="discrete", model="mlp", credit="broadcast", steps=steps,
                      tasks_per_step=4, group_size=2, seed=seed, out=str(out), progress=False)
    train(cfg)
    _, tensors = checkpoint.load(checkpoint.latest(out / "checkpoints"))
    return tensors["learners"]


def test_the_mlp_trainer_is_deterministic(tmp_path):
    a, b = _mlp_run(tmp_path / "a"), _mlp_run(tmp_path / "b")
    c = _mlp_run(tmp_path / "c", seed=1)
    for x, y, z in zip(a, b, c):
        assert all(torch.equal(x["model"][k], y["model"][k]) for k in x["model"])
        assert not all(torch.equal(x["model"][k], z["model"][k]) for k in x["model"])


def _edit_json(path, change):
    value = json.loads(path.read_text())
    path.write_text(json.dumps(change(value)))


@pytest.mark.parametrize("file, change, message", [
    ("meta.json", lambda m: [m], r"meta.json: damaged \(a trainer checkpoint's meta is"),
    ("meta.json", lambda m: {**m, "step": "2"}, r"meta.json: damaged"),
    ("meta.json", lambda m: {k: v for k, v in m.items() if k != "config_hash"}, r"meta.json: damaged"),
    ("meta.json", lambda m: {**m, "credit": []}, r"meta.json: damaged"),
    ("state.json", lambda s: {"learners": "x", "rng": s["rng"]}, r"state.json: damaged \(a trainer checkpoint's state"),
    ("state.json", lambda s: {"learners": s["learners"]}, r"state.json: damaged"),
    ("state.json", lambda s: {**s, "learners": [{**s["learners"][0], "model": [1]}]}, r"state.json: damaged"),
    ("state.json", lambda s: {**s, "learners": s["learners"] * 2},
     r"--resume: .* holds 2 learners, the config builds 1"),
    ("state.json", lambda s: {**s, "rng": {**s["rng"], "python": {"__items__": [[1, 2, 3]]}}},
     r"state.json: damaged \(ValueError: too many values to unpack"),
])
def test_a_checkpoint_damaged_from_outside_is_a_clear_error_on_resume(tmp_path, file, change, message):
    # each used to end --resume in a TypeError or KeyError traceback from inside the trainer (or, for two learners,
    # to resume with the first and drop the other)
    _mlp_run(tmp_path / "run")
    step = checkpoint.latest(tmp_path / "run" / "checkpoints")
    _edit_json(step / file, change)
    cfg = TrainConfig(env="kuhn_poker-v0", action_mode="discrete", model="mlp", credit="broadcast", steps=3,
                      tasks_per_step=4, group_size=2, seed=0, out=str(tmp_path / "run"), progress=False, resume=True)
    metrics = (tmp_path / "run" / "metrics.jsonl").read_text()
    with pytest.raises(ValueError, match=message):
        train(cfg)
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == metrics


def test_weights_of_another_shape_are_a_clear_error_on_resume(tmp_path):
    from safetensors.torch import load_file, save_file

    _mlp_run(tmp_path / "run")
    step = checkpoint.latest(tmp_path / "run" / "checkpoints")
    flat = load_file(str(step / "state.safetensors"))
    name = json.loads((step / "state.json").read_text())["learners"][0]["model"]["net.0.weight"]["__tensor__"]
    flat[name] = flat[name][:, :3].contiguous()
    save_file(flat, str(step / "state.safetensors"))
    cfg = TrainConfig(env="kuhn_poker-v0", action_mode="discrete", model="mlp", credit="broadcast", steps=3,
                      tasks_per_step=4, group_size=2, seed=0, out=str(tmp_path / "run"), progress=False, resume=True)
    with pytest.raises(ValueError, match=r"(?s)--resume: .* does not fit this run's models, optimizers or RNGs "
                                         r"\(RuntimeError: .*size mismatch for net.0.weight"):
        train(cfg)
