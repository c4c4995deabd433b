"""benchmarks/llm_team.py (issue 43 item 3's campaign): the recipe's command line, reading the held-out checkpoints
of finished and part-finished runs, and the paired report with Holm."""

from __future__ import annotations

import json

from tests.benchmark_scripts import load

team = load("llm_team")


def _args(**kw):
    ns = team.argparse.Namespace(model="smollm2-135m", steps=50, relay_steps=20, tasks=32, group=8, lr=1e-3,
                                 eval_every=10, eval_episodes=32, out="unused",
                                 micro_batch_tokens=1024, alternate_every=0, hint_required=False)
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
    # five seeds all one way: exact sign-flip p = 2/32, Holm x3 and x2 -> 0.1875 and 0.125: not separated
    row = next(line for line in text.splitlines() if line.startswith("| loo - broadcast-maxrl"))
    assert "| 5 | -0.236 [" in row and row.endswith("| 0.0625 | 0.1875 | not separated |")
    # --at 2: the first checkpoint, where the stopped sixth seed counts too
    early = team.report(tmp_path, ["broadcast-maxrl", "loo"], at=2)
    assert "| loo after 2 updates - its untrained start | 6 | +0.133 [" in early
    assert "held-out p_follow, paired" in team.report(tmp_path, ["loo"], metric="p_follow")


def test_a_finished_run_is_kept_and_not_trained_again(tmp_path):
    _run(tmp_path, "coma", 0, [0.4, 0.5])
    assert team.train("coma", 0, _args(out=str(tmp_path), steps=4)) == "coma seed 0: kept"


def test_the_stored_phase_1_runs_give_the_figures_of_results_md():
    text = team.report(team.ROOT / "benchmarks" / "pilots" / "llm_team", at=20, metric="p_follow")
    assert "| broadcast-maxrl | 20 | 4 | 0.233 | 0.890 |" in text
    assert "| broadcast-maxrl after 20 updates - its untrained start | 4 | +0.642 [+0.507, +0.777] | 0.1250 |" in text
    assert text.rstrip().endswith("| not separated |")
