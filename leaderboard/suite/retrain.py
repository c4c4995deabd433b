"""``validate FOLDER --reproduce`` on a suite submission: the maintainer re-trains its runs and requires the same
result (issue 42).

A suite run is an MLP trained on the CPU, deterministic given its config (``tests/baselines/train/test_checkpoint.py``), and
takes seconds; so every run is re-trained by default (``retrain=k``: ``k`` of them, drawn with the validator's audit
seed, which the submitter cannot know when the runs are made). A built-in method is trained in this process; a method
of one's own only from the source that travelled with the submission, in one sandboxed child process
(:func:`leaderboard.reproduce.train_sandboxed`: CPU, memory and file-size limits, no network where the OS allows,
imports limited to the method's file, this package and the installed packages), which also reports the settings the
method cannot train on (they must be the ones the submission skipped). Each re-trained run must have the shipped
final weights (their SHA-256), the weights of every other checkpoint it ships (a suite that keeps several:
each is scored) and the shipped ``metrics.jsonl`` row for row (timings aside): a raised learning curve,
a run trained longer or by another method, or weights from elsewhere are caught by name. A run that is not re-trained
stays self-reported, and so does the entry: it is labelled reproduced only when every run was."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from baselines.credit import list_credits
from baselines.outputs import read_json_object
from baselines.train import TrainConfig, checkpoint, train
from baselines.train.config import OUTPUT_FIELDS, read_run_config
from leaderboard.players import weights_sha256
from leaderboard.reproduce import train_sandboxed
from leaderboard.submission_json import SubmissionError
from leaderboard.suite.score import add_suite_entry
from leaderboard.suite.submission import MANIFEST, SuiteValidated, suite_entry, validate_suite
from leaderboard.validate import draw_audit_seed

__all__ = ["reproduce_suite", "submit_suite"]


def _weights(step_dir: Path) -> str:
    _, tensors = checkpoint.load(step_dir)
    return weights_sha256(*(state["model"] for state in tensors["learners"]))


def _rows(run: Path) -> list[dict[str, Any]]:
    """The run's metrics without its timings (the only figures that differ between two runs of one config)."""
    path = run / "metrics.jsonl"
    rows = [read_json_object(path, "", line=i, text=line) for i, line in enumerate(path.read_text().splitlines(), 1)
            if line.strip()]
    return [{k: v for k, v in r.items() if not (k.startswith("time/") or k.endswith("/time"))} for r in rows]


def _same(shipped: Path, again: Path, where: str) -> None:
    mine, theirs = _rows(again), _rows(shipped)
    if len(mine) != len(theirs):
        raise SubmissionError(f"{where}/metrics.jsonl: {len(theirs)} steps, the run trained again here has "
                              f"{len(mine)}")
    for step, (a, b) in enumerate(zip(mine, theirs)):
        if a != b:
            key = next((k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)), "?")
            raise SubmissionError(f"{where}/metrics.jsonl: step {step} records {key}={b.get(key)!r}, the run trained "
                                  f"again here from its config gives {a.get(key)!r} (the metrics are not the run's)")
    if _weights(checkpoint.latest(again / "checkpoints")) != _weights(checkpoint.latest(shipped / "checkpoints")):
        raise SubmissionError(f"{where}/checkpoints: the final weights are not the ones the run's config trains "
                              f"(trained again here: another SHA-256)")
    for step_dir in sorted(p for p in (shipped / "checkpoints").iterdir() if p.is_dir()):     # every kept one
        mine = again / "checkpoints" / step_dir.name
        if not mine.is_dir() or _weights(mine) != _weights(step_dir):
            raise SubmissionError(f"{where}/checkpoints/{step_dir.name}: not the weights the run's config trains "
                                  f"at that step (trained again here: "
                                  f"{'another SHA-256' if mine.is_dir() else 'no such checkpoint'})")


def reproduce_suite(v: SuiteValidated, retrain: int | None = None, audit_seed: int | None = None,
                    workdir: str | Path | None = None) -> dict[str, Any]:
    """Re-train ``v``'s runs (all, or ``retrain`` drawn with ``audit_seed``, default a fresh validator-side seed)
    and require the shipped weights and metrics (see the module docstring). Records what was re-trained in
    ``v.reproduced`` when every run was (the entry is then "reproduced by the maintainer") and returns it:
    ``{"retrained": n, "of": total, "audit_seed": seed, "detection": {...}}``."""
    seed = int(audit_seed) if audit_seed is not None else draw_audit_seed()
    every = list(range(len(v.runs)))
    chosen = every if retrain is None or retrain >= len(every) else sorted(random.Random(seed).sample(every, retrain))
    own = v.method_file is not None or v.method not in list_credits()
    if own and v.method_file is None:
        raise SubmissionError(f"{MANIFEST}.method: {v.method!r} is not a built-in credit method and its source did "
                              f"not travel with the submission (<module>.py beside {MANIFEST}, for a method "
                              f"<module>:<Class> in a top-level module); it cannot be re-trained here")
    with tempfile.TemporaryDirectory(prefix="reproduce-suite-", dir=workdir) as tmp:
        jobs = []
        for i in chosen:
            fields = {k: x for k, x in read_run_config(v.runs[i][1]).fields.items() if k not in OUTPUT_FIELDS}
            jobs.append((fields, Path(tmp) / f"run{i}"))
        if own:
            env_ids = sorted({s.env_id for s in v.suite.settings})
            why = train_sandboxed(jobs, Path(v.method_file), MANIFEST, applicable=(v.method, env_ids))
            cannot = sorted(s.name for s in v.suite.settings if why.get(s.env_id) is not None)
            if cannot != sorted(v.skipped):
                raise SubmissionError(f"{MANIFEST}.skipped: the shipped method cannot train on {cannot or 'none'} of "
                                      f"{v.suite.key}'s settings (asked in its sandbox), the submission skips "
                                      f"{sorted(v.skipped) or 'none'}")
        else:
            for fields, out in jobs:
                try:
                    train(TrainConfig(**fields, out=str(out), progress=False, tensorboard=False))
                except Exception as e:  # noqa: BLE001 - a config that does not train is a rejection, not a crash
                    raise SubmissionError(f"{out.name}: the run's config does not train ({type(e).__name__}: "
                                          f"{str(e)[:300]})") from None
        folder = v.runs[0][1].parent.parent.parent if v.runs else Path(".")
        for (_, out), i in zip(jobs, chosen):
            shipped = v.runs[i][1]
            _same(shipped, out, str(shipped.relative_to(folder)))
    record = {"retrained": len(chosen), "of": len(every), "audit_seed": seed,
              "detection": {"one_forged_run": round(len(chosen) / max(1, len(every)), 4)}}
    v.reproduced = record if len(chosen) == len(every) else None
    return record


def submit_suite(folder: str | Path, store: str | Path, suite=None, reproduce: bool = False,
                 audit_seed: int | None = None) -> dict[str, Any]:
    """Validate a suite submission (:func:`leaderboard.suite.submission.validate_suite`), re-train its runs with
    ``reproduce``, and add its entry to ``store``; returns the entry. A failure writes nothing."""
    v = validate_suite(folder, suite=suite)
    if reproduce:
        reproduce_suite(v, audit_seed=audit_seed)
    e = suite_entry(v)
    add_suite_entry(e, store)
    return e
