"""Forgeries of the credit track (issue 42): each is rejected, or stored as self-reported, with a message naming the
problem, and nothing reaches the store as verified.

Made the way a determined cheater would: runs trained or a manifest edited, then everything resealed (sizes,
SHA-256s, config hash), so that only the protocol's pins, the method's tie to its runs, and what the validator
re-runs can catch it."""

import json
from pathlib import Path

import pytest

from leaderboard.__main__ import main
from leaderboard.validate import validate
from test_leaderboard_integrity import (KUHN, _copy, _rejected, _reseal, credit_protocol, credit_runs,  # noqa: F401
                                        credit_submission)


def _train(out: Path, seed: int, **changes) -> Path:
    from baselines.train import TrainConfig, train

    cfg = dict(env=KUHN, model="mlp", mode="generate", credit="rae", steps=2, tasks_per_step=2, group_size=2,
               seed=seed, out=str(out), progress=False, tensorboard=False, action_mode="discrete")
    train(TrainConfig(**{**cfg, **changes}))
    return out


def _runs_config(m, **changes):
    for p in m["players"][KUHN]:
        p["train_config"].update(changes)


# ---------------------------------------------------------------------- training pinned by the protocol
def test_forgery_runs_trained_with_the_reference_bot_as_a_partner_are_refused(credit_protocol, credit_submission,
                                                                             tmp_path, capsys):
    """partners=player_1=reference makes the reference bot half of the "trained" policy."""
    runs = [_train(tmp_path / f"seed{s}", s, partners="player_1=reference") for s in (0, 1)]
    assert main(["evaluate", "--protocol", str(credit_protocol), "--runs", *map(str, runs), "--method", "rae",
                 "--out", str(tmp_path / "sub"), "--no-progress"]) == 2
    assert "trains with partners=''" in capsys.readouterr().err
    forged = _copy(credit_submission, tmp_path)           # an honest submission's manifest, edited and resealed
    _reseal(forged, manifest=lambda m: _runs_config(m, partners="player_1=reference"))
    why = _rejected(forged, credit_protocol, tmp_path / "store", "trains with partners='', this run has "
                                                                 "partners='player_1=reference'")
    assert "only credit and credit_options are the method's" in why


@pytest.mark.parametrize("field, value", [("ppo_epochs", 10**9), ("lr", 0.5), ("frozen", "player_1"),
                                          ("env_kwargs", {"ante": 5}), ("entropy_coef", 0.3)])
def test_forgery_a_trainer_setting_off_the_protocol_is_refused_before_any_retraining(credit_protocol,
                                                                                     credit_submission, tmp_path,
                                                                                     field, value):
    """ppo_epochs = 10**9 used to make --reproduce run for as long as anyone waits."""
    forged = _copy(credit_submission, tmp_path)
    _reseal(forged, manifest=lambda m: _runs_config(m, **{field: value}))
    _rejected(forged, credit_protocol, tmp_path / "store", f"this run has {field}=", reproduce=True)


def test_a_schedule_of_the_method_is_bounded_by_the_budget(credit_protocol, credit_submission, tmp_path):
    forged = _copy(credit_submission, tmp_path)
    _reseal(forged, manifest=lambda m: _runs_config(m, alternate_every=10**6))
    _rejected(forged, credit_protocol, tmp_path / "store", "alternate_every: 1000000; the protocol test-credit@1 "
                                                           "allows an integer from 0 to the protocol's steps")


# ---------------------------------------------------------------------- the method is the one that trained the runs
def test_forgery_a_builtin_methods_runs_renamed_as_a_new_method_are_refused(credit_protocol, credit_submission,
                                                                            credit_runs, tmp_path, capsys):
    forged = _copy(credit_submission, tmp_path)
    _reseal(forged, manifest=lambda m: m.update(method="my-novel-credit"))
    _rejected(forged, credit_protocol, tmp_path / "store", "method: 'my-novel-credit', but the runs were trained by "
                                                           "the built-in credit method 'rae'", reproduce=True)
    assert main(["evaluate", "--protocol", str(credit_protocol), "--runs", *map(str, credit_runs), "--method",
                 "my-novel-credit", "--out", str(tmp_path / "sub"), "--no-progress"]) == 2
    assert "entered under its own name (--method rae)" in capsys.readouterr().err


def test_the_methods_source_is_hashed_into_the_manifest_and_checked(credit_protocol, credit_submission, tmp_path):
    from baselines.credit import rae

    from leaderboard.evaluate import file_sha256

    manifest = json.loads((credit_submission / "submission.json").read_text())
    assert {p["credit_sha256"] for p in manifest["players"][KUHN]} == {file_sha256(rae.__file__)}
    forged = _copy(credit_submission, tmp_path)
    _reseal(forged, manifest=lambda m: [p.update(credit_sha256="0" * 64) for p in m["players"][KUHN]])
    _rejected(forged, credit_protocol, tmp_path / "store", "credit_sha256: the run was trained with another source "
                                                           "of the built-in method 'rae'")
    forged = _copy(credit_submission, tmp_path / "mixed")
    _reseal(forged, manifest=lambda m: m["players"][KUHN][1]["train_config"].update(credit="broadcast"))
    _rejected(forged, credit_protocol, tmp_path / "store", "the runs were trained with different credit methods")


def test_an_honest_credit_submission_still_validates(credit_protocol, credit_submission):
    assert validate(credit_submission, protocol=credit_protocol).episodes > 0
