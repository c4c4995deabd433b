"""benchmarks/free_hint.py (issue 43, item 4): its held-out evaluation plays the held-out split's words on fixed seeds
(a re-check's seeds disjoint from the first run's with ``--eval-seed-offset``), its probes say what the hints name, and
its table pairs every checkpoint with step 0 over the held-out seeds."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from baselines.policies.scripted import ScriptedPolicy
from marl_llm_envs.envs.clue_words import clue_words
from marl_llm_envs.scripted import follower_solver
from tests.benchmark_scripts import load

free_hint = load("free_hint")


def test_a_recheck_offset_gives_held_out_seeds_disjoint_from_the_first_runs():
    first, recheck = free_hint.held_out_seeds(16), free_hint.held_out_seeds(16, offset=16)
    assert len(first) == len(recheck) == 16 and len(set(first + recheck)) == 32
    assert free_hint.held_out_seeds(16, offset=8)[:8] == first[8:]          # an offset below n overlaps: the caller's
    with pytest.raises(ValueError, match="n >= 2"):                          # choice, the seeds are still the same list
        free_hint.held_out_seeds(1)
    with pytest.raises(ValueError, match="offset >= 0"):
        free_hint.held_out_seeds(8, offset=-1)


def _held_out(hint, offset=0, n=6, samples=2):
    """free_hint.held_out with a scripted thinker writing ``hint(env)`` and the scripted reader."""
    seen = []

    def thinker(env, agent, rng):
        seen.append(tuple(env.unwrapped.candidates))
        return hint(env)

    team = SimpleNamespace(policies={"thinker": ScriptedPolicy(thinker), "solver": ScriptedPolicy(follower_solver)})
    args = SimpleNamespace(eval_seeds=n, eval_samples=samples, eval_seed_offset=offset)
    return free_hint.held_out(team, args), seen


def test_held_out_episodes_draw_only_held_out_words_and_the_offset_changes_them():
    out, seen = _held_out(lambda env: "The answer is " + env.unwrapped.clue() + ".", n=8)
    assert len(seen) == 16 and {w for c in seen for w in c} <= set(clue_words("test"))
    assert out["named_clue"] == out["named_any"] == 1.0 and out["train_word"] == 0.0
    assert len(out["per_seed"]) == 8 and len(out["all_hints"]) == 16 and len(out["hints"]) == 4
    _, again = _held_out(lambda env: "The answer is " + env.unwrapped.clue() + ".", n=8, offset=8)
    assert set(seen).isdisjoint(again)                        # other seeds: other candidate sets


def test_naming_the_clues_word_scores_the_optimum_of_the_seeds():
    # the reader follows a named word, so naming the clue's word earns exactly the share of seeds whose clue is right
    seeds = free_hint.held_out_seeds(16, offset=3)
    follow, _ = _held_out(lambda env: "it is " + env.unwrapped.clue(), n=16, offset=3, samples=1)
    assert follow["reward"] == free_hint.optimum(seeds)
    assert 0.5 < free_hint.optimum(free_hint.held_out_seeds(200)) < 1.0      # some clues are wrong (0.9 expected)


def test_the_probes_tell_a_hint_naming_a_trained_word_from_one_naming_a_candidate():
    trained = clue_words("train")[5]
    out, _ = _held_out(lambda env: f"It is a {trained.upper()}, surely.")
    assert out["named_clue"] == out["named_any"] == 0.0 and out["train_word"] == 1.0
    # the reader guesses uniformly without a named candidate: the reward is a guess's, far below following a clue
    follow, _ = _held_out(lambda env: env.unwrapped.clue(), n=16, samples=4)
    assert follow["reward"] > 0.6 > out["reward"]
    # a wrong candidate named first: named, not the clue's
    wrong, _ = _held_out(lambda env: next(w for w in env.unwrapped.candidates if w != env.unwrapped.clue()))
    assert wrong["named_any"] == 1.0 and wrong["named_clue"] == 0.0


def _result(per_seed_by_step):
    curve = {str(k): {"per_seed": v, "reward": float(np.mean(v)), "named_clue": 0.5, "hints": ["h"]}
             for k, v in per_seed_by_step.items()}
    args = {"model": "m", "steps": 10, "tasks_per_step": 8, "group_size": 4, "lr": 3e-4, "max_new_tokens": 12,
            "seed": 0, "eval_seeds": 4, "eval_samples": 4}
    return {"args": args, "curve": curve, "wall_s": 60.0, "step_s": 5.0, "train_reward": [0.25, 0.5]}


def test_the_table_pairs_every_checkpoint_with_step_0_over_the_seeds():
    start, later = [0.25, 0.5, 0.25, 0.0], [0.5, 0.75, 0.5, 0.5]       # differences 0.25, 0.25, 0.25, 0.5
    text = free_hint.table(_result({0: start, 5: start, 10: later}))
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert "(the control)" in rows["| 0"]
    assert "+0.000 [+0.000, +0.000]" in rows["| 5"]
    # mean +0.3125; sd 0.125 over 4 seeds, t(0.975, 3) = 3.182: half-width 0.199
    assert "+0.312 [+0.114, +0.511]" in rows["| 10"]
    assert "held-out seeds 0..3" in text and "| - | - |" in rows["| 10"]    # a run from before the probes: no value
    # 4 seeds, all differences positive: exact two-sided sign-flip p = 2/16 = 0.125, Holm over the 2 checkpoints
    # printed doubles it; step 5's differences are all 0 (p = 1): neither separates
    assert "| 0.2500 | not separated" in rows["| 10"] and "| 1.0000 | not separated" in rows["| 5"]
    assert "Holm over the 2 checkpoints printed" in text


def test_a_checkpoint_is_called_above_step_0_only_after_holm_over_the_checkpoints():
    start = [0.0, 0.25, 0.5, 0.25, 0.0, 0.25, 0.5, 0.25]
    rows = {line.split(" | ")[0]: line for line in free_hint.table(_result(
        {0: start, 5: [x + 0.25 for x in start], 10: [x + 0.5 for x in start], 15: start})).splitlines()
        if line.startswith("| ")}
    # 8 seeds all up: p = 2/256 = 0.0078 each; Holm over 3: 0.0234 for the smaller two (steps 5 and 10, tied), step
    # 15 (p = 1) last
    assert "| 0.0234 | above" in rows["| 5"] and "| 0.0234 | above" in rows["| 10"]
    assert "| 1.0000 | not separated" in rows["| 15"]


def test_report_prints_a_saved_runs_table(tmp_path, capsys):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_result({0: [0.25, 0.5], 5: [0.5, 0.5]})))
    free_hint.main(["--report", str(path)])
    assert "| 5 | 0.500 | +0.125 [" in capsys.readouterr().out


@pytest.mark.slow
def test_a_tiny_run_in_two_chunks_scores_every_chunks_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    free_hint.main(["--model", "tiny", "--steps", "2", "--eval-every", "1", "--eval-seeds", "2", "--eval-samples", "1",
                    "--tasks-per-step", "2", "--group-size", "2", "--max-new-tokens", "4", "--out", str(out)])
    result = json.loads((out / "results.json").read_text())
    assert sorted(result["curve"], key=int) == ["0", "1", "2"] and len(result["train_reward"]) == 2
    assert [c["steps"] for c in result["chunks"]] == [1, 2] and result["paired_final_minus_start"] is not None
