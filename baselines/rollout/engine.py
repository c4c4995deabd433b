"""The batched rollout engine: many envs at once, one ``Policy.generate`` call per policy per tick, and
counterfactual branches (ablate / resample) for credit assignment.

    from baselines.rollout import RolloutEngine, BranchSpec
    engine = RolloutEngine(policy)                       # or {"thinker": trained, "solver": frozen}
    episodes = engine.run("think_solve-v0", num_tasks=16, group_size=4, seed=0,
                          branches=[BranchSpec("ablate", "thinker"), BranchSpec("resample", "solver", k=4)])

Groups. Task ``i`` (``group_id = i``) resets its envs with seed ``seed + i`` (or ``seeds[i]``), so the
``group_size`` samples of a group see the same problem / deal (a GRPO group); they differ only through policy
sampling. ``run_id`` names the call (default: a digest of the env id, kwargs, seeds and group size), and
``Episode.group_key = (run_id, group_id)`` identifies the group across calls. Each ``generate`` call gets a seed
derived from ``(seed, phase, tick, policy)``, so a run is reproducible (same seeds -> same episodes on CPU). With
greedy decoding the episodes do not depend on how many envs are batched together.

Fresh seeds per training step. ``run(seed=1)`` task 0 is ``run(seed=0)`` task 1: consecutive calls must not reuse
seeds. :func:`training_seeds` gives step ``k`` the seeds ``base * 2**24 + k * num_tasks + i`` (disjoint across steps
for a fixed ``num_tasks``, and across base seeds); pass them as ``run(..., seeds=training_seeds(base, k, n),
run_id=f"step-{k}")``. Keep evaluation seeds in a range training never reaches (the leaderboard's protocols use
seeds from ``2**40`` on).

A tick. Every live env's agent to move is gathered (an agent that is already terminated is stepped with ``None``), a
:class:`~baselines.policies.base.Request` is built with what its policy reads (:attr:`Policy.observes
<baselines.policies.base.Policy.observes>`): ``env.observe(agent)["text"]``, ``env.legal_actions(agent)`` (empty for
free-text turns: the env's format is in the prompt), and for vector policies ``env.observe(agent, text=False)``'s
vector and mask (the prompt is then not rendered at all), and the live env only for a policy that declares ``"env"``
(scripted bots), the requests are grouped by policy and each policy's
``generate`` is called once with all of them (one batched forward per tick for an MLP); then every env is stepped.
``Turn.obs_digest`` (a digest of the prompt and the legal moves) is computed only in runs with branches, where replay
needs it (``""`` otherwise); ``Turn.legal_actions`` is recorded whenever the legal moves were computed (always for a
policy that reads them, and in runs with branches), else ``[]``. In ``action_mode="discrete"`` a text move such as
``"[bet]"`` returned by a policy is turned into its action index (anything else is passed on as is, and the env's
invalid-move policy handles it).

Envs are reused: the engine keeps the envs it made (per env id and kwargs) and resets them for the next episodes, of
this call and of later calls (a trainer calls ``run`` every step), so an env is built once, not once per episode.
The ``group_size`` samples of a task start from one reset: the first sample's env is reset with the task's seed and
the others start from its ``clone()``, taken before any step (``clone()``'s contract: the copy plays the same episode
as its original given the same actions, so a clone of a freshly reset env is that reset; ``tests/contracts/test_clone.
py`` holds every registered env to it). A reset draws the task (an arithmetic problem, a deal) and costs 25-350 us,
a clone 5-12 us.

Branches (``branches=[BranchSpec(...)]``: ablate, resample or force an agent's decisions) are played after the main
episodes, in a second batched pass over all branch envs; what each kind plays, how a branch replays the main
episode's recorded decisions, and how it follows the main episode or shadows a sibling is in
:mod:`baselines.rollout.branches`.
"""

from __future__ import annotations

import gc
import hashlib
import json
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from baselines.episode import Episode, Turn, json_safe
from baselines.policies.base import Generation, Policy, Request, env_action, observation_fields
from baselines.progress import Progress
from baselines.rollout.branches import BranchSpec, add_branches, branch_jobs
from baselines.rollout.job import ENDED, PLAIN, TOOK, Decision, Job, MainJob
from marl_llm_envs import make

# BranchSpec (from branches.py) and env_action (from policies.base) keep their import paths from here
__all__ = ["BranchSpec", "RolloutEngine", "env_action", "training_seeds"]

STATE_KINDS = (None, "global", "observation")


def _non_negative_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)


SEED_STREAM = 2**24      # env seeds owned by each training base seed
MAX_BASE_SEED = 2**16    # base seeds below this keep every training seed below 2**40 (the evaluation seeds)


def training_seeds(base_seed: int, step: int, num_tasks: int) -> list[int]:
    """The env seeds of training step ``step``: ``base_seed * 2**24 + step * num_tasks + i`` for ``i < num_tasks``.

    Each base seed owns its own stream of ``2**24`` env seeds, so runs with different base seeds never train on the
    same task (seeds 0 and 1 are independent replicates, as a confidence interval over seeds assumes), and for a
    fixed ``num_tasks`` the steps' ranges are consecutive and disjoint, so no task repeats within a run. A base seed
    must be below ``2**16`` (every training seed then stays below ``2**40``, where the protocols' evaluation seeds
    start) and a run within its stream (``(step + 1) * num_tasks <= 2**24``)."""
    base_seed, step, num_tasks = (_non_negative_int(n, v) for n, v in
                                  (("base_seed", base_seed), ("step", step), ("num_tasks", num_tasks)))
    if base_seed >= MAX_BASE_SEED:
        raise ValueError(f"base_seed must be below {MAX_BASE_SEED} (training seeds stay below 2**40, where evaluation "
                         f"seeds start), got {base_seed}")
    if (step + 1) * num_tasks > SEED_STREAM:
        raise ValueError(f"step {step} with {num_tasks} tasks per step leaves the base seed's stream of {SEED_STREAM} "
                         "env seeds (it would train on another base seed's tasks)")
    start = base_seed * SEED_STREAM + step * num_tasks
    return list(range(start, start + num_tasks))


def _run_id(env_id: str, env_kwargs: dict[str, Any], seeds: Sequence[int], group_size: int) -> str:
    key = json.dumps([env_id, json_safe(env_kwargs), [int(x) for x in seeds], group_size], sort_keys=True)
    return hashlib.sha1(key.encode()).hexdigest()[:12]


_TEXT = frozenset({"text"})   # a run with branches renders every prompt, for the replay digest


def _call_seed(seed: int, phase: int, tick: int, index: int) -> int:
    state = np.random.SeedSequence([int(seed) % 2**63, phase, tick, index]).generate_state(1)
    return int(state[0]) & 0x7FFFFFFF


class RolloutEngine:
    """Play many envs at once with one policy, or a policy per role.

    ``policy``: a :class:`Policy` for every seat (the role is in the prompt), or a dict role -> policy (e.g. a trained
    policy against a frozen copy or a scripted reference bot); every role of the env must be in it.
    ``max_concurrent``: how many envs are played at once (``None``: all of them; ``1``: one env at a time).
    ``max_steps``: a safety limit on the steps of one episode.
    ``record_state``: ``None`` (default), ``"global"`` (``Turn.state`` = ``env.state()``, the centralized state) or
    ``"observation"`` (``Turn.state`` = the acting agent's numeric observation), taken before each step, for a
    learned critic (the trainer passes the credit method's ``needs_state``).
    ``env_pool``: where finished envs wait to be reset for the next episode, keyed by (env id, kwargs). By default
    the engine keeps its own; engines given the same dict share their envs (an evaluation plays each cell with its
    own policies, and building an env costs more than playing a short episode on it). ``reset(seed)`` starts an
    episode afresh whatever the env played before (the replay tests check it), so reuse changes no episode.

    Python's cyclic garbage collector is paused while :meth:`run` plays (and restored when it returns): a run builds
    its records by the hundred thousand (coma's branches: a ``Turn`` per replayed decision), none of them in a
    reference cycle, and every full collection walked all of them (half the CPU time of a coma step on
    team_umbrella-v0, delay 30). Reference counting still frees everything that is not in a cycle at once.
    """

    # Take a resample branch that drew the recorded action from the record (BranchJob.follow), and let a branch shadow
    # an earlier sibling that drew the same action (BranchJob.shadow); False plays every branch step (the tests compare
    # the two).
    follow_main = True
    # Start a group's other samples from clones of its first sample's reset; False resets every env (the tests
    # compare the two).
    clone_group_starts = True

    def __init__(self, policy: Policy | Mapping[str, Policy], show_progress: bool = True,
                 max_concurrent: int | None = None, max_steps: int = 10_000, record_state: str | None = None,
                 env_pool: dict | None = None) -> None:
        if record_state not in STATE_KINDS:
            raise ValueError(f"record_state={record_state!r} is not one of {list(STATE_KINDS)}")
        self.record_state = record_state
        if isinstance(policy, Mapping):
            if not policy:
                raise ValueError("the policy mapping is empty; give role -> policy")
            for role, p in policy.items():
                if not isinstance(p, Policy):
                    raise TypeError(f"policy for role {role!r} is not a baselines Policy: {p!r}")
            self.policies: dict[str, Policy] | None = dict(policy)
            self.policy: Policy | None = None
        elif isinstance(policy, Policy):
            self.policies, self.policy = None, policy
        else:
            raise TypeError(f"policy must be a Policy or a dict role -> Policy, got {type(policy).__name__}")
        if max_concurrent is not None and (not isinstance(max_concurrent, int) or max_concurrent < 1):
            raise ValueError(f"max_concurrent must be a positive int or None, got {max_concurrent!r}")
        self.show_progress = show_progress
        self.max_concurrent = max_concurrent
        self.max_steps = max_steps
        if env_pool is not None and not isinstance(env_pool, dict):
            raise TypeError(f"env_pool must be a dict (shared between engines) or None, got {type(env_pool).__name__}")
        self._pool: dict[tuple[str, str], list] = {} if env_pool is None else env_pool   # (env id, kwargs) -> envs

    # ------------------------------------------------------------------ policies
    def _ordered_policies(self) -> list[Policy]:
        if self.policy is not None:
            return [self.policy]
        seen: list[Policy] = []
        for p in self.policies.values():
            if not any(p is q for q in seen):
                seen.append(p)
        return seen

    def _policy_for(self, role: str) -> Policy:
        if self.policy is not None:
            return self.policy
        return self.policies[role]

    def _check_roles(self, env) -> None:
        if self.policies is None:
            return
        roles = sorted(set(env.roles[a] for a in env.possible_agents))
        missing = [r for r in roles if r not in self.policies]
        if missing:
            raise ValueError(f"no policy for role(s) {missing} of {env.env_id}; its roles are {roles}, the policy "
                             f"mapping has {sorted(self.policies)}")

    # ------------------------------------------------------------------ run
    def run(self, env_id: str, num_tasks: int, group_size: int = 1, seed: int = 0,
            env_kwargs: dict[str, Any] | None = None,
            branches: Iterable[BranchSpec] | None = None, *, seeds: Sequence[int] | None = None,
            run_id: str | None = None) -> list[Episode]:
        """Play ``num_tasks`` x ``group_size`` episodes (task ``i`` uses env seed ``seed + i``, or ``seeds[i]``) and
        their branches. ``run_id`` names the call in ``Episode.run_id`` (see the module docstring).

        Returns the episodes ordered by (group_id, sample_index)."""
        if isinstance(num_tasks, bool) or not isinstance(num_tasks, int) or num_tasks < 0:
            raise ValueError(f"num_tasks must be a non-negative int, got {num_tasks!r}")
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size must be a positive int, got {group_size!r}")
        seed = _non_negative_int("seed", seed)
        if seeds is None:
            seeds = [seed + i for i in range(num_tasks)]
        else:
            seeds = [_non_negative_int("every entry of seeds", s_) for s_ in seeds]
            if len(seeds) != num_tasks:
                raise ValueError(f"seeds has {len(seeds)} entries but num_tasks is {num_tasks}")
        if run_id is not None and not isinstance(run_id, str):
            raise ValueError(f"run_id must be a str, got {run_id!r}")
        env_kwargs = dict(env_kwargs or {})
        if run_id is None:
            run_id = _run_id(env_id, env_kwargs, seeds, group_size)
        branches = list(branches or [])
        for b in branches:
            if not isinstance(b, BranchSpec):
                raise TypeError(f"branches must be BranchSpec objects, got {b!r}")
        pool_key = (env_id, json.dumps(json_safe(env_kwargs), sort_keys=True))
        pool = self._pool.setdefault(pool_key, [])
        taken: list = []

        def take():
            env = pool.pop() if pool else make(env_id, **env_kwargs)
            taken.append(env)
            return env

        collecting = gc.isenabled()
        gc.disable()     # see the class docstring
        try:
            return self._run(env_id, num_tasks, group_size, seed, env_kwargs, branches, seeds, run_id, take)
        finally:
            pool.extend(reversed(taken))
            if collecting:
                gc.enable()

    def _run(self, env_id, num_tasks, group_size, seed, env_kwargs, branches, seeds, run_id, take) -> list[Episode]:
        proto = take()
        self._check_roles(proto)
        watch = frozenset(a for b in branches for a in b.agents(proto))

        cloned = self.clone_group_starts
        jobs = [MainJob(take() if j == 0 or not cloned else None, seeds[i], i, j, watch, bool(branches))
                for i in range(num_tasks) for j in range(group_size)]
        if cloned:          # the group's other samples start from clones of its reset (see the module docstring)
            for first in jobs[::group_size]:
                first.same_task = jobs[first.group_id * group_size + 1:(first.group_id + 1) * group_size]
                for other in first.same_task:
                    other.cloned = True
        self._play(jobs, seed=int(seed), phase=0, desc=f"{env_id} episodes")

        policies = self._settings(proto)
        episodes = [self._episode(job, env_id, env_kwargs, run_id, policies) for job in jobs]
        if branches:
            played = branch_jobs(episodes, jobs, branches)
            self._play([bj for _, bj in played], seed=int(seed), phase=1, desc=f"{env_id} branches")
            add_branches(played)
        for job in jobs:
            job.snapshots = []
            job.record = None
        return episodes

    def _settings(self, env) -> dict[str, Any]:
        """Role -> the settings of the policy that plays it (recorded in every Episode)."""
        roles = sorted(set(env.roles[a] for a in env.possible_agents))
        return {role: json_safe(self._policy_for(role).settings()) for role in roles}

    def _episode(self, job: MainJob, env_id: str, env_kwargs: dict[str, Any], run_id: str,
                 policies: dict[str, Any]) -> Episode:
        env = job.env
        task_id = None
        for info in job.final_infos.values():
            if isinstance(info, dict) and info.get("task_id") is not None:
                task_id = str(info["task_id"])
                break
        return Episode(
            env_id=env_id, env_version=int(env.version), env_kwargs=json_safe(env_kwargs), seed=int(job.seed),
            task_id=task_id, group_id=job.group_id, sample_index=job.sample_index, turns=job.turns,
            rewards=dict(job.rewards), team_rewards={k: float(v) for k, v in env.team_rewards().items()},
            transcript=json_safe(env.transcript()), tokens_generated=job.tokens, branch_tokens_generated=0,
            wall_time_s=job.wall, branches=[], final_infos=job.final_infos, run_id=run_id, policies=policies)

    # ------------------------------------------------------------------ the batched loop
    def _play(self, jobs: list[Job], seed: int, phase: int, desc: str) -> None:
        if not jobs:
            return
        bar = None
        if self.show_progress:
            # a bar on a terminal, plain lines elsewhere; no remaining-time estimate: episodes finish in bursts
            # (every env advances each tick), so an estimate from the first finished episodes is far off
            bar = Progress(len(jobs), desc, unit="episode",
                           bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} episodes [{elapsed}]")
        policies = self._ordered_policies()
        index_of = {id(p): i for i, p in enumerate(policies)}
        cap = self.max_concurrent or len(jobs)
        waiting = list(reversed(jobs))
        active: list[Job] = []
        tick = 0
        record_state, follow = self.record_state, self.follow_main
        try:
            while waiting or active:
                while waiting and len(active) < cap:
                    job = waiting.pop()
                    job.start(tick)
                    active.append(job)
                pending, active, following = self._gather(active, tick, bar)
                if not pending:
                    if following:       # a followed or shadowed branch took this tick's decision
                        tick += 1
                    continue
                gens = self._decide(pending, policies, index_of, seed, phase, tick)
                for d, gen in zip(pending, gens):
                    if d.rec is not None:       # a branch's decision that replays the recorded one
                        d.job.step_replayed(d.agent, d.digest, d.rec, d.legal, record_state)
                    elif d.request is None:     # a force branch's forced move
                        d.job.step_forced(d.agent, d.legal, record_state)
                    else:
                        self._step(d.job, d.agent, d.request, d.digest, gen, follow)
                tick += 1
        finally:
            if bar is not None:
                bar.close()

    def _gather(self, active: list[Job], tick: int, bar) -> tuple[list[Decision], list[Job], bool]:
        """The decisions of this tick, one per live job (finished jobs leave ``active``): the pending decisions, the
        jobs still live, and whether a followed or shadowed branch took a decision without pending one."""
        pending: list[Decision] = []
        still: list[Job] = []
        following = False
        for job in active:
            state = job.advance(tick)
            if state == TOOK:
                following = True
                still.append(job)
                continue
            if state == ENDED:
                if bar is not None:
                    bar.update(1)
                continue
            if job.step_index > self.max_steps:
                raise RuntimeError(f"{job.env.env_id}: an episode ran past max_steps={self.max_steps}")
            still.append(job)
            decision = self._observe(job, job.env)
            job.gathered(tick, decision.rec is not None)
            pending.append(decision)
        return pending, still, following

    def _decide(self, pending: list[Decision], policies: list[Policy], index_of: dict[int, int], seed: int,
                phase: int, tick: int) -> list[Generation | None]:
        """One ``generate`` call per policy for the decisions that replay no recorded turn and play no forced move
        (``None`` for those), seeded by ``(seed, phase, tick, policy index)``."""
        gens: list[Generation | None] = [None] * len(pending)
        by_policy: dict[int, list[int]] = {}
        for n, d in enumerate(pending):
            if d.request is not None:
                by_policy.setdefault(index_of[id(self._policy_for(d.request.role))], []).append(n)
        for pidx, idxs in by_policy.items():
            policy = policies[pidx]
            out = policy.generate([pending[n].request for n in idxs], seed=_call_seed(seed, phase, tick, pidx))
            if len(out) != len(idxs):
                raise RuntimeError(f"{type(policy).__name__}.generate returned {len(out)} generations for "
                                   f"{len(idxs)} requests")
            for n, g in zip(idxs, out):
                gens[n] = g
        return gens

    def _observe(self, job: Job, env) -> Decision:
        """What ``job``'s agent to move sees: its request (``None`` when a branch replays the recorded decision),
        the observation digest (runs with branches), the recorded turn it replays (or ``None``) and the legal moves
        computed."""
        agent = env.agent_selection
        forced = job.forced_decision(agent)
        if forced is not None:                  # a force branch's first decision: no observation, no policy
            return forced
        role = env.roles[agent]
        observes = self._policy_for(role).observes
        text, legal, vector, mask, digest, rec = "", (), None, None, "", None
        if job.digest and "text" not in observes and hasattr(env, "observe_text"):
            # The text first: a branch decision whose observation matches the recorded one replays it, and then
            # its policy's vector and mask are never needed.
            text = env.observe_text(agent)
            legal = tuple(env.legal_actions(agent))
            rec, digest = job.match(agent, text, legal)
            if rec is not None:
                return Decision(job, agent, None, digest, rec, legal)
            _, vector, mask = observation_fields(env, agent, observes)   # no "text" in observes here
        else:
            text, vector, mask = observation_fields(env, agent, observes | _TEXT if job.digest else observes)
            if job.digest or "legal_actions" in observes:
                legal = tuple(env.legal_actions(agent))
            if job.digest:
                rec, digest = job.match(agent, text, legal)
                if rec is not None:
                    return Decision(job, agent, None, digest, rec, legal)
        request = Request(env.env_id, agent, role, text, legal, env if "env" in observes else None,
                          key=(*job.key, job.step_index), observation=vector, action_mask=mask)
        return Decision(job, agent, request, digest, None, legal)

    def _step(self, job: Job, agent: str, request: Request, digest: str, gen: Generation, follow: bool) -> None:
        """Record and step a decision its policy made (``gen``)."""
        env = job.env
        action = gen.action
        if type(action) is not int:       # an index passes as is; a text move in discrete mode becomes its index
            action = env_action(env, agent, action, request.legal_actions)
        plain = type(action) in PLAIN
        completion = gen.completion_ids
        turn = Turn(agent, request.role, env.teams[agent], [int(x) for x in gen.prompt_ids],
                    [int(x) for x in completion], [float(x) for x in gen.logprobs], str(gen.text or ""),
                    action if plain else json_safe(action),
                    extra=json_safe(gen.extra) if gen.extra else {}, choice=gen.choice)
        job.tokens += len(completion)
        job.step_generated(agent, turn, action, plain, digest, list(request.legal_actions), self.record_state, follow)
