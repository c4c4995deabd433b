"""``python -m leaderboard evaluate``: play a protocol and write ``submission.json`` and ``episodes.jsonl``.

Every task of the protocol is played on the protocol's seeds; a ``versus`` task twice per seed (the submission in
each seat, the opponent in the other), a ``self`` task once (the submission in every seat). A credit-track
submission has one run per training seed of the protocol (a trainer run folder each, checked against the protocol's
budget); a policy-track submission has one run.

With a protocol's ``seeded_moves`` (``policy@2``) every decision, the player's and the opponent's, is seeded from
(protocol, task, run, episode seed, step, deciding seat) (:func:`cell_policies`), so validation can re-derive the
opponent's moves and ``--reproduce`` the player's.

Every episode's ``run_id`` says what it is: ``"<task>|<seat>|run<r>"`` (seat ``all`` for self play), and its
``transcript`` lets :mod:`leaderboard.validate` replay it. ``submission.json`` (schema ``marl_llm_submission``)
holds the provenance: method, each env's player (model id, weights hash, decoding settings, the trainer config and
its hash), the protocol id, version and hash, the envs with their full kwargs and the hash of that list, package
versions, the git commit, the config hash, the seeds, generated tokens, wall time, and the episodes file's size and
SHA-256. No statistic is in it: validation computes them from the episodes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata as md
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from baselines.credit import list_credits
from baselines.episode import write_jsonl
from baselines.outputs import loads_bounded, read_capped, replace_text, writing
from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig
from baselines.train.config import NEW_FIELD_DEFAULTS, RESULT_NEUTRAL_FIELDS
from leaderboard.players import SeededMoves, credit_sha256, decision_stream, load_player, opponent_policy
from leaderboard.protocol import Protocol, canonical_sha256
from marl_llm_envs import make
from marl_llm_envs.text import short_repr

SUBMISSION_SCHEMA = "marl_llm_submission"
SUBMISSION_VERSION = 1
SUBMISSION_FILE = "submission.json"
EPISODES_FILE = "episodes.jsonl"
MAX_METRICS_BYTES = 64 << 20     # a run's metrics.jsonl (one short row per step)

__all__ = ["EPISODES_FILE", "SUBMISSION_FILE", "cell_policies", "check_method", "check_run", "config_sha256",
           "evaluate", "file_sha256", "opponent_for", "parse_run_label", "pinned_train_config",
           "play_cell", "run_label"]


def run_label(task_name: str, seat: str, run: int) -> str:
    """An episode's ``run_id``: ``"<task>|<seat>|run<r>"``."""
    return f"{task_name}|{seat}|run{run}"


_RUN_LABEL = re.compile(r"([^|]*)\|([^|]*)\|run(\d{1,9})")


def parse_run_label(run_id: str) -> tuple[str, str, int] | None:
    """The (task, seat, run) of a :func:`run_label`; None for anything else."""
    match = _RUN_LABEL.fullmatch(run_id)
    return None if match is None else (match[1], match[2], int(match[3]))


def config_sha256(protocol_sha256: str, players: dict[str, Any]) -> str:
    """The hash of what was evaluated: the protocol's text and every run's player provenance (weights, decoding)."""
    return canonical_sha256({"protocol": protocol_sha256, "players": players})


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("marl-llm-envs", "numpy", "pettingzoo", "gymnasium", "torch", "transformers", "scipy"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def git_sha() -> str | None:
    """The commit of the checkout this package runs from (``+dirty`` when it has uncommitted changes)."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("+dirty" if dirty else "")


# What a credit-track run's TrainConfig may hold (issue 42): the method under test chooses its own fields, where and
# how fast it ran changes nothing that is learned, a schedule of the method's is bounded by the budget, and every
# other field is fixed: by the protocol's train block and task, or at TrainConfig's default (the trainer settings
# every method of the protocol shares: partners, frozen roles, lr, ppo_epochs, clipping, sampling, ...).
METHOD_FIELDS = ("credit", "credit_options")
HARDWARE_FIELDS = ("device", "dtype", "compile")
BOUNDED_FIELDS = {"alternate_every": ("an integer from 0 to the protocol's steps", lambda v, train: type(v) is int
                                      and 0 <= v <= train["steps"])}


def trainer_pins() -> dict[str, Any]:
    """Every ``TrainConfig`` field a credit protocol or suite fixes, at the trainer's default: all but the method's
    (:data:`METHOD_FIELDS`, :data:`BOUNDED_FIELDS`), the hardware and the result-neutral ones. The protocol's budget
    and task then replace the defaults of the fields it names."""
    free = set(METHOD_FIELDS) | set(HARDWARE_FIELDS) | set(BOUNDED_FIELDS) | set(RESULT_NEUTRAL_FIELDS)
    return {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
            for f in dataclasses.fields(TrainConfig) if f.name not in free}


def check_pinned(cfg: dict[str, Any], want: dict[str, Any], owner: str, steps: int, where: str) -> None:
    """``cfg`` (a run's train config) has every value of ``want`` (the pins of ``owner``, a protocol or suite key)
    and the method's bounded fields within the budget of ``steps`` (``ValueError`` naming the field otherwise). A
    field the trainer gained later (:data:`~baselines.train.config.NEW_FIELD_DEFAULTS`) that a run's config lacks was
    trained at its default: a run made before it existed is not refused for lacking it."""
    for key, value in want.items():
        absent = value if key in ("env_kwargs", "action_mode") else NEW_FIELD_DEFAULTS.get(key, _MISSING)
        got = cfg.get(key, absent)
        if key == "action_mode" and got == "":
            got = value                     # empty: the env's own mode for the model, checked when the run is loaded
        if got != value or isinstance(got, bool) != isinstance(value, bool):
            raise ValueError(f"{where}: the protocol {owner} trains with {key}={value!r}, "
                             f"this run has {key}={'(missing)' if got is _MISSING else short_repr(got, 80)}"
                             + ("" if key in ("steps", "tasks_per_step", "group_size", "mode", "seed", "env", "model")
                                else " (fixed for every method of the protocol; only credit and credit_options are "
                                     "the method's)"))
    for key, (words, fits) in BOUNDED_FIELDS.items():
        if key in cfg and not fits(cfg[key], {"steps": steps}):
            raise ValueError(f"{where}.train_config.{key}: {short_repr(cfg[key], 40)}; the protocol {owner} "
                             f"allows {words}")


def pinned_train_config(protocol: Protocol, env_id: str, run: int) -> dict[str, Any]:
    """The value the protocol fixes for every ``TrainConfig`` field of run ``run`` on ``env_id`` but those the
    method chooses (:data:`METHOD_FIELDS`, :data:`BOUNDED_FIELDS`), the hardware and the result-neutral ones."""

    train = protocol.train
    want = trainer_pins()
    want.update(steps=train["steps"], tasks_per_step=train["tasks_per_step"], group_size=train["group_size"],
                mode=train["mode"], seed=train["seeds"][run], env=env_id,
                env_kwargs=dict(protocol.env_task(env_id).env_kwargs), action_mode=protocol.action_mode)
    if train["model"] != "submitter":
        want["model"] = train["model"]
    else:
        del want["model"]                       # the gpu tier: the submitter names the model
    return want


def check_run(protocol: Protocol, provenance: dict[str, Any], env_id: str, run: int, where: str) -> None:
    """A credit-track run must be trained on ``env_id`` with every ``TrainConfig`` field the protocol pins
    (:func:`pinned_train_config`: its budget, the run's training seed, the task's kwargs, and the shared trainer
    settings, ``partners``, ``ppo_epochs``, ``lr`` ...), the method's own bounded fields within their bounds,
    evaluated after the last step, within the token budget (``ValueError`` naming ``where`` and the field
    otherwise)."""
    train = protocol.train
    cfg = provenance.get("train_config")
    if not isinstance(cfg, dict):
        raise ValueError(f"{where}.train_config: missing; a credit-track run records the config it was trained with")
    unknown = sorted(set(cfg) - set(TrainConfig.__dataclass_fields__))
    if unknown:
        raise ValueError(f"{where}.train_config: unknown field(s) {unknown[:8]} (not fields of this trainer)")
    check_pinned(cfg, pinned_train_config(protocol, env_id, run), protocol.key, train["steps"], where)
    if provenance.get("step") != train["steps"]:
        raise ValueError(f"{where}: the checkpoint is from step {provenance.get('step')!r}, the protocol evaluates "
                         f"the policy after {train['steps']} steps")
    tokens = provenance.get("train_tokens")
    if not isinstance(tokens, dict) or sorted(tokens) != ["branches", "main"] or \
            any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**62 for v in tokens.values()):
        raise ValueError(f"{where}.train_tokens: {{'main': N, 'branches': N}} with non-negative integer counts, got "
                         f"{str(tokens)[:120]}")
    spent = tokens["main"] + tokens["branches"]
    if train["max_tokens"] is not None and spent > train["max_tokens"]:
        raise ValueError(f"{where}: the run generated {spent} tokens, over the protocol's budget of "
                         f"{train['max_tokens']}")


_MISSING = object()


def check_method(method: str, runs: Sequence[dict[str, Any]], where: str) -> None:
    """The credit-track entry ``method`` names the credit method that trained its ``runs`` (their provenance):
    every run has the same ``train_config.credit`` and ``credit_options``; a built-in method (a registered name)
    is entered under its own name, so broadcast's runs cannot be presented as a new method; and each run records
    the SHA-256 of the method's source (``credit_sha256``), which for a built-in must be this package's file
    (``ValueError`` naming the field otherwise). A method of one's own (``package.module:Class``) may be named
    freely; its source hash is recorded for the maintainer, and it is self-reported unless re-trained."""
    configs = [p.get("train_config") if isinstance(p.get("train_config"), dict) else {} for p in runs]
    methods = {(str(c.get("credit")), canonical_sha256(c.get("credit_options", {}))) for c in configs}
    if len(methods) != 1:
        raise ValueError(f"{where}: the runs were trained with different credit methods or options "
                         f"({sorted(m for m, _ in methods)[:4]}); one submission is one method")
    (credit, _), = methods
    if credit in list_credits() and method != credit:
        raise ValueError(f"{where}.method: {method!r}, but the runs were trained by the built-in credit method "
                         f"{credit!r} (train_config.credit); a built-in method is entered under its own name "
                         f"(--method {credit}), a new method is your own class (--credit package.module:Class)")
    for i, p in enumerate(runs):
        claimed = p.get("credit_sha256")
        if not isinstance(claimed, str) or len(claimed) != 64:
            raise ValueError(f"{where}[{i}].credit_sha256: the SHA-256 of the credit method's source is missing")
        if credit in list_credits() and claimed != credit_sha256(credit):
            raise ValueError(f"{where}[{i}].credit_sha256: the run was trained with another source of the built-in "
                             f"method {credit!r} than this package's ({claimed[:12]}... here "
                             f"{str(credit_sha256(credit))[:12]}...)")


def _run_metrics(run_dir: Path | None, max_points: int = 500) -> tuple[dict[str, int], dict[str, list[float]]]:
    """A trainer run's generated tokens (main episodes and counterfactual branches) and its learning curve (the team
    rewards per step, at most ``max_points`` evenly spaced steps), from its metrics.jsonl."""
    tokens = {"main": 0, "branches": 0}
    rows = []
    path = None if run_dir is None else run_dir / "metrics.jsonl"
    if path is not None and path.is_file():
        for i, line in enumerate(read_capped(path, MAX_METRICS_BYTES, "metrics.jsonl").splitlines(), 1):
            if line.strip():
                m = loads_bounded(line, f"{path}:{i}")
                if not isinstance(m, dict) or any(isinstance(m.get(k, 0), bool) or not isinstance(m.get(k, 0), int)
                                                  for k in ("tokens/main", "tokens/branches", "step")):
                    raise ValueError(f"{path}:{i}: not a metrics row of the trainer (an object with integer "
                                     f"tokens/main, tokens/branches and step)")
                tokens["main"] += m.get("tokens/main", 0)
                tokens["branches"] += m.get("tokens/branches", 0)
                rows.append(m)
    keep = rows[::max(1, -(-len(rows) // max_points))]
    curve: dict[str, list[float]] = {"step": [int(m.get("step", i)) for i, m in enumerate(keep)]}
    for key in sorted({k for m in keep for k in m if k.startswith("reward/team/")}):
        curve[key] = [float(m.get(key, 0.0)) for m in keep]
    return tokens, curve


def opponent_for(protocol: Protocol, task, run: int):
    """The protocol's opponent in the versus cells of ``task`` and ``run``, as evaluate plays it and validate
    re-derives it. Both seats get the same opponent: with ``seeded_moves`` a decision's seed names the seat that
    decides (:func:`~leaderboard.players.decision_seed`)."""
    opponent = opponent_policy(task.env_id, task.opponent, seed=0)
    if protocol.seeded_moves:
        opponent = SeededMoves(opponent, decision_stream(protocol.key, task.name, run))
    return opponent


def cell_policies(protocol: Protocol, task, seat: str, run: int, player) -> dict[str, Any]:
    """role -> Policy for one (task, seat, run) of ``protocol``: the player in ``seat`` (every seat for ``"all"``),
    the protocol's opponent in the other; with ``protocol.seeded_moves`` each wrapped in
    :class:`~leaderboard.players.SeededMoves` on the stream of (protocol, task, run): a decision's seed is then
    (task, run, episode seed, step, deciding seat)."""
    env = make(task.env_id, **protocol.env_kwargs(task))

    stream = decision_stream(protocol.key, task.name, run)
    mine = {r: (SeededMoves(p, stream) if protocol.seeded_moves else p) for r, p in player.policies.items()}
    if seat == "all":
        return mine
    opponent = opponent_for(protocol, task, run)
    return {env.roles[a]: (mine[env.roles[a]] if a == seat else opponent) for a in env.possible_agents}


def play_cell(protocol: Protocol, task, seat: str, run: int, player, seeds: Sequence[int] | None = None,
              progress: bool = False, env_pool: dict | None = None) -> list:
    """The episodes of one (task, seat, run) cell, as :func:`evaluate` plays them (``seeds``: a subset of the
    protocol's seeds; with ``seeded_moves`` a subset plays the same episodes as the whole cell). ``env_pool``: envs
    to reuse, shared by the cells of one evaluation (see :class:`~baselines.rollout.RolloutEngine`)."""
    seeds = list(protocol.seeds if seeds is None else seeds)
    engine = RolloutEngine(cell_policies(protocol, task, seat, run, player), show_progress=progress,
                           env_pool=env_pool)
    return engine.run(task.env_id, num_tasks=len(seeds), seed=protocol.seed_start + run, seeds=seeds,
                      env_kwargs=protocol.env_kwargs(task), run_id=run_label(task.name, seat, run))


def evaluate(protocol: Protocol, players: dict[str, Sequence[str]], out: str | Path, method: str,
             greedy: bool = False, progress: bool = False, note: str = "") -> dict[str, Any]:
    """Play ``protocol`` with ``players`` (env id -> one player spec per run) and write the submission to ``out``.

    Returns the manifest (also written as ``out/submission.json``)."""
    out = Path(out)
    _check_request(protocol, players, out, method)
    t0 = time.perf_counter()
    loaded = {env_id: _load_runs(protocol, env_id, players[env_id], greedy) for env_id in protocol.env_ids}
    if protocol.track == "credit":
        check_method(method, [p.provenance for runs in loaded.values() for p in runs], "--runs")
    with writing(out):      # two evaluations into one folder: the second stops here (FolderBusy), not at the end
        if any(out.iterdir()):          # another one wrote it since the check above
            raise ValueError(f"{out} is not empty; evaluate writes a fresh submission folder")
        episodes = _play(protocol, loaded, progress)
        wall = time.perf_counter() - t0
        write_jsonl(out / EPISODES_FILE, episodes)
        if protocol.track == "credit":
            _ship_method(out, loaded)
        manifest = _manifest(protocol, method, note, loaded, episodes, wall, out / EPISODES_FILE)
        replace_text(out / SUBMISSION_FILE, json.dumps(manifest, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return manifest


def _ship_method(out: Path, loaded: dict[str, list]) -> None:
    """A credit method of one's own (``<module>:<Class>``, not a built-in) defined in a top-level module file travels
    with the submission as ``<module>.py``, so ``validate --reproduce`` can re-train its runs (in a sandbox, see
    :mod:`leaderboard.reproduce`); a method inside a package is not shipped, and its runs stay self-reported."""

    credits = {str(p.provenance.get("train_config", {}).get("credit")) for runs in loaded.values() for p in runs}
    module, _, name = next(iter(credits)).partition(":")
    if len(credits) != 1 or next(iter(credits)) in list_credits() or not name or not module.isidentifier():
        return
    spec = importlib.util.find_spec(module)
    if spec is not None and spec.origin and spec.origin.endswith(".py"):
        shutil.copyfile(spec.origin, out / f"{module}.py")


def _check_request(protocol: Protocol, players: dict[str, Sequence[str]], out: Path, method: str) -> None:
    """A method name, a fresh folder, and for every env of the protocol a player per run (``ValueError`` naming the
    flag otherwise)."""
    if not method or not isinstance(method, str):
        raise ValueError("--method names what is submitted (e.g. 'mlp-broadcast' or 'kuhn_nash')")
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty; evaluate writes a fresh submission folder")
    missing = [e for e in protocol.env_ids if e not in players]
    if missing:
        raise ValueError(f"no player for {missing}; give --player SPEC (every env) or --player ENV_ID=SPEC")
    for env_id in protocol.env_ids:
        if len(players[env_id]) != protocol.runs:
            which = f"one per training seed {protocol.train['seeds']}" if protocol.runs > 1 else "one"
            raise ValueError(f"{env_id}: {protocol.key} wants {protocol.runs} run(s) ({which}), got "
                             f"{len(players[env_id])}")


def _load_runs(protocol: Protocol, env_id: str, specs: Sequence[str], greedy: bool) -> list:
    """The players of ``env_id``, one per run; on the credit track each with its run's generated tokens and
    learning curve in its provenance, checked against the protocol's budget (:func:`check_run`)."""
    roles = protocol.roles(env_id)
    runs = []
    for r, spec_ in enumerate(specs):
        player = load_player(spec_, env_id, roles, protocol.action_mode, greedy)
        if protocol.track == "credit":
            tokens, curve = _run_metrics(player.run_dir)
            player.provenance["train_tokens"] = tokens
            player.provenance["learning_curve"] = curve      # as the trainer logged it (not validated)
            check_run(protocol, player.provenance, env_id, r, spec_)
        runs.append(player)
    return runs


def _play(protocol: Protocol, loaded: dict[str, list], progress: bool) -> list:
    """Every cell of the protocol, task by task, run by run, seat by seat (the order of ``episodes.jsonl``)."""
    episodes = []
    envs: dict = {}         # every cell's episodes start from reset(seed): the cells share their envs
    for task in protocol.tasks:
        for r, player in enumerate(loaded[task.env_id]):
            for seat in task.seats():
                if progress:
                    print(f"evaluate {run_label(task.name, seat, r)}: {protocol.seed_count} episodes", file=sys.stderr)
                episodes += play_cell(protocol, task, seat, r, player, progress=progress, env_pool=envs)
    return episodes


def _manifest(protocol: Protocol, method: str, note: str, loaded: dict[str, list], episodes: list, wall: float,
              episodes_path: Path) -> dict[str, Any]:
    """``submission.json``: the provenance of the episodes written to ``episodes_path`` (see the module docstring)."""
    players_block = {env_id: [p.provenance for p in runs] for env_id, runs in loaded.items()}
    trained = [p["train_tokens"] for runs in players_block.values() for p in runs if "train_tokens" in p]
    env_list = protocol.env_records()
    return {
        "schema": SUBMISSION_SCHEMA,
        "schema_version": SUBMISSION_VERSION,
        "method": method,
        "note": note,
        "track": protocol.track,
        "protocol": {"id": protocol.id, "version": protocol.version, "sha256": protocol.sha256},
        "players": players_block,
        "envs": env_list,
        "envs_sha256": canonical_sha256(env_list),
        "packages": package_versions(),
        "git_sha": git_sha(),
        "config_sha256": config_sha256(protocol.sha256, players_block),
        "seeds": {"eval_start": protocol.seed_start, "eval_count": protocol.seed_count,
                  "train": list(protocol.train["seeds"]) if protocol.train else []},
        "tokens": {"eval_main": sum(e.tokens_generated for e in episodes),
                   "eval_branches": sum(e.branch_tokens_generated for e in episodes),
                   "train_main": sum(t["main"] for t in trained),
                   "train_branches": sum(t["branches"] for t in trained)},
        "wall_time_s": round(wall, 3),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "episodes": {"file": EPISODES_FILE, "count": len(episodes), "bytes": os.path.getsize(episodes_path),
                     "sha256": file_sha256(episodes_path)},
    }
