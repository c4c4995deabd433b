"""benchmarks/llm_team.py (issue 43 item 3's campaign): the recipe's command line, reading the held-out checkpoints
of finished and part-finished runs, and the paired report with Holm."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.benchmark_scripts import load

team = load("llm_team")


def _args(**kw):
    ns = team.argparse.Namespace(model="smollm2-135m", steps=50, relay_steps=20, tasks=32, group=8, lr=1e-3,
                                 eval_every=10, eval_episodes=32, out="unused",
                                 micro_batch_tokens=1024, alternate_every=0, hint_required=False,
                                 solver_steps=0, jobs=1)
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def test_the_maxrl_label_is_broadcast_with_the_mean_scaling_and_other_labels_keep_their_defaults(tmp_path):
    cmd = team.command("broadcast-maxrl", 3, _args(), tmp_path, resume=False)
    flags = dict(zip(cmd[3::2], cmd[4::2]))
    assert flags["--credit"] == "broadcast" and json.loads(flags["--credit-options"]) == {"std": "mean"}
    assert flags["--partners"] == "thinker=reference:20" and flags["--seed"] == "3"
    assert json.loads(flags["--env-kwargs"]) == {"thinker_clue_accuracy": 0.9, "clue_pool": "words"}
    assert "--resume" not in cmd
    loo = team.command("loo", 0, _args(), tmp_path, resume=True)
    assert dict(zip(loo[3::2], loo[4::2]))["--credit-options"] == "{}" and loo[-1] == "--resume"
    dr_cmd = team.command("broadcast-drgrpo", 3, _args(), tmp_path, resume=False)
    dr = dict(zip(dr_cmd[3::2], dr_cmd[4::2]))
    assert dr["--credit"] == "broadcast" and json.loads(dr["--credit-options"]) == {"std": None}
    from baselines.credit import make_credit
    from baselines.train.config import TrainConfig
    cfg = TrainConfig.from_args(dr_cmd[3:])
    assert make_credit(cfg.credit, **cfg.credit_options).std is None     # the trainer builds Dr. GRPO's centring
    grpo_cmd = team.command("broadcast", 3, _args(), tmp_path, resume=False)
    plain = dict(zip(grpo_cmd[3::2], grpo_cmd[4::2]))
    assert plain["--credit"] == "broadcast" and plain["--credit-options"] == "{}"


def test_alternating_updates_reach_the_trainer_only_when_asked_and_the_trainer_accepts_the_command(tmp_path):
    from baselines.train.config import TrainConfig

    plain = team.command("broadcast-maxrl", 1, _args(), tmp_path, resume=False)
    assert "--alternate-every" not in plain and TrainConfig.from_args(plain[3:]).alternate_every == 0
    alt = team.command("broadcast-maxrl", 1, _args(alternate_every=20, steps=60), tmp_path, resume=True)
    cfg = TrainConfig.from_args(alt[3:])
    assert (cfg.alternate_every, cfg.steps, cfg.partners, cfg.resume) == (20, 60, "thinker=reference:20", True)
    assert cfg.credit_options == {"std": "mean"} and cfg.micro_batch_tokens == 1024


def test_a_required_hint_reaches_the_env_only_when_asked(tmp_path):
    from baselines.train.config import TrainConfig

    cfg = TrainConfig.from_args(team.command("loo", 2, _args(hint_required=True), tmp_path, resume=False)[3:])
    assert cfg.env_kwargs == {"thinker_clue_accuracy": 0.9, "clue_pool": "words", "hint_optional": False}


def _run(root, method, seed, finals, steps=4, every=2):
    """A metrics.jsonl of a run with held-out team reward 0.25 at the start and ``finals[k]`` after update k*every."""
    run = root / method / f"seed{seed}"
    run.mkdir(parents=True)
    lines = []
    for step in range(steps):
        row = {"step": step}
        if step == 0:
            row.update({f"eval_start/{m}": 0.25 for m in team.METRICS})
        k = (step + 1) // every
        if (step + 1) % every == 0 and k - 1 < len(finals):
            row.update({f"eval/{m}": finals[k - 1] for m in team.METRICS})
        lines.append(json.dumps(row))
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def test_the_report_pairs_finished_seeds_and_corrects_every_comparison_together(tmp_path):
    for s, (a, b) in enumerate([(0.80, 0.60), (0.85, 0.62), (0.90, 0.61), (0.82, 0.58), (0.88, 0.66)]):
        _run(tmp_path, "broadcast-maxrl", s, [0.5, a])
        _run(tmp_path, "loo", s, [0.4, b])
    _run(tmp_path, "loo", 5, [0.3])                       # stopped after the first checkpoint: not at the last
    data = team.curves(tmp_path)
    assert data["loo"][5] == {0: {m: 0.25 for m in team.METRICS}, 2: {m: 0.3 for m in team.METRICS}}
    text = team.report(tmp_path, ["broadcast-maxrl", "loo"])
    assert "| loo | 2 | 6 | 0.383 |" in text and "| loo | 4 | 5 | 0.614 |" in text
    assert "Holm over the 3 comparisons" in text
    # the per-seed table: each seed's start and end, a run not at the last checkpoint where it is now
    assert "| seed | broadcast-maxrl (4) | loo (4) |" in text
    assert "| 0 | 0.250 -> 0.800 | 0.250 -> 0.600 |" in text and "| 5 |  | 0.250 -> (0.300 at 2) |" in text
    # five seeds all one way: exact sign-flip p = 2/32, Holm x3 and x2 -> 0.1875 and 0.125: not separated
    row = next(line for line in text.splitlines() if line.startswith("| loo - broadcast-maxrl"))
    assert "| 5 | -0.236 [" in row and row.endswith("| 0.0625 | 0.1875 | not separated |")
    # --at 2: the first checkpoint, where the stopped sixth seed counts too
    early = team.report(tmp_path, ["broadcast-maxrl", "loo"], at=2)
    assert "| loo after 2 updates - its untrained start | 6 | +0.133 [" in early
    assert "held-out p_follow, paired" in team.report(tmp_path, ["loo"], metric="p_follow")


def test_a_cut_metrics_line_or_an_unknown_metric_is_a_clear_error_naming_what_is_wrong(tmp_path):
    _run(tmp_path, "loo", 1, [0.4, 0.5])
    path = tmp_path / "loo" / "seed1" / "metrics.jsonl"
    good = path.read_text()
    path.write_text(good + '{"step": 4, "eval/p_fo')                 # a run killed while writing its last line
    with pytest.raises(ValueError, match=r"metrics.jsonl, line 5: not a step's metrics"):
        team.curves(tmp_path)
    path.write_text(good + "[1, 2]\n")                                 # JSON, but not a step's row
    with pytest.raises(ValueError, match="line 5"):
        team.report(tmp_path)
    path.write_text(good)
    for call in (lambda: team.report(tmp_path, metric="reward"), lambda: team.runs_table(tmp_path, metric="reward"),
                 lambda: team.plot(tmp_path, tmp_path / "f.png", ["loo"], metric="reward")):
        with pytest.raises(ValueError, match="metric 'reward' is not one of"):
            call()
    assert not (tmp_path / "f.png").exists()


def test_the_recheck_tests_only_what_separated_one_sided_on_fresh_seeds_with_holm_over_them(tmp_path):
    for s in range(10):                                   # seeds 0-9: every difference one way, p = 2 / 1024
        _run(tmp_path, "broadcast-maxrl", s, [0.5, 0.80 + 0.01 * s])
        _run(tmp_path, "loo", s, [0.3, 0.40 + 0.01 * s] if s else [0.3, 0.25])   # seed 0: loo stays at its start
    first = list(range(10))
    # loo's seed 0 ends at its start: its sign does not matter, so 4 of 1024 patterns reach |sum| (p 0.0039), the
    # others 2 of 1024; Holm over 3: 0.0059 each, all three separate
    verdicts = team.report(tmp_path, ["broadcast-maxrl", "loo"], seeds=first)
    assert "Holm over the 3 comparisons" in verdicts and verdicts.count("| 0.0059 | above |") == 2
    assert "| loo - broadcast-maxrl | 10 | -0.415 [-0.449, -0.381] | 0.0020 | 0.0059 | below |" in verdicts
    for i, s in enumerate(range(10, 16)):                 # fresh seeds 10-15: loo no longer above its start
        _run(tmp_path, "broadcast-maxrl", s, [0.5, 0.85])
        _run(tmp_path, "loo", s, [0.3, 0.30 if i % 2 else 0.20])
    _run(tmp_path, "coma", 10, [0.3, 0.9])                # a run outside the family: not compared
    text = team.recheck(tmp_path, ["broadcast-maxrl", "loo"], first, list(range(10, 16)))
    assert "3 of the 3 comparisons separate (Holm over 3)" in text and "needs 6 fresh seeds for 3" in text
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ") and " - " in line}
    # six fresh seeds all one way, one-sided: 1 / 64; Holm over 3: 3 / 64 = 0.0469 and 2 / 64, stepped up to 0.0469
    maxrl = rows["broadcast-maxrl after 4 updates - its untrained start"]
    assert "| above (+0.595, n 10, Holm p 0.0059) | 6 | +0.600 [" in maxrl
    assert "| 0.0156 | 0.0469 | 0.0312 | re-checked |" in maxrl
    assert rows["loo - broadcast-maxrl"].endswith("| 0.0156 | 0.0469 | 0.0312 | re-checked |")
    # loo's fresh differences +-0.05, sum 0: "greater" counts sums >= 0, 42 of 64 (20 zero sums + 22 above)
    assert rows["loo after 4 updates - its untrained start"].endswith("| 0.6562 | 0.6562 | 1.0000 | not re-checked |")
    # fewer fresh seeds than the design needs: still shown, and said
    short = team.recheck(tmp_path, ["broadcast-maxrl", "loo"], first, [10, 11, 12, 13])
    assert "(so far: 4 of 6 seeds)" in short
    assert "| waiting |" in team.recheck(tmp_path, ["broadcast-maxrl", "loo"], first, [20, 21])
    assert "nothing to re-check" in team.recheck(tmp_path, ["broadcast-maxrl", "loo"], [0, 1, 2], [10, 11])
    with pytest.raises(ValueError, match="fresh"):
        team.recheck(tmp_path, ["broadcast-maxrl", "loo"], first, [9, 10])
    with pytest.raises(SystemExit):
        team.main(["--report", str(tmp_path), "--recheck", "10-15"])          # which verdicts? --seeds is needed
    assert team.main(["--report", str(tmp_path), "--methods", "broadcast-maxrl,loo", "--seeds", "0-9",
                      "--recheck", "10-15"]) == 0
    png = tmp_path / "fig" / "curves.png"                 # --plot: the curves of the seeds asked, as a PNG
    assert team.main(["--report", str(tmp_path), "--seeds", "10-15", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no runs"):
        team.plot(tmp_path, png, ["broadcast-maxrl"], seeds=[99])

def test_the_runs_table_shows_each_run_curve_its_last_checkpoint_entropy_and_wall_time(tmp_path):
    _run(tmp_path, "loo", 1, [0.4, 0.6])
    _run(tmp_path, "loo", 2, [0.3])                       # stopped after its first checkpoint
    run = tmp_path / "loo" / "seed1"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for r in rows:
        r.update({"time/step": 60.0, "policy_entropy/thinker": 1.0 - 0.25 * r["step"]})
    rows[0]["eval_start/time"], rows[1]["eval/time"], rows[3]["eval/time"] = 30.0, 45.0, 45.0
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = team.runs_table(tmp_path)
    assert "| method | seed | 0 / 2 / 4 | P(pass) | I | entropy | wall |" in text
    assert "| loo | 1 | 0.250 / 0.400 / 0.600 | 0.600 | 0.600 | 1.00 / 0.75 / 0.25 | 4 + 2 min |" in text
    assert "| loo | 2 | 0.250 / 0.300 / - | 0.300 | 0.300 | - | 0 + 0 min |" in text


def test_the_kept_campaign_runs_give_the_runs_table_of_results_md():
    text = team.runs_table(team.ROOT / "benchmarks" / "pilots" / "llm_team_credit")
    assert "| broadcast-maxrl | 1 | 0.234 / 0.308 / 0.537 / 0.712 / 0.867 | 0.999 | 1.328 | 1.06 / 1.27 / 0.05 | 35 + 9 min |" in text
    assert "| coma | 2 | 0.230 / 0.181 / 0.181 / 0.181 / 0.181 | 0.156 | 0.000 | 1.06 / 0.53 / 0.00 | 43 + 3 min |" in text


def test_a_finished_run_is_kept_and_not_trained_again(tmp_path):
    _run(tmp_path, "coma", 0, [0.4, 0.5])
    assert team.train("coma", 0, _args(out=str(tmp_path), steps=4)) == "coma seed 0: kept"


def test_the_stored_phase_1_runs_give_the_figures_of_results_md():
    text = team.report(team.ROOT / "benchmarks" / "pilots" / "llm_team", at=20, metric="p_follow")
    assert "| broadcast-maxrl | 20 | 4 | 0.233 | 0.890 |" in text
    assert "| broadcast-maxrl after 20 updates - its untrained start | 4 | +0.642 [+0.507, +0.777] | 0.1250 |" in text
    assert text.rstrip().endswith("| not separated |")


def test_the_thinker_phase_starts_from_the_shared_solver_run_with_the_solver_frozen(tmp_path):
    from baselines.train.config import TrainConfig

    args = _args(solver_steps=20, steps=20, eval_every=5, hint_required=True, alternate_every=20)
    source = tmp_path / team.SOLVER_RUN / "seed3"
    cfg = TrainConfig.from_args(team.command("coma", 3, args, tmp_path / "coma", False, init_from=source)[3:])
    assert (cfg.init_from, cfg.frozen, cfg.partners, cfg.alternate_every) == (str(source), "solver", "", 0)
    assert cfg.credit_options == {"roles": ["thinker"]} and (cfg.steps, cfg.eval_every) == (20, 5)
    assert cfg.rollout_batch == 256        # coma's 1,024-row calls, bounded
    maxrl = TrainConfig.from_args(team.command("broadcast-maxrl", 3, args, tmp_path, False, init_from=source)[3:])
    assert maxrl.credit_options == {"std": "mean"} and maxrl.frozen == "solver" and maxrl.rollout_batch == 0
    # the shared phase: the scripted thinker all along, one evaluation at its end, no alternation
    first = TrainConfig.from_args(team.command("broadcast-maxrl", 3, team.solver_args(args), source, False)[3:])
    assert (first.steps, first.partners, first.alternate_every, first.eval_every) == (20, "thinker=reference:20", 0,
                                                                                     20)
    assert first.init_from == "" and first.frozen == ""


def test_each_seed_s_methods_wait_for_its_solver_phase_and_seeds_finish_in_order(tmp_path, monkeypatch):
    import threading
    import time

    log, lock = [], threading.Lock()

    def fake_train(method, seed, args, init_from=None, run=None):
        with lock:
            log.append(("start", method if run is None else "solver", seed, init_from))
        time.sleep(0.01)
        with lock:
            log.append(("end", method if run is None else "solver", seed, init_from))
        return f"{method} seed {seed}: trained"

    monkeypatch.setattr(team, "train", fake_train)
    for jobs in (1, 2, 3):
        log.clear()
        said = []
        args = _args(out=str(tmp_path), solver_steps=2, steps=2, jobs=jobs)
        lines = team.campaign(["broadcast-maxrl", "loo"], [4, 7], args, say=said.append)
        assert sorted(lines) == sorted(said) and len(lines) == 6
        assert lines[0] == "solver phase seed 4: trained"
        for seed in (4, 7):
            solver_end = log.index(("end", "solver", seed, None))
            starts = [i for i, e in enumerate(log) if e[0] == "start" and e[1] != "solver" and e[2] == seed]
            assert len(starts) == 2 and min(starts) > solver_end
            assert all(log[i][3] == tmp_path / team.SOLVER_RUN / f"seed{seed}" for i in starts)
        if jobs == 1:    # one worker: the second seed's solver phase comes before the first seed's methods
            assert [e[1:3] for e in log if e[0] == "start"] == [("solver", 4), ("solver", 7), ("broadcast-maxrl", 4),
                                                                ("loo", 4), ("broadcast-maxrl", 7), ("loo", 7)]


def test_the_shared_solver_phase_is_not_a_method_of_the_report(tmp_path):
    _run(tmp_path, team.SOLVER_RUN, 0, [0.3, 0.3])
    _run(tmp_path, "loo", 0, [0.4, 0.5])
    (tmp_path / "fidelity").mkdir()
    (tmp_path / "fidelity" / "seed0.json").write_text("{}")      # --fidelity's results: no run either
    assert set(team.curves(tmp_path)) == {"loo"}


def test_a_tiny_campaign_runs_end_to_end_and_the_thinker_starts_where_the_solver_phase_ended(tmp_path):
    args = ["--model", "tiny", "--hint-required", "--solver-steps", "1", "--steps", "1", "--eval-every", "1",
            "--eval-episodes", "2", "--tasks", "2", "--group", "2", "--methods", "ccpo_v2", "--seeds", "5",
            "--out", str(tmp_path)]
    assert team.main(args) == 0
    solver, thinker = (team.read_metrics(tmp_path / d / "seed5") for d in (team.SOLVER_RUN, "ccpo_v2"))
    assert [r["roles_trained"] for r in solver] == ["solver"] and [r["roles_trained"] for r in thinker] == ["thinker"]
    # the thinker's run begins with the weights the solver's phase ended with: the same exact evaluation
    assert {m: thinker[0][f"eval_start/{m}"] for m in team.METRICS} == {m: solver[-1][f"eval/{m}"]
                                                                        for m in team.METRICS}
    config = json.loads((tmp_path / "ccpo_v2" / "seed5" / "config.json").read_text())
    assert config["resolved"]["init_source"]["checkpoint"].startswith(str(tmp_path / team.SOLVER_RUN / "seed5"))
    assert team.main(args) == 0      # everything kept: nothing trains again
    assert team.read_metrics(tmp_path / "ccpo_v2" / "seed5") == thinker
    # --fidelity: at the solver phase's weights, the thinker's turns only, with the shuffled control; kept per seed
    assert team.main(args + ["--fidelity", "--methods", "broadcast-maxrl,ccpo_v2"]) == 0
    got = json.loads((tmp_path / "fidelity" / "seed5.json").read_text())
    assert set(got["truth"]["role"]) == {"thinker"} and len(got["truth"]["role"]) == 4
    assert got["policy"]["checkpoint"] == str(tmp_path / team.SOLVER_RUN / "seed5" / "checkpoints" / "step-0000001")
    assert set(got["methods"]) == {"broadcast-maxrl", "ccpo_v2", "shuffled"}
    text = (tmp_path / "fidelity" / "fidelity_seeds_5.md").read_text()
    assert "4 turns in 2 task groups, seeds [5]" in text and "Holm-adjusted p" in text
    stamp = (tmp_path / "fidelity" / "seed5.json").stat().st_mtime_ns
    # the solver phase's metrics without its checkpoint (copied from elsewhere): refused, it cannot be started from
    ckpt = tmp_path / team.SOLVER_RUN / "seed5" / "checkpoints"
    shutil.move(ckpt, tmp_path / "moved")
    with pytest.raises(ValueError, match="seed5 has its metrics but not its last checkpoint"):
        team.solver_phase(5, team.argparse.Namespace(**{**vars(_args(out=str(tmp_path))), "solver_steps": 1}))
    shutil.rmtree(tmp_path / team.SOLVER_RUN)     # a kept result needs no checkpoint: nothing trains, nothing is read
    assert team.main(args + ["--fidelity", "--methods", "broadcast-maxrl,ccpo_v2"]) == 0
    assert (tmp_path / "fidelity" / "seed5.json").stat().st_mtime_ns == stamp
    assert not (tmp_path / team.SOLVER_RUN).exists()
    (tmp_path / "fidelity" / "seed5.json").write_text("{not json")
    with pytest.raises(ValueError, match="seed5.json is not a fidelity result .* delete it to measure seed 5 again"):
        team.main(args + ["--fidelity", "--methods", "broadcast-maxrl,ccpo_v2"])


def test_a_run_stopped_before_its_first_checkpoint_is_refused_before_anything_starts(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(team, "train", lambda *a, **k: started.append(a) or "trained")
    args = _args(out=str(tmp_path), solver_steps=4, steps=4, jobs=2)
    _run(tmp_path, "loo", 1, [0.4, 0.5])                       # finished: kept
    _run(tmp_path, "coma", 1, [0.4], steps=1)                  # one step, no checkpoint (killed for memory)
    _run(tmp_path, team.SOLVER_RUN, 2, [], steps=2)
    with pytest.raises(ValueError, match=r"coma/seed1, .*_solver/seed2: stopped before a first checkpoint"):
        team.campaign(["loo", "coma"], [1, 2], args)
    assert started == []
    (tmp_path / "coma" / "seed1" / "checkpoints" / "step-0000001").mkdir(parents=True)   # resumable: goes on
    shutil.rmtree(tmp_path / team.SOLVER_RUN / "seed2")
    assert len(team.campaign(["loo", "coma"], [1, 2], args)) == 6 and len(started) == 6


def test_the_stored_fidelity_results_give_the_figures_of_results_md():
    from leaderboard.fidelity import summarize, table, verdicts

    folder = team.ROOT / "benchmarks" / "pilots" / "llm_team_credit" / "fidelity"
    kept = [json.loads((folder / f"seed{s}.json").read_text()) for s in (1, 2, 3, 4)]
    for seeds, rows in (((0, 1), ["ccpo_v2      +0.90 [+0.86, +0.94]", "coma         +0.84 [+0.81, +0.87]"]),
                        ((2, 3), ["broadcast-maxrl +0.73 [+0.67, +0.79]", "ccpo_v2      +0.91 [+0.88, +0.94]",
                                  "loo          +0.63 [+0.57, +0.70]", "coma         +0.86 [+0.83, +0.89]"])):
        summary = summarize([kept[i] for i in seeds])
        text = table(summary)
        assert all(r in text for r in rows), text
        said = verdicts(summary, "broadcast-maxrl", ["ccpo_v2", "loo", "coma", "shuffled"], per_setting=True)
        assert [line.split(":")[0] for line in said] == [
            "broadcast-maxrl below ccpo_v2", "broadcast-maxrl above loo", "broadcast-maxrl below coma",
            "broadcast-maxrl above shuffled"]      # (a verdict not separated reads "A vs B: not separated")


def test_the_offset_share_is_the_part_of_the_advantages_a_group_shares():
    # two groups: centred (share 0) and constant (share 1); together |means| 0 and 2 over mean |A| 1.5
    assert team.offset_share([1, -1, 1, -1], [0, 0, 1, 1]) == 0.0
    assert team.offset_share([2, 2, 2, 2], [0, 0, 1, 1]) == 1.0
    assert team.offset_share([1, -1, 2, 2], [0, 0, 1, 1]) == pytest.approx((0 + 2) / 2 / 1.5)
    folder = team.ROOT / "benchmarks" / "pilots" / "llm_team_credit" / "fidelity"
    text = team.offset_table([json.loads((folder / f"seed{s}.json").read_text()) for s in (1, 2, 3, 4)])
    assert "| seed | A* | broadcast-maxrl | ccpo_v2 | loo | coma | shuffled |" in text
    assert "| 1 | 0.31 | 0.00 | 0.00 | 1.00 | 0.36 | 0.35 |" in text     # RESULTS.md's figures
    assert "| 4 | 0.36 | 0.00 | 0.00 | 0.85 | 0.41 | 0.25 |" in text


def test_the_report_s_optimum_on_the_held_out_episodes_is_what_a_perfect_team_scores_there():
    """The report's header says a perfect team scores 0.9 in expectation and 0.9375 on the campaign's 32 held-out
    episodes: the exact evaluator plays each seed's own clue, 30 of the 32 are right, so a run can end above 0.9
    (broadcast-maxrl seed 10 does)."""
    from baselines.train.exact_eval import EVAL_SEED_BASE
    from marl_llm_envs import make

    total = 0.0
    for i in range(32):          # the thinker names its clue's label and the solver answers that label
        env = make("think_solve-v0", **team.env_kwargs(_args(hint_required=True)), action_mode="discrete",
                   split="test")
        env.reset(seed=EVAL_SEED_BASE + i)
        base = env.unwrapped
        label = base.labels[base.candidates.index(base.clue())]
        env.step(base.action_names("thinker").index(label))
        env.step(base.action_names("solver").index(label))
        total += env.rewards["solver"]
    assert total / 32 == 0.9375
    assert "0.9375 on the campaign's 32 held-out episodes, 30 of whose clues are right" in team.report(
        team.ROOT / "benchmarks" / "pilots" / "llm_team_credit")
