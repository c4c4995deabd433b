"""``python -m leaderboard fidelity`` (leaderboard/fidelity.py): the oracle control near 1 and shuffled near 0,
a user's own method measured by its module path, and a setting the suite does not have refused."""

from __future__ import annotations

import sys
import textwrap

import pytest


def _spec(methods, n=4, seed=0, env="voting-v0", kwargs=None, partners=""):
    return {"suite": "credit-micro@3", "family": "team_size", "knob_name": "n_voters", "setting": "test",
            "knob": n, "env_id": env, "env_kwargs": kwargs or {"n_voters": n, "reward_scheme": "fraction"},
            "action_mode": "discrete", "model": "mlp", "mode": "generate", "partners": partners,
            "tasks_per_step": 8, "group_size": 4, "seed": seed, "batches": 1, "continuations": 4,
            "methods": methods, "policy": "initial"}


def test_oracle_has_fidelity_about_one_and_shuffled_about_zero():
    from leaderboard.fidelity import measure, summarize

    results = [measure(_spec(["oracle", "shuffled", "broadcast"], kwargs={"idle_seats": 3}, env="free_riding-v0",
                             seed=s)) for s in (0, 1)]
    row = summarize(results, reps=200)["test"]
    assert row["methods"]["oracle"]["r"] > 0.95
    assert abs(row["methods"]["shuffled"]["r"]) < 0.25
    assert row["methods"]["broadcast"]["false_credit"] == pytest.approx(1.0, abs=0.05)   # idle seats: full credit
    assert row["methods"]["oracle"]["false_credit"] < 0.05
    assert row["truth_false_credit"] == 0.0


def test_fidelity_measures_a_method_from_a_users_module(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_credit_mod.py").write_text(textwrap.dedent("""
        from baselines.credit import CreditMethod


        class OwnTerm(CreditMethod):
            '''Voting's own ballot term from the final infos: R - R_without (loo, written outside the package).'''

            def advantages(self, episodes):
                return [[e.rewards[t.agent] - e.final_infos[t.agent]["team_reward_without"][t.agent]
                         for t in e.turns] for e in episodes]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    from leaderboard.__main__ import main

    out = tmp_path / "out"
    assert main(["fidelity", "my_credit_mod:OwnTerm", "--baselines", "broadcast", "--settings",
                 "voting/fraction/n2", "--seeds", "0", "--continuations", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "my_credit_mod:OwnTerm" in text and "voting/fraction/n2" in text
    assert (out / "results.json").exists() and (out / "fidelity.md").exists()
    sys.modules.pop("my_credit_mod", None)


def test_fidelity_rejects_an_unknown_setting():
    from leaderboard.fidelity import plan

    with pytest.raises(ValueError, match="setting 'voting/n3' is not in credit-micro@4"):
        plan(["broadcast"], settings=["voting/n3"])
