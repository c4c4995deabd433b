"""Trainer runs for the tests: the CLI in a subprocess, its metrics file, and a run killed with SIGKILL after a
known step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from baselines.train import TrainConfig, train

ROOT = Path(__file__).resolve().parents[3]


def _run(tmp_path: Path, *args: str, name="run") -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "baselines.train", "--out", str(tmp_path / name), "--no-progress", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _one_and_two_processes(tmp_path: Path, *args: str) -> tuple[list[dict], list[dict]]:
    """The trainer with ``args`` in one process (``tmp_path / "one"``) and data parallel under ``accelerate launch``
    in two CPU processes (``tmp_path / "two"``); asserts both exit 0 and returns their metrics rows. Skips where
    ``accelerate`` is not installed."""
    pytest.importorskip("accelerate")
    one = _run(tmp_path, *args, name="one")
    assert one.returncode == 0, one.stderr
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--cpu", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "baselines.train",
           "--out", str(tmp_path / "two"), "--no-progress", *args]
    two = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    return _metrics(tmp_path / "one" / "metrics.jsonl"), _metrics(tmp_path / "two" / "metrics.jsonl")


def _metrics(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _comparable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


MLP_ARGS = ["--env", "voting-v0", "--action-mode", "discrete", "--credit", "loo", "--model", "mlp",
            "--tasks-per-step", "4", "--group-size", "2"]


# The trainer's CLI in a process whose rollouts after the first N never return, so that a test can kill it from
# outside at a known point: after step N's metrics line, before anything of step N + 1 is written.
STALLED_TRAINER = """
import sys, threading
from baselines.train import __main__ as cli, loop
stall_after, rollouts, run = int(sys.argv.pop(1)), [], loop.RolloutEngine.run
def stalled(self, *args, **kwargs):
    rollouts.append(1)
    if len(rollouts) > stall_after:
        threading.Event().wait()
    return run(self, *args, **kwargs)
loop.RolloutEngine.run = stalled
sys.exit(cli.main(sys.argv[1:]))
"""


def _kill_after_step(tmp_path: Path, step: int, *args: str, name: str) -> subprocess.Popen:
    """Start the trainer, wait until it has written ``step`` metrics lines, then SIGKILL it."""
    cmd = [sys.executable, "-c", STALLED_TRAINER, str(step), "--out", str(tmp_path / name), "--no-progress", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    metrics, deadline = tmp_path / name / "metrics.jsonl", time.monotonic() + 600
    while not (metrics.exists() and metrics.read_text().count("\n") >= step):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, f"no metrics line of step {step} within 600 s"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stderr.close()
    return proc


def _kuhn_one_step(out: Path, **changes) -> TrainConfig:
    """The smallest MLP run: one step of 2 tasks x 2 samples on Kuhn poker into ``out``, without a progress bar or
    TensorBoard; ``changes`` override fields."""
    return TrainConfig(**{**dict(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2,
                                 out=str(out), progress=False, tensorboard=False), **changes})


def _train_on_one_thread(cfg: TrainConfig) -> None:
    """``train(cfg)`` with torch on one thread (the runs' figures were measured so), the thread count restored."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        train(cfg)
    finally:
        torch.set_num_threads(threads)
