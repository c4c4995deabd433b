"""A suite entry is a submission like any other (issue 42): benchmark-credit writes each method's runs as a folder,
the validator scores it itself, and the suite's forgeries (a planted anchors cache, pre-made runs with a raised
metrics.jsonl, a trainer setting off the suite, a renamed method) are refused or labelled self-reported with a message
naming the problem; nothing reaches the store as verified."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from leaderboard.benchmark import benchmark_credit
from leaderboard.store import load_entries
from leaderboard.submission_json import SubmissionError
from leaderboard.suite import MANIFEST, reproduce_suite, submit_suite, suite_entry, validate_suite
from tests.leaderboard.helpers import _copy
from tests.leaderboard.suite.helpers import broadcast_submission, tiny

SUITE = {**tiny(steps=2), "id": "trust-suite", "description": "a suite small enough for a test"}
VOTING_RUN = Path("runs") / "voting_plurality_n2" / "seed0"


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """broadcast's runs of the test suite, as benchmark-credit leaves them (the cache outside --out isolated)."""
    return broadcast_submission(tmp_path_factory.mktemp("honest"), SUITE)


@pytest.fixture
def cache(honest, monkeypatch):
    monkeypatch.setenv("MARL_LLM_CACHE", str(honest["cache"]))


def _raise_curve(run: Path, key: str = "reward/team/team", value: float = 1.0) -> None:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    (run / "metrics.jsonl").write_text("".join(json.dumps({**r, key: value}) + "\n" for r in rows))


def test_benchmark_credit_writes_a_submission_folder_whose_scores_the_validator_recomputes(honest, cache):
    folder = honest["folder"]
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert MANIFEST in names and f"{VOTING_RUN}/metrics.jsonl" in names and f"{VOTING_RUN}/config.json" in names
    assert any(n.startswith(f"{VOTING_RUN}/checkpoints/step-") and n.endswith("state.safetensors") for n in names)
    v = validate_suite(folder, suite=honest["suite"])
    (stored,) = honest["result"]["entries"]
    assert suite_entry(v)["results"]["aggregate"] == stored["results"]["aggregate"]
    assert v.self_reported and stored["self_reported"] is True


def test_the_label_is_reproduced_only_when_every_run_was_retrained_here(honest, cache):
    v = validate_suite(honest["folder"], suite=honest["suite"])
    assert suite_entry(v)["self_reported"] is True and suite_entry(v)["results"]["reproduced"] is None
    partial = reproduce_suite(v, retrain=1, audit_seed=7)           # 1 of 4 runs: the rest stays the submitter's
    assert partial["retrained"] == 1 and partial["of"] == 4 and partial["detection"]["one_forged_run"] == 0.25
    assert v.reproduced is None and suite_entry(v)["self_reported"] is True
    whole = reproduce_suite(v, audit_seed=7)
    assert whole["retrained"] == 4 and v.reproduced == whole
    assert suite_entry(v)["self_reported"] is False and suite_entry(v)["results"]["reproduced"]["audit_seed"] == 7


def test_forgery_a_planted_anchors_cache_in_out_is_never_read(honest, tmp_path, monkeypatch):
    # the attack: OUT/<suite>/anchors.json with the suite's hash and anchors that make any run score high
    monkeypatch.setenv("MARL_LLM_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    suite_out = out / "trust-suite@1"
    suite_out.mkdir(parents=True)
    sha = validate_suite(honest["folder"], suite=honest["suite"]).suite.sha256
    planted = {"suite_sha256": sha, "anchors": {"voting/plurality/n2": {"zero": -100.0, "one": -99.0},
                                                "kuhn": {"zero": -100.0, "one": -99.0}}}
    (suite_out / "anchors.json").write_text(json.dumps(planted))
    result = benchmark_credit("broadcast", protocol=str(honest["suite"]), baselines=[], out=out, progress=False,
                              fidelity=False)
    (honest_entry,), (entry,) = honest["result"]["entries"], result["entries"]
    assert entry["results"]["aggregate"] == honest_entry["results"]["aggregate"]
    assert json.loads((suite_out / "anchors.json").read_text()) == planted
    # and in a submission folder it is refused by name; nothing is stored
    forged = _copy(honest["folder"], tmp_path)
    (forged / "anchors.json").write_text(json.dumps(planted))
    with pytest.raises(SubmissionError, match=r"anchors\.json: unexpected in a suite submission .* anchors and scores "
                                              r"are computed by the validator"):
        submit_suite(forged, tmp_path / "store", suite=honest["suite"])
    assert not (tmp_path / "store").exists()


def test_forgery_pre_made_complete_runs_with_a_raised_metrics_file_are_trained_again(honest, tmp_path, monkeypatch,
                                                                                     capsys):
    out = tmp_path / "out"
    shutil.copytree(honest["out"], out)             # complete runs, made elsewhere (a pull request can carry them)
    run = out / "trust-suite@1" / "broadcast" / "voting_plurality_n2" / "seed0"
    _raise_curve(run)
    result = benchmark_credit("broadcast", protocol=str(honest["suite"]), baselines=[], out=out, progress=False,
                              fidelity=False)
    assert "not reused" in capsys.readouterr().err
    assert result["entries"][0]["results"]["aggregate"] == honest["result"]["entries"][0]["results"]["aggregate"]
    # the same runs, receipted by this machine, are reused
    monkeypatch.setenv("MARL_LLM_CACHE", str(honest["cache"]))
    again = benchmark_credit("broadcast", protocol=str(honest["suite"]), baselines=[], out=honest["out"],
                             progress=False, fidelity=False)
    assert "not reused" not in capsys.readouterr().err
    assert again["entries"][0]["results"]["aggregate"] == honest["result"]["entries"][0]["results"]["aggregate"]


def test_forgery_a_raised_learning_curve_is_self_reported_and_caught_by_reproduce(honest, cache, tmp_path):
    forged = _copy(honest["folder"], tmp_path)
    _raise_curve(forged / VOTING_RUN)
    v = validate_suite(forged, suite=honest["suite"])         # the curve of a self setting is the submitter's ...
    assert v.self_reported
    assert v.scored["methods"]["broadcast"]["aggregate"]["ci"][0] > \
        honest["result"]["entries"][0]["results"]["aggregate"][0]
    with pytest.raises(SubmissionError, match=r"voting_plurality_n2/seed0/metrics\.jsonl: step 0 records "
                                              r"reward/team/team=1\.0, the run trained again here"):
        submit_suite(forged, tmp_path / "store", suite=honest["suite"], reproduce=True)
    assert not (tmp_path / "store").exists()                 # ... until --reproduce re-trains it: nothing stored
    entry = submit_suite(forged, tmp_path / "store2", suite=honest["suite"])
    assert entry["self_reported"] is True and [e["self_reported"] for e in load_entries(tmp_path / "store2")] == [True]


@pytest.mark.parametrize("field, value", [("ppo_epochs", 10**9), ("partners", "player_1=reference"), ("lr", 0.5),
                                          ("steps", 3)])
def test_forgery_a_trainer_setting_off_the_suite_is_refused_naming_the_field(honest, cache, tmp_path, field, value):
    forged = _copy(honest["folder"], tmp_path)
    config = forged / "runs" / "kuhn" / "seed1" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), field: value}))
    with pytest.raises(SubmissionError, match=rf"kuhn/seed1/config\.json: the protocol trust-suite@1 trains with "
                                              rf"{field}="):
        validate_suite(forged, suite=honest["suite"])


def test_forgery_a_builtin_methods_runs_renamed_or_a_run_missing_are_refused(honest, cache, tmp_path):
    forged = _copy(honest["folder"], tmp_path)
    manifest = json.loads((forged / MANIFEST).read_text())
    (forged / MANIFEST).write_text(json.dumps({**manifest, "method": "my-novel-credit"}))
    with pytest.raises(SubmissionError, match=r"trained with credit='broadcast', the submission is for "
                                              r"'my-novel-credit'"):
        validate_suite(forged, suite=honest["suite"])
    (forged / MANIFEST).write_text(json.dumps(manifest))
    shutil.rmtree(forged / "runs" / "kuhn" / "seed1")
    with pytest.raises(SubmissionError, match=r"kuhn/seed1/config\.json: missing"):
        validate_suite(forged, suite=honest["suite"])


def test_a_huge_metrics_file_is_refused_before_it_is_read(honest, cache, tmp_path):
    forged = _copy(honest["folder"], tmp_path)
    with open(forged / VOTING_RUN / "metrics.jsonl", "r+b") as f:
        f.truncate(1 << 30)                               # sparse: 1 GiB on paper, nothing on disk
    with pytest.raises(SubmissionError, match=r"metrics\.jsonl: 1073741824 bytes, over the limit"):
        validate_suite(forged, suite=honest["suite"])


def test_validate_and_submit_take_a_suite_folder_and_refuse_the_episode_flags(honest, cache, tmp_path, capsys):
    from leaderboard.__main__ import main

    folder, suite = str(honest["folder"]), str(honest["suite"])
    assert main(["validate", folder, "--protocol", suite]) == 0
    out = capsys.readouterr().out
    assert "valid suite submission: broadcast on trust-suite@1, 4 runs" in out and "self-reported" in out
    e = honest["result"]["entries"][0]["results"]
    for fam, f in e["families"].items():        # one setting per family, two seeds: "k/2 failed", as the tables
        assert re.search(rf"\n  {fam}: [-0-9.]+ \[[-0-9.]+, [-0-9.]+\], {e['failures'][f['settings'][0]]}/2 failed\n",
                         out)
    assert re.search(r"aggregate [-0-9.]+ \[[-0-9.]+, [-0-9.]+\], \d/4 failed\n", out) and "collapsed" not in out
    assert main(["validate", folder, "--protocol", suite, "--sample", "5"]) == 2
    assert "--sample: " in capsys.readouterr().err
    forged = _copy(honest["folder"], tmp_path)
    (forged / "results.json").write_text("{}")
    assert main(["submit", str(forged), "--protocol", suite, "--store", str(tmp_path / "store")]) == 1   # rejected
    assert "results.json: unexpected in a suite submission" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_the_same_runs_with_another_note_and_claimed_hash_are_a_duplicate(honest, cache, tmp_path):
    store = tmp_path / "store"
    submit_suite(honest["folder"], store, suite=honest["suite"])
    forged = _copy(honest["folder"], tmp_path)
    manifest = json.loads((forged / MANIFEST).read_text())
    (forged / MANIFEST).write_text(json.dumps({**manifest, "note": "a new method, honestly", "git_sha": "f" * 40},
                                              indent=3))
    with pytest.raises(SubmissionError, match="duplicate: these episodes were submitted already"):
        submit_suite(forged, store, suite=honest["suite"])
    assert len(load_entries(store)) == 1


def test_a_method_whose_checkpoint_holds_a_critic_validates(tmp_path, monkeypatch):
    # mappo's meta.json carries its critic's weights (1.2 MB on voting): the validator read it under a 1 MiB cap and
    # refused every honest mappo submission; it reads it under the trainer's own meta.json limit
    monkeypatch.setenv("MARL_LLM_CACHE", str(tmp_path / "cache"))
    suite = tmp_path / "trust-suite.json"
    suite.write_text(json.dumps(SUITE))
    result = benchmark_credit("mappo", protocol=str(suite), baselines=[], out=tmp_path / "out", progress=False,
                              fidelity=False)
    folder = result["out"] / "submissions" / "mappo"
    metas = sorted((folder / VOTING_RUN / "checkpoints").glob("step-*/meta.json"))
    assert metas and metas[-1].stat().st_size > 1 << 20
    v = validate_suite(folder, suite=suite)
    assert suite_entry(v)["results"]["aggregate"] == result["entries"][0]["results"]["aggregate"]
