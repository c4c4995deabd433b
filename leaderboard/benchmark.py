"""``python -m leaderboard benchmark-credit METHOD --tier micro [--quick]``: train a credit method beside the built-in
baselines under one credit-track protocol (same budget, same seeds), evaluate them all, and print the comparison.

For every method (``METHOD`` first: a registered name or ``package.module:ClassName``; then ``--baselines``, by
default every built-in one with ``none`` as the raw-return control) and every env of the protocol's tasks, one
trainer run per training seed of the protocol is made with :func:`baselines.train.train` under the protocol's
budget (model, mode, steps, tasks per step, group size, seed) into ``OUT/<method>/<env>/seed<s>``; a complete run
found there is reused when this machine trained it and it is unchanged (:mod:`leaderboard.suite.cache`), so an
interrupted benchmark continues. A method that cannot train on an env (CCPO needs a
thinker and a solver) is listed as not applicable. Then each method's runs are evaluated into
``OUT/<method>/submission`` (:mod:`leaderboard.evaluate`), validated like any submission, and ranked together
(:mod:`leaderboard.board`). The table is printed and written to ``OUT/comparison.md`` and, with its plots, to
``OUT/index.html``; ``--submit`` adds every
submission to the store; ``--export marl-eval`` also writes ``OUT/marl_eval.json`` in marl-eval's raw-data format
(:func:`marl_eval`).

Protocols: ``credit-<tier>``; ``--quick`` uses ``credit-<tier>-quick`` (a smaller budget, for a first look and the
README demo; its entries rank only against other quick entries).

The suite. Where the tier has a credit-assignment suite (``leaderboard/protocols/suite/``: the newest version of
``credit-micro``, ``credit-micro-quick`` with ``--quick``, ``credit-small``), that is what the tier runs, through
:func:`leaderboard.suite.benchmark_suite`: every family and setting, per-family scores with CIs, a radar chart and
scaling curves. ``--protocol credit-micro`` (or any classic protocol) runs the classic benchmark above.
``jobs`` (``--jobs N``) plays the independent runs in N processes and ``ray`` (``--ray auto|ADDRESS``) over Ray: a
suite's runs, or a classic protocol's training runs (method x env x seed) and then each method's evaluation, both
on the same workers (:class:`leaderboard.workers.Workers`: one pool, or one Ray session); the results are the same as
with one process.

Fidelity. After a suite's runs, the method and its baselines are measured against the true advantage ``A*`` at the
initial policy on the suite's families (:func:`leaderboard.fidelity.for_suite`: a quick suite takes ``fidelity
--quick``'s subset), the table and the verdicts are printed after the comparison and written to
``OUT/<suite>/fidelity/``, and every entry stores its per-family fidelity in a ``fidelity`` field (the leaderboard's
fidelity columns); ``--no-fidelity`` skips it. A classic protocol has no fidelity measurement.

Placement. ``--device``, ``--dtype`` and ``--backend`` are passed to every run's
:class:`~baselines.train.TrainConfig`, on a suite and on a classic protocol. The gpu tier's device is ``cuda`` unless
one is given, and the benchmark refuses to start where there is no CUDA
(:func:`baselines.models.require_device`), before any run, rather than train the gpu tier on the CPU.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from baselines.credit import make_credit
from baselines.models import require_device
from baselines.train.config import BACKENDS, DTYPES
from leaderboard.board import build_board
from leaderboard.evaluate import evaluate
from leaderboard.fidelity import TABLE_COLUMNS, for_suite, table_rows
from leaderboard.protocol import Protocol, load_protocol
from leaderboard.render import PageContext, comparison_markdown, page
from leaderboard.store import add_entry, entry_from
from leaderboard.suite import add_suite_entry, applicable, benchmark_suite, latest_suite, list_suites, \
    load_suite, page_context, reusable_run, safe_name, suite_page, train_run
from leaderboard.validate import validate
from leaderboard.workers import Workers

BASELINES = ("broadcast", "none", "shuffled", "rae", "marshal", "coma", "loo", "ccpo_v1", "ccpo_v2", "dr_mas",
             "mappo", "ippo")

__all__ = ["BASELINES", "benchmark_credit"]


def _check_methods(method: str, baselines: Sequence[str]) -> None:
    """Every method named can be built (a registered name, or ``package.module:Class`` that loads), before any run:
    a misspelt name would otherwise count as a method that applies to no setting, and the benchmark would train
    every baseline and write a page for a method it never ran."""
    for flag, names in (("the method under test", [method]), ("--baselines", list(baselines))):
        for name in names:
            try:
                make_credit(name)
            except ValueError as e:
                raise ValueError(f"{flag}: {e}") from None


def _plan_runs(protocol: Protocol, method: str, out: Path, model: str | None, progress: bool,
               placement: dict[str, str] | None = None) -> list[dict] | str:
    """The method's training specs in (env, seed) order (JSON-able, for :func:`leaderboard.suite.train_run`, which
    reuses a complete run), or why it cannot train. ``placement``: the runs' ``device``, ``dtype`` and ``backend``
    (:func:`_placement`)."""
    t = protocol.train
    env_ids = sorted({task.env_id for task in protocol.tasks})
    for env_id in env_ids:
        why = applicable(method, env_id)
        if why is not None:
            return why
    return [{"method": method, "env_id": env_id, "setting": env_id, "seed": seed,
             "out": str(out / safe_name(method) / env_id / f"seed{seed}"), "action_mode": protocol.action_mode,
             "model": model or t["model"], "mode": t["mode"], "steps": t["steps"],
             "tasks_per_step": t["tasks_per_step"], "group_size": t["group_size"], "progress": progress,
             **(placement or {})}
            for env_id in env_ids for seed in t["seeds"]]


def _evaluate_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Evaluate one method's trained runs into its submission folder (afresh) and validate it like any submission:
    ``{"validated": Validated}``. Module-level like :func:`leaderboard.suite.train_run`; validation costs about as
    much as the evaluation, so it runs in the same worker."""
    sub = Path(spec["sub"])
    if sub.exists():
        shutil.rmtree(sub)
    by_env: dict[str, list[str]] = {}
    for run in spec["runs"]:
        by_env.setdefault(Path(run).parent.name, []).append(f"checkpoint:{run}")
    protocol = load_protocol(spec["protocol"])
    if spec.get("progress"):
        print(f"evaluate {spec['method']} on {protocol.key}", file=sys.stderr)
    evaluate(protocol, by_env, sub, method=spec["name"], progress=False, note=spec["note"])
    return {"validated": validate(sub, protocol=protocol)}


def benchmark_credit(method: str, tier: str | None = None, quick: bool = False, baselines: Sequence[str] = BASELINES,
                     out: str | Path = "runs/benchmark-credit", model: str | None = None, progress: bool = True,
                     submit_to: str | Path | None = None, protocol: str | Path | None = None,
                     export: str | None = None, jobs: int = 1, ray: str | None = None, device: str | None = None,
                     dtype: str = "float32", backend: str = "hf", fidelity: bool = True) -> dict[str, Any]:
    """Run the benchmark (see the module docstring); returns ``{"board": Board, "skipped": {method: why},
    "submissions": {method: folder}, "markdown": str}`` (a suite: :func:`leaderboard.suite.benchmark_suite`'s
    result, with ``"suite": True``). ``device``, ``dtype`` and ``backend`` are every run's (the trainer's flags);
    ``device`` defaults to ``cuda`` on the gpu tier, which refuses to start without CUDA, and to ``cpu`` elsewhere.
    ``fidelity`` (a suite): after the runs, measure the methods' credit fidelity (:func:`_suite_fidelity`)."""
    if export not in (None, "marl-eval"):
        raise ValueError(f"--export {export!r}: the one format is 'marl-eval'")
    _check_methods(method, baselines)
    if protocol is not None and quick:      # the protocol names the budget: --quick would be dropped
        raise ValueError(f"--protocol {protocol} names the protocol; leave out --tier and --quick (they pick one)")
    if ray is not None and jobs != 1:
        raise ValueError(f"--ray plays the runs over Ray's workers; leave out --jobs {jobs}")
    suite = _suite_of("micro" if tier is None else tier, quick, protocol)
    tier = _tier_of(tier, protocol, suite)
    if suite is not None and model is not None:
        raise ValueError(f"--model: {suite} fixes the model it trains (only credit-gpu trains the model you name)")
    if suite is not None:
        if export is not None:
            raise ValueError("--export is for the classic (version 1) protocols; a suite writes results.json")
        placement = _placement(tier, load_suite(suite).train["model"], device, dtype, backend)
        result = benchmark_suite(method, suite, baselines, out, jobs=jobs, ray=ray, progress=progress,
                                 submit_to=None if fidelity else submit_to, placement=placement)
        if fidelity:
            result["fidelity"] = _suite_fidelity(suite, method, baselines, result, jobs, progress)
            _page_with_fidelity(suite, method, result, jobs, ray)
            if submit_to is not None:       # the entries are stored with their fidelity
                for e in result["entries"]:
                    add_suite_entry(e, submit_to)
        return {**result, "suite": True}
    if not fidelity:        # nothing to skip: --no-fidelity would be dropped without a word
        raise ValueError(f"--no-fidelity: {protocol or f'credit-{tier}'} is a classic protocol, which measures no "
                         f"credit fidelity (a suite does)")
    name = str(protocol) if protocol is not None else (f"credit-{tier}-quick" if quick else f"credit-{tier}")
    protocol = load_protocol(name)
    if protocol.track != "credit":
        raise ValueError(f"{protocol.key} is not a credit-track protocol")
    if protocol.train["model"] == "submitter" and not model:
        raise ValueError(f"{protocol.key} trains a model the submitter names: give --model")
    if protocol.train["model"] != "submitter" and model is not None:    # it replaced the protocol's model in every run
        raise ValueError(f"--model: {protocol.key} fixes the model it trains ({protocol.train['model']}); only a "
                         f"protocol whose model is the submitter's (credit-gpu) takes --model")
    placement = _placement(tier, model or protocol.train["model"], device, dtype, backend)
    out = Path(out) / protocol.key
    t0 = time.perf_counter()
    skipped: dict[str, str] = {}
    folders: dict[str, Path] = {}
    validated = {}
    runs: dict[str, list[str]] = {}
    to_train: list[dict[str, Any]] = []
    in_process = jobs == 1 and ray is None    # trainers in other processes stay quiet; the workers report their ends
    for m in dict.fromkeys([method, *baselines]):     # each method once, the one under test first
        planned = _plan_runs(protocol, m, out, model, progress and in_process, placement)
        if isinstance(planned, str):
            skipped[m] = planned
            continue
        runs[m] = [spec["out"] for spec in planned]
        to_train += planned
    # a complete run is reused (train_run); only the others need workers (a pool's worker starts by importing torch)
    to_train = [spec for spec in to_train if not reusable_run(Path(spec["out"]), spec)]
    with Workers(jobs, ray) as workers:       # one pool (or one Ray session) for the training runs and the evaluations
        workers.map(train_run, to_train, progress=progress and not in_process)
        note = f"python -m leaderboard benchmark-credit {method} on {protocol.key}"
        evaluations = []
        for m in runs:
            folders[m] = out / safe_name(m) / "submission"
            evaluations.append({"method": m, "name": safe_name(m), "runs": runs[m], "sub": str(folders[m]),
                                "protocol": name, "note": note, "progress": progress and in_process})
        for m, done in zip(runs, workers.map(_evaluate_one, evaluations)):
            validated[m] = done["validated"]
            if submit_to is not None:  # what submit does after validating (the worker validated it as submit does)
                add_entry(validated[m], submit_to)
    context = _context(method, protocol, model, skipped, time.perf_counter() - t0)
    board, text = _write_comparison(out, validated, context, export)
    return {"board": board, "skipped": skipped, "submissions": folders, "markdown": text, "out": out}


def _suite_of(tier: str, quick: bool, protocol: str | Path | None) -> str | None:
    """The credit suite to run: the tier's newest suite when no protocol is named, the named one when it is a suite
    (a key or a ``marl_llm_suite`` file), else ``None`` (a classic protocol)."""
    if protocol is None:
        return latest_suite(f"credit-{tier}-quick" if quick else f"credit-{tier}")
    if str(protocol) in list_suites() or (str(protocol).endswith(".json") and Path(protocol).is_file()
                                          and '"marl_llm_suite"' in Path(protocol).read_text()):
        return str(protocol)
    return None


def _suite_fidelity(suite: str, method: str, baselines: Sequence[str], result: dict[str, Any], jobs: int,
                    progress: bool) -> dict[str, Any]:
    """Credit fidelity beside the training outcome: the method and its baselines at the initial policy on the suite's
    families (:func:`leaderboard.fidelity.for_suite`; a quick suite: the quick subset), written into
    ``OUT/<suite>/fidelity/`` (``results.json``, ``fidelity.md``, ``fidelity.png``); each entry gets a ``fidelity``
    field (per family: ``r`` with its 95% interval, the settings; ``None`` figures where the method measured
    nothing finite; a family it cannot run on is absent). Returns the measurement with its ``text``."""
    if progress:
        print(f"measure credit fidelity of {method} and its baselines on {suite} (--no-fidelity skips it)",
              file=sys.stderr)
    measured = for_suite(suite, method, [b for b in baselines if b != method], result["out"] / "fidelity", jobs)
    for e in result["entries"]:
        e["fidelity"] = {"suite": measured["suite"], "quick": measured["quick"], "policy": "initial",
                         "settings": measured["settings"], "seeds": measured["seeds"],
                         "families": measured["families"].get(e["method"], {})}
    return {k: measured[k] for k in ("text", "verdicts", "families", "suite", "quick", "wall_s")} | \
        {"out": result["out"] / "fidelity", "trends": measured.get("trends") or [], "columns": TABLE_COLUMNS,
         "rows": table_rows(measured["summary"]) if "summary" in measured else []}


def _page_with_fidelity(suite: str, method: str, result: dict[str, Any], jobs: int, ray: str | None) -> None:
    """The suite's page written again once the fidelity is measured, so that it shows every table the command
    prints (the fidelity ones, and oracle against shuffled in the credit-sensitivity table), with the context and
    figures it was first written with."""
    su = load_suite(suite)
    context = page_context(su, result["scored"], method, runs=len(result["results"]), wall_s=result["wall_s"],
                           execution=f"ray {ray}" if ray else f"{jobs} process(es)")
    (result["out"] / "index.html").write_text(suite_page(su, result["scored"], context, result["skipped"],
                                                         fidelity=result["fidelity"]), encoding="utf-8")


def _tier_of(tier: str | None, protocol: str | Path | None, suite: str | None) -> str:
    """The tier that runs: ``tier`` (default micro), or the named protocol's or suite's own. ``--tier`` beside
    ``--protocol`` must agree with the protocol's tier (it would be dropped otherwise)."""
    if protocol is None:
        return "micro" if tier is None else tier
    own = load_suite(suite).tier if suite is not None else load_protocol(str(protocol)).tier
    if tier is not None and tier != own:
        raise ValueError(f"--protocol {protocol} names the protocol; leave out --tier and --quick (they pick one: "
                         f"--tier {tier}, and the protocol's tier is {own})")
    return own or "micro"


def _placement(tier: str, model: str, device: str | None, dtype: str, backend: str) -> dict[str, str]:
    """Every run's ``device``, ``dtype`` and ``backend`` (the trainer's flags), checked before any run: the gpu tier
    defaults to ``cuda`` and refuses to start where there is no CUDA (it would train on the CPU); a device this machine
    lacks, a dtype or backend the trainer does not know, and ``--backend vllm`` for an MLP (vLLM plays LLM roles
    only) are refused."""
    if dtype not in DTYPES:
        raise ValueError(f"--dtype must be one of {list(DTYPES)}, got {dtype!r}")
    if backend not in BACKENDS:
        raise ValueError(f"--backend must be one of {list(BACKENDS)}, got {backend!r}")
    if backend != "hf" and model == "mlp":
        raise ValueError(f"--backend {backend}: the {tier} tier trains an MLP policy; vLLM plays LLM roles only "
                         f"(give it with --tier small or gpu)")
    if device is None:
        device = "cuda" if tier == "gpu" else "cpu"
        require_device(device, flag="--tier gpu --device" if tier == "gpu" else "--device")
    else:
        require_device(device, flag="--device")
    return {"device": device, "dtype": dtype, "backend": backend}


def _context(method: str, protocol: Protocol, model: str | None, skipped: dict[str, str], wall_s: float):
    """The comparison's :class:`leaderboard.render.PageContext`: the title, the budget, the seeds, the wall time and
    the methods that could not train."""
    t = protocol.train
    return PageContext(
        title=f"benchmark-credit {method} on {protocol.key} ({protocol.tier} tier)", under_test=safe_name(method),
        facts=[("protocol", protocol.description),
               ("budget per run", f"{t['steps']} steps x {t['tasks_per_step']} tasks x {t['group_size']} samples, "
                                  f"model {model or t['model']}"),
               ("seeds", f"training seeds {t['seeds']}; {protocol.seed_count} evaluation seeds per task"),
               ("wall time", f"{wall_s:.0f} s")],
        notes=[f"{m}: not applicable here ({why})" for m, why in skipped.items()])


def _write_comparison(out: Path, validated: dict[str, Any], context, export: str | None):
    """Rank the validated submissions together and write ``comparison.md``, ``index.html`` (when anything was
    ranked) and, with ``export="marl-eval"``, ``marl_eval.json``; returns the board and the Markdown."""
    entries = [entry_from(v) for v in validated.values()]
    board = build_board(entries)
    if board is not None:
        text = comparison_markdown(board, context)
    else:
        text = "\n".join([f"# {context.title}", "", *(f"- {n}" for n in context.notes)]) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.md").write_text(text)
    if board is not None:
        (out / "index.html").write_text(page([(board, entries)], context), encoding="utf-8")
    if export == "marl-eval":
        (out / "marl_eval.json").write_text(json.dumps(marl_eval(validated), indent=1))
    return board, text


def marl_eval(validated: dict[str, Any]) -> dict[str, Any]:
    """The results in marl-eval's raw-data format (instadeepai/marl-eval):
    ``{"marl_llm_envs": {task: {method: {"run_<i>": {"step_<k>": {"step_count": k, "return": [team reward]},
    ..., "absolute_metrics": {"normalized_score": [per seed], "return": [per seed]}}}}}}``.

    Steps are the trainer's logged team reward per training step (one value each: the step's batch mean); the
    absolute metrics are the validated evaluation scores, one per evaluation seed."""
    out: dict[str, Any] = {}
    for method, v in validated.items():
        for task in v.protocol.tasks:
            runs = out.setdefault(task.name, {}).setdefault(method, {})
            for r, (scores, raw) in enumerate(zip(v.scores[task.name], v.raw_scores[task.name])):
                run: dict[str, Any] = {}
                player = v.manifest["players"][task.env_id][r]
                curve = player.get("learning_curve") or {}
                keys = sorted(k for k in curve if k.startswith("reward/team/"))
                for i, step in enumerate(curve.get("step", [])):
                    run[f"step_{step}"] = {"step_count": int(step), "return": [curve[keys[0]][i]] if keys else []}
                run["absolute_metrics"] = {"normalized_score": list(scores), "return": list(raw)}
                runs[f"run_{r + 1}"] = run
    return {"marl_llm_envs": out}
