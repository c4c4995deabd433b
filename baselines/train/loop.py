"""The training loop, top to bottom: :func:`train` checks the config, :func:`prepare` makes the env, the credit
method and its branches (every error a flag can cause, before any rollout), the team is built (each learner's update
settings resolved once, :meth:`~baselines.train.config.TrainConfig.learner_settings`), and every :func:`step` runs

    fresh seeds -> rollout (with the credit method's branches) -> advantages -> clipped policy-gradient update
    (:mod:`baselines.train.update`) -> metrics (:mod:`baselines.train.logging`) -> checkpoint
    (:mod:`baselines.train.checkpoint`).

A credit method with a learned critic (``mappo``, ``ippo``) gets the turns' states recorded
(``RolloutEngine(record_state=method.needs_state)``) and trains it with ``method.update(episodes)`` right after
``advantages``; what it returns is logged as ``credit/<name>`` (e.g. ``credit/critic_loss``) and its state is in the
checkpoint's ``credit`` entry. With ``--partners ROLE=BOT:N`` (a curriculum) the bot plays ROLE in steps 0..N-1
and ROLE's own model from step N on (:meth:`Team.playing <baselines.train.learners.Team.playing>`); the phase is a
function of the step, so a resumed run switches at the same step; the held-out evaluation always scores the models
(a bot reports no distribution). With ``--eval-every N`` the team's policies are scored exactly on held-out seeds
(:mod:`baselines.train.exact_eval`): ``eval_start/...`` in step 0's line, ``eval/...`` after every N-th update and
the last. Under ``accelerate launch --num_processes N`` the steps run data parallel (:mod:`baselines.train.dist`).
"""

from __future__ import annotations

import gc
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baselines.credit import CreditMethod, make_credit
from baselines.models import require_device
from baselines.outputs import writing
from baselines.rollout import BranchSpec, RolloutEngine, training_seeds
from baselines.train import checkpoint
from baselines.train.config import RUN_CONFIG, TrainConfig, read_run_config, write_run_config
from baselines.train.dist import Dist, shard
from baselines.train.exact_eval import evaluate
from baselines.train.learners import Team, build_team
from baselines.train.logging import METRICS, Log, keep_metrics, refuse_old_run, require_wandb, step_metrics
from baselines.train.update import trained_samples, update
from marl_llm_envs import make, spec

__all__ = ["prepare", "step", "train"]

COLLECT_EVERY = 4                # an MLP run's full garbage collection: after every 4th step (_collect_once_per_step)


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run (or resume) a training run; returns the last step's metrics.

    A run whose every learner is a small MLP on the CPU uses one torch thread (the batches are a few hundred rows of
    a 64-wide MLP: more threads only add synchronisation, and parallel runs go in separate processes); the caller's
    thread count is restored afterwards. A run of LLM learners on the CPU also uses one thread unless
    ``OMP_NUM_THREADS`` asks for more: its update runs thousands of small kernels (the prompts' shared prefixes are
    computed once, the rest a few tokens each), and every one of them waits at a thread barrier for the slowest
    thread, so on a busy machine two threads made SmolLM2-135M's update 8-17x slower than one
    (``benchmarks/RESULTS.md``, "SmolLM2's update cost"). Such an MLP run also keeps the objects that live through
    the whole run (torch's modules, the models, the envs) out of Python's full garbage collections (``gc.freeze``
    once they exist, again after the first step, which imports ``torch._dynamo``): each step allocates thousands of
    short-lived objects, and every full collection would otherwise walk the whole heap of torch (measured: 20-30% of
    an MLP run's CPU time). Collection order changes no result; the freeze is undone afterwards unless the caller had
    frozen objects too."""
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


@dataclass
class Run:
    """What :func:`prepare` checked and made before the first rollout."""

    env: Any                       # one env of the run's env id and kwargs (roles, branch agents, the MLP's sizes)
    env_kwargs: dict[str, Any]     # --env-kwargs with the resolved action mode
    action_mode: str
    family: str
    roles: list[str]
    method: CreditMethod
    branches: list[BranchSpec]
    out: Path
    resume_from: Path | None       # the checkpoint --resume continues from


@dataclass
class State:
    """What every :func:`step` reads: the config, what :func:`prepare` made, and what the run set up before step 0."""

    cfg: TrainConfig
    run: Run
    dist: Dist
    team: Team                     # the learners (each with its resolved update settings) and every role's policy
    engines: dict[tuple[str, ...], RolloutEngine]   # by the roles a curriculum's bots play (): team.policies
    log: Log | None                # the main process's metrics (None on the other processes)
    start: int                     # the first step of this process: 0, or the resumed checkpoint's step
    freeze: bool                   # an MLP run: the garbage collector's schedule of _collect_once_per_step
    # the exact evaluation's distributions of the roles whose policy never changes (fixed_roles(team)), computed
    # at the run's first evaluation in this process and read back at the later ones
    eval_memo: dict[str, dict] = field(default_factory=dict)


def _train(cfg: TrainConfig, freeze: bool = False) -> dict[str, Any]:
    run = prepare(cfg)           # everything that can fail does so before the first rollout
    dist = Dist(cfg)
    if not dist.main:            # the other processes of a data-parallel run write nothing here
        return _train_in(cfg, run, dist, freeze)
    with writing(run.out):       # no other process writes this run while this one does (FolderBusy at once)
        run.resume_from = _resume_point(cfg, run.out)      # again, now that no other process can change the folder
        return _train_in(cfg, run, dist, freeze)


def _train_in(cfg: TrainConfig, run: Run, dist: Dist, freeze: bool) -> dict[str, Any]:
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed % 2**32)
    began = None    # a resumed run that began from --init-from: its record (the checkpoint replaces every weight)
    if run.resume_from is not None and cfg.init_from and (run.out / RUN_CONFIG).is_file():
        began = read_run_config(run.out).resolved.init_source
    team = build_team(cfg, run.env, run.roles, prepare=dist.prepare, init_source=began)   # each learner's settings
    start = 0
    if run.resume_from is not None:
        start = checkpoint.restore_run(run.resume_from, run.out, cfg.hash(), team.learners, run.method)
        if dist.main:
            keep_metrics(run.out / METRICS, start)      # the steps after the checkpoint are written again
    if dist.main:
        run.out.mkdir(parents=True, exist_ok=True)
        write_run_config(run.out, cfg, run.action_mode, team.init_source)    # the weights the run began with
    for learner in team.learners:
        learner.set_version(start)
        learner.sync_rollouts(start)     # --backend vllm: the engine starts from the trainer's (resumed) weights
    log = Log(cfg, run.out, start) if dist.main else None
    run.method.attach(team)      # a critic that reads the policy model (an LLM value head) gets it here
    pool: dict = {}              # the engines' envs, shared
    engines = {tuple(team.scripted_at(k)): RolloutEngine(team.playing(k), show_progress=False, env_pool=pool,
                                                         record_state=run.method.needs_state)
               for k in sorted({0, *team.scripted_steps.values()})}    # one per phase of the curriculum
    state = State(cfg, run, dist, team, engines, log, start, freeze)
    metrics: dict[str, Any] = {}
    if freeze:
        gc.freeze()
    try:
        with _collect_once_per_step(freeze):
            for k in range(start, cfg.steps):
                metrics = step(state, k)
    finally:
        if log is not None:
            log.close()
    return metrics


def prepare(cfg: TrainConfig) -> Run:
    """The env, the credit method and its branches, the output folder: every error a flag can cause (the team's are
    raised by build_team), before any rollout."""
    action_mode = cfg.action_mode or ("discrete" if "mlp" in cfg.model_spec.names else "text")
    env_kwargs = {**cfg.env_kwargs, "action_mode": action_mode}
    family = spec(cfg.env).family
    try:
        env = make(cfg.env, **env_kwargs)
    except TypeError as e:           # an unknown kwarg: say which flag it came from
        raise ValueError(f"--env-kwargs: {e}") from None
    method = make_credit(cfg.credit, **cfg.credit_kwargs())
    branches = method.branches(cfg.env)
    for b in branches:
        b.agents(env)
    if cfg.wandb:
        require_wandb()
    require_device(cfg.device)
    out = Path(cfg.out)
    return Run(env, env_kwargs, action_mode, family, sorted(set(env.roles.values())), method, branches, out,
               _resume_point(cfg, out))


def step(state: State, k: int) -> dict[str, Any]:
    """Training step ``k``: rollout, credit, update, metrics, checkpoint; returns the step's metrics."""
    cfg, run, dist, team, method = state.cfg, state.run, state.dist, state.team, state.run.method
    initial = _evaluate(state, "eval_start") if dist.main and k == 0 and cfg.eval_every else {}
    t0 = time.perf_counter()
    # ---- rollout: fresh seeds per step, this process's shard of the tasks; every process gets the whole batch
    episodes, mine = _rollout(state, k)
    t1 = time.perf_counter()
    # ---- credit, on the whole batch
    advantages = method.advantages(episodes)
    diag = method.diagnostics(episodes)
    diag.update(method.update(episodes))     # a learned critic's own step (the same on every process)
    t2 = time.perf_counter()
    # ---- update: this process's turns, weights over the whole batch
    roles_now = _roles_trained(cfg, team, k)
    everything = trained_samples(episodes, advantages, roles_now, method.per_token)
    total = {lr.name: [s.n for s in everything if s.role in lr.trainable] for lr in team.learners}
    local = everything if dist.world == 1 else trained_samples(episodes[mine], advantages[mine], roles_now,
                                                               method.per_token)
    upd = update(team, dist, local, total, roles_now)
    for learner in team.learners:
        learner.set_version(k + 1)
        if set(learner.trainable) & roles_now:      # --backend vllm: the engine plays the updated weights next
            learner.sync_rollouts(k + 1)
    t3 = time.perf_counter()
    # ---- metrics
    metrics = step_metrics(k, episodes, advantages, run.family, diag)
    metrics.update(upd)
    metrics["roles_trained"] = ",".join(sorted(roles_now))
    if team.scripted_steps:      # the curriculum's phase: the roles its bots play at this step (none from step N)
        metrics["partners_playing"] = ",".join(team.scripted_at(k))
    metrics.update({"time/rollout": t1 - t0, "time/credit": t2 - t1, "time/update": t3 - t2,
                    "time/step": t3 - t0})
    metrics.update(initial)
    if dist.main and cfg.eval_every and ((k + 1) % cfg.eval_every == 0 or k + 1 == cfg.steps):
        metrics.update(_evaluate(state, "eval"))
    if state.log is not None:
        state.log.write(k, metrics)
    # ---- checkpoint
    if dist.main and ((k + 1) % cfg.save_every == 0 or k + 1 == cfg.steps):
        checkpoint.save_run(run.out, k + 1, cfg.hash(), team.learners, method, keep=cfg.keep_checkpoints)
    del episodes, mine, advantages, everything, local
    if state.freeze and (k == state.start or (k + 1) % COLLECT_EVERY == 0 or k + 1 == cfg.steps):
        gc.collect()
        if k == state.start:
            gc.freeze()  # what the first step built for good (torch._dynamo, imported by the first optimizer step)
    return metrics


# ---------------------------------------------------------------------- the step's parts
def _rollout(state: State, k: int) -> tuple[list, slice]:
    """Step ``k``'s episodes, gathered from every process in rank order, and the slice of them this process played
    (its shard of the step's tasks)."""
    cfg, dist = state.cfg, state.dist
    seeds = shard(training_seeds(cfg.seed, k, cfg.tasks_per_step), dist.rank, dist.world)
    engine = state.engines[tuple(state.team.scripted_at(k))]
    local = engine.run(cfg.env, len(seeds), cfg.group_size, seed=cfg.seed * 1_000_003 + k,
                       env_kwargs=state.run.env_kwargs, branches=state.run.branches, seeds=seeds,
                       run_id=f"step-{k}.{dist.rank}")
    shards = dist.gather(local)
    offset = sum(len(part) for part in shards[:dist.rank])      # where this process's episodes start
    return [e for part in shards for e in part], slice(offset, offset + len(local))


def _roles_trained(cfg: TrainConfig, team: Team, k: int) -> set[str]:
    """Every role trained at step ``k`` (all trained roles, less those a curriculum's bots play then), or with
    ``--alternate-every N`` one of them at a time, switching every N steps."""
    if not cfg.alternate_every:
        return set(team.trainable_at(k))
    order = sorted(team.trainable_at(k))
    return {order[(k // cfg.alternate_every) % len(order)]}


def fixed_roles(team: Team) -> list[str]:
    """Roles no update changes (the exact evaluation scores them once): a whole-run partner, and an untrained role
    whose weights no trained role shares (its learner trains none, or it has its own adapter: no gradient reaches
    it, so AdamW skips it; the solver's adapter was bit for bit the same after the campaign's thinker phase)."""
    out = {r for r in team.policies if not any(r in lr.roles for lr in team.learners)}
    for lr in team.learners:
        if not lr.trainable or getattr(lr, "adapters", "") == "per_role":
            out.update(r for r in lr.roles if r not in lr.trainable)
    return sorted(out)


def _evaluate(state: State, prefix: str) -> dict[str, float]:
    """The exact held-out evaluation of the team's policies now (:mod:`baselines.train.exact_eval`), as
    ``<prefix>/...`` metrics: ``eval_start/...`` in step 0's line (the untrained policy), ``eval/...`` after the
    update of every ``--eval-every``-th step and of the last (with ``eval/time``, its seconds). The roles that never
    change (a frozen role with weights of its own) are scored once per process and read back later."""
    cfg, team = state.cfg, state.team
    memo = {r: state.eval_memo.setdefault(r, {}) for r in fixed_roles(team)}
    t = time.perf_counter()
    values = evaluate(team.policies, cfg.env, state.run.env_kwargs, cfg.eval_episodes, memo)
    values["eval/time"] = time.perf_counter() - t
    return {prefix + k[len("eval"):]: v for k, v in values.items()}


# ---------------------------------------------------------------------- before step 0
def _resume_point(cfg: TrainConfig, out: Path) -> Path | None:
    """The checkpoint ``--resume`` continues from, or ``None`` for a new run; or why ``out`` cannot take the run."""
    if cfg.resume:
        return checkpoint.resume_point(out)
    refuse_old_run(out)
    return None


@contextmanager
def _collect_once_per_step(enabled: bool):
    """With ``enabled`` (MLP runs): no automatic collections while a step runs, one full collection after every
    :data:`COLLECT_EVERY`-th step (and the first and the last; at the end of :func:`step`). A step
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
