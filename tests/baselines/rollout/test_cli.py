"""The rollout CLI: every flag explained with its default; --no-progress silences every progress bar."""

from __future__ import annotations

import argparse
import re

import pytest


def test_every_rollout_flag_has_help_with_its_default(capsys):
    from baselines import rollout

    with pytest.raises(SystemExit):
        rollout.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    options = text.split("options:")[1].split("examples:")[0]
    flags = re.findall(r"(--[a-z-]+) [A-Z_]+ ", options)
    assert len(flags) >= 12
    for flag in sorted(set(flags) - {"--env", "--out"}):  # the two required flags have no default
        entry = options.split(f"{flag} {flag[2:].upper().replace('-', '_')}")[1].split(" --")[0]
        assert "(default:" in entry, flag
    assert "gibberish" in text  # what --model tiny is for


def test_no_progress_also_silences_transformers_loading_bars(monkeypatch):
    pytest.importorskip("transformers")
    from transformers.utils import logging as hf_logging

    from baselines import rollout

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    hf_logging.enable_progress_bar()
    try:
        args = argparse.Namespace(no_progress=True, model="random", seed=0)
        rollout._build_policy(args, {}).close()
        assert not hf_logging.is_progress_bar_enabled()
        import os

        assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    finally:
        hf_logging.enable_progress_bar()


@pytest.mark.parametrize("args, message", [
    (["--env", "kuhn-poker-v0"], "argument --env: unknown env id 'kuhn-poker-v0'; did you mean kuhn_poker-v0"),
    (["--env", "kuhn_poker-v0", "--env-kwargs", '{"roundz": 2}'], "argument --env-kwargs: kuhn_poker-v0 got an "
                                                                   "unknown keyword argument 'roundz'"),
    (["--env", "kuhn_poker-v0", "--env-kwargs", '{"rounds": 0}'], "argument --env-kwargs: rounds must be an int >= 1"),
    (["--env", "kuhn_poker-v0", "--branches", "ablate:nobody"], "argument --branches: branch agent 'nobody' is "
                                                                "neither an agent"),
    (["--env", "kuhn_poker-v0", "--max-concurrent", "0"], "argument --max-concurrent: a positive number"),
])
def test_a_bad_env_id_kwarg_branch_or_concurrency_is_a_usage_error_before_anything_runs(tmp_path, capsys, args,
                                                                                        message):
    from baselines import rollout

    with pytest.raises(SystemExit) as exit_:
        rollout.main([*args, "--model", "random", "--out", str(tmp_path / "e.jsonl")])
    assert exit_.value.code == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "e.jsonl").exists()


def test_an_mlp_rollout_plays_discrete_mode_unless_told_otherwise(tmp_path, capsys):
    # it refused the env's default text mode and said to use --action-mode, a flag the trainer has and this
    # command does not; the trainer already picks discrete mode for an MLP
    from baselines.episode import read_jsonl
    from baselines.rollout.cli import main

    out = tmp_path / "e.jsonl"
    main(["--env", "kuhn_poker-v0", "--model", "mlp", "--episodes", "2", "--no-progress", "--out", str(out)])
    assert [e.transcript["kwargs"]["action_mode"] for e in read_jsonl(out)] == ["discrete", "discrete"]
    with pytest.raises(SystemExit):
        main(["--env", "kuhn_poker-v0", "--model", "mlp", "--env-kwargs", '{"action_mode": "text"}', "--episodes",
              "2", "--no-progress", "--out", str(tmp_path / "t.jsonl")])
    err = capsys.readouterr().err
    assert "plays discrete mode; kuhn_poker-v0 is in 'text' mode (make the env with action_mode='discrete')" in err
    assert "--action-mode" not in err
