"""The training loop, top to bottom: fresh seeds -> rollout (with the credit method's branches) -> advantages ->
clipped policy-gradient update -> metrics and checkpoints. A credit method with a learned critic (``mappo``, ``ippo``)
gets the turns' states recorded (``RolloutEngine(record_state=method.needs_state)``) and trains it with
``method.update(episodes)`` right after ``advantages``; what it returns is logged as ``credit/<name>`` (e.g.
``credit/critic_loss``) and its state is in the checkpoint's ``credit`` entry.

Data parallel. Under ``accelerate launch --num_processes N`` each process plays a contiguous shard of the step's
tasks, the episodes are gathered so every process computes the same advantages on the whole batch, and each process
trains on its own shard's turns; gradients are averaged by DDP, and each process's loss is scaled so that the
average equals the loss of the whole batch (the aggregation weights are computed over the whole batch). With a
policy that seeds its sampling per decision (the MLP) the N-process run plays the same episodes as one process.
"""

from __future__ import annotations

import gc
import json
import math
import os
import signal
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baselines.credit import make_credit
from baselines.rollout import RolloutEngine, training_seeds
from baselines.train import checkpoint
from baselines.train.config import TrainConfig
from baselines.train.learners import Sample, Team, build_team
from baselines.train.loss import policy_loss, token_weight
from marl_llm_envs import make, spec

__all__ = ["train"]

KILL_ENV = "MARL_TRAIN_KILL_AFTER_STEP"   # tests: SIGKILL this process right after that step's metrics are written


class _Dist:
    """The data-parallel context: accelerate when launched with several processes, else a plain single process."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.accelerator = None
        self.rank, self.world = 0, 1
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            from accelerate import Accelerator
            from accelerate.utils import DistributedDataParallelKwargs

            self.accelerator = Accelerator(cpu=cfg.device == "cpu",
                                           kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
            self.rank, self.world = self.accelerator.process_index, self.accelerator.num_processes

    @property
    def main(self) -> bool:
        return self.rank == 0

    def gather(self, items: list) -> list[list]:
        """Every process's ``items``, as one list per process in rank order."""
        if self.accelerator is None:
            return [items]
        from accelerate.utils import gather_object

        return gather_object([items])

    def prepare(self, module, optimizer):
        if self.accelerator is None:
            return module, optimizer
        return self.accelerator.prepare(module, optimizer)

    def backward(self, loss: torch.Tensor) -> None:
        if self.accelerator is None:
            loss.backward()
        else:
            self.accelerator.backward(loss)

    def no_sync(self, module, last: bool):
        if self.accelerator is None or last:
            return nullcontext()
        return self.accelerator.no_sync(module)


def _shard(items: list, rank: int, world: int) -> list:
    """A contiguous share of ``items`` (rank order = global order)."""
    n = len(items)
    return items[rank * n // world:(rank + 1) * n // world]


def _samples(team: Team, episodes, advantages, roles_now: set[str]) -> list[Sample]:
    """Every trained decision of the main episodes: turns of a trained role that produced tokens (never branch
    turns, replayed turns or scripted partners' turns)."""
    out = []
    for e, row in zip(episodes, advantages):
        for t, a in zip(e.turns, row):
            if t.role not in roles_now or t.replayed or not t.completion_ids:
                continue
            if t.choice is not None:     # a move of the legal ones (choice mode, the MLP): one scored decision
                kind, lps = t.choice.kind, [float(t.choice.logprob)]
            else:
                kind, lps = "generate", [float(x) for x in t.logprobs]
            if isinstance(a, list):          # a per-token method: decisions take the first token's value
                adv = [float(x) for x in a] if kind == "generate" else [float(a[0])]
            else:
                adv = [float(a)] * len(lps)
            if len(adv) != len(lps):
                raise ValueError(f"{e.env_id}: {len(adv)} advantages for a turn of {len(lps)} scored tokens")
            out.append(Sample(t.role, kind, list(t.prompt_ids), list(t.completion_ids), lps, adv,
                              list(t.legal_actions), dict(t.extra), choice=t.choice))
    return out


def _micro_batches(samples: list[Sample], budget: int) -> list[list[Sample]]:
    batches, cur, used = [], [], 0
    for s in samples:
        if cur and used + s.cost > budget:
            batches.append(cur)
            cur, used = [], 0
        cur.append(s)
        used += s.cost
    if cur:
        batches.append(cur)
    return batches


def _update(team: Team, cfg: TrainConfig, dist: _Dist, local: list[Sample], total: dict[str, list[int]],
            roles_now: set[str]) -> dict[str, float]:
    """One update of every learner with trained roles this step (PPO epochs x micro-batches, gradient clipping)."""
    stats: dict[str, float] = {"clip_frac": 0.0, "kl": 0.0, "ratio_max": 1.0, "entropy": 0.0, "recompute_gap_max": 0.0,
                               "recompute_gap_mean": 0.0, "trained_tokens": 0.0, "grad_norm": 0.0}
    gaps: list[float] = []
    entropy_sum = entropy_weight = 0.0       # the weighted mean entropy of the decisions the update trains
    for learner in team.learners:
        if not set(learner.trainable) & roles_now:
            continue
        mine = [s for s in local if s.role in learner.trainable and s.role in roles_now]
        scale = float(dist.world)     # DDP averages the processes' gradients; the weights sum over the whole batch
        weight_of: dict[int, float] = {}      # token_weight depends on the sample's length only: once per length
        for s in mine:
            w = weight_of.get(s.n)
            if w is None:
                w = weight_of[s.n] = token_weight(s.n, total[learner.name], cfg.aggregation)
            s.weight = w
        entropy_coef = cfg.entropy(learner.model_name)
        if cfg.kl_coef == 0 and entropy_coef == 0:
            # A zero advantage contributes nothing to the loss or its gradient: skip its forward pass. The weights
            # above still count its tokens, so the aggregation is unchanged (DAPO's token-mean over the batch).
            mine = [s for s in mine if any(a != 0.0 for a in s.adv)]
        batches = learner.micro_batches(mine, cfg.micro_batch_tokens)
        # verl's recompute: the old log-probabilities come from the training model itself, before any update. The
        # first epoch's forward passes all run before the first optimizer step, so they are that recompute: no
        # extra pass is needed.
        old: list[torch.Tensor | None] = [None] * len(batches)
        ref: list[torch.Tensor | None] = [None] * len(batches)
        epochs = cfg.epochs(learner.model_name)
        for _ in range(epochs):
            learner.optimizer.zero_grad(set_to_none=True)
            if not batches:   # a process with no samples still joins the gradient all-reduce
                zero = sum(p.sum() for p in learner.parameters()) * 0.0
                dist.backward(zero)
            for n, mb in enumerate(batches):
                with dist.no_sync(learner.forward_module, last=n == len(batches) - 1):
                    with _autocast(cfg):
                        new, entropy = learner.logprobs(mb)
                    new = new.float()
                    if old[n] is None:
                        old[n] = new.detach()
                        sampled = torch.tensor([x for s in mb for x in s.sampler_lp], dtype=torch.float32)
                        finite = torch.isfinite(sampled)   # a sampler's -inf never reaches the loss; skip it here too
                        gaps.extend((old[n].cpu() - sampled).abs()[finite].tolist())
                        if cfg.kl_coef > 0:
                            ref[n] = learner.ref_logprobs(mb).detach().float()
                    dev = new.device
                    adv = torch.tensor([x for s in mb for x in s.adv], dtype=torch.float32, device=dev)
                    w = torch.tensor([s.weight for s in mb for _ in range(s.n)], dtype=torch.float32, device=dev)
                    loss, st = policy_loss(new, old[n].to(dev), adv, w, clip_low=cfg.clip_low,
                                           clip_high=cfg.clip_high, ref_lp=None if ref[n] is None else ref[n].to(dev),
                                           kl_coef=cfg.kl_coef, entropy=entropy, entropy_coef=entropy_coef)
                    dist.backward(loss * scale)
                stats["clip_frac"] += st["clipped"] / epochs
                stats["kl"] += st.get("kl", 0.0) / epochs
                stats["ratio_max"] = max(stats["ratio_max"], st["ratio_max"])
                if entropy is not None:
                    entropy_sum += float((entropy.detach() * w).sum())
                    entropy_weight += float(w.sum())
            params = learner.parameters()
            norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
            stats["grad_norm"] = max(stats["grad_norm"], float(norm))
            learner.optimizer.step()
        stats["trained_tokens"] += sum(s.n for s in mine)
    if gaps:
        stats["recompute_gap_max"], stats["recompute_gap_mean"] = float(max(gaps)), float(np.mean(gaps))
    if entropy_weight > 0:
        # over the samples the update computed (zero-advantage ones are skipped when nothing else needs them), so
        # that skipping does not read as an entropy collapse
        stats["entropy"] = entropy_sum / entropy_weight
    return stats


def _autocast(cfg: TrainConfig):
    if cfg.dtype == "bfloat16":
        return torch.autocast(device_type=torch.device(cfg.device).type, dtype=torch.bfloat16)
    return nullcontext()


def _metrics(step: int, episodes, advantages, family: str, diag: dict[str, float]) -> dict[str, Any]:
    m: dict[str, Any] = {"step": step, "episodes": len(episodes)}
    teams: dict[str, list[float]] = {}
    roles: dict[str, list[float]] = {}
    adv_by_role: dict[str, list[float]] = {}
    invalid = turns = 0
    for e, row in zip(episodes, advantages):
        for team, r in e.team_rewards.items():
            teams.setdefault(team, []).append(float(r))
        by_role: dict[str, list[float]] = {}
        for t, a in zip(e.turns, row):
            by_role.setdefault(t.role, []).append(float(e.rewards.get(t.agent, 0.0)))
            adv_by_role.setdefault(t.role, []).extend(a if isinstance(a, list) else [a])
            invalid += t.invalid
            turns += 1
        for role, rs in by_role.items():
            roles.setdefault(role, []).append(float(np.mean(rs)))
    for team, rs in sorted(teams.items()):
        m[f"reward/team/{team}"] = float(np.mean(rs))
    for role, rs in sorted(roles.items()):
        m[f"reward/role/{role}"] = float(np.mean(rs))
        if family == "zero_sum":
            m[f"win_rate/{role}"] = float(np.mean([r > 0 for r in rs]))
    for role, xs in sorted(adv_by_role.items()):
        x = np.asarray(xs, dtype=np.float64)
        m[f"adv/{role}/mean"], m[f"adv/{role}/std"], m[f"adv/{role}/abs"] = (float(x.mean()), float(x.std()),
                                                                             float(np.abs(x).mean()))
    m["invalid_rate"] = invalid / turns if turns else 0.0
    m["tokens/main"] = sum(e.tokens_generated for e in episodes)
    m["tokens/branches"] = sum(e.branch_tokens_generated for e in episodes)
    free: dict[str, list[float]] = {}
    for e in episodes:       # the free-riding diagnostic: the outcome with minus without the agent
        for b in e.branches:
            if b.kind == "ablate":
                t = e.turns[b.turn_index]
                free.setdefault(t.role, []).append(float(e.rewards.get(t.agent, 0.0))
                                                   - float(b.team_rewards.get(t.team, 0.0)))
    for role, xs in sorted(free.items()):
        m[f"free_riding/{role}"] = float(np.mean(xs))
    for role, xs in sorted(_rollout_entropy(episodes).items()):
        m[f"policy_entropy/{role}"] = float(np.mean(xs))
    for k, v in diag.items():
        m[f"credit/{k}"] = float(v)
    return m


def _rollout_entropy(episodes) -> dict[str, list[float]]:
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


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run (or resume) a training run; returns the last step's metrics.

    A run whose every learner is a small MLP on the CPU uses one torch thread (the batches are a few hundred rows of
    a 64-wide MLP: more threads only add synchronisation, and parallel runs go in separate processes); the caller's
    thread count is restored afterwards. A run of LLM learners on the CPU also uses one thread unless
    ``OMP_NUM_THREADS`` asks for more: its update runs thousands of small kernels (the prompts' shared prefixes are
    computed once, the rest a few tokens each), and every one of them waits at a thread barrier for the slowest
    thread, so on a busy machine two threads made SmolLM2-135M's update 8-17x slower than one
    (``benchmarks/RESULTS.md``, "SmolLM2's update cost"). Such an MLP run also keeps the objects that live through the whole run (torch's
    modules, the models, the envs) out of Python's full garbage collections (``gc.freeze`` once they exist, again
    after the first step, which imports ``torch._dynamo``): each step allocates thousands of short-lived objects, and
    every full collection would otherwise walk the whole heap of torch (measured: 20-30% of an MLP run's CPU time).
    Collection order changes no result; the freeze is undone afterwards unless the caller had frozen objects too."""
    cfg.check()
    only_mlp = cfg.device == "cpu" and all(part.split("=")[-1].strip() == "mlp" for part in cfg.model.split(","))
    threads = torch.get_num_threads()
    unfreeze = only_mlp and gc.get_freeze_count() == 0
    if only_mlp or (cfg.device == "cpu" and "OMP_NUM_THREADS" not in os.environ):
        torch.set_num_threads(1)
    try:
        return _train(cfg, freeze=only_mlp)
    finally:
        torch.set_num_threads(threads)
        if unfreeze:
            gc.unfreeze()


def _train(cfg: TrainConfig, freeze: bool = False) -> dict[str, Any]:
    # ---- everything that can fail does so before the first rollout
    env_spec = spec(cfg.env)
    uses_mlp = any(part.split("=")[-1].strip() == "mlp" for part in cfg.model.split(","))
    action_mode = cfg.action_mode or ("discrete" if uses_mlp else "text")
    env_kwargs = {**cfg.env_kwargs, "action_mode": action_mode}
    try:
        proto = make(cfg.env, **env_kwargs)
    except TypeError as e:           # an unknown kwarg: say which flag it came from
        raise ValueError(f"--env-kwargs: {e}") from None
    roles = sorted(set(proto.roles.values()))
    method = make_credit(cfg.credit, **cfg.credit_options)
    branches = method.branches(cfg.env)
    for b in branches:
        b.agents(proto)
    if cfg.wandb:
        try:
            import wandb  # noqa: F401
        except ImportError:
            raise ImportError("--wandb needs wandb: pip install wandb") from None
    if cfg.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda but no CUDA device is available")
    out = Path(cfg.out)
    ckpt_dir = out / "checkpoints"
    metrics_path = out / "metrics.jsonl"
    resume_from = checkpoint.latest(ckpt_dir) if cfg.resume else None
    if cfg.resume and resume_from is None:
        raise ValueError(f"--resume: no checkpoint in {ckpt_dir}")
    if not cfg.resume and metrics_path.exists() and metrics_path.stat().st_size:
        raise ValueError(f"{out} already holds a run; use --resume to continue it, or another --out")
    dist = _Dist(cfg)
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed % 2**32)
    team = build_team(cfg, proto, roles)
    for learner in team.learners:
        if learner.trainable:
            learner.optimizer = torch.optim.AdamW(learner.parameters(), lr=cfg.learning_rate(learner.model_name),
                                                  weight_decay=cfg.weight_decay)
            module, learner.optimizer = dist.prepare(learner.module, learner.optimizer)
            learner.forward_module = module
            if cfg.compile:
                learner.forward_module = torch.compile(learner.forward_module)

    start = 0
    if resume_from is not None:
        meta, tensors = checkpoint.load(resume_from)
        if meta["config_hash"] != cfg.hash():
            raise ValueError(f"--resume: the run in {out} was made with another config (hash {meta['config_hash']}, "
                             f"now {cfg.hash()}); give the same flags, or another --out")
        for learner, state in zip(team.learners, tensors["learners"]):
            learner.load_state_dict(state["model"])
            if learner.optimizer is not None and state["optimizer"] is not None:
                learner.optimizer.load_state_dict(state["optimizer"])
        method.load_state_dict(meta["credit"])
        checkpoint.set_rng_state(tensors["rng"])
        start = int(meta["step"])
        if dist.main and metrics_path.exists():        # drop the lines of steps after the checkpoint
            lines = metrics_path.read_text().splitlines()[:start]
            metrics_path.write_text("".join(line + "\n" for line in lines))
    if dist.main:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps({**cfg.to_dict(), "config_hash": cfg.hash(),
                                                     "action_mode_resolved": action_mode}, indent=1))
    for learner in team.learners:
        learner.set_version(start)

    writer = _tensorboard(cfg, out, start) if dist.main else None
    run = None
    if cfg.wandb and dist.main:
        import wandb

        run = wandb.init(project=cfg.wandb, config=cfg.to_dict(), dir=str(out), resume="allow")
    bar = None
    if cfg.progress and dist.main:
        from baselines.progress import Progress

        bar = Progress(cfg.steps, f"train {cfg.env} {cfg.credit}", unit="step", initial=start)   # a bar on a TTY only
    method.attach(team)      # a critic that reads the policy model (an LLM value head) gets it here
    engine = RolloutEngine(team.policies, show_progress=False, record_state=method.needs_state)
    metrics: dict[str, Any] = {}
    alt_roles = sorted(team.trainable)
    if freeze:
        gc.freeze()
    for step in range(start, cfg.steps):
        t0 = time.perf_counter()
        # ---- rollout: fresh seeds per step, this process's shard of the tasks
        seeds = _shard(training_seeds(cfg.seed, step, cfg.tasks_per_step), dist.rank, dist.world)
        local = engine.run(cfg.env, len(seeds), cfg.group_size, seed=cfg.seed * 1_000_003 + step,
                           env_kwargs=env_kwargs, branches=branches, seeds=seeds, run_id=f"step-{step}.{dist.rank}")
        shards = dist.gather(local)
        episodes = [e for shard in shards for e in shard]
        offset = sum(len(shard) for shard in shards[:dist.rank])      # where this process's episodes start
        t1 = time.perf_counter()
        # ---- credit, on the whole batch
        advantages = method.advantages(episodes)
        diag = method.diagnostics(episodes)
        diag.update(method.update(episodes))     # a learned critic's own step (the same on every process)
        t2 = time.perf_counter()
        # ---- update: this process's turns, weights over the whole batch
        if cfg.alternate_every:
            roles_now = {alt_roles[(step // cfg.alternate_every) % len(alt_roles)]}
        else:
            roles_now = set(team.trainable)
        everything = _samples(team, episodes, advantages, roles_now)
        total = {lr.name: [s.n for s in everything if s.role in lr.trainable] for lr in team.learners}
        if dist.world == 1:       # one process: its shard is the whole batch
            mine = everything
        else:
            mine = _samples(team, episodes[offset:offset + len(local)], advantages[offset:offset + len(local)],
                            roles_now)
        upd = _update(team, cfg, dist, mine, total, roles_now)
        for learner in team.learners:
            learner.set_version(step + 1)
        t3 = time.perf_counter()
        # ---- metrics
        metrics = _metrics(step, episodes, advantages, env_spec.family, diag)
        metrics.update({k: v for k, v in upd.items()})
        metrics["roles_trained"] = ",".join(sorted(roles_now))
        metrics.update({"time/rollout": t1 - t0, "time/credit": t2 - t1, "time/update": t3 - t2,
                        "time/step": t3 - t0})
        if dist.main:
            with open(metrics_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(metrics, sort_keys=True) + "\n")
            if writer is not None:
                for k, v in metrics.items():
                    if isinstance(v, (int, float)) and k != "step":
                        writer.add_scalar(k, v, step)
                writer.flush()
            if run is not None:
                run.log({k: v for k, v in metrics.items() if isinstance(v, (int, float))}, step=step)
            if bar is not None:
                reward = next((v for k, v in metrics.items() if k.startswith("reward/team/")), 0.0)
                tps = (metrics["tokens/main"] + metrics["tokens/branches"]) / max(1e-9, metrics["time/step"])
                bar.update(1, reward=f"{reward:+.3f}", tok_s=f"{tps:.0f}")
        # ---- checkpoint
        if dist.main and ((step + 1) % cfg.save_every == 0 or step + 1 == cfg.steps):
            meta = {"step": step + 1, "config_hash": cfg.hash(), "credit": method.state_dict()}
            tensors = {"learners": [{"model": lr.state_dict(),
                                     "optimizer": lr.optimizer.state_dict() if lr.optimizer is not None else None}
                                    for lr in team.learners], "rng": checkpoint.rng_state()}
            checkpoint.save(ckpt_dir, step + 1, meta, tensors, keep=cfg.keep_checkpoints)
        if os.environ.get(KILL_ENV) == str(step + 1) and dist.main:
            os.kill(os.getpid(), signal.SIGKILL)
        if freeze and step == start:
            gc.freeze()      # what the first step built for good (torch._dynamo, imported by the first optimizer step)
    if bar is not None:
        bar.close()
    if writer is not None:
        writer.close()
    if run is not None:
        run.finish()
    return metrics


def _tensorboard(cfg: TrainConfig, out: Path, start: int):
    if not cfg.tensorboard:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:     # tensorboard is optional
        return None
    return SummaryWriter(str(out / "tensorboard"), purge_step=start)
