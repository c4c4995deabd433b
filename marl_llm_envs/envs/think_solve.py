"""Think-Solve: a Thinker writes a message, a Solver gives the team's answer.

| Import             | ``from marl_llm_envs import make; make("think_solve-v0")``             |
|--------------------|-----------------------------------------------------------------------|
| Family             | orchestration (one team, ``team``)                                    |
| Agents             | ``thinker`` (role thinker) then ``solver`` (role solver)               |
| Action space       | text: ``Text``; discrete: thinker ``Discrete(1 + num_candidates)`` (``Discrete(num_candidates)`` with ``hint_optional=False``), solver ``Discrete(num_candidates)`` |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (F + 2 * num_candidates + 4 [+ num_candidates],)), [action_mask])``, F = the task source's feature size; the last ``num_candidates`` only with ``thinker_clue_accuracy`` |
| Reward range       | ``reward_scheme="binary"``: {0, 1}; ``"signed"``: {-1, +1}; ``invalid_penalty`` on an invalid move |
| Kwargs             | ``tasks="arithmetic"``, ``split="train"``, ``reward_scheme="binary"``, ``num_candidates=4``, ``max_thought_chars=2000``, ``thinker_clue_accuracy=None``, ``clue_pool="labels"``, ``hint_optional=True``, ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |
| Reference policy   | ``reference_policies("think_solve-v0")["clue_relay"]`` (both seats; see :mod:`marl_llm_envs.reference.think_solve`) |

The episode. A problem is drawn from ``tasks`` (see :mod:`marl_llm_envs.tasks`: ``"arithmetic"``,
``"arithmetic:difficulty=3"``, ``"knights_knaves"``, ``"countdown"``, ``"composite"`` (several arithmetic parts
combined, orchestrator-v0's source), ``"jsonl:/path/data.jsonl"``,
``"parquet:/path/data.parquet"`` or a ``TaskSource``) on the fixed ``split`` ("train" or "test"), using the env's RNG, so the same seed gives the same
problem (a GRPO group shares a seed). The thinker sees the problem and writes a message; the solver sees the problem
and the message and gives the final answer, which the task's verifier scores. Both agents get the same team reward.

Text mode (the LLM mode). Thinker: any text is a valid message; it need not contain an answer. It is cut to
``max_thought_chars`` characters (``infos["thinker"]["thought_truncated"]`` says so) and made printable ASCII
before the solver sees it. Solver: the answer is the content of the last ``\\boxed{...}`` in its reply; a reply with
no ``\\boxed{...}`` is an invalid move.

Discrete mode (small policies, no LLM needed). The problem comes with ``num_candidates`` candidate answers labelled
(A), (B), ... (the true answer and the task's distractors, shuffled). The thinker chooses one of ``[none]`` (no hint)
or ``[A]``, ``[B]``, ... (the message "I think the answer is (X)"); the solver chooses a label. A scripted oracle
thinker (one that knows the answer; see :func:`marl_llm_envs.scripted.oracle_thinker`) with a solver that follows
the hint scores 1.0, while the solver alone is at chance (1 / num_candidates): the thinker's contribution is real and
measurable without an LLM. In this mode the prompts list the candidates and moves in brackets, so an LLM can play
it too.

The clue task (``thinker_clue_accuracy=a``, a number in [0, 1]; default ``None`` = no clue, everything above
unchanged). A task where the thinker's message is the only way to score and learning it is unambiguous (the credit
suite's message-credit family). At reset, after the problem, the thinker gets a private clue: with probability ``a``
it names the true candidate, otherwise one of the ``num_candidates - 1`` wrong candidates drawn uniformly (both
from the env's RNG). Only the thinker's observation shows it (its prompt's clue line and, in discrete mode, a
one-hot over the labels at the end of its vector); the solver's prompt and vector never do. In discrete mode the
problem's text and features and the candidates' values are withheld from both seats (prompts say "Problem: hidden
in this task" and list the labels only; those vector entries are 0), because an arithmetic problem or its candidate
values (distractors are near misses such as answer + 1) would let a seat find the answer without the clue. The
thinker's moves are unchanged (``[none]`` or a label, i.e. the message "I think the answer is (X)");
``ablate("thinker")`` is the solver answering with no message. The final infos add ``clue`` (the label or answer
the clue named) and ``clue_correct``. In text mode (free text) the problem stays visible and the clue names the true
answer or one of the task's first ``num_candidates - 1`` distractors; the optimum below holds for discrete mode
(including an LLM playing it in choice mode).

Optimum and random play in the clue task (discrete mode, ``K = num_candidates``, binary rewards). The true label
``Y`` is uniform over the K labels (the candidates are shuffled) and nothing but the clue ``C`` depends on it, so
the thinker's message ``M`` is a function of ``C`` (and its own randomness) only and the solver's answer a
function of ``M``. Hence ``P(correct) <= max_y P(Y = y | C)`` averaged over ``C``. By Bayes' rule,
``P(Y = c | C = c) = a`` and ``P(Y = y | C = c) = (1 - a) / (K - 1)`` for each ``y != c``, so the best answer
given the clue is ``c`` when ``a >= 1/K`` (else any other label) and the optimum is ``max(a, (1 - a) / (K - 1))``,
which is ``a`` for every ``a >= 1/K`` (the suite's sweep). It is attained by :func:`clue_relay` (the thinker names
its clue, the solver follows the hint). The solver alone (thinker ablated, or a message that ignores the clue) is
at chance, ``1/K``, whatever it does; uniformly random play scores ``1/K`` too. Both are measured in
``spec("think_solve-v0").anchors`` (rows ``"... thinker_clue_accuracy=a"``).

The shortcut-free clue task (``clue_pool="words"``, with ``thinker_clue_accuracy`` and ``action_mode="discrete"``;
default ``"labels"`` = the clue task above, unchanged). With bare labels the solver's prompt is fixed by the hint's
letter (4 distinct prompts) and the answer is the letter printed in the hint, so a model can learn the task by
copying a letter or by memorising four prompts. Here each episode's ``num_candidates`` candidates are distinct
words drawn from a pool (:mod:`marl_llm_envs.envs.clue_words`: 243 common nouns), listed in the drawn order as
``(A) word, (B) word, ...``, with the true one at a uniformly random position (so the content behind each menu
label is a fresh permutation every episode; thousands of distinct prompts). The clue and the thinker's messages
name the candidate's word, never its label ("I think the answer is river."); both seats still answer with labels
(thinker ``[none]``, ``[A]``, ...; solver ``[A]``, ...), so following a hint means finding its word in the list.
``split`` picks the pool: ``"train"`` (183 words) or ``"test"`` (60 held-out words, none of them in the train
split), so a policy trained on one is evaluated on words it never saw. No problem of ``tasks`` is drawn; the final
infos' ``ground_truth`` is the true word, ``clue`` the word the clue named, ``answer`` the solver's label, and
``task_id`` ``"clue_words/<split>/<the words in order>"``. The numeric observation is that of the clue task (label
positions only; the words are in no vector), and the optimum is the same, ``max(a, (1 - a) / (K - 1))``.

Both seats learning (the credit suite's ``think_solve/both`` settings: discrete mode, ``num_candidates=2``, no
scripted partner). With a learned solver the clue task is a Lewis signalling game: any one-to-one code from clue to
message that the solver decodes is optimal, and at the start neither seat's expected policy gradient points anywhere
(a solver that ignores the message makes every message worth the same, a thinker whose message ignores the clue
makes every answer worth the same). A run leaves this saddle through sampling noise and the initial weights'
asymmetries, or settles in a pooling code (every clue sent as the same message), which scores chance and stays
there. Both seats see what they need: the thinker its clue (the one-hot at the end of its vector), the solver the
message (the message one-hot); no kwarg is needed. Measured with an MLP on the numeric observation, 8 tasks x 4
samples per step (``benchmarks/RESULTS.md``, "Message credit and dynamic teams with both roles learning"): at
accuracy 1.0 broadcast reaches the optimum on 5 of 6 pilot seeds by step 250 of 500 (the sixth pools), coma on 6
of 6; with 4 candidates runs settle in partial pooling codes (2 or 3 clues told apart) and stay there for 1,500 steps.

The free-text hint (``clue_pool="words"`` with ``action_mode="text"``; the ``free_hint`` property). The same
episodes (words, permuted menu, clue, splits), but the thinker **writes** its hint: its turn is free text (no legal
moves; an LLM's generate mode), cut to ``max_thought_chars`` and made printable as in text mode, and the solver
answers with a label, ``[A]`` ... (legal moves in text mode, so an LLM plays it in choice mode). The thinker's prompt
lists the candidates' words in alphabetical order and without labels ("Candidate answers (the Solver sees them in
another order): berry, camel, circus, sand"; its last line asks for one short sentence that names the answer by
its word), so neither a label nor a menu position can be copied into the hint;
and the hint the solver sees has every bracketed label, ``(B)`` or ``[b]``, replaced by ``(?)``
(:func:`without_labels`), so it never holds a label. :meth:`raw_env.hint_candidate` is the hint's reading that the
scripted solver (:func:`marl_llm_envs.scripted.follower_solver`, ``--partners solver=reference``) uses: the
candidate whose word appears first in the hint as a whole word (letters only, case ignored; one regex pass over the
capped text), and a uniform guess when the hint names none. With it, a thinker that names its clue's word first
scores the optimum ``a`` (:func:`~marl_llm_envs.reference.think_solve.clue_relay` writes "I think the answer is
camel."), and one whose hint names no candidate scores ``1/K``. Final infos as in the words task (``answer`` is the
label). A free-text turn cannot be enumerated, so this setting has no exact evaluation
(:mod:`baselines.train.exact_eval` refuses it).

Observation. ``observation`` = the task's features (F), the candidate values (num_candidates; 0 in text mode), the
thinker's message one-hot (1 + num_candidates: none, A, B, ...; zeros until it is sent and in text mode), "a
thinker is present" (1; 0 when ablated), "I am the solver" (1), "the thought was sent" (1), and with
``thinker_clue_accuracy`` the thinker's clue one-hot (num_candidates; thinker only, discrete mode only). The true
answer and the label of the true candidate are in no observation.

Rewards. At the end, both agents get ``1``/``0`` (``"signed"``: ``+1``/``-1``) for a correct/wrong answer. The
final infos add ``correct``, ``answer`` (what the solver answered), ``ground_truth`` and ``task_id``.

Invalid moves. Only the solver can move invalidly in text mode (no ``\\boxed{}``), and either agent in discrete mode
(a masked index or a non-int). ``"penalty"`` (default): the episode ends and the team reward is ``invalid_penalty``
(default -1). ``"retry"``: asked again up to ``max_retries`` times with the error in the prompt, then the penalty.
``"random"``: a uniformly random legal move (discrete mode only; text mode has no finite move set and rejects it).

Ablation. ``ablate("thinker")`` is the solver-solo counterfactual: the thought is removed (or never asked for) and
the solver sees the problem alone under the solo prompt below. It must be taken before the solver answers (an
engine keeps a clone from before the solver's turn). ``ablate("solver")``: the null action is "no answer", scored as
a wrong answer.

The thinker's prompt (text mode)::

    You are the Thinker in a team of two. Your teammate, the Solver, sees the same problem and your message, and
    gives the team's final answer; the team is scored only on that answer. Write a message that helps the Solver:
    reasoning, a plan, checks or a suggested answer. Messages longer than 2000 characters are cut.

    Problem:
    Compute the value of 3 + 4 * 2.

    Write your message to the Solver.

The solver's prompt (text mode)::

    You are the Solver in a team of two. Your teammate, the Thinker, read the same problem and sent you a message.
    The team is scored only on your final answer.

    Problem:
    Compute the value of 3 + 4 * 2.

    Message from the Thinker:
    Multiply first: 4 * 2 = 8, then add 3.

    Give your final answer as \\boxed{...}, for example \\boxed{42}.

The solver's solo prompt (thinker ablated)::

    You are the Solver. Solve the problem on your own.

    Problem:
    Compute the value of 3 + 4 * 2.

    Give your final answer as \\boxed{...}, for example \\boxed{42}.

The thinker's prompt in the clue task (discrete mode, ``thinker_clue_accuracy=0.9``)::

    You are the Thinker in a team of two. Your teammate, the Solver, sees the same problem and your message, and
    gives the team's final answer; the team is scored only on that answer. Write a message that helps the Solver:
    reasoning, a plan, checks or a suggested answer. 

    Problem: hidden in this task (only the Thinker's private clue says which candidate is right).
    Candidate answers: (A), (B), (C), (D)

    Your private clue (the Solver cannot see it): the answer is (B). Such clues are right 90% of the time;
    a wrong clue names one of the 3 other candidates, chosen uniformly at random.

    Choose your message: [none] (send no hint) or one of [A] ("I think the answer is (A)"), [B] ("I think the answer is (B)"), [C] ("I think the answer is (C)"), [D] ("I think the answer is (D)").
    Reply with exactly one choice in square brackets.

The solver's prompt in the clue task (after the thinker sent ``[B]``)::

    You are the Solver in a team of two. Your teammate, the Thinker, read the same problem and sent you a message.
    The team is scored only on your final answer.

    Problem: hidden in this task (only the Thinker's private clue says which candidate is right).
    Candidate answers: (A), (B), (C), (D)

    Message from the Thinker:
    I think the answer is (B).

    Answer with the label of your choice in square brackets: [A], [B], [C], [D].

The solver's prompt with ``clue_pool="words"`` (after the thinker sent ``[C]``; the thinker's prompt lists the same
candidates, its clue as "the answer is camel." and its moves as ``[C] ("I think the answer is camel")``)::

    You are the Solver in a team of two. Your teammate, the Thinker, read the same problem and sent you a message.
    The team is scored only on your final answer.

    Problem: hidden in this task (only the Thinker's private clue says which candidate is right).
    Candidate answers: (A) circus, (B) berry, (C) camel, (D) sand

    Message from the Thinker:
    I think the answer is camel.

    Answer with the label of your choice in square brackets: [A], [B], [C], [D].

The hint made compulsory (``hint_optional=False``, the clue task in discrete mode only; default ``True`` = the
thinker may send ``[none]``, everything above unchanged). The thinker's moves are the labels alone (``[A]``,
``[B]``, ...: it must name a candidate), and its action space is ``Discrete(num_candidates)``; its vector keeps the
same layout (the ``[none]`` slot of the sent-message one-hot stays 0). Its prompt takes the solver's layout, the
clue shown as a message from the thinker's private informant (the same episode, the same clue)::

    You are the Thinker in a team of two. Your teammate, the Solver, sees the same problem and your message, and
    gives the team's final answer; the team is scored only on that answer. Your private informant's message (the Solver cannot see it) is right 90% of the time;
    when it is wrong it names one of the 3 other candidates, chosen uniformly at random.

    Problem: hidden in this task (only the Thinker's private clue says which candidate is right).
    Candidate answers: (A) circus, (B) berry, (C) camel, (D) sand

    Message from your informant:
    I think the answer is camel.

    Answer with the label of your choice in square brackets: [A], [B], [C], [D].

Why it exists: a compulsory hint is a credit setting of its own (no silent thinker), and it is the clue task in the
form SmolLM2-135M's thinker can learn. In supervised probes (benchmarks/RESULTS.md, "The thinker's look-up under
eleven prompts" and "A thinker prompt that begins to learn its look-up"), the solver's prompt in the thinker's seat turned within 10
steps without ``[none]`` on the menu and not with it (held-out 0.68 against 0.27, and 0.65 against 0.27, seeds 0
and 1); the default thinker prompt did not turn within 20 steps with or without ``[none]``, and this layout began to
(0.31 and 0.38 at step 10, seeds 0 and 1). The optimum is unchanged (``a``: :func:`clue_relay` never sends
``[none]`` with a clue); ``ablate("thinker")`` and an invalid thinker move still leave the solver with no message.

Version history. v0: first version. ``thinker_clue_accuracy`` added later (default ``None`` keeps every episode,
observation and reward as before, so no version bump). ``clue_pool`` added later (default ``"labels"`` is recorded
in no transcript and keeps every episode as before, so no version bump). The free-text hint (``clue_pool="words"``
in text mode, which was refused before) added later: no setting that was accepted before changes, so no version
bump. ``hint_optional`` added later (default ``True`` is recorded in no transcript and keeps every episode as before,
so no version bump). Its thinker prompt was the default's less the ``[none]`` entry until 2026-12-07 (the
same day, before any recorded result but two probes, RESULTS.md), then the informant layout above.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from marl_llm_envs.core import check_int
from marl_llm_envs.envs.clue_words import clue_words
from marl_llm_envs.envs.orchestration import BOXED_HINT, ProblemEnv, boxed_answer
from marl_llm_envs.tasks import Task
from marl_llm_envs.text import printable

NO_HINT = "none"
_WORD = re.compile(r"[a-z]+")
_LABEL_MARK = re.compile(r"[(\[]\s*[A-Za-z]\s*[)\]]")      # a menu label written as (B) or [b]


def without_labels(text: str) -> str:
    """``text`` with every menu label in brackets, ``(B)`` or ``[b]``, replaced by ``(?)``: the free hint the
    solver sees names candidates by their words only (one regex pass, linear in the text)."""
    return _LABEL_MARK.sub("(?)", text)
CLUE_POOLS = ("labels", "words")     # what the clue task's candidates are: bare labels, or words from a pool


class raw_env(ProblemEnv):
    env_id = "think_solve-v0"
    version = 0
    possible_agents = ["thinker", "solver"]
    roles = {"thinker": "thinker", "solver": "solver"}
    teams = {"thinker": "team", "solver": "team"}
    metadata = {"render_modes": ["human", "ansi"], "name": "think_solve_v0", "is_parallelizable": False}

    def __init__(self, *, max_thought_chars: int = 2000, thinker_clue_accuracy: float | None = None,
                 clue_pool: str = "labels", hint_optional: bool = True, **kwargs: Any) -> None:
        max_thought_chars = check_int("max_thought_chars", max_thought_chars, 1)
        if clue_pool not in CLUE_POOLS:
            raise ValueError(f"clue_pool={clue_pool!r} is not one of {list(CLUE_POOLS)}")
        if clue_pool == "words" and thinker_clue_accuracy is None:
            raise ValueError("clue_pool='words' is a setting of the clue task: give thinker_clue_accuracy too "
                             "(action_mode='discrete': the thinker picks its hint; 'text': it writes it)")
        if thinker_clue_accuracy is not None:
            if (isinstance(thinker_clue_accuracy, bool) or not isinstance(thinker_clue_accuracy, (int, float))
                    or not 0.0 <= thinker_clue_accuracy <= 1.0):
                raise ValueError("thinker_clue_accuracy must be None or a number in [0, 1], "
                                 f"got {thinker_clue_accuracy!r}")
            thinker_clue_accuracy = float(thinker_clue_accuracy)
        if not isinstance(hint_optional, bool):
            raise ValueError(f"hint_optional must be True or False, got {hint_optional!r}")
        if not hint_optional and (thinker_clue_accuracy is None or kwargs.get("action_mode", "text") != "discrete"):
            raise ValueError("hint_optional=False is a setting of the clue task in discrete mode (the thinker's menu "
                             "loses [none]): give thinker_clue_accuracy and action_mode='discrete' too")
        self.hint_optional = hint_optional
        self.max_thought_chars = max_thought_chars
        self.thinker_clue_accuracy = thinker_clue_accuracy
        self.clue_pool = clue_pool
        extra: dict[str, Any] = {}
        if thinker_clue_accuracy is not None:
            extra["thinker_clue_accuracy"] = thinker_clue_accuracy
        if clue_pool != "labels":       # the default is recorded nowhere: transcripts made before it stay the same
            extra["clue_pool"] = clue_pool
        if not hint_optional:           # likewise: the default is recorded nowhere
            extra["hint_optional"] = False
        super().__init__(max_thought_chars=max_thought_chars, **extra, **kwargs)

    @property
    def clue_task(self) -> bool:
        """True in the clue task (``thinker_clue_accuracy`` set): the thinker gets a private clue."""
        return self.thinker_clue_accuracy is not None

    @property
    def free_hint(self) -> bool:
        """The free-text hint setting (``clue_pool="words"`` in text mode): the thinker writes its hint, the solver
        answers a label."""
        return self.clue_pool == "words" and self.action_mode == "text"

    @property
    def _labelled(self) -> bool:
        """The candidates are labelled moves and the clue is a candidate's index (discrete mode, the free hint)."""
        return self.action_mode == "discrete" or self.free_hint

    @property
    def _hidden_problem(self) -> bool:
        """The clue task in discrete mode (and the free hint) hides the problem and the candidates' values from both
        seats."""
        return self.thinker_clue_accuracy is not None and self._labelled

    def _vector_size(self, feature_size: int, num_candidates: int) -> int:
        clue = num_candidates if self.thinker_clue_accuracy is not None else 0
        return feature_size + num_candidates + (1 + num_candidates) + 3 + clue

    def action_names(self, agent: str) -> list[str]:
        if self.action_mode == "text":
            return list(self.labels) if self.free_hint and agent == "solver" else []
        if agent == "thinker":
            return [NO_HINT, *self.labels] if self.hint_optional else list(self.labels)
        return list(self.labels)

    # -------------------------------------------------------------- game
    def _draw_problem(self) -> None:
        if self.clue_pool != "words":
            super()._draw_problem()
            return
        # the shortcut-free clue task: num_candidates distinct words of the split's pool, in a random order (the
        # menu's order), and the true one at a uniformly random position; no problem of the task source is drawn
        pool = clue_words(self.split)
        words = [pool[int(i)] for i in self.np_random.choice(len(pool), self.num_candidates, replace=False)]
        self._answer_index = self._random_index(self.num_candidates)
        answer = words[self._answer_index]
        self.candidates = words
        self.task = Task(task_id=f"clue_words/{self.split}/{'-'.join(words)}", question="", answer=answer,
                         source="clue_words", distractors=tuple(w for w in words if w != answer),
                         features=(0.0,) * self.task_source.feature_size)
        self._question = ""

    def _start(self) -> None:
        self._draw_problem()
        self.thought: str | None = None      # text mode: the message; discrete: NO_HINT or a label
        self._thought_sent = False
        self._clue: Any = None               # the clue task: a label index (discrete) or an answer text (text mode)
        if self.thinker_clue_accuracy is not None:
            self._clue = self._draw_clue()
        self.agent_selection = "thinker"

    def _draw_clue(self) -> Any:
        """The thinker's private clue: the true answer with probability ``thinker_clue_accuracy``, else one of the
        ``num_candidates - 1`` wrong candidates (discrete: labels; text: the task's first distractors), uniformly."""
        right = self.np_random.random() < self.thinker_clue_accuracy
        if self._labelled:
            if right:
                return self._answer_index
            wrong = [i for i in range(self.num_candidates) if i != self._answer_index]
            return wrong[self._random_index(len(wrong))]
        if right:
            return self.task.answer
        wrong = list(self.task.distractors[: self.num_candidates - 1])
        if not wrong:
            raise ValueError(f"task {self.task.task_id} has no distractors, so thinker_clue_accuracy cannot draw a "
                             "wrong clue")
        return wrong[self._random_index(len(wrong))]

    def clue(self) -> str | None:
        """The thinker's private clue as shown to it (a label such as ``"B"`` in discrete mode, an answer in text
        mode), or ``None`` outside the clue task. Only the thinker's observation contains it."""
        if self._clue is None:
            return None
        if self._labelled:
            return self.candidates[self._clue] if self.clue_pool == "words" else self.labels[self._clue]
        return printable(self._clue, 200)

    def _legal_ids(self, agent: str) -> list[int]:
        return list(range(len(self.action_names(agent))))

    def _parse_free(self, agent: str, text: str) -> tuple[Any, str | None]:
        if agent == "thinker":
            return text, None
        return boxed_answer(text)

    def _null_move(self, agent: str) -> Any:
        return None  # thinker: no message; solver: no answer

    def _apply(self, agent: str, move: Any) -> None:
        if agent == "thinker":
            if move is None or "thinker" in self.ablated:
                self.thought = None
            elif self.action_mode == "discrete":
                self.thought = self.action_names("thinker")[move]
            else:
                self.thought = printable(move, self.max_thought_chars)
                if len(move) > self.max_thought_chars:
                    self.infos["thinker"] = {**self.infos["thinker"], "thought_truncated": True}
            self._thought_sent = True
            self.agent_selection = "solver"
            return
        if move is None:
            answer, correct = None, False
        elif self._labelled:
            answer, correct = self.labels[move], move == self._answer_index
        else:
            answer, correct = printable(move, 500), self._verify(move)
        self._team_finish(self._score(correct), correct=correct, answer=answer, **self._clue_info())

    def _penalize(self, agent: str) -> None:
        self._team_finish(self.invalid_penalty, correct=False, answer=None, outcome="invalid_move", offender=agent,
                          **self._clue_info())

    def _clue_info(self) -> dict[str, Any]:
        if self._clue is None:
            return {}
        right = self._clue == (self._answer_index if self._labelled else self.task.answer)
        return {"clue": self.clue(), "clue_correct": bool(right)}

    def _on_ablate(self, agent: str) -> None:
        if agent == "thinker":
            if self.done:
                raise ValueError("the solver has already answered, so the thinker can no longer be ablated in this "
                                 "episode; ablate a clone taken before the solver's turn")
            self.thought = None

    # -------------------------------------------------------------- observations
    def _text(self, agent: str) -> str:
        solo = "thinker" in self.ablated
        if agent == "thinker":
            if not self.hint_optional:
                return self._required_hint_text()
            if self.action_mode == "discrete":
                moves = ", ".join(f"[{label}] (\"I think the answer is {self._named(k)}\")"
                                  for k, label in enumerate(self.labels))
                task = (f"Choose your message: [{NO_HINT}] (send no hint) or one of {moves}.\n"
                        "Reply with exactly one choice in square brackets.")
            elif self.free_hint:
                task = ("Reply with one short sentence that names the answer by its word, for example \"I think "
                        "the answer is <word>.\" (the Solver's list shows the same words).")
            else:
                task = "Write your message to the Solver."
            return (
                "You are the Thinker in a team of two. Your teammate, the Solver, sees the same problem and your "
                "message, and\ngives the team's final answer; the team is scored only on that answer. Write a "
                "message that helps the Solver:\nreasoning, a plan, checks or a suggested answer. "
                + (f"Messages longer than {self.max_thought_chars} characters are cut.\n\n"
                   if self.action_mode == "text" else "\n\n")
                + f"{self._hint_problem_text() if self.free_hint else self._problem_text()}\n\n"
                + f"{self._clue_text()}{task}"
            )
        if solo:
            head = "You are the Solver. Solve the problem on your own."
            message = ""
        else:
            head = ("You are the Solver in a team of two. Your teammate, the Thinker, read the same problem and sent "
                    "you a message.\nThe team is scored only on your final answer.")
            message = f"\n\nMessage from the Thinker:\n{self._message_text()}"
        if self._labelled:
            task = f"Answer with the label of your choice in square brackets: {', '.join(f'[{x}]' for x in self.labels)}."
        else:
            task = BOXED_HINT
        return f"{head}\n\n{self._problem_text()}{message}\n\n{task}"

    def _required_hint_text(self) -> str:
        """The thinker's prompt with ``hint_optional=False`` (the manual's example): the solver's layout (the
        candidates, then a message naming a word just before the question, then the labels), the clue shown as a
        message from the thinker's private informant. Of the thinker layouts probed, the ones laid out so were the
        ones SmolLM2-135M began to learn within 10 supervised steps (benchmarks/RESULTS.md, "A thinker prompt that
        begins to learn its look-up")."""
        return ("You are the Thinker in a team of two. Your teammate, the Solver, sees the same problem and your "
                "message, and\ngives the team's final answer; the team is scored only on that answer. Your private "
                "informant's message (the Solver cannot see it) is right "
                f"{self.thinker_clue_accuracy:.0%} of the time;\nwhen it is wrong it names one of the "
                f"{self.num_candidates - 1} other candidates, chosen uniformly at random.\n\n{self._problem_text()}"
                f"\n\nMessage from your informant:\nI think the answer is {self._named(self._clue)}.\n\n"
                "Answer with the label of your choice in square brackets: "
                + ", ".join(f"[{x}]" for x in self.labels) + ".")

    def _clue_text(self) -> str:
        if self._clue is None:
            return ""
        wrong = self.num_candidates - 1
        if self._labelled:
            shown, others = self._named(self._clue), f"one of the {wrong} other candidates"
        else:
            wrong = min(wrong, len(self.task.distractors))
            shown, others = self.clue(), f"one of {wrong} plausible wrong answers"
        return (f"Your private clue (the Solver cannot see it): the answer is {shown}. Such clues are right "
                f"{self.thinker_clue_accuracy:.0%} of the time;\na wrong clue names {others}, chosen uniformly at "
                "random.\n\n")

    def _problem_text(self) -> str:
        if not self._hidden_problem:
            return super()._problem_text()
        if self.clue_pool == "words":
            listed = ", ".join(f"({x}) {w}" for x, w in zip(self.labels, self.candidates))
        else:
            listed = ", ".join(f"({x})" for x in self.labels)
        return ("Problem: hidden in this task (only the Thinker's private clue says which candidate is right).\n"
                "Candidate answers: " + listed)

    def _hint_problem_text(self) -> str:
        """The free hint's thinker view: the candidates' words in alphabetical order, without labels, so neither a
        label nor a menu position can be copied into the hint (the solver's list is in the drawn order)."""
        return ("Problem: hidden in this task (only the Thinker's private clue says which candidate is right).\n"
                "Candidate answers (the Solver sees them in another order): " + ", ".join(sorted(self.candidates)))

    def hint_candidate(self, text: str) -> int | None:
        """The free hint's reading: the index of the candidate whose word appears first in ``text`` as a whole word
        (letters only, case ignored), or ``None`` when it names none. One pass over at most
        ``max_thought_chars`` characters (what the solver is shown), so linear in the capped text."""
        index = {w: k for k, w in enumerate(self.candidates)}
        for word in _WORD.finditer(text[: self.max_thought_chars].lower()):
            k = index.get(word.group())
            if k is not None:
                return k
        return None

    def _named(self, k: int) -> str:
        """How a message or clue names candidate ``k`` (discrete mode): its label in brackets, ``(B)``, or with
        ``clue_pool="words"`` its word, never its label."""
        return self.candidates[k] if self.clue_pool == "words" else f"({self.labels[k]})"

    def _problem_vector(self, out: np.ndarray) -> None:
        if not self._hidden_problem:
            super()._problem_vector(out)

    def _message_text(self) -> str:
        if not self._thought_sent:
            return "(not sent yet)"
        if self.thought is None or self.thought == NO_HINT:
            return "(no hint)"
        if self.action_mode == "discrete":
            return f"I think the answer is {self._named(self.labels.index(self.thought))}."
        if self.free_hint:
            return without_labels(self.thought)
        return self.thought

    def _vector(self, agent: str, out: np.ndarray) -> None:
        self._problem_vector(out)
        k = self.problem_size
        if self._thought_sent and self.action_mode == "discrete" and self.thought is not None:
            out[k + [NO_HINT, *self.labels].index(self.thought)] = 1.0    # the same layout without [none]
        k += 1 + self.num_candidates
        out[k] = 0.0 if "thinker" in self.ablated else 1.0
        out[k + 1] = 1.0 if agent == "solver" else 0.0
        out[k + 2] = 1.0 if self._thought_sent else 0.0
        if agent == "thinker" and self._hidden_problem:
            out[k + 3 + self._clue] = 1.0

    def _render(self) -> str:
        lines = [f"[think_solve] task {self.task.task_id} | answer: {self.task.answer}"]
        if self.candidates:
            lines.append("candidates: " + ", ".join(f"({x}) {c}" for x, c in zip(self.labels, self.candidates)))
        if self._clue is not None:
            lines.append(f"thinker's clue: {self.clue()}")
        lines.append(f"thinker: {self._message_text()}")
        lines.append(self._to_move())
        return "\n".join(lines)


env = raw_env
