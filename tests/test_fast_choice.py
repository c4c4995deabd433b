"""marl_llm_envs.fast_rng's scalar choices make NumPy's own ``Generator.choice`` draw: the task sources draw their
problems with them, and a different draw (or a generator left in another state) would change every seeded episode."""

from __future__ import annotations

import numpy as np

from marl_llm_envs.fast_rng import choice_cdf, uniform_choice, weighted_choice


def test_weighted_and_uniform_choice_draw_what_numpys_choice_draws_and_leave_the_same_state():
    ops = ("+", "-", "*")
    tables = [[0.38, 0.38, 0.24], [0.4, 0.3, 0.3], [0.3, 0.15, 0.2, 0.15, 0.1, 0.1], [1.0], [0.5, 0.0, 0.5]]
    for seed in range(400):
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        for k in range(30):
            kind = (seed * 7 + k) % 5        # interleaved with other draws (integers shares a 32-bit buffer)
            if kind == 0:
                p = tables[(seed + k) % len(tables)]
                items = list(range(len(p)))
                assert weighted_choice(ours, items, choice_cdf(p)) == int(numpys.choice(items, p=p))
            elif kind == 1:
                assert weighted_choice(ours, ops, choice_cdf([0.38, 0.38, 0.24])) == str(
                    numpys.choice(list(ops), p=[0.38, 0.38, 0.24]))
            elif kind == 2:
                assert uniform_choice(ours, (-1, 1)) == int(numpys.choice([-1, 1]))
            elif kind == 3:
                n = 1 + (seed + k) % 9
                assert uniform_choice(ours, list(range(n))) == int(numpys.choice(list(range(n))))
            else:
                assert int(ours.integers(1, 21)) == int(numpys.integers(1, 21))
        assert ours.bit_generator.state == numpys.bit_generator.state, seed
