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
as its original given the same actions, so a clone of a freshly reset env is that reset;
``tests/contracts/test_clone.py`` holds every registered env to it). A reset draws the task (an arithmetic problem, a
deal) and costs 25-350 us, a clone 5-12 us.

Branches (run after the main episodes, in a second batched pass over all branch envs). For every decision point of
a named agent (each of its turns) the engine keeps ``env.clone()`` taken just before the agent acts, then:

* ``BranchSpec("ablate", agent)``: ``clone.ablate(agent)`` and play on to the end: the env plays the agent's null
  action (think_solve-v0: the thinker sends nothing and the solver is asked under the solo prompt; voting-v0: the
  voter abstains), the other agents act as described below.
* ``BranchSpec("resample", agent, k=K)``: K continuations; in each, the agent's action at that point is sampled anew
  from its policy (the K samples are batched in one call), then play on to the end.
* ``BranchSpec("force", agent, k=M)``: for every legal move ``b`` of the agent at that point (discrete mode: the
  action ids its mask allows, in order; text mode: ``env.legal_actions(agent)``; a free-text turn, which has none:
  the recorded move), M continuations whose first action is ``b``, forced (no policy call; the branch's first turn
  has ``action = b`` and ``extra = {"forced": True}``), then play on to the end. ``Branch.sample_index`` is
  ``j * M + m`` for the ``j``-th legal move and continuation ``m``. With ``replay_others=False`` every later
  decision is the policy's own new draw, so the mean outcome of the M continuations of ``b`` estimates ``Q(h, b)``
  (:mod:`baselines.fidelity`: the true advantage ``A*``). Continuation ``m`` of every move samples with the same
  keys (common random numbers): a later decision whose input does not depend on the forced move (a voter, who
  never sees the others' ballots) draws the same action after every ``b``, so differences of ``Q`` between moves
  carry none of that decision's sampling noise, while each ``Q(h, b)`` is still the mean of ``M`` draws.
  ``stream`` (any spec) gives a spec's branches sampling keys of their own: two runs that differ only in ``stream``
  draw independent continuations (the ``oracle`` credit control and the ground truth it is measured against).

In a branch, another agent's decision (and the branch agent's own later decisions) reuses the main episode's recorded
action when ``replay_others`` (default) and the agent sees exactly what it saw in the main episode (same observation
text and same legal actions, checked by digest; the j-th decision of that agent after the branch point is matched with
its j-th recorded one). Then the recorded action is a sample of the same policy on the same input, so the branch
differs from the main episode only by the counterfactual. Where the observation changed (think_solve's solver after
the thinker is ablated or resampled; the next poker player after a resampled bet) the agent acts anew from its
policy. Voting consequence: voters never see each other's ballots, so the ablate branch of ``voter_i`` taken before
its vote replays every other ballot, and its team reward equals the main episode's
``infos["team_reward_without"]["voter_i"]`` (the count with that ballot removed after the others voted).
A resample branch whose new action is the recorded one is the main episode again from there (a clone given the same
actions plays the same episode), so every later decision would replay: the engine writes its remaining turns from the
record instead of playing them, exactly what playing them writes (``tests/equivalence/test_branch_follow.py``). Likewise
a resample branch that drew the same action as an earlier sibling shadows it while the sibling's decisions replay,
and plays on by itself (from a clone of the sibling's env) only from the first decision its policy makes anew.
Branch tokens are counted apart (``Episode.branch_tokens_generated``) so each credit method's cost is visible.
Rewards that ``ablate`` hands out itself (the null move ends the episode: think_solve's solver, the last voter) are
part of the branch: ``Branch.rewards`` agrees with ``Branch.team_rewards``.
"""

from __future__ import annotations

import gc
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from baselines.episode import Branch, Episode, Turn, json_safe
from baselines.policies.base import Generation, Policy, Request, observation_fields
from marl_llm_envs import make
from marl_llm_envs.text import parse_bracketed

__all__ = ["BranchSpec", "RolloutEngine", "training_seeds"]

BRANCH_KINDS = ("ablate", "resample", "force")
_NO_MOVE = object()      # _Job.forced when no move is forced
STATE_KINDS = (None, "global", "observation")


@dataclass(frozen=True)
class BranchSpec:
    """A counterfactual to branch at every decision point of ``agent``.

    ``agent`` is an agent name (``"thinker"``, ``"voter_0"``) or a role (``"voter"``: every agent with that role; in
    an env whose agents appear at run time, such as orchestrator-v0's role ``"worker"``, the agents of that role that
    took part in each episode).
    ``k``: the number of resamples per decision point (``kind="resample"``), or of continuations per legal move
    (``kind="force"``). ``replay_others``: reuse the main episode's recorded actions where the observation is
    unchanged (see the module docstring); ``False`` samples every later decision anew. ``stream``: a non-negative
    int that enters the branches' sampling keys (0: the keys of a spec without it), so otherwise identical specs
    of two runs draw independent continuations.
    """

    kind: str
    agent: str
    k: int = 1
    replay_others: bool = True
    stream: int = 0

    def __post_init__(self) -> None:
        if self.kind not in BRANCH_KINDS:
            raise ValueError(f"branch kind {self.kind!r} is not one of {list(BRANCH_KINDS)}")
        if not isinstance(self.agent, str) or not self.agent:
            raise ValueError(f"branch agent must be a non-empty string, got {self.agent!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"branch k must be a positive int, got {self.k!r}")
        if self.kind == "ablate" and self.k != 1:
            raise ValueError("an ablate branch has k=1 (ablation is deterministic)")
        if isinstance(self.stream, bool) or not isinstance(self.stream, int) or self.stream < 0:
            raise ValueError(f"branch stream must be a non-negative int, got {self.stream!r}")

    @classmethod
    def parse(cls, text: str) -> list["BranchSpec"]:
        """``"ablate:thinker,resample:solver:4,force:voter:8"`` -> three specs."""
        specs = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            bits = part.split(":")
            if len(bits) == 2:
                specs.append(cls(bits[0], bits[1]))
            elif len(bits) == 3 and bits[0] in ("resample", "force"):
                try:
                    k = int(bits[2])
                except ValueError:
                    raise ValueError(f"branch {part!r}: K must be an int") from None
                specs.append(cls(bits[0], bits[1], k))
            else:
                raise ValueError(f"branch {part!r} is not KIND:AGENT, resample:AGENT:K or force:AGENT:M")
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
_TEXT = frozenset({"text"})   # a run with branches renders every prompt, for the replay digest


def _replayed_turn(rec: Turn, agent: str, role: str, team: str, invalid: bool = False, invalid_reason: str | None = None,
                   reward: float = 0.0, turn_index: int = 0, step_index: int = 0, obs_digest: str = "",
                   legal_actions: Sequence[str] = (), state: list[float] | None = None) -> Turn:
    """The turn a branch writes for a decision that reuses the recorded turn ``rec`` (its generation copied,
    ``replayed=True``), with the given fields of the branch's own."""
    action = rec.action
    return Turn(agent, role, team, list(rec.prompt_ids), list(rec.completion_ids), list(rec.logprobs), rec.text,
                action if type(action) in _PLAIN else json_safe(action), invalid, invalid_reason, reward, turn_index,
                step_index, obs_digest, list(legal_actions), True, dict(rec.extra),
                None if state is None else list(state), rec.choice)


def _call_seed(seed: int, phase: int, tick: int, index: int) -> int:
    state = np.random.SeedSequence([int(seed) % 2**63, phase, tick, index]).generate_state(1)
    return int(state[0]) & 0x7FFFFFFF


def env_action(env, agent: str, action: Any, legal: Sequence[str] = ()) -> Any:
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


class _Recorded:
    """A main episode's decisions as its branches replay them: the one place of the replay rule.

    A branch reuses the recorded action of agent ``a``'s ``j``-th decision after the branch point when ``a`` sees
    exactly what it saw then: the same observation text and the same legal moves (what ``Turn.obs_digest`` hashes).
    Decisions are indexed by ``(agent, occurrence)`` over the whole episode, and a branch from turn ``i`` starts each
    agent's count at its number of turns before ``i`` (:meth:`occurrences_before`), so its ``j``-th decision of ``a``
    meets ``a``'s ``j``-th recorded one from ``i`` on. What each turn's step handed out (``credited``) lets a branch
    that is known to follow the main episode to its end take the rest of it from here instead of playing it."""

    __slots__ = ("turns", "seen", "credited", "index", "plain")

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns                                           # the main job's own list
        self.seen: list[tuple[str, tuple[str, ...]]] = []            # per turn: (observation text, legal moves)
        self.credited: list[tuple[tuple[str, float], ...]] = []      # per turn: the rewards its step handed out
        self.index: dict[tuple[str, int], int] = {}                  # (agent, occurrence) -> turn index
        self.plain = True            # every action was a plain value (a replay then passes the very same input)

    def add(self, agent: str, occurrence: int, text: str, legal: tuple[str, ...]) -> None:
        self.index[(agent, occurrence)] = len(self.seen)
        self.seen.append((text, legal))

    def occurrences_before(self, turn_index: int) -> dict[str, int]:
        counts: dict[str, int] = {}
        for t in self.turns[:turn_index]:
            counts[t.agent] = counts.get(t.agent, 0) + 1
        return counts

    def match(self, agent: str, occurrence: int, text: str, legal: tuple[str, ...]) -> tuple[Turn | None, str]:
        """The recorded turn this decision replays (``None``: the policy decides) and the decision's digest."""
        i = self.index.get((agent, occurrence))
        if i is None:
            return None, _digest(text, legal)
        rec = self.turns[i]
        if self.seen[i] == (text, legal):       # the digest's very input: the same digest, without hashing
            return rec, rec.obs_digest
        digest = _digest(text, legal)
        return (rec if rec.obs_digest == digest else None), digest


class _Job:
    """One env being played: the main episode of a group member (:meth:`main`), or one branch (:meth:`branch_of`)."""

    def __init__(self, env, key: tuple[int, ...], step_index: int = 0) -> None:
        self.env = env
        self.key = key                     # Request.key prefix: (env seed, sample index[, branch id...])
        self.step_index = step_index
        self.seed: int | None = None       # main jobs: reset with this seed when started
        self.same_task: list[_Job] = []    # a group's first main job: the others, started from clones of its reset
        self.cloned = False                # one of those others (its env is set when the first one starts)
        self.group_id = self.sample_index = 0
        self.watch: frozenset[str] = frozenset()   # main jobs: the agents whose decisions are branch points
        self.record: _Recorded | None = None       # main jobs of runs with branches: what the branches replay
        self.branch: Branch | None = None          # branch jobs: the Branch being played
        self.source: _Recorded | None = None       # branch jobs: the main episode's record (None: nothing replays)
        self.source_env = None                     # branch jobs: the main episode's env (at its end by then)
        self.force_first = False           # resample: the first decision is sampled anew
        self.forced: Any = _NO_MOVE        # force: the move its first decision plays (then _NO_MOVE)
        self.base_rewards: dict[str, float] = {}
        self.start_rewards: dict[str, float] = {}   # handed out before the first step (by ablate)
        self.turns: list[Turn] = []
        self.rewards: dict[str, float] = {}
        self.last_turn: dict[str, Turn] = {}
        self.before_first: dict[str, float] = {}
        self.occurrence: dict[str, int] = {}      # agent -> its decisions so far (a plain dict: no Counter() per job)
        self.tokens = 0
        self.t0 = 0.0
        self.wall = 0.0
        self.snapshots: list[tuple[int, str, Any, dict[str, float]]] = []
        self.finished = False
        self.final_infos: dict[str, Any] = {}
        self.digest = False                # compute Turn.obs_digest (runs with branches: replay checks it)
        self.follows = -1                  # >= 0: the decisions left of a branch known to follow the main episode
        self.siblings: list[_Job] = []     # resample: the K jobs of its branch point, in sample order
        self.first_action: tuple[type, Any] | None = None   # resample: the plain action its first decision drew
        self.leader: _Job | None = None    # a sibling that drew the same action and that this job shadows for now
        self.start_tick = -1
        self.tick = -1                     # the last tick this job gathered a decision in
        self.replaying = False             # ... and whether that decision replayed a recorded one

    @classmethod
    def main(cls, env, seed: int, group_id: int, sample_index: int, watch: frozenset[str], branched: bool) -> "_Job":
        job = cls(env, (seed, sample_index))
        job.seed, job.group_id, job.sample_index, job.watch, job.digest = seed, group_id, sample_index, watch, branched
        if branched:
            job.record = _Recorded(job.turns)
        return job

    @classmethod
    def branch_of(cls, main: "_Job", env, branch: Branch, kind_id: int, rewards_before: dict[str, float],
                  replay: bool, start_rewards: dict[str, float] | None = None, stream: int = 0,
                  draw: int | None = None) -> "_Job":
        record = main.record
        i = branch.turn_index
        draw = branch.sample_index if draw is None else draw
        key = (*main.key, kind_id, i, draw) + ((stream,) if stream else ())
        job = cls(env, key, step_index=record.turns[i].step_index)
        job.branch, job.digest, job.source_env = branch, True, main.env
        job.base_rewards = dict(rewards_before)
        job.start_rewards = dict(start_rewards or {})
        job.force_first = branch.kind == "resample"
        if replay:
            job.source = record
            job.occurrence = record.occurrences_before(i)
        return job

    def start(self) -> None:
        self.t0 = time.perf_counter()
        if self.seed is not None and not self.cloned:
            self.env.reset(seed=self.seed)
            for other in self.same_task:
                other.env = self.env.clone()
        self.rewards = dict.fromkeys(self.env.possible_agents, 0.0)
        if self.start_rewards:
            self.add_rewards(tuple(self.start_rewards.items()))

    def add_env_rewards(self) -> tuple[tuple[str, float], ...]:
        """Add the env's last step's rewards (``env.rewards``) to the agents' returns and turns; return the non-zero
        ones, as floats."""
        rewards = self.env.rewards
        if not any(rewards.values()):     # most steps hand out nothing (a NaN is truthy, so it is kept below)
            return ()
        given = tuple((agent, float(r)) for agent, r in rewards.items() if r != 0.0)
        self.add_rewards(given)
        return given

    def add_rewards(self, given: Iterable[tuple[str, float]]) -> None:
        """Add rewards to the agents' returns and to their latest turns (before an agent's first turn: kept for it)."""
        for agent, r in given:
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
        if self.branch is None:       # a branch records no final infos
            self.final_infos = json_safe({a: env.infos[a] for a in env.agents if a in env.infos})


class _Decision(NamedTuple):
    """One pending decision of a tick."""

    job: _Job
    agent: str
    request: Request | None         # None: a branch replays the recorded turn ``rec``
    digest: str                     # Turn.obs_digest (runs with branches)
    rec: Turn | None
    legal: tuple[str, ...]          # the legal moves computed for it


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

    # Take a resample branch that drew the recorded action from the record (_follow), and let a branch shadow an
    # earlier sibling that drew the same action (_shadow); False plays every branch step (the tests compare the two).
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
        jobs = [_Job.main(take() if j == 0 or not cloned else None, seeds[i], i, j, watch, bool(branches))
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
            branch_jobs: list[tuple[Episode, _Job]] = []
            for episode, job in zip(episodes, jobs):
                for spec_ in branches:
                    agents = set(spec_.agents(job.env, present={t.agent for t in episode.turns}))
                    for turn_index, agent, clone, rewards_before in job.snapshots:
                        if agent in agents:
                            branch_jobs.extend((episode, new) for new in
                                               self._branch_jobs(spec_, job, turn_index, agent, clone, rewards_before))
            self._play([bj for _, bj in branch_jobs], seed=int(seed), phase=1, desc=f"{env_id} branches")
            for episode, bj in branch_jobs:
                episode.branches.append(self._branch(bj, episode))
                episode.branch_tokens_generated += bj.tokens
                bj.siblings, bj.leader = [], None   # the siblings' list holds each of them: reference cycles, which
                #   only a full collection freed (with their env clones, turns and records: 55,000 objects a coma
                #   step on mini_hanabi-v1, 15% of its CPU time in the trainer's collection)
        for job in jobs:
            job.snapshots = []
            job.record = None
        return episodes

    @staticmethod
    def _branch_jobs(spec_: BranchSpec, job: _Job, turn_index: int, agent: str, clone,
                     rewards_before: dict[str, float]) -> list[_Job]:
        if spec_.kind == "ablate":
            before = {a: float(r) for a, r in clone.rewards.items()}
            env = clone.ablate(agent)
            # What ablate() handed out itself (its null move may end the episode) belongs to the branch.
            handed = {a: float(r) - before.get(a, 0.0) for a, r in env.rewards.items()}
            return [_Job.branch_of(job, env, Branch("ablate", agent, turn_index, 0), 1, rewards_before,
                                   spec_.replay_others, start_rewards=handed, stream=spec_.stream)]
        if spec_.kind == "force":
            jobs = []
            for j, move in enumerate(RolloutEngine._moves(clone, agent, job.turns[turn_index])):
                for m in range(spec_.k):
                    new = _Job.branch_of(job, clone.clone(), Branch("force", agent, turn_index, j * spec_.k + m), 3,
                                         rewards_before, spec_.replay_others, stream=spec_.stream, draw=m)
                    new.forced = move
                    jobs.append(new)
            return jobs
        siblings = [_Job.branch_of(job, clone.clone(), Branch("resample", agent, turn_index, s), 2, rewards_before,
                                   spec_.replay_others, stream=spec_.stream) for s in range(spec_.k)]
        for sibling in siblings:
            sibling.siblings = siblings
        return siblings

    @staticmethod
    def _moves(env, agent: str, recorded: Turn) -> list[Any]:
        """The moves a force branch plays at ``agent``'s decision in ``env``: in discrete mode the action ids its
        mask allows, in order; in text mode the legal moves; on a free-text turn (no legal moves) the recorded one."""
        if getattr(env, "action_mode", "text") == "discrete":
            return [int(i) for i in np.flatnonzero(env.action_mask(agent))]
        return list(env.legal_actions(agent)) or [recorded.action]

    @staticmethod
    def _branch(bj: _Job, episode: Episode) -> Branch:
        """The played (or followed) branch job as a :class:`Branch`."""
        b = bj.branch
        b.turns = bj.turns
        b.tokens_generated = bj.tokens
        # A branch that followed the main episode ended where it ended (see _Job.follows).
        env = bj.source_env if bj.follows >= 0 else bj.env
        b.team_rewards = dict(episode.team_rewards) if bj.follows >= 0 else \
            {k: float(v) for k, v in env.team_rewards().items()}
        b.rewards = {a: bj.base_rewards.get(a, 0.0) + bj.rewards.get(a, 0.0) for a in env.possible_agents}
        b.transcript = json_safe(episode.transcript if bj.follows >= 0 else env.transcript())
        b.wall_time_s = bj.wall
        return b

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
                    job.start_tick = tick
                    active.append(job)
                pending, active, following = self._gather(active, tick, bar)
                if not pending:
                    if following:       # a followed or shadowed branch took this tick's decision
                        tick += 1
                    continue
                gens = self._decide(pending, policies, index_of, seed, phase, tick)
                for d, gen in zip(pending, gens):
                    if d.rec is not None:
                        self._step_replayed(d.job, d.agent, d.digest, d.rec, d.legal)
                    elif d.request is None:
                        self._step_forced(d.job, d.agent, d.legal)
                    else:
                        self._step(d.job, d.agent, d.request, d.digest, gen)
                tick += 1
        finally:
            if bar is not None:
                bar.close()

    def _gather(self, active: list[_Job], tick: int, bar) -> tuple[list[_Decision], list[_Job], bool]:
        """The decisions of this tick, one per live job (finished jobs leave ``active``): the pending decisions, the
        jobs still live, and whether a followed or shadowed branch took a decision without pending one."""
        pending: list[_Decision] = []
        still: list[_Job] = []
        following = False
        for job in active:
            if job.follows > 0:      # a decision of the main episode's, taken over already (see _follow)
                job.follows -= 1
                following = True
                still.append(job)
                continue
            if job.leader is not None:
                if self._shadow(job, tick):
                    following = True
                    still.append(job)
                    continue
                if job.finished:
                    if bar is not None:
                        bar.update(1)
                    continue
            env = job.env
            if job.follows < 0:
                while not env.done and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
                    env.step(None)
                    job.step_index += 1
            if job.follows == 0 or env.done:
                job.finish()
                if bar is not None:
                    bar.update(1)
                continue
            if job.step_index > self.max_steps:
                raise RuntimeError(f"{env.env_id}: an episode ran past max_steps={self.max_steps}")
            still.append(job)
            decision = self._observe(job, env)
            job.tick, job.replaying = tick, decision.rec is not None
            pending.append(decision)
        return pending, still, following

    def _decide(self, pending: list[_Decision], policies: list[Policy], index_of: dict[int, int], seed: int,
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

    def _observe(self, job: _Job, env) -> _Decision:
        """What ``job``'s agent to move sees: its request (``None`` when a branch replays the recorded decision),
        the observation digest (runs with branches), the recorded turn it replays (or ``None``) and the legal moves
        computed."""
        agent = env.agent_selection
        if job.forced is not _NO_MOVE:          # a force branch's first decision: no observation, no policy
            if agent != job.branch.agent:
                raise RuntimeError(f"{env.env_id}: a force branch of {job.branch.agent} found {agent} to move")
            return _Decision(job, agent, None, "", None, tuple(env.legal_actions(agent)))
        role = env.roles[agent]
        observes = self._policy_for(role).observes
        text, legal, vector, mask, digest, rec = "", (), None, None, "", None
        if job.digest and "text" not in observes and hasattr(env, "observe_text"):
            # The text first: a branch decision whose observation matches the recorded one replays it, and then
            # its policy's vector and mask are never needed.
            text = env.observe_text(agent)
            legal = tuple(env.legal_actions(agent))
            rec, digest = self._match(job, agent, text, legal)
            if rec is not None:
                return _Decision(job, agent, None, digest, rec, legal)
            _, vector, mask = observation_fields(env, agent, observes)   # no "text" in observes here
        else:
            text, vector, mask = observation_fields(env, agent, observes | _TEXT if job.digest else observes)
            if job.digest or "legal_actions" in observes:
                legal = tuple(env.legal_actions(agent))
            if job.digest:
                rec, digest = self._match(job, agent, text, legal)
                if rec is not None:
                    return _Decision(job, agent, None, digest, rec, legal)
        request = Request(env.env_id, agent, role, text, legal, env if "env" in observes else None,
                          key=(*job.key, job.step_index), observation=vector, action_mask=mask)
        return _Decision(job, agent, request, digest, None, legal)

    @staticmethod
    def _match(job: _Job, agent: str, text: str, legal: tuple[str, ...]) -> tuple[Turn | None, str]:
        """The recorded turn a branch job reuses for ``agent``'s decision now (see :class:`_Recorded`), or
        ``None``, and the decision's digest; main jobs record what they saw for their branches."""
        if job.source is None or job.force_first:
            digest = _digest(text, legal)
            if job.record is not None:
                job.record.add(agent, job.occurrence.get(agent, 0), text, legal)
            return None, digest
        return job.source.match(agent, job.occurrence.get(agent, 0), text, legal)

    def _step_replayed(self, job: _Job, agent: str, digest: str, rec: Turn, legal: tuple[str, ...]) -> None:
        """A branch decision that replays the main episode's recorded turn ``rec``."""
        env = job.env
        turn = _replayed_turn(rec, agent, env.roles[agent], env.teams[agent])
        self._record_and_step(job, agent, turn, rec.action, digest, list(legal))

    def _step_forced(self, job: _Job, agent: str, legal: tuple[str, ...]) -> None:
        """A force branch's first decision: its forced move, recorded as a turn with no tokens."""
        env = job.env
        action, job.forced = job.forced, _NO_MOVE
        turn = Turn(agent, env.roles[agent], env.teams[agent], [], [], [], str(action),
                    action if type(action) in _PLAIN else json_safe(action), extra={"forced": True})
        self._record_and_step(job, agent, turn, action, "", list(legal))

    def _step(self, job: _Job, agent: str, request: Request, digest: str, gen: Generation) -> None:
        env = job.env
        if agent in job.watch:
            job.snapshots.append((len(job.turns), agent, env.clone(), dict(job.rewards)))
        action = gen.action
        if type(action) is not int:       # an index passes as is; a text move in discrete mode becomes its index
            action = env_action(env, agent, action, request.legal_actions)
        plain = type(action) in _PLAIN
        completion = gen.completion_ids
        turn = Turn(agent, request.role, env.teams[agent], [int(x) for x in gen.prompt_ids],
                    [int(x) for x in completion], [float(x) for x in gen.logprobs], str(gen.text or ""),
                    action if plain else json_safe(action),
                    extra=json_safe(gen.extra) if gen.extra else {}, choice=gen.choice)
        job.tokens += len(completion)
        if job.record is not None and not plain:
            job.record.plain = False
        first = job.force_first
        self._record_and_step(job, agent, turn, action, digest, list(request.legal_actions))
        if first and self.follow_main and job.source is not None and job.source.plain and plain:
            rec = job.source.turns[job.branch.turn_index]
            if type(rec.action) is type(action) and rec.action == action:
                self._follow(job)
                return
            job.first_action = (type(action), action)
            for other in job.siblings:       # an earlier sibling, played, that drew the same action in the same tick
                if other is job:
                    break
                if (other.first_action == job.first_action and other.leader is None and other.follows < 0
                        and other.start_tick == job.start_tick):
                    job.leader = other
                    break

    def _record_and_step(self, job: _Job, agent: str, turn: Turn, action: Any, digest: str,
                         legal: list[str]) -> None:
        env = job.env
        turn.turn_index = len(job.turns)
        turn.step_index = job.step_index
        turn.obs_digest = digest
        turn.legal_actions = legal
        turn.reward = job.before_first.pop(agent, 0.0)
        if self.record_state is not None:
            vector = env.state() if self.record_state == "global" else env.observe(agent, text=False)["observation"]
            turn.state = [float(x) for x in vector]
        job.turns.append(turn)
        job.last_turn[agent] = turn
        occurrence = job.occurrence
        occurrence[agent] = occurrence.get(agent, 0) + 1
        job.force_first = False
        env.step(action)
        job.step_index += 1
        info = env.infos.get(agent) or {}
        invalid = info.get("invalid_action")
        if invalid is not None:
            turn.invalid = True
            turn.invalid_reason = str(invalid.get("reason")) if isinstance(invalid, dict) else str(invalid)
        given = job.add_env_rewards()
        if job.record is not None:
            job.record.credited.append(given)

    @staticmethod
    def _follow(job: _Job) -> None:
        """A resample branch whose new action is the recorded one: from here it is the main episode again. The env
        is a clone that took the same action from the same state (envs draw chance from their own RNG, so a clone
        given the same actions plays the same episode, ``clone()``'s contract), so every later decision sees what it
        saw in the main episode and replays its recorded action; the rest of the branch is taken from the record,
        turn for turn what playing it would have written, without stepping the env. The job still takes one tick
        per decision (``follows``), so the batches of every other job's ticks, and their seeds, are unchanged."""
        source = job.source
        start = job.branch.turn_index + 1
        for rec, given in zip(source.turns[start:], source.credited[start:]):
            turn = _replayed_turn(rec, rec.agent, rec.role, rec.team, rec.invalid, rec.invalid_reason,
                                  job.before_first.pop(rec.agent, 0.0), len(job.turns), rec.step_index,
                                  rec.obs_digest, rec.legal_actions, rec.state)
            job.turns.append(turn)
            job.last_turn[rec.agent] = turn
            job.add_rewards(given)
        job.follows = len(source.turns) - start

    @staticmethod
    def _shadow(job: _Job, tick: int) -> bool:
        """A resample branch that drew the same action as an earlier sibling (its leader) from the same state is in
        the same state after it, and stays in its leader's state while the leader's decisions replay recorded ones
        (a replay depends only on the observation and the agent's count of decisions, which the two share): it
        shadows the leader instead of playing the same steps. Return ``True`` while it shadows (this tick: the
        leader replayed); when the leader ended, this job ends as a copy of it; when the leader's decision is a new
        one (its sample depends on the job's key), this job takes over a clone of the leader's state and plays on by
        itself from this decision. Jobs are gathered in order and a leader comes first, so at this point the
        leader has gathered this tick's decision (the env not yet stepped)."""
        leader = job.leader
        if leader.finished:
            RolloutEngine._take_over(job, leader)
            job.env = leader.env            # the leader's env at the end: the same episode's team rewards, transcript
            job.leader = None
            job.finish()
            return False
        if leader.tick == tick and leader.replaying:
            return True
        RolloutEngine._take_over(job, leader)
        job.env = leader.env.clone()
        job.leader = None
        return False

    @staticmethod
    def _take_over(job: _Job, leader: _Job) -> None:
        """Make ``job``'s record its leader's: its own first turn (the leader's reward on it), then copies of the
        leader's later turns (all replays), its returns and counters."""
        first = job.turns[0]
        first.reward = leader.turns[0].reward
        copies = [first] + [_replayed_turn(t, t.agent, t.role, t.team, t.invalid, t.invalid_reason, t.reward,
                                           t.turn_index, t.step_index, t.obs_digest, t.legal_actions, t.state)
                            for t in leader.turns[1:]]
        mine = {id(t): c for t, c in zip(leader.turns, copies)}
        job.turns = copies
        job.last_turn = {a: mine[id(t)] for a, t in leader.last_turn.items()}
        job.rewards = dict(leader.rewards)
        job.before_first = dict(leader.before_first)
        job.occurrence = dict(leader.occurrence)
        job.step_index = leader.step_index
