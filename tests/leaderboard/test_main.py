"""The leaderboard harness end to end (evaluate -> validate -> submit -> render) and the submissions it must refuse:
each tampered submission is rejected with a message saying what is wrong, and nothing is written to the store."""

import hashlib
import json
from pathlib import Path

import pytest

from leaderboard.__main__ import main
from leaderboard.evaluate import EPISODES_FILE, SUBMISSION_FILE
from leaderboard.protocol import PROTOCOL_DIR, load_protocol
from leaderboard.store import load_entries, submit
from leaderboard.validate import Limits, SubmissionError, validate
from tests.leaderboard.helpers import _copy, _evaluate_runs, _rejected


@pytest.fixture(scope="module")
def protocol_path(tmp_path_factory) -> Path:
    """The policy protocol cut down to Kuhn vs the Nash bot and Mini Hanabi self play, on 6 seeds."""
    raw = json.loads((PROTOCOL_DIR / "policy.json").read_text())
    raw["id"] = "test-policy"
    raw["seeds"]["count"] = 6
    raw["tasks"] = [t for t in raw["tasks"] if t["name"] in ("kuhn_poker/vs-kuhn_nash", "mini_hanabi/self-play")]
    path = tmp_path_factory.mktemp("protocol") / "test-policy.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.fixture(scope="module")
def honest(tmp_path_factory, protocol_path) -> Path:
    out = tmp_path_factory.mktemp("sub") / "reference"
    assert main(["evaluate", "--protocol", str(protocol_path), "--player", "reference", "--method",
                 "reference-bots", "--out", str(out), "--no-progress"]) == 0
    return out


def _lines(folder: Path) -> list[str]:
    return (folder / EPISODES_FILE).read_text().splitlines(keepends=True)


def _reseal(folder: Path, lines: list[str] | None = None) -> None:
    """What a careful tamperer does after editing the episodes: make the manifest's size, count and hash agree."""
    if lines is not None:
        (folder / EPISODES_FILE).write_text("".join(lines))
    data = (folder / EPISODES_FILE).read_bytes()
    m = json.loads((folder / SUBMISSION_FILE).read_text())
    m["episodes"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                         count=sum(1 for line in data.splitlines()[1:] if line.strip()))
    (folder / SUBMISSION_FILE).write_text(json.dumps(m))


def _edit_episode(folder: Path, index: int, change) -> None:
    lines = _lines(folder)
    d = json.loads(lines[1 + index])
    change(d)
    lines[1 + index] = json.dumps(d) + "\n"
    _reseal(folder, lines)


# ---------------------------------------------------------------------- end to end
def test_evaluate_validate_submit_render_end_to_end(honest, protocol_path, tmp_path, capsys):
    store, site = tmp_path / "store", tmp_path / "site"
    m = json.loads((honest / SUBMISSION_FILE).read_text())
    protocol = load_protocol(protocol_path)
    assert m["protocol"] == {"id": "test-policy", "version": 2, "sha256": protocol.sha256}
    assert m["episodes"]["count"] == 6 * 2 + 6          # Kuhn: both seats on every seed; Hanabi: once per seed
    assert set(m["players"]) == {"kuhn_poker-v0", "mini_hanabi-v1"}
    assert m["players"]["kuhn_poker-v0"][0]["model_id"] == "reference:kuhn_nash"
    assert len(m["players"]["kuhn_poker-v0"][0]["weights_sha256"]) == 64
    for key in ("packages", "git_sha", "config_sha256", "envs_sha256", "tokens", "wall_time_s", "seeds"):
        assert key in m
    assert main(["validate", str(honest), "--protocol", str(protocol_path), "--full"]) == 0
    out = capsys.readouterr().out
    assert "18 episodes, 18 replayed" in out
    # the reference bot against itself on both seats scores exactly the reference anchor: 1
    assert "kuhn_poker/vs-kuhn_nash: normalized score 1.000" in out

    other = tmp_path / "random"
    assert main(["evaluate", "--protocol", str(protocol_path), "--player", "random", "--method", "random",
                 "--out", str(other), "--no-progress"]) == 0
    for folder in (honest, other):
        assert main(["submit", str(folder), "--protocol", str(protocol_path), "--store", str(store)]) == 0
    assert main(["submit", str(other), "--protocol", str(protocol_path), "--store", str(store)]) == 1
    assert "duplicate" in capsys.readouterr().err
    entries = load_entries(store)
    assert sorted(e["method"] for e in entries) == ["random", "reference-bots"]
    assert len(json.loads((store / "index.json").read_text())["entries"]) == 2

    assert main(["show", "--store", str(store)]) == 0
    table = capsys.readouterr().out
    assert "test-policy@2" in table and "reference-bots#" in table and "random#" in table and "Elo" in table
    assert main(["render", "--store", str(store), "--out", str(site)]) == 0
    md = (site / "LEADERBOARD.md").read_text()
    assert "| rank | entry |" in md and "reference-bots#" in md and "[" in md
    page = (site / "index.html").read_text()
    assert "<table class='board'" in page and "sortTable" in page and "data:image/png;base64," in page
    assert "http://" not in page and "https://" not in page           # offline: nothing fetched


def test_every_submission_of_a_method_is_kept(honest, protocol_path, tmp_path):
    store = tmp_path / "store"
    again = tmp_path / "again"
    assert main(["evaluate", "--protocol", str(protocol_path), "--player", "random", "--method", "reference-bots",
                 "--out", str(again), "--no-progress"]) == 0
    submit(honest, store, protocol=protocol_path)
    submit(again, store, protocol=protocol_path)
    assert [e["method"] for e in load_entries(store)] == ["reference-bots", "reference-bots"]


def test_a_trainer_checkpoint_is_evaluated_with_its_weights_hash(protocol_path, tmp_path):
    from baselines.train import TrainConfig, train

    run = tmp_path / "run"
    train(TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2, out=str(run),
                      progress=False, tensorboard=False))
    out = tmp_path / "sub"
    assert main(["evaluate", "--protocol", str(protocol_path), "--player", f"kuhn_poker-v0=checkpoint:{run}",
                 "--player", "mini_hanabi-v1=reference", "--method", "mlp-kuhn", "--out", str(out),
                 "--no-progress"]) == 0
    m = json.loads((out / SUBMISSION_FILE).read_text())
    kuhn = m["players"]["kuhn_poker-v0"][0]
    assert kuhn["model_id"] == "mlp" and kuhn["credit"] == "broadcast" and kuhn["step"] == 1
    assert len(kuhn["weights_sha256"]) == 64 and kuhn["config_hash"]
    v = validate(out, protocol=protocol_path, full=True)
    assert v.episodes == 18
    first = json.loads(_lines(out)[1])
    assert first["policies"]["player_0"]["name"] == "mlp"


def test_a_checkpoint_player_records_its_run_config_without_the_output_fields(tmp_path):
    """What the manifest says a run trained (train_config, re-trained from by --reproduce) is the run's config.json
    without where it was written and how it was shown, and without the block the trainer resolved."""
    from baselines.train import TrainConfig, train
    from baselines.train.config import OUTPUT_FIELDS
    from leaderboard.players import load_player

    run = tmp_path / "run"
    train(TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2, out=str(run),
                      progress=False, tensorboard=False))
    config = json.loads((run / "config.json").read_text())
    player = load_player(f"checkpoint:{run}", "kuhn_poker-v0", ["player_0", "player_1"], "discrete")
    assert player.provenance["config_hash"] == config["resolved"]["config_hash"]
    assert player.provenance["train_config"] == {k: v for k, v in config.items()
                                                 if k not in OUTPUT_FIELDS and k != "resolved"}
    assert "save_every" in player.provenance["train_config"] and "out" not in player.provenance["train_config"]


def test_the_config_hash_that_entries_carry_ignores_exactly_the_result_neutral_fields_and_steps():
    import dataclasses

    from baselines.train import TrainConfig
    from baselines.train.config import RESULT_NEUTRAL_FIELDS

    base = TrainConfig()

    def changed(value):
        return {bool: lambda: not value, int: lambda: value + 1, float: lambda: value + 0.5, str: lambda: value + "x",
                dict: lambda: {**value, "x": 1}}[type(value)]()

    for f in dataclasses.fields(TrainConfig):
        other = dataclasses.replace(base, **{f.name: changed(getattr(base, f.name))})
        neutral = f.name in RESULT_NEUTRAL_FIELDS or f.name == "steps"
        assert (other.hash() == base.hash()) == neutral, f.name


def test_an_llm_by_name_is_evaluated_in_choice_mode_with_its_weights_hash(protocol_path, tmp_path, capsys):
    pytest.importorskip("transformers")
    raw = json.loads(protocol_path.read_text())
    raw["id"], raw["seeds"]["count"] = "test-policy-llm", 2
    raw["tasks"] = [t for t in raw["tasks"] if t["name"] == "kuhn_poker/vs-kuhn_nash"]
    small = tmp_path / "test-policy-llm.json"
    small.write_text(json.dumps(raw))
    out = tmp_path / "sub"
    assert main(["evaluate", "--protocol", str(small), "--player", "hf:tiny", "--method", "tiny-choice",
                 "--out", str(out), "--no-progress"]) == 0
    m = json.loads((out / SUBMISSION_FILE).read_text())
    player = m["players"]["kuhn_poker-v0"][0]
    assert player["model_id"] == "tiny" and len(player["weights_sha256"]) == 64
    assert player["decoding"]["player_0"]["mode"] == "choice"
    assert validate(out, protocol=small, full=True).episodes == 4      # 2 seeds x 2 seats
    assert main(["evaluate", "--protocol", str(small), "--player", "hf:tiny:beam", "--method", "x",
                 "--out", str(tmp_path / "bad"), "--no-progress"]) != 0
    assert "is not hf:MODEL or hf:MODEL:choice / hf:MODEL:generate" in capsys.readouterr().err
    assert not (tmp_path / "bad" / SUBMISSION_FILE).exists()


def test_a_checkpoint_of_another_env_is_refused(protocol_path, tmp_path, capsys):
    from baselines.train import TrainConfig, train

    run = tmp_path / "run"
    train(TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2, out=str(run),
                      progress=False, tensorboard=False))
    assert main(["evaluate", "--protocol", str(protocol_path), "--player", f"checkpoint:{run}", "--method", "x",
                 "--out", str(tmp_path / "sub"), "--no-progress"]) == 2
    assert "trained on kuhn_poker-v0, not mini_hanabi-v1" in capsys.readouterr().err


# ---------------------------------------------------------------------- tampered submissions
def test_changed_reward_is_caught_by_the_replay(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)

    def flip(d):          # a consistent lie: turn rewards, episode rewards and team rewards all changed
        loser = min(d["rewards"], key=d["rewards"].get)
        winner = max(d["rewards"], key=d["rewards"].get)
        d["rewards"][loser], d["rewards"][winner] = d["rewards"][winner], d["rewards"][loser]
        d["team_rewards"] = {k: d["rewards"][k] for k in d["team_rewards"]}
        for t in d["turns"]:
            t["reward"] = 0.0
        for agent, r in d["rewards"].items():
            last = [t for t in d["turns"] if t["agent"] == agent][-1]
            last["reward"] = r
    _edit_episode(sub, 0, flip)
    assert "replay gives" in _rejected(sub, protocol_path, tmp_path / "store", "episodes.jsonl:2")


def test_changed_reward_without_resealing_is_caught_by_the_hash(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    lines = _lines(sub)
    at = lines[1].index('"rewards":{"player_0":') + len('"rewards":{"player_0":')
    at += lines[1][at] == "-"
    digit = str((int(lines[1][at]) + 1) % 10)          # same size: only the hash can tell
    lines[1] = lines[1][:at] + digit + lines[1][at + 1:]
    (sub / EPISODES_FILE).write_text("".join(lines))
    _rejected(sub, protocol_path, tmp_path / "store", "episodes.sha256")


def test_removed_episode_makes_the_submission_incomplete(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    lines = _lines(sub)
    del lines[3]
    _reseal(sub, lines)
    _rejected(sub, protocol_path, tmp_path / "store", "incomplete: kuhn_poker/vs-kuhn_nash|player_0|run0 lacks 1")


def test_duplicated_episode_is_refused(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    lines = _lines(sub)
    lines[3] = lines[2]
    _reseal(sub, lines)
    _rejected(sub, protocol_path, tmp_path / "store", "a second episode")


def test_transcript_that_does_not_replay_is_refused(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)

    def first_move_out_of_range(d):      # consistent in the episode; the env ends the hand on it (penalty)
        d["transcript"]["actions"][0] = 99
        next(t for t in d["turns"] if t["step_index"] == 0)["action"] = 99
    _edit_episode(sub, 0, first_move_out_of_range)
    _rejected(sub, protocol_path, tmp_path / "store", "player_0's move 99 is not legal now; legal indices: [0, 1]")
    sub2 = _copy(honest, tmp_path / "b")
    _edit_episode(sub2, 0, lambda d: d["transcript"]["actions"].append(0))
    _rejected(sub2, protocol_path, tmp_path / "store", "every move of the transcript has exactly one turn")


def test_wrong_env_version_is_refused(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)

    def old(d):
        d["env_version"] = 0
        d["transcript"]["version"] = 0
    hanabi = next(i for i, line in enumerate(_lines(sub)[1:]) if "mini_hanabi" in line)
    _edit_episode(sub, hanabi, old)
    _rejected(sub, protocol_path, tmp_path / "store", "mini_hanabi-v1 version 0 (transcript 0), but the current "
                                                      "version is 1")
    m = json.loads((sub / SUBMISSION_FILE).read_text())
    m["envs"][1]["env_version"] = 0
    (sub / SUBMISSION_FILE).write_text(json.dumps(m))
    _rejected(sub, protocol_path, tmp_path / "store", "envs_sha256")


def test_nan_is_refused(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    lines = _lines(sub)
    lines[1] = lines[1].replace('"reward":', '"reward":NaN,"x":', 1)
    _reseal(sub, lines)
    _rejected(sub, protocol_path, tmp_path / "store", "episodes.jsonl:2: NaN is not a JSON number")
    sub2 = _copy(honest, tmp_path / "b")
    text = (sub2 / SUBMISSION_FILE).read_text()
    m = json.loads(text)
    (sub2 / SUBMISSION_FILE).write_text(text.replace(f'"wall_time_s": {m["wall_time_s"]}', '"wall_time_s": Infinity'))
    _rejected(sub2, protocol_path, tmp_path / "store", "submission.json: Infinity is not a JSON number")


def test_oversized_file_is_refused(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    m = json.loads((sub / SUBMISSION_FILE).read_text())
    m["note"] = "x" * (Limits().submission_bytes + 1)
    (sub / SUBMISSION_FILE).write_text(json.dumps(m))
    _rejected(sub, protocol_path, tmp_path / "store", "over the limit of 1048576 bytes")
    with pytest.raises(SubmissionError, match="episodes.jsonl: .* over the limit of 1000 bytes"):
        validate(honest, protocol=protocol_path, limits=Limits(episodes_bytes=1000))


def test_malformed_json_is_refused(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    lines = _lines(sub)
    lines[4] = lines[4][: len(lines[4]) // 2] + "\n"
    _reseal(sub, lines)
    _rejected(sub, protocol_path, tmp_path / "store", "episodes.jsonl:5: malformed JSON")
    sub2 = _copy(honest, tmp_path / "b")
    (sub2 / SUBMISSION_FILE).write_text((sub2 / SUBMISSION_FILE).read_text()[:-20])
    _rejected(sub2, protocol_path, tmp_path / "store", "submission.json: malformed JSON")


@pytest.mark.parametrize("field, value", [("rewards", 5), ("run_id", 7), ("transcript", []), ("seed", "1"),
                                          ("turns", {}), ("policies", {"player_1": "kuhn_nash"})])
def test_episode_fields_of_the_wrong_type_are_named(honest, protocol_path, tmp_path, field, value):
    sub = _copy(honest, tmp_path)
    _edit_episode(sub, 0, lambda d: d.update({field: value}))
    _rejected(sub, protocol_path, tmp_path / "store", "episodes.jsonl:2")


@pytest.mark.parametrize("run_id", ["kuhn_poker/vs-kuhn_nash|player_0", "kuhn_poker/vs-kuhn_nash|player_0|run-1",
                                    "kuhn_poker/vs-kuhn_nash|player_0|run" + "9" * 5000, "no-such-task|all|run0"])
def test_a_run_id_that_is_not_a_cell_label_is_refused_naming_it(honest, protocol_path, tmp_path, run_id):
    sub = _copy(honest, tmp_path)
    _edit_episode(sub, 0, lambda d: d.update(run_id=run_id))
    _rejected(sub, protocol_path, tmp_path / "store", "episodes.jsonl:2.run_id: ")


def test_schema_errors_name_the_field(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    m = json.loads((sub / SUBMISSION_FILE).read_text())
    m["tokens"]["eval_main"] = "many"
    (sub / SUBMISSION_FILE).write_text(json.dumps(m))
    _rejected(sub, protocol_path, tmp_path / "store", "submission.json.tokens.eval_main: expected")
    del m["method"]
    m["tokens"]["eval_main"] = 0
    (sub / SUBMISSION_FILE).write_text(json.dumps(m))
    _rejected(sub, protocol_path, tmp_path / "store", "missing field(s) ['method']")


def test_a_pickle_in_the_folder_is_refused(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    (sub / "weights.pkl").write_bytes(b"\x80\x04K\x01.")
    _rejected(sub, protocol_path, tmp_path / "store", "JSON only")


def test_an_opponent_swapped_for_a_weaker_one_is_refused(honest, protocol_path, tmp_path):
    sub = _copy(honest, tmp_path)
    _edit_episode(sub, 0, lambda d: d["policies"]["player_1"].update(name="random"))
    _rejected(sub, protocol_path, tmp_path / "store", "the protocol's opponent is 'reference:kuhn_nash'")


def test_another_text_of_the_protocol_is_refused(honest, protocol_path, tmp_path):
    raw = json.loads(protocol_path.read_text())
    raw["description"] += " (edited)"
    other = tmp_path / "test-policy.json"
    other.write_text(json.dumps(raw))
    _rejected(honest, other, tmp_path / "store", "another text of test-policy@2")


# ---------------------------------------------------------------------- credit track
@pytest.fixture(scope="module")
def credit_protocol(tmp_path_factory) -> Path:
    raw = json.loads((PROTOCOL_DIR / "credit-micro.json").read_text())
    raw.update(id="test-credit", seeds={"start": 2**40, "count": 3})
    raw["train"].update(steps=1, tasks_per_step=2, group_size=2, seeds=[0, 1])
    raw["tasks"] = [t for t in raw["tasks"] if t["env_id"] == "kuhn_poker-v0"]
    path = tmp_path_factory.mktemp("credit") / "test-credit.json"
    path.write_text(json.dumps(raw))
    return path


def _train(out: Path, seed: int, steps: int = 1, credit: str = "rae") -> Path:
    from baselines.train import TrainConfig, train

    train(TrainConfig(env="kuhn_poker-v0", model="mlp", credit=credit, steps=steps, tasks_per_step=2, group_size=2,
                      seed=seed, out=str(out), progress=False, tensorboard=False))
    return out


def _train_and_evaluate(credit_protocol: Path, tmp_path: Path, seeds: tuple[int, ...]) -> Path:
    """A credit-track submission of runs trained with ``seeds`` (given to --runs in that order)."""
    return _evaluate_runs(credit_protocol, [_train(tmp_path / f"run{s}", s) for s in seeds], tmp_path / "sub")


def test_credit_track_runs_are_evaluated_per_training_seed(credit_protocol, tmp_path):
    out = _train_and_evaluate(credit_protocol, tmp_path, (1, 0))
    m = json.loads((out / SUBMISSION_FILE).read_text())
    assert [p["train_seed"] for p in m["players"]["kuhn_poker-v0"]] == [0, 1]      # the protocol's seed order
    assert m["tokens"]["train_main"] > 0 and m["seeds"]["train"] == [0, 1]
    curve = m["players"]["kuhn_poker-v0"][0]["learning_curve"]
    assert curve["step"] == [0] and set(curve) == {"step", "reward/team/player_0", "reward/team/player_1"}
    v = validate(out, protocol=credit_protocol, full=True)
    assert [len(run) for run in v.scores["kuhn_poker/vs-kuhn_nash"]] == [3, 3]    # 2 runs x 3 seeds


def test_credit_track_manifest_is_checked_against_the_budget(credit_protocol, tmp_path):
    out = _train_and_evaluate(credit_protocol, tmp_path, (0, 1))
    m = json.loads((out / SUBMISSION_FILE).read_text())
    m["players"]["kuhn_poker-v0"][1]["train_config"]["steps"] = 500        # a claim off the protocol's budget
    (out / SUBMISSION_FILE).write_text(json.dumps(m))
    _rejected(out, credit_protocol, tmp_path / "store", "players.kuhn_poker-v0[1]: the protocol test-credit@1 "
                                                        "trains with steps=1, this run has steps=500")
    m["players"]["kuhn_poker-v0"][1]["train_config"]["steps"] = 1
    m["players"]["kuhn_poker-v0"][1]["weights_sha256"] = "0" * 64            # another model than evaluated
    (out / SUBMISSION_FILE).write_text(json.dumps(m))
    _rejected(out, credit_protocol, tmp_path / "store", "config_sha256 does not match")


def test_credit_track_refuses_a_run_off_the_budget(credit_protocol, tmp_path, capsys):
    runs = [_train(tmp_path / "run0", 0), _train(tmp_path / "run1", 1, steps=2)]
    assert main(["evaluate", "--protocol", str(credit_protocol), "--runs", *map(str, runs), "--method", "rae",
                 "--out", str(tmp_path / "sub"), "--no-progress"]) == 2
    assert "trains with steps=1, this run has steps=2" in capsys.readouterr().err
    assert main(["evaluate", "--protocol", str(credit_protocol), "--runs", str(runs[0]), "--method", "rae",
                 "--out", str(tmp_path / "sub"), "--no-progress"]) == 2
    assert "no run of kuhn_poker-v0 with training seed(s) [1]" in capsys.readouterr().err


def test_benchmark_credit_trains_evaluates_and_ranks_beside_the_baselines(credit_protocol, tmp_path, capsys):
    out = tmp_path / "bench"
    store = tmp_path / "store"
    # the method under test given as package.module:ClassName, a control, and a method that cannot play Kuhn
    # with progress on, as the README demo runs it: written to a file or a pipe (capsys is neither a terminal),
    # the output has no carriage-return frames, one line per finished training run
    assert main(["benchmark-credit", "baselines.credit.rae:RAE", "--protocol", str(credit_protocol),
                 "--baselines", "none,ccpo_v1", "--out", str(out), "--submit", "--store", str(store),
                 "--export", "marl-eval"]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "\r" not in captured.out + captured.err
    assert captured.err.count(": done, 1 steps in ") == 4                  # 2 methods x 2 training seeds
    assert "| rank | entry |" in text and "baselines.credit.rae_RAE#" in text and "none#" in text
    assert "ccpo_v1: not applicable here" in text
    assert "baselines.credit.rae_RAE vs none on " in text                 # the verdict of the method under test
    assert (out / "test-credit@1" / "comparison.md").read_text() in text
    comparison = (out / "test-credit@1" / "index.html").read_text()
    assert "<table class='board'" in comparison
    assert "Method under test: <strong>baselines.credit.rae_RAE</strong>" in comparison
    assert "<dt>wall time</dt>" in comparison and "ccpo_v1: not applicable here" in comparison
    runs = sorted(p.name for p in (out / "test-credit@1" / "none" / "kuhn_poker-v0").iterdir())
    assert runs == ["seed0", "seed1"]
    assert sorted(e["method"] for e in load_entries(store)) == ["baselines.credit.rae_RAE", "none"]
    exported = json.loads((out / "test-credit@1" / "marl_eval.json").read_text())["marl_llm_envs"]
    runs_of_none = exported["kuhn_poker/vs-kuhn_nash"]["none"]
    assert sorted(runs_of_none) == ["run_1", "run_2"]
    assert runs_of_none["run_1"]["step_0"]["step_count"] == 0
    assert len(runs_of_none["run_1"]["absolute_metrics"]["normalized_score"]) == 3      # one per evaluation seed
    assert main(["render", "--store", str(store), "--out", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "index.html").read_text()
    assert "data-figure='curves-kuhn_poker-v0'" in page
    # a second call reuses the finished runs (nothing retrained) and evaluates them to the same scores
    weights = sorted((out / "test-credit@1").rglob("state.safetensors"))
    assert weights
    stamps = [p.stat().st_mtime_ns for p in weights]
    before = validate(out / "test-credit@1" / "none" / "submission", protocol=credit_protocol).scores
    assert main(["benchmark-credit", "baselines.credit.rae:RAE", "--protocol", str(credit_protocol),
                 "--baselines", "none", "--out", str(out), "--no-progress"]) == 0
    assert [p.stat().st_mtime_ns for p in weights] == stamps
    assert validate(out / "test-credit@1" / "none" / "submission", protocol=credit_protocol).scores == before


@pytest.mark.parametrize("where", ["classic", "suite"])
@pytest.mark.parametrize("args, message", [
    (["brodcast"], "error: the method under test: unknown credit method 'brodcast'; registered: broadcast"),
    (["loo", "--baselines", "none,shufled"], "error: --baselines: unknown credit method 'shufled'"),
    (["no_such_module:Method"], "error: the method under test: cannot import 'no_such_module'"),
])
def test_benchmark_credit_refuses_a_misspelt_method_before_training_anything(credit_protocol, tmp_path, capsys,
                                                                             where, args, message):
    """A misspelt method used to count as one that applies to no setting: every baseline was trained (minutes on the
    micro tier, hours on a GPU tier) and the page was titled after a method that never ran."""
    protocol = ["--protocol", str(credit_protocol)] if where == "classic" else ["--tier", "micro", "--quick"]
    assert main(["benchmark-credit", *args, *protocol, "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "out").exists()


def test_benchmark_credit_jobs_on_a_classic_protocol_give_the_same_results(credit_protocol, tmp_path, monkeypatch):
    # --jobs 2 on a version 1 protocol: the four training runs (2 methods x 2 seeds) and the two evaluations in two
    # processes give the same scores, learning curves and evaluation episodes as one process
    import concurrent.futures

    from leaderboard.benchmark import benchmark_credit

    pools = []

    class CountedPool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            pools.append(kwargs.get("max_workers"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", CountedPool)
    got = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        result = benchmark_credit("rae", baselines=["none", "ccpo_v1"], out=out, progress=False,
                                  protocol=str(credit_protocol), jobs=jobs)
        assert result["skipped"].keys() == {"ccpo_v1"}
        runs = {}
        for metrics in sorted(out.rglob("metrics.jsonl")):
            rows = [json.loads(line) for line in metrics.read_text().splitlines()]
            runs[str(metrics.parent.relative_to(out))] = [{k: v for k, v in r.items() if not k.startswith("time/")}
                                                          for r in rows]
        episodes = {}
        for m in ("rae", "none"):
            sub = out / "test-credit@1" / m / "submission"
            lines = [json.loads(line) for line in (sub / "episodes.jsonl").read_text().splitlines()[1:]]
            episodes[m] = [(e["run_id"], e["seed"], e["rewards"], [t["action"] for t in e["turns"]]) for e in lines]
        scores = {m: validate(out / "test-credit@1" / m / "submission", protocol=credit_protocol).scores
                  for m in ("rae", "none")}
        got[jobs] = runs, episodes, scores
    # 2 runs x 3 evaluation seeds x 2 seats
    assert len(got[1][0]) == 4 and all(len(e) == 12 for e in got[1][1].values())
    assert got[2] == got[1]
    assert pools == [2]          # one pool of two processes for the training runs and the evaluations
    # run again on complete runs: no training run goes to the workers (nor starts a pool), the evaluations do
    from leaderboard.workers import Workers

    calls, original = [], Workers.map

    def recording(self, fn, specs, progress=False):
        calls.append((fn.__name__, len(specs)))
        return original(self, fn, specs, progress)

    monkeypatch.setattr(Workers, "map", recording)
    benchmark_credit("rae", baselines=["none"], out=tmp_path / "jobs2", progress=False, protocol=str(credit_protocol),
                     jobs=2)
    assert calls == [("train_run", 0), ("_evaluate_one", 2)]
    assert pools == [2, 2]
    with pytest.raises(ValueError, match="--jobs"):
        benchmark_credit("rae", baselines=[], out=tmp_path / "bad", progress=False, protocol=str(credit_protocol),
                         jobs=0)


def test_benchmark_credit_over_ray_on_a_classic_protocol_gives_the_same_scores(credit_protocol, tmp_path,
                                                                             monkeypatch):
    ray = pytest.importorskip("ray")
    from leaderboard.benchmark import benchmark_credit

    inits, init = [], ray.init

    def counted(*args, **kwargs):      # one local instance for the training runs and the evaluations
        inits.append(kwargs.get("address"))
        return init(*args, **kwargs)

    monkeypatch.setattr(ray, "init", counted)

    scores = {}
    for how, kwargs in (("one", {}), ("ray", {"ray": "local"})):
        out = tmp_path / how
        benchmark_credit("rae", baselines=["none"], out=out, progress=False, protocol=str(credit_protocol), **kwargs)
        assert len(inits) == (how == "ray") and not ray.is_initialized()
        scores[how] = {m: validate(out / "test-credit@1" / m / "submission", protocol=credit_protocol).scores
                       for m in ("rae", "none")}
    assert scores["ray"] == scores["one"]


@pytest.mark.slow
def test_an_llm_checkpoint_plays_a_text_mode_protocol(tmp_path):
    """The policy track with any backend: a trained LLM ('tiny', choice mode) evaluated in text mode."""
    from baselines.train import TrainConfig, train

    raw = json.loads((PROTOCOL_DIR / "credit-small.json").read_text())
    for key in ("tier", "train"):
        del raw[key]
    raw.update(id="test-text", track="policy", seeds={"start": 2**40, "count": 2})
    raw["tasks"] = [t for t in raw["tasks"] if t["env_id"] == "kuhn_poker-v0"]
    protocol = tmp_path / "test-text.json"
    protocol.write_text(json.dumps(raw))
    run = tmp_path / "run"
    train(TrainConfig(env="kuhn_poker-v0", model="tiny", mode="choice", steps=1, tasks_per_step=2, group_size=2,
                      out=str(run), progress=False, tensorboard=False))
    out = tmp_path / "sub"
    assert main(["evaluate", "--protocol", str(protocol), "--player", f"checkpoint:{run}", "--method", "tiny",
                 "--out", str(out), "--no-progress"]) == 0
    m = json.loads((out / SUBMISSION_FILE).read_text())
    assert m["players"]["kuhn_poker-v0"][0]["decoding"]["player_0"]["mode"] == "choice"
    assert m["tokens"]["eval_main"] > 0
    assert validate(out, protocol=protocol, full=True).episodes == 4


@pytest.mark.parametrize("flags, message", [
    # the second spec for every env used to win without a word: the misspelt first one was never looked at
    (["--player", "reference:nope", "--player", "random"], r"--player: two players for every env \('reference:nope' "
                                                           r"and 'random'\)"),
    # --runs names every env's players: a --player was dropped
    (["--player", "random", "--runs", "runs/a"], "--runs gives the players .* leave out --player"),
])
def test_a_player_flag_that_would_be_ignored_is_refused(protocol_path, tmp_path, capsys, flags, message):
    import re

    assert main(["evaluate", "--protocol", str(protocol_path), *flags, "--method", "x", "--out",
                 str(tmp_path / "sub"), "--no-progress"]) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "sub").exists()


@pytest.mark.parametrize("kwargs, message", [
    # each was dropped without a word: the protocol named by --protocol ran, the budget of another; the model
    # replaced the classic protocol's own in every run (or, for a suite, was ignored); Ray ran and --jobs did not
    ({"protocol": "credit-small", "tier": "micro"}, "--protocol credit-small names the protocol; leave out --tier"),
    ({"protocol": "credit-micro", "quick": True}, "leave out --tier and --quick"),
    ({"model": "foo"}, r"--model: credit-micro@\d+ fixes the model it trains"),
    ({"protocol": "credit-micro", "model": "foo"}, r"--model: credit-micro@1 fixes the model it trains \(mlp\)"),
    ({"jobs": 2, "ray": "local"}, "--ray plays the runs over Ray's workers; leave out --jobs 2"),
])
def test_benchmark_credit_refuses_options_it_would_drop(tmp_path, kwargs, message):
    from leaderboard.benchmark import benchmark_credit

    with pytest.raises(ValueError, match=message):
        benchmark_credit("broadcast", baselines=[], out=tmp_path / "out", progress=False, **kwargs)
    assert not (tmp_path / "out").exists()


def test_a_store_without_submit_is_refused(tmp_path, capsys):
    assert main(["benchmark-credit", "broadcast", "--baselines", "", "--store", str(tmp_path / "store"), "--out",
                 str(tmp_path / "out"), "--no-progress"]) == 2
    assert "--store is where --submit adds the entries" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "store").exists()


def test_a_reproduce_sample_without_reproduce_is_refused(honest, protocol_path, capsys):
    # nothing was re-played, and the number was dropped without a word
    assert main(["validate", str(honest), "--protocol", str(protocol_path), "--reproduce-sample", "5"]) == 2
    assert "--reproduce-sample is how many episodes --reproduce re-plays; give --reproduce too" in \
        capsys.readouterr().err


def test_an_evaluation_into_a_folder_another_process_writes_is_refused_before_it_plays(protocol_path, tmp_path,
                                                                                       monkeypatch):
    # two evaluations into one new folder both passed the 'not empty' check, played for minutes, then wrote over
    # each other: episodes of one beside the manifest of the other
    import fcntl
    import os

    import leaderboard.evaluate as evaluate_module
    from baselines.outputs import FolderBusy

    out = tmp_path / "sub"
    out.mkdir()
    other = os.open(out, os.O_RDONLY)
    fcntl.flock(other, fcntl.LOCK_EX)
    played = []
    monkeypatch.setattr(evaluate_module, "_play", lambda *a: played.append(1) or [])
    try:
        with pytest.raises(FolderBusy, match="another process is writing into it now"):
            evaluate_module.evaluate(load_protocol(protocol_path), {"kuhn_poker-v0": ["random"],
                                                                    "mini_hanabi-v1": ["random"]}, out, "x")
    finally:
        os.close(other)
    assert played == [] and list(out.iterdir()) == []
