"""Problem sources with exact verifiers for the orchestration environments.

The orchestration environments (``think_solve-v0``, ``voting-v0``, ``orchestrator-v0``) need a
stream of problems with a known answer, an exact verifier for the solver's
``\\boxed{...}`` content, a few plausible wrong answers (for voting and for
scripted "wrong" agents) and a fixed-length numeric encoding of each question
(for small MLP policies).  This module provides them.

Sources
-------
``arithmetic``  (:class:`ArithmeticTasks`)
    Multi-step integer expressions with ``+ - *`` and parentheses, built as an
    expression tree and evaluated exactly (no ``eval``).  ``difficulty`` 1..5
    raises the number of operations and the operand size.

``knights_knaves``  (:class:`KnightsKnavesTasks`)
    Knights (always truthful) and knaves (always lying) puzzles with 2..4
    inhabitants; only puzzles with exactly one consistent assignment (checked
    by brute force) are emitted.  Canonical answer: ``"Alice: knight, Bob: knave"``
    in the order the inhabitants are introduced.

``countdown``  (:class:`CountdownTasks`)
    Reach a target number from 3..6 given numbers with ``+ - * /``; any
    correct expression is accepted (exact rational evaluation, own parser).

``jsonl`` / ``parquet``  (:class:`DatasetTasks`)
    Local GSM8K-style (``"... #### 72"``) or MATH-style (``\\boxed{...}``)
    datasets.  Verification uses ``math_verify`` (``pip install math-verify``)
    with a normalised string / number fallback.  Parquet needs ``pyarrow``.
    Records with a ``parts`` field are composite problems (see below).

``composite``  (:class:`CompositeTasks`)
    Composite arithmetic for ``orchestrator-v0``: ``parts`` (2..6) arithmetic
    sub-problems (``difficulty`` 1..5) combined by a ``+ - *`` formula, e.g.
    "Compute a + b * c, where a = ..., b = ..., c = ...".  Each part is a full
    task of its own (``Task.parts``); the formula is ``Task.combine``.

Composite problems
------------------
A composite task lists its independent sub-problems in ``Task.parts`` (named
``a``, ``b``, ... in order, each with its own answer, distractors and features)
and, where the results combine by a formula, the formula in ``Task.combine``
(:func:`combine_parts` evaluates it exactly). ``TaskSource.verify_part`` checks
one part's result; ``max_parts`` and ``part_feature_size`` size the encodings.
In a ``jsonl``/``parquet`` file, a record's ``parts`` field is a list of
``{"question": ..., "answer": ...}`` objects (answers extracted as for the whole
problem) and its optional ``combine`` field the formula; either every record
has ``parts`` or none does.

Spec strings accepted by :func:`make_task_source`
-------------------------------------------------
* ``"arithmetic"``, ``"arithmetic:difficulty=3"``,
  ``"arithmetic:difficulty=3,test_fraction=0.2"``
* ``"knights_knaves"``, ``"knights_knaves:people=3"`` (``knights-knaves`` works too)
* ``"countdown"``, ``"countdown:numbers=5,max_number=20"``
* ``"composite"``, ``"composite:parts=4,difficulty=2"``
* ``"jsonl:/path/to/file.jsonl"``, ``"parquet:/path/to/file.parquet"``
  (everything after the first colon is the path), optionally with parameters
  after a ``?``: ``"jsonl:/data/math.jsonl?question_field=problem&answer_field=solution"``,
  or the explicit form ``"jsonl:path=/data/x.jsonl,split_field=split"``
* a ``dict`` as returned by :meth:`TaskSource.spec`, e.g.
  ``{"name": "arithmetic", "difficulty": 3, "test_fraction": 0.1}``
* a :class:`TaskSource` instance (returned unchanged)

Train/test splits
-----------------
Every problem belongs to exactly one split, decided by a SHA-256 hash of its
question text (:func:`split_of`, about ``test_fraction`` = 10% test).  The
procedural sources resample until the drawn problem lies in the requested
split; datasets may override the hash with a ``split_field``.  All randomness
comes from the ``numpy.random.Generator`` passed to ``sample``; the same
generator state and split always give the same task.

Layout
------
One module per source (:mod:`.arithmetic`, :mod:`.knights_knaves`, :mod:`.countdown`, :mod:`.datasets`,
:mod:`.composite`), the interface and the split hash in :mod:`.base`, the answer helpers every verifier shares in
:mod:`.verify`; this module is the factory and re-exports every public name.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any, Callable, Optional

from marl_llm_envs.tasks.arithmetic import ArithmeticTasks
from marl_llm_envs.tasks.base import SPLITS, Task, TaskSource, split_of
from marl_llm_envs.tasks.composite import CompositeTasks, combine_parts
from marl_llm_envs.tasks.countdown import CountdownTasks
from marl_llm_envs.tasks.datasets import DatasetTasks, extract_dataset_answer
from marl_llm_envs.tasks.knights_knaves import KnightsKnavesTasks
from marl_llm_envs.tasks.verify import answer_key, extract_boxed
from marl_llm_envs.text import printable as to_printable_ascii

__all__ = [
    "Task",
    "TaskSource",
    "ArithmeticTasks",
    "KnightsKnavesTasks",
    "CountdownTasks",
    "DatasetTasks",
    "CompositeTasks",
    "combine_parts",
    "make_task_source",
    "split_of",
    "to_printable_ascii",
    "answer_key",
    "extract_boxed",
    "extract_dataset_answer",
    "SPLITS",
]


def _make_dataset(fmt: str) -> Callable[..., DatasetTasks]:
    def factory(path: Optional[str] = None, **kwargs: Any) -> DatasetTasks:
        if not path:
            raise ValueError(f"the {fmt!r} task source needs a path, e.g. '{fmt}:/data/file.{fmt}'")
        return DatasetTasks(path, fmt=fmt, **kwargs)

    return factory


_REGISTRY: dict[str, tuple[Callable[..., TaskSource], Callable]] = {
    "arithmetic": (ArithmeticTasks, ArithmeticTasks.__init__),
    "knights_knaves": (KnightsKnavesTasks, KnightsKnavesTasks.__init__),
    "countdown": (CountdownTasks, CountdownTasks.__init__),
    "composite": (CompositeTasks, CompositeTasks.__init__),
    "jsonl": (_make_dataset("jsonl"), DatasetTasks.__init__),
    "parquet": (_make_dataset("parquet"), DatasetTasks.__init__),
}
_ALIASES = {"knights_and_knaves": "knights_knaves", "kk": "knights_knaves", "json": "jsonl"}


def _coerce(value: str) -> Any:
    v = value.strip()
    low = v.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def _parse_params(text: str, sep: str, where: str) -> dict:
    params: dict[str, Any] = {}
    for piece in text.split(sep):
        if not piece.strip():
            continue
        if "=" not in piece:
            raise ValueError(f"bad task-source parameter {piece!r} in {where!r}; expected key=value")
        k, v = piece.split("=", 1)
        params[k.strip()] = _coerce(v)
    return params


def _resolve_name(name: str) -> str:
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        known = sorted(_REGISTRY)
        close = difflib.get_close_matches(key, known + sorted(_ALIASES), n=3, cutoff=0.5)
        close = [_ALIASES.get(c, c) for c in close]
        hint = f"; did you mean {', '.join(repr(c) for c in dict.fromkeys(close))}?" if close else ""
        raise ValueError(f"unknown task source {name!r}; known sources: {', '.join(known)}{hint}")
    return key


def _build(name: str, params: dict) -> TaskSource:
    factory, init = _REGISTRY[name]
    allowed = [p for p in inspect.signature(init).parameters if p not in ("self", "fmt")]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {unknown} for task source {name!r}; accepted: {allowed}"
        )
    return factory(**params)


def make_task_source(spec: Any) -> TaskSource:
    """Build a :class:`TaskSource` from an instance, a spec string or a spec dict.

    See the module docstring for the accepted string forms.  Unknown names
    raise ``ValueError`` listing the known sources and close matches.
    """
    if isinstance(spec, TaskSource):
        return spec
    if isinstance(spec, dict):
        params = dict(spec)
        if "name" not in params:
            raise ValueError(f"task-source spec dict needs a 'name' key, got {spec!r}")
        name = _resolve_name(params.pop("name"))
        return _build(name, params)
    if isinstance(spec, str):
        text = spec.strip()
        name_part, _, rest = text.partition(":")
        name = _resolve_name(name_part)
        if name in ("jsonl", "parquet"):
            rest = rest.strip()
            if rest.startswith("path="):
                params = _parse_params(rest, ",", spec)
                if isinstance(params.get("path"), (int, float)):
                    params["path"] = str(params["path"])
            else:
                path, _, query = rest.partition("?")
                params = _parse_params(query, "&", spec)
                params["path"] = path
            return _build(name, params)
        return _build(name, _parse_params(rest, ",", spec))
    raise TypeError(f"cannot build a task source from {type(spec).__name__}: {spec!r}")
