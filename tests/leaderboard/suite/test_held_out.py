"""What a suite score is (issue 40 item 6). A suite that keeps several checkpoints of every run (credit-micro@4's
``score.checkpoints``) scores the final policy on held-out env seeds, not the training tail, and the best checkpoint
chosen on one half of those seeds and reported on the other, with a collapse flag for a run that peaked and fell;
older suites (one checkpoint) keep the tail, and their stored entries re-score identically."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest

import marl_llm_envs
from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig
from baselines.train.config import write_run_config
from leaderboard.players import load_player
from leaderboard.suite import entry, load_suite, plan, score, score_run, train_run
from leaderboard.suite.runs import best_checkpoint, held_out_values, kept_steps, run_spec
from leaderboard.suite.score import COLLAPSE_THRESHOLD, collapses

ROOT = Path(__file__).resolve().parents[3]
EVAL = 24            # held-out seeds of the tests' runs (the suite's 200, fewer for speed)


def _spec(tmp_path: Path, setting: str, **over) -> dict:
    suite = load_suite("credit-micro@4")
    spec = next(s for s in plan(suite, ["broadcast"], tmp_path)[0] if s["setting"] == setting)
    return {**spec, "steps": 10, "tasks_per_step": 2, "group_size": 2, "eval_count": EVAL, **over}


@pytest.fixture(scope="module")
def voting(tmp_path_factory):
    """A short credit-micro@4 voting run (5 kept checkpoints: steps 2, 4, 6, 8, 10) and its honest score."""
    spec = _spec(tmp_path_factory.mktemp("held_out"), "voting/fraction/n2")
    run = Path(train_run(spec))
    return spec, run, score_run(spec, run)


def _play_final(spec: dict, run: Path) -> list[float]:
    """The final policy in self-play on the held-out seeds, played here with the rollout engine directly."""
    env = marl_llm_envs.make(spec["env_id"], **spec["env_kwargs"], action_mode="discrete")
    player = load_player(f"checkpoint:{run}", spec["env_id"], sorted(set(env.roles.values())), "discrete")
    seeds = list(range(spec["eval_start"], spec["eval_start"] + spec["eval_count"]))
    eps = RolloutEngine(player.policies, show_progress=False).run(
        spec["env_id"], num_tasks=len(seeds), seed=spec["eval_start"], seeds=seeds,
        env_kwargs={**spec["env_kwargs"], "action_mode": "discrete"}, run_id="held-out")
    return [e.team_rewards["team"] for e in eps]


def test_a_self_setting_scores_its_final_policy_on_the_held_out_seeds_not_the_training_tail(voting):
    spec, run, got = voting
    assert spec["checkpoints"] == 5 and spec["eval_start"] == 2 ** 40
    assert got["raw"] == pytest.approx(np.mean(_play_final(spec, run)), abs=1e-12)
    tail = np.mean(got["curve"][-2:])                               # last_fraction 0.2 of 10 steps
    assert got["raw"] != pytest.approx(tail)                        # not the tail
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    (run / "metrics.jsonl").write_text("".join(json.dumps({**r, "reward/team/team": 1.0}) + "\n" for r in rows))
    try:
        raised = score_run(spec, run)
        assert raised["raw"] == got["raw"] and raised["best"] == got["best"]    # a raised curve scores nothing
        assert np.mean(raised["curve"]) == 1.0
        old = score_run({k: v for k, v in spec.items() if k != "checkpoints"}, run)   # a one-checkpoint suite's rule
        assert old["raw"] == 1.0 and "best" not in old and "checkpoints" not in old
    finally:
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_every_kept_checkpoint_is_scored_on_both_halves_of_the_held_out_seeds(voting):
    spec, run, got = voting
    assert [c["step"] for c in got["checkpoints"]] == kept_steps(10, 5) == [2, 4, 6, 8, 10]
    for c in got["checkpoints"]:
        (values,) = held_out_values(spec, [run / "checkpoints" / f"step-{c['step']:07d}"], [c["step"]])
        assert len(values) == EVAL
        assert (c["a"], c["b"]) == pytest.approx((np.mean(values[:EVAL // 2]), np.mean(values[EVAL // 2:])))
    final = got["checkpoints"][-1]
    assert got["raw"] == pytest.approx((final["a"] + final["b"]) / 2)
    assert got["best"] == best_checkpoint([c["step"] for c in got["checkpoints"]],
                                          [(c["a"], c["b"]) for c in got["checkpoints"]])
    assert score_run(spec, run) == got                                           # deterministic given the seeds


def test_the_best_checkpoint_is_chosen_on_half_a_and_reported_on_half_b():
    # (half A, half B) per kept checkpoint: A's best is a tie of steps 40 and 60 (the later wins), and B's best
    # (step 80, 0.8) is never chosen: selecting on B would report a maximum of noisy means
    halves = [(0.2, 0.3), (0.9, 0.5), (0.9, 0.6), (0.4, 0.8), (0.5, 0.45)]
    assert best_checkpoint([20, 40, 60, 80, 100], halves) == {"step": 60, "raw": 0.6, "final": 0.45}
    assert best_checkpoint([20, 40], [(0.7, 0.1), (0.7, 0.2)]) == {"step": 40, "raw": 0.2, "final": 0.2}
    with pytest.raises(ValueError, match="one \\(half A, half B\\) pair per step"):
        best_checkpoint([20, 40], [(0.7, 0.1)])


def _planted(method: str, setting: str, seed: int, raw: float, best: float, final: float) -> dict:
    return {"method": method, "setting": setting, "seed": seed, "raw": raw, "curve": [0.0], "tokens": {"main": 1},
            "free_riding": {}, "config_hash": "x", "best": {"step": 60, "raw": best, "final": final},
            "checkpoints": []}


def test_a_run_that_peaked_and_fell_is_flagged_collapsed(tmp_path):
    suite = load_suite("credit-micro-quick@2")        # seeds 0-2; anchors from the cache below (no measuring)
    n2, n8 = "voting/plurality/n2", "voting/plurality/n8"
    anchors = {n2: {"zero": 0.0, "one": 1.0}, n8: {"zero": 0.2, "one": 0.7}}
    cache = tmp_path / "anchors.json"
    cache.write_text(json.dumps({"suite_sha256": suite.sha256, "anchors": anchors}))
    # n2 (normalised = raw): best - final = 0.3 (collapsed), 0.2 (the threshold itself: not), 0.0
    # n8 (normalised = (raw - 0.2) / 0.5): best 0.9 - final 0.5 = 0.4 (collapsed), 0.1, 0.0
    results = [_planted("a", n2, 0, 0.55, 0.9, 0.6), _planted("a", n2, 1, 0.6, 0.5, 0.3),
               _planted("a", n2, 2, 0.7, 0.7, 0.7),
               _planted("a", n8, 0, 0.45, 0.65, 0.45), _planted("a", n8, 1, 0.5, 0.55, 0.5),
               _planted("a", n8, 2, 0.6, 0.6, 0.6)]
    v = score(suite, results, cache=cache)["methods"]["a"]
    assert COLLAPSE_THRESHOLD == 0.2
    s2, s8 = v["settings"][n2], v["settings"][n8]
    assert s2["collapsed"] == 1 and s8["collapsed"] == 1
    assert s2["best"]["seeds"] == pytest.approx([0.9, 0.5, 0.7])
    assert s2["best"]["final"] == pytest.approx([0.6, 0.3, 0.7])
    assert s8["best"]["seeds"] == pytest.approx([0.9, 0.7, 0.8])
    assert s2["seeds"] == pytest.approx([0.55, 0.6, 0.7])        # the main score stays the final policy's
    fam = v["families"]["team_size"]
    assert fam["collapsed"] == 2 and v["aggregate"]["collapsed"] == 2
    assert fam["best"]["seeds"] == pytest.approx([0.9, 0.6, 0.75])        # per seed, the mean over settings
    assert fam["best"]["ci"][0] == pytest.approx(0.75)
    e = entry(suite, score(suite, results, cache=cache), "a", results)
    assert e["results"]["collapses"] == {n2: 1, n8: 1}
    assert e["results"]["best"][n8] == pytest.approx([0.9, 0.7, 0.8])
    assert collapses([0.5, 0.9], [0.1, 0.9]) == 1


def test_results_without_a_best_checkpoint_have_no_best_block_or_collapse_count(tmp_path):
    suite = load_suite("credit-micro-quick@2")
    n2 = "voting/plurality/n2"
    cache = tmp_path / "anchors.json"
    cache.write_text(json.dumps({"suite_sha256": suite.sha256, "anchors": {n2: {"zero": 0.0, "one": 1.0}}}))
    results = [{k: v for k, v in _planted("a", n2, sd, 0.5, 0.9, 0.1).items() if k not in ("best", "checkpoints")}
               for sd in range(3)]
    scored = score(suite, results, cache=cache)
    v = scored["methods"]["a"]
    assert not any(k in block for block in (v["settings"][n2], v["families"]["team_size"], v["aggregate"])
                   for k in ("best", "collapsed"))
    assert not {"collapses", "best"} & set(entry(suite, scored, "a", results)["results"])


def test_a_decisive_reward_setting_scores_the_noise_free_reward_of_its_final_policy(tmp_path):
    spec = _spec(tmp_path, "team_umbrella/delay3", steps=5, eval_count=16)
    run = Path(train_run(spec))
    got = score_run(spec, run)
    (values,) = held_out_values(spec, [run / "checkpoints" / "step-0000005"], [5])
    env = marl_llm_envs.make("team_umbrella-v0", delay=3, action_mode="discrete")
    player = load_player(f"checkpoint:{run}", "team_umbrella-v0", sorted(set(env.roles.values())), "discrete")
    seeds = list(range(2 ** 40, 2 ** 40 + 16))
    eps = RolloutEngine(player.policies, show_progress=False).run(
        "team_umbrella-v0", num_tasks=16, seed=2 ** 40, seeds=seeds, env_kwargs={"delay": 3, "action_mode": "discrete"},
        run_id="held-out")
    assert values == pytest.approx([e.final_infos["player_0"]["decisive_reward"] for e in eps])
    assert got["raw"] == pytest.approx(np.mean(values))
    assert values != pytest.approx([e.team_rewards["team"] for e in eps])      # the noisy return is not scored


def test_an_exact_setting_selects_its_best_checkpoint_on_the_exact_score(tmp_path):
    spec = _spec(tmp_path, "kuhn_poker/self-play", steps=5)
    run = Path(train_run(spec))
    got = score_run(spec, run)
    assert [c["step"] for c in got["checkpoints"]] == [1, 2, 3, 4, 5]
    assert all(c["a"] == c["b"] for c in got["checkpoints"])             # exact: no seeds, no halves
    top = max(got["checkpoints"], key=lambda c: (c["a"], c["step"]))
    assert got["best"] == {"step": top["step"], "raw": top["a"], "final": got["checkpoints"][-1]["a"]}
    assert got["raw"] == got["checkpoints"][-1]["a"] and "exploitability" in got


def _v3_entries() -> list[dict]:
    files = sorted(glob.glob(str(ROOT / "board/entries/credit-micro@3/*.json")))
    return [json.loads(Path(f).read_text()) for f in files]


def test_an_old_protocols_stored_entry_re_scores_identically(tmp_path):
    """credit-micro@3 keeps one checkpoint: its self settings still score the training tail. Each stored run's
    learning curve, written back as its metrics.jsonl, re-scores to the stored raw score, and the stored raw scores
    re-score (with the stored anchors) to the stored per-seed scores, with no best or collapse field."""
    suite = load_suite("credit-micro@3")
    assert suite.score["checkpoints"] == 1
    stored = next(e for e in _v3_entries() if e["method"] == "broadcast")
    settings = {s.name: s for s in suite.settings}
    checked = 0
    for r in stored["manifest"]["runs"]:
        s = settings[r["setting"]]
        if s.play != "self" or (marl_llm_envs.spec(s.env_id).idle_roles and s.env_kwargs.get("idle_seats", 1) > 0):
            continue                        # versus: the final policy played (no weights stored); idle drift as well
        run = tmp_path / str(checked)
        run.mkdir()
        b = suite.budget(s)
        write_run_config(run, TrainConfig(env=s.env_id, env_kwargs=dict(s.env_kwargs), action_mode="discrete",
                                          model="mlp", steps=b["steps"], seed=r["seed"], partners=s.partners,
                                          out=str(run)), "discrete")
        (run / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "reward/team/team": x}) + "\n"
                                                   for i, x in enumerate(r["learning_curve"])))
        spec = run_spec(suite, s, r["seed"], "broadcast", run)
        assert "checkpoints" not in spec
        got = score_run(spec, run)
        assert got["raw"] == r["raw"] and "best" not in got
        checked += 1
    assert checked >= 50
    cache = tmp_path / "anchors.json"
    cache.write_text(json.dumps({"suite_sha256": suite.sha256, "anchors": stored["manifest"]["anchors"]}))
    results = [{**r, "method": "broadcast", "curve": r["learning_curve"]} for r in stored["manifest"]["runs"]]
    again = entry(suite, score(suite, results, cache=cache), "broadcast", results)["results"]
    assert again["settings"] == stored["results"]["settings"] and again["families"] == stored["results"]["families"]
    assert again["aggregate"] == stored["results"]["aggregate"] and not {"collapses", "best"} & set(again)


def test_the_kept_steps_are_the_checkpoints_the_trainer_keeps(tmp_path):
    assert kept_steps(100, 5) == [20, 40, 60, 80, 100] and kept_steps(100, 1) == [100]
    spec = _spec(tmp_path, "voting/fraction/n2", steps=3, checkpoints=2)      # 2 does not divide 3: saved 1, 2, 3
    run = Path(train_run(spec))
    assert sorted(p.name for p in (run / "checkpoints").iterdir() if p.is_dir()) == \
        [f"step-{k:07d}" for k in kept_steps(3, 2)] == ["step-0000002", "step-0000003"]
