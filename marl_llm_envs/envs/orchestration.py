"""What the orchestration tasks (think_solve-v0, voting-v0) share: a problem from a task source, its candidate
answers in discrete mode, the reward scheme, and the numeric encoding of the problem.

Candidates (discrete mode): the true answer and ``num_candidates - 1`` of the task's distractors, shuffled by the
env's RNG and labelled A, B, C, ... The label of the true answer is hidden information: it is in no observation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from marl_llm_envs.core import TextEnv
from marl_llm_envs.tasks import Task, TaskSource, make_task_source
from marl_llm_envs.text import find_boxed, printable

REWARD_SCHEMES = {"binary": (0.0, 1.0), "signed": (-1.0, 1.0)}
LABELS = "ABCDEFGH"
BOXED_HINT = "Give your final answer as \\boxed{...}, for example \\boxed{42}."
NO_BOXED = "no \\boxed{...} answer found; end your reply with \\boxed{your answer}"   # the invalid-move reason


def boxed_answer(text: str) -> tuple[str | None, str | None]:
    """A free-text answer as ``_parse_free`` returns it: ``(the last \\boxed{...}'s content, None)``, or
    ``(None, NO_BOXED)`` when ``text`` holds no complete one."""
    answer = find_boxed(text)
    return (answer, None) if answer is not None else (None, NO_BOXED)


def value_feature(answer: str) -> float:
    """A candidate answer as one number in [-1, 1] for small policies (0 when it is not a number)."""
    try:
        x = float(answer.replace(",", ""))
    except ValueError:
        return 0.0
    return math.tanh(x / 100.0) if math.isfinite(x) else 0.0


class ProblemEnv(TextEnv):
    """Base of the envs in which a team answers one problem drawn from a :class:`~marl_llm_envs.tasks.TaskSource`."""

    family = "orchestration"
    reward_schemes: dict[str, tuple[float, float]] = REWARD_SCHEMES  # scheme -> (fail, success); a game may add its own

    def __init__(self, *, tasks: Any = "arithmetic", split: str = "train", reward_scheme: str = "binary",
                 num_candidates: int = 4, **kwargs: Any) -> None:
        source = make_task_source(tasks)
        if split not in ("train", "test"):
            raise ValueError(f"split={split!r} is not one of ['train', 'test']")
        if reward_scheme not in self.reward_schemes:
            raise ValueError(f"reward_scheme={reward_scheme!r} is not one of {list(self.reward_schemes)}")
        if isinstance(num_candidates, bool) or not isinstance(num_candidates, int) or not 2 <= num_candidates <= len(LABELS):
            raise ValueError(f"num_candidates must be an int in 2..{len(LABELS)}, got {num_candidates!r}")
        if kwargs.get("invalid_move") == "random" and kwargs.get("action_mode", "text") == "text":
            raise ValueError(f"invalid_move='random' needs a finite set of legal moves; {self.env_id} in text mode "
                             "takes free-text answers. Use 'penalty' or 'retry', or action_mode='discrete'.")
        self.task_source: TaskSource = source
        self.split = split
        self.reward_scheme = reward_scheme
        self.num_candidates = num_candidates
        self.labels = list(LABELS[:num_candidates])
        self._fail, self._success = self.reward_schemes[reward_scheme]
        self.problem_size = source.feature_size + num_candidates
        self.vector_size = self._vector_size(source.feature_size, num_candidates)
        super().__init__(tasks=source.spec(), split=split, reward_scheme=reward_scheme,
                         num_candidates=num_candidates, **kwargs)

        self.reward_range = (min(self._fail, self.invalid_penalty), self._success)

    def _vector_size(self, feature_size: int, num_candidates: int) -> int:
        raise NotImplementedError

    # -------------------------------------------------------------- problem
    def _draw_problem(self) -> None:
        rng = self.np_random
        self.task: Task = self.task_source.sample(rng, self.split)
        if self.action_mode == "discrete":
            wrong = list(self.task.distractors[: self.num_candidates - 1])
            if len(wrong) < self.num_candidates - 1:
                raise ValueError(f"task {self.task.task_id} has {len(self.task.distractors)} distractors; "
                                 f"num_candidates={self.num_candidates} needs {self.num_candidates - 1}")
            order = rng.permutation(self.num_candidates).tolist()
            options = [self.task.answer, *wrong]
            self.candidates = [options[i] for i in order]
            self._answer_index = order.index(0)  # the position of options[0]
        else:
            self.candidates = []
            self._answer_index = -1
        self._question = printable(self.task.question)

    def answer_index(self) -> int:
        """Privileged: the label index of the true answer in discrete mode. For scripted oracle baselines and tests
        only; it appears in no observation."""
        return self._answer_index

    def _score(self, correct: bool) -> float:
        return self._success if correct else self._fail

    def _verify(self, response: str) -> bool:
        try:
            return bool(self.task_source.verify(self.task, response))
        except Exception:  # a verifier must never crash the env on odd model output; an error counts as wrong
            return False

    def _problem_text(self) -> str:
        text = f"Problem:\n{self._question}"
        if self.candidates:
            text += "\nCandidate answers:\n" + "\n".join(
                f"  ({label}) {printable(c, 200)}" for label, c in zip(self.labels, self.candidates))
        return text

    def _problem_vector(self, out: np.ndarray) -> None:
        """Write the problem's features and the candidates' values at the start of ``out``. They are fixed for the
        episode: encoded once per problem (float32, as ``out`` holds them) and copied on every later call."""
        cached = self.__dict__.get("_problem_encoding")
        if cached is None or cached[0] is not self.task or cached[1] is not self.candidates:
            f = self.task.features
            n = len(f)
            vec = np.zeros(n + len(self.candidates), np.float32)
            if n:
                vec[:n] = f
            for i, c in enumerate(self.candidates):
                vec[n + i] = value_feature(c)
            cached = self._problem_encoding = (self.task, self.candidates, vec)
        vec = cached[2]
        out[:len(vec)] = vec

    def _team_finish(self, reward: float, **extra: Any) -> None:
        self._finish({a: reward for a in self.agents}, task_id=self.task.task_id, ground_truth=self.task.answer,
                     **extra)
