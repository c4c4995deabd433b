"""Shared test helpers: the env list, and recorded random play."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from marl_llm_envs import list_envs, make

# Under pytest-xdist (`-n N`) each of the N workers would start one torch thread per core; one each keeps the workers
# from oversubscribing the cores (measured on 2 cores: tests/baselines/policies/test_hf.py with -n 2 took 121 s,
# 43 s with this).
# Set before any test module imports torch; an OMP_NUM_THREADS already set is kept.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# The suite's anchors and run receipts are cached outside --out (leaderboard/suite/cache.py): tests keep theirs in a
# folder of this run's own, never in the user's ~/.cache, and never reuse one from an earlier run.
if not os.environ.get("MARL_LLM_CACHE"):
    os.environ["MARL_LLM_CACHE"] = tempfile.mkdtemp(prefix="marl-llm-test-cache-")
# The same float32 matrix products on every x86 CPU: tests that compare torch's floats with recorded values
# (tests/equivalence/test_speed_same_results.py) pass on AVX-512 and AVX2 hosts alike, also those that never build an
# MLP policy before their first product. Asked before any test runs one (importing torch runs none), and imported after
# OMP_NUM_THREADS is set (it imports torch).
from baselines.policies.mlp import same_floats_on_every_cpu  # noqa: E402

same_floats_on_every_cpu()

ENV_IDS = list_envs()
MODES = ("text", "discrete")
ENV_MODES = [pytest.param(e, m, id=f"{e}-{m}") for e in ENV_IDS for m in MODES]


def record_episode(env, seed, rng, junk=0.0, junk_pool=("", "[nonsense]", "\\boxed{", 3.5, None, "[fold]x")):
    """Reset ``env`` with ``seed`` and play random legal moves (with probability ``junk`` a junk action instead).

    Returns (trace, actions): trace = per step (agent, text, vector, mask, reward, terminated); actions = step inputs.
    """
    from marl_llm_envs.scripted import random_legal

    env.reset(seed=seed)
    trace, actions = [], []
    for agent in env.agent_iter(max_iter=5000):
        obs, reward, terminated, truncated, _ = env.last()
        trace.append((agent, obs["text"], obs["observation"].tolist(),
                      obs.get("action_mask", np.zeros(0)).tolist(), float(reward), terminated))
        if terminated or truncated:
            action = None
        elif rng.random() < junk:
            action = junk_pool[int(rng.integers(len(junk_pool)))]
        else:
            action = random_legal(env, agent, rng)
        actions.append(action)
        env.step(action)
    return trace, actions


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def fresh(env_id, mode, **kwargs):
    return make(env_id, action_mode=mode, **kwargs)


def docstring_block(module, heading: str) -> str:
    """The literal block (``::`` then an indented block) that follows ``heading`` in ``module``'s docstring, dedented
    by four spaces: the exact prompt an env's manual shows, which tests compare with ``observe()``."""
    doc = module.__doc__
    block = doc[doc.index(heading):].split("::\n\n", 1)[1]
    lines = []
    for line in block.split("\n"):
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines).strip("\n")
