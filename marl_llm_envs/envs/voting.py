"""Voting: N voters answer the same problem independently; the plurality answer is the team's (or, with
``reward_scheme="fraction"``, the team is scored on the fraction of right ballots).

| Import             | ``make("voting-v0")`` (AEC, voters in turn) or ``make_parallel("voting-v0")`` (all at once) |
|--------------------|-----------------------------------------------------------------------|
| Family             | orchestration (one team, ``team``)                                    |
| Agents             | ``voter_0`` ... ``voter_{n_voters-1}`` (role voter)                    |
| Action space       | text: ``Text``; discrete: ``Discrete(num_candidates + 1)`` = A, B, ..., abstain |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (F + 2 * num_candidates + n_voters,)), [action_mask])``, F = the task source's feature size |
| Reward range       | ``reward_scheme="binary"`` (= ``"plurality"``): {0, 1}; ``"signed"``: {-1, +1}; ``"fraction"``: {0, 1/n, ..., 1}; plus ``invalid_penalty`` per spoiled ballot |
| Kwargs             | ``n_voters=3`` (1..1024), ``tie_break="random"``, ``clue_accuracy="auto"``, ``tasks="arithmetic"``, ``split="train"``, ``reward_scheme="binary"`` (``"binary"``, ``"plurality"``, ``"signed"``, ``"fraction"``), ``num_candidates=4``, ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

The episode. One problem is drawn from ``tasks`` (as in think_solve-v0) with the env's RNG. Each voter sees the
problem and casts one ballot; no voter ever sees another's ballot (the AEC env asks them in turn, the parallel env at
once; the observations are the same). Then the ballots are counted.

The count. Ballots are grouped by answer (two answers are the same vote when they are the same number, e.g. "42",
"+42" and "42.0", or the same text up to case, spaces, ``$``/``\\boxed``/trailing period); abstentions and spoiled
ballots are not counted. The aggregate is the answer with the most votes; a tie between the top answers is broken by
``tie_break``: ``"random"`` (uniformly among the tied answers, with a draw fixed at reset from the env's RNG, so
every recount of the same episode breaks the tie the same way), ``"first"`` (the tied answer whose first ballot was
cast earliest, i.e. by the lowest-numbered voter) or ``"none"`` (a tie has no aggregate, which scores as wrong: the
"none-is-wrong" rule). No ballot at all: no aggregate, wrong.

Rewards. At the end, every voter gets the team reward, plus ``invalid_penalty`` for each spoiled ballot:

* ``reward_scheme="binary"`` (default) or its synonym ``"plurality"``: the verifier's score of the aggregate,
  ``1``/``0``; ``"signed"``: ``+1``/``-1``. Non-additive: only a pivotal ballot changes the reward.
* ``"fraction"``: the fraction of the ``n_voters`` voters whose own ballot is right, ``(1/n) * sum_i [ballot_i
  right]`` (abstentions and spoiled ballots count as not right). Additive: each voter's ballot moves the team reward
  by exactly ``1/n`` when right, so voter ``i``'s difference reward (Wolpert & Tumer 2002), ``G - G_{-i}``, is
  ``[ballot_i right] / n`` (plus its penalty if it spoiled its ballot). The aggregate is still counted and
  reported (``aggregate``, ``correct``) but does not enter the reward. The suite contrasts the two schemes as the
  team grows (``n_voters`` in {2, 4, 8, 16}).

Optimum and random play with clues (discrete mode, ``K = num_candidates``, clue accuracy ``a_i`` of voter ``i``).
``"fraction"``: the reward is a sum of per-voter terms, and term ``i`` depends only on ballot ``i``, whose voter
knows only its own clue ``C_i``; the true label is uniform and independent of everything else, so by Bayes' rule
``P(Y = C_i | C_i) = a_i`` and ``P(Y = y | C_i) = (1 - a_i) / (K - 1)`` for ``y != C_i``. Hence ``E[reward] <= (1/n)
sum_i max(a_i, (1 - a_i) / (K - 1))``, attained by voting one's clue when ``a_i >= 1/K`` (the reference
:func:`~marl_llm_envs.reference.voting.clue_follower`): 0.7 with the default clues, at every ``n``. Uniformly random
ballots (a label or abstain) are right with probability ``1 / (K + 1)`` each: 0.2. ``"plurality"``: random play and
the clue followers are measured (``spec("voting-v0").anchors``, rows ``"random, reward_scheme=S, n_voters=n"`` and
``"clue_follower, reward_scheme=S, n_voters=n"``); the clue followers' score rises with ``n`` (the Condorcet jury
effect), but no optimality is claimed for them under plurality (a team could, e.g., coordinate abstentions).

Text mode. A ballot is the content of the last ``\\boxed{...}`` in the reply; ``[abstain]`` (with no ``\\boxed``)
abstains; anything else is an invalid move.

Discrete mode. The problem comes with ``num_candidates`` labelled candidates (true answer and distractors,
shuffled); a ballot is a label, or ``abstain``. ``clue_accuracy`` gives voters a private clue, "your notes point to
(X)", that names the true label with that probability and a uniformly random wrong label otherwise (independently
per voter, from the env's RNG): a float for every voter, a list of floats (one per voter), ``None`` for no clue, or
``"auto"`` (default) = 0.7 for every voter in discrete mode and no clue in text mode. A clue is the voter's own
private information, shown only to that voter, in its text and its vector.

Observation. ``observation`` = task features (F), candidate values (num_candidates), own clue one-hot
(num_candidates; zeros without a clue), own voter index one-hot (n_voters). Nothing about other ballots and nothing
about the true answer.

Final infos (for leave-one-out credit with no extra generation). Every voter's info at the end has ``vote`` (its
own ballot or ``None``), ``own_correct`` (its ballot alone is right), ``aggregate``, ``correct``,
``team_reward_without`` (a dict voter -> the team reward had that voter abstained: its ballot and its spoiled-ballot
penalty, if any, removed, recounted with the same tie-break draw; under ``"fraction"`` the denominator stays
``n_voters``, so it is the team reward minus ``[own ballot right] / n`` and minus its penalty), ``ground_truth`` and
``task_id``.

Even ``n_voters``. Ties are possible at any size (e.g. 2 voters with different ballots, or 2-2 of 4); they are
broken by ``tie_break`` as above, at every size. The vector's voter index one-hot has ``n_voters`` entries, so the
vector size is ``F + 2 * num_candidates + n_voters`` (e.g. 66 + 8 + 16 = 90 for 16 voters on arithmetic).

Invalid moves. ``"penalty"`` (default): the ballot is spoiled (counted as an abstention) and ``invalid_penalty``
(default -1) is added to the team reward for each spoiled ballot. ``"retry"``: the voter is asked again up to
``max_retries`` times with the error in its prompt, then the penalty. ``"random"``: a uniformly random legal ballot
(discrete mode only).

Ablation. ``ablate(voter)`` = that voter abstains: its ballot is removed if it was cast, and it abstains when its
turn comes. On a finished episode the ballots are recounted at once: ``outcome()`` and the final infos
(``team_reward``) of the clone change, and equal the original's ``team_reward_without[voter]``; rewards already
handed out are not re-issued.

A voter's prompt (text mode, voter_0 of 3)::

    You are voter_0, one of 3 voters who answer the same problem independently. No voter sees another's answer.
    The team's answer is the most common answer among the votes; the whole team is scored on it.

    Problem:
    Compute the value of 3 + 4 * 2.

    Give your final answer as \\boxed{...}, for example \\boxed{42}. To abstain, reply [abstain].

A voter's prompt under ``reward_scheme="fraction"`` (text mode, voter_0 of 3)::

    You are voter_0, one of 3 voters who answer the same problem independently. No voter sees another's answer.
    The team is scored on the fraction of voters whose own answer is correct.

    Problem:
    Compute the value of 3 + 4 * 2.

    Give your final answer as \\boxed{...}, for example \\boxed{42}. To abstain, reply [abstain].

Credit fidelity (``python -m leaderboard fidelity``, :mod:`baselines.fidelity`). Under ``"fraction"`` the true
advantage of voter ``i``'s ballot ``a`` at any fixed policy ``pi`` is ``A*(h, a) = ([a right] - P_pi(ballot right |
h)) / n``, the right label read from the env's full state: no other voter's term depends on ``a`` (no voter sees
another's ballot). Leave-one-out's ``G - G_{-i} = [a right] / n`` differs from it only by the policy's own
baseline, so its fidelity (correlation with ``A*``) stays near 1 at every ``n``; broadcast's group-normalized team
reward carries voter ``i``'s term among ``n - 1`` others of the same variance, so its fidelity falls with ``n``,
roughly as ``1 / sqrt(n)``. Measured in ``benchmarks/RESULTS.md`` ("Credit fidelity").

Version history. v0: first version. ``reward_scheme="plurality"`` (a synonym of ``"binary"``) and ``"fraction"``
added later; the default is unchanged, so no version bump.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from pettingzoo.utils.conversions import aec_to_parallel_wrapper

from marl_llm_envs.core import check_int
from marl_llm_envs.envs.orchestration import BOXED_HINT, NO_BOXED, REWARD_SCHEMES, ProblemEnv
from marl_llm_envs.fast_rng import first_uniform
from marl_llm_envs.tasks import answer_key
from marl_llm_envs.text import find_boxed, printable

MAX_VOTERS = 1024   # an episode of 1,024 voters takes about 0.1 s (4,096: about 1.6 s; the vector grows with n)
TIE_BREAKS = ("random", "first", "none")
VOTING_SCHEMES = ("plurality", "fraction")  # voting's own reward schemes, besides the base "binary" and "signed"
ABSTAIN = "abstain"


class raw_env(ProblemEnv):
    env_id = "voting-v0"
    version = 0
    metadata = {"render_modes": ["human", "ansi"], "name": "voting_v0", "is_parallelizable": True}
    _mutable = ("_ballots",)
    records_without = True          # every voter's team_reward_without is in the final infos (the recount)
    # scored 1/0, per aggregate ("plurality", a synonym of "binary") or per ballot ("fraction", a fraction of 1)
    reward_schemes = {**REWARD_SCHEMES, **{scheme: REWARD_SCHEMES["binary"] for scheme in VOTING_SCHEMES}}

    def __init__(self, *, n_voters: int = 3, tie_break: str = "random",
                 clue_accuracy: float | Sequence[float] | str | None = "auto", **kwargs: Any) -> None:
        n_voters = check_int("n_voters", n_voters, 1, MAX_VOTERS,
                             "each voter is an agent, and every observation has an n_voters-long one-hot")
        if tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break={tie_break!r} is not one of {list(TIE_BREAKS)}")
        self.n_voters = n_voters
        self.tie_break = tie_break
        self.possible_agents = [f"voter_{i}" for i in range(n_voters)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}   # voter -> its position (static)
        self.roles = {a: "voter" for a in self.possible_agents}
        self.teams = {a: "team" for a in self.possible_agents}
        self.clue_accuracy = _clues(clue_accuracy, n_voters, kwargs.get("action_mode", "text"))
        super().__init__(n_voters=n_voters, tie_break=tie_break,
                         clue_accuracy=clue_accuracy if isinstance(clue_accuracy, (str, type(None), float, int))
                         else list(clue_accuracy), **kwargs)
        self.fraction = self.reward_scheme == "fraction"
        self.reward_range = (self._fail + n_voters * min(0.0, self.invalid_penalty), self._success)

    def _vector_size(self, feature_size: int, num_candidates: int) -> int:
        return feature_size + 2 * num_candidates + self.n_voters

    def action_names(self, agent: str) -> list[str]:
        return [] if self.action_mode == "text" else [*self.labels, ABSTAIN]

    # -------------------------------------------------------------- game
    def _start(self) -> None:
        self._draw_problem()
        rng = self.np_random
        self._ballots: dict[str, Any] = {}   # voter -> answer text / label index / None (abstain or spoiled)
        self._spoiled: frozenset[str] = frozenset()
        self._tie_seed = int(rng.integers(2**63 - 1))
        self._tie_draw: float | None = None
        clue: dict[str, int] = {}
        self._clue = clue
        if self.clue_accuracy is not None and self.candidates:
            answer = self._answer_index
            wrong = [i for i in range(self.num_candidates) if i != answer]
            for agent, p in zip(self.possible_agents, self.clue_accuracy):
                if rng.random() < p:
                    clue[agent] = answer
                else:
                    clue[agent] = wrong[int(rng.integers(len(wrong)))]
        self._result: dict[str, Any] | None = None
        self.agent_selection = self.possible_agents[0]

    def _legal_ids(self, agent: str) -> list[int]:
        return list(range(self.num_candidates + 1))

    def _parse_free(self, agent: str, text: str) -> tuple[Any, str | None]:
        answer = find_boxed(text)
        if answer is not None:
            return answer, None
        if f"[{ABSTAIN}]" in text.lower():
            return None, None
        return None, f"{NO_BOXED} or reply [abstain]"

    def _index_to_move(self, agent: str, index: int) -> Any:
        return None if index == self.num_candidates else index

    def _null_move(self, agent: str) -> Any:
        return None

    def _apply(self, agent: str, move: Any) -> None:
        self._ballots[agent] = None if agent in self.ablated else move
        self._next_voter(agent)

    def _penalize(self, agent: str) -> None:
        self._ballots[agent] = None
        self._spoiled = self._spoiled | {agent}
        self._next_voter(agent)

    def _next_voter(self, agent: str) -> None:
        i = self._seat[agent]
        if i + 1 < self.n_voters:
            self.agent_selection = self.possible_agents[i + 1]
        else:
            self._count_and_finish()

    # -------------------------------------------------------------- the count
    def _groups(self) -> tuple[dict[Any, list[tuple[int, Any]]], list[Any]]:
        """The counted ballots grouped by answer, key -> ``[(voter position, ballot), ...]`` in seat order, and each
        voter's key (None without a ballot). A key is the label index in discrete mode, else the answer's
        :func:`answer_key` (equal answers written differently count together)."""
        groups: dict[Any, list[tuple[int, Any]]] = {}
        keys: list[Any] = []
        discrete = self.action_mode == "discrete"
        ballots = self._ballots
        for pos, voter in enumerate(self.possible_agents):
            ballot = ballots.get(voter)
            if ballot is None:
                keys.append(None)
                continue
            key = ballot if discrete else answer_key(ballot)
            keys.append(key)
            members = groups.get(key)
            if members is None:
                groups[key] = [(pos, ballot)]
            else:
                members.append((pos, ballot))
        return groups, keys

    def _aggregate(self, groups: dict[Any, list[tuple[int, Any]]], skip_key: Any = None, skip: int = -1) -> Any:
        """The plurality ballot of ``groups`` (what :meth:`_groups` returns; None when there is none), leaving out the
        ballot of the voter at position ``skip`` in group ``skip_key``."""
        top, tied = 0, []               # the most votes, and the (first voter position, ballot) of each answer with them
        for key, members in groups.items():
            count, first = len(members), members[0]
            if key == skip_key:
                count -= 1
                if count == 0:
                    continue
                if first[0] == skip:
                    first = members[1]
            if count > top:
                top, tied = count, [first]
            elif count == top:
                tied.append(first)
        if not tied:
            return None
        if len(tied) > 1:
            tied.sort(key=_position)    # seat order (each voter casts one ballot, so positions differ)
        if len(tied) == 1 or self.tie_break == "first":
            return tied[0][1]
        if self.tie_break == "none":
            return None
        if self._tie_draw is None:      # the episode's one tie-break draw, = default_rng(_tie_seed).random()
            self._tie_draw = first_uniform([self._tie_seed])
        draw = self._tie_draw
        return tied[int(draw * len(tied))][1]

    def _correct(self, ballot: Any) -> bool:
        if ballot is None:
            return False
        if self.action_mode == "discrete":
            return ballot == self._answer_index
        return self._verify(ballot)

    def _show(self, ballot: Any) -> str | None:
        if ballot is None:
            return None
        return self.labels[ballot] if self.action_mode == "discrete" else printable(ballot, 500)

    def _count(self) -> dict[str, Any]:
        """The count: the plurality answer and the team's reward, and for every voter the team's reward without its
        ballot (and without its spoiled ballot's penalty).

        The team's reward is the verifier's score of the plurality answer (``"fraction"``: the fraction of voters
        whose own ballot is right) plus the penalty of every spoiled ballot. One pass groups the ballots and scores
        each voter's own; a recount without voter v then depends only on v's group and on whether v is its first
        member (the group that loses a ballot, and the seat it is listed by), so voters who share both share one
        recount, and without a ballot v changes nothing (the same numbers as recounting from scratch per voter)."""
        groups, keys = self._groups()
        ballots, voters = self._ballots, self.possible_agents
        own_correct = {v: self._correct(ballots.get(v)) for v in voters}
        right = sum(own_correct.values())
        aggregate = self._aggregate(groups)
        correct = self._correct(aggregate)
        spoiled, penalty = self._spoiled, self.invalid_penalty
        without: dict[str, float] = {}
        if self.fraction:
            n = self.n_voters
            team_reward = right / n + len(spoiled) * penalty
            for v in voters:
                without[v] = (right - own_correct[v]) / n + (len(spoiled) - (v in spoiled)) * penalty
        else:
            score = self._score(correct)
            team_reward = score + len(spoiled) * penalty
            recounts: dict[tuple[Any, bool], float] = {}     # (group, first member?) -> the score without such a ballot
            for pos, v in enumerate(voters):
                key = keys[pos]
                if key is None:
                    score_v = score
                else:
                    at = (key, groups[key][0][0] == pos)
                    score_v = recounts.get(at)
                    if score_v is None:
                        score_v = recounts[at] = self._score(self._correct(self._aggregate(groups, key, pos)))
                without[v] = score_v + (len(spoiled) - (v in spoiled)) * penalty
        return {
            "votes": {v: self._show(ballots.get(v)) for v in voters},
            "own_correct": own_correct,
            "aggregate": self._show(aggregate),
            "correct": correct,
            "team_reward": team_reward,
            "team_reward_without": without,
            "spoiled": sorted(spoiled),
        }

    def _count_and_finish(self) -> None:
        r = self._result = self._count()
        self._team_finish(r["team_reward"], aggregate=r["aggregate"], correct=r["correct"],
                          team_reward_without=r["team_reward_without"])
        infos, votes, own_correct = self.infos, r["votes"], r["own_correct"]
        for voter in self.agents:       # the infos _team_finish has just made (new dicts, which no caller has yet)
            info = infos[voter]
            info["vote"] = votes[voter]
            info["own_correct"] = own_correct[voter]

    def outcome(self) -> dict[str, Any] | None:
        """The count of a finished episode, or ``None`` while voting goes on: ``votes`` and ``own_correct`` (dicts by
        voter), ``aggregate``, ``correct``, ``team_reward``, ``team_reward_without`` (by voter) and ``spoiled``."""
        return self._result

    def _on_ablate(self, agent: str) -> None:
        if agent in self._ballots:
            self._ballots[agent] = None
        self._spoiled = self._spoiled - {agent}  # an abstaining voter spoils nothing
        if self._result is not None:  # finished: recount without this voter's ballot
            r = self._result = self._count()
            self._set_team_return("team", r["team_reward"])
            for voter in self.agents:
                self.infos[voter] = {**self.infos[voter], "aggregate": r["aggregate"], "correct": r["correct"],
                                     "team_reward_without": r["team_reward_without"]}

    # -------------------------------------------------------------- observations
    def _text(self, agent: str) -> str:
        scored = ("The team is scored on the fraction of voters whose own answer is correct." if self.fraction else
                  "The team's answer is the most common answer among the votes; the whole team is scored on it.")
        lines = [
            f"You are {agent}, one of {self.n_voters} voters who answer the same problem independently. No voter "
            f"sees another's answer.\n{scored}",
            "",
            self._problem_text(),
        ]
        if agent in self._clue:
            p = self.clue_accuracy[self.possible_agents.index(agent)]
            lines.append(f"Your private notes point to ({self.labels[self._clue[agent]]}); "
                         f"such notes are right {p:.0%} of the time.")
        lines.append("")
        if self.action_mode == "discrete":
            lines.append("Vote with the label of your choice in square brackets: "
                         f"{', '.join(f'[{x}]' for x in self.labels)}, or [{ABSTAIN}].")
        else:
            lines.append(f"{BOXED_HINT} To abstain, reply [{ABSTAIN}].")
        return "\n".join(lines)

    def _vector(self, agent: str, out: np.ndarray) -> None:
        self._problem_vector(out)
        k = self.problem_size
        if agent in self._clue:
            out[k + self._clue[agent]] = 1.0
        out[k + self.num_candidates + self._seat[agent]] = 1.0

    def _render(self) -> str:
        ballots = ", ".join(f"{v}: {self._show(b)}" for v, b in self._ballots.items()) or "(none yet)"
        return f"[voting] task {self.task.task_id} | answer: {self.task.answer} | ballots: {ballots}"


def _position(member: tuple[int, Any]) -> int:
    return member[0]


def _clues(clue_accuracy: Any, n_voters: int, action_mode: str) -> list[float] | None:
    if clue_accuracy == "auto":
        return [0.7] * n_voters if action_mode == "discrete" else None
    if clue_accuracy is None:
        return None
    if isinstance(clue_accuracy, (int, float)) and not isinstance(clue_accuracy, bool):
        values = [float(clue_accuracy)] * n_voters
    elif isinstance(clue_accuracy, (list, tuple)):
        values = [float(p) for p in clue_accuracy]
        if len(values) != n_voters:
            raise ValueError(f"clue_accuracy has {len(values)} values for {n_voters} voters")
    else:
        raise ValueError(f"clue_accuracy must be 'auto', None, a float or a list of floats, got {clue_accuracy!r}")
    if not all(0.0 <= p <= 1.0 for p in values):
        raise ValueError(f"clue_accuracy values must be in [0, 1], got {values}")
    return values


env = raw_env


class parallel_env(aec_to_parallel_wrapper):
    """The voting env with simultaneous turns (PettingZoo ``ParallelEnv``): one ``step`` takes every ballot."""

    metadata = raw_env.metadata

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(raw_env(**kwargs))

    def step(self, actions: dict[str, Any]):
        """PettingZoo's parallel ``step``: one action per live agent. A live agent without one, or a key that is no
        agent of the env, is a ``KeyError`` naming them (PettingZoo's wrapper raised a bare ``KeyError`` for the
        first missing agent and ignored a misspelt one)."""
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict agent -> action, got {type(actions).__name__}")
        missing = [a for a in self.agents if a not in actions]
        unknown = [a for a in actions if a not in self.possible_agents]
        if missing or unknown:
            raise KeyError(f"actions need one entry per live agent {self.agents}: missing {missing}, not agents of "
                           f"this env {unknown}")
        return super().step(actions)

    def transcript(self) -> dict[str, Any]:
        return self.aec_env.transcript()
