"""``python -m leaderboard validate DIR --reproduce``: re-run what can be re-run, and require the same result.

``validate`` alone proves that the episodes are consistent, legal and complete, and (protocols with
``seeded_moves``) that every move of the protocol's opponents is the one their seed gives. It cannot know whether
the submitter's own moves came from the player the manifest names. ``reproduce`` re-plays them with that player:

* Players whose code or weights are here are re-loaded from their spec: ``random`` and ``reference[:NAME]`` (the
  code of this package), ``checkpoint:PATH`` where ``PATH`` exists on this machine, ``hf:MODEL`` for a model
  :func:`baselines.models.load_model` finds locally. The re-loaded player must have the manifest's weights hash.
* Credit track, MLP model (the micro tier): ``retrain`` of the runs (default 1, drawn at random) are trained again
  from the run's ``train_config`` in the manifest, with :func:`baselines.train.train` (deterministic on CPU: see
  ``tests/test_checkpoint_safety.py``), and the new weights must hash to the run's ``weights_sha256``. Only the
  built-in credit methods are re-trained: a ``package.module:Class`` method would import code named by the
  submission.
* Then ``sample`` episodes of the re-loaded players are played again exactly as :func:`leaderboard.evaluate.evaluate`
  plays them (:func:`leaderboard.evaluate.play_cell`) and every move must be identical. With ``seeded_moves`` any
  subset of a cell's seeds plays the same episodes, so a sample is cheap; without it (version-1 protocols) a whole
  cell is re-played, because the moves depend on how the requests were batched.

A player that cannot be re-run here (an ``hf:`` model that is not present, a checkpoint path that is not on this
machine and no run to re-train) is a :class:`~leaderboard.validate.SubmissionError` under ``--reproduce``; without
``--reproduce`` the entry is stored as *self-reported* (``entry["self_reported"]``).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from leaderboard.evaluate import EPISODES_FILE, SUBMISSION_FILE, play_cell, run_label
from leaderboard.validate import SubmissionError, Validated

__all__ = ["reproduce"]


def _greedy(provenance: dict[str, Any]) -> bool:
    temps = [d.get("temperature") for d in provenance.get("decoding", {}).values() if isinstance(d, dict)]
    return bool(temps) and all(t == 0 for t in temps)


def _retrain(v: Validated, env_id: str, run: int, workdir: Path) -> str:
    """Train run ``run`` of ``env_id`` again from the manifest; returns its folder (the weights hash is checked)."""
    from baselines.credit import list_credits
    from baselines.train import TrainConfig, train
    from baselines.train.config import LEGACY_RESOLVED_KEYS, OUTPUT_FIELDS

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
    if raw.get("credit") not in list_credits():
        raise SubmissionError(f"{where}.train_config.credit: {raw.get('credit')!r} is not a built-in credit method "
                              f"({', '.join(list_credits())}); a method named by the submission is not imported here")
    out = workdir / f"{env_id}-run{run}"
    try:
        cfg = TrainConfig(**{k: val for k, val in raw.items() if k in known and k not in OUTPUT_FIELDS},
                          out=str(out), progress=False, tensorboard=False)
        train(cfg)
    except Exception as e:  # noqa: BLE001 - a submitted config that does not train is a rejection, not a crash
        raise SubmissionError(f"{where}.train_config: does not train ({type(e).__name__}: {e})") from None
    return f"checkpoint:{out}"


def _retrained_here(v: Validated) -> str:
    """Why a run trained again here can reach other weights than an honest submitter's: what this machine and the
    manifest say about the two things the MLP trainer's floats depend on beyond the config."""
    import os

    from leaderboard.evaluate import package_versions

    packages = v.manifest.get("packages")
    theirs = packages.get("torch") if isinstance(packages, dict) else None
    ours = package_versions().get("torch")
    torch = "the manifest's torch" if theirs == ours else f"torch {ours!r} (the manifest's: {theirs!r})"
    return (f" (trained again here from its train_config, with {torch} and MKL_CBWR="
            f"{os.environ.get('MKL_CBWR', 'unset')}; an honest run reaches other weights only under another torch or "
            f"other MKL kernels, see baselines.policies.mlp.same_floats_on_every_cpu)")


def _player(v: Validated, env_id: str, run: int, spec: str, retrained: bool = False):
    from leaderboard.players import load_player

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


def reproduce(v: Validated, sample: int = 200, retrain: int = 1, audit_seed: int | None = None,
              workdir: str | Path | None = None) -> dict[str, Any]:
    """Re-run the players of ``v``, a submission :func:`leaderboard.validate.validate` passed (see the module
    docstring): ``sample`` episodes re-played, ``retrain`` credit runs re-trained in ``workdir`` (default: a
    temporary folder). Records what was re-run in ``v.reproduced`` (so the entry is no longer self-reported) and
    returns it: ``{"episodes": n, "retrained": ["env|run<r>", ...], "players": ["env|run<r>", ...]}``."""
    if sample < 1:
        raise ValueError(f"reproduce sample: at least 1 episode, got {sample}")
    rng = random.Random(audit_seed) if audit_seed is not None else random.SystemRandom()
    proto, players = v.protocol, v.manifest["players"]
    runs = [(env_id, r) for env_id in sorted(players) for r in range(len(players[env_id]))]
    retrained: list[tuple[str, int]] = []
    specs: dict[tuple[str, int], str] = {}
    with tempfile.TemporaryDirectory(prefix="reproduce-", dir=workdir) as tmp:
        if proto.track == "credit":
            for env_id, r in rng.sample(runs, min(retrain, len(runs))):
                specs[(env_id, r)] = _retrain(v, env_id, r, Path(tmp))
                retrained.append((env_id, r))
        for env_id, r in runs:
            spec = players[env_id][r]["spec"]
            if (env_id, r) in specs:
                continue
            if _runnable(spec):
                specs[(env_id, r)] = spec
            elif proto.track == "policy":
                raise SubmissionError(f"{SUBMISSION_FILE}.players.{env_id}[{r}].spec: {spec!r} cannot be re-run here "
                                      f"(its weights are not on this machine)")
        if not specs:
            raise SubmissionError(f"{SUBMISSION_FILE}.players: no player can be re-run here")
        loaded = {key: _player(v, key[0], key[1], spec, key in retrained) for key, spec in specs.items()}
        # the cells of the re-run players, and a sample of their seeds
        todo = [(task, seat, r) for task in proto.tasks for seat in task.seats()
                for r in range(len(players[task.env_id])) if (task.env_id, r) in loaded]
        budget = max(1, sample // len(todo))
        played = 0
        envs: dict = {}     # shared by the cells, as evaluate shares them
        for task, seat, r in todo:
            cell = v.cells[(task.name, seat, r)]
            seeds = sorted(cell) if not proto.seeded_moves or budget >= len(cell) else \
                sorted(rng.sample(sorted(cell), budget))
            again = play_cell(proto, task, seat, r, loaded[(task.env_id, r)], seeds=seeds, env_pool=envs)
            for e in again:
                line, claimed = cell[e.seed]
                if e.transcript["actions"] != claimed.transcript["actions"]:
                    step = next((i for i, (a, b) in enumerate(zip(e.transcript["actions"],
                                                                   claimed.transcript["actions"])) if a != b),
                                min(len(e.transcript["actions"]), len(claimed.transcript["actions"])))
                    raise SubmissionError(
                        f"{EPISODES_FILE}:{line}: re-played with the claimed player "
                        f"{players[task.env_id][r]['spec']!r}, {run_label(task.name, seat, r)} seed {e.seed} "
                        f"differs at step {step}: the player's move is "
                        f"{(e.transcript['actions'] + [None])[step]!r}, the episode has "
                        f"{(claimed.transcript['actions'] + [None])[step]!r} (the moves are not the claimed "
                        f"player's)")
                played += 1
    v.reproduced = {"episodes": played, "retrained": [f"{env_id}|run{r}" for env_id, r in retrained],
                    "players": [f"{env_id}|run{r}" for env_id, r in sorted(loaded)]}
    return v.reproduced
