"""What a training run writes about each step: the metrics of a step (:func:`step_metrics`), and where they go
(:class:`Log`): a line of ``metrics.jsonl`` (main process only), TensorBoard when it is installed and asked for,
W&B with ``--wandb``, and the progress bar. A run resumed from its checkpoint at step ``k`` first cuts
``metrics.jsonl`` back to the lines of steps ``0 .. k - 1`` (:func:`keep_metrics`) and writes the later ones again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from baselines.outputs import replace_text
from baselines.progress import Progress
from baselines.rollout import episode_stats
from baselines.train.config import TrainConfig

try:                 # TensorBoard is optional (the llm extra installs it): without it the run logs no TensorBoard
    from torch.utils.tensorboard import SummaryWriter
except ImportError:
    SummaryWriter = None

__all__ = ["METRICS", "Log", "keep_metrics", "refuse_old_run", "require_wandb", "step_metrics"]

METRICS = "metrics.jsonl"        # one JSON line of metrics per step


# ---------------------------------------------------------------------- a step's metrics
def step_metrics(step: int, episodes, advantages, family: str, diag: dict[str, float]) -> dict[str, Any]:
    """The rollout's and the credit method's metrics of step ``step``: rewards per team and role, advantages per
    role, invalid moves, tokens, the free-riding diagnostic, the rollout's entropy, and ``credit/<name>`` for the
    method's own ``diag``."""
    m: dict[str, Any] = {"step": step, "episodes": len(episodes)}
    stats = episode_stats(episodes)
    adv_by_role: dict[str, list[float]] = {}
    for e, row in zip(episodes, advantages):
        for t, a in zip(e.turns, row):
            xs = adv_by_role.get(t.role)
            if xs is None:
                xs = adv_by_role[t.role] = []
            if isinstance(a, list):
                xs.extend(a)
            else:
                xs.append(a)
    for team, r in stats.means(stats.team_rewards).items():
        m[f"reward/team/{team}"] = r
    for team, r in sorted(decisive_rewards(episodes).items()):
        m[f"reward/decisive/{team}"] = float(np.mean(r))
    for role, rs in sorted(stats.role_rewards.items()):
        m[f"reward/role/{role}"] = float(np.mean(rs))
        if family == "zero_sum":
            m[f"win_rate/{role}"] = float(np.mean([r > 0 for r in rs]))
    for role, xs in sorted(adv_by_role.items()):
        x = np.asarray(xs, dtype=np.float64)
        m[f"adv/{role}/mean"], m[f"adv/{role}/std"], m[f"adv/{role}/abs"] = (float(x.mean()), float(x.std()),
                                                                             float(np.abs(x).mean()))
    m["invalid_rate"] = stats.invalid_rate
    m["tokens/main"] = stats.tokens_main
    m["tokens/branches"] = stats.tokens_branches
    free: dict[str, list[float]] = {}
    for e in episodes:       # the free-riding diagnostic: the outcome with minus without the agent
        for b in e.branches:
            if b.kind == "ablate":
                t = e.turns[b.turn_index]
                free.setdefault(t.role, []).append(float(e.rewards.get(t.agent, 0.0))
                                                   - float(b.team_rewards.get(t.team, 0.0)))
    for role, xs in sorted(free.items()):
        m[f"free_riding/{role}"] = float(np.mean(xs))
    for role, xs in sorted(rollout_entropy(episodes).items()):
        m[f"policy_entropy/{role}"] = float(np.mean(xs))
    for k, v in diag.items():
        m[f"credit/{k}"] = float(v)
    return m


def decisive_rewards(episodes) -> dict[str, list[float]]:
    """Per team, the noise-free reward of each episode whose env reports the noise it added (``noise_total`` in the
    final infos, e.g. team_umbrella-v0): the team reward minus that noise, i.e. the decisive move's +-1 (or the
    invalid-move penalty). Empty for envs that add no noise."""
    out: dict[str, list[float]] = {}
    for e in episodes:
        noise = next((i["noise_total"] for i in e.final_infos.values()
                      if isinstance(i, dict) and i.get("noise_total") is not None), None)
        if noise is None:
            continue
        for team, r in e.team_rewards.items():
            out.setdefault(team, []).append(float(r) - float(noise))
    return out


def rollout_entropy(episodes) -> dict[str, list[float]]:
    """Per role, the entropy (nats) of each main-episode decision's sampled distribution over the legal moves, from
    the probabilities the policy recorded (``Turn.choice.probs``: choice mode, scripted bots): the exploration left at
    every step, from step 0 on, over every decision (not only those the update trains)."""
    out: dict[str, list[float]] = {}
    for e in episodes:
        for t in e.turns:
            probs = t.choice.probs if t.choice is not None and not t.replayed else None
            if probs:
                p = np.asarray(probs, dtype=np.float64)
                p = p[p > 0]
                out.setdefault(t.role, []).append(float(-(p * np.log(p)).sum()))
    return out


# ---------------------------------------------------------------------- where they go
def require_wandb():
    """The ``wandb`` module, or an ``ImportError`` saying how to install it (``--wandb`` asks for it)."""
    try:
        import wandb  # lazy: an optional package (slow to import), only --wandb needs it
    except ImportError:
        raise ImportError("--wandb needs wandb: pip install wandb") from None
    return wandb


class Log:
    """Where each step's metrics go (the main process only): a line of ``metrics.jsonl``, and TensorBoard, W&B and
    the progress bar where they are asked for."""

    def __init__(self, cfg: TrainConfig, out: Path, start: int) -> None:
        self.path = out / METRICS
        self.file = None
        self.writer = None
        if cfg.tensorboard and SummaryWriter is not None:
            self.writer = SummaryWriter(str(out / "tensorboard"), purge_step=start)
        self.run = None
        if cfg.wandb:
            self.run = require_wandb().init(project=cfg.wandb, config=cfg.to_dict(), dir=str(out), resume="allow")
        self.bar = None
        if cfg.progress:
            self.bar = Progress(cfg.steps, f"train {cfg.env} {cfg.credit}", unit="step", initial=start)   # TTY: a bar

    def write(self, step: int, metrics: dict[str, Any]) -> None:
        if self.file is None:       # opened once, at the first step; each line is flushed as it is written
            self.file = open(self.path, "a", encoding="utf-8")
        self.file.write(json.dumps(metrics, sort_keys=True) + "\n")
        self.file.flush()
        if self.writer is not None:
            for k, v in metrics.items():
                if isinstance(v, (int, float)) and k != "step":
                    self.writer.add_scalar(k, v, step)
            self.writer.flush()
        if self.run is not None:
            self.run.log({k: v for k, v in metrics.items() if isinstance(v, (int, float))}, step=step)
        if self.bar is not None:
            reward = next((v for k, v in metrics.items() if k.startswith("reward/team/")), 0.0)
            tps = (metrics["tokens/main"] + metrics["tokens/branches"]) / max(1e-9, metrics["time/step"])
            self.bar.update(1, reward=f"{reward:+.3f}", tok_s=f"{tps:.0f}")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        if self.bar is not None:
            self.bar.close()
        if self.writer is not None:
            self.writer.close()
        if self.run is not None:
            self.run.finish()


# ---------------------------------------------------------------------- the metrics file of a new or resumed run
def refuse_old_run(out: Path) -> None:
    """A new run refuses a folder that already holds one (a non-empty ``metrics.jsonl``): ``--resume`` continues
    it, another ``--out`` starts afresh."""
    path = out / METRICS
    if path.exists() and path.stat().st_size:
        raise ValueError(f"{out} already holds a run; use --resume to continue it, or another --out")


def keep_metrics(path: Path, start: int) -> None:
    """Cut ``metrics.jsonl`` to the lines of steps ``0 .. start - 1`` (a run resumed from its checkpoint at step
    ``start`` writes the later ones again), replacing the file in one step (a process killed while it is rewritten
    leaves the old file, never a cut one). A file that does not hold those steps, in order, is an error that leaves
    it untouched: resuming would write a run whose metrics miss steps."""
    if not path.exists():
        lines: list[str] = []
    else:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[:start]
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict) or row.get("step") != i:
            raise ValueError(f"--resume: line {i + 1} of {path} is not the metrics of step {i} (the file was cut or "
                             f"edited); the checkpoint continues from step {start}. Restore the file, or train again "
                             "with another --out")
    if len(lines) < start:
        raise ValueError(f"--resume: {path} holds the metrics of {len(lines)} steps, but the checkpoint continues "
                         f"from step {start} (the file was cut or deleted); resuming would leave steps "
                         f"{len(lines)}..{start - 1} out. Restore the file, or train again with another --out")
    replace_text(path, "".join(line + "\n" for line in lines))
