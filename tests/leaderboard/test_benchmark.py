"""``benchmark-credit --device/--dtype/--backend``: every run's TrainConfig gets them, on the suite's tiers and on a
classic protocol, and the gpu tier refuses to start without CUDA instead of training on the CPU (issue 44, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import baselines.train
from leaderboard.__main__ import main
from leaderboard.benchmark import benchmark_credit

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


class _Stop(Exception):
    pass


@pytest.fixture
def trained(monkeypatch):
    """The TrainConfigs the trainer is called with; the first call stops the benchmark (nothing trains)."""
    seen = []

    def fake_train(cfg):
        seen.append(cfg)
        raise _Stop

    monkeypatch.setattr(baselines.train, "train", fake_train)
    return seen


@no_cuda
def test_the_gpu_tier_is_refused_without_cuda_and_nothing_trains(tmp_path, capsys, trained):
    out = tmp_path / "out"
    assert main(["benchmark-credit", "broadcast", "--tier", "gpu", "--model", "tiny", "--baselines", "", "--out",
                 str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--tier gpu --device cuda: no CUDA device is available here" in err
    assert not trained and not out.exists()


@no_cuda
def test_a_cuda_device_is_refused_on_any_tier_without_cuda(tmp_path, trained):
    with pytest.raises(ValueError, match="--device cuda:0: no CUDA device"):
        benchmark_credit("broadcast", tier="micro", quick=True, baselines=[], out=tmp_path / "out", progress=False,
                         device="cuda:0")
    assert not trained and not (tmp_path / "out").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"dtype": "float16"}, "--dtype must be one of"),
    ({"backend": "sglang"}, "--backend must be one of"),
    ({"backend": "vllm"}, "--backend vllm: the micro tier trains an MLP policy"),
])
def test_placement_the_trainer_would_refuse_is_refused_before_any_run(tmp_path, trained, kwargs, message):
    with pytest.raises(ValueError, match=message):
        benchmark_credit("broadcast", tier="micro", quick=True, baselines=[], out=tmp_path / "out", progress=False,
                         **kwargs)
    assert not trained and not (tmp_path / "out").exists()


def test_a_small_tier_run_trains_with_the_device_dtype_and_backend_given(tmp_path, trained):
    with pytest.raises(_Stop):
        benchmark_credit("broadcast", tier="small", baselines=[], out=tmp_path / "out", progress=False,
                         device="cpu", dtype="bfloat16", backend="vllm")
    cfg = trained[0]
    assert (cfg.device, cfg.dtype, cfg.backend, cfg.model) == ("cpu", "bfloat16", "vllm", "smollm2-135m")


def test_every_planned_suite_run_carries_the_placement(tmp_path, trained):
    from leaderboard.suite import latest_suite, load_suite, plan, train_run

    suite = load_suite(latest_suite("credit-small"))
    placement = {"device": "cpu", "dtype": "bfloat16", "backend": "vllm"}
    specs, _ = plan(suite, ["broadcast"], tmp_path, placement)
    assert specs and all({k: s[k] for k in placement} == placement for s in specs)
    for spec in specs[:3]:
        with pytest.raises(_Stop):
            train_run(spec)
    assert [(c.device, c.dtype, c.backend) for c in trained] == [("cpu", "bfloat16", "vllm")] * 3
    default, _ = plan(suite, ["broadcast"], tmp_path)          # none given: the trainer's defaults
    assert not any(k in s for s in default for k in placement)
    with pytest.raises(ValueError, match=r"placement: \['lr'\]"):
        plan(suite, ["broadcast"], tmp_path, {"lr": "1"})


def test_the_gpu_tier_protocol_takes_tier_gpu_and_trains_on_the_device_given(tmp_path, trained):
    # gpu_check's smoke command names its cut of credit-gpu with --protocol beside --tier gpu: the tiers agree
    from leaderboard.protocol import PROTOCOL_DIR

    proto = json.loads((PROTOCOL_DIR / "credit-gpu.json").read_text())
    proto.update(id="credit-gpu-test")
    proto["train"].update(steps=1, tasks_per_step=1, group_size=2, seeds=[0])
    path = tmp_path / "credit-gpu-test.json"
    path.write_text(json.dumps(proto))
    with pytest.raises(_Stop):
        benchmark_credit("broadcast", tier="gpu", protocol=str(path), model="tiny", baselines=[],
                         out=tmp_path / "out", progress=False, device="cpu", dtype="bfloat16")
    assert (trained[0].device, trained[0].dtype, trained[0].model) == ("cpu", "bfloat16", "tiny")
    with pytest.raises(ValueError, match=r"--tier micro, and the protocol's tier is gpu"):
        benchmark_credit("broadcast", tier="micro", protocol=str(path), model="tiny", baselines=[],
                         out=tmp_path / "out2", progress=False)


def test_a_complete_run_trained_elsewhere_is_trained_again_not_reused(tmp_path):
    from tests.leaderboard.suite.helpers import tiny

    from leaderboard.suite import complete_run, parse_suite, plan, train_run

    spec = plan(parse_suite(tiny(steps=1, seeds=(0,))), ["broadcast"], tmp_path)[0][0]
    run = Path(train_run(spec))
    assert complete_run(run, 1) and complete_run(run, 1, spec) and complete_run(run, 1, {**spec, "device": "cpu"})
    assert json.loads((run / "config.json").read_text())["dtype"] == "float32"
    other = {**spec, "dtype": "bfloat16"}
    assert not complete_run(run, 1, other)          # its result would be another placement's
    train_run(other)
    assert complete_run(run, 1, other) and json.loads((run / "config.json").read_text())["dtype"] == "bfloat16"
