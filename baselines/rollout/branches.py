"""Counterfactual branches of the rollout engine's main episodes (:class:`BranchSpec`), and how they are played:
:class:`BranchJob`, the replay of recorded decisions, following the main episode and shadowing a sibling.
:class:`~baselines.rollout.engine.RolloutEngine` plays the branch jobs in one batched pass after the main episodes.

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
record instead of playing them, exactly what playing them writes (``tests/equivalence/test_branch_follow.py``). Likewise a
resample branch that drew the same action as an earlier sibling shadows it while the sibling's decisions replay, and
plays on by itself (from a clone of the sibling's env) only from the first decision its policy makes anew.
Branch tokens are counted apart (``Episode.branch_tokens_generated``) so each credit method's cost is visible.
Rewards that ``ablate`` hands out itself (the null move ends the episode: think_solve's solver, the last voter) are
part of the branch: ``Branch.rewards`` agrees with ``Branch.team_rewards``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from baselines.episode import Branch, Episode, Turn, json_safe
from baselines.rollout.job import ENDED, PLAIN, TOOK, Decision, Job, MainJob, Record, obs_digest
from marl_llm_envs import spec

__all__ = ["BRANCH_KINDS", "BranchJob", "BranchSpec", "add_branches", "branch_jobs", "force_moves"]

BRANCH_KINDS = ("ablate", "resample", "force")
_NO_MOVE = object()      # BranchJob.forced when no move is forced


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
    try:
        return set(spec(env_id).roles.values())
    except KeyError:
        return set()


def replayed_turn(rec: Turn, agent: str, role: str, team: str, invalid: bool = False, invalid_reason: str | None = None,
                  reward: float = 0.0, turn_index: int = 0, step_index: int = 0, obs_digest: str = "",
                  legal_actions: Sequence[str] = (), state: list[float] | None = None) -> Turn:
    """The turn a branch writes for a decision that reuses the recorded turn ``rec`` (its generation copied,
    ``replayed=True``), with the given fields of the branch's own."""
    action = rec.action
    return Turn(agent, role, team, list(rec.prompt_ids), list(rec.completion_ids), list(rec.logprobs), rec.text,
                action if type(action) in PLAIN else json_safe(action), invalid, invalid_reason, reward, turn_index,
                step_index, obs_digest, list(legal_actions), True, dict(rec.extra),
                None if state is None else list(state), rec.choice)


def force_moves(env, agent: str, recorded: Turn) -> list[Any]:
    """The moves a force branch plays at ``agent``'s decision in ``env``: in discrete mode the action ids its
    mask allows, in order; in text mode the legal moves; on a free-text turn (no legal moves) the recorded one."""
    if getattr(env, "action_mode", "text") == "discrete":
        return [int(i) for i in np.flatnonzero(env.action_mask(agent))]
    return list(env.legal_actions(agent)) or [recorded.action]


class BranchJob(Job):
    """One branch being played: from a clone of its main job's env at the branch point, with the main episode's
    :class:`~baselines.rollout.job.Record` to replay (``replay_others``) and what only a branch needs: the move it
    forces, the resample siblings it may shadow, and how far it follows the main episode."""

    def __init__(self, main: MainJob, env, branch: Branch, kind_id: int, rewards_before: dict[str, float],
                 replay: bool, start_rewards: dict[str, float] | None = None, stream: int = 0,
                 draw: int | None = None) -> None:
        record = main.record
        i = branch.turn_index
        draw = branch.sample_index if draw is None else draw
        key = (*main.key, kind_id, i, draw) + ((stream,) if stream else ())
        super().__init__(env, key, step_index=record.turns[i].step_index, digest=True)
        self.branch = branch               # the Branch being played
        self.source: Record | None = record if replay else None   # the main episode's record (None: nothing replays)
        self.source_env = main.env         # the main episode's env (at its end by then)
        if replay:
            self.occurrence = record.occurrences_before(i)
        self.base_rewards = dict(rewards_before)          # the returns at the branch point
        self.start_rewards = dict(start_rewards or {})    # handed out before the first step (by ablate)
        self.force_first = branch.kind == "resample"      # the first decision is sampled anew
        self.forced: Any = _NO_MOVE        # force: the move its first decision plays (then _NO_MOVE)
        self.follows = -1                  # >= 0: the decisions left of a branch known to follow the main episode
        self.siblings: list[BranchJob] = []   # resample: the K jobs of its branch point, in sample order
        self.first_action: tuple[type, Any] | None = None   # resample: the plain action its first decision drew
        self.leader: BranchJob | None = None  # a sibling that drew the same action and that this job shadows for now
        self.tick = -1                     # the last tick this job gathered a decision in
        self.replaying = False             # ... and whether that decision replayed a recorded one

    def start(self, tick: int) -> None:
        super().start(tick)
        if self.start_rewards:
            self.add_rewards(tuple(self.start_rewards.items()))

    def advance(self, tick: int) -> int:
        if self.follows > 0:      # a decision of the main episode's, taken over already (see follow)
            self.follows -= 1
            return TOOK
        if self.leader is not None:
            if self.shadow(tick):
                return TOOK
            if self.finished:
                return ENDED
        if self.follows == 0:
            self.finish()
            return ENDED
        return super().advance(tick)

    def forced_decision(self, agent: str) -> Decision | None:
        if self.forced is _NO_MOVE:
            return None
        if agent != self.branch.agent:          # a force branch's first decision: no observation, no policy
            raise RuntimeError(f"{self.env.env_id}: a force branch of {self.branch.agent} found {agent} to move")
        return Decision(self, agent, None, "", None, tuple(self.env.legal_actions(agent)))

    def match(self, agent: str, text: str, legal: tuple[str, ...]) -> tuple[Turn | None, str]:
        """The recorded turn this branch reuses for ``agent``'s decision now (see
        :class:`~baselines.rollout.job.Record`), or ``None``, and the decision's digest."""
        if self.source is None or self.force_first:
            return None, obs_digest(text, legal)
        return self.source.match(agent, self.occurrence.get(agent, 0), text, legal)

    def gathered(self, tick: int, replaying: bool) -> None:
        self.tick, self.replaying = tick, replaying

    def step_replayed(self, agent: str, digest: str, rec: Turn, legal: tuple[str, ...],
                      record_state: str | None) -> None:
        """A decision that replays the main episode's recorded turn ``rec``."""
        env = self.env
        turn = replayed_turn(rec, agent, env.roles[agent], env.teams[agent])
        self.record_and_step(agent, turn, rec.action, digest, list(legal), record_state)

    def step_forced(self, agent: str, legal: tuple[str, ...], record_state: str | None) -> None:
        """A force branch's first decision: its forced move, recorded as a turn with no tokens."""
        env = self.env
        action, self.forced = self.forced, _NO_MOVE
        turn = Turn(agent, env.roles[agent], env.teams[agent], [], [], [], str(action),
                    action if type(action) in PLAIN else json_safe(action), extra={"forced": True})
        self.record_and_step(agent, turn, action, "", list(legal), record_state)

    def step_generated(self, agent: str, turn: Turn, action: Any, plain: bool, digest: str, legal: list[str],
                       record_state: str | None, follow: bool) -> None:
        """A decision its policy made; a resample branch's first one may make it follow the main episode (it drew
        the recorded action) or shadow an earlier sibling (it drew that sibling's action)."""
        first, self.force_first = self.force_first, False
        self.record_and_step(agent, turn, action, digest, legal, record_state)
        if first and follow and self.source is not None and self.source.plain and plain:
            rec = self.source.turns[self.branch.turn_index]
            if type(rec.action) is type(action) and rec.action == action:
                self.follow()
                return
            self.first_action = (type(action), action)
            for other in self.siblings:      # an earlier sibling, played, that drew the same action in the same tick
                if other is self:
                    break
                if (other.first_action == self.first_action and other.leader is None and other.follows < 0
                        and other.start_tick == self.start_tick):
                    self.leader = other
                    break

    def follow(self) -> None:
        """A resample branch whose new action is the recorded one: from here it is the main episode again. The env
        is a clone that took the same action from the same state (envs draw chance from their own RNG, so a clone
        given the same actions plays the same episode, ``clone()``'s contract), so every later decision sees what it
        saw in the main episode and replays its recorded action; the rest of the branch is taken from the record,
        turn for turn what playing it would have written, without stepping the env. The job still takes one tick
        per decision (``follows``), so the batches of every other job's ticks, and their seeds, are unchanged."""
        source = self.source
        start = self.branch.turn_index + 1
        for rec, given in zip(source.turns[start:], source.credited[start:]):
            turn = replayed_turn(rec, rec.agent, rec.role, rec.team, rec.invalid, rec.invalid_reason,
                                 self.before_first.pop(rec.agent, 0.0), len(self.turns), rec.step_index,
                                 rec.obs_digest, rec.legal_actions, rec.state)
            self.turns.append(turn)
            self.last_turn[rec.agent] = turn
            self.add_rewards(given)
        self.follows = len(source.turns) - start

    def shadow(self, tick: int) -> bool:
        """A resample branch that drew the same action as an earlier sibling (its leader) from the same state is in
        the same state after it, and stays in its leader's state while the leader's decisions replay recorded ones
        (a replay depends only on the observation and the agent's count of decisions, which the two share): it
        shadows the leader instead of playing the same steps. Return ``True`` while it shadows (this tick: the
        leader replayed); when the leader ended, this job ends as a copy of it; when the leader's decision is a new
        one (its sample depends on the job's key), this job takes over a clone of the leader's state and plays on by
        itself from this decision. Jobs are gathered in order and a leader comes first, so at this point the
        leader has gathered this tick's decision (the env not yet stepped)."""
        leader = self.leader
        if leader.finished:
            self.take_over(leader)
            self.env = leader.env            # the leader's env at the end: the same episode's team rewards, transcript
            self.leader = None
            self.finish()
            return False
        if leader.tick == tick and leader.replaying:
            return True
        self.take_over(leader)
        self.env = leader.env.clone()
        self.leader = None
        return False

    def take_over(self, leader: BranchJob) -> None:
        """Make this job's record its leader's: its own first turn (the leader's reward on it), then copies of the
        leader's later turns (all replays), its returns and counters."""
        first = self.turns[0]
        first.reward = leader.turns[0].reward
        copies = [first] + [replayed_turn(t, t.agent, t.role, t.team, t.invalid, t.invalid_reason, t.reward,
                                          t.turn_index, t.step_index, t.obs_digest, t.legal_actions, t.state)
                            for t in leader.turns[1:]]
        mine = {id(t): c for t, c in zip(leader.turns, copies)}
        self.turns = copies
        self.last_turn = {a: mine[id(t)] for a, t in leader.last_turn.items()}
        self.rewards = dict(leader.rewards)
        self.before_first = dict(leader.before_first)
        self.occurrence = dict(leader.occurrence)
        self.step_index = leader.step_index

    def to_branch(self, episode: Episode) -> Branch:
        """The played (or followed) branch as a :class:`Branch` of ``episode``."""
        b = self.branch
        b.turns = self.turns
        b.tokens_generated = self.tokens
        # A branch that followed the main episode ended where it ended (see follows).
        followed = self.follows >= 0
        env = self.source_env if followed else self.env
        b.team_rewards = dict(episode.team_rewards) if followed else \
            {k: float(v) for k, v in env.team_rewards().items()}
        b.rewards = {a: self.base_rewards.get(a, 0.0) + self.rewards.get(a, 0.0) for a in env.possible_agents}
        b.transcript = json_safe(episode.transcript if followed else env.transcript())
        b.wall_time_s = self.wall
        return b


def jobs_at(spec_: BranchSpec, main: MainJob, turn_index: int, agent: str, clone,
            rewards_before: dict[str, float]) -> list[BranchJob]:
    """The branch jobs ``spec_`` asks for at one branch point of ``main`` (``clone``: its env just before ``agent``
    acts at turn ``turn_index``; ``rewards_before``: the returns then)."""
    if spec_.kind == "ablate":
        before = {a: float(r) for a, r in clone.rewards.items()}
        env = clone.ablate(agent)
        # What ablate() handed out itself (its null move may end the episode) belongs to the branch.
        handed = {a: float(r) - before.get(a, 0.0) for a, r in env.rewards.items()}
        return [BranchJob(main, env, Branch("ablate", agent, turn_index, 0), 1, rewards_before,
                          spec_.replay_others, start_rewards=handed, stream=spec_.stream)]
    if spec_.kind == "force":
        jobs = []
        for j, move in enumerate(force_moves(clone, agent, main.turns[turn_index])):
            for m in range(spec_.k):
                new = BranchJob(main, clone.clone(), Branch("force", agent, turn_index, j * spec_.k + m), 3,
                                rewards_before, spec_.replay_others, stream=spec_.stream, draw=m)
                new.forced = move
                jobs.append(new)
        return jobs
    siblings = [BranchJob(main, clone.clone(), Branch("resample", agent, turn_index, s), 2, rewards_before,
                          spec_.replay_others, stream=spec_.stream) for s in range(spec_.k)]
    for sibling in siblings:
        sibling.siblings = siblings
    return siblings


def branch_jobs(episodes: list[Episode], mains: list[MainJob],
                specs: list[BranchSpec]) -> list[tuple[Episode, BranchJob]]:
    """Every branch job of the played main episodes, with the episode it belongs to: per episode, per spec, per
    branch point of an agent the spec names (in that episode), in turn order."""
    out: list[tuple[Episode, BranchJob]] = []
    for episode, main in zip(episodes, mains):
        for spec_ in specs:
            agents = set(spec_.agents(main.env, present={t.agent for t in episode.turns}))
            for turn_index, agent, clone, rewards_before in main.snapshots:
                if agent in agents:
                    out.extend((episode, new) for new in jobs_at(spec_, main, turn_index, agent, clone, rewards_before))
    return out


def add_branches(played: list[tuple[Episode, BranchJob]]) -> None:
    """Append each played branch job's :class:`Branch` to its episode and count its tokens there."""
    for episode, bj in played:
        episode.branches.append(bj.to_branch(episode))
        episode.branch_tokens_generated += bj.tokens
        bj.siblings, bj.leader = [], None   # the siblings' list holds each of them: reference cycles, which
        #   only a full collection freed (with their env clones, turns and records: 55,000 objects a coma
        #   step on mini_hanabi-v1, 15% of its CPU time in the trainer's collection)
