"""A suite entry is a submission like any other (issue 42): the runs travel as a folder, and the validator recomputes
every score from what it can re-derive.

The folder (written by :func:`write_submission`, which ``benchmark-credit`` calls for every method of a suite run,
into ``OUT/<suite>/submissions/<method>/``)::

    suite_submission.json                     the manifest: method, suite (id, version, SHA-256), the settings the
                                              method cannot train on (with why), the method's source hash
    <module>.py                               a method of one's own (<module>:<Class>), its source (never imported
                                              by the validator; re-trained in a sandbox by --reproduce)
    runs/<setting>/seed<s>/config.json        each run: the trainer's config,
    runs/<setting>/seed<s>/metrics.jsonl      its per-step metrics (the learning curve),
    runs/<setting>/seed<s>/checkpoints/...    its final checkpoint (safetensors and JSON: nothing that runs code),
                                              or, for a suite that keeps several (``score.checkpoints``:
                                              credit-micro@4), every kept checkpoint, step-<steps/k> .. step-<steps>

:func:`validate_suite` checks, in order (the first failure is a :class:`~leaderboard.validate.SubmissionError`
naming the file or field; nothing is scored from a folder that fails):

1. Files: exactly those above, no links, each within its size limit (:class:`SuiteLimits`), checked before it is
   read. A planted ``anchors.json``, ``results.json`` or anything else is refused by name: the validator computes
   the anchors itself, never reads them from a submission.
2. The manifest (strict JSON), the suite it names (registered, never a path; the SHA-256 of its text).
3. The runs: exactly one per setting and training seed of the suite, but the settings the method cannot train on
   (a built-in method: computed here with :func:`leaderboard.suite.runs.applicable`; a method of one's own: claimed,
   and checked in the sandbox by ``--reproduce``). Each run's config has every ``TrainConfig`` field the suite pins
   (:func:`pinned_suite_config`: the setting's env, kwargs, partners, budget and seed, and the trainer settings
   every method shares), the method's bounded fields within bounds, the submission's own method (one method and
   options for every run; a built-in one under its own name; a shipped source whose SHA-256 is the manifest's),
   and a final checkpoint at the last step.
4. Scores, recomputed here from a spec the validator builds from the suite (:func:`leaderboard.suite.runs.score_run`),
   normalized against anchors it measures itself (:func:`leaderboard.suite.cache.anchor_cache`):
   ``versus`` settings by playing (or solving exactly) the shipped final policy against the suite's opponent;
   ``self`` settings from the tail of the run's ``metrics.jsonl``, which is self-reported until ``--reproduce``
   re-trains the run (:func:`leaderboard.suite.retrain.reproduce_suite`) and finds the same weights and curve. A
   suite that keeps several checkpoints (credit-micro@4) scores every setting from the shipped weights alone: each
   kept checkpoint is played here on the held-out seeds (or solved exactly), the final policy is the score and the
   best checkpoint is chosen and reported on the two halves of those seeds (:func:`~leaderboard.suite.runs.
   score_run`); the weights themselves are the submitter's until ``--reproduce`` re-trains the run and finds the same
   weights in every kept checkpoint.

Sizes: every file within its :class:`SuiteLimits` cap. An MLP checkpoint of the micro tier is about 150 KB (its
weights, the optimizer's moments and the RNG states), so a credit-micro@4 run with its 5 kept checkpoints is under
1 MB and a whole submission (about 400 runs) under 400 MB.

An entry (:func:`suite_entry`) is ``self_reported`` unless the runs were re-trained here."""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.credit import list_credits
from baselines.outputs import read_capped, safe_name
from baselines.train import checkpoint
from baselines.train.config import OUTPUT_FIELDS, read_run_config
from leaderboard.evaluate import check_pinned, file_sha256, git_sha, package_versions, trainer_pins
from leaderboard.players import credit_sha256
from leaderboard.protocol import ProtocolError
from leaderboard.submission_json import METHOD_NAME, SubmissionError, loads_strict, safe_text
from leaderboard.suite.cache import anchor_cache
from leaderboard.suite.runs import applicable, kept_steps, run_spec, score_run
from leaderboard.suite.score import entry, score
from leaderboard.suite.spec import Setting, Suite, list_suites, load_suite

__all__ = ["MANIFEST", "SuiteLimits", "SuiteValidated", "pinned_suite_config", "suite_entry", "validate_suite",
           "write_submission"]

MANIFEST = "suite_submission.json"
SCHEMA = "marl_llm_suite_submission"
VERSION = 1
METHOD_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\.py")
_RUN_FILES = ("config.json", "metrics.jsonl")
_STEP_FILES = ("meta.json", checkpoint.STATE_JSON, checkpoint.STATE_TENSORS)


@dataclass(frozen=True)
class SuiteLimits:
    manifest_bytes: int = 1 << 20           # suite_submission.json
    metrics_bytes: int = 16 << 20           # one run's metrics.jsonl
    config_bytes: int = 1 << 20             # one run's config.json (read_run_config reads within 1 MiB)
    checkpoint_bytes: int = 64 << 20        # one file of a final checkpoint (an MLP's are kilobytes)
    method_bytes: int = 256 << 10           # a method's shipped source


@dataclass
class SuiteValidated:
    """A suite submission that passed :func:`validate_suite`: the scores the validator computed."""

    manifest: dict[str, Any]
    suite: Suite
    method: str
    results: list[dict[str, Any]]                   # per run: score_run's result, from the validator's own spec
    scored: dict[str, Any]                          # leaderboard.suite.score.score of the results
    runs: list[tuple[dict[str, Any], Path]] = field(default_factory=list)     # (the validator's spec, run folder)
    skipped: dict[str, str] = field(default_factory=dict)
    method_file: str | None = None
    reproduced: dict[str, Any] | None = None        # what --reproduce re-trained (None: self-reported)

    @property
    def self_reported(self) -> bool:
        return self.reproduced is None


def pinned_suite_config(suite: Suite, s: Setting, seed: int) -> dict[str, Any]:
    """Every ``TrainConfig`` field the suite fixes for the run of setting ``s`` with training seed ``seed``: the
    trainer's shared settings at their defaults (:func:`leaderboard.evaluate.trainer_pins`), then the setting's env,
    kwargs, partners and budget."""
    b = suite.budget(s)
    return {**trainer_pins(), "env": s.env_id, "env_kwargs": dict(s.env_kwargs), "action_mode": suite.action_mode,
            "model": b["model"], "mode": b["mode"], "steps": b["steps"], "tasks_per_step": b["tasks_per_step"],
            "group_size": b["group_size"], "seed": seed, "partners": s.partners}


def _run_folder(folder: Path, setting: str, seed: int) -> Path:
    return folder / "runs" / safe_name(setting) / f"seed{seed}"


def write_submission(suite: Suite, method: str, runs: dict[tuple[str, int], Path], skipped: dict[str, str],
                     folder: Path, note: str = "") -> Path:
    """Write ``method``'s suite submission into ``folder`` (emptied first): its runs (``(setting, seed) -> run
    folder``) with their config, metrics and final checkpoint (every kept checkpoint, for a suite that keeps
    several), the manifest and, for a method of one's own in a top-level module file, that file."""
    if folder.exists():
        shutil.rmtree(folder)
    settings = {s.name: s for s in suite.settings}
    for (setting, seed), run in sorted(runs.items()):
        dest = _run_folder(folder, setting, seed)
        (dest / "checkpoints").mkdir(parents=True)
        for name in _RUN_FILES:
            shutil.copyfile(run / name, dest / name)
        latest = checkpoint.latest(run / "checkpoints")
        kept = [latest.name] if suite.score["checkpoints"] == 1 else [
            f"step-{k:07d}" for k in kept_steps(suite.budget(settings[setting])["steps"], suite.score["checkpoints"])]
        for name in kept:
            shutil.copytree(run / "checkpoints" / name, dest / "checkpoints" / name)
        shutil.copyfile(run / "checkpoints" / "latest", dest / "checkpoints" / "latest")
    module, _, name = method.partition(":")
    source = sys.modules.get(module)
    origin = getattr(source, "__file__", None)
    if method not in list_credits() and name and module.isidentifier() and origin and origin.endswith(".py"):
        shutil.copyfile(origin, folder / f"{module}.py")
    manifest = {"schema": SCHEMA, "schema_version": VERSION, "method": method, "note": note,
                "suite": {"id": suite.id, "version": suite.version, "sha256": suite.sha256},
                "skipped": dict(sorted(skipped.items())), "credit_sha256": credit_sha256(method),
                "packages": package_versions(), "git_sha": git_sha()}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return folder


def _suite_of(named: Any, suite: Suite | str | Path | None) -> Suite:
    """The suite the manifest names (registered, never a path), or ``suite`` (a maintainer's choice); its text must
    be the one the runs were made with."""
    where = f"{MANIFEST}.suite"
    if not isinstance(named, dict) or sorted(named) != ["id", "sha256", "version"]:
        raise SubmissionError(f"{where}: {{'id', 'version', 'sha256'}} of the suite the runs were made for")
    key = f"{named['id']}@{named['version']}"
    try:
        if isinstance(suite, Suite):
            chosen = suite
        elif suite is not None:
            chosen = load_suite(suite)
        elif key in list_suites():
            chosen = load_suite(key)
        else:
            raise SubmissionError(f"{where}: {str(key)[:80]!r} is not a registered suite; registered: {list_suites()}")
    except ProtocolError as e:
        raise SubmissionError(f"{where}: {e}") from None
    if (chosen.id, chosen.version) != (named["id"], named["version"]):
        raise SubmissionError(f"{where}: the runs were made for {key}, the suite given is {chosen.key}")
    if chosen.sha256 != named["sha256"]:
        raise SubmissionError(f"{where}.sha256: the runs were made with another text of {chosen.key}")
    return chosen


def _read_manifest(folder: Path, limits: SuiteLimits) -> dict[str, Any]:
    try:
        text = read_capped(folder / MANIFEST, limits.manifest_bytes, MANIFEST).decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionError(f"{MANIFEST}: not UTF-8 text") from None
    except ValueError as e:
        raise SubmissionError(str(e)) from None
    m = loads_strict(text, MANIFEST)
    fields = {"schema": str, "schema_version": int, "method": str, "note": str, "suite": dict, "skipped": dict,
              "credit_sha256": (str, type(None)), "packages": dict, "git_sha": (str, type(None))}
    if not isinstance(m, dict) or sorted(m) != sorted(fields):
        raise SubmissionError(f"{MANIFEST}: a JSON object with exactly the fields {sorted(fields)}")
    for key, kind in fields.items():
        if isinstance(m[key], bool) or not isinstance(m[key], kind):
            raise SubmissionError(f"{MANIFEST}.{key}: wrong type {type(m[key]).__name__}")
    if (m["schema"], m["schema_version"]) != (SCHEMA, VERSION):
        raise SubmissionError(f"{MANIFEST}.schema: expected {SCHEMA!r} version {VERSION}")
    if not METHOD_NAME.fullmatch(m["method"]):
        raise SubmissionError(f"{MANIFEST}.method: {m['method'][:80]!r} must be 1-80 characters of letters, digits "
                              f"and ._:+=- starting with a letter or digit")
    safe_text(m["note"], f"{MANIFEST}.note", limit=2000)
    for name, why in m["skipped"].items():
        safe_text(why, f"{MANIFEST}.skipped.{name}", limit=400)
    return m


def _check_tree(folder: Path, expected: list[Path], limits: SuiteLimits) -> str | None:
    """The folder holds exactly the manifest, the expected run folders (each with its files and one checkpoint) and
    at most one method source, no links, each file within its limit (checked before anything is read). Returns the
    method source's name, or None."""
    if not folder.is_dir():
        raise SubmissionError(f"{folder}: not a folder (a suite submission is a folder with {MANIFEST} and runs/)")
    allowed = {folder / MANIFEST, folder / "runs"}
    allowed |= {folder / "runs" / p.parent.name for p in expected}
    source = [p for p in folder.iterdir() if METHOD_FILE.fullmatch(p.name) and p.is_file() and not p.is_symlink()][:1]
    caps = {MANIFEST: limits.manifest_bytes, "metrics.jsonl": limits.metrics_bytes,
            "config.json": limits.config_bytes}
    for run in expected:
        allowed |= {run, run / "checkpoints", run / "checkpoints" / "latest"}
        allowed |= {run / name for name in _RUN_FILES}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise SubmissionError(f"{rel}: a link or special file; a suite submission holds plain files only")
        step_dir = path.parent.parent in expected and path.parent.name == "checkpoints" and path.is_dir() and \
            path.name.startswith("step-")
        step_file = path.parent.parent.parent in expected and path.parent.name.startswith("step-") and \
            path.name in _STEP_FILES
        if path not in allowed and path not in source and not step_dir and not step_file:
            raise SubmissionError(f"{rel}: unexpected in a suite submission (it holds {MANIFEST}, the runs of the "
                                  f"suite's settings and seeds, each with config.json, metrics.jsonl and its final "
                                  f"checkpoint, and at most one <module>.py); anchors and scores are computed by the "
                                  f"validator, never read from a submission")
        if path.is_file():
            cap = limits.method_bytes if path in source else caps.get(path.name, limits.checkpoint_bytes)
            if path.stat().st_size > cap:
                raise SubmissionError(f"{rel}: {path.stat().st_size} bytes, over the limit of {cap} bytes")
    for path in [folder / MANIFEST, *(r / n for r in expected for n in _RUN_FILES)]:
        if not path.is_file():
            raise SubmissionError(f"{path.relative_to(folder)}: missing (every run of the suite travels with its "
                                  f"config, metrics and final checkpoint)")
    return source[0].name if source else None


def _expected(suite: Suite, method: str, claimed: dict[str, str], own: bool) -> dict[str, str]:
    """The settings the method cannot train on: computed here for a built-in method; a method of one's own claims
    them (checked by --reproduce in the sandbox)."""
    names = {s.name for s in suite.settings}
    unknown = sorted(set(claimed) - names)
    if unknown:
        raise SubmissionError(f"{MANIFEST}.skipped: {unknown[:3]} are not settings of {suite.key}")
    if own:
        return claimed
    mine = {s.name: why for s in suite.settings if (why := applicable(method, s.env_id)) is not None}
    if sorted(mine) != sorted(claimed):
        raise SubmissionError(f"{MANIFEST}.skipped: {method} cannot train on {sorted(mine) or 'none'} of "
                              f"{suite.key}'s settings, the submission skips {sorted(claimed) or 'none'} (every "
                              f"setting a method can train on is run and scored)")
    return mine


def _check_run(suite: Suite, s: Setting, seed: int, run: Path, folder: Path) -> dict[str, Any]:
    """A run's config pinned by the suite, its final checkpoint at the last step; returns its config fields."""
    where = str(run.relative_to(folder))
    try:
        cfg = read_run_config(run)
        latest = checkpoint.latest(run / "checkpoints")
    except ValueError as e:
        raise SubmissionError(f"{where}: {e}") from None
    fields = {k: v for k, v in cfg.fields.items() if k not in OUTPUT_FIELDS}
    try:
        check_pinned(fields, pinned_suite_config(suite, s, seed), suite.key, suite.budget(s)["steps"],
                     f"{where}/config.json")
    except ValueError as e:
        raise SubmissionError(str(e)) from None
    if latest is None:
        raise SubmissionError(f"{where}/checkpoints: no complete final checkpoint")
    steps = suite.budget(s)["steps"]
    if _step_of(latest, where) != steps:
        raise SubmissionError(f"{where}/checkpoints: the final checkpoint is from step {_step_of(latest, where)!r}, "
                              f"the suite trains {steps} steps")
    if suite.score["checkpoints"] > 1:
        kept = kept_steps(steps, suite.score["checkpoints"])
        have = sorted(p.name for p in (run / "checkpoints").iterdir() if p.is_dir())
        want = [f"step-{k:07d}" for k in kept]
        for name, k in zip(want, kept):
            if not all((run / "checkpoints" / name / f).is_file() for f in _STEP_FILES):
                raise SubmissionError(f"{where}/checkpoints/{name}: missing or incomplete; {suite.key} keeps "
                                      f"{len(kept)} checkpoints of every run (steps {kept}) and scores each, so a "
                                      f"submission carries them all (benchmark-credit writes them)")
            if _step_of(run / "checkpoints" / name, where) != k:
                raise SubmissionError(f"{where}/checkpoints/{name}/meta.json: from step "
                                      f"{_step_of(run / 'checkpoints' / name, where)!r}, not {k}")
        if have != want:
            raise SubmissionError(f"{where}/checkpoints: holds {have[:8]}, {suite.key} keeps exactly {want}")
    return fields


def _step_of(step_dir: Path, where: str) -> Any:
    """The step a checkpoint folder's ``meta.json`` records (``None`` when it records none)."""
    raw = read_capped(step_dir / "meta.json", checkpoint.MAX_META_BYTES, "meta.json")     # the trainer's own limit
    meta = loads_strict(raw.decode("utf-8", "replace"), f"{where}/{step_dir.name}/meta.json")
    return meta.get("step") if isinstance(meta, dict) else None


def validate_suite(folder: str | Path, suite: Suite | str | Path | None = None,
                   limits: SuiteLimits = SuiteLimits()) -> SuiteValidated:
    """Check a suite submission folder and compute its scores (see the module docstring). ``suite``: the suite to
    hold it to (default: the registered one the manifest names)."""
    folder = Path(folder)
    if not (folder / MANIFEST).is_file() or (folder / MANIFEST).is_symlink():
        raise SubmissionError(f"{folder}: no {MANIFEST} (a suite submission is written by benchmark-credit into "
                              f"OUT/<suite>/submissions/<method>/)")
    if (folder / MANIFEST).stat().st_size > limits.manifest_bytes:
        raise SubmissionError(f"{MANIFEST}: over the limit of {limits.manifest_bytes} bytes")
    m = _read_manifest(folder, limits)
    chosen = _suite_of(m["suite"], suite)
    method = m["method"]
    own = method not in list_credits()
    skipped = _expected(chosen, method, m["skipped"], own)
    planned = [(s, seed) for s in chosen.settings if s.name not in skipped for seed in chosen.budget(s)["seeds"]]
    if not planned:
        raise SubmissionError(f"{MANIFEST}.skipped: the method runs on no setting of {chosen.key}")
    source = _check_tree(folder, [_run_folder(folder, s.name, seed) for s, seed in planned], limits)
    if source is not None and (not own or method.partition(":")[0] != source[:-3] or
                               file_sha256(folder / source) != m["credit_sha256"]):
        raise SubmissionError(f"{source}: a shipped source is the method <module>:<Class> of the submission, in "
                              f"<module>.py, with the SHA-256 the manifest records (credit_sha256); the method is "
                              f"{method!r}")
    results, runs, methods = [], [], set()
    for s, seed in planned:
        run = _run_folder(folder, s.name, seed)
        fields = _check_run(chosen, s, seed, run, folder)
        methods.add((str(fields.get("credit")), json.dumps(fields.get("credit_options", {}), sort_keys=True)))
        if fields.get("credit") != method:
            raise SubmissionError(f"{run.relative_to(folder)}/config.json: trained with credit="
                                  f"{str(fields.get('credit'))[:80]!r}, the submission is for {method!r} (an entry "
                                  f"is the method that trained its runs; a built-in one under its own name)")
        spec = run_spec(chosen, s, seed, method, run)
        try:
            results.append(score_run(spec, run))
        except (ValueError, KeyError, TypeError, RuntimeError) as e:
            raise SubmissionError(f"{run.relative_to(folder)}: cannot be scored ({type(e).__name__}: "
                                  f"{str(e)[:300]})") from None
        runs.append((spec, run))
    if len(methods) != 1:
        raise SubmissionError(f"{folder}: the runs were trained with different credit options; one submission is "
                              f"one method")
    if not own and m["credit_sha256"] != credit_sha256(method):
        raise SubmissionError(f"{MANIFEST}.credit_sha256: not this package's source of the built-in {method!r}")
    scored = score(chosen, results, cache=anchor_cache(chosen))
    return SuiteValidated(m, chosen, method, results, scored, runs, skipped,
                          str(folder / source) if source else None)


def suite_entry(v: SuiteValidated) -> dict[str, Any]:
    """The store entry of a validated suite submission: scores as the validator computed them, ``self_reported``
    unless ``--reproduce`` re-trained the runs (and what it re-trained)."""
    e = entry(v.suite, v.scored, v.method, v.results, note=v.manifest["note"])
    e["self_reported"] = v.self_reported
    e["results"]["reproduced"] = v.reproduced
    e["manifest"]["skipped"] = v.skipped
    return e
