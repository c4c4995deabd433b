"""Reference policies of orchestrator-v0: the delegator and the solo orchestrator (with the same workers).

Each plays every seat: the orchestrator's turns and the workers' (a worker follows its private notes in discrete mode
and computes its arithmetic sub-task exactly in text mode).

* :func:`delegator`: gives part ``i`` to worker slot ``i`` (itself once the slots run out), then takes each worker's
  report as that part's result (its own notes where there is no report) and combines the results by the problem's
  formula. In text mode it spawns one worker per part with the part's question and combines the reports exactly.
* :func:`solo`: spawns no worker and answers every part itself (discrete: from its own notes; text: computes them).

They read only what the seat may know: the problem's statement and structure (``task.parts`` questions and
``task.combine``, which the problem states), the orchestrator's own notes and the reports, a worker's own sub-task
and notes. In text mode both compute exactly, so both score 1: the skills that make delegation pay are modelled in
discrete mode, where the anchors are measured.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marl_llm_envs.envs.orchestrator import ORCHESTRATOR
from marl_llm_envs.tasks.composite import combine_parts, evaluate_formula, format_value

__all__ = ["delegator", "solo"]

_PREFIX = "Compute the value of "


def _compute(question: str) -> str | None:
    """The value of an arithmetic question ``"Compute the value of <expr>."``, or ``None``."""
    text = question.strip()
    if not text.startswith(_PREFIX):
        return None
    value = evaluate_formula(text[len(_PREFIX):].rstrip("."), {})
    return None if value is None else format_value(value)


def _worker(base, agent: str, rng: np.random.Generator) -> Any:
    if base.action_mode == "discrete":
        notes = base.notes(agent)
        return notes if notes is not None else int(rng.integers(base.num_candidates))
    return f"\\boxed{{{_compute(base.subtask(agent)) or 0}}}"


def _final_text(base, results: list[str | None]) -> str:
    own = [r if r is not None else _compute(p.question) for r, p in zip(results, base.task.parts)]
    answer = combine_parts(base.task, own)
    return f"\\boxed{{{answer if answer is not None else 0}}}"


def _orchestrate(base, rng: np.random.Generator, delegate: bool) -> Any:
    parts = base.task.parts
    if base.action_mode == "discrete":
        i = base.current_part
        if base.phase == "plan":
            if delegate and i < base.max_workers and base.workers[i] not in base.spawned():
                return 1 + i
            return 0
        worker = base.assignee(i)
        report = None if worker is None else base.report(worker)
        if report is None:
            notes = base.notes(ORCHESTRATOR, i)
            report = notes if notes is not None else int(rng.integers(base.num_candidates))
        return 1 + base.max_workers + report
    if base.phase == "plan":
        if not delegate:
            return "I will solve every part myself."
        return "\n".join(f"[spawn: {p.question}]" for p in parts[: base.max_workers])
    reports = {base.subtask(w): base.report(w) for w in base.spawned()}
    return _final_text(base, [reports.get(p.question) for p in parts])


def delegator(env, agent: str, rng: np.random.Generator) -> Any:
    """orchestrator-v0: delegate every part (part i to slot i) and combine the reports; workers follow their notes."""
    base = env.unwrapped
    if agent == ORCHESTRATOR:
        return _orchestrate(base, rng, delegate=True)
    return _worker(base, agent, rng)


def solo(env, agent: str, rng: np.random.Generator) -> Any:
    """orchestrator-v0: spawn no worker; answer every part from the orchestrator's own notes (text: compute)."""
    base = env.unwrapped
    if agent == ORCHESTRATOR:
        return _orchestrate(base, rng, delegate=False)
    return _worker(base, agent, rng)

