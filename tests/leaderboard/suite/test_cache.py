"""The suite's cache lives outside ``--out`` and is keyed by content (issue 42): the anchors by the suite's text and
the code that computes them, a run's receipt by the run's spec and files."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

from leaderboard.suite import cache, load_suite, plan, train_run
from leaderboard.suite.cache import anchor_cache, cache_root, verified_run


def test_the_anchor_cache_is_keyed_by_the_suite_text_and_the_anchor_code(tmp_path, monkeypatch):
    monkeypatch.setenv("MARL_LLM_CACHE", str(tmp_path / "cache"))
    suite = load_suite("credit-micro-quick@3")
    path = anchor_cache(suite)
    assert cache_root() == tmp_path / "cache" and path.parent == tmp_path / "cache" / "anchors"
    assert anchor_cache(replace(suite, sha256="0" * 64)) != path                 # another text of the suite
    monkeypatch.setattr(cache, "code_sha256", lambda: "1" * 64)                  # another version of the code
    assert anchor_cache(suite) != path


def _trained_run(tmp_path, monkeypatch, steps: int):
    """A short broadcast run of credit-micro-quick@3's voting/plurality/n2, trained here with the cache in tmp_path."""
    monkeypatch.setenv("MARL_LLM_CACHE", str(tmp_path / "cache"))
    suite = load_suite("credit-micro-quick@3")
    spec = next(s for s in plan(suite, ["broadcast"], tmp_path / "out")[0] if s["setting"] == "voting/plurality/n2")
    run = tmp_path / "out" / "run"
    spec = {**spec, "steps": steps, "out": str(run)}
    train_run(spec)
    return spec, run


def _raise_team_reward(run):
    """Edit the run's metrics.jsonl as a forger would: every step's team reward raised to 1."""
    rows = (run / "metrics.jsonl").read_text().splitlines()
    (run / "metrics.jsonl").write_text("\n".join(json.dumps({**json.loads(r), "reward/team/team": 1.0})
                                                 for r in rows) + "\n")


def test_a_run_is_verified_only_from_its_receipt_and_unchanged_files(tmp_path, monkeypatch):
    spec, run = _trained_run(tmp_path, monkeypatch, steps=1)
    assert verified_run(run, spec) is None
    assert "trained here from another spec" in verified_run(run, {**spec, "seed": 1})
    _raise_team_reward(run)
    assert "its files changed after it was trained here" in verified_run(run, spec)
    monkeypatch.setenv("MARL_LLM_CACHE", str(tmp_path / "elsewhere"))
    assert "no receipt of this machine's training" in verified_run(run, spec)


def test_a_run_reached_through_a_symlinked_out_folder_is_the_same_run_and_is_reused(tmp_path, monkeypatch):
    """``--out`` given as a symlink (or a relative path) to the folder a run was trained in names the same run: it is
    verified and reused, not emptied and trained again (which once lost a re-check's finished runs)."""
    spec, run = _trained_run(tmp_path, monkeypatch, steps=1)
    (tmp_path / "link").symlink_to(tmp_path / "out")
    via = tmp_path / "link" / "run"
    before = (run / "metrics.jsonl").stat().st_mtime_ns, sorted(p.name for p in run.rglob("*"))
    assert verified_run(via, {**spec, "out": str(via)}) is None
    assert train_run({**spec, "out": str(via)}) == str(via)
    assert ((run / "metrics.jsonl").stat().st_mtime_ns, sorted(p.name for p in run.rglob("*"))) == before
    assert "trained here from another spec" in verified_run(via, {**spec, "out": str(via), "seed": 1})


def test_a_run_is_scored_once_per_content_and_an_edited_file_is_scored_again(tmp_path, monkeypatch):
    """A suite scores its runs and then validates its own submission folders (copies of the same files): the second
    scoring of the same bytes under the same spec reads the cache; an edit of a scored file, or another spec, scores
    again, and the cache holds the result of the scoring code, not a value a folder brings."""
    from leaderboard.suite import runs

    spec, run = _trained_run(tmp_path, monkeypatch, steps=2)
    calls = []
    real = runs._score_run
    monkeypatch.setattr(runs, "_score_run", lambda sp, r: calls.append(r) or real(sp, r))
    first = runs.score_run(spec, run)
    assert runs.score_run(spec, run) == first and len(calls) == 1
    copy = tmp_path / "submitted" / "run"                         # the submission folder's copy of the same files
    shutil.copytree(run, copy)
    assert runs.score_run({**spec, "out": str(copy)}, copy) == first and len(calls) == 1
    # the trainer's spec spells out the placement defaults, the validator's leaves them out: one scoring spec
    assert runs.score_run({**spec, **runs.PLACEMENT_DEFAULTS}, run) == first and len(calls) == 1
    assert runs.score_run({**spec, "last_fraction": 1.0}, run) is not None and len(calls) == 2    # another spec
    _raise_team_reward(copy)
    edited = runs.score_run({**spec, "out": str(copy)}, copy)
    assert len(calls) == 3 and edited["raw"] == 1.0 != first["raw"]
