"""benchmarks/credit_switch.py (the campaign's first-update probe): one method's advantages for the first update(s),
another's after, checkpointed across the switch; and, in a tiny campaign, a probe run's first update is the first
method's own run's first update, bit for bit."""

from __future__ import annotations

import json

import pytest

from baselines.credit import make_credit
from baselines.rollout import BranchSpec
from tests.baselines.credit.helpers import approx, think_solve
from tests.benchmark_scripts import load

team = load("llm_team")
SWITCH = team.SWITCH       # the class path the campaign's probe labels train with


def _batch():
    g0 = [think_solve(0, j, sample=n, solo=s) for n, (j, s) in enumerate([(1, 0), (1, 0), (0, 0), (0, 1)])]
    g1 = [think_solve(1, j, sample=n, solo=s) for n, (j, s) in enumerate([(0, 1), (1, 1)])]
    return g0 + g1


def test_the_first_update_takes_the_first_method_and_every_later_one_the_other():
    probe = make_credit(SWITCH, first="broadcast", first_options={"std": "mean"}, then="ccpo_v2", steps=1)
    batch = _batch()
    # broadcast-maxrl, (R - mean) / mean per group: g0 R = [1, 1, 0, 0], mean 0.5 -> [1, 1, -1, -1]; g1 R = [0, 1]
    # -> [-1, 1]; both turns of an episode get its value.
    first = probe.advantages(batch)
    assert first == [[approx(a), approx(a)] for a in (1, 1, -1, -1, -1, 1)]
    assert probe.diagnostics(batch)["first_then/first"] == 1.0
    # then ccpo_v2's event bonus (tests/baselines/credit/test_ccpo.py works these numbers out by hand)
    later = probe.advantages(batch)
    assert later == [[approx(1.1), 1.0], [approx(1.1), 1.0], [approx(-1.1), -1.0], [approx(-1.1), -1.0],
                     [approx(-1.1), -1.0], [approx(1.1), 1.0]]
    diag = probe.diagnostics(batch)
    assert diag["first_then/first"] == 0.0 and diag["help_rate"] == approx(2 / 6)   # ccpo_v2's own diagnostics
    assert probe.advantages(batch) == later          # and it stays with ccpo_v2
    never = make_credit(SWITCH, first="broadcast", then="ccpo_v2", steps=0)
    assert never.advantages(batch) == make_credit("ccpo_v2").advantages(batch)


def test_a_resumed_run_continues_on_the_right_side_of_the_switch():
    batch = _batch()
    options = {"first": "ccpo_v2", "then": "broadcast", "then_options": {"std": "mean"}, "steps": 2}
    probe = make_credit(SWITCH, **options)
    probe.advantages(batch)
    saved = json.loads(json.dumps(probe.state_dict()))     # a checkpoint's meta.json holds it as JSON
    assert saved["calls"] == 1
    resumed = make_credit(SWITCH, **options)
    resumed.load_state_dict(saved)
    assert resumed.advantages(batch) == make_credit("ccpo_v2").advantages(batch)       # the second of two: first's
    assert resumed.advantages(batch) == make_credit("broadcast", std="mean").advantages(batch)
    for bad in ({"calls": -1, "first": {}, "then": {}}, {"calls": 1}, {"calls": True, "first": {}, "then": {}}, []):
        with pytest.raises(ValueError, match="FirstThen state is"):
            make_credit(SWITCH, **options).load_state_dict(bad)


def test_the_rollout_plays_the_branches_of_both_methods_then_s_first():
    ablate = BranchSpec("ablate", "thinker")
    assert make_credit(SWITCH, first="broadcast", then="ccpo_v2").branches("think_solve-v0") == [ablate]
    assert make_credit(SWITCH, first="ccpo_v2", then="broadcast").branches("think_solve-v0") == [ablate]
    both = make_credit(SWITCH, first="ccpo_v2", then="coma").branches("think_solve-v0")
    assert both == make_credit("coma").branches("think_solve-v0") + [ablate]


@pytest.mark.parametrize("options, match", [
    ({"steps": -1}, "an int >= 0"), ({"steps": True}, "an int >= 0"), ({"steps": 1.0}, "an int >= 0"),
    ({"first_options": "std=mean"}, "first_options is a JSON object"),
    ({"first": "mappo"}, "learns a critic"), ({"then": "nope"}, "unknown credit method 'nope'"),
    ({"first": "broadcast", "first_options": {"sd": 1}}, "has no option 'sd'"),
    ({"first": "marshal", "first_options": {"variant": "roll"}}, "different shapes"),
])
def test_bad_options_are_clear_errors(options, match):
    with pytest.raises(ValueError, match=match):
        make_credit(SWITCH, **options)


def test_a_probe_run_s_first_update_is_the_first_method_s_own_bit_for_bit(tmp_path):
    probe = "first-bmaxrl-then-ccpo_v2"
    args = ["--model", "tiny", "--hint-required", "--solver-steps", "1", "--steps", "2", "--eval-every", "1",
            "--eval-episodes", "2", "--tasks", "2", "--group", "4", "--methods", f"broadcast-maxrl,{probe}",
            "--seeds", "3", "--out", str(tmp_path)]
    assert team.main(args) == 0
    config = json.loads((tmp_path / probe / "seed3" / "config.json").read_text())
    assert config["credit"] == SWITCH and config["credit_options"]["then"] == "ccpo_v2"
    maxrl, switched = (team.read_metrics(tmp_path / m / "seed3") for m in ("broadcast-maxrl", probe))
    assert [r["credit/first_then/first"] for r in switched] == [1.0, 0.0]
    kept = [k for k in maxrl[0] if "time" not in k.split("/") and k != "tokens/branches"]   # ccpo_v2's branches
    assert switched[0]["tokens/branches"] > 0 == maxrl[0]["tokens/branches"]          # are played from step 0
    # step 0: the same batch, the same advantages, so the same update and the same weights after it (evaluated)
    assert {k: switched[0][k] for k in kept} == {k: maxrl[0][k] for k in kept}
    # step 1: those weights sample the same batch; from here ccpo_v2's advantages train it
    rollout = [k for k in kept if k.startswith(("reward/", "policy_entropy/"))]
    assert rollout and {k: switched[1][k] for k in rollout} == {k: maxrl[1][k] for k in rollout}
    assert {k: switched[1][k] for k in kept if k.startswith("eval/")} != {k: maxrl[1][k] for k in kept
                                                                         if k.startswith("eval/")}
