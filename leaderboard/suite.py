"""The credit-assignment suite (issue 16): families of small cooperative and zero-sum tasks, each sweeping one
difficulty knob, with every setting scored on a scale where uniform-random play = 0 and the optimum (or the env's
reference policy) = 1, in the style of bsuite (Osband et al. 2020, "Behaviour Suite for Reinforcement Learning").

    python -m leaderboard benchmark-credit shuffled --tier micro --baselines broadcast,loo [--jobs 2 | --ray auto]

A suite file (``leaderboard/protocols/suite/<id>@<version>.json``, schema ``marl_llm_suite``)::

    {"schema": "marl_llm_suite", "id": "credit-micro", "version": 2, "track": "credit", "tier": "micro",
     "description": "...", "action_mode": "discrete",
     "train": {"model": "mlp", "mode": "generate", "steps": 100, "tasks_per_step": 8, "group_size": 4,
               "seeds": [0, 1, 2, 3, 4], "max_tokens": null},
     "score": {"last_fraction": 0.2, "eval_seeds": {"start": 1099511627776, "count": 200}, "anchor_episodes": 1000},
     "families": [{"name": "team_size", "title": "Team size", "knob": "n_voters",
                   "settings": [{"name": "voting/plurality/n2", "env_id": "voting-v0", "env_version": 0,
                                 "env_kwargs": {"n_voters": 2}, "knob": 2, "play": "self",
                                 "normalize": {"zero": "random", "one": "clue_follower"}}, ...]}, ...]}

A setting may also name ``"partners"`` (the trainer's ``--partners``, e.g. ``"thinker=reference"``), ``"opponent"``
(``play: "versus"``: the reference policy it is scored against), ``"eval_count"`` (versus: its own number of
evaluation seeds; Kuhn's payoffs are noisy next to the random-to-Nash gap) and ``"train"`` (a few budget fields that
override the suite's, e.g. ``{"steps": 200}``).

Runs. One trainer run (:func:`baselines.train.train`) per method x setting x training seed, into
``OUT/<method>/<setting>/seed<s>`` (a complete run found there is reused). A method that cannot train on a setting's
env (``make_credit(m).branches(env_id)`` raises) is not applicable there. Every run is independent and deterministic
given its spec (one torch thread per run), so :func:`execute` may play them in this process (``jobs=1``), in ``jobs``
processes (:class:`concurrent.futures.ProcessPoolExecutor`), or on a Ray cluster (``ray="auto"`` or an address;
``"local"`` starts a private local instance): the results are identical (a test checks both).

Scores. A run's raw score is

* ``play: "self"`` (a team plays every seat): the mean team reward over the last ``last_fraction`` (20%) of its
  training steps, as the trainer logged it (``metrics.jsonl``, ``reward/team/*``; the batch of every step is
  ``tasks_per_step x group_size`` fresh episodes, so that is 20 steps x 32 episodes = 640 episodes at the micro
  budget). Why not the final policy on held-out seeds: these are cooperative tasks with no opponent, the training
  seeds are fresh every step (``training_seeds``), and averaging 20 steps of the sampled policy halves the variance
  of a single final snapshot at no extra rollout; the suite measures how fast and how far credit lets a team learn,
  which the tail of the curve is.
* ``play: "versus"`` (zero-sum self-play, both seats learning): the final policy against ``opponent`` on the held-out
  evaluation seeds (``eval_seeds``, from 2**40 up, as the protocols), in each seat, the payoff averaged over seats and
  seeds: the curve of a zero-sum self-play run is 0 by construction, so only an outside reference can score it.

Normalization: ``(raw - value(zero)) / (value(one) - value(zero))``. For ``self`` settings ``value(P)`` is the mean
team reward of policy ``P`` (``"random"`` or a reference policy of the env, in every seat) measured on
``anchor_episodes`` seeds from ``eval_seeds.start`` with the setting's kwargs (deterministic; the same numbers in
every process), or a number given in the file (an optimum proved in the env's manual). For ``versus`` settings it is
the protocol rule (:mod:`leaderboard.protocol`): ``P``'s payoff against the opponent from ``spec(env).anchors``.

Statistics. Per method and setting, one normalized score per training seed. A family's score of a seed is the mean
over the family's settings; the suite's aggregate of a seed the mean over families. Reported: the mean over seeds
with a 95% Student-t confidence interval (``scipy.stats.t``; seeds are the independent units). Separation of two
methods in a family = non-overlapping 95% CIs. The leaderboard entry (:func:`entry`) keeps the per-seed, per-setting
scores as its ``scores`` (``{family: [[setting scores of seed 0], ...]}``), so the ranked table gets a column per
family and an IQM aggregate like every other board.

Figures (:func:`figures`): a radar chart of the family scores per method (bsuite's summary plot) and scaling curves
(score against each family's knob: team size, delay, clue accuracy, idle seats).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from leaderboard.protocol import EVAL_SEED_START, PROTOCOL_DIR, ProtocolError, _get, _parse_train, _unknown, \
    canonical_sha256

SUITE_SCHEMA = "marl_llm_suite"
SUITE_DIR = PROTOCOL_DIR / "suite"

__all__ = ["SUITE_DIR", "Setting", "Family", "Suite", "list_suites", "load_suite", "plan", "run_one", "execute",
           "score", "table", "figures", "entry", "benchmark_suite"]


@dataclass(frozen=True)
class Setting:
    """One point of a family's sweep: an env with its kwargs, trained and scored on its own."""

    name: str
    family: str
    env_id: str
    env_version: int
    env_kwargs: dict[str, Any]
    knob: Any                         # the family's knob value at this setting (None where the family has no knob)
    play: str                         # "self" or "versus"
    opponent: str | None
    normalize: dict[str, Any]         # {"zero": name or number, "one": name or number}
    partners: str = ""
    train: dict[str, Any] = field(default_factory=dict)      # overrides of the suite's budget
    eval_count: int | None = None                             # versus: evaluation seeds, if not the suite's


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    knob: str | None
    settings: tuple[Setting, ...]


@dataclass(frozen=True)
class Suite:
    id: str
    version: int
    track: str
    tier: str
    description: str
    action_mode: str
    train: dict[str, Any]
    score: dict[str, Any]
    families: tuple[Family, ...]
    sha256: str = ""

    @property
    def key(self) -> str:
        return f"{self.id}@{self.version}"

    @property
    def settings(self) -> list[Setting]:
        return [s for f in self.families for s in f.settings]

    def budget(self, setting: Setting) -> dict[str, Any]:
        return {**self.train, **setting.train}


# ---------------------------------------------------------------------- the file
def list_suites(folder: str | Path = SUITE_DIR) -> list[str]:
    return sorted(p.stem for p in Path(folder).glob("*.json"))


def load_suite(name_or_path: str | Path) -> Suite:
    """A suite by key (``"credit-micro@2"``, a file in ``leaderboard/protocols/suite/``) or path; checked against the
    schema and this package (errors name the field)."""
    path = Path(name_or_path)
    if path.suffix != ".json" or not path.exists():
        path = SUITE_DIR / f"{name_or_path}.json"
        if not path.exists():
            raise ProtocolError(f"no suite {str(name_or_path)!r}; the suites: {list_suites()} (in {SUITE_DIR})")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ProtocolError(f"{path}: not valid JSON ({e})") from None
    return parse_suite(raw, where=str(path))


_TOP = {"schema", "id", "version", "track", "tier", "description", "action_mode", "train", "score", "families"}
_SCORE = {"last_fraction", "eval_seeds", "anchor_episodes"}
_FAMILY = {"name", "title", "knob", "settings"}
_SETTING = {"name", "env_id", "env_version", "env_kwargs", "knob", "play", "opponent", "normalize", "partners",
            "train", "eval_count"}
_OVERRIDE = {"steps", "tasks_per_step", "group_size"}


def parse_suite(raw: Any, where: str = "suite") -> Suite:
    from marl_llm_envs import spec

    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}: a suite is a JSON object")
    _unknown(raw, _TOP, where)
    if raw.get("schema") != SUITE_SCHEMA:
        raise ProtocolError(f"{where}.schema: expected {SUITE_SCHEMA!r}, got {raw.get('schema')!r}")
    sid = _get(raw, "id", str, where)
    version = _get(raw, "version", int, where)
    track = _get(raw, "track", str, where)
    if track != "credit":
        raise ProtocolError(f"{where}.track: a suite is a credit-track benchmark, got {track!r}")
    tier = _get(raw, "tier", str, where)
    if tier not in ("micro", "small", "gpu"):
        raise ProtocolError(f"{where}.tier: one of ['micro', 'small', 'gpu'], got {tier!r}")
    action_mode = _get(raw, "action_mode", str, where)
    if action_mode not in ("discrete", "text"):
        raise ProtocolError(f"{where}.action_mode: one of ['discrete', 'text'], got {action_mode!r}")
    train = _parse_train(_get(raw, "train", dict, where), f"{where}.train")
    sc = _get(raw, "score", dict, where)
    _unknown(sc, _SCORE, f"{where}.score")
    frac = _get(sc, "last_fraction", (int, float), f"{where}.score")
    if not 0 < frac <= 1:
        raise ProtocolError(f"{where}.score.last_fraction: in (0, 1], got {frac!r}")
    ev = _get(sc, "eval_seeds", dict, f"{where}.score")
    _unknown(ev, {"start", "count"}, f"{where}.score.eval_seeds")
    start = _get(ev, "start", int, f"{where}.score.eval_seeds")
    count = _get(ev, "count", int, f"{where}.score.eval_seeds")
    if start < EVAL_SEED_START or count < 1:
        raise ProtocolError(f"{where}.score.eval_seeds: start >= 2**40 and count >= 1, got {start}, {count}")
    anchor_episodes = _get(sc, "anchor_episodes", int, f"{where}.score")
    if anchor_episodes < 1:
        raise ProtocolError(f"{where}.score.anchor_episodes: >= 1, got {anchor_episodes}")
    score = {"last_fraction": float(frac), "eval_start": start, "eval_count": count, "anchor_episodes": anchor_episodes}
    families = []
    seen: set[str] = set()
    for i, f in enumerate(_get(raw, "families", list, where)):
        fw = f"{where}.families[{i}]"
        if not isinstance(f, dict):
            raise ProtocolError(f"{fw}: a family is a JSON object")
        _unknown(f, _FAMILY, fw)
        fname = _get(f, "name", str, fw)
        settings = []
        for j, s in enumerate(_get(f, "settings", list, fw)):
            setting = _parse_setting(s, f"{fw}.settings[{j}]", fname, spec)
            if setting.name in seen:
                raise ProtocolError(f"{fw}.settings[{j}].name: {setting.name!r} is used twice")
            seen.add(setting.name)
            settings.append(setting)
        if not settings:
            raise ProtocolError(f"{fw}.settings: a family has at least one setting")
        families.append(Family(fname, _get(f, "title", str, fw), _get(f, "knob", str, fw, optional=True),
                               tuple(settings)))
    if not families:
        raise ProtocolError(f"{where}.families: a suite has at least one family")
    return Suite(sid, version, track, tier, _get(raw, "description", str, where), action_mode, train, score,
                 tuple(families), canonical_sha256(raw))


def _parse_setting(s: Any, where: str, family: str, spec) -> Setting:
    if not isinstance(s, dict):
        raise ProtocolError(f"{where}: a setting is a JSON object")
    _unknown(s, _SETTING, where)
    env_id = _get(s, "env_id", str, where)
    try:
        env_spec = spec(env_id)
    except KeyError as e:
        raise ProtocolError(f"{where}.env_id: {e.args[0]}") from None
    version = _get(s, "env_version", int, where)
    if version != env_spec.version:
        raise ProtocolError(f"{where}.env_version: the suite is for {env_id} version {version}, this package has "
                            f"{env_spec.version}")
    kwargs = _get(s, "env_kwargs", dict, where)
    bad = sorted(k for k in kwargs if k not in env_spec.accepted_kwargs() or k == "action_mode")
    if bad:
        raise ProtocolError(f"{where}.env_kwargs: {env_id} does not take {bad} here; accepted: "
                            f"{[k for k in env_spec.accepted_kwargs() if k != 'action_mode']}")
    play = _get(s, "play", str, where)
    if play not in ("self", "versus"):
        raise ProtocolError(f"{where}.play: 'self' or 'versus', got {play!r}")
    opponent = _get(s, "opponent", str, where, optional=True)
    if (play == "versus") != (opponent is not None):
        raise ProtocolError(f"{where}.opponent: a 'versus' setting names its opponent, a 'self' setting has none")
    normalize = _get(s, "normalize", dict, where)
    _unknown(normalize, {"zero", "one"}, f"{where}.normalize")
    for k in ("zero", "one"):
        _get(normalize, k, (str, int, float), f"{where}.normalize")
    override = _get(s, "train", dict, where, optional=True) or {}
    _unknown(override, _OVERRIDE, f"{where}.train")
    for k, v in override.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ProtocolError(f"{where}.train.{k}: a positive int, got {v!r}")
    eval_count = _get(s, "eval_count", int, where, optional=True)
    if eval_count is not None and (eval_count < 1 or play != "versus"):
        raise ProtocolError(f"{where}.eval_count: a positive int, for 'versus' settings; got {eval_count!r}")
    return Setting(_get(s, "name", str, where), family, env_id, version, dict(kwargs), s.get("knob"), play, opponent,
                   dict(normalize), _get(s, "partners", str, where, optional=True) or "", dict(override), eval_count)


# ---------------------------------------------------------------------- anchors
@functools.lru_cache(maxsize=None)
def _measured(env_id: str, kwargs_json: str, action_mode: str, policy: str, start: int, episodes: int) -> float:
    """Mean team reward of ``policy`` (random or a reference policy of the env) in every seat, on ``episodes`` seeds
    from ``start``."""
    from baselines.rollout import RolloutEngine
    from leaderboard.players import opponent_policy
    from marl_llm_envs import make

    kwargs = {**json.loads(kwargs_json), "action_mode": action_mode}
    env = make(env_id, **kwargs)
    bot = opponent_policy(env_id, policy, seed=0)
    engine = RolloutEngine({role: bot for role in set(env.roles.values())}, show_progress=False)
    eps = engine.run(env_id, num_tasks=episodes, seeds=list(range(start, start + episodes)), env_kwargs=kwargs)
    return float(sum(_team_reward(e.team_rewards) for e in eps) / len(eps))


def _team_reward(team_rewards: dict[str, float]) -> float:
    return float(sum(team_rewards.values()) / len(team_rewards))


def anchor_value(suite: Suite, setting: Setting, which: str) -> float:
    """The value the setting's ``normalize[which]`` names (see the module docstring)."""
    name = setting.normalize[which]
    if not isinstance(name, str):
        return float(name)
    if setting.play == "versus":
        from leaderboard.protocol import _anchor_value
        from marl_llm_envs import spec

        return _anchor_value(spec(setting.env_id), "versus", setting.opponent, name,
                             f"{suite.key}:{setting.name}.normalize.{which}")
    return _measured(setting.env_id, json.dumps(setting.env_kwargs, sort_keys=True), suite.action_mode, name,
                     suite.score["eval_start"], suite.score["anchor_episodes"])


# ---------------------------------------------------------------------- runs
def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def applicable(method: str, env_id: str) -> str | None:
    """``None`` when ``method`` can train on ``env_id``, else why not."""
    from baselines.credit import make_credit

    try:
        make_credit(method).branches(env_id)
    except ValueError as e:
        return str(e)
    return None


def plan(suite: Suite, methods: Sequence[str], out: str | Path) -> tuple[list[dict[str, Any]], dict[str, dict]]:
    """The runs to make, as JSON-able specs in a fixed order (method, setting, seed), and per method the settings
    it cannot train on (with why)."""
    out = Path(out)
    specs, skipped = [], {}
    for m in methods:
        for s in suite.settings:
            why = applicable(m, s.env_id)
            if why is not None:
                skipped.setdefault(m, {})[s.name] = why
                continue
            b = suite.budget(s)
            for seed in b["seeds"]:
                specs.append({"method": m, "setting": s.name, "seed": seed, "env_id": s.env_id,
                              "env_kwargs": s.env_kwargs, "action_mode": suite.action_mode, "model": b["model"],
                              "mode": b["mode"], "steps": b["steps"], "tasks_per_step": b["tasks_per_step"],
                              "group_size": b["group_size"], "partners": s.partners, "play": s.play,
                              "opponent": s.opponent, "last_fraction": suite.score["last_fraction"],
                              "eval_start": suite.score["eval_start"],
                              "eval_count": s.eval_count or suite.score["eval_count"],
                              "out": str(out / _safe(m) / _safe(s.name) / f"seed{seed}")})
    return specs, skipped


def _complete(run: Path, steps: int) -> bool:
    from baselines.train import checkpoint

    latest = checkpoint.latest(run / "checkpoints")
    return latest is not None and json.loads((latest / "meta.json").read_text()).get("step") == steps


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Train one run (or reuse a complete one) and return its raw score: ``{"raw", "curve", "tokens", ...}``.

    A top-level function of JSON-able input and output, so a process pool or Ray can call it anywhere."""
    import torch

    from baselines.train import TrainConfig, train

    torch.set_num_threads(1)
    run = Path(spec["out"])
    t0 = time.perf_counter()
    if not _complete(run, spec["steps"]):
        if run.exists():
            shutil.rmtree(run)          # an unfinished run starts again (same seed, same result)
        cfg = TrainConfig(env=spec["env_id"], env_kwargs=dict(spec["env_kwargs"]), action_mode=spec["action_mode"],
                          model=spec["model"], mode=spec["mode"], credit=spec["method"], steps=spec["steps"],
                          tasks_per_step=spec["tasks_per_step"], group_size=spec["group_size"], seed=spec["seed"],
                          partners=spec["partners"], out=str(run), save_every=spec["steps"], keep_checkpoints=1,
                          tensorboard=False, progress=False)
        train(cfg)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    team_keys = sorted({k for r in rows for k in r if k.startswith("reward/team/")})
    curve = [sum(float(r.get(k, 0.0)) for k in team_keys) / max(1, len(team_keys)) for r in rows]
    tokens = {"main": sum(int(r.get("tokens/main", 0)) for r in rows),
              "branches": sum(int(r.get("tokens/branches", 0)) for r in rows)}
    free = {k: [float(r[k]) for r in rows if k in r] for k in sorted({k for r in rows for k in r
                                                                        if k.startswith("free_riding/")})}
    if spec["play"] == "self":
        tail = curve[-max(1, math.ceil(len(curve) * spec["last_fraction"])):]
        raw = sum(tail) / len(tail)
    else:
        raw = _versus_score(spec, run)
    return {"method": spec["method"], "setting": spec["setting"], "seed": spec["seed"], "raw": float(raw),
            "curve": curve, "tokens": tokens, "free_riding": {k: sum(v) / len(v) for k, v in free.items() if v},
            "config_hash": json.loads((run / "config.json").read_text()).get("config_hash", ""),
            "wall_s": time.perf_counter() - t0}


def _versus_score(spec: dict[str, Any], run: Path) -> float:
    """The final policy against the opponent in each seat on the evaluation seeds: the mean payoff."""
    from baselines.rollout import RolloutEngine
    from leaderboard.players import load_player, opponent_policy
    from marl_llm_envs import make

    kwargs = {**spec["env_kwargs"], "action_mode": spec["action_mode"]}
    env = make(spec["env_id"], **kwargs)
    roles = sorted(set(env.roles.values()))
    player = load_player(f"checkpoint:{run}", spec["env_id"], roles, spec["action_mode"])
    seeds = list(range(spec["eval_start"], spec["eval_start"] + spec["eval_count"]))
    total = 0.0
    for seat in env.possible_agents:
        opponent = opponent_policy(spec["env_id"], spec["opponent"], seed=0)
        policies = {env.roles[a]: (player.policies[env.roles[a]] if a == seat else opponent)
                    for a in env.possible_agents}
        eps = RolloutEngine(policies, show_progress=False).run(spec["env_id"], num_tasks=len(seeds),
                                                                seed=spec["eval_start"], seeds=seeds,
                                                                env_kwargs=kwargs, run_id=f"versus|{seat}")
        total += sum(float(e.rewards[seat]) for e in eps) / len(eps)
    return total / len(env.possible_agents)


def execute(specs: Sequence[dict[str, Any]], jobs: int = 1, ray: str | None = None,
            progress: bool = False) -> list[dict[str, Any]]:
    """``run_one`` of every spec, results in the order of ``specs``: here (``jobs=1``), in ``jobs`` processes, or
    over Ray (``ray="auto"``: the running cluster, as ``ray.init(address="auto")``; an address; ``"local"``: a
    private local instance). The results do not depend on how they were run."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"--jobs must be a positive int, got {jobs!r}")
    specs = list(specs)
    if ray is not None:
        return _execute_ray(specs, ray, progress)
    if jobs == 1 or len(specs) <= 1:
        out = []
        for i, s in enumerate(specs):
            if progress:
                print(f"[{i + 1}/{len(specs)}] {s['method']} on {s['setting']}, seed {s['seed']}", file=sys.stderr)
            out.append(run_one(s))
        return out
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        out = []
        for i, r in enumerate(pool.map(run_one, specs)):
            if progress:
                print(f"[{i + 1}/{len(specs)}] {r['method']} on {r['setting']}, seed {r['seed']}", file=sys.stderr)
            out.append(r)
        return out


def _execute_ray(specs: list[dict[str, Any]], address: str, progress: bool) -> list[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise ValueError("--ray needs ray: pip install 'marl-llm-envs[ray]'") from None
    started = False
    if not ray.is_initialized():
        import os

        root = str(Path(__file__).resolve().parent.parent)
        env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}}
        if address == "local":
            ray.init(num_cpus=None, include_dashboard=False, runtime_env=env, log_to_driver=False)
        else:
            ray.init(address=address, runtime_env=env, log_to_driver=False)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(run_one)
        refs = [remote.remote(s) for s in specs]
        out = ray.get(refs)
        if progress:
            print(f"ray: {len(out)} runs done", file=sys.stderr)
        return out
    finally:
        if started:
            ray.shutdown()


# ---------------------------------------------------------------------- statistics
def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the Student-t interval of the mean (``scipy.stats.t``); one value: ``(x, x, x)``."""
    import numpy as np
    from scipy import stats

    x = np.asarray(values, dtype=np.float64)
    m = float(x.mean())
    if x.size < 2 or float(x.std(ddof=1)) == 0.0:
        return m, m, m
    half = float(stats.t.ppf((1 + confidence) / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


def score(suite: Suite, results: Sequence[dict[str, Any]], cache: str | Path | None = None) -> dict[str, Any]:
    """Normalized scores and CIs from :func:`run_one`'s results::

        {"anchors": {setting: {"zero", "one"}},
         "methods": {method: {"settings": {setting: {"seeds": [...], "ci": (m, lo, hi), "knob"}},
                              "families": {family: {"seeds": [...], "ci": (m, lo, hi)}},
                              "aggregate": {"seeds": [...], "ci": (m, lo, hi)}, "tokens": {...}}}}
    """
    known: dict[str, Any] = {}
    if cache is not None and Path(cache).is_file():      # anchors measured by an earlier call on this suite's text
        saved = json.loads(Path(cache).read_text())
        known = saved.get("anchors", {}) if saved.get("suite_sha256") == suite.sha256 else {}
    anchors = {s.name: known.get(s.name) or {"zero": anchor_value(suite, s, "zero"),
                                             "one": anchor_value(suite, s, "one")}
               for s in suite.settings if any(r["setting"] == s.name for r in results)}
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        Path(cache).write_text(json.dumps({"suite_sha256": suite.sha256, "anchors": {**known, **anchors}}, indent=1))
    for name, a in anchors.items():
        if not a["one"] > a["zero"]:
            raise ProtocolError(f"{suite.key}: setting {name}: the 'one' anchor ({a['one']:.4f}) must score above the "
                                f"'zero' anchor ({a['zero']:.4f}) in {suite.action_mode} mode")
    by: dict[str, dict[str, dict[int, float]]] = {}
    tokens: dict[str, dict[str, int]] = {}
    for r in results:
        a = anchors[r["setting"]]
        by.setdefault(r["method"], {}).setdefault(r["setting"], {})[r["seed"]] = \
            (r["raw"] - a["zero"]) / (a["one"] - a["zero"])
        t = tokens.setdefault(r["method"], {"main": 0, "branches": 0})
        for k in t:
            t[k] += int(r["tokens"].get(k, 0))
    methods = {}
    for m, settings in by.items():
        seeds = sorted({sd for v in settings.values() for sd in v})
        out_s, out_f = {}, {}
        for fam in suite.families:
            present = [s for s in fam.settings if s.name in settings]
            for s in present:
                vals = [settings[s.name][sd] for sd in seeds]
                out_s[s.name] = {"family": fam.name, "knob": s.knob, "seeds": vals, "ci": mean_ci(vals)}
            if present:
                per_seed = [sum(settings[s.name][sd] for s in present) / len(present) for sd in seeds]
                out_f[fam.name] = {"seeds": per_seed, "ci": mean_ci(per_seed), "settings": [s.name for s in present]}
        agg = [sum(f["seeds"][i] for f in out_f.values()) / len(out_f) for i in range(len(seeds))]
        methods[m] = {"seeds": seeds, "settings": out_s, "families": out_f,
                      "aggregate": {"seeds": agg, "ci": mean_ci(agg)}, "tokens": tokens[m]}
    return {"suite": suite.key, "anchors": anchors, "methods": methods}


def separated(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """``a``'s 95% CI lies entirely above ``b``'s."""
    return a[1] > b[2]


def _ci(v: Sequence[float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def table(suite: Suite, scored: dict[str, Any], skipped: dict[str, dict[str, str]] | None = None) -> str:
    """Markdown: the aggregate and a column per family (mean [95% CI] over seeds), then every setting."""
    fams = [f.name for f in suite.families]
    methods = list(scored["methods"])
    lines = ["| method | aggregate | " + " | ".join(fams) + " |", "|---|---|" + "---|" * len(fams)]
    for m in methods:
        v = scored["methods"][m]
        lines.append(f"| {m} | {_ci(v['aggregate']['ci'])} | " + " | ".join(
            _ci(v["families"][f]["ci"]) if f in v["families"] else "n/a" for f in fams) + " |")
    lines += ["", "Per setting (normalized: random = 0, optimum/reference = 1; anchors measured with the setting's "
                  "kwargs):", "", "| setting | zero | one | " + " | ".join(methods) + " |",
              "|---|---|---|" + "---|" * len(methods)]
    for s in suite.settings:
        if s.name not in scored["anchors"]:
            continue
        a = scored["anchors"][s.name]
        cells = [_ci(scored["methods"][m]["settings"][s.name]["ci"]) if s.name in scored["methods"][m]["settings"]
                 else "n/a" for m in methods]
        lines.append(f"| {s.name} | {a['zero']:.3f} | {a['one']:.3f} | " + " | ".join(cells) + " |")
    if skipped:
        lines.append("")
    for m, why in (skipped or {}).items():
        reasons = sorted(set(why.values()))
        lines.append(f"- {m} is not applicable on {', '.join(why)} ({'; '.join(reasons)})")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- figures
def _png(fig) -> str:
    import base64
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def figures(suite: Suite, scored: dict[str, Any], out: str | Path | None = None) -> dict[str, str]:
    """``{"radar": base64 PNG, "scaling": base64 PNG}`` (written as PNG files into ``out`` when given): the radar of
    the family scores (clipped to [0, 1], as bsuite) and, per family with a knob, score against the knob with 95%
    CIs, one line per method."""
    import base64

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fams = [f.name for f in suite.families]
    pngs = {}
    angles = np.linspace(0, 2 * np.pi, len(fams), endpoint=False).tolist()
    fig = plt.figure(figsize=(5.5, 5.5))
    ax = fig.add_subplot(111, polar=True)
    for m, v in scored["methods"].items():
        vals = [min(1.0, max(0.0, v["families"][f]["ci"][0])) if f in v["families"] else 0.0 for f in fams]
        ax.plot(angles + angles[:1], vals + vals[:1], label=m)
        ax.fill(angles + angles[:1], vals + vals[:1], alpha=0.1)
    ax.set_xticks(angles, [f.replace("_", "\n") for f in fams])
    ax.set_ylim(0, 1)
    ax.set_title(f"{suite.key}: family scores (random = 0, optimum = 1)")
    ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.3, 1.1))
    pngs["radar"] = _png(fig)
    plt.close(fig)
    knobbed = [f for f in suite.families if f.knob and len(f.settings) > 1]
    if knobbed:
        fig, axes = plt.subplots(1, len(knobbed), figsize=(4.2 * len(knobbed), 3.4), squeeze=False)
        for ax, fam in zip(axes[0], knobbed):
            groups: dict[str, list[Setting]] = {}
            for s in fam.settings:         # one line per method and variant (e.g. voting's two reward schemes)
                groups.setdefault(s.name.rsplit("/", 1)[0], []).append(s)
            for m, v in scored["methods"].items():
                for variant, ss in groups.items():
                    pts = [(s.knob, v["settings"][s.name]["ci"]) for s in ss if s.name in v["settings"]]
                    if not pts:
                        continue
                    x = [p[0] for p in pts]
                    y = np.array([p[1][0] for p in pts])
                    err = np.array([[p[1][0] - p[1][1] for p in pts], [p[1][2] - p[1][0] for p in pts]])
                    label = m if len(groups) == 1 else f"{m} ({variant.split('/')[-1]})"
                    ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=label)
            ax.set_xlabel(fam.knob)
            if all(isinstance(s.knob, (int, float)) and s.knob > 0 for s in fam.settings) and \
                    max(s.knob for s in fam.settings) / min(s.knob for s in fam.settings) >= 8:
                ax.set_xscale("log", base=2)
            ax.axhline(0, color="grey", lw=0.8, ls=":")
            ax.axhline(1, color="grey", lw=0.8, ls="--")
            ax.set_title(fam.title)
            ax.set_ylabel("normalized score (95% CI)")
        axes[0][0].legend(fontsize=7)
        pngs["scaling"] = _png(fig)
        plt.close(fig)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        for name, data in pngs.items():
            (out / f"{name}.png").write_bytes(base64.b64decode(data))
    return pngs


def page(suite: Suite, scored: dict[str, Any], markdown_table: str, pngs: dict[str, str]) -> str:
    """A static HTML page: the table (as preformatted Markdown) and the figures."""
    import html

    parts = ["<!DOCTYPE html>", f"<html lang='en'><head><meta charset='utf-8'><title>{html.escape(suite.key)}</title>",
             "<style>body{font-family:sans-serif;margin:2em} pre{font-size:13px} img{max-width:100%}</style>",
             "</head><body>", f"<h1>{html.escape(suite.key)}: credit-assignment suite</h1>",
             f"<p>{html.escape(suite.description)}</p>", f"<pre>{html.escape(markdown_table)}</pre>"]
    for name, data in pngs.items():
        parts.append(f"<img class='plot' alt='{name}' src='data:image/png;base64,{data}'>")
    parts.append("</body></html>")
    return "\n".join(parts)


# ---------------------------------------------------------------------- the leaderboard entry
def entry(suite: Suite, scored: dict[str, Any], method: str, results: Sequence[dict[str, Any]],
          note: str = "") -> dict[str, Any]:
    """A store entry for ``method`` (schema ``marl_llm_entry``): per family, per seed, the setting scores (the board
    shows an IQM aggregate and a column per family), and the provenance of every run (its config hash, learning curve
    and raw score). Computed by the suite from the runs, not from a replayed submission."""
    from leaderboard.evaluate import git_sha, package_versions
    from leaderboard.store import ENTRY_SCHEMA, ENTRY_VERSION

    v = scored["methods"][method]
    mine = [r for r in results if r["method"] == method]
    scores = {}
    for fam, f in v["families"].items():
        scores[fam] = [[v["settings"][s]["seeds"][i] for s in f["settings"]] for i in range(len(v["seeds"]))]
    runs = [{k: r[k] for k in ("setting", "seed", "raw", "config_hash", "tokens", "free_riding")} |
            {"learning_curve": r["curve"]} for r in mine]
    digest = canonical_sha256({"suite": suite.sha256, "method": method, "runs": runs})
    from datetime import datetime, timezone

    players = {s: [{"model_id": suite.train["model"], "setting": s}] for s in v["settings"]}
    manifest = {"schema": "marl_llm_suite_result", "method": method, "note": note, "track": "credit",
                "suite": {"id": suite.id, "version": suite.version, "sha256": suite.sha256},
                "players": players, "tokens": {"train_main": v["tokens"]["main"],
                                               "train_branches": v["tokens"]["branches"]},
                "runs": runs, "anchors": scored["anchors"], "packages": package_versions(), "git_sha": git_sha(),
                "results_sha256": digest}
    return {"schema": ENTRY_SCHEMA, "schema_version": ENTRY_VERSION, "id": f"{suite.key}/{method}--{digest[:12]}",
            "label": f"{method}#{digest[:6]}", "method": method, "track": "credit", "protocol": suite.key,
            "submitted": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "self_reported": True, "seeds": "public",      # scored by whoever ran the suite, not replayed
            "manifest": manifest,
            "results": {"episodes": 0, "replayed": 0, "scores": scores,
                        "task_means": {f: x["ci"][0] for f, x in v["families"].items()}, "games": {},
                        "families": {f: {"ci": list(x["ci"]), "settings": x["settings"]}
                                     for f, x in v["families"].items()},
                        "aggregate": list(v["aggregate"]["ci"]),
                        "settings": {s: {"ci": list(x["ci"]), "seeds": x["seeds"], "knob": x["knob"]}
                                     for s, x in v["settings"].items()}}}


def add_entry(e: dict[str, Any], store: str | Path) -> None:
    """Add a suite entry to the store (its index and ``<suite>/<method>--<hash>.json``); a duplicate is an error."""
    from leaderboard.store import INDEX, _locked, _write_atomic, read_index
    from leaderboard.validate import SubmissionError

    store = Path(store)
    sha = e["manifest"]["results_sha256"]
    rel = f"{e['protocol']}/{e['method']}--{sha[:12]}.json"
    with _locked(store):
        index = read_index(store)
        if any(row["episodes_sha256"] == sha for row in index) or (store / rel).exists():
            raise SubmissionError(f"duplicate: {rel} is in the store already")
        _write_atomic(store / rel, e)
        index.append({"id": e["id"], "file": rel, "protocol": e["protocol"], "method": e["method"],
                      "label": e["label"], "submitted": e["submitted"], "episodes_sha256": sha,
                      "content_sha256": sha, "self_reported": True})
        index.sort(key=lambda r: (r["protocol"], r["method"], r["submitted"], r["id"]))
        _write_atomic(store / INDEX, {"schema": "marl_llm_entries_index", "entries": index})


# ---------------------------------------------------------------------- the benchmark
def benchmark_suite(method: str, suite: Suite | str, baselines: Sequence[str], out: str | Path,
                    jobs: int = 1, ray: str | None = None, progress: bool = True,
                    submit_to: str | Path | None = None) -> dict[str, Any]:
    """Run the suite for ``method`` and ``baselines``; write ``OUT/<suite>/comparison.md``, ``index.html``,
    ``radar.png``, ``scaling.png`` and ``results.json``; returns ``{"scored", "markdown", "out", "skipped",
    "entries", "wall_s"}``."""
    suite = load_suite(suite) if not isinstance(suite, Suite) else suite
    out = Path(out) / suite.key
    methods = [method] + [b for b in baselines if b != method]
    t0 = time.perf_counter()
    specs, skipped = plan(suite, methods, out)
    results = execute(specs, jobs=jobs, ray=ray, progress=progress)
    wall = time.perf_counter() - t0
    scored = score(suite, results, cache=out / "anchors.json")
    md = table(suite, scored, skipped)
    b = suite.train
    head = [f"# benchmark-credit {method} on {suite.key} ({suite.tier} tier)", "", suite.description, "",
            f"Budget per run: {b['steps']} steps x {b['tasks_per_step']} tasks x {b['group_size']} samples, model "
            f"{b['model']}; training seeds {b['seeds']}; {len(specs)} runs; wall time {wall:.0f} s "
            f"({'ray ' + ray if ray else f'{jobs} process(es)'}). Scores: mean over seeds [95% t CI].", ""]
    base = "broadcast" if "broadcast" in scored["methods"] else None
    if base is not None:
        for m in scored["methods"]:
            if m == base:
                continue
            fams = scored["methods"][m]["families"]
            above = [f for f in fams if separated(scored["methods"][base]["families"].get(f, {}).get(
                "ci", (0, -math.inf, -math.inf)), fams[f]["ci"])]
            below = [f for f in fams if separated(fams[f]["ci"], scored["methods"][base]["families"].get(f, {}).get(
                "ci", (0, math.inf, math.inf)))]
            md += (f"\n{m} vs broadcast: CI separated below broadcast in {len(above)}/{len(fams)} families "
                   f"({', '.join(above) or '-'}); above in {len(below)} ({', '.join(below) or '-'}).")
    text = "\n".join(head) + md + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.md").write_text(text)
    (out / "results.json").write_text(json.dumps({"scored": scored, "runs": results}, indent=1))
    pngs = figures(suite, scored, out)
    (out / "index.html").write_text(page(suite, scored, text, pngs), encoding="utf-8")
    entries = [entry(suite, scored, m, results, note=f"python -m leaderboard benchmark-credit {method} on "
                                                     f"{suite.key}") for m in scored["methods"]]
    if submit_to is not None:
        for e in entries:
            add_entry(e, submit_to)
    return {"scored": scored, "markdown": text, "out": out, "skipped": skipped, "entries": entries, "wall_s": wall,
            "results": results}
