"""``python -m leaderboard validate DIR --reproduce``: re-run what can be re-run, and require the same result.

``validate`` alone proves that the episodes are consistent, legal and complete, and (protocols with
``seeded_moves``) that every move of the protocol's opponents is the one their seed gives. It cannot know whether
the submitter's own moves came from the player the manifest names. ``reproduce`` re-plays them with that player:

* Players whose code or weights are here are re-loaded from their spec: ``random`` and ``reference[:NAME]`` (the
  code of this package), ``checkpoint:PATH`` where ``PATH`` exists on this machine, ``hf:MODEL`` for a model
  :func:`baselines.models.load_model` finds locally. The re-loaded player must have the manifest's weights hash.
* Credit track, MLP model (the micro tier): every run (or ``retrain`` of them, drawn at random) is trained again
  from the run's ``train_config`` in the manifest, with :func:`baselines.train.train` (deterministic on CPU: see
  ``tests/baselines/train/test_checkpoint.py``; a micro run takes seconds), and the new weights must hash to the run's
  ``weights_sha256``. A built-in credit method is trained in this process; a method of the submitter's own is
  re-trained only from its shipped source (``<module>.py`` beside ``submission.json``, whose SHA-256 validate checked
  against the runs' ``credit_sha256``), in a child process with :data:`SANDBOX` limits (:func:`train_sandboxed`);
  one that did not travel cannot be re-trained here.
* Then the episodes of the re-loaded players are played again exactly as :func:`leaderboard.evaluate.evaluate`
  plays them (:func:`leaderboard.evaluate.play_cell`) and every move must be identical: every episode of a cheap
  player (scripted bots, MLPs), and of the others a uniform draw sized by the detection goal (a forged 1% of the
  episodes caught with probability >= 0.99: :func:`detection_sample`, 459 episodes). With ``seeded_moves`` any
  subset of a cell's seeds plays the same episodes; without it (version-1 protocols) whole cells are re-played,
  because the moves depend on how the requests were batched.
* The validator chooses: every draw (runs to re-train, episodes to re-play) comes from an audit seed drawn from
  the OS's randomness when ``validate`` runs (:func:`draw_audit_seed`), after the submission was made; it is
  printed and stored with the result, and ``--audit-seed`` repeats the same draws.

A run that cannot be re-run here (an ``hf:`` model that is not present, a checkpoint path that is not on this
machine and no re-training) is a :class:`~leaderboard.validate.SubmissionError` under ``--reproduce``; without
``--reproduce`` the entry is stored as *self-reported* (``entry["self_reported"]``).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from baselines.credit import list_credits
from baselines.train import TrainConfig, train
from baselines.train.config import LEGACY_RESOLVED_KEYS, OUTPUT_FIELDS
from leaderboard.evaluate import EPISODES_FILE, SUBMISSION_FILE, package_versions, play_cell, run_label
from leaderboard.players import load_player
from leaderboard.validate import SubmissionError, Validated, draw_audit_seed

__all__ = ["DETECT_FRACTION", "DETECT_PROBABILITY", "detection_probability", "detection_sample", "draw_audit_seed",
           "reproduce"]

DETECT_FRACTION = 0.01          # the detection goal: a forged 1% of the episodes ...
DETECT_PROBABILITY = 0.99       # ... is caught with probability >= 0.99


def _greedy(provenance: dict[str, Any]) -> bool:
    temps = [d.get("temperature") for d in provenance.get("decoding", {}).values() if isinstance(d, dict)]
    return bool(temps) and all(t == 0 for t in temps)


def _retrain(v: Validated, env_id: str, run: int, workdir: Path) -> str:
    """Train run ``run`` of ``env_id`` again from the manifest; returns its folder (the weights hash is checked)."""
    where = f"{SUBMISSION_FILE}.players.{env_id}[{run}]"
    provenance = v.manifest["players"][env_id][run]
    raw = provenance.get("train_config")
    if not isinstance(raw, dict):
        raise SubmissionError(f"{where}.train_config: missing; a credit run is re-trained from it")
    known = set(TrainConfig.__dataclass_fields__)
    unknown = sorted(set(raw) - known - set(LEGACY_RESOLVED_KEYS))
    if unknown:
        raise SubmissionError(f"{where}.train_config: unknown field(s) {unknown}")
    if raw.get("model") != "mlp":
        raise SubmissionError(f"{where}.train_config.model: {raw.get('model')!r}; only MLP runs (the micro tier) are "
                              f"re-trained here")
    out = workdir / f"{env_id}-run{run}"
    fields = {k: val for k, val in raw.items() if k in known and k not in OUTPUT_FIELDS}
    if raw.get("credit") not in list_credits():
        if v.method_file is None:
            raise SubmissionError(f"{where}.train_config.credit: {raw.get('credit')!r} is not a built-in credit method "
                                  f"({', '.join(list_credits())}) and its source did not travel with the submission "
                                  f"(<module>.py beside submission.json, for a method <module>:<Class>); it cannot "
                                  f"be re-trained here")
        train_sandboxed([(fields, out)], Path(v.method_file), where)
        return f"checkpoint:{out}"
    try:
        cfg = TrainConfig(**fields, out=str(out), progress=False, tensorboard=False)
        train(cfg)
    except Exception as e:  # noqa: BLE001 - a submitted config that does not train is a rejection, not a crash
        raise SubmissionError(f"{where}.train_config: does not train ({type(e).__name__}: {e})") from None
    return f"checkpoint:{out}"


SANDBOX = {"cpu_s": 600, "memory_bytes": 8 << 30, "file_bytes": 256 << 20}   # per re-trained run of an outside method
_TRAIN_IN_SANDBOX = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]       # the method's folder, then this package: nothing else but site-packages
from baselines.credit import make_credit
from baselines.train import TrainConfig, train
for fields, out in json.loads(sys.argv[3]):
    train(TrainConfig(**fields, out=out, progress=False, tensorboard=False))
why = {}
for method, env_id in json.loads(sys.argv[4]):
    try:
        make_credit(method).branches(env_id)
        why[env_id] = None
    except ValueError as e:
        why[env_id] = str(e)[:300]
print(json.dumps(why))
"""


def _sandbox(cpu_s: int, memory_bytes: int, file_bytes: int):
    """The child's limits, set between fork and exec: CPU seconds, address space, the size of any file it writes; and,
    where the kernel lets an unprivileged process do it, a network namespace of its own (no network)."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        try:
            ctypes.CDLL(None, use_errno=True).unshare(0x10000000 | 0x40000000)    # CLONE_NEWUSER | CLONE_NEWNET
        except (OSError, AttributeError):
            pass
    return apply


def train_sandboxed(jobs: list[tuple[dict[str, Any], Path]], source: Path, where: str,
                    limits: dict[str, int] | None = None, applicable: tuple[str, list[str]] | None = None
                    ) -> dict[str, str | None]:
    """Train runs of a method shipped as ``source`` in one child process (``jobs``: each run's config fields and
    folder; :data:`SANDBOX` limits per run, no network where the OS allows, ``-I``: no environment variables or user
    site; imports from a copy of the method's file, this package and the installed packages only). ``applicable``:
    ``(method, env ids)`` whose applicability the child also reports (env id -> ``None`` or why the method cannot
    train there), returned. Any failure, a limit included, is a :class:`SubmissionError`."""
    limits = {**SANDBOX, **(limits or {})}
    limits["cpu_s"] *= max(1, len(jobs))
    out = jobs[0][1] if jobs else Path(tempfile.mkdtemp(prefix="applicable-"))
    home = out.parent / f"{out.name}-method"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, home / source.name)
    root = str(Path(__file__).resolve().parent.parent)
    try:
        method, env_ids = applicable or ("", [])
        done = subprocess.run([sys.executable, "-I", "-c", _TRAIN_IN_SANDBOX, str(home), root,
                               json.dumps([[fields, str(run)] for fields, run in jobs]),
                               json.dumps([[method, env_id] for env_id in env_ids])], cwd=home, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=2 * limits["cpu_s"] + 60,
                              preexec_fn=_sandbox(limits["cpu_s"], limits["memory_bytes"], limits["file_bytes"]))
    except subprocess.TimeoutExpired:
        raise SubmissionError(f"{where}: re-training the shipped method {source.name} was stopped by its sandbox "
                              f"(wall-clock limit {2 * limits['cpu_s'] + 60} s, for {limits['cpu_s']} s of "
                              f"CPU)") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"killed by signal {-done.returncode}"]
        raise SubmissionError(f"{where}: re-training the shipped method {source.name} failed in its sandbox (limits: "
                              f"{limits['cpu_s']} s of CPU, {limits['memory_bytes'] >> 20} MiB of memory, files up to "
                              f"{limits['file_bytes'] >> 20} MiB; exit {done.returncode}: {tail[0][:300]})")
    lines = done.stdout.strip().splitlines()
    try:
        return {str(k): (None if v is None else str(v)) for k, v in json.loads(lines[-1]).items()}
    except (IndexError, ValueError, AttributeError):
        raise SubmissionError(f"{where}: the sandbox of {source.name} did not report its result") from None


def _retrained_here(v: Validated) -> str:
    """Why a run trained again here can reach other weights than an honest submitter's: what this machine and the
    manifest say about the two things the MLP trainer's floats depend on beyond the config."""
    packages = v.manifest.get("packages")
    theirs = packages.get("torch") if isinstance(packages, dict) else None
    ours = package_versions().get("torch")
    torch = "the manifest's torch" if theirs == ours else f"torch {ours!r} (the manifest's: {theirs!r})"
    return (f" (trained again here from its train_config, with {torch} and MKL_CBWR="
            f"{os.environ.get('MKL_CBWR', 'unset')}; an honest run reaches other weights only under another torch or "
            f"other MKL kernels, see baselines.policies.mlp.same_floats_on_every_cpu)")


def _player(v: Validated, env_id: str, run: int, spec: str, retrained: bool = False):
    where = f"{SUBMISSION_FILE}.players.{env_id}[{run}]"
    provenance = v.manifest["players"][env_id][run]
    try:
        player = load_player(spec, env_id, v.protocol.roles(env_id), v.protocol.action_mode, _greedy(provenance))
    except Exception as e:  # noqa: BLE001 - a model that is not here fails in many ways; each is "cannot re-run"
        raise SubmissionError(f"{where}.spec: {spec!r} cannot be re-run here ({type(e).__name__}: {e})") from None
    if player.provenance["weights_sha256"] != provenance["weights_sha256"]:
        raise SubmissionError(f"{where}.weights_sha256: the re-run player {spec} has weights "
                              f"{player.provenance['weights_sha256'][:12]}..., the manifest claims "
                              f"{str(provenance['weights_sha256'])[:12]}..."
                              + (_retrained_here(v) if retrained else ""))
    if player.provenance["model_id"] != provenance["model_id"]:
        raise SubmissionError(f"{where}.model_id: the re-run player {spec} is {player.provenance['model_id']!r}, the "
                              f"manifest claims {provenance['model_id']!r}")
    if player.provenance["decoding"] != provenance["decoding"]:
        raise SubmissionError(f"{where}.decoding: the re-run player decodes with {player.provenance['decoding']}, "
                              f"the manifest claims {provenance['decoding']}")
    return player


def _runnable(spec: str) -> bool:
    if spec == "random" or spec == "reference" or spec.startswith("reference:"):
        return True
    if spec.startswith("checkpoint:"):
        return Path(spec.partition(":")[2]).exists()
    if spec.startswith("hf:"):
        return True             # load_model decides: a model that is not here fails there, naming the spec
    return False


def _cheap(provenance: dict[str, Any]) -> bool:
    """A player whose every episode is re-played (a scripted bot or an MLP: milliseconds per episode)."""
    spec = provenance.get("spec", "")
    return spec == "random" or spec.startswith("reference") or provenance.get("model_id") == "mlp"


def _differs(again, claimed, line: int, spec: str, label: str, seat: str) -> None:
    """The :class:`SubmissionError` for an episode whose re-play differs: the first step that differs, and whose
    move it is (the player's, or, without seeded moves, the protocol's opponent's: a whole cell re-played on the
    protocol's seeds re-derives those too, so a thrown opponent, mirrored seats or another engine seed show here)."""
    mine, theirs = again.transcript["actions"], claimed.transcript["actions"]
    step = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
    agent = next((t.agent for t in again.turns if t.step_index == step), None)
    whose = "the player's move" if seat == "all" or agent == seat or agent is None else \
        f"the protocol's opponent's move ({agent})"
    why = "the moves are not the claimed player's" if whose == "the player's move" else \
        "a move the submitter does not own was changed, or the seats, seeds or engine seed are not the protocol's"
    raise SubmissionError(f"{EPISODES_FILE}:{line}: re-played with the claimed player {spec!r}, {label} seed "
                          f"{again.seed} differs at step {step}: {whose} is {(mine + [None])[step]!r}, the episode "
                          f"has {(theirs + [None])[step]!r} ({why})")


def detection_sample(fraction: float = DETECT_FRACTION, probability: float = DETECT_PROBABILITY) -> int:
    """How many episodes, drawn uniformly, catch a forged ``fraction`` of them with at least ``probability``:
    ``n = ceil(log(1 - probability) / log(1 - fraction))`` (459 for 1% and 0.99; drawing without replacement
    catches it at least as often)."""
    return math.ceil(math.log(1 - probability) / math.log(1 - fraction))


def detection_probability(sampled: int, total: int, fraction: float = DETECT_FRACTION) -> float:
    """The probability that ``sampled`` of ``total`` episodes, drawn uniformly, include a forged one when a
    ``fraction`` of them is forged (1 when all are re-played)."""
    return 1.0 if sampled >= total else 1.0 - (1.0 - fraction) ** sampled


def reproduce(v: Validated, sample: int | None = None, retrain: int | None = None,
              audit_seed: int | None = None, workdir: str | Path | None = None) -> dict[str, Any]:
    """Re-run the players of ``v``, a submission :func:`leaderboard.validate.validate` passed (see the module
    docstring). Records what was re-run in ``v.reproduced`` (so the entry is no longer self-reported) and returns it:
    ``{"episodes": n, "of": total, "retrained": ["env|run<r>", ...], "players": ["env|run<r>", ...],
    "audit_seed": seed, "detection": {"fraction": f, "probability": p}}``.

    Every draw comes from ``audit_seed`` (default: ``v.audit_seed``, the validator's own draw). Credit
    track, MLP runs: ``retrain`` of them are trained again (default: every one); a run neither re-trained nor
    present here is a :class:`SubmissionError`, never skipped. Episodes: every one of a cheap player (scripted,
    MLP); of the others ``sample`` drawn uniformly (default: :func:`detection_sample`)."""
    if sample is not None and sample < 1:
        raise ValueError(f"reproduce sample: at least 1 episode, got {sample}")
    seed = int(audit_seed) if audit_seed is not None else \
        int(v.audit_seed) if v.audit_seed is not None else draw_audit_seed()
    rng = random.Random(seed)
    proto, players = v.protocol, v.manifest["players"]
    runs = [(env_id, r) for env_id in sorted(players) for r in range(len(players[env_id]))]
    retrained: list[tuple[str, int]] = []
    specs: dict[tuple[str, int], str] = {}
    with tempfile.TemporaryDirectory(prefix="reproduce-", dir=workdir) as tmp:
        if proto.track == "credit":
            mlp = [key for key in runs if (players[key[0]][key[1]].get("train_config") or {}).get("model") == "mlp"]
            chosen = mlp if retrain is None or retrain >= len(mlp) else rng.sample(mlp, retrain)
            for env_id, r in sorted(chosen):
                specs[(env_id, r)] = _retrain(v, env_id, r, Path(tmp))
                retrained.append((env_id, r))
        for env_id, r in runs:
            spec = players[env_id][r]["spec"]
            if (env_id, r) in specs:
                continue
            if not _runnable(spec):
                raise SubmissionError(f"{SUBMISSION_FILE}.players.{env_id}[{r}].spec: {spec!r} cannot be re-run here "
                                      f"(its weights are not on this machine); it was not re-trained, and every run "
                                      f"is re-run, none skipped: ship the run's folder with the submission")
            specs[(env_id, r)] = spec
        loaded = {key: _player(v, key[0], key[1], spec, key in retrained) for key, spec in specs.items()}
        # every episode of a cheap player; a uniform draw of the others' (whole cells without seeded moves)
        todo = [(task, seat, r) for task in proto.tasks for seat in task.seats()
                for r in range(len(players[task.env_id])) if (task.env_id, r) in loaded]
        costly = [((task.name, seat, r), s) for task, seat, r in todo if not _cheap(players[task.env_id][r])
                  for s in sorted(v.cells[(task.name, seat, r)])]
        want = detection_sample() if sample is None else sample
        drawn = set(costly) if not proto.seeded_moves or want >= len(costly) else set(rng.sample(costly, want))
        played = 0
        envs: dict = {}     # shared by the cells, as evaluate shares them
        for task, seat, r in todo:
            cell = v.cells[(task.name, seat, r)]
            seeds = sorted(cell) if _cheap(players[task.env_id][r]) or not proto.seeded_moves else \
                [s for s in sorted(cell) if ((task.name, seat, r), s) in drawn]
            if not seeds:
                continue
            again = play_cell(proto, task, seat, r, loaded[(task.env_id, r)], seeds=seeds, env_pool=envs)
            for e in again:
                line, claimed = cell[e.seed]
                if e.transcript["actions"] != claimed.transcript["actions"]:
                    _differs(e, claimed, line, players[task.env_id][r]["spec"], run_label(task.name, seat, r), seat)
                played += 1
    total = sum(len(v.cells[(t.name, seat, r)]) for t, seat, r in todo)
    v.reproduced = {"episodes": played, "of": total, "retrained": [f"{env_id}|run{r}" for env_id, r in retrained],
            "players": [f"{env_id}|run{r}" for env_id, r in sorted(loaded)], "audit_seed": seed,
            "detection": {"fraction": DETECT_FRACTION,
                          "probability": round(detection_probability(played, total), 4)}}
    return v.reproduced
