"""The training loop, top to bottom: fresh seeds -> rollout (with the credit method's branches) -> advantages ->
clipped policy-gradient update -> metrics and checkpoints. A credit method with a learned critic (``mappo``, ``ippo``)
gets the turns' states recorded (``RolloutEngine(record_state=method.needs_state)``) and trains it with
``method.update(episodes)`` right after ``advantages``; what it returns is logged as ``credit/<name>`` (e.g.
``credit/critic_loss``) and its state is in the checkpoint's ``credit`` entry. With ``--eval-every N`` the team's
policies are scored exactly on held-out seeds (:mod:`baselines.train.exact_eval`): ``eval_start/...`` in step 0's
line, ``eval/...`` after every N-th update and the last.

Data parallel. Under ``accelerate launch --num_processes N`` each process plays a contiguous shard of the step's
tasks, the episodes are gathered so every process computes the same advantages on the whole batch, and each process
trains on its own shard's turns; gradients are averaged by DDP, and each process's loss is scaled so that the
average equals the loss of the whole batch (the aggregation weights are computed over the whole batch). With a
policy that seeds its sampling per decision (the MLP) the N-process run plays the same episodes as one process.
"""

from __future__ import annotations

import gc
import inspect
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baselines.credit import CreditMethod, make_credit
from baselines.credit.base import credit_class
from baselines.models import require_device
from baselines.outputs import writing
from baselines.rollout import BranchSpec, RolloutEngine, training_seeds
from baselines.train import checkpoint
from baselines.train.config import TrainConfig, write_run_config
from baselines.train.exact_eval import evaluate
from baselines.train.dist import Dist, shard
from baselines.train.learners import Team, build_team
from baselines.train.logging import METRICS, Log, keep_metrics, require_wandb, step_metrics
from baselines.train.update import trained_samples, update
from marl_llm_envs import make, spec

__all__ = ["train"]

CHECKPOINTS = "checkpoints"      # the run folder's checkpoint folder
COLLECT_EVERY = 4                # an MLP run's full garbage collection: after every 4th step (_collect_once_per_step)


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
    only_mlp = cfg.device == "cpu" and cfg.model_spec.names == {"mlp"}
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
    run = _prepare(cfg)          # everything that can fail does so before the first rollout
    dist = Dist(cfg)
    if not dist.main:            # the other processes of a data-parallel run write nothing here
        return _train_in(cfg, run, dist, freeze)
    with writing(run.out):       # no other process writes this run while this one does (FolderBusy at once)
        run.resume_from = _resume_point(cfg, run.out)      # again, now that no other process can change the folder
        return _train_in(cfg, run, dist, freeze)


def _train_in(cfg: TrainConfig, run: _Run, dist: Dist, freeze: bool) -> dict[str, Any]:
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed % 2**32)
    team = build_team(cfg, run.env, run.roles, prepare=dist.prepare)
    method = run.method
    start = _resume(cfg, run, team, dist.main) if run.resume_from is not None else 0
    if dist.main:
        run.out.mkdir(parents=True, exist_ok=True)
        write_run_config(run.out, cfg, run.action_mode)
    for learner in team.learners:
        learner.set_version(start)
        learner.sync_rollouts(start)     # --backend vllm: the engine starts from the trainer's (resumed) weights
    log = Log(cfg, run.out, start) if dist.main else None
    method.attach(team)      # a critic that reads the policy model (an LLM value head) gets it here
    engine = RolloutEngine(team.policies, show_progress=False, record_state=method.needs_state)
    metrics: dict[str, Any] = {}
    if freeze:
        gc.freeze()
    try:
        with _collect_once_per_step(freeze):
            for step in range(start, cfg.steps):
                metrics = _step(cfg, run, dist, team, method, engine, log, step, start, freeze)
    finally:
        if log is not None:
            log.close()
    return metrics


@contextmanager
def _collect_once_per_step(enabled: bool):
    """With ``enabled`` (MLP runs): no automatic collections while a step runs, one full collection after every
    :data:`COLLECT_EVERY`-th step (and the first and the last; at the end of :func:`_step`). A step
    allocates about 10^5 short-lived, mostly acyclic records (turns, branches) that reference counting frees when the
    step's locals go; automatic collections in between would walk them all again (a profile of a coma step on
    team_umbrella delay 30 put them at about 1.5 of its 6.5 CPU-s). The collection after the step finds what cycles
    are left, on a heap that is small again. Every step's collection walks the objects that live on (the envs'
    state, about 10^3), 200-300 us, a tenth of a Kuhn step's credit-and-update time, and finds no cycle in a broadcast
    run; so it runs every few steps (a coma step on team_umbrella leaves about 10^5 cyclic objects, a few MB, which
    wait at most that many steps). Collection order changes no result."""
    if not enabled:
        yield
        return
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _step(cfg, run, dist, team, method, engine, log, step: int, start: int, freeze: bool) -> dict[str, Any]:
    """One training step: rollout, credit, update, metrics, checkpoint."""
    initial = _evaluate(cfg, run, team, "eval_start") if dist.main and step == 0 and cfg.eval_every else {}
    t0 = time.perf_counter()
    # ---- rollout: fresh seeds per step, this process's shard of the tasks; every process gets the whole batch
    episodes, mine = _rollout(engine, cfg, run, dist, step)
    t1 = time.perf_counter()
    # ---- credit, on the whole batch
    advantages = method.advantages(episodes)
    diag = method.diagnostics(episodes)
    diag.update(method.update(episodes))     # a learned critic's own step (the same on every process)
    t2 = time.perf_counter()
    # ---- update: this process's turns, weights over the whole batch
    roles_now = _roles_trained(cfg, team, step)
    everything = trained_samples(episodes, advantages, roles_now, method.per_token)
    total = {lr.name: [s.n for s in everything if s.role in lr.trainable] for lr in team.learners}
    local = everything if dist.world == 1 else trained_samples(episodes[mine], advantages[mine], roles_now,
                                                        method.per_token)
    upd = update(team, dist, local, total, roles_now)
    for learner in team.learners:
        learner.set_version(step + 1)
        if set(learner.trainable) & roles_now:      # --backend vllm: the engine plays the updated weights next
            learner.sync_rollouts(step + 1)
    t3 = time.perf_counter()
    # ---- metrics
    metrics = step_metrics(step, episodes, advantages, run.family, diag)
    metrics.update(upd)
    metrics["roles_trained"] = ",".join(sorted(roles_now))
    metrics.update({"time/rollout": t1 - t0, "time/credit": t2 - t1, "time/update": t3 - t2,
                    "time/step": t3 - t0})
    metrics.update(initial)
    if dist.main and cfg.eval_every and ((step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps):
        metrics.update(_evaluate(cfg, run, team, "eval"))
    if log is not None:
        log.write(step, metrics)
    # ---- checkpoint
    if dist.main and ((step + 1) % cfg.save_every == 0 or step + 1 == cfg.steps):
        _save(cfg, run.out, step + 1, team, method)
    del episodes, mine, advantages, everything, local
    if freeze and (step == start or (step + 1) % COLLECT_EVERY == 0 or step + 1 == cfg.steps):
        gc.collect()
        if step == start:
            gc.freeze()  # what the first step built for good (torch._dynamo, imported by the first optimizer step)
    return metrics


@dataclass
class _Run:
    """What :func:`_prepare` checked and made before the first rollout."""

    env: Any                       # one env of the run's env id and kwargs (roles, branch agents, the MLP's sizes)
    env_kwargs: dict[str, Any]     # --env-kwargs with the resolved action mode
    action_mode: str
    family: str
    roles: list[str]
    method: CreditMethod
    branches: list[BranchSpec]
    out: Path
    resume_from: Path | None       # the checkpoint --resume continues from


def _prepare(cfg: TrainConfig) -> _Run:
    """The env, the credit method and its branches, the output folder: every error a flag can cause (the team's are
    raised by build_team), before any rollout."""
    action_mode = cfg.action_mode or ("discrete" if "mlp" in cfg.model_spec.names else "text")
    env_kwargs = {**cfg.env_kwargs, "action_mode": action_mode}
    family = spec(cfg.env).family
    try:
        env = make(cfg.env, **env_kwargs)
    except TypeError as e:           # an unknown kwarg: say which flag it came from
        raise ValueError(f"--env-kwargs: {e}") from None
    method = make_credit(cfg.credit, **_credit_options(cfg))
    branches = method.branches(cfg.env)
    for b in branches:
        b.agents(env)
    if cfg.wandb:
        require_wandb()

    require_device(cfg.device)
    out = Path(cfg.out)
    return _Run(env, env_kwargs, action_mode, family, sorted(set(env.roles.values())), method, branches, out,
                _resume_point(cfg, out))


def _credit_options(cfg: TrainConfig) -> dict[str, Any]:
    """``--credit-options``, plus ``seed = --seed`` for a method that has a ``seed`` option the user left unset
    (shuffled's draws, MAPPO's critic initialization): two training seeds then draw independently, and one training
    seed reproduces its run exactly (issue 40: every seed shared shuffled's option seed 0, so one draw pattern)."""
    options = dict(cfg.credit_options)
    if "seed" not in options and "seed" in inspect.signature(credit_class(cfg.credit).__init__).parameters:
        options["seed"] = cfg.seed
    return options


def _resume_point(cfg: TrainConfig, out: Path) -> Path | None:
    """The checkpoint ``--resume`` continues from (``None`` without it), or why the folder cannot take this run."""
    resume_from = checkpoint.latest(out / CHECKPOINTS) if cfg.resume else None
    if cfg.resume and resume_from is None:
        why = checkpoint.why_none(out / CHECKPOINTS, "write one of those names into {latest} to resume from it")
        raise ValueError(f"--resume: no checkpoint in {out / CHECKPOINTS}{why}")
    metrics_path = out / METRICS
    if not cfg.resume and metrics_path.exists() and metrics_path.stat().st_size:
        raise ValueError(f"{out} already holds a run; use --resume to continue it, or another --out")
    return resume_from


def _resume(cfg: TrainConfig, run: _Run, team: Team, main: bool) -> int:
    """Load the checkpoint ``--resume`` continues from (weights, optimizer moments, KL references, the credit
    method's state, every RNG) and drop the metrics lines of steps after it; returns the step it was taken at."""
    meta, tensors = checkpoint.load(run.resume_from)
    if meta["config_hash"] != cfg.hash():
        raise ValueError(f"--resume: the run in {run.out} was made with another config (hash {meta['config_hash']}, "
                         f"now {cfg.hash()}); give the same flags, or another --out")
    if len(tensors["learners"]) != len(team.learners):
        raise ValueError(f"--resume: {run.resume_from} holds {len(tensors['learners'])} learners, the config builds "
                         f"{len(team.learners)}")
    try:
        for learner, state in zip(team.learners, tensors["learners"]):
            learner.load_state_dict(state["model"])
            if learner.optimizer is not None and state["optimizer"] is not None:
                learner.optimizer.load_state_dict(state["optimizer"])
            if learner.reference is not None:      # the KL reference: the initial weights, as saved, never the resumed
                if not isinstance(state.get("reference"), dict):
                    raise ValueError(f"--resume: {run.resume_from} holds no KL reference for {learner.name} (written "
                                     "before checkpoints kept it); with --kl-coef > 0 the run cannot continue "
                                     "against the same reference: train again with another --out")
                learner.load_reference_state(state["reference"])
        run.method.load_state_dict(meta["credit"])
        checkpoint.set_rng_state(tensors["rng"])
    except (RuntimeError, KeyError, TypeError, IndexError) as e:     # torch's own errors for a state that does not fit
        raise ValueError(f"--resume: {run.resume_from} does not fit this run's models, optimizers or RNGs "
                         f"({type(e).__name__}: {str(e)[:300]})") from None
    start = meta["step"]
    if main:
        keep_metrics(run.out / METRICS, start)
    return start


def _rollout(engine: RolloutEngine, cfg: TrainConfig, run: _Run, dist: Dist, step: int) -> tuple[list, slice]:
    """Step ``step``'s episodes, gathered from every process in rank order, and the slice of them this process
    played (its shard of the step's tasks)."""
    seeds = shard(training_seeds(cfg.seed, step, cfg.tasks_per_step), dist.rank, dist.world)
    local = engine.run(cfg.env, len(seeds), cfg.group_size, seed=cfg.seed * 1_000_003 + step,
                       env_kwargs=run.env_kwargs, branches=run.branches, seeds=seeds,
                       run_id=f"step-{step}.{dist.rank}")
    shards = dist.gather(local)
    offset = sum(len(shard) for shard in shards[:dist.rank])      # where this process's episodes start
    return [e for shard in shards for e in shard], slice(offset, offset + len(local))


def _roles_trained(cfg: TrainConfig, team: Team, step: int) -> set[str]:
    """Every trained role, or with ``--alternate-every N`` one at a time, switching every N steps."""
    if not cfg.alternate_every:
        return set(team.trainable)
    order = sorted(team.trainable)
    return {order[(step // cfg.alternate_every) % len(order)]}


def _evaluate(cfg: TrainConfig, run: _Run, team: Team, prefix: str) -> dict[str, float]:
    """The exact held-out evaluation of the team's policies now (:mod:`baselines.train.exact_eval`), as
    ``<prefix>/...`` metrics: ``eval_start/...`` in step 0's line (the untrained policy), ``eval/...`` after the
    update of every ``--eval-every``-th step and of the last (with ``eval/time``, its seconds)."""
    t = time.perf_counter()
    values = evaluate(team.policies, cfg.env, run.env_kwargs, cfg.eval_episodes)
    values["eval/time"] = time.perf_counter() - t
    return {prefix + k[len("eval"):]: v for k, v in values.items()}


def _save(cfg: TrainConfig, out: Path, step: int, team: Team, method: CreditMethod) -> None:
    """Checkpoint ``step``: every learner's weights, optimizer moments and KL reference (``--kl-coef``), the credit
    method's state, every RNG."""
    meta = {"step": step, "config_hash": cfg.hash(), "credit": method.state_dict()}
    tensors = {"learners": [{"model": lr.state_dict(),
                             "optimizer": lr.optimizer.state_dict() if lr.optimizer is not None else None,
                             "reference": lr.reference_state()}     # the KL reference's weights (None: none kept)
                            for lr in team.learners], "rng": checkpoint.rng_state()}
    checkpoint.save(out / CHECKPOINTS, step, meta, tensors, keep=cfg.keep_checkpoints)
