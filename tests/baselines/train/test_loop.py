"""The trainer: the loss and its clip bounds, one update moves a decision's log-probability the right way (free
generation, choice mode, per-role LoRA), the MLP tier learns, kill -9 and resume, data parallel, bad configs."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig, checkpoint, train
from baselines.train.learners import build_team
from baselines.train.loop import _Dist, _samples, _update
from baselines.train.loss import policy_loss, token_weight
from marl_llm_envs import make

ROOT = Path(__file__).resolve().parents[3]


# ---------------------------------------------------------------------- the loss
def test_clip_bounds_cut_the_gradient_outside_the_trust_region():
    old = torch.zeros(4)
    new = torch.log(torch.tensor([1.5, 1.1, 0.5, 0.9])).requires_grad_(True)
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0])
    w = torch.full((4,), 0.25)
    loss, stats = policy_loss(new, old, adv, w, clip_low=0.2, clip_high=0.28)
    loss.backward()
    # token 0: ratio 1.5 > 1.28 with A > 0 -> clipped at 1.28, no gradient; token 2: ratio 0.5 < 0.8 with A < 0 ->
    # clipped at 0.8, no gradient; tokens 1 and 3 inside: d/dl (-A r) = -A r.
    assert loss.item() == pytest.approx(0.25 * (-1.28 - 1.1 + 0.8 + 0.9))
    assert new.grad.tolist() == pytest.approx([0.0, -0.25 * 1.1, 0.0, 0.25 * 0.9])
    assert stats["clipped"] == pytest.approx(0.5)


def test_k3_kl_and_finite_loss_for_a_token_outside_the_nucleus():
    new = torch.tensor([-1.0, -2.0])
    d = torch.tensor([0.5, -0.5])        # ref - new
    _, stats = policy_loss(new, new.clone(), torch.zeros(2), torch.full((2,), 0.5), clip_low=0.2, clip_high=0.2,
                           ref_lp=new + d, kl_coef=0.1)
    assert stats["kl"] == pytest.approx(float(0.5 * (torch.exp(d) - d - 1).sum()))
    old = torch.tensor([-math.inf, -1.0])   # a sampler's -inf (outside its top-p nucleus) never reaches exp()
    loss, _ = policy_loss(torch.tensor([-3.0, -1.0]), old, torch.ones(2), torch.ones(2), clip_low=0.2, clip_high=0.2)
    assert math.isfinite(loss.item())


def test_aggregation_weights_token_mean_and_seq_mean():
    # two turns of 2 and 6 tokens: token-mean weighs every token 1/8; seq-mean every turn 1/2, spread on its tokens
    assert [token_weight(n, [2, 6], "token-mean") for n in (2, 6)] == [0.125, 0.125]
    assert [token_weight(n, [2, 6], "seq-mean") for n in (2, 6)] == [0.25, 1 / 12]


# ---------------------------------------------------------------------- one update, the right direction
def _one_update(cfg: TrainConfig, env_id: str, kwargs: dict, sign: dict[str, float], roles_now=None):
    env = make(env_id, **kwargs)
    roles = sorted(set(env.roles.values()))
    team = build_team(cfg, env, roles, prepare=_Dist(cfg).prepare)
    episodes = RolloutEngine(team.policies, show_progress=False).run(env_id, 2, 2, seed=3, env_kwargs=kwargs)
    adv = [[sign.get(t.role, 0.0) for t in e.turns] for e in episodes]
    roles_now = set(roles_now or team.trainable)
    samples = _samples(episodes, adv, roles_now)
    total = {lr.name: [s.n for s in samples if s.role in lr.trainable] for lr in team.learners}
    learner = team.learners[0]
    params = {n: p.detach().clone() for n, p in learner.module.named_parameters()}
    with torch.no_grad():
        before = learner.logprobs(samples)[0].clone()
    stats = _update(team, cfg, _Dist(cfg), samples, total, roles_now)
    with torch.no_grad():
        after = learner.logprobs(samples)[0]
    return team, samples, before, after, stats, params


def test_a_positive_advantage_raises_the_turns_logprob_in_free_generation():
    cfg = TrainConfig(env="think_solve-v0", model="tiny", max_new_tokens=6, lr=1e-3)
    _, samples, before, after, stats, _ = _one_update(cfg, "think_solve-v0", {}, {"thinker": 1.0, "solver": 1.0})
    assert samples and all(s.kind == "generate" for s in samples)
    assert float(after.sum()) > float(before.sum())
    assert stats["recompute_gap_max"] < 1e-3          # float32: the recompute matches the sampler


@pytest.mark.parametrize("scoring", ["label", "mean", "sum"])
def test_a_negative_advantage_lowers_a_choice_mode_decision(scoring):
    cfg = TrainConfig(env="kuhn_poker-v0", model="tiny", mode="choice", choice_scoring=scoring, lr=1e-3)
    _, samples, before, after, stats, _ = _one_update(cfg, "kuhn_poker-v0", {}, {"player_0": -1.0, "player_1": -1.0})
    assert samples and all(s.kind == "choice" and s.n == 1 for s in samples)
    assert {s.choice.scoring for s in samples} == {scoring}
    # the ratio's denominator is the sampled distribution: the trainer's recompute equals the sampler's logprob
    assert stats["recompute_gap_max"] < 1e-4
    assert float(after.sum()) < float(before.sum())


@pytest.mark.parametrize("scoring", ["label", "mean", "sum"])
def test_choice_scores_on_a_shared_prompt_equal_one_row_per_move_with_gradients(scoring):
    cfg = TrainConfig(env="kuhn_poker-v0", model="tiny", mode="choice", choice_scoring=scoring)
    env = make("kuhn_poker-v0")
    team = build_team(cfg, env, ["player_0", "player_1"])
    learner = team.learners[0]
    episodes = RolloutEngine(team.policies, show_progress=False).run("kuhn_poker-v0", 2, 2, seed=1)
    samples = _samples(episodes, [[1.0] * len(e.turns) for e in episodes], set(team.trainable))
    results = []
    for model in (learner.module, _Plain(learner.module)):   # shared prompt; a wrapped model: one row per move
        learner.module.zero_grad()
        lp, _ = learner._score(samples, model)
        lp.sum().backward()
        results.append((lp.detach(), [p.grad.clone() for p in learner.module.parameters()]))
    (lp_shared, g_shared), (lp_rows, g_rows) = results
    sampled = torch.tensor([s.choice.logprob for s in samples])
    assert torch.allclose(lp_shared.detach(), sampled, atol=1e-5)      # what the policy sampled from
    assert len(lp_shared) == len(samples) and torch.allclose(lp_shared, lp_rows, atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g_shared, g_rows))


class _Plain(torch.nn.Module):
    """The model behind another object, as a data-parallel wrapper would hold it."""

    def __init__(self, model):
        super().__init__()
        self.inner = model

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)


def test_per_role_lora_updates_only_the_trained_roles_adapter():
    pytest.importorskip("peft")
    cfg = TrainConfig(env="think_solve-v0", model="tiny", adapters="per_role", lora_r=4, max_new_tokens=4, lr=1e-2)
    team, samples, before, after, _, params = _one_update(cfg, "think_solve-v0", {}, {"thinker": 1.0, "solver": 1.0},
                                                          roles_now={"thinker"})
    assert {s.role for s in samples} == {"thinker"}
    assert float(after.sum()) > float(before.sum())
    changed = {n for n, p in team.learners[0].module.named_parameters() if not torch.equal(p, params[n])}
    assert changed and all(".thinker." in n for n in changed)     # neither the solver's adapter nor the base moved


# ---------------------------------------------------------------------- runs
def _run(tmp_path: Path, *args: str, name="run") -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "baselines.train", "--out", str(tmp_path / name), "--no-progress", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _metrics(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _comparable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


MLP_ARGS = ["--env", "voting-v0", "--action-mode", "discrete", "--credit", "loo", "--model", "mlp",
            "--tasks-per-step", "4", "--group-size", "2"]


# The trainer's CLI in a process whose rollouts after the first N never return, so that a test can kill it from
# outside at a known point: after step N's metrics line, before anything of step N + 1 is written.
STALLED_TRAINER = """
import sys, threading
from baselines.train import __main__ as cli, loop
stall_after, rollouts, run = int(sys.argv.pop(1)), [], loop.RolloutEngine.run
def stalled(self, *args, **kwargs):
    rollouts.append(1)
    if len(rollouts) > stall_after:
        threading.Event().wait()
    return run(self, *args, **kwargs)
loop.RolloutEngine.run = stalled
sys.exit(cli.main(sys.argv[1:]))
"""


def _kill_after_step(tmp_path: Path, step: int, *args: str, name: str) -> subprocess.Popen:
    """Start the trainer, wait until it has written ``step`` metrics lines, then SIGKILL it."""
    cmd = [sys.executable, "-c", STALLED_TRAINER, str(step), "--out", str(tmp_path / name), "--no-progress", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    metrics, deadline = tmp_path / name / "metrics.jsonl", time.monotonic() + 600
    while not (metrics.exists() and metrics.read_text().count("\n") >= step):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, f"no metrics line of step {step} within 600 s"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stderr.close()
    return proc


def test_kill_minus_nine_and_resume_ends_with_the_same_metrics(tmp_path):
    args = [*MLP_ARGS, "--steps", "5", "--save-every", "2"]
    whole = _run(tmp_path, *args, name="whole")
    assert whole.returncode == 0, whole.stderr
    killed = _kill_after_step(tmp_path, 3, *args, name="killed")    # killed after step 3, checkpoint at 2
    assert killed.returncode == -9
    assert len(_metrics(tmp_path / "killed" / "metrics.jsonl")) == 3
    again = _run(tmp_path, *args, name="killed")
    assert "already holds a run" in again.stderr and again.returncode == 2
    resumed = _run(tmp_path, *args, "--resume", name="killed")
    assert resumed.returncode == 0, resumed.stderr
    assert _comparable(_metrics(tmp_path / "killed" / "metrics.jsonl")) == _comparable(
        _metrics(tmp_path / "whole" / "metrics.jsonl"))
    assert (tmp_path / "killed" / "checkpoints" / "latest").read_text() == "step-0000005"


def _kuhn_run(tmp_path: Path, steps: int, save_every: int = 2, resume: bool = False) -> TrainConfig:
    """A small seeded Kuhn MLP run in ``tmp_path / "run"`` (the resume tests train, damage and resume it)."""
    return TrainConfig(env="kuhn_poker-v0", model="mlp", action_mode="discrete", steps=steps, tasks_per_step=2,
                       group_size=2, save_every=save_every, out=str(tmp_path / "run"), progress=False,
                       tensorboard=False, resume=resume)


def _back_to_step_2(run: Path) -> None:
    """Leave a 3-step run as if it had been killed after its checkpoint at step 2."""
    import shutil

    shutil.rmtree(run / "checkpoints" / "step-0000003")
    (run / "checkpoints" / "latest").write_text("step-0000002")


@pytest.mark.parametrize("damage", ["cut", "edited", "deleted"])
def test_resume_refuses_metrics_that_miss_steps_before_its_checkpoint_and_leaves_them(tmp_path, damage):
    """A resumed run writes the steps after its checkpoint again; the lines before it must be there, or the run's
    metrics would miss steps for good. The file is left as it was (nothing more is lost), and the error says what to
    do."""
    train(_kuhn_run(tmp_path, 3))       # metrics of steps 0..2; checkpoints at 2 and 3
    metrics = tmp_path / "run" / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    _back_to_step_2(tmp_path / "run")
    if damage == "cut":
        metrics.write_text(lines[0] + "\n")
        expected = "holds the metrics of 1 steps, but the checkpoint continues from step 2"
    elif damage == "edited":
        metrics.write_text("\n".join([lines[1], lines[0], lines[2]]) + "\n")
        expected = "line 1 of .* is not the metrics of step 0"
    else:
        metrics.unlink()
        expected = "holds the metrics of 0 steps, but the checkpoint continues from step 2"
    before = metrics.read_bytes() if metrics.exists() else None
    with pytest.raises(ValueError, match=expected):
        train(_kuhn_run(tmp_path, 4, resume=True))
    assert (metrics.read_bytes() if metrics.exists() else None) == before
    assert not list((tmp_path / "run").glob(".metrics.jsonl*"))


def test_resume_without_a_usable_latest_names_the_complete_checkpoints(tmp_path):
    train(_kuhn_run(tmp_path, 2, save_every=1))
    folder = tmp_path / "run" / "checkpoints"
    (folder / "latest").write_text("step-9")
    with pytest.raises(ValueError, match=r"its 'latest' names 'step-9', not a complete checkpoint; complete ones: "
                                         r"step-0000001, step-0000002: write one of those names into "):
        train(_kuhn_run(tmp_path, 3, save_every=1, resume=True))
    from leaderboard.players import load_player

    with pytest.raises(ValueError, match=r"complete ones: step-0000001, step-0000002: give checkpoint:.*/checkpoints/"
                                         r"<one of them>\); a player is a trainer run folder"):
        load_player(f"checkpoint:{tmp_path / 'run'}", "kuhn_poker-v0", ["player_0", "player_1"], "discrete")
    (folder / "latest").write_text("step-0000001")          # as the message says: resumes from step 1
    before = (folder / "step-0000002" / "state.safetensors").read_bytes()
    train(_kuhn_run(tmp_path, 3, save_every=1, resume=True))    # saves step 2 again (over the old one), then step 3
    assert [json.loads(x)["step"] for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2]
    assert sorted(p.name for p in folder.iterdir()) == ["latest", "step-0000002", "step-0000003"]   # nothing aside
    assert checkpoint.load(folder / "step-0000002")[0]["step"] == 2
    assert (folder / "step-0000002" / "state.safetensors").read_bytes() == before      # the same run, saved again


def test_resume_keeps_the_metrics_before_its_checkpoint_and_writes_no_stray_file(tmp_path):
    train(_kuhn_run(tmp_path, 3))
    metrics = tmp_path / "run" / "metrics.jsonl"
    first = metrics.read_text().splitlines()
    _back_to_step_2(tmp_path / "run")
    train(_kuhn_run(tmp_path, 3, resume=True))      # step 2 again, from the checkpoint at 2
    assert (tmp_path / "run" / "checkpoints" / "step-0000003").is_dir()
    again = metrics.read_text().splitlines()
    assert again[:2] == first[:2] and [json.loads(x)["step"] for x in again] == [0, 1, 2]
    assert _comparable([json.loads(again[2])]) == _comparable([json.loads(first[2])])
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")) == []


def test_two_process_data_parallel_matches_one_process(tmp_path):
    pytest.importorskip("accelerate")
    args = [*MLP_ARGS, "--steps", "2", "--ppo-epochs", "2"]
    one = _run(tmp_path, *args, name="one")
    assert one.returncode == 0, one.stderr
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--cpu", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "baselines.train",
           "--out", str(tmp_path / "two"), "--no-progress", *args]
    two = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = _metrics(tmp_path / "one" / "metrics.jsonl"), _metrics(tmp_path / "two" / "metrics.jsonl")
    for x, y in zip(a, b):
        assert x["reward/team/team"] == y["reward/team/team"]          # the same episodes
        assert x["grad_norm"] == pytest.approx(y["grad_norm"], rel=1e-4)
    wa = checkpoint.load(tmp_path / "one" / "checkpoints" / "step-0000002")[1]
    wb = checkpoint.load(tmp_path / "two" / "checkpoints" / "step-0000002")[1]
    for k, v in wa["learners"][0]["model"].items():
        assert torch.allclose(v, wb["learners"][0]["model"][k].reshape(v.shape), atol=1e-6), k


def test_the_mlp_tier_learns_to_vote_with_its_clues(tmp_path):
    # voting-v0 discrete: each voter sees a private clue naming the true label with probability 0.7; following it
    # is the learnable strategy (random ballots score about 0.25).
    result = _run(tmp_path, *MLP_ARGS[:-4], "--credit", "broadcast", "--tasks-per-step", "16", "--group-size", "4",
                  "--steps", "60", "--ppo-epochs", "4", "--save-every", "60")
    assert result.returncode == 0, result.stderr
    rewards = [r["reward/team/team"] for r in _metrics(tmp_path / "run" / "metrics.jsonl")]
    first, last = float(np.mean(rewards[:10])), float(np.mean(rewards[-10:]))
    assert last > first + 0.2, (first, last)


# ---------------------------------------------------------------------- bad configs fail before any rollout
@pytest.mark.parametrize("overrides,message", [
    (dict(model="thinkr=tiny,solver=tiny"), "names role 'thinkr'"),
    (dict(model="thinker=tiny"), r"no model for role\(s\) \['solver'\]"),
    (dict(env="voting-v0", credit="ccpo_v1"), "needs a 'thinker' role"),
    (dict(steps=0), "--steps must be > 0"),
    (dict(tasks_per_step=0), "--tasks-per-step must be > 0"),
    (dict(model="mlp", action_mode="text"), "an MLP policy plays discrete mode"),
    (dict(frozen="thinker,solver"), "nothing would be trained"),
    (dict(partners="judge=reference"), "names role 'judge'"),
    (dict(partners="solver=random,solver=reference"), "--partners gives role 'solver' two bots"),
    (dict(credit="grpo"), "unknown credit method 'grpo'"),
    (dict(aggregation="sum"), "--aggregation must be one of"),
    (dict(choice_scoring="max"), "--choice-scoring must be one of"),
    (dict(env_kwargs={"n_voters": 3}), "--env-kwargs: think_solve-v0 got an unknown keyword argument 'n_voters'"),
    (dict(env="textarena/KuhnPoker-v0", credit="loo"), "has no null action"),
    (dict(env="kuhn-poker-v0"), "--env: unknown env id 'kuhn-poker-v0'; did you mean kuhn_poker-v0"),
    (dict(lr=float("nan")), "--lr must be a finite number >= 0, got nan"),
    (dict(steps=2_000_000, tasks_per_step=16), "--steps x --tasks-per-step is 32,000,000 training tasks; a seed owns "
                                               "16,777,216"),
    (dict(grad_clip=float("nan")), "--grad-clip must be a finite number >= 0"),
    (dict(temperature=float("inf")), "--temperature must be a finite number >= 0, got inf"),
    (dict(entropy_coef=float("nan")), "--entropy-coef must be >= 0, or -1"),
])
def test_bad_configs_fail_before_any_rollout(tmp_path, overrides, message):
    cfg = TrainConfig(**{"env": "think_solve-v0", "model": "tiny", "out": str(tmp_path / "r"), "progress": False,
                         **overrides})
    with pytest.raises(ValueError, match=message):
        train(cfg)
    assert not (tmp_path / "r" / "metrics.jsonl").exists()


def test_a_model_name_that_does_not_load_is_a_clear_error(monkeypatch):
    """A misspelt --model is looked up as a local folder, then on the hub: where neither has it, transformers raises
    an OSError (after retrying the hub); it becomes one line naming the model and the names that always load."""
    transformers = pytest.importorskip("transformers")
    from baselines.models import load_model

    def unreachable(*args, **kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files.\nCheck your connection.")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", unreachable)
    with pytest.raises(ValueError, match=r"model 'smolm2' is not mlp, tiny or smollm2-135m, and it does not load as a "
                                         r"local folder or a hub id here \(We couldn't connect to 'https://huggingface"
                                         r".co' to load the files.\)$"):
        load_model("smolm2")


def test_the_cli_is_generated_from_the_config():
    cfg = TrainConfig.from_args(["--env", "voting-v0", "--credit-options", '{"std": "sample"}', "--no-tensorboard",
                                 "--clip-high", "0.3"])
    assert (cfg.env, cfg.credit_options, cfg.tensorboard, cfg.clip_high) == ("voting-v0", {"std": "sample"}, False, 0.3)
    help_text = TrainConfig.parser().format_help()
    assert "--micro-batch-tokens" in help_text and "DAPO" in help_text


def test_llm_micro_batches_count_a_repeated_prompt_once():
    """Choice decisions are packed by the tokens the forward computes: identical prompts (Kuhn's first move with the
    same card) are prefilled once, so they share one micro-batch where packing by full length needs one each."""
    from baselines.policies.base import Choice
    from baselines.train.learners import Learner, LLMLearner, Sample

    learner = LLMLearner.__new__(LLMLearner)
    learner.hf_policy = None
    header = list(range(100, 400))
    prompts = [header + [k % 3] for k in range(12)]          # 3 distinct prompts of 301 tokens, 4 times each
    samples = [Sample(f"p{k % 2}", "choice", p, [7], [-0.7], [1.0], ["[a]", "[b]"],
                      choice=Choice(index=0, logprob=-0.7, scoring="label")) for k, p in enumerate(prompts)]
    by_prompt = learner.micro_batches(samples, 400)
    in_order = Learner.micro_batches(learner, samples, 400)
    assert len(in_order) == 12 and len(by_prompt) == 2       # one per role: a shared prefix is not across adapters
    assert sorted(id(s) for mb in by_prompt for s in mb) == sorted(id(s) for s in samples)
    assert all(len({s.role for s in mb}) == 1 for mb in by_prompt)


def test_logged_entropy_is_the_mean_over_trained_decisions_not_diluted_by_skipped_zero_advantages(tmp_path):
    # credit "none" on free_riding: the advantage is the raw reward, 0 for the 2/3 of random decisions that miss, and
    # zero-advantage samples are skipped by the update. The metric must still read the policy's own entropy (an MLP
    # at init is close to uniform over 3 moves), not entropy x the share of non-zero advantages (~0.37).
    import json
    import math

    from baselines.train import TrainConfig, train

    train(TrainConfig(env="free_riding-v0", env_kwargs={"idle_seats": 1}, action_mode="discrete", model="mlp",
                      credit="none", steps=1, tasks_per_step=8, group_size=4, seed=0, out=str(tmp_path / "r"),
                      tensorboard=False, progress=False))
    row = json.loads((tmp_path / "r" / "metrics.jsonl").read_text().splitlines()[0])
    assert 0.9 * math.log(3) < row["entropy"] <= math.log(3) + 1e-6


def test_model_spec_is_one_model_for_every_role_or_one_per_role_and_errors_name_the_flag():
    from baselines.train.config import ModelSpec, parse_model

    assert parse_model(" tiny ") == ModelSpec(shared="tiny")
    spec = parse_model("thinker=smollm2-135m, solver=mlp")
    assert spec.by_role == (("thinker", "smollm2-135m"), ("solver", "mlp")) and spec.names == {"smollm2-135m", "mlp"}
    assert spec.for_roles(["solver", "thinker"], "think_solve-v0") == {"thinker": "smollm2-135m", "solver": "mlp"}
    assert parse_model("thinker=tiny").for_roles(["solver", "thinker"], "think_solve-v0", partners=["solver"]) == {
        "thinker": "tiny"}
    for bad, message in [("", "--model is empty"), ("tiny,solver=mlp", "--model part 'tiny' is not ROLE=MODEL"),
                         ("tiny,mlp", "--model 'tiny,mlp' lists several models"),
                         ("thinker=", "--model part 'thinker=' is not ROLE=MODEL"),
                         ("solver=tiny,solver=mlp", "--model names role 'solver' twice")]:
        with pytest.raises(ValueError, match=message):
            parse_model(bad)
        with pytest.raises(ValueError, match=message):
            TrainConfig(model=bad).check()


def test_per_token_advantages_reach_each_generated_token_and_a_flag_that_disagrees_is_named():
    kwargs = {"action_mode": "discrete"}
    team = build_team(TrainConfig(env="voting-v0", action_mode="discrete", model="mlp"), make("voting-v0", **kwargs),
                      ["voter"])
    episodes = RolloutEngine(team.policies, show_progress=False).run("voting-v0", 1, 2, seed=0, env_kwargs=kwargs)
    per_token = [[[0.5, 9.0] for _ in e.turns] for e in episodes]
    roles = set(team.trainable)
    assert all(s.adv == [0.5] for s in _samples(episodes, per_token, roles, per_token=True))   # one unit: first
    with pytest.raises(ValueError, match="sets per_token = True"):
        _samples(episodes, per_token, roles)
    with pytest.raises(ValueError, match="one number, not one per completion token"):
        _samples(episodes, [[0.5] * len(e.turns) for e in episodes], roles, per_token=True)
    team = build_team(TrainConfig(model="tiny", max_new_tokens=3), make("think_solve-v0"), ["solver", "thinker"])
    episodes = RolloutEngine(team.policies, show_progress=False).run("think_solve-v0", 1, 1, seed=0)
    values = [[[float(j) for j in range(len(t.completion_ids))] for t in e.turns] for e in episodes]
    samples = _samples(episodes, values, set(team.trainable), per_token=True)
    assert samples and all(s.kind == "generate" and s.adv == [float(j) for j in range(s.n)] for s in samples)


def test_the_mlp_scores_recorded_decisions_on_the_rows_it_read_bit_for_bit():
    # log_policy stacks the recorded inputs with one NumPy call per field; its rows, log-probabilities and gradients
    # must be those of writing each row and field by itself, with rows of one length and of several lengths
    from baselines.policies.base import Choice, VectorInputs
    from baselines.train.learners import Sample

    kwargs = {"action_mode": "discrete"}
    env = make("mini_hanabi-v1", **kwargs)
    team = build_team(TrainConfig(env="mini_hanabi-v1", action_mode="discrete", model="mlp"), env,
                      sorted(set(env.roles.values())))
    learner = team.learners[0]
    policy = learner.policy
    episodes = RolloutEngine(team.policies, show_progress=False).run("mini_hanabi-v1", 3, 2, seed=4,
                                                                     env_kwargs=kwargs)
    choices = [t.choice for e in episodes for t in e.turns]
    rng = np.random.default_rng(0)
    short = [Choice(c.index, c.logprob, "mlp", inputs=VectorInputs(
        c.inputs.observation[:int(rng.integers(1, len(c.inputs.observation)))],
        c.inputs.mask[:max(c.index + 1, int(rng.integers(1, len(c.inputs.mask) + 1)))], c.inputs.role_index))
        for c in choices[:7]]

    def row_by_row(inputs):
        x = np.zeros((len(inputs), policy.in_size), np.float32)
        mask = np.zeros((len(inputs), policy.action_size), np.float32)
        for i, v in enumerate(inputs):
            x[i, :len(v.observation)] = v.observation
            x[i, len(v.observation) + v.role_index] = 1.0
            mask[i, :len(v.mask)] = v.mask
        return policy._log_policy(x, mask)

    for batch in (choices, short + choices):
        inputs = [c.inputs for c in batch]
        grads = []
        for score in (lambda: policy.log_policy(inputs), lambda: row_by_row(inputs)):
            learner.module.zero_grad(set_to_none=True)
            logp, mask = score()
            logp.sum().backward()
            grads.append([logp.detach().numpy().tobytes(), mask.numpy().tobytes()]
                         + [p.grad.numpy().tobytes() for p in learner.parameters()])
        assert grads[0] == grads[1]
    with pytest.raises(ValueError, match="Choice.inputs"):
        learner.logprobs([Sample("r", "mlp", [], [0], [0.0], [1.0], choice=Choice(0, 0.0, "mlp"))])


# ---------------------------------------------------------------------- config.json
def _old_layout(run: Path) -> dict:
    """Rewrite run/config.json as the trainer wrote it before the "resolved" block: the resolved action mode and the
    config hash as top-level keys (as in the stored suite runs)."""
    raw = json.loads((run / "config.json").read_text())
    resolved = raw.pop("resolved")
    raw.update(config_hash=resolved["config_hash"], action_mode_resolved=resolved["action_mode"])
    (run / "config.json").write_text(json.dumps(raw, indent=1))
    return raw


def test_config_json_holds_the_config_fields_and_one_resolved_block(tmp_path):
    from baselines.train.config import read_run_config

    cfg = TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2,
                      out=str(tmp_path / "r"), progress=False, tensorboard=False)
    train(cfg)
    raw = json.loads((tmp_path / "r" / "config.json").read_text())
    assert raw == {**cfg.to_dict(), "resolved": {"action_mode": "discrete", "config_hash": cfg.hash()}}
    run = read_run_config(tmp_path / "r")
    assert run.config == cfg and run.resolved.action_mode == "discrete" and run.resolved.config_hash == cfg.hash()
    (tmp_path / "r" / "config.json").write_text(json.dumps({**cfg.to_dict(), "resolved": "discrete"}))
    with pytest.raises(ValueError, match="'resolved' must be an object"):
        read_run_config(tmp_path / "r")


@pytest.mark.parametrize("change, message", [
    ({"env_kwargs": [1]}, "env_kwargs must be an object, got \\[1\\]"),
    ({"seed": "3"}, "seed must be an int, got '3'"),
    ({"lr": True}, "lr must be a number, got True"),
    ({"model": 3}, "model must be a string, got 3"),
    ({"action_mode": "bogus"}, "--action-mode must be text or discrete, got 'bogus'"),
    ({"steps": 0}, "--steps must be > 0"),
    ({"resolved": {"action_mode": 3, "config_hash": "x"}}, "resolved.action_mode must be a string, got 3"),
])
def test_a_config_json_edited_to_values_the_trainer_refuses_is_a_clear_error(tmp_path, change, message):
    # a checkpoint player and the suite read a run's config.json back: a wrong type used to reach the trainer's
    # code (a TypeError traceback from evaluate: env_kwargs [1], a string seed) or pass (action_mode 'bogus')
    from baselines.train.config import read_run_config
    from leaderboard.players import load_player

    cfg = TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2,
                      out=str(tmp_path / "r"), progress=False, tensorboard=False)
    train(cfg)
    raw = json.loads((tmp_path / "r" / "config.json").read_text())
    (tmp_path / "r" / "config.json").write_text(json.dumps({**raw, **change}))
    with pytest.raises(ValueError, match=rf"config.json: {message}"):
        read_run_config(tmp_path / "r")
    with pytest.raises(ValueError, match=rf"checkpoint:.*config.json: {message}"):
        load_player(f"checkpoint:{tmp_path / 'r'}", "kuhn_poker-v0", ["player_0", "player_1"], "discrete")


def test_a_run_written_before_the_resolved_block_loads_resumes_and_counts_as_finished(tmp_path):
    from baselines.train.config import OUTPUT_FIELDS, read_run_config
    from leaderboard.players import load_player
    from leaderboard.suite import complete_run, run_one

    def cfg(out, steps, resume=False):
        return TrainConfig(env="kuhn_poker-v0", model="mlp", steps=steps, tasks_per_step=2, group_size=2, seed=3,
                           save_every=2, out=str(out), resume=resume, progress=False, tensorboard=False)

    run = tmp_path / "old"
    train(cfg(run, 2))
    old = _old_layout(run)
    assert read_run_config(run).resolved.config_hash == old["config_hash"] == cfg(run, 2).hash()
    player = load_player(f"checkpoint:{run}", "kuhn_poker-v0", ["player_0", "player_1"], "discrete")
    assert player.provenance["config_hash"] == old["config_hash"]
    assert player.provenance["train_config"] == {k: v for k, v in old.items() if k not in OUTPUT_FIELDS
                                                 and k not in ("config_hash", "action_mode_resolved")}
    # the suite's reuse: a finished run is scored as it is (not trained again) and keeps its hash
    assert complete_run(run, 2)
    spec = {"out": str(run), "steps": 2, "play": "self", "last_fraction": 1.0, "method": "broadcast",
            "setting": "kuhn", "seed": 3, "env_id": "kuhn_poker-v0", "env_kwargs": {}}
    assert run_one(spec)["config_hash"] == old["config_hash"]
    assert json.loads((run / "config.json").read_text()) == old
    # --resume continues it exactly: the same metrics as one run of 3 steps
    train(cfg(run, 3, resume=True))
    train(cfg(tmp_path / "whole", 3))
    assert _comparable(_metrics(run / "metrics.jsonl")) == _comparable(_metrics(tmp_path / "whole" / "metrics.jsonl"))
    assert complete_run(run, 3) and read_run_config(run).resolved.config_hash == old["config_hash"]


def test_the_mlps_multi_tensor_clip_and_adamw_steps_give_the_per_tensor_floats():
    # MLPLearner.foreach: gradient clipping and AdamW through torch's foreach ops (fewer Python calls a step); the
    # weights after several clipped steps must be those of the per-tensor loops, bit for bit
    from baselines.policies.mlp import MLP

    weights = []
    for foreach in (None, True):
        torch.manual_seed(0)
        model = MLP(30, 5)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01, foreach=foreach)
        data = torch.Generator().manual_seed(1)
        norms = []
        for step in range(6):
            opt.zero_grad(set_to_none=True)
            x = torch.randn(64, 30, generator=data)
            (model(x) ** 2).sum().mul(10.0 ** (step - 2)).backward()
            norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=foreach).item())
            opt.step()
        weights.append((norms, [p.detach().numpy().tobytes() for p in model.parameters()]))
    assert weights[0] == weights[1]


@pytest.mark.parametrize("lora", [{"lora_r": 4}, {"lora_alpha": 32.0}])
def test_lora_settings_without_adapters_are_refused_and_a_run_made_with_them_still_loads(tmp_path, lora):
    # --lora-r without --adapters trained the full weights without a word
    from baselines.train.config import read_run_config

    with pytest.raises(ValueError, match="--lora-r and --lora-alpha shape LoRA adapters, and --adapters is 'none'"):
        train(TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2,
                          out=str(tmp_path / "new"), progress=False, tensorboard=False, **lora))
    assert not (tmp_path / "new").exists()
    cfg = TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2,
                      out=str(tmp_path / "old"), progress=False, tensorboard=False)
    train(cfg)
    raw = json.loads((tmp_path / "old" / "config.json").read_text())
    (tmp_path / "old" / "config.json").write_text(json.dumps({**raw, **lora}))    # as a run made before the rule
    assert read_run_config(tmp_path / "old").config == dataclasses.replace(cfg, **lora)


def test_a_run_folder_another_process_writes_into_is_refused_and_a_suite_run_waits_for_it(tmp_path):
    # two trainers with one --out wrote one run together (interleaved metrics, each other's checkpoints), and a suite
    # sharing a baseline's run with another deleted that run while it trained ("unfinished")
    import fcntl
    import os
    import threading
    import time

    from baselines.outputs import FolderBusy
    from leaderboard.suite import complete_run, train_run

    out = tmp_path / "run"
    out.mkdir()
    other = os.open(out, os.O_RDONLY)            # another process's hold (a separate open: flock conflicts with it)
    fcntl.flock(other, fcntl.LOCK_EX)
    cfg = TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=2, group_size=2, out=str(out),
                      progress=False, tensorboard=False)
    with pytest.raises(FolderBusy, match="another process is writing into it now"):
        train(cfg)
    assert list(out.iterdir()) == []
    spec = {"env_id": "kuhn_poker-v0", "method": "broadcast", "seed": 0, "action_mode": "discrete", "model": "mlp",
            "mode": "generate", "steps": 1, "tasks_per_step": 2, "group_size": 2, "out": str(out)}
    threading.Timer(1.0, lambda: os.close(other)).start()       # the other process ends in a second
    start = time.monotonic()
    assert train_run(spec) == str(out)
    assert time.monotonic() - start >= 0.9 and complete_run(out, 1)
    with pytest.raises(ValueError, match="already holds a run"):      # free again: the folder's own check speaks
        train(cfg)
