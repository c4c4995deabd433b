"""Think-Solve: a Thinker writes a message, a Solver gives the team's answer.

| Import             | ``from marl_llm_envs import make; make("think_solve-v0")``             |
|--------------------|-----------------------------------------------------------------------|
| Family             | orchestration (one team, ``team``)                                    |
| Agents             | ``thinker`` (role thinker) then ``solver`` (role solver)               |
| Action space       | text: ``Text``; discrete: thinker ``Discrete(1 + num_candidates)``, solver ``Discrete(num_candidates)`` |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (F + 2 * num_candidates + 3,)), [action_mask])``, F = the task source's feature size |
| Reward range       | ``reward_scheme="binary"``: {0, 1}; ``"signed"``: {-1, +1}; ``invalid_penalty`` on an invalid move |
| Kwargs             | ``tasks="arithmetic"``, ``split="train"``, ``reward_scheme="binary"``, ``num_candidates=4``, ``max_thought_chars=2000``, ``action_mode``, ``invalid_move``, ``invalid_penalty``, ``max_retries``, ``render_mode`` |

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

Observation. ``observation`` = the task's features (F), the candidate values (num_candidates; 0 in text mode), the
thinker's message one-hot (1 + num_candidates: none, A, B, ...; zeros until it is sent and in text mode), "a
thinker is present" (1; 0 when ablated), "I am the solver" (1), "the thought was sent" (1). The true answer and the
label of the true candidate are in no observation.

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

Version history. v0: first version.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marl_llm_envs.envs.orchestration import BOXED_HINT, ProblemEnv
from marl_llm_envs.text import find_boxed, printable

NO_HINT = "none"


class raw_env(ProblemEnv):
    env_id = "think_solve-v0"
    version = 0
    possible_agents = ["thinker", "solver"]
    roles = {"thinker": "thinker", "solver": "solver"}
    teams = {"thinker": "team", "solver": "team"}
    metadata = {"render_modes": ["human", "ansi"], "name": "think_solve_v0", "is_parallelizable": False}

    def __init__(self, *, max_thought_chars: int = 2000, **kwargs: Any) -> None:
        if isinstance(max_thought_chars, bool) or not isinstance(max_thought_chars, int) or max_thought_chars < 1:
            raise ValueError(f"max_thought_chars must be a positive int, got {max_thought_chars!r}")
        self.max_thought_chars = max_thought_chars
        super().__init__(max_thought_chars=max_thought_chars, **kwargs)

    def _vector_size(self, feature_size: int, num_candidates: int) -> int:
        return feature_size + num_candidates + (1 + num_candidates) + 3

    def action_names(self, agent: str) -> list[str]:
        if self.action_mode == "text":
            return []
        return [NO_HINT, *self.labels] if agent == "thinker" else list(self.labels)

    # -------------------------------------------------------------- game
    def _start(self) -> None:
        self._draw_problem()
        self.thought: str | None = None      # text mode: the message; discrete: NO_HINT or a label
        self._thought_sent = False
        self.agent_selection = "thinker"

    def _legal_ids(self, agent: str) -> list[int]:
        return list(range(len(self.action_names(agent))))

    def _parse_free(self, agent: str, text: str) -> tuple[Any, str | None]:
        if agent == "thinker":
            return text, None
        answer = find_boxed(text)
        if answer is None:
            return None, "no \\boxed{...} answer found; end your reply with \\boxed{your answer}"
        return answer, None

    def _null_move(self, agent: str) -> Any:
        return None  # thinker: no message; solver: no answer

    def _apply(self, agent: str, move: Any) -> None:
        if agent == "thinker":
            if move is None or "thinker" in self._ablated:
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
        elif self.action_mode == "discrete":
            answer, correct = self.labels[move], move == self._answer_index
        else:
            answer, correct = printable(move, 500), self._verify(move)
        self._team_finish(self._score(correct), correct=correct, answer=answer)

    def _penalize(self, agent: str) -> None:
        self._team_finish(self.invalid_penalty, correct=False, answer=None, outcome="invalid_move", offender=agent)

    def _on_ablate(self, agent: str) -> None:
        if agent == "thinker":
            if self.done:
                raise ValueError("the solver has already answered, so the thinker can no longer be ablated in this "
                                 "episode; ablate a clone taken before the solver's turn")
            self.thought = None

    # -------------------------------------------------------------- observations
    def _text(self, agent: str) -> str:
        solo = "thinker" in self._ablated
        if agent == "thinker":
            if self.action_mode == "discrete":
                moves = ", ".join(f"[{label}] (\"I think the answer is ({label})\")" for label in self.labels)
                task = (f"Choose your message: [{NO_HINT}] (send no hint) or one of {moves}.\n"
                        "Reply with exactly one choice in square brackets.")
            else:
                task = "Write your message to the Solver."
            return (
                "You are the Thinker in a team of two. Your teammate, the Solver, sees the same problem and your "
                "message, and\ngives the team's final answer; the team is scored only on that answer. Write a "
                "message that helps the Solver:\nreasoning, a plan, checks or a suggested answer. "
                + (f"Messages longer than {self.max_thought_chars} characters are cut.\n\n"
                   if self.action_mode == "text" else "\n\n")
                + f"{self._problem_text()}\n\n{task}"
            )
        if solo:
            head = "You are the Solver. Solve the problem on your own."
            message = ""
        else:
            head = ("You are the Solver in a team of two. Your teammate, the Thinker, read the same problem and sent "
                    "you a message.\nThe team is scored only on your final answer.")
            message = f"\n\nMessage from the Thinker:\n{self._message_text()}"
        if self.action_mode == "discrete":
            task = f"Answer with the label of your choice in square brackets: {', '.join(f'[{x}]' for x in self.labels)}."
        else:
            task = BOXED_HINT
        return f"{head}\n\n{self._problem_text()}{message}\n\n{task}"

    def _message_text(self) -> str:
        if not self._thought_sent:
            return "(not sent yet)"
        if self.thought is None or self.thought == NO_HINT:
            return "(no hint)"
        if self.action_mode == "discrete":
            return f"I think the answer is ({self.thought})."
        return self.thought

    def _vector(self, agent: str, out: np.ndarray) -> None:
        self._problem_vector(out)
        k = self.problem_size
        if self._thought_sent and self.action_mode == "discrete" and self.thought is not None:
            out[k + self.action_names("thinker").index(self.thought)] = 1.0
        k += 1 + self.num_candidates
        out[k] = 0.0 if "thinker" in self._ablated else 1.0
        out[k + 1] = 1.0 if agent == "solver" else 0.0
        out[k + 2] = 1.0 if self._thought_sent else 0.0

    def _render(self) -> str:
        lines = [f"[think_solve] task {self.task.task_id} | answer: {self.task.answer}"]
        if self.candidates:
            lines.append("candidates: " + ", ".join(f"({x}) {c}" for x, c in zip(self.labels, self.candidates)))
        lines.append(f"thinker: {self._message_text()}")
        lines.append(self._to_move())
        return "\n".join(lines)


env = raw_env
