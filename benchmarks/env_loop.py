"""Issue 17's env-only loop, the anchor the micro-tier benchmarks measure training against (``train_throughput.py``
times it, ``instruction_counts.py`` and ``env_instructions.py`` count its instructions): one env, ``reset(seed)`` per
episode, ``env.last()`` every step (with ``text=False`` unless the text is asked for), a uniformly random legal index
from the mask (``np.flatnonzero`` and ``rng.randrange``), ``step``; dead agents step ``None``.

It only calls the env's API, so it runs against any checkout of the project (the scripts put the checkout they
measure first on ``sys.path``); ``text=True`` calls a plain ``env.last()``, which code from before ``text=False``
also has."""

from __future__ import annotations

import random
from typing import Iterable

import numpy as np

# Where the env-only loops take their seeds, one 32-bit word each (as the seeds 0, 1, ... are, so NumPy's
# seeding costs the same), and none of them a seed that a training run resets: with base seed 0 those are 0, 1, 2,
# ... below 2**24 (``baselines.rollout.training_seeds``). A benchmark that trains and then runs the loop in one
# process would otherwise replay the trained seeds, and code that keeps per-seed state (59a5cf1's table of
# generator states, which was module-wide) was measured partly on repeats.
COUNTED_SEEDS = 2**31            # instruction_counts' counted loop; train_throughput's rows, one after another
WARMUP_SEEDS = 2**31 + 2**30     # instruction_counts' warm-up


def play_random(env, seeds: Iterable[int], rng: random.Random, text: bool = False) -> int:
    """Play one episode per seed; returns the moves of live agents (dead steps not counted)."""
    last = env.last if text else (lambda: env.last(text=False))
    moves = 0
    for seed in seeds:
        env.reset(seed=seed)
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.randrange(len(legal))]))
            moves += 1
    return moves
