"""Orchestrator: an orchestrator splits a problem, spawns workers at run time, and gives the team's one answer.

| Import             | ``from marl_llm_envs import make; make("orchestrator-v0")``                          |
|--------------------|--------------------------------------------------------------------------------------|
| Family             | orchestration (one team, ``team``)                                                   |
| Agents             | ``orchestrator`` (role orchestrator) and the workers it spawns, ``worker_0`` ... ``worker_{max_workers-1}`` (role worker); ``possible_agents`` lists them all, ``env.agents`` grows as workers are spawned |
| Action space       | text: ``Text``; discrete: orchestrator ``Discrete(1 + max_workers + num_candidates)``, worker ``Discrete(num_candidates)`` |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (V,)), [action_mask])``, V below              |
| Reward range       | best ``1`` (``"signed"``: ``+1``); worst ``min(fail, invalid_penalty) + max_workers * (min(0, invalid_penalty) - spawn_cost)`` |
| Kwargs             | ``tasks="composite"``, ``split="train"``, ``reward_scheme="binary"``, ``num_candidates=4``, ``max_workers=4``, ``spawn_cost=0.0``, ``max_subtask_chars=500``, ``max_plan_chars=2000``, ``worker_accuracy="auto"``, ``self_accuracy="auto"``, ``current_part_view=False``, ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

Why. Orchestration is the setting where credit assignment is hardest: the orchestrator creates its sub-agents on
the fly and gives each a different sub-task, so "the same role" in two rollouts of one prompt is not the same job,
and only the final answer is rewarded. This env makes that measurable, with counterfactuals that still work.

The episode. A composite problem is drawn from ``tasks`` (see :mod:`marl_llm_envs.tasks`: ``"composite"``,
``"composite:parts=4,difficulty=2"``, a ``jsonl:``/``parquet:`` file whose records have a ``parts`` field, or a
``TaskSource`` whose tasks have parts) on the fixed ``split``, with the env's RNG (a GRPO group shares a seed, so a
problem). Its parts are named ``a``, ``b``, ``c``, ... Then:

1. The orchestrator writes its plan (text mode) or decides, part by part, who answers it (discrete mode). Each
   spawn adds a worker to ``env.agents``.
2. Each worker, in the order spawned, sees only its own sub-task (never the whole problem, nor another worker's
   sub-task or report), answers once, and takes no further turn. It stays in ``env.agents`` until the episode ends,
   so that it receives the team reward like every member.
3. The orchestrator sees its plan and every report and gives the final answer.

Rewards. At the end every agent of the episode (the orchestrator and every spawned worker) gets the team reward:
the verifier's score of the final answer, ``1``/``0`` (``"signed"``: ``+1``/``-1``), minus ``spawn_cost`` per spawned
worker, plus ``invalid_penalty`` per spoiled report (below). No reward is given before the end.

Text mode (the LLM mode). The plan is free text; every line that starts with ``[spawn:`` (after spaces; any case)
is a spawn line ``[spawn: <sub-task>]`` and spawns ``worker_i`` (i = 0, 1, ... in order) with that sub-task. No spawn
line: the orchestrator answers alone. A spawn line that does not end with ``]``, has an empty sub-task, a sub-task
containing ``[`` or ``]`` (nested brackets) or longer than ``max_subtask_chars``, or more than ``max_workers`` spawn
lines, makes the plan an invalid move. Like every text action, a plan is read up to ``TEXT_MAX_LENGTH`` (65,536)
characters and the rest is ignored (``infos["orchestrator"]["ignored_chars"]`` says how many); the parser reads each
line once, in time linear in the plan. The plan the orchestrator sees again is cut to
``max_plan_chars`` (``infos["orchestrator"]["plan_truncated"]`` says so). A worker's report and the final answer are
the content of the last ``\\boxed{...}`` of the reply (a reply without one is an invalid move); the orchestrator sees
each report (at most 500 characters), never the worker's reasoning.

Discrete mode (small policies, no LLM needed; credit matters). Every part comes with ``num_candidates`` labelled
candidate results (its true result and its distractors, shuffled by the env's RNG). The orchestrator has private
noisy notes on every part: a label that is the true one with probability ``self_accuracy`` (``"auto"``: 0.6) and a
uniformly random wrong one otherwise. Worker slot ``j`` has skill ``worker_accuracy[j]`` (``"auto"``: 0.9, 0.9, 0.5,
0.3 repeating: some slots are unreliable); a worker given a part gets private notes on that part of that accuracy
(all notes are drawn at reset, so they do not depend on the plan). The orchestrator's turns: first, for each part in
order, ``[self]`` (answer it yourself) or ``[worker_j]`` (spawn worker ``j`` with this part; a slot takes at most one
part); then each spawned worker picks a label of its part; then, for each part in order, the orchestrator picks the
label it believes (action ``[A]``, ``[B]``, ...). The final answer is the parts' formula (``Task.combine``) on the
chosen results, scored by the verifier. The slots' skills are not in the orchestrator's observation: it must learn
whom to trust. Why credit matters here: a wrong report hurts only when the orchestrator trusts it, and a right one
helps only when it does, so the same worker action is worth different amounts in different episodes; the final
infos carry what a learner needs to tell them apart (below). The scripted delegator (part ``i`` to slot ``i``, then
trust each report) scores 0.41 at the defaults, the solo orchestrator (its own notes) 0.24, uniformly random play
0.04 (10,000 games each; see ``spec("orchestrator-v0").anchors``).

Observation. ``observation`` (V = F + P * (4 * C + 1 + W) + 3 + P + 3 + Fp + 2 * C + W, with F the task source's
feature size, P its ``max_parts``, Fp its ``part_feature_size``, C = ``num_candidates``, W = ``max_workers``):
the orchestrator's section: the problem's features (F); per part: its candidate values (C), the orchestrator's
notes one-hot (C), who answers it (1 + W: itself, slot j; zeros until decided), the worker's report one-hot (C), the
orchestrator's choice one-hot (C); the phase one-hot (plan, work, final), the current part one-hot (P), "I am the
orchestrator", "the orchestrator is ablated (solo)", "workers spawned / W". The worker's section: its part's features
(Fp), its candidate values (C), its notes one-hot (C), its slot one-hot (W). A worker's section is zero in the
orchestrator's vector and vice versa; text mode fills only the phase, the roles, the slot and the spawn count besides
the problem's features. The true answer, the true labels and the slots' skills are in no observation.

``current_part_view=True`` (discrete mode; default ``False``, the layout above unchanged) appends to the orchestrator's
section the view of the part it decides now: that part's notes one-hot (C), who answers it (1 + W) and the worker's
report one-hot (C), copied from the part's block in the plan and final phases (zeros in the work phase and once the
episode is over), so V grows by 2 * C + 1 + W and the worker's section starts that much later. It adds no
information: it puts the current part's cues at a fixed place. Why: with the per-part blocks alone, a policy must
pick the block that the current-part one-hot selects (a product of two inputs) before it can follow a note or a
report; a small MLP trained at the credit suite's budget does not find that (measured below).

Learning at the micro tier (an MLP on the numeric observation, discrete mode, 100 steps x 8 tasks x 4 samples;
``benchmarks/RESULTS.md``, "orchestrator-v0 at the suite's budget"). With every seat learning, nothing learns, for
two reasons of the game, not of the code. (1) A saddle: an untrained orchestrator picks a part's result without
looking at the report, so a worker's move changes no reward, and untrained workers report at random, so trusting a
report is worth nothing; the policy gradient of both is zero at the start. (2) The lookup above. With scripted
workers (``--partners worker=reference``: they follow their notes) the orchestrator reaches the delegator's score
with ``current_part_view=True`` and about half of it without (every slot at 0.9, 5 seeds; with the default slots,
seed 0, hardly above random without it); with the scripted delegator as the orchestrator (``--partners
orchestrator=reference``) the spawned workers learn to follow their notes, the setting proposed for the credit
suite's dynamic-teams family. Longer budgets with every seat learning (2 parts, 2 candidates, ``max_workers=2``,
``current_part_view=True``, workers of accuracy 0.9; random 0.29, solo 0.37, delegator 0.80; ``benchmarks/RESULTS.md``,
"Message credit and dynamic teams with both roles learning"): at 8 tasks per step the policy's entropy reaches 0 by
step 60 (every sample of a group plays alike, so the group-relative advantage is 0 and nothing moves again) and the
team stays at random's score through 415 steps; at 32 tasks per step and 800 steps (``benchmarks/RESULTS.md``,
"Dynamic teams with every seat learning", 2026-12-04) the team escapes on about half the seeds: broadcast reaches the
delegator's score (team reward 0.82 over the last 100 steps) on 3 of 6 seeds, between steps 200 and 330, and stays
near the solo orchestrator's on the other 3, whose entropy reached 0 first (steps 100-230); the credit-blind raw
return (``none``) escapes on 3 of 6 too. Both seats' observations and action spaces serve a learner as they are: what
decides a run is whether it leaves the saddle before its entropy is gone, not an input.

Final infos (every agent's info at the end). ``answer`` (the final answer; discrete: the formula on the chosen
results), ``correct``, ``ground_truth``, ``task_id``, ``spawned`` (the workers, in order), ``subtasks`` (worker ->
its sub-task text), ``reports`` (worker -> its report, ``None`` if none), ``worker_part`` (worker -> the part name it
was given, or ``None``), ``worker_correct`` (worker -> its report is right for that part) and ``parts_reported``
(part -> some worker's report of it is right). In text mode the part of a worker is the first part whose question
appears in its sub-task (ignoring case, spaces and a final period), else the first part whose answer its report
verifies as (the worker solved that part), else ``None``. Discrete mode adds ``parts_correct`` (part -> the
orchestrator's choice is right) and ``team_reward_without`` (worker -> the team reward had that worker's report been
missing, with no generation: if the orchestrator's choice for its part was the report, the choice becomes the
orchestrator's own notes, otherwise it is unchanged; the worker's spoiled-report penalty, if any, is dropped, its
spawn cost stays: it was spawned). This is exactly what ``ablate(worker)`` gives when the orchestrator falls back on
its own notes for a part without a report, as the scripted delegator does. Each worker's own info also has ``own_correct`` and ``part``.

Invalid moves. Orchestrator (a bad plan, no ``\\boxed{}`` final answer, a masked index): ``"penalty"`` (default): the
episode ends and the answer's score is replaced by ``invalid_penalty`` (default -1). Worker (no ``\\boxed{}``, a
masked index): ``"penalty"``: the report is spoiled (the orchestrator sees "(no report)") and ``invalid_penalty`` is
added to the team reward. ``"retry"``: asked again up to ``max_retries`` times with the error in the prompt, then
the penalty. ``"random"``: a uniformly random legal move (discrete mode only; text mode rejects it).

Ablation. ``ablate("worker_i")``: that worker's report is replaced by "(no report)" (if it has not answered yet, it
will answer nothing when its turn comes; if it is never spawned, nothing changes); if the orchestrator has already
started its final answer, or the episode is over, the clone goes back to the start of the orchestrator's final turn
(no rewards were handed out before it) and the orchestrator answers again from there. ``ablate("orchestrator")`` is
the solo counterfactual: no plan, no workers (spawned workers leave ``env.agents``); the orchestrator answers the
problem alone under the solo prompt (discrete mode: every part is its own, from its notes), from the start of its
final turn, whenever the ablation is taken. Both are exact on a finished episode, and ``replay`` reproduces them.

The orchestrator's plan prompt (text mode, max_workers=4)::

    You are the Orchestrator of a team. You may split the problem into sub-tasks and give each to a worker: a new
    agent that sees only the sub-task text you write (not the problem, not the other workers) and answers it once.
    Then you see every worker's report and give the team's final answer; the team is scored only on that answer.

    Problem:
    Compute a + b * c, where
      a = 3 + 4 * 2
      b = 12 - 7
      c = 6 * 3

    Write your plan. To spawn a worker, write a line [spawn: <sub-task>]: at most 4 such lines, each sub-task at
    most 500 characters on that line, without square brackets. With no spawn line you answer alone.

A worker's prompt (text mode)::

    You are worker_0, a worker the Orchestrator spawned for one sub-task. Solve it on your own; the Orchestrator
    combines your answer with the others.

    Sub-task:
    Compute the value of 3 + 4 * 2.

    Give your final answer as \\boxed{...}, for example \\boxed{42}.

The orchestrator's final prompt (text mode)::

    You are the Orchestrator of a team. Your workers have reported; give the team's final answer. The team is
    scored only on that answer.

    Problem:
    Compute a + b * c, where
      a = 3 + 4 * 2
      b = 12 - 7
      c = 6 * 3

    Your plan:
    [spawn: Compute the value of 3 + 4 * 2.]
    [spawn: Compute the value of 12 - 7.]
    I will compute c myself.

    Reports:
      worker_0 (Compute the value of 3 + 4 * 2.): 11
      worker_1 (Compute the value of 12 - 7.): (no report)

    Give your final answer as \\boxed{...}, for example \\boxed{42}.

The orchestrator's solo prompt (orchestrator ablated)::

    You are the Orchestrator. Solve the problem on your own.

    Problem:
    Compute a + b * c, where
      a = 3 + 4 * 2
      b = 12 - 7
      c = 6 * 3

    Give your final answer as \\boxed{...}, for example \\boxed{42}.

For scripted seats (``marl_llm_envs.reference.orchestrator``): what each seat's prompt shows, as data:
``spawned()`` (the workers, in order), ``subtask(worker)``, ``report(worker)`` (a label index or the boxed text;
``None`` when none), ``assignee(part)`` (discrete: the worker given a part, ``None`` = the orchestrator) and
``notes(agent, part=None)`` (discrete: the label an agent's private notes point to). ``part_answer_index(part)`` is
privileged (the true label; in no observation), for tests and oracles only.

Version history. v0: first version. ``current_part_view`` added later (default ``False`` keeps every episode,
observation and reward as before, so no version bump).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from marl_llm_envs.core import check_int
from marl_llm_envs.envs.orchestration import BOXED_HINT, ProblemEnv, boxed_answer, value_feature
from marl_llm_envs.tasks.composite import PART_NAMES, combine_parts
from marl_llm_envs.text import TEXT_MAX_LENGTH, printable

ORCHESTRATOR = "orchestrator"
SELF = "self"
NO_REPORT = "(no report)"
MAX_REPORT_CHARS = 500
PHASES = ("plan", "work", "final")
AUTO_WORKER_ACCURACY = (0.9, 0.9, 0.5, 0.3)
AUTO_SELF_ACCURACY = 0.6


def parse_plan(text: str, max_workers: int, max_subtask_chars: int) -> tuple[list[str] | None, str | None]:
    """The sub-tasks of a plan's spawn lines, or ``(None, reason)``. One pass over the lines, each read once."""
    if len(text) > TEXT_MAX_LENGTH:
        return None, f"the plan is longer than {TEXT_MAX_LENGTH} characters"
    subtasks: list[str] = []
    for line in text.split("\n"):
        s = line.strip()
        if s[:6].lower() != "[spawn":
            continue
        shown = printable(s, 60)
        if s[6:7] != ":" or not s.endswith("]"):
            return None, f"malformed spawn line {shown!r}; write [spawn: <sub-task>] on one line"
        body = s[7:-1].strip()
        if not body:
            return None, "a spawn line has an empty sub-task"
        if "[" in body or "]" in body:
            return None, f"the sub-task of spawn line {shown!r} contains square brackets"
        if len(body) > max_subtask_chars:
            return None, f"a sub-task is longer than {max_subtask_chars} characters"
        subtasks.append(body)
        if len(subtasks) > max_workers:
            return None, f"more than {max_workers} spawn lines (max_workers={max_workers})"
    return subtasks, None


def _key(text: str) -> str:
    return "".join(str(text).lower().split()).rstrip(".")


class raw_env(ProblemEnv):
    env_id = "orchestrator-v0"
    version = 0
    metadata = {"render_modes": ["human", "ansi"], "name": "orchestrator_v0", "is_parallelizable": False}
    _mutable = ("_workers", "_slot_of", "_subtask", "_reports", "_delegate", "_choice", "_spoiled", "_part_of")

    def __init__(self, *, tasks: Any = "composite", max_workers: int = 4, spawn_cost: float = 0.0,
                 max_subtask_chars: int = 500, max_plan_chars: int = 2000,
                 worker_accuracy: float | Sequence[float] | str | None = "auto",
                 self_accuracy: float | str | None = "auto", current_part_view: bool = False,
                 **kwargs: Any) -> None:
        max_workers = check_int("max_workers", max_workers, 1, 16)
        if isinstance(spawn_cost, bool) or not isinstance(spawn_cost, (int, float)) or not spawn_cost >= 0:
            raise ValueError(f"spawn_cost must be a non-negative number, got {spawn_cost!r}")
        max_subtask_chars = check_int("max_subtask_chars", max_subtask_chars, 1)
        max_plan_chars = check_int("max_plan_chars", max_plan_chars, 1)
        if not isinstance(current_part_view, bool):
            raise ValueError(f"current_part_view must be a bool, got {current_part_view!r}")
        mode = kwargs.get("action_mode", "text")
        self.current_part_view = current_part_view
        self.max_workers = max_workers
        self.spawn_cost = float(spawn_cost)
        self.max_subtask_chars = max_subtask_chars
        self.max_plan_chars = max_plan_chars
        self.worker_accuracy = _accuracies(worker_accuracy, max_workers, mode)
        self.self_accuracy = _self_accuracy(self_accuracy, mode)
        self.workers = [f"worker_{j}" for j in range(max_workers)]
        self.possible_agents = [ORCHESTRATOR, *self.workers]
        self.roles = {ORCHESTRATOR: "orchestrator", **{w: "worker" for w in self.workers}}
        self.teams = {a: "team" for a in self.possible_agents}
        super().__init__(tasks=tasks, max_workers=max_workers, spawn_cost=self.spawn_cost,
                         max_subtask_chars=max_subtask_chars, max_plan_chars=max_plan_chars,
                         worker_accuracy=worker_accuracy if isinstance(worker_accuracy, (str, type(None), int, float))
                         else [float(p) for p in worker_accuracy], self_accuracy=self_accuracy,
                         # recorded (for replay) only when on, so that every default transcript stays as in v0
                         **({"current_part_view": True} if current_part_view else {}), **kwargs)
        if self.task_source.max_parts < 1:
            raise ValueError(f"orchestrator-v0 needs a composite task source (tasks with parts), got "
                             f"{self.task_source!r}; use tasks='composite' or a jsonl file with a 'parts' field")
        worst = min(self._fail, self.invalid_penalty) + max_workers * (min(0.0, self.invalid_penalty) - self.spawn_cost)
        self.reward_range = (worst, self._success)

    def _vector_size(self, feature_size: int, num_candidates: int) -> int:
        s, c, w = self.task_source, num_candidates, self.max_workers
        p = s.max_parts
        self._orch_size = feature_size + p * (4 * c + 1 + w) + 3 + p + 3
        if self.current_part_view:
            self._orch_size += 2 * c + 1 + w
        return self._orch_size + s.part_feature_size + 2 * c + w

    def action_names(self, agent: str) -> list[str]:
        if self.action_mode == "text":
            return []
        if agent == ORCHESTRATOR:
            return [SELF, *self.workers, *self.labels]
        return list(self.labels)

    # -------------------------------------------------------------- episode set-up
    def _start(self) -> None:
        for worker in self.workers:  # workers join as they are spawned
            self._remove_agent(worker)
        self.task = self.task_source.sample(self.np_random, self.split)
        parts = self.task.parts
        if not parts:
            raise ValueError(f"task {self.task.task_id} has no parts; orchestrator-v0 needs composite tasks")
        if len(parts) > self.task_source.max_parts:
            raise ValueError(f"task {self.task.task_id} has {len(parts)} parts, more than the source's max_parts")
        self._question = printable(self.task.question)
        self.candidates = []
        self._answer_index = -1
        self._part_candidates: list[list[str]] = []
        self._part_truth: list[int] = []
        n, c = len(parts), self.num_candidates
        if self.action_mode == "discrete":
            if not self.task.combine:
                raise ValueError(f"task {self.task.task_id} has no 'combine' formula; discrete mode needs one")
            for part in parts:
                wrong = list(part.distractors[: c - 1])
                if len(wrong) < c - 1:
                    raise ValueError(f"part of {self.task.task_id} has {len(part.distractors)} distractors; "
                                     f"num_candidates={c} needs {c - 1}")
                order = self.np_random.permutation(c)
                options = [part.answer, *wrong]
                self._part_candidates.append([options[i] for i in order])
                self._part_truth.append(int(np.argmin(order)))
        self._self_notes: list[int] = []
        self._slot_notes: list[list[int]] = []
        if self.action_mode == "discrete":
            if self.self_accuracy is not None:
                self._self_notes = [self._note(i, self.self_accuracy) for i in range(n)]
            if self.worker_accuracy is not None:
                self._slot_notes = [[self._note(i, p) for i in range(n)] for p in self.worker_accuracy]
        self._phase = "plan"
        self._part_i = 0
        self._plan: str | None = None
        self._workers: list[str] = []            # spawned, in order
        self._slot_of: dict[str, int] = {}        # worker -> slot index
        self._part_of: dict[str, int | None] = {}  # worker -> the part it was given (discrete), or None (text)
        self._subtask: dict[str, str] = {}
        self._reports: dict[str, Any] = {}        # worker -> report text / label index / None (none or spoiled)
        self._spoiled: set[str] = set()
        self._delegate: list[str | None] = [None] * n   # discrete: the worker of each part (None: the orchestrator)
        self._choice: list[int | None] = [None] * n     # discrete: the orchestrator's chosen label per part
        self._final: str | None = None
        self._orch_invalid = False
        self._result: dict[str, Any] | None = None
        self.agent_selection = ORCHESTRATOR

    def _note(self, part: int, accuracy: float) -> int:
        truth = self._part_truth[part]
        if self.np_random.random() < accuracy:
            return truth
        wrong = [i for i in range(self.num_candidates) if i != truth]
        return wrong[self._random_index(len(wrong))]

    def part_answer_index(self, part: int) -> int:
        """Privileged: the label index of part ``part``'s true result in discrete mode (for tests and oracle
        baselines only; it is in no observation)."""
        return self._part_truth[part]

    # -------------------------------------------------------------- what the seats know (for scripted seats)
    def spawned(self) -> list[str]:
        """The workers spawned so far, in order (the orchestrator's prompt lists them)."""
        return list(self._workers)

    def subtask(self, worker: str) -> str | None:
        """The sub-task ``worker`` was given (its prompt shows it), or ``None`` if it was not spawned."""
        return self._subtask.get(worker)

    def report(self, worker: str) -> Any:
        """``worker``'s report: a label index (discrete) or the content of its ``\\boxed{}`` (text); ``None`` when
        there is none (not answered yet, spoiled or ablated). The orchestrator's prompt shows it."""
        return self._reports.get(worker)

    def assignee(self, part: int) -> str | None:
        """Discrete mode: the worker given part ``part``, or ``None`` (the orchestrator's own, or not decided yet)."""
        return self._delegate[part]

    def notes(self, agent: str, part: int | None = None) -> int | None:
        """Discrete mode: the label index that ``agent``'s private notes point to, as its prompt shows: the
        orchestrator's notes on part ``part``, a worker's on its own part; ``None`` where there are no notes."""
        if agent == ORCHESTRATOR:
            return self._self_notes[part] if self._self_notes else None
        own = self._part_of.get(agent)
        if not self._slot_notes or own is None:
            return None
        return self._slot_notes[self._slot_of[agent]][own]

    @property
    def solo(self) -> bool:
        return ORCHESTRATOR in self.ablated

    @property
    def phase(self) -> str:
        """``"plan"``, ``"work"``, ``"final"`` or ``"over"``."""
        return "over" if self._result is not None else self._phase

    @property
    def current_part(self) -> int:
        """Discrete mode: the part the orchestrator decides now (plan and final phases)."""
        return self._part_i

    # -------------------------------------------------------------- moves
    def _legal_ids(self, agent: str) -> list[int]:
        c, w = self.num_candidates, self.max_workers
        if agent != ORCHESTRATOR:
            return list(range(c))
        if self._phase == "plan":
            return [0] + [1 + j for j in range(w) if self.workers[j] not in self._slot_of]
        return list(range(1 + w, 1 + w + c))

    def _parse_free(self, agent: str, text: str) -> tuple[Any, str | None]:
        if agent == ORCHESTRATOR and self._phase == "plan":
            subtasks, reason = parse_plan(text, self.max_workers, self.max_subtask_chars)
            return (None if reason else (text, subtasks)), reason
        return boxed_answer(text)

    def _null_move(self, agent: str) -> Any:
        if agent == ORCHESTRATOR:  # only the plan is ever null: an ablated orchestrator still answers
            return 0 if self.action_mode == "discrete" else (None, [])
        return None

    def _null_turn(self, agent: str) -> bool:
        return agent != ORCHESTRATOR or self._phase == "plan"  # an ablated orchestrator still gives its final answer

    def _apply(self, agent: str, move: Any) -> None:
        if agent != ORCHESTRATOR:
            self._reports[agent] = None if agent in self.ablated else move
            self._next_worker()
        elif self._phase == "plan":
            self._apply_plan(move)
        elif self.action_mode == "discrete":
            self._choice[self._part_i] = move - 1 - self.max_workers
            self._part_i += 1
            if self._part_i == len(self.task.parts):
                self._end()
        else:
            self._final = printable(move, MAX_REPORT_CHARS)
            self._end()

    def _apply_plan(self, move: Any) -> None:
        if self.action_mode == "discrete":
            part = self._part_i
            if move and not self.solo:
                worker = self.workers[move - 1]
                self._spawn(worker, move - 1, part, self.task.parts[part].question)
                self._delegate[part] = worker
            self._part_i += 1
            if self._part_i < len(self.task.parts):
                return
        else:
            text, subtasks = move
            if text is not None and not self.solo:
                self._plan = printable(text, self.max_plan_chars)
                if len(text) > self.max_plan_chars:
                    self.infos[ORCHESTRATOR] = {**self.infos[ORCHESTRATOR], "plan_truncated": True}
                for j, subtask in enumerate(subtasks):
                    self._spawn(self.workers[j], j, None, printable(subtask))
        self._part_i = 0
        self._phase = "work"
        self._next_worker()

    def _spawn(self, worker: str, slot: int, part: int | None, subtask: str) -> None:
        self._workers.append(worker)
        self._slot_of[worker] = slot
        self._part_of[worker] = part
        self._subtask[worker] = subtask
        self._add_agent(worker)

    def _next_worker(self) -> None:
        for worker in self._workers:
            if worker not in self._reports:
                self.agent_selection = worker
                return
        self._phase = "final"
        self._part_i = 0
        self.agent_selection = ORCHESTRATOR

    def _penalize(self, agent: str) -> None:
        if agent == ORCHESTRATOR:
            self._orch_invalid = True
            self._end(outcome="invalid_move", offender=agent)
            return
        self._reports[agent] = None
        self._spoiled.add(agent)
        self._next_worker()

    # -------------------------------------------------------------- the outcome
    def _label_value(self, part: int, label: int | None) -> str | None:
        return None if label is None else self._part_candidates[part][label]

    def _combined(self, choice: Sequence[int | None]) -> str | None:
        return combine_parts(self.task, [self._label_value(i, c) for i, c in enumerate(choice)])

    def _reward(self, correct: bool, workers: Sequence[str], spoiled: set[str]) -> float:
        base = self.invalid_penalty if self._orch_invalid else self._score(correct)
        return base + len(spoiled) * self.invalid_penalty - len(workers) * self.spawn_cost

    def _report_correct(self, worker: str, part: int | None) -> bool:
        report = self._reports.get(worker)
        if report is None or part is None:
            return False
        if self.action_mode == "discrete":
            return report == self._part_truth[part]
        return self.task_source.verify_part(self.task, part, report)

    def _text_part(self, worker: str) -> int | None:
        subtask = _key(self._subtask[worker])
        for i, part in enumerate(self.task.parts):
            if _key(part.question) in subtask:
                return i
        if self._reports.get(worker) is not None:
            for i in range(len(self.task.parts)):
                if self.task_source.verify_part(self.task, i, self._reports[worker]):
                    return i
        return None

    def _outcome(self) -> dict[str, Any]:
        discrete = self.action_mode == "discrete"
        if self._orch_invalid:
            answer, correct = None, False
        elif discrete:
            answer = self._combined(self._choice)
            correct = answer is not None and self._verify(answer)
        else:
            answer = self._final
            correct = answer is not None and self._verify(answer)
        names = PART_NAMES
        part_of = {w: (self._part_of[w] if discrete else self._text_part(w)) for w in self._workers}
        worker_correct = {w: self._report_correct(w, part_of[w]) for w in self._workers}
        out = {
            "answer": answer,
            "correct": correct,
            "team_reward": self._reward(correct, self._workers, self._spoiled),
            "spawned": list(self._workers),
            "subtasks": dict(self._subtask),
            "reports": {w: self._show_report(w) for w in self._workers},
            "worker_part": {w: None if p is None else names[p] for w, p in part_of.items()},
            "worker_correct": worker_correct,
            "parts_reported": {names[i]: any(worker_correct[w] and part_of[w] == i for w in self._workers)
                               for i in range(len(self.task.parts))},
        }
        if discrete:
            out["parts_correct"] = {names[i]: c == self._part_truth[i] for i, c in enumerate(self._choice)}
            out["team_reward_without"] = {w: self._without(w) for w in self._workers}
        return out

    def _without(self, worker: str) -> float:
        """Discrete mode: the team reward had ``worker``'s report been missing (see the manual's final infos)."""
        choice = list(self._choice)
        part = self._part_of[worker]
        report = self._reports.get(worker)
        if part is not None and report is not None and choice[part] == report:
            choice[part] = self._self_notes[part] if self._self_notes else None
        answer = None if self._orch_invalid else self._combined(choice)
        correct = answer is not None and self._verify(answer)
        return self._reward(correct, self._workers, self._spoiled - {worker})

    def _show_report(self, worker: str) -> str | None:
        report = self._reports.get(worker)
        if report is None:
            return None
        return self.labels[report] if self.action_mode == "discrete" else printable(report, MAX_REPORT_CHARS)

    def _end(self, **extra: Any) -> None:
        self._result = r = self._outcome()
        self._team_finish(r["team_reward"], answer=r["answer"], correct=r["correct"], spawned=r["spawned"],
                          subtasks=r["subtasks"], reports=r["reports"], worker_part=r["worker_part"],
                          worker_correct=r["worker_correct"], parts_reported=r["parts_reported"],
                          **{k: r[k] for k in ("parts_correct", "team_reward_without") if k in r}, **extra)
        for worker in self._workers:
            self.infos[worker] = {**self.infos[worker], "own_correct": r["worker_correct"][worker],
                                  "part": r["worker_part"][worker]}

    def outcome(self) -> dict[str, Any] | None:
        """The outcome of a finished episode (the final infos' keys and ``team_reward``), or ``None`` before."""
        return self._result

    # -------------------------------------------------------------- counterfactuals
    def _on_ablate(self, agent: str) -> None:
        if agent == ORCHESTRATOR:
            for worker in self._workers:
                self._remove_agent(worker)
            self._workers, self._slot_of, self._part_of, self._subtask = [], {}, {}, {}
            self._reports, self._spoiled, self._plan = {}, set(), None
            self._delegate = [None] * len(self.task.parts)
            self._reopen_final()
            return
        if agent not in self._workers:
            return  # not spawned (yet): if it is spawned later, it answers nothing
        if agent in self._reports:
            self._reports[agent] = None
            self._spoiled.discard(agent)
        if self._phase == "final" or self._result is not None:
            self._reopen_final()

    def _reopen_final(self) -> None:
        """Go back to the start of the orchestrator's final turn (no reward is handed out before it)."""
        self._reopen([ORCHESTRATOR, *self._workers])
        self._phase = "final"
        self._part_i = 0
        self._choice = [None] * len(self.task.parts)
        self._final = None
        self._orch_invalid = False
        self._result = None
        if any(w not in self._reports for w in self._workers):
            self._phase = "work"
            self._next_worker()
        else:
            self.agent_selection = ORCHESTRATOR

    # -------------------------------------------------------------- observations
    def _text(self, agent: str) -> str:
        if agent == ORCHESTRATOR:
            return self._orchestrator_text()
        if agent not in self._workers:
            return f"{agent} has not been spawned in this episode."
        return self._worker_text(agent)

    def _worker_text(self, worker: str) -> str:
        lines = [f"You are {worker}, a worker the Orchestrator spawned for one sub-task. Solve it on your own; the "
                 "Orchestrator\ncombines your answer with the others.", "", "Sub-task:", self._subtask[worker]]
        part = self._part_of[worker]
        if self.action_mode == "discrete":
            lines.append("Candidate answers:")
            lines += [f"  ({x}) {printable(c, 200)}" for x, c in zip(self.labels, self._part_candidates[part])]
            if self._slot_notes:
                slot = self._slot_of[worker]
                lines.append(f"Your private notes point to ({self.labels[self._slot_notes[slot][part]]}); such notes "
                             f"are right {self.worker_accuracy[slot]:.0%} of the time.")
        lines.append("")
        if worker in self._reports:
            lines.append("You have answered; the Orchestrator has your report.")
        elif self.action_mode == "discrete":
            lines.append(f"Answer with the label of your choice in square brackets: "
                         f"{', '.join(f'[{x}]' for x in self.labels)}.")
        else:
            lines.append(BOXED_HINT)
        return "\n".join(lines)

    def _orchestrator_text(self) -> str:
        if self.action_mode == "discrete":
            return self._orchestrator_discrete_text()
        problem = ["Problem:", self._question]
        if self.solo:
            return "\n".join(["You are the Orchestrator. Solve the problem on your own.", "", *problem, "", BOXED_HINT])
        if self._phase == "plan":
            return "\n".join([
                "You are the Orchestrator of a team. You may split the problem into sub-tasks and give each to a "
                "worker: a new\nagent that sees only the sub-task text you write (not the problem, not the other "
                "workers) and answers it once.\nThen you see every worker's report and give the team's final answer; "
                "the team is scored only on that answer.", "", *problem, "",
                f"Write your plan. To spawn a worker, write a line [spawn: <sub-task>]: at most {self.max_workers} "
                f"such lines, each sub-task at\nmost {self.max_subtask_chars} characters on that line, without square "
                "brackets. With no spawn line you answer alone."])
        head = ("You are the Orchestrator of a team. Your workers have reported; give the team's final answer. The "
                "team is\nscored only on that answer." if self._workers else
                "You are the Orchestrator of a team. You spawned no worker; give the team's final answer. The team "
                "is scored\nonly on that answer.")
        lines = [head, "", *problem, "", "Your plan:", self._plan or "(no plan)", ""]
        if self._workers:
            lines.append("Reports:")
            for w in self._workers:
                report = self._show_report(w)
                lines.append(f"  {w} ({printable(self._subtask[w], 200)}): {NO_REPORT if report is None else report}")
            lines.append("")
        if self._phase != "final":
            lines[0] = "You are the Orchestrator of a team. Your workers are answering."
        lines.append(BOXED_HINT if self._phase == "final" else "Waiting for the workers' reports.")
        return "\n".join(lines)

    def _orchestrator_discrete_text(self) -> str:
        n = len(self.task.parts)
        names = ", ".join(PART_NAMES[:n])
        lines = [
            f"You are the Orchestrator of a team. The problem has {n} parts ({names}). For each part, answer it "
            f"yourself or give\nit to one of your {self.max_workers} worker slots (a slot takes one part; slots "
            "differ in skill and you are not told which are\nreliable). A worker sees only its part. Then you choose "
            "each part's result; the results combine into the team's\nanswer, the only thing the team is scored on.",
            "", "Problem:", self._question]
        for i, part in enumerate(self.task.parts):
            lines.append(f"Part {PART_NAMES[i]}: {printable(part.question, 300)}")
            lines.append("  Candidates: " + "  ".join(
                f"({x}) {printable(c, 60)}" for x, c in zip(self.labels, self._part_candidates[i])))
            if self._self_notes:
                lines.append(f"  Your notes point to ({self.labels[self._self_notes[i]]}) (your notes are right "
                             f"{self.self_accuracy:.0%} of the time).")
            if self._phase != "plan" or i < self._part_i:
                w = self._delegate[i]
                if w is None:
                    lines.append("  Given to: you.")
                else:
                    report = self._show_report(w)
                    shown = "(not yet)" if w not in self._reports else NO_REPORT if report is None else f"({report})"
                    lines.append(f"  Given to: {w}; report: {shown}")
            if self._choice[i] is not None:
                lines.append(f"  Your choice: ({self.labels[self._choice[i]]})")
        lines.append("")
        part = PART_NAMES[self._part_i] if self._part_i < n else None
        if self._result is not None:
            lines.append("The episode is over.")
        elif self._phase == "plan":
            free = ", ".join(f"[{w}]" for w in self.workers if w not in self._slot_of)
            lines.append(f"Part {part}: answer it yourself with [{SELF}]" + (f" or give it to a free worker slot: "
                                                                            f"{free}." if free else "."))
        elif self._phase == "work":
            lines.append("Waiting for the workers' reports.")
        else:
            lines.append(f"Choose the result of part {part}: {', '.join(f'[{x}]' for x in self.labels)}.")
        return "\n".join(lines)

    def _vector(self, agent: str, out: np.ndarray) -> None:
        c, w = self.num_candidates, self.max_workers
        p = self.task_source.max_parts
        if agent == ORCHESTRATOR:
            f = self.task.features
            out[: len(f)] = f
            k = k0 = len(f)
            block = 4 * c + 1 + w
            for i in range(len(self.task.parts)):
                b = k + i * block
                if self.action_mode == "discrete":
                    for j, cand in enumerate(self._part_candidates[i]):
                        out[b + j] = value_feature(cand)
                    if self._self_notes:
                        out[b + c + self._self_notes[i]] = 1.0
                    if self._phase != "plan" or i < self._part_i:
                        worker = self._delegate[i]
                        out[b + 2 * c + (0 if worker is None else 1 + self._slot_of[worker])] = 1.0
                        if worker is not None and self._reports.get(worker) is not None:
                            out[b + 2 * c + 1 + w + self._reports[worker]] = 1.0
                    if self._choice[i] is not None:
                        out[b + 3 * c + 1 + w + self._choice[i]] = 1.0
            k += p * block
            out[k + PHASES.index(self._phase)] = 1.0
            if self._part_i < p:
                out[k + 3 + self._part_i] = 1.0
            k += 3 + p
            out[k] = 1.0
            out[k + 1] = float(self.solo)
            out[k + 2] = len(self._workers) / w
            k += 3
            if self.current_part_view and self.action_mode == "discrete" and self._phase != "work" \
                    and self._result is None and self._part_i < len(self.task.parts):
                b = k0 + self._part_i * block     # the current part's notes, who answers it, its report
                out[k: k + 2 * c + 1 + w] = out[b + c: b + 3 * c + 1 + w]
            return
        if agent not in self._workers:
            return
        k = self._orch_size
        part = self._part_of[agent]
        slot = self._slot_of[agent]
        fp = self.task_source.part_feature_size
        if part is not None:
            f = self.task.parts[part].features
            out[k: k + len(f)] = f
            if self.action_mode == "discrete":
                for j, cand in enumerate(self._part_candidates[part]):
                    out[k + fp + j] = value_feature(cand)
                if self._slot_notes:
                    out[k + fp + c + self._slot_notes[slot][part]] = 1.0
        out[k + fp + 2 * c + slot] = 1.0

    def _render(self) -> str:
        reports = ", ".join(f"{w}: {self._show_report(w)}" for w in self._workers if w in self._reports) or "(none)"
        return (f"[orchestrator] task {self.task.task_id} | answer: {self.task.answer} | phase: {self.phase} | "
                f"spawned: {', '.join(self._workers) or '(none)'} | reports: {reports}")


def _accuracies(value: Any, max_workers: int, action_mode: str) -> list[float] | None:
    if value == "auto":
        return [AUTO_WORKER_ACCURACY[j % 4] for j in range(max_workers)] if action_mode == "discrete" else None
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        values = [float(value)] * max_workers
    elif isinstance(value, (list, tuple)):
        values = [float(p) for p in value]
        if len(values) != max_workers:
            raise ValueError(f"worker_accuracy has {len(values)} values for max_workers={max_workers}")
    else:
        raise ValueError(f"worker_accuracy must be 'auto', None, a float or a list of floats, got {value!r}")
    if not all(0.0 <= p <= 1.0 for p in values):
        raise ValueError(f"worker_accuracy values must be in [0, 1], got {values}")
    return values


def _self_accuracy(value: Any, action_mode: str) -> float | None:
    if value == "auto":
        return AUTO_SELF_ACCURACY if action_mode == "discrete" else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"self_accuracy must be 'auto', None or a float in [0, 1], got {value!r}")
    return float(value)


env = raw_env
