"""The suite's runs: the plan (one trainer run per method x setting x training seed), one run trained (or reused)
and given its raw score, and :func:`execute`, which plays many on :class:`leaderboard.workers.Workers`
(see :mod:`leaderboard.suite`, Runs and Scores)."""

from __future__ import annotations

import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

import marl_llm_envs
from baselines.credit import make_credit
from baselines.outputs import read_json_object, safe_name, writing
from baselines.policies.base import Policy, Request
from baselines.rollout import RolloutEngine
import baselines.train as trainer
from baselines.train import TrainConfig, checkpoint
from baselines.train.config import read_run_config
from baselines.train.logging import decisive_rewards
from leaderboard import exact
from leaderboard.players import load_player, opponent_policy
from leaderboard.suite.cache import PLACEMENT_DEFAULTS, cached_score, verified_run, write_receipt
from leaderboard.suite.spec import Setting, Suite
from leaderboard.workers import Workers

__all__ = ["PLACEMENT", "applicable", "best_checkpoint", "complete_run", "execute", "held_out_values",
           "kept_checkpoints", "kept_steps", "plan", "reusable_run", "run_one", "run_spec", "safe_name", "score_run",
           "train_run"]


def applicable(method: str, env_id: str) -> str | None:
    """``None`` when ``method`` can train on ``env_id``, else why not. A method that cannot be built at all (an
    unknown name, a class that does not load) raises its ``ValueError``: it is not a method that applies nowhere."""
    credit = make_credit(method)
    try:
        credit.branches(env_id)
    except ValueError as e:
        return str(e)
    return None


PLACEMENT = ("device", "dtype", "backend")       # the trainer's flags a spec may carry (train_run): where it trains


def plan(suite: Suite, methods: Sequence[str], out: str | Path, placement: dict[str, str] | None = None
         ) -> tuple[list[dict[str, Any]], dict[str, dict]]:
    """The runs to make, as JSON-able specs in a fixed order (method, setting, seed: the setting's own
    ``train.seeds`` where it lists them, else the suite's), and per method the settings it cannot train on (with
    why). ``placement``: the ``device``, ``dtype`` and ``backend`` of every run (default:
    the trainer's, cpu, float32 and hf)."""
    placement = dict(placement or {})
    unknown = sorted(set(placement) - set(PLACEMENT))
    if unknown:
        raise ValueError(f"placement: {unknown} are not among {list(PLACEMENT)}")
    out = Path(out)
    specs, skipped = [], {}
    for m in methods:
        for s in suite.settings:
            why = applicable(m, s.env_id)
            if why is not None:
                skipped.setdefault(m, {})[s.name] = why
                continue
            for seed in suite.budget(s)["seeds"]:
                specs.append(run_spec(suite, s, seed, m, out / safe_name(m) / safe_name(s.name) / f"seed{seed}",
                                      placement))
    return specs, skipped


def run_spec(suite: Suite, s: Setting, seed: int, method: str, out: Path,
             placement: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON-able spec of one run (method x setting x seed) into ``out``: what :func:`train_run` trains and
    :func:`score_run` scores, all from the suite."""
    b = suite.budget(s)
    return {"method": method, "setting": s.name, "seed": seed, "env_id": s.env_id, "env_kwargs": s.env_kwargs,
            "action_mode": suite.action_mode, "model": b["model"], "mode": b["mode"], "steps": b["steps"],
            "tasks_per_step": b["tasks_per_step"], "group_size": b["group_size"], "partners": s.partners,
            "play": s.play, "opponent": s.opponent, "last_fraction": suite.score["last_fraction"],
            "eval_start": suite.score["eval_start"], "eval_count": s.eval_count or suite.score["eval_count"],
            "evaluate": s.evaluate, "score": s.score, "out": str(out), **(placement or {}),
            **({"checkpoints": suite.score["checkpoints"]} if suite.score["checkpoints"] > 1 else {})}


def complete_run(run: Path, steps: int, spec: dict[str, Any] | None = None) -> bool:
    """Whether the trainer run in ``run`` has finished ``steps`` steps (its latest checkpoint is at that step) and,
    given the ``spec`` it should be, was trained with that spec's ``device``, ``dtype`` and ``backend`` (a run trained
    on the CPU is not reused for a spec that trains on CUDA: its result is another's; it is trained again)."""
    latest = checkpoint.latest(run / "checkpoints")
    if latest is None or _json_object(latest / "meta.json", run).get("step") != steps:
        return False
    if spec is None:
        return True
    config = _json_object(run / "config.json", run)
    return all(config.get(k, d) == spec.get(k, d) for k, d in PLACEMENT_DEFAULTS.items())


def reusable_run(run: Path, spec: dict[str, Any]) -> bool:
    """Whether the run in ``run`` can be reused for ``spec``: complete (:func:`complete_run`) and trained on this
    machine from this spec, unchanged since (its receipt, :func:`leaderboard.suite.cache.verified_run`). A complete
    run that fails the receipt is reported on stderr (why) and trained again: a run found in ``--out`` is the
    submitter's until this machine has trained it."""
    why = verified_run(run, spec)
    if why is not None:
        if (run / "checkpoints").exists():
            print(f"not reused: {why}; it is trained again", file=sys.stderr)
        return False
    return complete_run(run, spec["steps"], spec)


def _json_object(path: Path, run: Path, line: int | None = None, text: str | None = None) -> dict[str, Any]:
    """A JSON object of a finished run's files (the whole file, or line ``line`` given as ``text``). Checkpoints and
    metrics are written atomically or line by line, so damage comes from outside, and the run is left as it is:
    deleting its folder trains it again, with the same result."""
    return read_json_object(path, f"delete {run} to train that run again", line=line, text=text)


def train_run(spec: dict[str, Any]) -> str:
    """Train the run a spec describes into ``spec["out"]`` (``env_id``, ``method``, ``seed``, ``action_mode``,
    ``model``, ``mode``, ``steps``, ``tasks_per_step``, ``group_size``; ``env_kwargs``, ``partners``, ``progress``
    and the trainer's ``device``, ``dtype`` and ``backend`` optional), or reuse it when it is complete; returns the
    folder. An unfinished run starts again (same seed, same result). A top-level function of JSON-able input, so a
    process pool or Ray can call it (``execute``)."""
    run = Path(spec["out"])
    with writing(run, wait=True):       # another suite training this run now (a shared baseline): wait, then reuse it
        if reusable_run(run, spec):
            return str(run)
        for old in run.iterdir():       # an unfinished run: emptied (the folder itself is what is held)
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        progress = bool(spec.get("progress"))
        kept = min(spec.get("checkpoints", 1), spec["steps"])       # evenly spaced, the last one the final policy
        cfg = TrainConfig(env=spec["env_id"], env_kwargs=dict(spec.get("env_kwargs") or {}),
                          action_mode=spec["action_mode"], model=spec["model"], mode=spec["mode"],
                          credit=spec["method"], steps=spec["steps"], tasks_per_step=spec["tasks_per_step"],
                          group_size=spec["group_size"], seed=spec["seed"], partners=spec.get("partners", ""),
                          out=str(run), save_every=spec["steps"] // kept, keep_checkpoints=kept, tensorboard=False,
                          progress=progress, **{k: spec[k] for k in PLACEMENT if k in spec})
        if progress:
            print(f"train {spec['method']} on {spec['env_id']}, seed {spec['seed']}: {spec['steps']} steps",
                  file=sys.stderr)
        trainer.train(cfg)         # (looked up when called: a test may stand in for the trainer)
        write_receipt(run, spec)
    return str(run)


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Train one run (or reuse a complete one: :func:`train_run`) and return its raw score: ``{"raw", "curve",
    "tokens", ...}``.

    A top-level function of JSON-able input and output, so a process pool or Ray can call it anywhere."""
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    run = Path(train_run(spec))
    return {**score_run(spec, run), "wall_s": time.perf_counter() - t0}


def score_run(spec: dict[str, Any], run: Path) -> dict[str, Any]:
    """:func:`_score_run`, once per run content, scoring spec and scoring code on this machine
    (:func:`leaderboard.suite.cache.cached_score`): the suite scores its runs, then validates its own submission folders
    (copies of the same files) without playing every checkpoint again."""
    return cached_score(spec, run, lambda: _score_run(spec, run))


def _score_run(spec: dict[str, Any], run: Path) -> dict[str, Any]:
    """The raw score of the finished run in ``run`` as ``spec`` says to score it (``play``, ``evaluate``, ``score``,
    ``last_fraction``, the evaluation seeds, ``checkpoints``), with its learning curve, tokens and side figures. The
    validator of a suite submission calls it with a spec it builds from the suite.

    * A suite that keeps one checkpoint (``checkpoints`` absent or 1: credit-micro@3 and older): a ``self`` setting
      scores the tail of its ``metrics.jsonl`` (``last_fraction``), a ``versus`` one its final policy played (or
      solved exactly) against the opponent on the evaluation seeds.
    * A suite that keeps several (credit-micro@4): every setting scores its final policy on the held-out evaluation
      seeds (:func:`held_out_values`; ``self``: the team playing itself, ``versus``: against the opponent, or exactly),
      and the result also holds ``"checkpoints"`` (each kept checkpoint's score on the two halves of those seeds)
      and ``"best"`` (:func:`best_checkpoint`: chosen on the first half, reported on the second)."""
    metrics = run / "metrics.jsonl"
    rows = [_json_object(metrics, run, i, line) for i, line in enumerate(metrics.read_text().splitlines(), 1)
            if line.strip()]
    team_keys = sorted({k for r in rows for k in r if k.startswith("reward/team/")})
    curve = [sum(float(r.get(k, 0.0)) for k in team_keys) / max(1, len(team_keys)) for r in rows]
    tokens = {"main": sum(int(r.get("tokens/main", 0)) for r in rows),
              "branches": sum(int(r.get("tokens/branches", 0)) for r in rows)}
    free = {k: [float(r[k]) for r in rows if k in r] for k in sorted({k for r in rows for k in r
                                                                        if k.startswith("free_riding/")})}
    extra: dict[str, Any] = {}
    if spec.get("checkpoints", 1) > 1:
        raw, extra = _held_out_score(spec, run)
    elif spec["play"] == "self":
        scored = curve if spec.get("score", "team_reward") == "team_reward" else _decisive_curve(rows, run)
        tail = scored[-max(1, math.ceil(len(scored) * spec["last_fraction"])):]
        raw = sum(tail) / len(tail)
    elif spec.get("evaluate", "sampled") == "sampled":
        raw = _versus_score(spec, run)
    else:
        raw, extra = _exact_score(spec, run)
    if marl_llm_envs.spec(spec["env_id"]).idle_roles and spec["env_kwargs"].get("idle_seats", 1) > 0:
        extra["idle_drift"] = _idle_drift(spec, run)
    return {"method": spec["method"], "setting": spec["setting"], "seed": spec["seed"], "raw": float(raw), **extra,
            "curve": curve, "tokens": tokens, "free_riding": {k: sum(v) / len(v) for k, v in free.items() if v},
            "config_hash": read_run_config(run).resolved.config_hash or ""}


def kept_steps(steps: int, checkpoints: int) -> list[int]:
    """The steps of the checkpoints a run of ``steps`` steps keeps (``score.checkpoints`` evenly spaced, the last
    one the final policy): ``[steps / k, 2 steps / k, ..., steps]`` where ``k`` divides ``steps`` (a suite's
    checkpoints divide every setting's steps); else the last ``k`` the trainer saves (every ``steps // k`` steps, and
    the last step), as :func:`train_run` has it save them."""
    kept = min(checkpoints, steps)
    every = steps // kept
    saved = sorted({*range(every, steps + 1, every), steps})
    return saved[-kept:]


def kept_checkpoints(spec: dict[str, Any], run: Path) -> list[Path]:
    """The folders of the run's kept checkpoints (:func:`kept_steps`), in step order, or a ``ValueError`` naming the
    first one missing: a run is scored on all of them (its final policy and its best checkpoint)."""
    out = []
    for step in kept_steps(spec["steps"], spec.get("checkpoints", 1)):
        path = run / checkpoint.CHECKPOINTS / f"step-{step:07d}"
        if not all((path / n).is_file() and not (path / n).is_symlink()
                   for n in ("meta.json", checkpoint.STATE_JSON, checkpoint.STATE_TENSORS)):
            raise ValueError(f"{run}: checkpoint {path.name} is missing or incomplete; a run of {spec['steps']} steps "
                             f"keeps checkpoints {kept_steps(spec['steps'], spec.get('checkpoints', 1))} and each "
                             f"is scored")
        out.append(path)
    return out


def _checkpoint_player(spec: dict[str, Any], path: Path, step: int | None = None):
    """The policy of one checkpoint folder (``path``: a trainer run, its latest checkpoint, or ``run/checkpoints/
    step-N``), checked to be from ``step`` when one is given (a renamed checkpoint is not the step it claims)."""
    env = marl_llm_envs.make(spec["env_id"], **spec["env_kwargs"], action_mode=spec["action_mode"])
    player = load_player(f"checkpoint:{path}", spec["env_id"], sorted(set(env.roles.values())), spec["action_mode"])
    if step is not None and player.provenance["step"] != step:
        raise ValueError(f"{path}: its meta.json says step {player.provenance['step']}, the folder is step {step}")
    return env, player


def held_out_values(spec: dict[str, Any], paths: Sequence[Path], steps: Sequence[int] | None = None
                    ) -> list[list[float]]:
    """A sampled setting's score of each checkpoint (``paths``: checkpoint folders, or a run for its latest; each
    checked to be from its ``steps`` entry when given) per held-out evaluation seed (``eval_count`` seeds from
    ``eval_start``, in order): for ``self`` the team reward of the team playing itself (the mean over teams; for a
    ``score: "decisive_reward"`` setting the noise-free decisive reward, the team reward less the ``noise_total`` the
    env reports), for ``versus`` the payoff against the opponent averaged over the seats. Every checkpoint of every
    method plays the same seeds with the same sampling seeds (paired, deterministic), and its policy samples as it did
    in training. One batched rollout plays them all (:func:`_rollouts`): a checkpoint's values are the ones it gets
    played alone."""
    players = [_checkpoint_player(spec, p, None if steps is None else steps[i]) for i, p in enumerate(paths)]
    env = players[0][0]
    if spec["play"] == "versus":
        payoffs = _versus_payoffs(spec, [pl for _, pl in players], env)
        return [[sum(p[seat][i] for seat in p) / len(p) for i in range(spec["eval_count"])] for p in payoffs]
    out = []
    for eps in _rollouts(spec, [pl.policies for _, pl in players], {}, "held-out"):
        if spec.get("score", "team_reward") == "team_reward":
            out.append([sum(float(r) for r in e.team_rewards.values()) / len(e.team_rewards) for e in eps])
            continue
        decisive = decisive_rewards(eps)
        if not decisive or any(len(v) != len(eps) for v in decisive.values()):
            raise ValueError(f"{spec['env_id']}: the setting scores decisive_reward, but the env does not report "
                             "noise_total in the final infos of every episode")
        out.append([sum(v[i] for v in decisive.values()) / len(decisive) for i in range(len(eps))])
    return out


class _PerSample(Policy):
    """One role's policies of several teams as one policy: a request of sample ``k`` of its group (``Request.key[1]``)
    is decided by the ``k``-th, in a call of its own with the call's seed, as sample 0 (its key's sample index set to
    0): each team decides exactly what it would decide played alone (the same requests, in the same order, with the
    same seeds), and all teams share their random numbers (common random numbers: the difference between two
    checkpoints on the same seeds is the policies', not the draws')."""

    def __init__(self, policies: Sequence[Policy]) -> None:
        self.policies = list(policies)
        self.name, self.version, self.observes = policies[0].name, policies[0].version, policies[0].observes

    def settings(self) -> dict[str, Any]:
        return self.policies[0].settings()

    def generate(self, requests, seed: int | None = None) -> list:
        out: list = [None] * len(requests)
        for k, policy in enumerate(self.policies):
            idx = [i for i, r in enumerate(requests) if r.key[1] == k]
            if idx:
                alone = [Request(r.env_id, r.agent, r.role, r.text, r.legal_actions, r.env, (r.key[0], 0, *r.key[2:]),
                                 r.observation, r.action_mask) for r in (requests[i] for i in idx)]
                for i, g in zip(idx, policy.generate(alone, seed=seed)):
                    out[i] = g
        return out


def _rollouts(spec: dict[str, Any], teams: Sequence[dict[str, Policy]], envs: dict, run_id: str
              ) -> list[list[Any]]:
    """Each team (role -> policy) on every held-out seed; per team, its episodes in seed order. One rollout plays
    all teams, as the samples of one group per seed: one env reset per seed (its clones start the other teams'
    episodes), one call per tick of each team's policies (:class:`_PerSample`). ``envs``: the engine's env pool."""
    kwargs = {**spec["env_kwargs"], "action_mode": spec["action_mode"]}
    seeds = list(range(spec["eval_start"], spec["eval_start"] + spec["eval_count"]))
    k = len(teams)
    if k == 1:
        policies = dict(teams[0])
    else:
        merged: list[tuple[Policy, _PerSample]] = []        # a policy shared by roles stays shared
        policies = {}
        for role, p in teams[0].items():
            same = next((m for q, m in merged if q is p), None)
            if same is None:
                same = _PerSample([t[role] for t in teams])
                merged.append((p, same))
            policies[role] = same
    engine = RolloutEngine(policies, show_progress=False, env_pool=envs)
    eps = engine.run(spec["env_id"], num_tasks=len(seeds), group_size=k, seed=spec["eval_start"], seeds=seeds,
                     env_kwargs=kwargs, run_id=run_id)
    return [[eps[g * k + i] for g in range(len(seeds))] for i in range(k)]


def best_checkpoint(steps: Sequence[int], halves: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """The best kept checkpoint without selection bias: chosen on the first half of the held-out seeds, reported on
    the second. ``halves``: per checkpoint (in step order, the last one the final policy), its mean score on half A
    and on half B. The best is the checkpoint with the highest half-A score (ties: the later one); returns its
    ``step``, its half-B score as ``raw`` and the final policy's half-B score as ``final`` (the same seeds: the
    collapse flag compares the two, :func:`leaderboard.suite.score.collapses`). Selecting and reporting on one set
    of seeds would report the maximum of noisy means, biased upward by the selection; on independent seeds the
    reported score is unbiased for the chosen checkpoint."""
    if not steps or len(steps) != len(halves):
        raise ValueError(f"best_checkpoint: one (half A, half B) pair per step, got {len(halves)} for {len(steps)}")
    i = max(range(len(steps)), key=lambda j: (halves[j][0], j))
    return {"step": int(steps[i]), "raw": float(halves[i][1]), "final": float(halves[-1][1])}


def _held_out_score(spec: dict[str, Any], run: Path) -> tuple[float, dict[str, Any]]:
    """A run of a suite that keeps several checkpoints: its final policy's score on all the held-out seeds (or its
    exact score), every kept checkpoint's score on the two halves of those seeds (``checkpoints``) and the best one
    (``best``, :func:`best_checkpoint`). An exact setting has no seeds to split: each checkpoint's score is exact, so
    the best is chosen and reported on that one exact number (no noise to select on, so no bias), and both halves are
    that number."""
    paths = kept_checkpoints(spec, run)
    steps = kept_steps(spec["steps"], spec["checkpoints"])
    extra: dict[str, Any] = {}
    halves = []
    if spec.get("evaluate", "sampled") == "sampled":
        half = spec["eval_count"] // 2
        if half < 1:
            raise ValueError(f"{spec['setting']}: the best checkpoint is chosen on half the held-out seeds and "
                             f"reported on the other half; {spec['eval_count']} seed(s) cannot be split")
        for values in held_out_values(spec, paths, steps):
            halves.append((sum(values[:half]) / half, sum(values[half:]) / (len(values) - half)))
        final = sum(values) / len(values)
    else:
        for final, extra in _exact_scores(spec, paths, steps):
            halves.append((final, final))
    best = best_checkpoint(steps, halves)
    extra = {**extra, "checkpoints": [{"step": st, "a": a, "b": b} for st, (a, b) in zip(steps, halves)],
             "best": best}
    return final, extra


def _decisive_curve(rows: list[dict[str, Any]], run: Path) -> list[float]:
    """Per step, the mean over teams of the trainer's ``reward/decisive/<team>`` (the team reward less the noise the
    env added, :func:`baselines.train.logging.step_metrics`): what a ``score: "decisive_reward"`` setting scores."""
    keys = sorted({k for r in rows for k in r if k.startswith("reward/decisive/")})
    if not keys or not all(k in r for r in rows for k in keys):
        raise ValueError(f"{run}: the setting scores decisive_reward, but its metrics.jsonl does not log "
                         "reward/decisive/<team> at every step (an env that reports noise_total in its final infos)")
    return [sum(float(r[k]) for k in keys) / len(keys) for r in rows]


def _idle_drift(spec: dict[str, Any], run: Path) -> float:
    """free_riding-v0: how far the final policy of the idle seats has drifted, ``KL(p || uniform) = log 3 - H(p)``
    in nats, averaged over the idle seats; ``p`` is the seat's exact move distribution on its observation (the same
    in every episode, see the env's manual). 0 = no drift; log 3 = 1.0986 = a deterministic idle seat."""
    env, player = _checkpoint_player(spec, run)
    decide = exact.policy_decider(player.policies)
    env.reset(seed=0)
    drifts = []
    while not env.unwrapped.done:
        agent = env.agent_selection
        legal = np.flatnonzero(np.asarray(env.action_mask(agent)) > 0)          # any action mode (text: no mask key)
        if env.roles[agent] != "decider":
            p = decide(env, agent)[legal]
            p = p / p.sum()
            drifts.append(float(math.log(len(legal)) + np.sum(p * np.log(np.maximum(p, 1e-300)))))
        env.step(int(legal[0]) if env.action_mode == "discrete" else env.legal_actions(agent)[0])
    return float(sum(drifts) / len(drifts))


def _versus_score(spec: dict[str, Any], run: Path) -> float:
    """The final policy against the opponent in each seat on the evaluation seeds: the mean payoff."""
    env, player = _checkpoint_player(spec, run)
    (payoffs,) = _versus_payoffs(spec, [player], env)
    total = 0.0
    for seat in env.possible_agents:
        total += sum(payoffs[seat]) / len(payoffs[seat])
    return total / len(env.possible_agents)


def _versus_payoffs(spec: dict[str, Any], players: Sequence[Any], env) -> list[dict[str, list[float]]]:
    """Per player (a checkpoint's), seat -> its payoff in that seat against the opponent on each evaluation seed (in
    order)."""
    out: list[dict[str, list[float]]] = [{} for _ in players]
    envs: dict = {}         # the seats' engines share their envs
    for seat in env.possible_agents:
        teams = [{env.roles[a]: pl.policies[env.roles[a]] if a == seat else
                  opponent_policy(spec["env_id"], spec["opponent"], seed=0) for a in env.possible_agents}
                 for pl in players]
        for i, eps in enumerate(_rollouts(spec, teams, envs, f"versus|{seat}")):
            out[i][seat] = [float(e.rewards[seat]) for e in eps]
    return out


def _exact_score(spec: dict[str, Any], run: Path) -> tuple[float, dict[str, float]]:
    """The final policy's exact score (:mod:`leaderboard.exact`), with both exact figures: its payoff against the
    reference averaged over the seats (``versus``) and its ``exploitability`` (chips per hand)."""
    return _exact_scores(spec, [run])[0]


def _exact_scores(spec: dict[str, Any], paths: Sequence[Path], steps: Sequence[int] | None = None
                  ) -> list[tuple[float, dict[str, float]]]:
    """The exact score of each checkpoint (``paths``, the last one the final policy; each checked to be from its
    ``steps`` entry when given), their strategies read in one walk of the game tree
    (:func:`leaderboard.exact.strategies_of`); the final policy's with both exact figures (:func:`_exact_score`),
    the others' alone."""
    deciders = [exact.policy_decider(_checkpoint_player(spec, p, None if steps is None else steps[i])[1].policies)
                for i, p in enumerate(paths)]
    tables = exact.strategies_of(spec["env_id"], deciders, spec["env_kwargs"])
    out: list[tuple[float, dict[str, float]]] = [(exact.raw_score(spec["env_id"], t, spec["evaluate"]), {})
                                                 for t in tables]
    out[-1][1].update(versus=exact.versus(spec["env_id"], tables[-1]),
                      exploitability=exact.exploitability(spec["env_id"], tables[-1]))
    return out


def execute(specs: Sequence[dict[str, Any]], jobs: int = 1, ray: str | None = None,
            progress: bool = False, fn: Callable[[dict[str, Any]], Any] = run_one) -> list[Any]:
    """``fn`` (default :func:`run_one`) of every spec, results in the order of ``specs``: here (``jobs=1``), in
    ``jobs`` processes, or over Ray (``ray="auto"``: the running cluster, as ``ray.init(address="auto")``; an
    address; ``"local"``: a private local instance). The results do not depend on how they were run. ``fn`` is a
    module-level function of a JSON-able spec (a process pool and Ray import it by name); with ``progress``, a line
    per finished spec names its ``method``, ``setting`` and ``seed``. One call of :meth:`Workers.map` on workers
    started for it and stopped after it."""
    with Workers(jobs, ray) as workers:
        return workers.map(fn, specs, progress)
