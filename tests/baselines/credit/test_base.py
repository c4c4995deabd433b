"""The credit interface (baselines/credit/base.py and the package): the registry, user classes, the
package's quoted example, grouping by group key, GRPO's normalization helpers, and clear errors on bad input for
every method."""

from __future__ import annotations

import itertools
import json
import math
import random

import numpy as np
import pytest

from baselines.credit import CreditMethod, list_credits, make_credit
from baselines.credit.base import normalize, normalize_many
from baselines.episode import Branch
from tests.baselines.credit.helpers import approx, think_solve
from tests.float_rows import hard_float_rows


def test_list_credits_lists_the_built_in_methods():
    assert {"broadcast", "rae", "marshal", "coma", "loo", "ccpo_v1", "ccpo_v2", "dr_mas"} <= set(list_credits())


def test_unknown_method_and_option_name_what_exists():
    with pytest.raises(ValueError, match="registered: broadcast"):
        make_credit("grpo")
    with pytest.raises(ValueError, match=r"rae has no option 'decayy'; its options: decay=0.95, update='episode'"):
        make_credit("rae", decayy=0.9)
    with pytest.raises(ValueError, match="decay must be in"):
        make_credit("rae", decay=1.5)
    with pytest.raises(ValueError, match="std="):
        make_credit("broadcast", std="bessel")


def test_make_credit_loads_a_user_class(tmp_path, monkeypatch):
    (tmp_path / "my_credit.py").write_text(
        "from baselines.credit import CreditMethod\n"
        "class ConstantCredit(CreditMethod):\n"
        "    def __init__(self, value=2.0):\n"
        "        self.value = value\n"
        "    def advantages(self, episodes):\n"
        "        return [[self.value] * len(e.turns) for e in episodes]\n"
        "class NotAMethod:\n"
        "    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    method = make_credit("my_credit:ConstantCredit", value=3.0)
    assert method.advantages([think_solve(0, 1.0)]) == [[3.0, 3.0]]
    with pytest.raises(ValueError, match="no option 'valu'"):
        make_credit("my_credit:ConstantCredit", valu=1)
    with pytest.raises(ValueError, match="not a subclass"):
        make_credit("my_credit:NotAMethod")
    with pytest.raises(ValueError, match="has no 'Missing'"):
        make_credit("my_credit:Missing")
    with pytest.raises(ValueError, match="cannot import"):
        make_credit("no_such_module_xyz:Foo")


def test_package_docstring_example_is_the_dr_mas_source():
    import inspect
    import textwrap

    import baselines.credit as credit
    from baselines.credit.dr_mas import DrMAS

    source = inspect.getsource(DrMAS)
    assert textwrap.indent(source, "    ").rstrip() in credit.__doc__
    assert len(source.splitlines()) <= 60


def test_groups_are_formed_by_group_key_not_by_list_order():
    a = [think_solve(0, r, sample=j) for j, r in enumerate([1.0, 0.0, 0.0, 1.0])]
    b = [think_solve(1, r, sample=j) for j, r in enumerate([1.0, 1.0, 1.0, 0.0])]
    c = [think_solve(0, r, sample=j) for j, r in enumerate([0.0, 0.0])]   # same group_id, another run
    for e in c:
        e.run_id = "other"
    batch = a + b + c
    order = list(range(len(batch)))
    random.Random(0).shuffle(order)
    shuffled = [batch[i] for i in order]
    adv = make_credit("broadcast").advantages(shuffled)
    by_episode = {order[n]: adv[n][0] for n in range(len(batch))}
    expected = [1, -1, -1, 1, 0.57735, 0.57735, 0.57735, -1.732051, 0.0, 0.0]  # B: mean 0.75, std 0.4330127
    assert [by_episode[i] for i in range(len(batch))] == approx(expected)


def test_normalize_helper_matches_the_formula():
    assert normalize([2.0, 4.0], "population") == approx([-1.0, 1.0])
    assert normalize([2.0, 4.0], "sample") == approx([-0.707107, 0.707107])
    assert normalize([3.0, 3.0, 3.0], "population") == [0.0, 0.0, 0.0]
    # MaxRL: (x - mean) / mean; one success in four: the success gets 3, each failure -1 (1/K - 1/G, times G)
    assert normalize([1.0, 0.0, 0.0, 0.0], "mean") == approx([3.0, -1.0, -1.0, -1.0])
    assert normalize([2.0, 4.0], "mean") == approx([-1 / 3, 1 / 3])
    assert normalize([0.0, 0.0, 0.0], "mean") == [0.0, 0.0, 0.0]      # no success: no signal
    with pytest.raises(ValueError, match="returns >= 0"):
        normalize([1.0, -1.0], "mean")
    with pytest.raises(ValueError, match="returns >= 0"):
        normalize_many([[1.0, 0.0], [0.5, -0.5]], "mean")


def test_maxrl_scaling_estimates_the_gradient_of_log_success_truncated_at_order_g_minus_1():
    # every G-tuple of moves of a 3-move softmax, enumerated: E[(1/G) sum_i A_i grad_z log pi(a_i)] must equal
    # (1 - (1 - p)^(G-1)) grad_z log p with p = pi(target): the gradient of -sum_{k<G} (1-p)^k / k (MaxRL's objective
    # truncated at G - 1; the 1/K-over-successes estimator with its control variate and 0 for a group without one)
    pi, target, g = np.array([0.6, 0.3, 0.1]), 2, 3
    expected = np.zeros(3)
    for moves in itertools.product(range(3), repeat=g):
        prob = float(np.prod(pi[list(moves)]))
        adv = normalize([float(m == target) for m in moves], "mean")
        expected += prob * sum(a * (np.eye(3)[m] - pi) for a, m in zip(adv, moves)) / g
    p = pi[target]
    assert expected == approx((1 - (1 - p) ** (g - 1)) * (np.eye(3)[target] - pi))


def _bits(rows):
    return [np.asarray(r, dtype=np.float64).tobytes() for r in rows]


@pytest.mark.parametrize("std", ["population", "sample", "mean", None])
def test_normalize_many_gives_normalize_of_each_row_bit_for_bit(std):
    # broadcast's advantages come from normalize_many (one NumPy call per group size); a run's results must be the
    # same floats as normalize() row by row, signed zeros, huge and tiny values, long rows (pairwise sums) included
    rows = hard_float_rows(11, 600, min_size=0)
    if std == "mean":                                  # MaxRL's scaling takes returns >= 0 only
        rows = [[abs(v) for v in row] for row in rows]
    got = normalize_many(rows, std, 1e-6)
    assert _bits(got) == _bits(normalize(r, std, 1e-6) for r in rows)
    assert normalize_many([], std) == []


@pytest.mark.parametrize("name", ["broadcast", "none", "rae", "marshal", "coma", "loo", "ccpo_v1", "ccpo_v2",
                                  "dr_mas"])
def test_bad_batches_fail_naming_the_episode(name):
    method = make_credit(name)
    empty = think_solve(3, 1.0, solo=0.0)
    empty.turns = []
    with pytest.raises(ValueError, match=r"episode 1 \(think_solve-v0, seed 3, group r/3, sample 0\) has no turns"):
        method.advantages([think_solve(0, 1.0, solo=0.0), empty])
    nan = think_solve(4, 1.0, solo=0.0)
    nan.rewards["solver"] = float("nan")
    with pytest.raises(ValueError, match=r"reward of solver in episode 0 .* not a finite number"):
        method.advantages([nan])
    nan.rewards["solver"] = "nan"   # what a JSONL file holds for a non-finite float
    with pytest.raises(ValueError, match="not a finite number"):
        method.advantages([nan])
    with pytest.raises(TypeError, match="list of Episodes"):
        method.advantages(think_solve(0, 1.0))


@pytest.mark.parametrize("name,hint", [("ccpo_v1", "ablate:thinker"), ("ccpo_v2", "ablate:thinker"),
                                       ("loo", "ablate:thinker")])
def test_a_missing_branch_is_an_error_not_a_zero(name, hint):
    with pytest.raises(ValueError, match=rf"episode 0 .* has no ablate branch at turn 0 .*--branches {hint}"):
        make_credit(name).advantages([think_solve(0, 1.0)])


def test_nan_in_a_branch_outcome_is_an_error():
    with pytest.raises(ValueError, match="team reward of team in the ablate branch of thinker"):
        make_credit("ccpo_v2").advantages([think_solve(0, 1.0, solo=math.nan)])


def test_every_method_is_a_credit_method_and_returns_one_value_per_turn():
    es = [think_solve(0, r, sample=j, solo=s, branches=[
        Branch("ablate", "solver", 1, team_rewards={"team": 0.0}),
        *[Branch("resample", a, k, 0, team_rewards={"team": 1.0}) for k, a in enumerate(["thinker", "solver"])]])
        for j, (r, s) in enumerate([(1.0, 0.0), (0.0, 1.0)])]
    for name in list_credits():
        method = make_credit(name)
        assert isinstance(method, CreditMethod)
        for e in es:                 # a learned critic (mappo, ippo) reads the state the rollout records for it
            for t in e.turns:
                t.state = [0.5, -0.5] if method.needs_state else None
        adv = method.advantages(es)
        assert [len(a) for a in adv] == [len(e.turns) for e in es], name
        assert all(np.isfinite(np.concatenate([np.ravel(x) for x in row])).all() for row in adv), name
        assert isinstance(method.update(es), dict), name       # the trainer's hook (a no-op without a critic)
        json.dumps(method.state_dict())
