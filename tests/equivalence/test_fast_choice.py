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


def test_mlp_choice_index_is_numpys_cdf_lookup_for_every_length():
    # MLPPolicy samples with _choice_index on Python floats; it must be the index NumPy's own arithmetic gives
    # (exp -> p / p.sum() -> cumsum -> / last -> searchsorted right), which is default_rng(key).choice's draw.
    from baselines.policies.mlp import _choice_index

    rng = np.random.default_rng(11)
    for n in range(20000):
        k = 1 + n % 12
        logits = rng.normal(size=k) * rng.uniform(0.1, 30)
        logp = logits - np.log(np.sum(np.exp(logits - logits.max()))) - logits.max()
        logp[rng.random(k) < 0.1] = -1e9 if n % 7 == 0 else -800.0   # underflowing weights too
        p = np.exp(logp)
        u = float(rng.random()) if n % 50 or p.sum() == 0 else float(np.cumsum(p / p.sum())[k // 2])  # on a boundary
        with np.errstate(invalid="ignore"):     # every weight underflowed: NumPy's nan arithmetic, on both sides
            cdf = np.cumsum(p / p.sum())
            cdf /= cdf[-1]
            assert _choice_index(p.tolist(), u) == int(np.searchsorted(cdf, u, side="right")), (p.tolist(), u)


def test_mlp_batched_choice_indices_equal_choice_index_row_by_row():
    # MLPPolicy draws a tick's actions with _choice_indices (NumPy over all rows of one length at once, or the per-row
    # loop for small batches); every index must be _choice_index's, row by row: on batches of one row length and of
    # mixed lengths, above and below the batch size where NumPy takes over, with underflowed and all-zero rows and
    # uniforms that fall exactly on a cdf entry.
    from baselines.policies.mlp import _ROWS_IN_NUMPY, _choice_index, _choice_indices

    rng = np.random.default_rng(5)
    sizes = [1, 2, _ROWS_IN_NUMPY - 1, _ROWS_IN_NUMPY, 64, 70]
    for trial in range(600):
        m = sizes[trial % len(sizes)]
        same = trial % 2 == 0
        counts = [1 + trial % 12 if same else int(1 + rng.integers(12)) for _ in range(m)]
        rows, us = [], []
        for n, k in enumerate(counts):
            logits = rng.normal(size=k) * rng.uniform(0.1, 30)
            logp = logits - np.log(np.sum(np.exp(logits - logits.max()))) - logits.max()
            logp[rng.random(k) < 0.1] = -1e9 if n % 7 == 0 else -800.0
            if trial % 13 == 0 and n % 5 == 0:
                logp[:] = -1e9                                 # every weight underflows: NaN arithmetic
            p = np.exp(logp)
            u = float(rng.random()) if n % 5 or p.sum() == 0 else float(np.cumsum(p / p.sum())[k // 2])
            rows.append(p)
            us.append(u)
        with np.errstate(invalid="ignore"):
            want = [_choice_index(r.tolist(), u) for r, u in zip(rows, us)]
            got = _choice_indices(np.concatenate(rows), counts, us)
        assert got == want, (trial, counts)
