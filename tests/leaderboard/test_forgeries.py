"""Forgeries of the credit track (issue 42): each is rejected, or stored as self-reported, with a message naming the
problem, and nothing reaches the store as verified.

Made the way a determined cheater would: runs trained or a manifest edited, then everything resealed (sizes,
SHA-256s, config hash), so that only the protocol's pins, the method's tie to its runs, and what the validator
re-runs can catch it."""

import json
from pathlib import Path

import pytest

from leaderboard.__main__ import main
from leaderboard.reproduce import reproduce
from leaderboard.validate import validate
from tests.leaderboard.helpers import KUHN, _copy, _evaluate_runs, _kuhn_protocol, _rejected, _reseal, _train


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


# ---------------------------------------------------------------------- the validator chooses what to re-run
def test_the_detection_goal_sets_the_sample():
    from leaderboard.reproduce import detection_probability, detection_sample

    assert detection_sample() == 459 == detection_sample(0.01, 0.99)
    assert detection_probability(459, 18_000) >= 0.99 > detection_probability(458, 18_000)
    assert detection_probability(10, 10) == 1.0


def test_forgery_a_forged_run_whose_checkpoint_was_not_shipped_fails_reproduce(credit_protocol, credit_runs,
                                                                              tmp_path):
    """The runs' folders travel with the submission; the forged one 'did not travel'. --reproduce used to re-train
    one random run and skip the runs it could not load: 1 forged run in 6 passed 5 times in 6."""
    import shutil

    runs = [tmp_path / "runs" / r.name for r in credit_runs]
    for src, dst in zip(credit_runs, runs):
        shutil.copytree(src, dst)
    step = sorted((runs[1] / "checkpoints").glob("step-*"))[-1]        # run 1 carries run 0's weights
    shutil.copy(sorted((runs[0] / "checkpoints").glob("step-*"))[-1] / "state.safetensors", step)
    sub = _evaluate_runs(credit_protocol, runs, tmp_path / "sub")
    shutil.rmtree(runs[1])
    _rejected(sub, credit_protocol, tmp_path / "store", "kuhn_poker-v0[1].spec: 'checkpoint:", reproduce=True,
              retrain=0)                                    # not re-trained, not here: a failure, never a skip
    _rejected(sub, credit_protocol, tmp_path / "store", "players.kuhn_poker-v0[1].weights_sha256: the re-run player",
              reproduce=True)                               # by default every MLP run is re-trained


def test_forgery_one_spliced_win_is_caught_because_a_cheap_player_is_replayed_whole(tmp_path):
    """Episodes of the reference bot spliced into a random player's submission (the opponent's moves re-derive:
    they were played by the protocol's opponent). A sample used to catch 40 spliced wins in 18,000 only 36% of the
    time; a scripted or MLP player is now re-played whole, whatever --reproduce-sample says."""
    from leaderboard.evaluate import play_cell
    from leaderboard.players import load_player
    from leaderboard.protocol import load_protocol
    from tests.leaderboard.helpers import _episodes, _evaluate

    raw = json.loads((Path(__file__).parents[2] / "leaderboard/protocols/policy.json").read_text())
    raw.update(id="test-splice", seeds={"start": 2**40, "count": 30})
    raw["tasks"] = [t for t in raw["tasks"] if t["name"] == "kuhn_poker/vs-kuhn_nash"]
    protocol = tmp_path / "test-splice.json"
    protocol.write_text(json.dumps(raw))
    honest = _evaluate(protocol, tmp_path / "honest")
    proto = load_protocol(protocol)
    bot = load_player("reference", KUHN, ["player_0", "player_1"], "discrete")
    header, episodes = _episodes(honest)
    target = next(i for i, e in enumerate(episodes) if e["run_id"].endswith("player_0|run0")
                  and e["rewards"]["player_0"] < 0)             # one lost game, replaced by the bot's play
    seed = episodes[target]["seed"]
    (spliced,) = play_cell(proto, proto.tasks[0], "player_0", 0, bot, seeds=[seed])
    d = json.loads(spliced.to_json())
    d["policies"] = episodes[target]["policies"]
    assert d["transcript"]["actions"] != episodes[target]["transcript"]["actions"]
    episodes[target] = d
    forged = _copy(honest, tmp_path)
    _reseal(forged, header, episodes)
    assert validate(forged, protocol=protocol).self_reported          # legal, consistent: only re-play can tell
    _rejected(forged, protocol, tmp_path / "store", "(the moves are not the claimed player's)", reproduce=True,
              reproduce_sample=1)


def test_the_audit_seed_is_drawn_by_the_validator_printed_and_repeatable(credit_protocol, credit_submission,
                                                                        tmp_path, capsys):
    first = validate(credit_submission, protocol=credit_protocol)
    reproduce(first, retrain=1, workdir=tmp_path)
    second = validate(credit_submission, protocol=credit_protocol)
    reproduce(second, retrain=1, workdir=tmp_path)
    assert first.audit_seed != second.audit_seed                      # from the OS, not from the submission
    again = validate(credit_submission, protocol=credit_protocol, audit_seed=first.audit_seed)
    reproduce(again, retrain=1, workdir=tmp_path)
    assert again.reproduced["retrained"] == first.reproduced["retrained"]
    assert again.reproduced["audit_seed"] == first.audit_seed
    assert main(["validate", str(credit_submission), "--protocol", str(credit_protocol), "--reproduce"]) == 0
    out = capsys.readouterr().out
    assert "re-trained kuhn_poker-v0|run0, kuhn_poker-v0|run1" in out and "caught with probability 1.0000" in out
    assert "audit seed " in out and "(--audit-seed " in out


def test_forgery_runs_trained_longer_relabelled_are_refused_in_private_mode(credit_protocol, tmp_path):
    """evaluate-private used to store credit runs as reproduced without re-training them: runs trained 100 steps
    relabelled as 10 ranked at IQM 0.567 against 0.289."""
    from leaderboard.store import load_entries

    runs = []
    for s in (0, 1):
        run = _train(tmp_path / f"seed{s}", s, steps=6, save_every=6)
        cfg = json.loads((run / "config.json").read_text())
        cfg["steps"] = 2
        (run / "config.json").write_text(json.dumps(cfg))
        meta_path = sorted((run / "checkpoints").glob("step-*"))[-1] / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["step"] = 2
        meta_path.write_text(json.dumps(meta))
        runs.append(run)
    store = tmp_path / "store"
    assert main(["evaluate-private", "--protocol", str(credit_protocol), "--runs", *map(str, runs), "--method",
                 "rae", "--count", "3", "--out", str(tmp_path / "private"), "--submit", "--store", str(store),
                 "--no-progress"]) == 1
    assert not store.exists() or not load_entries(store)


def test_an_honest_credit_entry_in_private_mode_is_retrained_and_reproduced(credit_protocol, credit_runs, tmp_path):
    from leaderboard.private import evaluate_private
    from leaderboard.protocol import load_protocol

    players = {KUHN: [f"checkpoint:{r}" for r in credit_runs]}
    v, entry = evaluate_private(load_protocol(credit_protocol), players, tmp_path / "p", "rae", count=3,
                                store=tmp_path / "store")
    assert entry["self_reported"] is False and entry["seeds"] == "private"
    assert v.reproduced["retrained"] == ["kuhn_poker-v0|run0", "kuhn_poker-v0|run1"]


# ---------------------------------------------------------------------- version-1 credit protocols (no seeded moves)
@pytest.fixture(scope="module")
def v1_protocol(credit_protocol, tmp_path_factory) -> Path:
    raw = json.loads(credit_protocol.read_text())
    raw.pop("seeded_moves")
    path = tmp_path_factory.mktemp("v1") / "test-credit-v1.json"
    path.write_text(json.dumps(raw))
    return path


def _v1_rejected(forged: Path, protocol: Path, tmp_path: Path, match: str) -> None:
    """Without --reproduce a version-1 submission is unverifiable (refused); with it, every cell is re-played whole
    with the re-trained player, which re-derives every move."""
    assert validate(forged, protocol=protocol).self_reported
    _rejected(forged, protocol, tmp_path / "store", "has no seeded moves (a version-1 protocol)")
    _rejected(forged, protocol, tmp_path / "store", match, reproduce=True)


def test_forgery_v1_a_thrown_opponent_is_refused(monkeypatch, v1_protocol, credit_runs, tmp_path):
    from leaderboard import evaluate as evaluate_module
    from tests.leaderboard.helpers import _fn_policy, _pick

    real = evaluate_module.opponent_for
    monkeypatch.setattr(evaluate_module, "opponent_for", lambda protocol, task, run: _fn_policy(
        lambda env, agent, rng: _pick(env, agent, "fold", "check"), real(protocol, task, run).name))
    forged = _evaluate_runs(v1_protocol, credit_runs, tmp_path / "thrown")
    monkeypatch.setattr(evaluate_module, "opponent_for", real)
    _v1_rejected(forged, v1_protocol, tmp_path, "the protocol's opponent's move")


def test_forgery_v1_mirrored_seats_are_refused(v1_protocol, credit_runs, tmp_path):
    from tests.leaderboard.helpers import _episodes

    honest = _evaluate_runs(v1_protocol, credit_runs, tmp_path / "honest")
    header, episodes = _episodes(honest)
    seat0 = {(e["run_id"].split("|")[2], e["seed"]): e for e in episodes if "|player_0|" in e["run_id"]}
    mirrored = 0
    for i, e in enumerate(episodes):
        if "|player_1|" in e["run_id"] and e["rewards"]["player_1"] < 0:
            other = json.loads(json.dumps(seat0[(e["run_id"].split("|")[2], e["seed"])]))
            other.update(run_id=e["run_id"], policies=e["policies"])
            episodes[i] = other
            mirrored += 1
    assert mirrored
    forged = _copy(honest, tmp_path)
    _reseal(forged, header, episodes)
    _v1_rejected(forged, v1_protocol, tmp_path, "differs at step")


def test_forgery_v1_the_best_of_four_engine_seeds_is_refused(monkeypatch, v1_protocol, credit_runs, tmp_path):
    from baselines.rollout import RolloutEngine

    from leaderboard import evaluate as evaluate_module

    def best_of_four(protocol, task, seat, run, player, seeds=None, progress=False, env_pool=None):
        best = None
        for k in range(1, 5):           # never the protocol's own engine seed
            engine = RolloutEngine(evaluate_module.cell_policies(protocol, task, seat, run, player))
            episodes = engine.run(task.env_id, num_tasks=protocol.seed_count, seed=protocol.seed_start + run + 7919 * k,
                                  seeds=protocol.seeds, env_kwargs=protocol.env_kwargs(task),
                                  run_id=evaluate_module.run_label(task.name, seat, run))
            score = sum(e.rewards[seat] for e in episodes)
            if best is None or score > best[0]:
                best = (score, episodes)
        return best[1]
    monkeypatch.setattr(evaluate_module, "play_cell", best_of_four)
    forged = _evaluate_runs(v1_protocol, credit_runs, tmp_path / "best")
    monkeypatch.undo()
    _v1_rejected(forged, v1_protocol, tmp_path, "differs at step")


# ---------------------------------------------------------------------- labels and duplicates
@pytest.fixture(scope="module")
def policy_protocol(tmp_path_factory) -> Path:
    return _kuhn_protocol(tmp_path_factory.mktemp("labels"), "test-labels", 4, "kuhn_poker/vs-kuhn_nash")


@pytest.fixture(scope="module")
def random_player(tmp_path_factory, policy_protocol) -> Path:
    from tests.leaderboard.helpers import _evaluate

    return _evaluate(policy_protocol, tmp_path_factory.mktemp("labels-sub") / "random")


def _players(m, **changes):
    for p in m["players"][KUHN]:
        p.update(changes)


def test_forgery_the_random_player_posted_as_gpt7_is_refused(random_player, policy_protocol, tmp_path):
    forged = _copy(random_player, tmp_path)
    _reseal(forged, manifest=lambda m: _players(m, model_id="gpt-7"))
    _rejected(forged, policy_protocol, tmp_path / "store", "model_id: 'gpt-7', but the player 'random' is 'random'")
    forged = _copy(random_player, tmp_path / "hf")       # an hf: spec names its model; --reproduce ties it to weights
    _reseal(forged, manifest=lambda m: _players(m, spec="hf:gpt-7", model_id="gpt-8"))
    _rejected(forged, policy_protocol, tmp_path / "store", "model_id: 'gpt-8', but the player 'hf:gpt-7' is 'gpt-7'")


def test_forgery_a_markdown_image_and_link_in_the_model_stay_dead_text(random_player, policy_protocol, tmp_path):
    from leaderboard.render import render, show
    from leaderboard.store import submit

    image = "![win](evil.example/x.png)[click](evil.example)"      # (an hf: model name has no ':')
    forged = _copy(random_player, tmp_path)
    _reseal(forged, manifest=lambda m: _players(m, spec=f"hf:{image}", model_id=image))
    store = tmp_path / "store"
    entry = submit(forged, store, protocol=policy_protocol)            # legal text; the model is self-reported
    assert entry["self_reported"]
    render(store, tmp_path / "site")
    md = (tmp_path / "site" / "LEADERBOARD.md").read_text()
    assert "![win]\\(evil.example/x.png)[click]\\(evil.example)" in md and "](" not in md
    page = (tmp_path / "site" / "index.html").read_text()
    assert "evil.example" in page and "<img src=\"evil" not in page and "href=\"evil" not in page
    assert "evil.example" in show(store, wide=True)
    from leaderboard.render import md_cell

    assert "://" not in md_cell("a bare https://evil.example link")         # GitHub would make it live


def test_forgery_the_same_episodes_with_blank_lines_and_another_claimed_hash_are_a_duplicate(random_player,
                                                                                         policy_protocol, tmp_path):
    from leaderboard.evaluate import EPISODES_FILE
    from leaderboard.store import load_entries, submit
    from leaderboard.validate import SubmissionError

    store = tmp_path / "store"
    submit(random_player, store, protocol=policy_protocol)
    forged = _copy(random_player, tmp_path)
    text = (forged / EPISODES_FILE).read_text().replace("\n", "\n\n", 5)
    _reseal(forged, text=text, manifest=lambda m: _players(m, weights_sha256="f" * 64))
    with pytest.raises(SubmissionError, match="duplicate: these episodes were submitted already"):
        submit(forged, store, protocol=policy_protocol)
    assert len(load_entries(store)) == 1


# ---------------------------------------------------------------------- a method of one's own, shipped as a file
SLOW_RAE = '''"""A credit method of one's own for the tests: RAE with a slower baseline (decay 0.99)."""
from baselines.credit.rae import RAE


class SlowRAE(RAE):
    def __init__(self, decay: float = 0.99, update: str = "episode") -> None:
        super().__init__(decay=decay, update=update)
'''


def _own_method_submission(credit_protocol, tmp_path, monkeypatch) -> Path:
    """Runs trained with slow_rae:SlowRAE (importable while they are trained and evaluated), evaluated into a
    submission that carries slow_rae.py; then the module is gone from this process, as on a maintainer's machine."""
    import sys

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "slow_rae.py").write_text(SLOW_RAE)
    monkeypatch.syspath_prepend(str(mine))
    runs = [_train(tmp_path / f"seed{s}", s, credit="slow_rae:SlowRAE") for s in (0, 1)]
    assert main(["evaluate", "--protocol", str(credit_protocol), "--runs", *map(str, runs), "--method", "slow-rae",
                 "--out", str(tmp_path / "sub"), "--no-progress"]) == 0
    monkeypatch.undo()
    sys.modules.pop("slow_rae", None)
    return tmp_path / "sub"


def test_a_method_shipped_as_a_file_is_retrained_in_a_sandbox_and_stored_as_reproduced(credit_protocol, tmp_path,
                                                                                      monkeypatch):
    from leaderboard.store import submit

    sub = _own_method_submission(credit_protocol, tmp_path, monkeypatch)
    assert (sub / "slow_rae.py").read_text() == SLOW_RAE
    assert validate(sub, protocol=credit_protocol).self_reported
    entry = submit(sub, tmp_path / "store", protocol=credit_protocol, reproduce=True)
    assert entry["self_reported"] is False and entry["method"] == "slow-rae"
    assert entry["results"]["reproduced"]["retrained"] == ["kuhn_poker-v0|run0", "kuhn_poker-v0|run1"]
    forged = _copy(sub, tmp_path)                      # another source than the one that trained the runs
    (forged / "slow_rae.py").write_text(SLOW_RAE.replace("0.99", "0.5"))
    _rejected(forged, credit_protocol, tmp_path / "store2", "credit_sha256: not the SHA-256 of the shipped slow_rae.py")


def test_a_shipped_method_that_runs_away_is_stopped_by_its_sandbox(credit_protocol, tmp_path, monkeypatch):
    from leaderboard import reproduce as reproduce_module
    from leaderboard.evaluate import file_sha256

    sub = _own_method_submission(credit_protocol, tmp_path, monkeypatch)
    forged = _copy(sub, tmp_path)
    (forged / "slow_rae.py").write_text(SLOW_RAE + "\n    def advantages(self, episodes):\n        while True:\n"
                                                   "            pass\n")
    digest = file_sha256(forged / "slow_rae.py")
    _reseal(forged, manifest=lambda m: [p.update(credit_sha256=digest) for p in m["players"][KUHN]])
    monkeypatch.setitem(reproduce_module.SANDBOX, "cpu_s", 10)
    why = _rejected(forged, credit_protocol, tmp_path / "store", "re-training the shipped method slow_rae.py ",
                    reproduce=True)
    assert "in its sandbox (limits: 10 s of CPU" in why or "stopped by its sandbox (wall-clock limit 80 s" in why, why
