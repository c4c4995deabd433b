"""Credit fidelity: how well a credit method's advantages track the true advantage of each turn, at a fixed policy.

The ground truth. For a decision turn of agent ``a`` at history ``h`` with taken move ``a_t``,

    A*(h, a_t) = Q(h, a_t) - sum_b pi(b | h) Q(h, b),

where ``Q(h, b)`` is the expected return of the acting agent (``Episode.rewards[agent]``: the team reward for a team
member, its own payoff in a zero-sum game) when the env is cloned at that turn, move ``b`` is forced, and every agent
(the acting one included) continues with its policy. ``pi(b | h)`` is the policy's probability of ``b`` at that
decision, read from the turn's :class:`~baselines.policies.base.Choice` (an MLP's recorded inputs scored again, an
LLM choice mode's or a bot's ``probs``).

**A* is taken on the env's full state, not on what the agent observes.** The clone holds everything: the hidden
card, the other voters' clues, the env's RNG (so the chance events still to come, e.g. team_umbrella's distractor
rewards, are those of the episode). ``Q(h, b)`` is therefore the credit the move actually earned in this episode,
given everything that was already decided, and not the expectation over the states the agent could not tell apart
from its observation. A credit method that conditions on less (its own observation, a group of episodes) can only
approximate it; that gap is what fidelity measures.

How ``Q`` is estimated (:func:`ground_truth`):

* Discrete or choice-mode turns: the rollout engine's ``force`` branches (:class:`~baselines.rollout.BranchSpec`
  ``("force", role, k=M, replay_others=False)``): for every legal ``b``, ``M`` continuations from a clone with ``b``
  forced, every later decision a new draw of its policy; ``Q(h, b)`` is their mean return.
* Where the rest of the episode after ``b`` is one decision or none, the expectation is exact instead
  (:func:`exact_q`): none: the return after ``b`` (the clone is deterministic given the moves); one: ``sum_c pi(c |
  h_b) R(b, c)`` over the last decision's legal moves, each played on a clone. This needs the policy of the last
  decision to report its distribution (an MLP, an LLM in choice mode, the random policy); a scripted bot's turn is
  sampled instead.
* Free-text turns (no legal moves to enumerate): ``Q(h, a_t)`` from ``M`` continuations with the recorded text
  forced, and ``V(h) = sum_b pi(b | h) Q(h, b)`` from ``M`` resampled alternatives (``resample`` branches with
  ``replay_others=False``).

Reliability. The ``M`` continuations are split into two halves (even and odd), each half gives its own ``A*``, and
the Spearman-Brown reliability of the full estimate is ``2 r / (1 + r)``, ``r`` the correlation of the halves over
turns (exact turns agree exactly). A method's correlation with the estimated ``A*`` is attenuated by the estimate's
noise; :func:`fidelity` reports the raw figure and the disattenuated one ``r / sqrt(reliability)``.

Metrics (:func:`metrics`), per method, over the turns of the roles that are trained:

* fidelity: the Pearson correlation of the method's advantages with ``A*``, with a cluster-bootstrap interval
  (clusters: the task groups, the GRPO groups of a training batch, resampled whole);
* sign agreement: the fraction of turns with ``|A*|`` clearly non-zero (beyond 3 noise standard deviations of the
  estimate) where the method's advantage has the same sign;
* false credit: where ``A*`` is 0 by construction (:func:`null_turns`: free riding's idle seats, team umbrella's
  distractor moves), ``E|A_method|`` on those turns divided by ``E|A_method|`` on the deciding turns;
* gradient quality (MLP policies): the cosine between the batch policy gradient ``sum_t A_t grad log pi(a_t|h_t)``
  and the all-action reference ``sum_t sum_b pi(b|h_t) A*(h_t, b) grad log pi(b|h_t)`` (:func:`gradient_cosine`),
  one value per training batch;
* cost: the method's branches and branch decisions per episode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from baselines.episode import Episode, Turn
from baselines.policies.base import Policy, choice_probs, request_for
from baselines.rollout import BranchSpec
from baselines.rollout.branches import force_moves
from marl_llm_envs import replay, spec

__all__ = ["TurnTruth", "Truth", "move_probs", "exact_q", "ground_truth", "truth_branches", "null_turns",
           "readable_roles", "reliability", "noise_sd", "pearson", "cluster_bootstrap", "fidelity", "sign_agreement",
           "false_credit", "gradient_cosine",
           "branch_cost", "turn_values", "TRUTH_STREAM"]

TRUTH_STREAM = 1     # the ground truth's branches sample with keys of their own (BranchSpec.stream)


@dataclass
class TurnTruth:
    """``A*`` of one decision turn: ``moves`` its legal moves (in the order of ``probs``), ``q`` and the two halves'
    ``q`` per move (equal where ``exact``), ``taken`` the index of the move played."""

    episode: int
    turn: int
    agent: str
    role: str
    moves: list[Any]
    probs: np.ndarray
    q: np.ndarray
    q_halves: tuple[np.ndarray, np.ndarray]
    taken: int
    exact: bool
    value: float | None = None          # free-text turns: V(h) from resampled alternatives (q then has one entry)
    value_halves: tuple[float, float] | None = None

    @property
    def advantage(self) -> float:
        return float(self.q[self.taken] - self._v(self.q, self.value))

    def advantages(self) -> np.ndarray:
        """``A*(h, b)`` of every legal move ``b`` (the all-action reference gradient's weights)."""
        return self.q - self._v(self.q, self.value)

    def half_advantages(self) -> tuple[float, float]:
        vh = self.value_halves or (None, None)
        return tuple(float(q[self.taken] - self._v(q, v)) for q, v in zip(self.q_halves, vh))   # type: ignore

    def _v(self, q: np.ndarray, value: float | None) -> float:
        return float(value) if value is not None else float(self.probs @ q)


@dataclass
class Truth:
    """The ground truth of a batch: per episode, per turn, a :class:`TurnTruth` or ``None`` (a turn of a role that
    is not measured, e.g. a scripted partner's)."""

    turns: list[list[TurnTruth | None]]
    continuations: int
    exact_turns: int = 0
    branch_decisions: int = 0
    notes: list[str] = field(default_factory=list)

    def measured(self) -> list[TurnTruth]:
        return [t for row in self.turns for t in row if t is not None]


# ---------------------------------------------------------------------- pi(b | h)
def move_probs(policy: Policy | None, turn: Turn) -> np.ndarray:
    """``pi(b | h)`` over the turn's legal moves, in order (discrete mode: the action ids its mask allows; choice
    mode: ``Turn.legal_actions``), from what the policy recorded on the turn (:func:`~baselines.policies.base.
    choice_probs`: an MLP's :class:`VectorInputs` scored again by ``policy``, an :class:`~baselines.policies.mlp.
    MLPPolicy`; or the ``probs`` of an LLM choice mode or a bot), normalized. Raises ``ValueError`` when the turn
    records no distribution (a free-text turn, a scripted bot)."""
    choice = turn.choice
    if choice is None:
        raise ValueError(f"turn {turn.turn_index} of {turn.agent} records no move distribution (a free-text turn "
                         "or a scripted policy): pi(b|h) cannot be read from it")
    if choice.scoring == "mlp" and (policy is None or not hasattr(policy, "log_policy")):
        raise ValueError(f"turn {turn.turn_index} of {turn.agent} was played by an MLP; pass its MLPPolicy to "
                         "read pi(b|h)")
    p = choice_probs(policy, choice)
    if p is None:
        raise ValueError(f"turn {turn.turn_index} of {turn.agent} ({choice.scoring}) records no probabilities")
    return p / p.sum()


def readable_roles(episodes: Sequence[Episode], policies: Mapping[str, Policy],
                   among: Sequence[str] | None = None) -> list[str]:
    """The roles (of ``among``, or all) every turn of which records a distribution :func:`move_probs` can read
    with ``policies`` (an MLP's with its policy given; a choice mode's or a bot's ``probs``)."""
    ok: dict[str, bool] = {}
    for e in episodes:
        for t in e.turns:
            c = t.choice
            readable = c is not None and ((c.scoring == "mlp" and hasattr(policies.get(t.role), "log_policy"))
                                          or bool(c.probs))
            ok[t.role] = ok.get(t.role, True) and readable
    return [r for r, fine in ok.items() if fine and (among is None or r in among)]


def _generation_probs(policy: Policy, env, agent: str, memo: dict | None = None
                      ) -> tuple[list[Any], np.ndarray] | None:
    """The legal moves of ``agent`` in ``env`` and the policy's distribution over them, or ``None`` when the policy
    does not report one (a scripted bot, free text). ``memo``: answers of earlier calls, reused for a policy that
    reads only the prompt and the legal moves (an LLM in choice mode; a GRPO group's episodes meet the same last
    decision after the same forced move, and one LLM call answers them all)."""
    request = request_for(env, agent, policy.observes)
    key = None
    if memo is not None and set(policy.observes) <= {"text", "legal_actions"}:
        key = (id(policy), request.env_id, request.role, request.text, request.legal_actions)
        if key in memo:
            return memo[key]
    gen = policy.generate([request], seed=0)[0]
    found = None
    if gen.choice is not None and (gen.choice.scoring == "mlp" or gen.choice.probs):
        turn = Turn(agent, request.role, "", choice=gen.choice)
        probs = move_probs(policy, turn)
        moves = force_moves(env, agent, turn)
        found = (moves, probs) if len(moves) == len(probs) else None
    if key is not None:
        memo[key] = found
    return found


def _step_on(env, action: Any, agent: str) -> float:
    """Step ``action``, then every terminated agent's ``None`` (as the rollout engine does); the reward ``agent``
    got from those steps."""
    got = 0.0
    env.step(action)
    got += float(env.rewards.get(agent, 0.0))
    while not env.done and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        env.step(None)
        got += float(env.rewards.get(agent, 0.0))
    return got


def exact_q(env, agent: str, moves: Sequence[Any], policies: Mapping[str, Policy],
            memo: dict | None = None) -> np.ndarray | None:
    """``Q(h, b)`` for every move in ``moves`` by exact enumeration, from ``env`` at ``agent``'s decision (the full
    state: a clone of it is played for every move): the return ``agent`` gets after ``h`` (what it got before is
    the same for every ``b`` and cancels in ``A*``). Exact when the rest of the episode after ``b`` is one decision
    or none and that decision's policy (``policies[role]``) reports its distribution; otherwise ``None`` (sample
    instead). ``memo``: a dict kept across calls on the same policies, to reuse the last decision's distribution
    where its prompt repeats (:func:`_generation_probs`)."""
    out = []
    for b in moves:
        after = env.clone()
        got = _step_on(after, b, agent)
        if after.done:
            out.append(got)
            continue
        nxt = after.agent_selection
        policy = policies.get(after.roles[nxt])
        dist = _generation_probs(policy, after, nxt, memo) if policy is not None else None
        if dist is None:
            return None
        total = 0.0
        for c, p in zip(*dist):
            last = after.clone()
            r = _step_on(last, c, agent)
            if not last.done:
                return None
            total += p * r
        out.append(got + total)
    return np.asarray(out, dtype=np.float64)


# ---------------------------------------------------------------------- the ground truth
def truth_branches(roles: Sequence[str], continuations: int, free_text: bool = False) -> list[BranchSpec]:
    """The branches :func:`ground_truth` needs: ``force`` (and, for free-text turns, ``resample``) for every role,
    ``continuations`` each, every later decision a new draw of its policy, on the ground truth's own sampling keys."""
    specs = [BranchSpec("force", r, k=continuations, replay_others=False, stream=TRUTH_STREAM) for r in roles]
    if free_text:
        specs += [BranchSpec("resample", r, k=continuations, replay_others=False, stream=TRUTH_STREAM)
                  for r in roles]
    return specs


def _state_at(episode: Episode, turn: Turn):
    """The env at ``turn``'s decision, rebuilt from the episode's transcript (its full state, RNG included)."""
    tr = dict(episode.transcript)
    tr["actions"] = list(tr["actions"])[:turn.step_index]
    return replay(tr)


def ground_truth(episodes: Sequence[Episode], policies: Mapping[str, Policy], roles: Sequence[str],
                 continuations: int, exact: bool = True) -> Truth:
    """``A*`` of every turn of ``roles`` in ``episodes``, which were played with :func:`truth_branches` (same
    ``continuations``); ``policies`` maps every role to the policy that played it (pi of the measured turns, and of
    a last decision enumerated exactly). ``exact``: use exact expectations where the rest of the episode after the
    turn is one decision or none (:func:`exact_q`)."""
    if continuations < 2:
        raise ValueError(f"continuations must be >= 2 (the reliability splits them in halves), got {continuations}")
    roles = set(roles)
    rows: list[list[TurnTruth | None]] = []
    n_exact = decisions = 0
    memo: dict = {}         # a last decision's distribution by its prompt (exact_q), for this call's policies
    for i, e in enumerate(episodes):
        by_turn: dict[int, list] = {}
        resampled: dict[int, list] = {}
        for b in e.branches:
            if b.kind == "force":
                by_turn.setdefault(b.turn_index, []).append(b)
            elif b.kind == "resample":
                resampled.setdefault(b.turn_index, []).append(b)
            decisions += sum(1 for t in b.turns if not t.replayed)
        row: list[TurnTruth | None] = []
        for k, t in enumerate(e.turns):
            if t.role not in roles:
                row.append(None)
                continue
            found = by_turn.get(k)
            if not found:
                raise ValueError(f"episode {i} ({e.env_id}, seed {e.seed}) has no force branch at turn {k} "
                                 f"({t.agent}): play it with truth_branches()")
            row.append(_turn_truth(e, i, k, t, found, resampled.get(k, []), policies, continuations, exact, memo))
            n_exact += row[-1].exact
        rows.append(row)
    return Truth(rows, continuations, n_exact, decisions)


def _turn_truth(e: Episode, i: int, k: int, t: Turn, found, resampled, policies, m: int, exact: bool,
                memo: dict) -> TurnTruth:
    found = sorted(found, key=lambda b: b.sample_index)
    n_moves = len(found) // m
    moves = [found[j * m].turns[0].action for j in range(n_moves)]
    q_samples = np.zeros((n_moves, m))
    for b in found:
        q_samples[b.sample_index // m, b.sample_index % m] = float(b.rewards[t.agent])
    free_text = t.choice is None and not t.legal_actions
    if free_text:
        vals = np.asarray([float(b.rewards[t.agent]) for b in sorted(resampled, key=lambda b: b.sample_index)])
        if vals.size < 2:
            raise ValueError(f"episode {i}, turn {k} ({t.agent}): a free-text turn needs resample branches for V(h)")
        q = q_samples.mean(1)
        return TurnTruth(i, k, t.agent, t.role, moves, np.ones(1), q, (q_samples[:, ::2].mean(1),
                         q_samples[:, 1::2].mean(1)), 0, False, float(vals.mean()),
                         (float(vals[::2].mean()), float(vals[1::2].mean())))
    probs = move_probs(policies.get(t.role), t)
    if len(probs) != n_moves:
        raise ValueError(f"episode {i}, turn {k} ({t.agent}): {n_moves} forced moves but pi has {len(probs)} entries")
    taken = _index_of(moves, t.action)
    if exact and len(e.turns) - k - 1 <= 1:
        q = exact_q(_state_at(e, t), t.agent, moves, policies, memo)
        if q is not None:
            return TurnTruth(i, k, t.agent, t.role, moves, probs, q, (q, q), taken, True)
    return TurnTruth(i, k, t.agent, t.role, moves, probs, q_samples.mean(1),
                     (q_samples[:, ::2].mean(1), q_samples[:, 1::2].mean(1)), taken, False)


def _index_of(moves: list[Any], action: Any) -> int:
    for j, b in enumerate(moves):
        if b == action:
            return j
    raise ValueError(f"the recorded move {action!r} is not among the forced moves {moves}")


# ---------------------------------------------------------------------- turns that cannot matter
def null_turns(env_id: str, episode: Episode) -> tuple[list[bool], list[bool]]:
    """Per turn of ``episode``: whether its ``A*`` is 0 by construction, and whether it is a deciding turn.

    Read from the env's flags (:class:`marl_llm_envs.EnvSpec`): ``idle_roles`` (free_riding-v0: the idle seats' moves
    change nothing, null; the other seats' turns are deciding), ``first_move_decides`` (team_umbrella-v0: only
    player_0's first move, the umbrella, matters; every other move is a distractor, null). Other envs: no turn is
    declared null."""
    turns = episode.turns
    flags = spec(env_id)
    if flags.idle_roles:
        return [t.role in flags.idle_roles for t in turns], [t.role not in flags.idle_roles for t in turns]
    if flags.first_move_decides:
        first = next((k for k, t in enumerate(turns) if t.agent == flags.first_move_decides), -1)
        return [k != first for k in range(len(turns))], [k == first for k in range(len(turns))]
    return [False] * len(turns), [False] * len(turns)


# ---------------------------------------------------------------------- metrics
def turn_values(advantages: Sequence[Sequence[Any]], truth: Truth) -> np.ndarray:
    """A method's advantage of every measured turn, in :meth:`Truth.measured` order (a per-token method's first
    token value: a choice-mode or MLP turn is scored as one unit)."""
    out = []
    for row, trow in zip(advantages, truth.turns):
        for a, t in zip(row, trow):
            if t is not None:
                out.append(float(a[0]) if isinstance(a, (list, tuple)) else float(a))
    return np.asarray(out, dtype=np.float64)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """The Pearson correlation; 0.0 where either side is constant (no linear information)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    xc, yc = x - x.mean(), y - y.mean()
    d = math.sqrt(float(xc @ xc) * float(yc @ yc))
    return float(xc @ yc) / d if d > 0 else 0.0


def _sums(x: np.ndarray, y: np.ndarray, clusters: np.ndarray, n_clusters: int) -> np.ndarray:
    """Per cluster: n, sum x, sum y, sum x^2, sum y^2, sum xy."""
    cols = [np.ones_like(x), x, y, x * x, y * y, x * y]
    return np.stack([np.bincount(clusters, weights=c, minlength=n_clusters) for c in cols], axis=1)


def _corr_from(s: np.ndarray) -> np.ndarray:
    n, sx, sy, sxx, syy, sxy = (s[..., j] for j in range(6))
    cov = sxy - sx * sy / n
    vx, vy = sxx - sx * sx / n, syy - sy * sy / n
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / np.sqrt(vx * vy)
    return np.where((vx > 1e-300) & (vy > 1e-300), r, 0.0)


def cluster_bootstrap(xs: Sequence[np.ndarray], y: np.ndarray, clusters: np.ndarray, reps: int = 2000,
                      seed: int = 0) -> np.ndarray:
    """Bootstrap replicates of ``pearson(x, y)`` for each ``x`` in ``xs``, resampling whole clusters with
    replacement (the same draws for every ``x``, so differences are paired): an array ``(reps, len(xs))``.
    ``clusters``: a cluster id per turn (0..C-1)."""
    clusters = np.asarray(clusters)
    _, clusters = np.unique(clusters, return_inverse=True)
    c = int(clusters.max()) + 1
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(c, np.full(c, 1.0 / c), size=reps).astype(np.float64)    # (reps, C)
    out = np.empty((reps, len(xs)))
    for j, x in enumerate(xs):
        s = _sums(np.asarray(x, np.float64), np.asarray(y, np.float64), clusters, c)   # (C, 6)
        out[:, j] = _corr_from(counts @ s)
    return out


def fidelity(x: np.ndarray, y: np.ndarray, clusters: np.ndarray, reliability: float, reps: int = 2000,
             seed: int = 0) -> dict[str, float]:
    """The fidelity of advantages ``x`` to ``A*`` = ``y``: Pearson ``r``, its 95% cluster-bootstrap interval, and
    ``r / sqrt(reliability)`` (disattenuated for the noise of the estimated ``A*``)."""
    r = pearson(x, y)
    boot = cluster_bootstrap([x], y, clusters, reps, seed)[:, 0]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    dis = r / math.sqrt(reliability) if reliability > 0 else float("nan")
    return {"r": r, "low": float(lo), "high": float(hi), "disattenuated": dis}


def reliability(h1: np.ndarray, h2: np.ndarray) -> float:
    """Spearman-Brown reliability ``2 r / (1 + r)`` of ``A*`` from the correlation ``r`` of its two halves'
    estimates (:meth:`TurnTruth.half_advantages`) over turns."""
    if len(h1) < 3:
        return float("nan")
    r = pearson(h1, h2)
    return 2 * r / (1 + r) if r > -1 else float("nan")


def noise_sd(h1: np.ndarray, h2: np.ndarray) -> float:
    """The standard deviation of a turn's ``A*`` estimate, pooled over turns from its halves: ``sqrt(E(A1 - A2)^2
    / 4)`` (the full estimate is their mean)."""
    if not len(h1):
        return 0.0
    d = np.asarray(h1) - np.asarray(h2)
    return float(math.sqrt(float(np.mean(d * d)) / 4))


def sign_agreement(x: np.ndarray, y: np.ndarray, threshold: float) -> tuple[float, int]:
    """The fraction of turns with ``|y| > threshold`` where ``x`` has the sign of ``y`` (0 counts as wrong), and
    how many turns that is."""
    keep = np.abs(y) > threshold
    n = int(keep.sum())
    if not n:
        return float("nan"), 0
    return float(np.mean(np.sign(x[keep]) == np.sign(y[keep]))), n


def false_credit(x: np.ndarray, null: np.ndarray, deciding: np.ndarray) -> float:
    """``E|x|`` on the null turns divided by ``E|x|`` on the deciding turns (nan where either has none, or the
    deciding turns get no credit at all)."""
    if not null.any() or not deciding.any():
        return float("nan")
    d = float(np.mean(np.abs(x[deciding])))
    return float(np.mean(np.abs(x[null]))) / d if d > 0 else float("nan")


def gradient_cosine(policies: Mapping[str, Policy], episodes: Sequence[Episode], truth: Truth,
                    values: np.ndarray) -> float:
    """The cosine between a method's batch policy gradient ``sum_t A_t grad log pi(a_t|h_t)`` (``values``: its
    advantages of the measured turns) and the all-action reference ``sum_t sum_b pi(b|h_t) A*(h_t, b) grad log
    pi(b|h_t)``, over the parameters of the MLP policies that played the measured turns. nan where no measured
    turn was played by an MLP or either gradient is 0."""
    import torch  # lazy: torch, seconds to import

    rows: dict[int, tuple[Any, list]] = {}
    for n, tt in enumerate(truth.measured()):
        policy = policies.get(tt.role)
        turn = episodes[tt.episode].turns[tt.turn]
        if policy is None or turn.choice is None or turn.choice.scoring != "mlp":
            continue
        rows.setdefault(id(policy), (policy, []))[1].append((n, tt, turn))
    g_method, g_ref = [], []
    for policy, items in rows.values():
        params = [p for p in policy.module.parameters()]
        logp, mask = policy.log_policy([turn.choice.inputs for _, _, turn in items])
        ids = [np.flatnonzero(mask[r].detach().cpu().numpy() > 0) for r in range(len(items))]
        taken = torch.tensor([int(ids[r][tt.taken]) for r, (_, tt, _) in enumerate(items)])
        a = torch.tensor([float(values[n]) for n, _, _ in items], dtype=logp.dtype)
        weights = torch.zeros_like(logp)
        for r, (_, tt, _) in enumerate(items):
            weights[r, torch.as_tensor(ids[r])] = torch.as_tensor(tt.probs * tt.advantages(), dtype=logp.dtype)
        method_obj = (a * logp.gather(1, taken[:, None])[:, 0]).sum()
        ref_obj = (weights * logp).sum()
        g_method += [g.flatten() for g in torch.autograd.grad(method_obj, params, retain_graph=True)]
        g_ref += [g.flatten() for g in torch.autograd.grad(ref_obj, params)]
    if not g_method:
        return float("nan")
    gm, gr = torch.cat(g_method), torch.cat(g_ref)
    d = float(gm.norm() * gr.norm())
    return float(gm @ gr) / d if d > 0 else float("nan")


def branch_cost(episodes: Sequence[Episode]) -> dict[str, float]:
    """A method's extra play per episode: its branches and their decisions (turns not replayed from the main
    episode: new policy draws and forced moves)."""
    n = max(1, len(episodes))
    return {"branches": sum(len(e.branches) for e in episodes) / n,
            "branch_decisions": sum(1 for e in episodes for b in e.branches for t in b.turns if not t.replayed) / n}
