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
run_id=f"step-{k}")``. Keep evaluation seeds in a range training never reaches (the leaderboard's protocols use seeds from ``2**40`` on).

A tick. Every live env's agent to move is gathered (an agent that is already terminated is stepped with ``None``), a
:class:`~baselines.policies.base.Request` is built with what its policy reads (:attr:`Policy.observes
<baselines.policies.base.Policy.observes>`): ``env.observe(agent)["text"]``, ``env.legal_actions(agent)`` (empty for
free-text turns: the env's format is in the prompt), and for vector policies ``env.observe(agent, text=False)``'s
vector and mask (the prompt is then not rendered at all), the requests are grouped by policy and each policy's
``generate`` is called once with all of them (one batched forward per tick for an MLP); then every env is stepped.
``Turn.obs_digest`` (a digest of the prompt and the legal moves) is computed only in runs with branches, where replay
needs it (``""`` otherwise); ``Turn.legal_actions`` is recorded whenever the legal moves were computed (always for a
policy that reads them, and in runs with branches), else ``[]``. In ``action_mode="discrete"`` a text move such as
``"[bet]"`` returned by a policy is turned into its action index (anything else is passed on as is, and the env's
invalid-move policy handles it).

Envs are reused: the engine keeps the envs it made (per env id and kwargs) and resets them for the next episodes, of
this call and of later calls (a trainer calls ``run`` every step), so an env is built once, not once per episode.

Branches (run after the main episodes, in a second batched pass over all branch envs). For every decision point of
a named agent (each of its turns) the engine keeps ``env.clone()`` taken just before the agent acts, then:

* ``BranchSpec("ablate", agent)``: ``clone.ablate(agent)`` and play on to the end: the env plays the agent's null
  action (think_solve-v0: the thinker sends nothing and the solver is asked under the solo prompt; voting-v0: the
  voter abstains), the other agents act as described below.
* ``BranchSpec("resample", agent, k=K)``: K continuations; in each, the agent's action at that point is sampled anew
  from its policy (the K samples are batched in one call), then play on to the end.

In a branch, another agent's decision (and the branch agent's own later decisions) reuses the main episode's recorded
action when ``replay_others`` (default) and the agent sees exactly what it saw in the main episode (same observation
text and same legal actions, checked by digest; the j-th decision of that agent after the branch point is matched with
its j-th recorded one). Then the recorded action is a sample of the same policy on the same input, so the branch
differs from the main episode only by the counterfactual. Where the observation changed (think_solve's solver after
the thinker is ablated or resampled; the next poker player after a resampled bet) the agent acts anew from its
policy. Voting consequence: voters never see each other's ballots, so the ablate branch of ``voter_i`` taken before
its vote replays every other ballot, and its team reward equals the main episode's
``infos["team_reward_without"]["voter_i"]`` (the count with that ballot removed after the others voted).
Branch tokens are counted apart (``Episode.branch_tokens_generated``) so each credit method's cost is visible.
Rewards that ``ablate`` hands out itself (the null move ends the episode: think_solve's solver, the last voter) are
part of the branch: ``Branch.rewards`` agrees with ``Branch.team_rewards``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from baselines.episode import Branch, Episode, Turn, json_safe, write_jsonl
from baselines.policies.base import Generation, Policy, Request
from marl_llm_envs import make
from marl_llm_envs.text import parse_bracketed

__all__ = ["BranchSpec", "RolloutEngine", "main", "summarize", "training_seeds"]

BRANCH_KINDS = ("ablate", "resample")
STATE_KINDS = (None, "global", "observation")


@dataclass(frozen=True)
class BranchSpec:
    """A counterfactual to branch at every decision point of ``agent``.

    ``agent`` is an agent name (``"thinker"``, ``"voter_0"``) or a role (``"voter"``: every agent with that role; in
    an env whose agents appear at run time, such as orchestrator-v0's role ``"worker"``, the agents of that role that
    took part in each episode).
    ``k``: the number of resamples per decision point (``kind="resample"`` only). ``replay_others``: reuse the main
    episode's recorded actions where the observation is unchanged (see the module docstring); ``False`` samples
    every later decision anew.
    """

    kind: str
    agent: str
    k: int = 1
    replay_others: bool = True

    def __post_init__(self) -> None:
        if self.kind not in BRANCH_KINDS:
            raise ValueError(f"branch kind {self.kind!r} is not one of {list(BRANCH_KINDS)}")
        if not isinstance(self.agent, str) or not self.agent:
            raise ValueError(f"branch agent must be a non-empty string, got {self.agent!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"branch k must be a positive int, got {self.k!r}")
        if self.kind == "ablate" and self.k != 1:
            raise ValueError("an ablate branch has k=1 (ablation is deterministic)")

    @classmethod
    def parse(cls, text: str) -> list["BranchSpec"]:
        """``"ablate:thinker,resample:solver:4"`` -> two specs."""
        specs = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            bits = part.split(":")
            if len(bits) == 2:
                specs.append(cls(bits[0], bits[1]))
            elif len(bits) == 3 and bits[0] == "resample":
                try:
                    k = int(bits[2])
                except ValueError:
                    raise ValueError(f"branch {part!r}: K must be an int") from None
                specs.append(cls(bits[0], bits[1], k))
            else:
                raise ValueError(f"branch {part!r} is not KIND:AGENT or resample:AGENT:K")
        return specs

    def agents(self, env, present: Iterable[str] | None = None) -> list[str]:
        """The agents this spec names in ``env``; ``present``: the agents of one episode (a role then expands to
        those of its agents that took part in it, e.g. the workers an orchestrator spawned)."""
        if self.agent in env.possible_agents:
            return [self.agent]
        by_role = [a for a in env.possible_agents if env.roles.get(a) == self.agent]
        if not by_role and self.agent in _spec_roles(env.env_id):
            return []        # a role of the env whose kwargs leave it no seat here (free_riding with idle_seats=0)
        if not by_role:
            raise ValueError(f"branch agent {self.agent!r} is neither an agent ({env.possible_agents}) nor a role "
                             f"({sorted(set(env.roles.values()))}) of {env.env_id}")
        if present is not None:
            present = set(present)
            by_role = [a for a in by_role if a in present]
        return by_role


def _spec_roles(env_id: str) -> set[str]:
    from marl_llm_envs import spec

    try:
        return set(spec(env_id).roles.values())
    except KeyError:
        return set()


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


def _digest(text: str, legal: Sequence[str]) -> str:
    h = hashlib.sha1(text.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update("\x1f".join(legal).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


_PLAIN = frozenset({int, str, bool, type(None)})


def _json_safe_turn_extra(extra: dict[str, Any]) -> dict[str, Any]:
    """``json_safe(extra)`` with a fast path for what an MLP policy returns: flat lists of finite floats or ints."""
    out: dict[str, Any] = {}
    for k, v in extra.items():
        if type(v) is list and v and type(v[0]) in (float, int) and set(map(type, v)) <= {float, int}:
            try:
                finite = math.isfinite(sum(v))         # a finite sum means every entry is finite
            except OverflowError:
                finite = False
            if finite:
                out[str(k)] = list(v)
                continue
        out[str(k)] = v if type(v) in _PLAIN else json_safe(v)
    return out


def _call_seed(seed: int, phase: int, tick: int, index: int) -> int:
    state = np.random.SeedSequence([int(seed) % 2**63, phase, tick, index]).generate_state(1)
    return int(state[0]) & 0x7FFFFFFF


def _env_action(env, agent: str, action: Any, legal: Sequence[str] = ()) -> Any:
    """In discrete mode, a text move ("[bet]", "I bet [bet]") becomes its action index; anything else passes on.

    The move is looked up first among ``legal`` (the env's ``legal_actions``, which lists the legal indices in order
    and may name them by what they do now, e.g. Leduc's ``[check]`` for call), then among ``action_names``."""
    if getattr(env, "action_mode", "text") != "discrete" or not isinstance(action, str):
        return action
    if legal:
        ids = [int(i) for i in np.flatnonzero(env.action_mask(agent))]
        if len(ids) == len(legal):
            names = {m.strip()[1:-1].lower() if m.strip().startswith("[") else m.strip().lower(): i
                     for m, i in zip(legal, ids)}
            index, reason = parse_bracketed(action, names)
            if reason is None:
                return index
    names = {n.lower(): i for i, n in enumerate(env.action_names(agent))}
    index, reason = parse_bracketed(action, names)
    return action if reason is not None else index


class _Job:
    """One env being played: the main episode of a group member, or one branch."""

    def __init__(self, env, *, seed: int | None = None, group_id: int = 0, sample_index: int = 0,
                 step_index: int = 0, base_rewards: dict[str, float] | None = None,
                 replay: dict[tuple[str, int], Turn] | None = None, force_first: bool = False,
                 watch: frozenset[str] = frozenset(), branch: Branch | None = None,
                 start_rewards: dict[str, float] | None = None, key: tuple[int, ...] = ()) -> None:
        self.env = env
        self.key = key                     # Request.key prefix: (env seed, sample index[, branch id...])
        self.seed = seed                   # main jobs: reset with this seed when started
        self.group_id = group_id
        self.sample_index = sample_index
        self.step_index = step_index
        self.base_rewards = dict(base_rewards or {})
        self.replay = replay
        self.force_first = force_first
        self.watch = watch
        self.branch = branch
        self.start_rewards = dict(start_rewards or {})  # handed out before the first step (by ablate)
        self.turns: list[Turn] = []
        self.rewards: dict[str, float] = {}
        self.last_turn: dict[str, Turn] = {}
        self.before_first: dict[str, float] = {}
        self.occurrence: Counter = Counter()
        self.tokens = 0
        self.t0 = 0.0
        self.wall = 0.0
        self.snapshots: list[tuple[int, str, Any, dict[str, float]]] = []
        self.finished = False
        self.final_infos: dict[str, Any] = {}
        self.digest = False                # compute Turn.obs_digest (runs with branches: replay checks it)

    def start(self) -> None:
        self.t0 = time.perf_counter()
        if self.seed is not None:
            self.env.reset(seed=self.seed)
        self.rewards = {a: 0.0 for a in self.env.possible_agents}
        self.credit(self.start_rewards)

    def credit(self, rewards: Mapping[str, float] | None = None) -> None:
        """Add step rewards (default: the env's last step's) to the agents' returns and their latest turns."""
        for agent, r in (self.env.rewards if rewards is None else rewards).items():
            r = float(r)
            if r == 0.0:
                continue
            self.rewards[agent] = self.rewards.get(agent, 0.0) + r
            turn = self.last_turn.get(agent)
            if turn is None:
                self.before_first[agent] = self.before_first.get(agent, 0.0) + r
            else:
                turn.reward += r

    def finish(self) -> None:
        env = self.env
        self.finished = True
        self.wall = time.perf_counter() - self.t0
        self.final_infos = json_safe({a: env.infos[a] for a in env.agents if a in env.infos})


class RolloutEngine:
    """Play many envs at once with one policy, or a policy per role.

    ``policy``: a :class:`Policy` for every seat (the role is in the prompt), or a dict role -> policy (e.g. a trained
    policy against a frozen copy or a scripted reference bot); every role of the env must be in it.
    ``max_concurrent``: how many envs are played at once (``None``: all of them; ``1``: one env at a time).
    ``max_steps``: a safety limit on the steps of one episode.
    ``record_state``: ``None`` (default), ``"global"`` (``Turn.state`` = ``env.state()``, the centralized state) or
    ``"observation"`` (``Turn.state`` = the acting agent's numeric observation), taken before each step, for a
    learned critic (the trainer passes the credit method's ``needs_state``).
    """

    def __init__(self, policy: Policy | Mapping[str, Policy], show_progress: bool = True,
                 max_concurrent: int | None = None, max_steps: int = 10_000, record_state: str | None = None) -> None:
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
        self.last_stats: dict[str, Any] = {}
        self._pool: dict[tuple[str, str], list] = {}   # (env id, kwargs) -> envs to reuse (reset per episode)

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

        try:
            return self._run(env_id, num_tasks, group_size, seed, env_kwargs, branches, seeds, run_id, take)
        finally:
            pool.extend(reversed(taken))

    def _run(self, env_id, num_tasks, group_size, seed, env_kwargs, branches, seeds, run_id, take) -> list[Episode]:
        proto = take()
        self._check_roles(proto)
        watch = frozenset(a for b in branches for a in b.agents(proto))

        t_start = time.perf_counter()
        jobs = [_Job(take(), seed=seeds[i], group_id=i, sample_index=j, watch=watch, key=(seeds[i], j))
                for i in range(num_tasks) for j in range(group_size)]
        for job in jobs:
            job.digest = bool(branches)
        self._play(jobs, seed=int(seed), phase=0, desc=f"{env_id} episodes")
        t_main = time.perf_counter() - t_start

        policies = self._settings(proto)
        episodes = [self._episode(job, env_id, env_kwargs, run_id, policies) for job in jobs]
        t_branch = 0.0
        if branches:
            t0 = time.perf_counter()
            branch_jobs: list[tuple[Episode, _Job]] = []
            for episode, job in zip(episodes, jobs):
                for spec_ in branches:
                    agents = set(spec_.agents(job.env, present={t.agent for t in episode.turns}))
                    for turn_index, agent, clone, rewards_before in job.snapshots:
                        if agent not in agents:
                            continue
                        for new in self._branch_jobs(spec_, episode, turn_index, agent, clone, rewards_before,
                                                     job.key):
                            new.digest = True
                            branch_jobs.append((episode, new))
            self._play([bj for _, bj in branch_jobs], seed=int(seed), phase=1, desc=f"{env_id} branches")
            for episode, bj in branch_jobs:
                b = bj.branch
                b.turns = bj.turns
                b.tokens_generated = bj.tokens
                b.team_rewards = {k: float(v) for k, v in bj.env.team_rewards().items()}
                b.rewards = {a: bj.base_rewards.get(a, 0.0) + bj.rewards.get(a, 0.0) for a in bj.env.possible_agents}
                b.transcript = json_safe(bj.env.transcript())
                b.wall_time_s = bj.wall
                episode.branches.append(b)
                episode.branch_tokens_generated += bj.tokens
            t_branch = time.perf_counter() - t0
        for job in jobs:
            job.snapshots = []
        self.last_stats = {
            "episodes": len(episodes),
            "main_wall_s": t_main,
            "branch_wall_s": t_branch,
            "wall_s": time.perf_counter() - t_start,
            "tokens_generated": sum(e.tokens_generated for e in episodes),
            "branch_tokens_generated": sum(e.branch_tokens_generated for e in episodes),
        }
        return episodes

    def _branch_jobs(self, spec_: BranchSpec, episode: Episode, turn_index: int, agent: str, clone,
                     rewards_before: dict[str, float], key: tuple[int, ...] = ()) -> list[_Job]:
        recorded = episode.turns[turn_index]
        replay = None
        if spec_.replay_others:
            replay, occ = {}, Counter()
            for t in episode.turns[turn_index:]:
                replay[(t.agent, occ[t.agent])] = t
                occ[t.agent] += 1
        out = []
        if spec_.kind == "ablate":
            before = {a: float(r) for a, r in clone.rewards.items()}
            env = clone.ablate(agent)
            # What ablate() handed out itself (its null move may end the episode) belongs to the branch.
            handed = {a: float(r) - before.get(a, 0.0) for a, r in env.rewards.items()}
            out.append(_Job(env, step_index=recorded.step_index, base_rewards=rewards_before, replay=replay,
                            branch=Branch("ablate", agent, turn_index, 0), start_rewards=handed,
                            key=(*key, 1, turn_index, 0)))
        else:
            for s in range(spec_.k):
                out.append(_Job(clone.clone(), step_index=recorded.step_index, base_rewards=rewards_before,
                                replay=replay, force_first=True, branch=Branch("resample", agent, turn_index, s),
                                key=(*key, 2, turn_index, s)))
        return out

    def _settings(self, env) -> dict[str, Any]:
        """Role -> the settings of the policy that plays it (recorded in every Episode)."""
        roles = sorted(set(env.roles[a] for a in env.possible_agents))
        return {role: json_safe(self._policy_for(role).settings()) for role in roles}

    def _episode(self, job: _Job, env_id: str, env_kwargs: dict[str, Any], run_id: str,
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
    def _play(self, jobs: list[_Job], seed: int, phase: int, desc: str) -> None:
        if not jobs:
            return
        bar = None
        if self.show_progress:
            from baselines.progress import Progress

            # a bar on a terminal, plain lines elsewhere; no remaining-time estimate: episodes finish in bursts
            # (every env advances each tick), so an estimate from the first finished episodes is far off
            bar = Progress(len(jobs), desc, unit="episode",
                           bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} episodes [{elapsed}]")
        policies = self._ordered_policies()
        index_of = {id(p): i for i, p in enumerate(policies)}
        cap = self.max_concurrent or len(jobs)
        waiting = list(reversed(jobs))
        active: list[_Job] = []
        tick = 0
        try:
            while waiting or active:
                while waiting and len(active) < cap:
                    job = waiting.pop()
                    job.start()
                    active.append(job)
                # Gather the decisions of this tick.
                pending: list[tuple[_Job, str, Request, str]] = []
                still: list[_Job] = []
                for job in active:
                    env = job.env
                    while not env.done and (env.terminations[env.agent_selection]
                                            or env.truncations[env.agent_selection]):
                        env.step(None)
                        job.step_index += 1
                    if env.done:
                        job.finish()
                        if bar is not None:
                            bar.update(1)
                        continue
                    if job.step_index > self.max_steps:
                        raise RuntimeError(f"{env.env_id}: an episode ran past max_steps={self.max_steps}")
                    still.append(job)
                    agent = env.agent_selection
                    role = env.roles[agent]
                    observes = self._policy_for(role).observes
                    text, legal, vector, mask, digest = "", (), None, None, ""
                    if job.digest and "text" not in observes and hasattr(env, "observe_text"):
                        # The text first: a branch decision whose observation matches the recorded one replays it,
                        # and then its policy's vector and mask are never needed.
                        text = env.observe_text(agent)
                        legal = tuple(env.legal_actions(agent))
                        digest = _digest(text, legal)
                        if "vector" in observes and not self._replays(job, agent, digest):
                            obs = env.observe(agent, text=False)
                            vector, mask = obs["observation"], obs.get("action_mask")
                    else:
                        if job.digest or "text" in observes:
                            obs = env.observe(agent)
                            text = obs["text"]
                            if "vector" in observes:
                                vector, mask = obs["observation"], obs.get("action_mask")
                        elif "vector" in observes:
                            obs = env.observe(agent, text=False)
                            vector, mask = obs["observation"], obs.get("action_mask")
                        if job.digest or "legal_actions" in observes:
                            legal = tuple(env.legal_actions(agent))
                        if job.digest:
                            digest = _digest(text, legal)
                    request = Request(env.env_id, agent, role, text, legal, env, key=(*job.key, job.step_index),
                                      observation=vector, action_mask=mask)
                    pending.append((job, agent, request, digest))
                active = still
                if not pending:
                    continue
                # Decide: recorded actions (branches) or one generate call per policy.
                decided: list[tuple[Generation | None, Turn | None]] = [(None, None)] * len(pending)
                by_policy: dict[int, list[int]] = {}
                for n, (job, agent, request, digest) in enumerate(pending):
                    rec = self._replays(job, agent, digest)
                    if rec is not None:
                        decided[n] = (None, rec)
                        continue
                    pidx = index_of[id(self._policy_for(request.role))]
                    by_policy.setdefault(pidx, []).append(n)
                for pidx, idxs in by_policy.items():
                    policy = policies[pidx]
                    gens = policy.generate([pending[n][2] for n in idxs], seed=_call_seed(seed, phase, tick, pidx))
                    if len(gens) != len(idxs):
                        raise RuntimeError(f"{type(policy).__name__}.generate returned {len(gens)} generations for "
                                           f"{len(idxs)} requests")
                    for n, g in zip(idxs, gens):
                        decided[n] = (g, None)
                # Step every env.
                for (job, agent, request, digest), (gen, rec) in zip(pending, decided):
                    self._step(job, agent, request, digest, gen, rec)
                tick += 1
        finally:
            if bar is not None:
                bar.close()

    @staticmethod
    def _replays(job: _Job, agent: str, digest: str) -> Turn | None:
        """The recorded turn a branch job reuses for ``agent``'s decision now (its next recorded decision, seen with
        the same observation digest), or ``None`` (the policy decides)."""
        if job.replay is None or job.force_first:
            return None
        rec = job.replay.get((agent, job.occurrence[agent]))
        return rec if rec is not None and rec.obs_digest == digest else None

    def _step(self, job: _Job, agent: str, request: Request, digest: str, gen: Generation | None,
              rec: Turn | None) -> None:
        env = job.env
        if agent in job.watch:
            job.snapshots.append((len(job.turns), agent, env.clone(), dict(job.rewards)))
        if rec is not None:
            action = rec.action
            turn = Turn(agent, request.role, env.teams[agent], list(rec.prompt_ids), list(rec.completion_ids),
                        list(rec.logprobs), rec.text, action if type(action) in _PLAIN else json_safe(action),
                        replayed=True, extra=dict(rec.extra), choice=rec.choice)
        else:
            action = _env_action(env, agent, gen.action, request.legal_actions)
            turn = Turn(agent, request.role, env.teams[agent], [int(x) for x in gen.prompt_ids],
                        [int(x) for x in gen.completion_ids], [float(x) for x in gen.logprobs], str(gen.text or ""),
                        action if type(action) in _PLAIN else json_safe(action),
                        extra=_json_safe_turn_extra(gen.extra) if gen.extra else {}, choice=gen.choice)
            job.tokens += gen.num_tokens
        turn.turn_index = len(job.turns)
        turn.step_index = job.step_index
        turn.obs_digest = digest
        turn.legal_actions = list(request.legal_actions)
        turn.reward = job.before_first.pop(agent, 0.0)
        if self.record_state is not None:
            vector = env.state() if self.record_state == "global" else env.observe(agent, text=False)["observation"]
            turn.state = [float(x) for x in vector]
        job.turns.append(turn)
        job.last_turn[agent] = turn
        job.occurrence[agent] += 1
        job.force_first = False
        env.step(action)
        job.step_index += 1
        info = env.infos.get(agent) or {}
        invalid = info.get("invalid_action")
        if invalid is not None:
            turn.invalid = True
            turn.invalid_reason = str(invalid.get("reason")) if isinstance(invalid, dict) else str(invalid)
        job.credit()


# ---------------------------------------------------------------------- summary and CLI
def summarize(episodes: Sequence[Episode], wall_s: float | None = None) -> dict[str, Any]:
    """Aggregate numbers of a run: rewards per team and role, invalid-move rate, tokens, rates, branch outcomes."""
    out: dict[str, Any] = {"episodes": len(episodes)}
    teams: dict[str, list[float]] = {}
    roles: dict[str, list[float]] = {}
    turns = invalid = 0
    for e in episodes:
        for team, r in e.team_rewards.items():
            teams.setdefault(team, []).append(r)
        role_of = {t.agent: t.role for t in e.turns}
        for agent, r in e.rewards.items():
            roles.setdefault(role_of.get(agent, agent), []).append(r)
        turns += len(e.turns)
        invalid += e.invalid_count
    out["mean_team_reward"] = {k: float(np.mean(v)) for k, v in sorted(teams.items())}
    out["mean_reward_per_role"] = {k: float(np.mean(v)) for k, v in sorted(roles.items())}
    out["turns"] = turns
    out["invalid_rate"] = invalid / turns if turns else 0.0
    out["tokens_main"] = sum(e.tokens_generated for e in episodes)
    out["tokens_branches"] = sum(e.branch_tokens_generated for e in episodes)
    if wall_s:
        out["wall_s"] = wall_s
        out["episodes_per_s"] = len(episodes) / wall_s
        out["tokens_per_s"] = (out["tokens_main"] + out["tokens_branches"]) / wall_s
    diffs: dict[str, list[float]] = {}
    for e in episodes:
        for b in e.branches:
            team = e.turns[b.turn_index].team
            key = f"{b.kind}:{b.agent}"
            diffs.setdefault(key, []).append(e.team_rewards.get(team, 0.0) - b.team_rewards.get(team, 0.0))
    out["branches"] = {k: {"n": len(v), "mean_main_minus_branch": float(np.mean(v))} for k, v in sorted(diffs.items())}
    return out


def _build_policy(args, env_kwargs: dict[str, Any] | None = None) -> Policy:
    if args.no_progress:  # also silence transformers' and the hub's loading bars
        import os

        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:
            pass
    if args.model == "random":
        from baselines.policies.scripted import ScriptedPolicy
        from marl_llm_envs.scripted import random_legal

        return ScriptedPolicy(random_legal, seed=args.seed)
    if args.model == "mlp":
        from baselines.policies.mlp import MLPPolicy
        from marl_llm_envs import make

        return MLPPolicy.for_env(make(args.env, **(env_kwargs or {})), seed=args.seed, temperature=args.temperature)
    from baselines.policies.hf import TransformersPolicy

    return TransformersPolicy.from_name(args.model, device=args.device, mode=args.mode, temperature=args.temperature,
                                        max_new_tokens=args.max_new_tokens)


_EXAMPLES = """\
examples:
  # 16 episodes of think_solve with SmolLM2 choosing among the legal moves
  python -m baselines.rollout --env think_solve-v0 --model smollm2-135m --mode choice \\
      --env-kwargs '{"action_mode": "discrete"}' --episodes 16 --out episodes.jsonl
  # random legal moves, 8 tasks x 4 samples, each turn also played without its agent (what loo needs)
  python -m baselines.rollout --env think_solve-v0 --model random --episodes 32 --group-size 4 \\
      --branches ablate:thinker,ablate:solver --out episodes.jsonl
  # then: the advantages a credit method gives these episodes
  python -m baselines.credit --episodes episodes.jsonl --method loo

counterfactual branches (--branches), comma-separated:
  ablate:AGENT        at each of AGENT's decisions, AGENT plays its null move instead (the thinker sends nothing,
                      a voter abstains) and the episode is played out: what the team gets without it (loo, ccpo)
  resample:AGENT:K    at each of AGENT's decisions, K new samples of its action, each played out to the end: what
                      another choice would have got (coma)
  In a branch the other agents reuse their recorded moves where they see exactly what they saw before.
  AGENT is an agent name (thinker, voter_0) or a role (voter: every agent with that role).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m baselines.rollout",
        description="Play batched episodes with a policy (an LLM, an untrained MLP or random moves) and write them "
                    "as JSONL:\none header line, then one episode per line (see baselines.episode).",
        epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", required=True, help="env id, e.g. think_solve-v0 (see marl_llm_envs.list_envs())")
    parser.add_argument("--model", default="tiny",
                        help='"smollm2-135m" (SmolLM2-135M-Instruct, a real small model), "random" (uniformly '
                             'random legal moves, no model), "mlp" (an untrained MLP on the numeric observation, '
                             'initialised from the seed; discrete action_mode only; baselines.train trains one), a '
                             'local model folder or a hub id. The default "tiny" is a randomly initialised '
                             "0.08M-parameter model for smoke tests: its replies are gibberish (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=64,
                        help="total episodes, tasks x group size (default: %(default)s)")
    parser.add_argument("--group-size", type=int, default=1,
                        help="samples per task, a GRPO group: same seed, same problem (default: %(default)s)")
    parser.add_argument("--mode", choices=("generate", "choice"), default="generate",
                        help="generate: free text, parsed by the env (format errors are invalid moves); choice: score "
                             "each legal move and sample one (no format errors; needs legal moves, e.g. discrete "
                             "action_mode or the games) (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help='torch device, e.g. "cpu" or "cuda" (default: %(default)s)')
    parser.add_argument("--max-new-tokens", type=int, default=32,
                        help="generation length limit per turn (default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default: %(default)s)")
    parser.add_argument("--branches", default="",
                        help='counterfactual branches per episode: KIND:AGENT[:K], comma-separated, e.g. '
                             '"ablate:thinker,resample:solver:4"; explained below (default: none)')
    parser.add_argument("--env-kwargs", default="{}",
                        help='JSON dict of env kwargs, e.g. \'{"action_mode": "discrete"}\' (default: {})')
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the first task; task i uses seed + i (default: %(default)s)")
    parser.add_argument("--max-concurrent", type=int, default=None, help="envs played at once (default: all)")
    parser.add_argument("--record-state", choices=("global", "observation"), default=None,
                        help="record Turn.state for a learned critic: env.state() (mappo) or the agent's numeric "
                             "observation (ippo) (default: none)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress output (neither ours nor transformers' loading bars); a bar is shown "
                             "only on a terminal, elsewhere one line when the rollout ends")
    parser.add_argument("--out", required=True, help="output JSONL path")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = build_parser()
    args = parser.parse_args(argv)

    if args.episodes < 1 or args.group_size < 1 or args.episodes % args.group_size:
        parser.error(f"--episodes ({args.episodes}) must be a positive multiple of --group-size ({args.group_size})")
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as e:
        parser.error(f"--env-kwargs is not valid JSON: {e}")
    if not isinstance(env_kwargs, dict):
        parser.error("--env-kwargs must be a JSON object")
    try:
        branches = BranchSpec.parse(args.branches)
    except ValueError as e:
        parser.error(str(e))

    try:
        policy = _build_policy(args, env_kwargs)
    except ValueError as e:
        parser.error(str(e))
    engine = RolloutEngine(policy, show_progress=not args.no_progress, max_concurrent=args.max_concurrent,
                           record_state=args.record_state)
    t0 = time.perf_counter()
    try:
        episodes = engine.run(args.env, num_tasks=args.episodes // args.group_size, group_size=args.group_size,
                              seed=args.seed, env_kwargs=env_kwargs, branches=branches)
    finally:
        policy.close()
    wall = time.perf_counter() - t0
    write_jsonl(args.out, episodes)
    summary = summarize(episodes, wall)
    print(f"env {args.env} | model {args.model} ({args.mode}) | episodes {summary['episodes']} "
          f"({args.episodes // args.group_size} tasks x {args.group_size})")
    print("mean team reward: " + ", ".join(f"{k} {v:+.3f}" for k, v in summary["mean_team_reward"].items()))
    print("mean reward per role: " + ", ".join(f"{k} {v:+.3f}" for k, v in summary["mean_reward_per_role"].items()))
    print(f"invalid-move rate: {summary['invalid_rate']:.3f} ({summary['turns']} turns)")
    print(f"tokens generated: main {summary['tokens_main']}, branches {summary['tokens_branches']}")
    print(f"wall {wall:.2f} s | {summary['episodes_per_s']:.2f} episodes/s | {summary['tokens_per_s']:.1f} tokens/s")
    for key, b in summary["branches"].items():
        print(f"branch {key}: n={b['n']}, mean outcome difference (main - branch) {b['mean_main_minus_branch']:+.3f}")
    print(f"wrote {len(episodes)} episodes to {args.out} (a header line, then one episode per line)")
    return summary


if __name__ == "__main__":
    main()
