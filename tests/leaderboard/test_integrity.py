"""Forgeries of the table: each is rejected with a message naming the problem, and nothing reaches the store.

Each forged submission is made the way a determined cheater would: by playing (or editing) and then resealing the
manifest (sizes, counts, SHA-256s, config hash), so that only the deeper checks can catch it: the opponent moves
re-derived from their seeds, the replay, the schema and text limits, the token sums, and ``--reproduce``."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from leaderboard import evaluate as evaluate_module
from leaderboard.__main__ import main
from leaderboard.evaluate import EPISODES_FILE, SUBMISSION_FILE, play_cell
from leaderboard.protocol import PROTOCOL_DIR, load_protocol
from leaderboard.reproduce import reproduce
from leaderboard.store import load_entries, submit
from leaderboard.validate import SubmissionError, validate
from tests.leaderboard.helpers import (KUHN, _copy, _episodes, _evaluate, _evaluate_runs, _fn_policy, _pick, _rejected,
                                       _reseal)


@pytest.fixture(scope="module")
def honest(tmp_path_factory, protocol_path) -> Path:
    return _evaluate(protocol_path, tmp_path_factory.mktemp("sub") / "random")


def _forge_with_opponent(monkeypatch, protocol_path, out, fn):
    """Play the protocol with an opponent of the cheater's choosing, under the protocol opponent's name."""
    real = evaluate_module.opponent_for

    def fake(protocol, task, run):
        policy = real(protocol, task, run)
        policy.policy = _fn_policy(fn, policy.name)
        return policy
    monkeypatch.setattr(evaluate_module, "opponent_for", fake)
    _evaluate(protocol_path, out)
    monkeypatch.setattr(evaluate_module, "opponent_for", real)
    return out


# ---------------------------------------------------------------------- the honest path
def test_an_honest_policy2_submission_validates_with_every_opponent_move_rederived(honest, protocol_path):
    v = validate(honest, protocol=protocol_path)
    assert v.replayed == v.episodes == 2 * 2 * 8 and v.rederived > 2 * 2 * 8
    assert v.self_reported
    r = validate(honest, protocol=protocol_path)
    reproduce(r, sample=4)
    assert not r.self_reported and r.reproduced["episodes"] >= 4


def test_the_reference_bot_scores_exactly_one_against_itself_on_duplicate_deals(protocol_path, tmp_path):
    v = validate(_evaluate(protocol_path, tmp_path / "ref", "reference", "ref"), protocol=protocol_path)
    assert v.task_means()["kuhn_poker/vs-kuhn_nash"] == pytest.approx(1.0)


def test_seeded_moves_do_not_depend_on_the_batch(protocol_path):
    from leaderboard.players import load_player

    proto = load_protocol(protocol_path)
    task = proto.tasks[0]
    player = load_player("random", KUHN, ["player_0", "player_1"], "discrete")
    whole = {e.seed: e.transcript["actions"] for e in play_cell(proto, task, "player_1", 0, player)}
    part = play_cell(proto, task, "player_1", 0, player, seeds=proto.seeds[5:7])
    assert {e.seed: e.transcript["actions"] for e in part} == {s: whole[s] for s in proto.seeds[5:7]}


# ---------------------------------------------------------------------- one test per forgery of the table
def test_forgery_an_opponent_that_folds_whenever_it_can_is_rejected(monkeypatch, protocol_path, tmp_path):
    forged = _forge_with_opponent(monkeypatch, protocol_path, tmp_path / "fold",
                                  lambda env, agent, rng: _pick(env, agent, "fold", "check"))
    msg = _rejected(forged, protocol_path, tmp_path / "store", "is the protocol's opponent reference:kuhn_nash")
    assert "re-derived from the seed" in msg


def test_forgery_an_opponent_forfeit_by_a_null_move_is_rejected(monkeypatch, protocol_path, tmp_path):
    forged = _forge_with_opponent(monkeypatch, protocol_path, tmp_path / "null", lambda env, agent, rng: None)
    header, episodes = _episodes(forged)
    for e in episodes:          # a careful forger drops the null move's turn, so the turns match the moves
        nulls = {i for i, a in enumerate(e["transcript"]["actions"]) if a is None}
        e["turns"] = [t for t in e["turns"] if t["step_index"] not in nulls]
        for agent in e["rewards"]:
            e["rewards"][agent] = sum(t["reward"] for t in e["turns"] if t["agent"] == agent)
    _reseal(forged, header, episodes)
    _rejected(forged, protocol_path, tmp_path / "store", "None is a dead agent's step, but player_")


def test_forgery_episodes_against_random_relabelled_as_against_the_nash_bot_is_rejected(honest, protocol_path,
                                                                                       tmp_path):
    forged = _copy(honest, tmp_path)
    header, episodes = _episodes(forged)
    def relabel(e, old, new, name):
        e["run_id"] = e["run_id"].replace(old, new)
        seat = e["run_id"].split("|")[1]
        e["policies"]["player_1" if seat == "player_0" else "player_0"]["name"] = name
    for e in episodes:        # swap the two tasks: the wins against random now count as wins against Nash
        if e["run_id"].startswith("kuhn_poker/vs-random|"):
            relabel(e, "vs-random", "vs-kuhn_nash", "reference:kuhn_nash")
        elif e["run_id"].startswith("kuhn_poker/vs-kuhn_nash|"):
            relabel(e, "vs-kuhn_nash", "vs-random", "random")
    _reseal(forged, header, episodes)
    _rejected(forged, protocol_path, tmp_path / "store", "is the protocol's opponent")


def test_forgery_one_seats_game_mirrored_into_the_other_seat_is_rejected(honest, protocol_path, tmp_path):
    forged = _copy(honest, tmp_path)
    header, episodes = _episodes(forged)
    cell = "kuhn_poker/vs-kuhn_nash|"
    seat0 = {e["seed"]: e for e in episodes if e["run_id"].startswith(cell + "player_0|")}
    mirrored = 0
    for i, e in enumerate(episodes):
        if e["run_id"].startswith(cell + "player_1|") and e["rewards"]["player_1"] < 0:     # a losing seed
            other = json.loads(json.dumps(seat0[e["seed"]]))      # the same deal, played from the other seat
            other["run_id"] = e["run_id"]
            other["policies"] = e["policies"]
            episodes[i] = other
            mirrored += 1
    assert mirrored
    _reseal(forged, header, episodes)
    _rejected(forged, protocol_path, tmp_path / "store", "player_0 is the protocol's opponent reference:kuhn_nash")


def test_forgery_a_random_player_that_reads_the_opponents_card_is_rejected_by_reproduce(monkeypatch, protocol_path,
                                                                                          tmp_path):
    def peek(env, agent, rng):
        cards = env.unwrapped._cards
        other = next(a for a in cards if a != agent)
        return _pick(env, agent, "bet", "call") if cards[agent] > cards[other] else _pick(env, agent, "check", "fold")

    real = evaluate_module.load_player

    def cheat(spec, *args, **kwargs):
        player = real(spec, *args, **kwargs)        # provenance, hash and name of the genuine random player
        player.policies = {r: _fn_policy(peek, "random") for r in player.policies}
        return player
    monkeypatch.setattr(evaluate_module, "load_player", cheat)
    out = tmp_path / "peek"
    _evaluate(protocol_path, out)
    monkeypatch.setattr(evaluate_module, "load_player", real)
    assert validate(out, protocol=protocol_path).self_reported          # it plays legal moves: only reproduction
    _rejected(out, protocol_path, tmp_path / "store", "(the moves are not the claimed player's)", reproduce=True)


def test_forgery_token_counts_as_floats_or_refunds_are_rejected(credit_submission, credit_protocol, tmp_path):
    for value, match in ((1.5, "train_tokens: {'main': N, 'branches': N} with non-negative integer counts"),
                         (-100, "non-negative integer counts")):
        forged = _copy(credit_submission, tmp_path / str(value))
        _reseal(forged, manifest=lambda m: m["players"][KUHN][0]["train_tokens"].update(main=value))
        _rejected(forged, credit_protocol, tmp_path / "store", match)
    forged = _copy(credit_submission, tmp_path / "refund")
    _reseal(forged, manifest=lambda m: m["players"][KUHN][0]["train_tokens"].update(refund=-10**6))
    _rejected(forged, credit_protocol, tmp_path / "store", "players.kuhn_poker-v0[0].train_tokens")
    forged = _copy(credit_submission, tmp_path / "total")
    _reseal(forged, manifest=lambda m: m["tokens"].update(train_main=m["tokens"]["train_main"] - 1))
    _rejected(forged, credit_protocol, tmp_path / "store", "are not the sums over the runs' train_tokens")


def test_forgery_a_protocol_id_that_is_a_path_is_rejected(honest, tmp_path):
    evil = tmp_path / "evil"
    evil.mkdir()
    shutil.copy(PROTOCOL_DIR / "policy.json", evil / "policy.json")
    for pid in (str(evil / "policy"), "../../../" + str(evil / "policy"), "Policy", "policy@2"):
        forged = _copy(honest, tmp_path / f"p{len(pid)}")
        _reseal(forged, manifest=lambda m: m["protocol"].update(id=pid))
        _rejected(forged, None, tmp_path / "store", "is not a protocol id")
    forged = _copy(honest, tmp_path / "unregistered")
    _reseal(forged, manifest=lambda m: m["protocol"].update(id="no-such-protocol"))
    _rejected(forged, None, tmp_path / "store", "'no-such-protocol' is not a registered protocol")


def test_a_store_index_row_pointing_outside_the_store_is_refused(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (tmp_path / "outside.json").write_text("{}")
    (store / "index.json").write_text(json.dumps({"entries": [{"protocol": "policy@2", "file": "../outside.json"}]}))
    with pytest.raises(SubmissionError, match="resolves outside the store"):
        load_entries(store)


@pytest.mark.parametrize("index, entry, message", [
    ('{"entries": [', None, r"index.json: the store's index is damaged \(JSONDecodeError"),
    ("[1]", None, r"index.json: the store's index is damaged \(a JSON list"),
    ('{"entries": [3]}', None, r"index.json: the store's index is damaged \('entries' must be a list of rows"),
    ('{"entries": [{"protocol": "policy@2", "file": "a.json"}]}', None, r"a.json: an entry is missing"),
    ('{"entries": [{"protocol": "policy@2", "file": "a.json"}]}', "{", r"a.json: an entry is damaged"),
])
def test_a_damaged_store_is_a_clear_error_naming_the_file(tmp_path, index, entry, message):
    """The store is written only by submit, atomically: a damaged file came from outside, so reading it (render,
    submit's duplicate check) stops with the file's name, not a traceback from deep inside."""
    from leaderboard.__main__ import main

    store = tmp_path / "store"
    store.mkdir()
    (store / "index.json").write_text(index)
    if entry is not None:
        (store / "a.json").write_text(entry)
    with pytest.raises(ValueError, match=message):
        load_entries(store)
    assert main(["render", "--store", str(store), "--out", str(tmp_path / "site")]) == 2
    assert (store / "index.json").read_text() == index          # left as it was


def test_forgery_a_newline_and_html_in_model_id_is_rejected(honest, protocol_path, tmp_path):
    row = "x\n| 1 | winner#000000 | <script>alert(1)</script> | 1 | 9.99 |"
    forged = _copy(honest, tmp_path)
    _reseal(forged, manifest=lambda m: m["players"][KUHN][0].update(model_id=row))
    _rejected(forged, protocol_path, tmp_path / "store", "players.kuhn_poker-v0[0].model_id: the character '\\n' "
                                                         "is not allowed")
    forged = _copy(honest, tmp_path / "b")
    _reseal(forged, manifest=lambda m: m.update(note="fine <b>bold</b>"))
    _rejected(forged, protocol_path, tmp_path / "store", "note: the character '<' is not allowed")


def test_forgery_blank_lines_do_not_make_the_same_episodes_a_new_submission(honest, protocol_path, tmp_path):
    store = tmp_path / "store"
    submit(honest, store, protocol=protocol_path)
    forged = _copy(honest, tmp_path)
    text = (forged / EPISODES_FILE).read_text()
    _reseal(forged, text=text.replace("\n", "\n\n", 3))
    assert hashlib.sha256((forged / EPISODES_FILE).read_bytes()).hexdigest() != \
        hashlib.sha256((honest / EPISODES_FILE).read_bytes()).hexdigest()
    with pytest.raises(SubmissionError, match="duplicate: these episodes were submitted already"):
        submit(forged, store, protocol=protocol_path)
    assert len(load_entries(store)) == 1


def test_forgery_sample_zero_is_refused(honest, protocol_path, capsys):
    with pytest.raises(ValueError, match="replay at least 1 episode"):
        validate(honest, protocol=protocol_path, sample=0)
    assert main(["validate", str(honest), "--protocol", str(protocol_path), "--sample", "0"]) == 2
    assert "replay at least 1 episode" in capsys.readouterr().err
    assert validate(honest, protocol=protocol_path, sample=1).replayed == 1


@pytest.mark.parametrize("edit, match", [
    (lambda e: e["rewards"].update(player_0=10**400), "episodes.jsonl:2.rewards.player_0: the number 1000"),
    (lambda e: e["rewards"].update(player_0=3.0), "rewards.player_0: 3.0 is outside kuhn_poker-v0's reward range"),
    (lambda e: e.update(rewards={}), "rewards: has rewards for []; every agent of kuhn_poker-v0 needs one"),
    (lambda e: e["rewards"].pop("player_1"), "every agent of kuhn_poker-v0 needs one"),
    (lambda e: e["policies"]["player_0"].update(deep="NEST"), "episodes.jsonl:2: JSON nested too deeply"),
])
def test_forgery_huge_numbers_deep_nesting_and_missing_rewards_are_rejected_cleanly(honest, protocol_path, tmp_path,
                                                                                    edit, match):
    forged = _copy(honest, tmp_path)
    header, episodes = _episodes(forged)
    edit(episodes[0])
    text = header + "\n" + "".join(json.dumps(e) + "\n" for e in episodes)
    text = text.replace('"NEST"', "[" * 100_000 + "]" * 100_000, 1)
    _reseal(forged, text=text)
    _rejected(forged, protocol_path, tmp_path / "store", match)


def test_a_genuine_mlp_credit_run_passes_reproduce_with_a_retrained_run(credit_submission, credit_protocol, tmp_path):
    v = validate(credit_submission, protocol=credit_protocol, audit_seed=0)
    reproduce(v, retrain=1, audit_seed=0, workdir=tmp_path)
    assert len(v.reproduced["retrained"]) == 1 and v.reproduced["episodes"] > 0 and not v.self_reported


def test_reproduce_fails_when_the_weights_hash_or_the_training_config_was_edited(credit_submission, credit_protocol,
                                                                                tmp_path):
    forged = _copy(credit_submission, tmp_path / "hash")
    _reseal(forged, manifest=lambda m: [p.update(weights_sha256="0" * 64) for p in m["players"][KUHN]])
    why = _rejected(forged, credit_protocol, tmp_path / "store", "weights_sha256: the re-run player", reproduce=True)
    # the message says what the retrained floats depend on beyond the config, for an honest submitter to check
    assert "trained again here from its train_config, with the manifest's torch and MKL_CBWR=AVX2" in why, why
    forged = _copy(credit_submission, tmp_path / "torch")
    _reseal(forged, manifest=lambda m: [m["packages"].update(torch="2.0.0"),
                                        *[p.update(weights_sha256="0" * 64) for p in m["players"][KUHN]]])
    why = _rejected(forged, credit_protocol, tmp_path / "store", "weights_sha256: the re-run player", reproduce=True)
    assert "(the manifest's: '2.0.0')" in why, why
    forged = _copy(credit_submission, tmp_path / "config")       # the method's own options: re-trained, not pinned
    _reseal(forged, manifest=lambda m: [p["train_config"].update(credit_options={"decay": 0.5})
                                        for p in m["players"][KUHN]])
    _rejected(forged, credit_protocol, tmp_path / "store", "weights_sha256: the re-run player", reproduce=True)
    forged = _copy(credit_submission, tmp_path / "lr")           # a trainer setting: pinned by the protocol
    _reseal(forged, manifest=lambda m: [p["train_config"].update(lr=0.5) for p in m["players"][KUHN]])
    _rejected(forged, credit_protocol, tmp_path / "store", "trains with lr=0.0, this run has lr=0.5", reproduce=True)


def test_forgery_credit_entry_with_no_training_and_a_copied_players_block_is_rejected(credit_submission,
                                                                                       credit_protocol, tmp_path):
    """Episodes of the reference bots, with the players block (train config, weights hash, curve) of a genuine
    run: consistent enough for validate (it is self-reported), refused by --reproduce."""
    from leaderboard.players import load_player

    proto = load_protocol(credit_protocol)
    bot = load_player("reference", KUHN, ["player_0", "player_1"], "discrete")
    forged = _copy(credit_submission, tmp_path)
    header, genuine = _episodes(forged)
    episodes = []
    for task in proto.tasks:
        for seat in ("player_0", "player_1"):
            for r in range(2):
                for e in play_cell(proto, task, seat, r, bot):
                    d = json.loads(e.to_json())
                    d["policies"][seat] = next(g for g in genuine if g["run_id"] == d["run_id"])["policies"][seat]
                    episodes.append(d)
    _reseal(forged, header, episodes)
    assert validate(forged, protocol=credit_protocol).self_reported
    _rejected(forged, credit_protocol, tmp_path / "store", "(the moves are not the claimed player's)", reproduce=True)


# ---------------------------------------------------------------------- old entries, self-reported marking
def test_the_stored_version1_entries_still_load_and_render(tmp_path):
    from leaderboard.render import render, show

    stored = Path(__file__).resolve().parents[2] / "board" / "entries"      # the repository's entries
    entries = load_entries(stored)
    assert {e["protocol"] for e in entries} >= {"policy@1", "credit-micro@1", "credit-micro-quick@1"}
    assert "policy@1" in show(stored)
    render(stored, tmp_path)
    assert "policy@1" in (tmp_path / "LEADERBOARD.md").read_text()


def test_a_self_reported_entry_is_marked_in_show_markdown_and_the_page(honest, protocol_path, tmp_path):
    from leaderboard.render import render, show

    store = tmp_path / "store"
    entry = submit(honest, store, protocol=protocol_path)
    assert entry["self_reported"] is True and entry["results"]["reproduced"] is None
    assert "self-reported" in show(store)
    render(store, tmp_path / "site")
    assert "<span class='self-reported'" in (tmp_path / "site" / "index.html").read_text()
    assert "(self-reported)" in (tmp_path / "site" / "LEADERBOARD.md").read_text()


# ---------------------------------------------------------------------- private-seed mode
def test_private_seed_mode_plays_on_seeds_drawn_at_validation_time(protocol_path, tmp_path, capsys):
    from leaderboard.private import PRIVATE_SEED_START

    store = tmp_path / "store"
    assert main(["evaluate-private", "--protocol", str(protocol_path), "--player", "random", "--method", "hidden",
                 "--count", "3", "--out", str(tmp_path / "a"), "--submit", "--store", str(store),
                 "--no-progress"]) == 0
    assert "on private seeds" in capsys.readouterr().out
    (entry,) = load_entries(store)
    assert entry["seeds"] == "private" and entry["self_reported"] is False
    start = entry["manifest"]["seeds"]["eval_start"]
    assert start >= PRIVATE_SEED_START and entry["results"]["reproduced"]["private_seeds"]["start"] == start
    assert main(["evaluate-private", "--protocol", str(protocol_path), "--player", "random", "--method", "hidden",
                 "--count", "3", "--out", str(tmp_path / "b"), "--no-progress"]) == 0
    assert json.loads((tmp_path / "b" / SUBMISSION_FILE).read_text())["seeds"]["eval_start"] != start
    with pytest.raises(SubmissionError, match="are not the protocol's"):      # not the public seeds
        validate(tmp_path / "b", protocol=protocol_path)


def test_reproduce_on_a_version1_credit_protocol_replays_whole_cells(credit_protocol, credit_runs, tmp_path):
    """credit-micro@1 has no seeded moves: a re-play is exact only cell by cell, as evaluate batched it."""
    raw = json.loads(credit_protocol.read_text())
    raw.pop("seeded_moves")
    v1 = tmp_path / "test-credit-v1.json"
    v1.write_text(json.dumps(raw))
    out = _evaluate_runs(v1, credit_runs, tmp_path / "sub")
    v = validate(out, protocol=v1)
    reproduce(v, sample=1, retrain=0)
    assert v.rederived == 0 and v.reproduced["episodes"] == v.episodes      # every cell re-played whole


def test_reproduce_replays_a_local_hf_model(protocol_path, tmp_path):
    raw = json.loads(protocol_path.read_text())
    raw.update(seeds={"start": 2**40, "count": 2})
    raw["tasks"] = raw["tasks"][:1]
    small = tmp_path / "test-policy.json"
    small.write_text(json.dumps(raw))
    out = _evaluate(small, tmp_path / "tiny", "hf:tiny", "tiny")
    v = validate(out, protocol=small)
    reproduce(v)
    assert v.reproduced["episodes"] == 4 and not v.self_reported


def test_reproduce_refuses_a_player_that_cannot_run_here(honest, protocol_path, tmp_path):
    forged = _copy(honest, tmp_path)
    _reseal(forged, manifest=lambda m: [p.update(spec=f"checkpoint:{tmp_path / 'not-here'}", model_id="mlp",
                                                 train_config={"model": "mlp"}) for p in m["players"][KUHN]])
    _rejected(forged, protocol_path, tmp_path / "store", "cannot be re-run here (its weights are not on this machine)",
              reproduce=True)
