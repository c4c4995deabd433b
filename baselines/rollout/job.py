"""One env being played by the rollout engine: :class:`Job` (what every played env keeps: its turns, returns and
counters, and how a decision is recorded and stepped), :class:`MainJob` (the main episode of a group member, and
the record its branches replay) and :class:`Decision` (one pending decision of a tick).

The branch jobs (:class:`baselines.rollout.branches.BranchJob`) extend :class:`Job` with what only a branch needs;
:class:`~baselines.rollout.engine.RolloutEngine` plays both kinds in one batched loop, through the methods here.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Iterable, NamedTuple, Sequence

from baselines.episode import Turn, json_safe
from baselines.policies.base import Request

__all__ = ["Decision", "Job", "MainJob", "Record", "obs_digest"]

PLAIN = frozenset({int, str, bool, type(None)})     # action types a turn stores as they are
PLAY, TOOK, ENDED = 0, 1, 2                         # what Job.advance found (see there)


def obs_digest(text: str, legal: Sequence[str]) -> str:
    """``Turn.obs_digest``: a digest of the observation text and the legal moves."""
    h = hashlib.sha1(text.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update("\x1f".join(legal).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class Record:
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
            return None, obs_digest(text, legal)
        rec = self.turns[i]
        if self.seen[i] == (text, legal):       # the digest's very input: the same digest, without hashing
            return rec, rec.obs_digest
        digest = obs_digest(text, legal)
        return (rec if rec.obs_digest == digest else None), digest


class Job:
    """What every played env keeps, and the steps the engine's loop takes with it. The hooks (:meth:`set_up`,
    :meth:`advance`, :meth:`forced_decision`, :meth:`match`, :meth:`gathered`, :meth:`step_generated`) are where a
    main job and a branch job differ."""

    def __init__(self, env, key: tuple[int, ...], step_index: int = 0, digest: bool = False) -> None:
        self.env = env
        self.key = key                     # Request.key prefix: (env seed, sample index[, branch id...])
        self.step_index = step_index
        self.digest = digest               # compute Turn.obs_digest (runs with branches: replay checks it)
        self.turns: list[Turn] = []
        self.rewards: dict[str, float] = {}
        self.last_turn: dict[str, Turn] = {}
        self.before_first: dict[str, float] = {}
        self.occurrence: dict[str, int] = {}      # agent -> its decisions so far (a plain dict: no Counter() per job)
        self.tokens = 0
        self.t0 = 0.0
        self.wall = 0.0
        self.finished = False
        self.start_tick = -1

    def start(self, tick: int) -> None:
        self.t0 = time.perf_counter()
        self.start_tick = tick
        self.set_up()
        self.rewards = dict.fromkeys(self.env.possible_agents, 0.0)

    def set_up(self) -> None:
        """Ready the env for its first decision (a main job resets it; a branch's clone is ready)."""

    def advance(self, tick: int) -> int:
        """Step the agents that are already terminated (with ``None``); ``ENDED`` (and finish) when the episode is
        over, else ``PLAY``: a decision to gather this tick. A branch may also answer ``TOOK``: it took this tick's
        decision from the main episode's record or from a sibling's, without a policy."""
        env = self.env
        while not env.done and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            env.step(None)
            self.step_index += 1
        if env.done:
            self.finish()
            return ENDED
        return PLAY

    def forced_decision(self, agent: str) -> Decision | None:
        """A decision that plays a given move without observing (a force branch's first one), or ``None``."""
        return None

    def match(self, agent: str, text: str, legal: tuple[str, ...]) -> tuple[Turn | None, str]:
        """The recorded turn this decision replays (``None``: its policy decides) and the decision's digest."""
        return None, obs_digest(text, legal)

    def gathered(self, tick: int, replaying: bool) -> None:
        """This job's decision of tick ``tick`` was gathered (``replaying``: it replays a recorded turn)."""

    def step_generated(self, agent: str, turn: Turn, action: Any, plain: bool, digest: str, legal: list[str],
                       record_state: str | None, follow: bool) -> None:
        """Record and step a decision its policy made (``plain``: the action is a plain value; ``follow``: see
        :attr:`RolloutEngine.follow_main <baselines.rollout.engine.RolloutEngine.follow_main>`)."""
        self.record_and_step(agent, turn, action, digest, legal, record_state)

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

    def record_and_step(self, agent: str, turn: Turn, action: Any, digest: str, legal: list[str],
                        record_state: str | None) -> tuple[tuple[str, float], ...]:
        """Append ``turn`` (its index, step, digest, legal moves, the reward kept for it and, with ``record_state``,
        the state vector filled in), step ``action`` and credit the step's rewards; return those rewards."""
        env = self.env
        turn.turn_index = len(self.turns)
        turn.step_index = self.step_index
        turn.obs_digest = digest
        turn.legal_actions = legal
        turn.reward = self.before_first.pop(agent, 0.0)
        if record_state is not None:
            vector = env.state() if record_state == "global" else env.observe(agent, text=False)["observation"]
            turn.state = [float(x) for x in vector]
        self.turns.append(turn)
        self.last_turn[agent] = turn
        occurrence = self.occurrence
        occurrence[agent] = occurrence.get(agent, 0) + 1
        env.step(action)
        self.step_index += 1
        info = env.infos.get(agent) or {}
        invalid = info.get("invalid_action")
        if invalid is not None:
            turn.invalid = True
            turn.invalid_reason = str(invalid.get("reason")) if isinstance(invalid, dict) else str(invalid)
        return self.add_env_rewards()

    def finish(self) -> None:
        self.finished = True
        self.wall = time.perf_counter() - self.t0


class MainJob(Job):
    """The main episode of one group member: reset with its task's seed (or started from a clone of its group's
    first reset), the branch points it passes (``snapshots``) and, in runs with branches, the :class:`Record` its
    branches replay."""

    def __init__(self, env, seed: int, group_id: int, sample_index: int, watch: frozenset[str],
                 branched: bool) -> None:
        super().__init__(env, (seed, sample_index), digest=branched)
        self.seed = seed
        self.group_id, self.sample_index = group_id, sample_index
        self.watch = watch                 # the agents whose decisions are branch points
        self.same_task: list[MainJob] = []   # a group's first job: the others, started from clones of its reset
        self.cloned = False                # one of those others (its env is set when the first one starts)
        self.record = Record(self.turns) if branched else None      # what the branches replay
        self.snapshots: list[tuple[int, str, Any, dict[str, float]]] = []   # (turn, agent, env clone, returns)
        self.final_infos: dict[str, Any] = {}

    def set_up(self) -> None:
        if not self.cloned:
            self.env.reset(seed=self.seed)
            for other in self.same_task:
                other.env = self.env.clone()

    def match(self, agent: str, text: str, legal: tuple[str, ...]) -> tuple[Turn | None, str]:
        """A main job replays nothing; it records what it saw for its branches."""
        digest = obs_digest(text, legal)
        if self.record is not None:
            self.record.add(agent, self.occurrence.get(agent, 0), text, legal)
        return None, digest

    def step_generated(self, agent: str, turn: Turn, action: Any, plain: bool, digest: str, legal: list[str],
                       record_state: str | None, follow: bool) -> None:
        if agent in self.watch:            # a branch point: the env as the agent is about to act
            self.snapshots.append((len(self.turns), agent, self.env.clone(), dict(self.rewards)))
        record = self.record
        if record is not None and not plain:
            record.plain = False
        given = self.record_and_step(agent, turn, action, digest, legal, record_state)
        if record is not None:
            record.credited.append(given)

    def finish(self) -> None:
        super().finish()
        env = self.env
        self.final_infos = json_safe({a: env.infos[a] for a in env.agents if a in env.infos})


class Decision(NamedTuple):
    """One pending decision of a tick."""

    job: Job
    agent: str
    request: Request | None         # None: a branch replays the recorded turn ``rec``, or plays a forced move
    digest: str                     # Turn.obs_digest (runs with branches)
    rec: Turn | None
    legal: tuple[str, ...]          # the legal moves computed for it
