"""Every command checks where it will write, and the numbers it is given, before any work: a file where a folder
goes (or a folder where a file goes) is a one-line error with exit status 2, not an OSError traceback from mkdir or
open at the end of a run."""

from __future__ import annotations

import pytest

from baselines.outputs import file_problem, folder_problem


def test_folder_and_file_problems(tmp_path):
    (tmp_path / "a_file").write_text("x")
    assert folder_problem(tmp_path / "new" / "deeper") is None and folder_problem(tmp_path) is None
    assert folder_problem(tmp_path / "a_file") == f"{tmp_path / 'a_file'} is a file, not a folder"
    assert folder_problem(tmp_path / "a_file" / "sub" / "x") == f"{tmp_path / 'a_file'} is a file, not a folder"
    assert file_problem(tmp_path / "new" / "e.jsonl") is None and file_problem(tmp_path / "a_file") is None
    assert file_problem(tmp_path) == f"{tmp_path} is a folder; give the path of a file in it"
    assert file_problem(tmp_path / "a_file" / "e.jsonl") == f"{tmp_path / 'a_file'} is a file, not a folder"


@pytest.mark.parametrize("command", [
    ["benchmark-credit", "broadcast", "--tier", "micro", "--quick", "--out", "FILE"],
    ["evaluate", "--protocol", "policy", "--player", "random", "--method", "m", "--out", "FILE/sub", "--no-progress"],
    ["render", "--out", "FILE"],
    ["submit", "SUBMISSION", "--store", "FILE"],
    ["show", "--store", "FILE"],
])
def test_leaderboard_commands_refuse_a_file_where_they_write_a_folder(tmp_path, capsys, command):
    from leaderboard.__main__ import main

    (tmp_path / "file").write_text("x")
    args = [a.replace("FILE", str(tmp_path / "file")).replace("SUBMISSION", str(tmp_path / "sub")) for a in command]
    assert main(args) == 2
    assert f"{tmp_path / 'file'} is a file, not a folder" in capsys.readouterr().err
    assert (tmp_path / "file").read_text() == "x"


def test_the_trainer_refuses_a_file_as_its_out_folder(tmp_path, capsys):
    from baselines.train.__main__ import main

    (tmp_path / "file").write_text("x")
    assert main(["--env", "kuhn_poker-v0", "--model", "mlp", "--steps", "1", "--out", str(tmp_path / "file")]) == 2
    assert f"--out {tmp_path / 'file'}: {tmp_path / 'file'} is a file, not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("out, message", [("FOLDER", "is a folder; give the path of a file in it"),
                                          ("FILE/e.jsonl", "is a file, not a folder")])
def test_the_rollout_cli_refuses_an_out_path_it_cannot_write_before_playing(tmp_path, capsys, out, message):
    from baselines import rollout

    (tmp_path / "file").write_text("x")
    path = out.replace("FOLDER", str(tmp_path)).replace("FILE", str(tmp_path / "file"))
    with pytest.raises(SystemExit) as exit_:
        rollout.main(["--env", "kuhn_poker-v0", "--model", "random", "--episodes", "2", "--out", path])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_validate_refuses_a_size_limit_that_is_not_a_positive_number(tmp_path, capsys, value):
    from leaderboard.__main__ import main

    assert main(["validate", str(tmp_path), "--max-episodes-mb", value]) == 2
    assert "--max-episodes-mb must be a positive number of megabytes" in capsys.readouterr().err


def test_a_protocol_path_that_is_not_a_json_file_says_so(tmp_path):
    from leaderboard.protocol import ProtocolError, load_protocol

    (tmp_path / "policy.txt").write_text("{}")
    with pytest.raises(ProtocolError, match="policy.txt': a file, but not a .json one, and not one of"):
        load_protocol(tmp_path / "policy.txt")
    with pytest.raises(ProtocolError, match="nothing.json': not a file, and not one of"):
        load_protocol(tmp_path / "nothing.json")
