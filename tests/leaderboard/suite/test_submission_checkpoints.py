"""A suite that keeps several checkpoints of every run (credit-micro@4's ``score.checkpoints``) travels with all of
them: benchmark-credit's submission folder carries each kept checkpoint, the validator re-scores every one it reads
(the final policy and the best checkpoint on the held-out seeds) and refuses a run missing one or holding one from
another step; ``--reproduce`` catches a kept checkpoint whose weights are not the ones its run trains."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from leaderboard.submission_json import SubmissionError
from leaderboard.suite import reproduce_suite, suite_entry, validate_suite
from tests.leaderboard.helpers import _copy
from tests.leaderboard.suite.helpers import broadcast_submission, tiny

SUITE = {**tiny(steps=2), "id": "kept-suite", "description": "a suite keeping two checkpoints per run"}
SUITE["score"] = {**SUITE["score"], "checkpoints": 2}
VOTING_RUN = Path("runs") / "voting_plurality_n2" / "seed0"
KUHN_RUN = Path("runs") / "kuhn" / "seed1"


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    return broadcast_submission(tmp_path_factory.mktemp("kept"), SUITE)


@pytest.fixture
def cache(honest, monkeypatch):
    monkeypatch.setenv("MARL_LLM_CACHE", str(honest["cache"]))


def test_the_submission_carries_every_kept_checkpoint_and_the_validator_scores_each(honest, cache):
    folder = honest["folder"]
    for run in (VOTING_RUN, KUHN_RUN):
        assert sorted(p.name for p in (folder / run / "checkpoints").iterdir() if p.is_dir()) == \
            ["step-0000001", "step-0000002"]
    v = validate_suite(folder, suite=honest["suite"])
    by_run = {(r["setting"], r["seed"]): r for r in v.results}
    assert all([c["step"] for c in r["checkpoints"]] == [1, 2] and r["best"]["step"] in (1, 2) for r in v.results)
    voting = by_run["voting/plurality/n2", 0]
    assert voting["raw"] == pytest.approx((voting["checkpoints"][-1]["a"] + voting["checkpoints"][-1]["b"]) / 2)
    e = suite_entry(v)
    assert set(e["results"]["collapses"]) == set(e["results"]["best"]) == {"voting/plurality/n2", "kuhn"}
    (stored,) = honest["result"]["entries"]
    assert e["results"]["best"] == stored["results"]["best"]
    assert e["results"]["settings"] == stored["results"]["settings"]


def test_a_run_missing_a_kept_checkpoint_is_refused(honest, cache, tmp_path):
    forged = _copy(honest["folder"], tmp_path)
    shutil.rmtree(forged / VOTING_RUN / "checkpoints" / "step-0000001")
    with pytest.raises(SubmissionError, match=r"voting_plurality_n2/seed0/checkpoints/step-0000001: missing or "
                                              r"incomplete; kept-suite@1 keeps 2 checkpoints of every run"):
        validate_suite(forged, suite=honest["suite"])
    forged = _copy(honest["folder"], tmp_path / "b")
    (forged / KUHN_RUN / "checkpoints" / "step-0000001" / "state.safetensors").unlink()
    with pytest.raises(SubmissionError, match="kuhn/seed1/checkpoints/step-0000001: missing or incomplete"):
        validate_suite(forged, suite=honest["suite"])


def test_a_kept_checkpoint_from_another_step_or_an_extra_one_is_refused(honest, cache, tmp_path):
    forged = _copy(honest["folder"], tmp_path)
    ckpts = forged / VOTING_RUN / "checkpoints"
    shutil.rmtree(ckpts / "step-0000001")
    shutil.copytree(ckpts / "step-0000002", ckpts / "step-0000001")       # the final policy passed off as step 1
    with pytest.raises(SubmissionError, match=r"step-0000001/meta.json: from step 2, not 1"):
        validate_suite(forged, suite=honest["suite"])
    forged = _copy(honest["folder"], tmp_path / "b")
    ckpts = forged / VOTING_RUN / "checkpoints"
    shutil.copytree(ckpts / "step-0000001", ckpts / "step-0000003")
    with pytest.raises(SubmissionError, match=r"checkpoints: holds .*step-0000003.*keeps exactly"):
        validate_suite(forged, suite=honest["suite"])


def test_edited_weights_in_a_kept_checkpoint_are_re_scored_and_caught_by_reproduce(honest, cache, tmp_path):
    forged = _copy(honest["folder"], tmp_path)
    ckpts = forged / VOTING_RUN / "checkpoints"
    shutil.copyfile(ckpts / "step-0000002" / "state.safetensors", ckpts / "step-0000001" / "state.safetensors")
    v = validate_suite(forged, suite=honest["suite"])       # scored from what it ships: step 1 now plays as step 2
    run = next(r for r in v.results if (r["setting"], r["seed"]) == ("voting/plurality/n2", 0))
    first, final = run["checkpoints"]
    assert (first["a"], first["b"]) == (final["a"], final["b"])
    with pytest.raises(SubmissionError, match=r"seed0/checkpoints/step-0000001: not the weights the run's config "
                                              r"trains at that step"):
        reproduce_suite(v)
    honest_v = validate_suite(honest["folder"], suite=honest["suite"])
    assert reproduce_suite(honest_v)["retrained"] == len(honest_v.runs)


def test_validate_prints_failed_and_collapsed_runs_beside_each_score(honest, cache, capsys):
    from leaderboard.__main__ import main

    assert main(["validate", str(honest["folder"]), "--protocol", str(honest["suite"])]) == 0
    out = capsys.readouterr().out
    e = honest["result"]["entries"][0]["results"]
    for fam, f in e["families"].items():        # one setting per family, two seeds
        (s,) = f["settings"]
        assert re.search(rf"\n  {fam}: [-0-9.]+ \[[-0-9.]+, [-0-9.]+\], {e['failures'][s]}/2 failed, "
                         rf"{e['collapses'][s]}/2 collapsed\n", out)
    total = sum(e["collapses"].values())
    assert re.search(rf"aggregate [-0-9.]+ \[[-0-9.]+, [-0-9.]+\], \d/4 failed, {total}/4 collapsed\n", out)
    assert "the final policy's on the held-out seeds" in out and "more than 0.2" in out
