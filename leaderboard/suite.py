"""The credit-assignment suite: families of small cooperative and zero-sum tasks, each sweeping one
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
evaluation seeds; Kuhn's payoffs are noisy next to the random-to-Nash gap), ``"evaluate"`` (versus: ``"sampled"``,
the default, ``"exact"`` or ``"exploitability"``; below) and ``"train"`` (a few budget fields that override the
suite's, e.g. ``{"steps": 200}``).

A suite file is checked field by field as a protocol is, with the protocol's own parsers (:mod:`leaderboard.protocol`:
the header, the training budget, the evaluation seed range, each setting's env and its play and opponent); every
error is a :class:`~leaderboard.protocol.ProtocolError` naming the field.

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
  A setting with ``"evaluate": "exact"`` (Kuhn and Leduc, one hand) scores the same quantity with no sampling:
  the final policy's strategy is read from the env and its expected payoff against the equilibrium is computed over
  the whole game tree (:mod:`leaderboard.exact`); ``"exploitability"`` scores minus its exploitability instead. Both
  exact figures (``versus`` and ``exploitability``, chips per hand) are kept in every such run's result. Anchors of
  an exact setting are exact too: ``"random"`` is uniform legal play, the reference bot is the equilibrium.

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

Output (in the leaderboard page's style: :mod:`leaderboard.render`):

* :func:`verdicts`: the method under test against every baseline, on the aggregate and per family, "X above Y on
  FAMILY: CIs separated (...)" or "X vs Y on FAMILY: no difference at 95% (...)", then the control check the suite
  exists for, "control: shuffled below broadcast in k/n families"; :func:`coverage` says next to the numbers what
  they cover (training seeds as the CI's units, the last-20%-of-training mean or the held-out evaluation).
* :func:`comparison_text` (``comparison.md``, and what ``benchmark-credit`` prints): facts, notes, verdict, coverage
  and the tables; no line is wider than 120 characters (a wide table is split by columns, repeating the method).
* :func:`page` (``index.html``): :func:`leaderboard.render.page_head`'s style sheet and viewport; title naming the
  method under test and the suite, facts (budget, seeds, runs, wall time), applicability notes, the verdict, real
  HTML tables in horizontally scrollable wrappers (per family with the aggregate, training and counterfactual
  tokens; per setting with the anchors), the method under test highlighted.
* :func:`suite_figures`: a radar chart of the family means (bsuite's summary plot), one scaling figure per family
  that sweeps a knob (score against team size, delay, clue accuracy, idle seats: the mean with a 95% t band), and
  training tokens against the aggregate; one colour per method in every figure
  (:class:`leaderboard.render.Palette`), legends below the axes. :func:`figures` writes them as PNG files.
* :func:`board_columns`, a :data:`leaderboard.render.EXTRA_COLUMNS` hook: on a suite's leaderboard board, the
  suite's aggregate beside the per-family columns.
"""

from __future__ import annotations

import functools
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from baselines.outputs import read_json_object, replace_text, writing
from leaderboard.protocol import PROTOCOL_DIR, Header, ProtocolError, canonical_sha256, get_field, parse_env, \
    parse_header, parse_play, parse_seed_range, parse_train_budget, read_anchor, reject_unknown

SUITE_SCHEMA = "marl_llm_suite"
SUITE_DIR = PROTOCOL_DIR / "suite"

__all__ = ["SUITE_DIR", "Setting", "Family", "Suite", "latest_suite", "list_suites", "load_suite", "parse_suite",
           "anchor_value", "safe_name", "plan", "complete_run", "train_run", "run_one", "execute", "Workers", "mean_ci",
           "score", "table", "figures", "suite_figures", "verdicts", "coverage", "comparison_text", "page",
           "page_context", "board_columns", "board_figures", "entry", "add_entry", "benchmark_suite"]


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
    evaluate: str = "sampled"         # versus: "sampled", "exact" or "exploitability" (see the module docstring)


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    knob: str | None
    settings: tuple[Setting, ...]


@dataclass(frozen=True)
class Suite(Header):
    train: dict[str, Any]
    score: dict[str, Any]
    families: tuple[Family, ...]
    sha256: str = ""

    @property
    def settings(self) -> list[Setting]:
        return [s for f in self.families for s in f.settings]

    def budget(self, setting: Setting) -> dict[str, Any]:
        return {**self.train, **setting.train}


# ---------------------------------------------------------------------- the file
def list_suites(folder: str | Path = SUITE_DIR) -> list[str]:
    return sorted(p.stem for p in Path(folder).glob("*.json"))


def latest_suite(suite_id: str, folder: str | Path = SUITE_DIR) -> str | None:
    """The key of the newest version of ``suite_id`` shipped in ``folder`` (``"credit-micro"`` ->
    ``"credit-micro@3"``), or ``None`` when there is none."""
    versions = [int(k.rsplit("@", 1)[1]) for k in list_suites(folder) if k.rsplit("@", 1)[0] == suite_id]
    return f"{suite_id}@{max(versions)}" if versions else None


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
            "train", "eval_count", "evaluate"}
EVALUATE = ("sampled", "exact", "exploitability")
_OVERRIDE = {"steps", "tasks_per_step", "group_size"}


def parse_suite(raw: Any, where: str = "suite") -> Suite:
    """Check a suite's parsed JSON against the schema and this package (the header as a protocol's,
    :func:`leaderboard.protocol.parse_header`); errors name the field."""
    head = parse_header(raw, where, SUITE_SCHEMA, "suite", _TOP, tracks=("credit",))
    train = parse_train_budget(get_field(raw, "train", dict, where), f"{where}.train")
    score = _parse_score(get_field(raw, "score", dict, where), f"{where}.score")
    families = []
    seen: set[str] = set()
    for i, f in enumerate(get_field(raw, "families", list, where)):
        families.append(_parse_family(f, f"{where}.families[{i}]", seen))
    if not families:
        raise ProtocolError(f"{where}.families: a suite has at least one family")
    return Suite(**vars(head), train=train, score=score, families=tuple(families), sha256=canonical_sha256(raw))


def _parse_score(sc: dict, where: str) -> dict[str, Any]:
    reject_unknown(sc, _SCORE, where)
    frac = get_field(sc, "last_fraction", (int, float), where)
    if not 0 < frac <= 1:
        raise ProtocolError(f"{where}.last_fraction: in (0, 1], got {frac!r}")
    start, count = parse_seed_range(get_field(sc, "eval_seeds", dict, where), f"{where}.eval_seeds")
    anchor_episodes = get_field(sc, "anchor_episodes", int, where)
    if anchor_episodes < 1:
        raise ProtocolError(f"{where}.anchor_episodes: >= 1, got {anchor_episodes}")
    return {"last_fraction": float(frac), "eval_start": start, "eval_count": count, "anchor_episodes": anchor_episodes}


def _parse_family(f: Any, where: str, seen: set[str]) -> Family:
    """One family; ``seen``: the setting names of the families before it (a name is used once in a suite)."""
    if not isinstance(f, dict):
        raise ProtocolError(f"{where}: a family is a JSON object")
    reject_unknown(f, _FAMILY, where)
    name = get_field(f, "name", str, where)
    settings = []
    for j, s in enumerate(get_field(f, "settings", list, where)):
        setting = _parse_setting(s, f"{where}.settings[{j}]", name)
        if setting.name in seen:
            raise ProtocolError(f"{where}.settings[{j}].name: {setting.name!r} is used twice")
        seen.add(setting.name)
        settings.append(setting)
    if not settings:
        raise ProtocolError(f"{where}.settings: a family has at least one setting")
    return Family(name, get_field(f, "title", str, where), get_field(f, "knob", str, where, optional=True),
                  tuple(settings))


def _parse_setting(s: Any, where: str, family: str) -> Setting:
    if not isinstance(s, dict):
        raise ProtocolError(f"{where}: a setting is a JSON object")
    reject_unknown(s, _SETTING, where)
    env_id, env_spec, version, kwargs = parse_env(s, where, "suite")
    play, opponent = parse_play(s, where, env_spec, "setting")
    normalize = get_field(s, "normalize", dict, where)
    reject_unknown(normalize, {"zero", "one"}, f"{where}.normalize")
    for k in ("zero", "one"):
        get_field(normalize, k, (str, int, float), f"{where}.normalize")
    override = get_field(s, "train", dict, where, optional=True) or {}
    reject_unknown(override, _OVERRIDE, f"{where}.train")
    for k, v in override.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ProtocolError(f"{where}.train.{k}: a positive int, got {v!r}")
    eval_count = get_field(s, "eval_count", int, where, optional=True)
    if eval_count is not None and (eval_count < 1 or play != "versus"):
        raise ProtocolError(f"{where}.eval_count: a positive int, for 'versus' settings; got {eval_count!r}")
    evaluate = get_field(s, "evaluate", str, where, optional=True) or "sampled"
    if evaluate not in EVALUATE:
        raise ProtocolError(f"{where}.evaluate: one of {list(EVALUATE)}, got {evaluate!r}")
    if evaluate != "sampled":
        from leaderboard import exact

        if play != "versus" or eval_count is not None:
            raise ProtocolError(f"{where}.evaluate: {evaluate!r} scores a 'versus' setting without evaluation seeds "
                                "(drop eval_count)")
        try:
            reference = exact.reference_name(env_id, kwargs)
        except ValueError as e:
            raise ProtocolError(f"{where}.evaluate: {e}") from None
        if opponent != reference:
            raise ProtocolError(f"{where}.opponent: exact evaluation of {env_id} is against {reference!r}, "
                                f"not {opponent!r}")
        for k in ("zero", "one"):
            if isinstance(normalize[k], str) and normalize[k] not in ("random", reference):
                raise ProtocolError(f"{where}.normalize.{k}: exact evaluation knows 'random' and {reference!r}, "
                                    f"not {normalize[k]!r}")
    return Setting(get_field(s, "name", str, where), family, env_id, version, dict(kwargs), s.get("knob"), play,
                   opponent, dict(normalize), get_field(s, "partners", str, where, optional=True) or "",
                   dict(override), eval_count, evaluate)


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


def _cached_anchors(cache: str | Path, suite: Suite) -> dict[str, dict[str, float]]:
    """The anchors an earlier :func:`score` call on this suite's text measured and kept in ``cache``: setting ->
    ``{"zero", "one"}``. It is only a cache: a file that is missing, damaged, of another suite's text, or an entry that
    is not two finite numbers, is measured again."""
    try:
        saved = read_json_object(cache, "measured again")
    except ValueError:
        return {}
    if saved.get("suite_sha256") != suite.sha256 or not isinstance(saved.get("anchors"), dict):
        return {}
    return {name: {"zero": float(a["zero"]), "one": float(a["one"])} for name, a in saved["anchors"].items()
            if isinstance(a, dict) and all(type(a.get(k)) in (int, float) and math.isfinite(a[k])
                                           for k in ("zero", "one"))}


def anchor_value(suite: Suite, setting: Setting, which: str) -> float:
    """The value the setting's ``normalize[which]`` names (see the module docstring)."""
    name = setting.normalize[which]
    if not isinstance(name, str):
        return float(name)
    if setting.evaluate != "sampled":
        from leaderboard import exact

        table = exact.random_strategy(setting.env_id) if name == "random" else exact.reference_strategy(setting.env_id)
        return exact.raw_score(setting.env_id, table, setting.evaluate)
    if setting.play == "versus":
        from marl_llm_envs import spec

        return read_anchor(spec(setting.env_id), "versus", setting.opponent, name,
                           f"{suite.key}:{setting.name}.normalize.{which}")
    return _measured(setting.env_id, json.dumps(setting.env_kwargs, sort_keys=True), suite.action_mode, name,
                     suite.score["eval_start"], suite.score["anchor_episodes"])


# ---------------------------------------------------------------------- runs
def safe_name(name: str) -> str:
    """``name`` as one path component: every character but letters, digits and ``._-`` becomes ``_`` (a method
    ``package.module:Class`` or a setting ``voting/plurality/n2`` names one run folder)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def applicable(method: str, env_id: str) -> str | None:
    """``None`` when ``method`` can train on ``env_id``, else why not. A method that cannot be built at all (an
    unknown name, a class that does not load) raises its ``ValueError``: it is not a method that applies nowhere."""
    from baselines.credit import make_credit

    credit = make_credit(method)
    try:
        credit.branches(env_id)
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
                              "eval_count": s.eval_count or suite.score["eval_count"], "evaluate": s.evaluate,
                              "out": str(out / safe_name(m) / safe_name(s.name) / f"seed{seed}")})
    return specs, skipped


def complete_run(run: Path, steps: int) -> bool:
    """Whether the trainer run in ``run`` has finished ``steps`` steps (its latest checkpoint is at that step)."""
    from baselines.train import checkpoint

    latest = checkpoint.latest(run / "checkpoints")
    return latest is not None and _json_object(latest / "meta.json", run).get("step") == steps


def _json_object(path: Path, run: Path, line: int | None = None, text: str | None = None) -> dict[str, Any]:
    """A JSON object of a finished run's files (the whole file, or line ``line`` given as ``text``). Checkpoints and
    metrics are written atomically or line by line, so damage comes from outside, and the run is left as it is:
    deleting its folder trains it again, with the same result."""
    return read_json_object(path, f"delete {run} to train that run again", line=line, text=text)


def train_run(spec: dict[str, Any]) -> str:
    """Train the run a spec describes into ``spec["out"]`` (``env_id``, ``method``, ``seed``, ``action_mode``,
    ``model``, ``mode``, ``steps``, ``tasks_per_step``, ``group_size``; ``env_kwargs``, ``partners`` and ``progress``
    optional), or reuse it when it is complete; returns the folder. An unfinished run starts again (same seed, same
    result). A top-level function of JSON-able input, so a process pool or Ray can call it (``execute``)."""
    from baselines.train import TrainConfig, train

    run = Path(spec["out"])
    with writing(run, wait=True):       # another suite training this run now (a shared baseline): wait, then reuse it
        if complete_run(run, spec["steps"]):
            return str(run)
        for old in run.iterdir():       # an unfinished run: emptied (the folder itself is what is held)
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        progress = bool(spec.get("progress"))
        cfg = TrainConfig(env=spec["env_id"], env_kwargs=dict(spec.get("env_kwargs") or {}),
                          action_mode=spec["action_mode"], model=spec["model"], mode=spec["mode"],
                          credit=spec["method"], steps=spec["steps"], tasks_per_step=spec["tasks_per_step"],
                          group_size=spec["group_size"], seed=spec["seed"], partners=spec.get("partners", ""),
                          out=str(run), save_every=spec["steps"], keep_checkpoints=1, tensorboard=False,
                          progress=progress)
        if progress:
            print(f"train {spec['method']} on {spec['env_id']}, seed {spec['seed']}: {spec['steps']} steps",
                  file=sys.stderr)
        train(cfg)
    return str(run)


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Train one run (or reuse a complete one: :func:`train_run`) and return its raw score: ``{"raw", "curve",
    "tokens", ...}``.

    A top-level function of JSON-able input and output, so a process pool or Ray can call it anywhere."""
    import torch

    from baselines.train.config import read_run_config

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    run = Path(train_run(spec))
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
    if spec["play"] == "self":
        tail = curve[-max(1, math.ceil(len(curve) * spec["last_fraction"])):]
        raw = sum(tail) / len(tail)
    elif spec.get("evaluate", "sampled") == "sampled":
        raw = _versus_score(spec, run)
    else:
        raw, extra = _exact_score(spec, run)
    if spec["env_id"] == "free_riding-v0" and spec["env_kwargs"].get("idle_seats", 1) > 0:
        extra["idle_drift"] = _idle_drift(spec, run)
    return {"method": spec["method"], "setting": spec["setting"], "seed": spec["seed"], "raw": float(raw), **extra,
            "curve": curve, "tokens": tokens, "free_riding": {k: sum(v) / len(v) for k, v in free.items() if v},
            "config_hash": read_run_config(run).resolved.config_hash or "",
            "wall_s": time.perf_counter() - t0}


def _idle_drift(spec: dict[str, Any], run: Path) -> float:
    """free_riding-v0: how far the final policy of the idle seats has drifted, ``KL(p || uniform) = log 3 - H(p)``
    in nats, averaged over the idle seats; ``p`` is the seat's exact move distribution on its observation (the same
    in every episode, see the env's manual). 0 = no drift; log 3 = 1.0986 = a deterministic idle seat."""
    import numpy as np

    from leaderboard.exact import policy_decider
    from leaderboard.players import load_player
    from marl_llm_envs import make

    env = make(spec["env_id"], **spec["env_kwargs"], action_mode=spec["action_mode"])
    player = load_player(f"checkpoint:{run}", spec["env_id"], sorted(set(env.roles.values())), spec["action_mode"])
    decide = policy_decider(player.policies)
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
    from baselines.rollout import RolloutEngine
    from leaderboard.players import load_player, opponent_policy
    from marl_llm_envs import make

    kwargs = {**spec["env_kwargs"], "action_mode": spec["action_mode"]}
    env = make(spec["env_id"], **kwargs)
    roles = sorted(set(env.roles.values()))
    player = load_player(f"checkpoint:{run}", spec["env_id"], roles, spec["action_mode"])
    seeds = list(range(spec["eval_start"], spec["eval_start"] + spec["eval_count"]))
    total = 0.0
    envs: dict = {}         # the seats' engines share their envs
    for seat in env.possible_agents:
        opponent = opponent_policy(spec["env_id"], spec["opponent"], seed=0)
        policies = {env.roles[a]: (player.policies[env.roles[a]] if a == seat else opponent)
                    for a in env.possible_agents}
        engine = RolloutEngine(policies, show_progress=False, env_pool=envs)
        eps = engine.run(spec["env_id"], num_tasks=len(seeds), seed=spec["eval_start"], seeds=seeds,
                         env_kwargs=kwargs, run_id=f"versus|{seat}")
        total += sum(float(e.rewards[seat]) for e in eps) / len(eps)
    return total / len(env.possible_agents)


def _exact_score(spec: dict[str, Any], run: Path) -> tuple[float, dict[str, float]]:
    """The final policy's exact score (:mod:`leaderboard.exact`), with both exact figures: its payoff against the
    reference averaged over the seats (``versus``) and its ``exploitability`` (chips per hand)."""
    from leaderboard import exact
    from leaderboard.players import load_player
    from marl_llm_envs import make

    env = make(spec["env_id"], **spec["env_kwargs"], action_mode=spec["action_mode"])
    player = load_player(f"checkpoint:{run}", spec["env_id"], sorted(set(env.roles.values())), spec["action_mode"])
    table = exact.strategy_of(spec["env_id"], exact.policy_decider(player.policies), spec["env_kwargs"])
    both = {"versus": exact.versus(spec["env_id"], table),
            "exploitability": exact.exploitability(spec["env_id"], table)}
    return exact.raw_score(spec["env_id"], table, spec["evaluate"]), both


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


class Workers:
    """Where :func:`execute` runs specs, kept for several calls of :meth:`map`: this process (``jobs=1``), a pool of
    ``jobs`` spawned processes, or Ray (``ray``: see :func:`execute`). The pool is started by the first :meth:`map`
    with more than one spec, and Ray is initialised by the first :meth:`map` (unless the caller's process has
    initialised it already); both are stopped by :meth:`close` (a ``with`` block). A command that runs its specs in
    phases (benchmark-credit's training runs, then the evaluations of those runs) starts its workers once: a spawned
    worker begins by importing torch, and a local Ray instance takes seconds to start."""

    def __init__(self, jobs: int = 1, ray: str | None = None) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"--jobs must be a positive int, got {jobs!r}")
        self.jobs, self.ray = jobs, ray
        self._pool = None
        self._ray = None            # the ray module once initialised (here or by the caller)
        self._started_ray = False

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def map(self, fn: Callable[[dict[str, Any]], Any], specs: Sequence[dict[str, Any]],
            progress: bool = False) -> list[Any]:
        """``fn`` of every spec, in the order of ``specs`` (see :func:`execute`); no specs, no workers started."""
        specs = list(specs)
        if not specs:
            return []
        if self.ray is not None:
            ray = self._start_ray()
            remote = ray.remote(num_cpus=1)(fn)
            out = ray.get([remote.remote(s) for s in specs])
            if progress:
                print(f"ray: {len(out)} runs done", file=sys.stderr)
            return out
        if self.jobs == 1 or (len(specs) <= 1 and self._pool is None):
            out = []
            for i, s in enumerate(specs):
                if progress:        # before each run here
                    _progress(i, specs)
                out.append(fn(s))
            return out
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"))
        out = []
        for i, r in enumerate(self._pool.map(fn, specs)):
            if progress:        # as each run's result comes back, in order
                _progress(i, specs)
            out.append(r)
        return out

    def _start_ray(self):
        if self._ray is not None:
            return self._ray
        try:
            import ray
        except ImportError:
            raise ValueError("--ray needs ray: pip install 'marl-llm-envs[ray]'") from None
        if not ray.is_initialized():
            import os

            _check_reachable(self.ray)
            root = str(Path(__file__).resolve().parent.parent)
            env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}}
            try:
                if self.ray == "local":
                    ray.init(num_cpus=None, include_dashboard=False, runtime_env=env, log_to_driver=False)
                else:
                    ray.init(address=self.ray, runtime_env=env, log_to_driver=False)
            except (ConnectionError, ValueError) as e:   # no cluster at that address, or not an address
                raise ValueError(f"--ray {self.ray}: {e} (--ray auto joins the cluster running on this machine, "
                                 "started with `ray start --head`; --ray local starts a private instance for this "
                                 "command)") from None
            self._started_ray = True
        self._ray = ray
        return ray

    def close(self) -> None:
        """Stop the pool, and Ray if :meth:`map` initialised it."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()
        if self._started_ray:
            self._started_ray = False
            self._ray.shutdown()
        self._ray = None


def _progress(i: int, specs: list[dict[str, Any]]) -> None:
    s = specs[i]
    print(f"[{i + 1}/{len(specs)}] {s['method']} on {s['setting']}, seed {s['seed']}", file=sys.stderr)


def _check_reachable(address: str) -> None:
    """A ``--ray HOST:PORT`` (or ``ray://HOST:PORT``) that nothing answers on is a clear error within seconds: Ray
    itself retries such an address for minutes before it fails. ``auto``, ``local`` and anything that is not
    ``HOST:PORT`` are left to ``ray.init``."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as e:
        raise ValueError(f"--ray {address}: nothing answers at {host}:{port} ({e.strerror or e}); give the address "
                         "`ray start --head` printed, auto for the cluster running on this machine, or local for a "
                         "private instance") from None


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
    known = _cached_anchors(cache, suite) if cache is not None else {}
    anchors = {s.name: known.get(s.name) or {"zero": anchor_value(suite, s, "zero"),
                                             "one": anchor_value(suite, s, "one")}
               for s in suite.settings if any(r["setting"] == s.name for r in results)}
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        replace_text(cache, json.dumps({"suite_sha256": suite.sha256, "anchors": {**known, **anchors}}, indent=1))
    for name, a in anchors.items():
        if not a["one"] > a["zero"]:
            raise ProtocolError(f"{suite.key}: setting {name}: the 'one' anchor ({a['one']:.4f}) must score above the "
                                f"'zero' anchor ({a['zero']:.4f}) in {suite.action_mode} mode")
    by: dict[str, dict[str, dict[int, float]]] = {}
    tokens: dict[str, dict[str, int]] = {}
    side: dict[str, dict[str, dict[str, dict[int, float]]]] = {}       # method -> figure -> setting -> seed -> value
    for r in results:
        for fig in SIDE_FIGURES:
            if fig in r:
                side.setdefault(r["method"], {}).setdefault(fig, {}).setdefault(r["setting"], {})[r["seed"]] = \
                    float(r[fig])
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
                      "aggregate": {"seeds": agg, "ci": mean_ci(agg)}, "tokens": tokens[m],
                      "side": {fig: {name: {"seeds": [v[sd] for sd in sorted(v)], "ci": mean_ci([v[sd] for sd in
                                                                                                sorted(v)])}
                                     for name, v in per.items()} for fig, per in side.get(m, {}).items()}}
    return {"suite": suite.key, "anchors": anchors, "methods": methods}


# figures a run may report besides its score (``run_one``), shown per setting beside the scores: what they measure
SIDE_FIGURES = {
    "exploitability": "exploitability of the final policy (chips per hand; 0 = an equilibrium; exact)",
    "idle_drift": "idle seats' drift, KL(p || uniform) of their final move distribution (nats; 0 = none, "
                  "log 3 = 1.099 = deterministic)",
}


def separated(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """``a``'s 95% CI lies entirely above ``b``'s."""
    return a[1] > b[2]


def _ci(v: Sequence[float], digits: int = 3) -> str:
    x = [round(float(a), digits) + 0.0 for a in v[:3]]          # + 0.0: no "-0.00"
    return f"{x[0]:.{digits}f} [{x[1]:.{digits}f}, {x[2]:.{digits}f}]"


# ---------------------------------------------------------------------- what a reader sees: words and tables
TEXT_WIDTH = 120          # the printed comparison (comparison.md is the same text) fits a 120-column terminal


def coverage(suite: Suite, scored: dict[str, Any]) -> list[str]:
    """What each number covers, in words: the units of the CI (training seeds), how a family and the aggregate
    average, and what a setting's raw score is (the training tail, or held-out evaluation against a reference)."""
    seeds = sorted({len(v["seeds"]) for v in scored["methods"].values()}) or [0]
    n = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    played = {s.play for s in suite.settings if s.name in scored["anchors"]}
    out = [f"Every score: the mean over {n} training seeds with a 95% Student-t CI (the seeds are the independent "
           f"units); normalized per setting, uniform-random play = 0 and the optimum or reference policy = 1. A "
           f"family's score of a seed is the mean over its settings; the aggregate is the mean over the families."]
    frac = suite.score["last_fraction"]
    if "self" in played:
        b = suite.train
        tail = max(1, math.ceil(b["steps"] * frac))
        out.append(f"Cooperative settings (the team plays every seat): the mean team reward over the last "
                   f"{frac:.0%} of training ({tail} of {b['steps']} steps x {b['tasks_per_step'] * b['group_size']} "
                   f"fresh episodes at the suite's budget), not a held-out evaluation.")
    vs = [s for s in suite.settings if s.play == "versus" and s.name in scored["anchors"]]
    sampled = [s for s in vs if s.evaluate == "sampled"]
    if sampled:
        counts = sorted({s.eval_count or suite.score["eval_count"] for s in sampled})
        opp = sorted({s.opponent for s in sampled})
        out.append(f"Zero-sum settings (both seats learn): the final policy against {', '.join(opp)} on "
                   f"{'/'.join(map(str, counts))} held-out deals (seeds from 2**40) in each seat, payoffs averaged.")
    for kind, what in (("exact", "its exact expected payoff against {opp} over every deal and move, both seats "
                                 "averaged"),
                       ("exploitability", "minus its exact exploitability (a best response's gain, chips per hand)")):
        chosen = [s for s in vs if s.evaluate == kind]
        if chosen:
            opp = ", ".join(sorted({s.opponent for s in chosen}))
            out.append(f"Zero-sum settings (both seats learn), scored exactly: the final policy's strategy is read "
                       f"from the env and scored by {what.format(opp=opp)}; no sampling noise.")
    return out


def _family_line(a: str, b: str, where: str, ca, cb) -> str:
    nums = f"({a} {_ci(ca, 2)}, {b} {_ci(cb, 2)})"
    if separated(ca, cb):
        return f"{a} above {b} on {where}: CIs separated {nums}"
    if separated(cb, ca):
        return f"{b} above {a} on {where}: CIs separated {nums}"
    return f"{a} vs {b} on {where}: no difference at 95% {nums}"


def verdicts(suite: Suite, scored: dict[str, Any], under_test: str | None = None) -> list[str]:
    """The comparison in sentences: ``under_test`` (default: the first method) against every other method on the
    aggregate and on each family both were scored on ("broadcast above shuffled on team_size: CIs separated (...)",
    "broadcast vs loo on zero_sum: no difference at 95% (...)"), then the control check the suite exists for:
    ``shuffled`` (no credit information) below ``broadcast`` in k of n families."""
    methods = scored["methods"]
    if not methods:
        return ["no method was scored"]
    mine = under_test if under_test in methods else next(iter(methods))
    fams = [f.name for f in suite.families]
    out = []
    for other in methods:
        if other == mine:
            continue
        a, b = methods[mine], methods[other]
        out.append(_family_line(mine, other, "the aggregate", a["aggregate"]["ci"], b["aggregate"]["ci"]))
        out += [_family_line(mine, other, f, a["families"][f]["ci"], b["families"][f]["ci"])
                for f in fams if f in a["families"] and f in b["families"]]
    if "shuffled" in methods and "broadcast" in methods:
        sh, br = methods["shuffled"]["families"], methods["broadcast"]["families"]
        both = [f for f in fams if f in sh and f in br]
        below = [f for f in both if separated(br[f]["ci"], sh[f]["ci"])]
        rest = [f for f in both if f not in below]
        out.append(f"control: shuffled below broadcast in {len(below)}/{len(both)} families with CIs separated"
                   + (f" ({', '.join(below)})" if below else "")
                   + (f"; not separated on {', '.join(rest)}" if rest else "")
                   + " (shuffled keeps the advantages' distribution and drops their credit: a suite that cannot "
                     "separate it measures no credit there)")
    if "shuffled" not in methods or "broadcast" not in methods:
        out.append("control: not run (the suite's check needs both broadcast and shuffled among the methods)")
    if len(methods) == 1:
        out.insert(0, f"{mine} only: no other method to compare with (add --baselines)")
    return out


def _fit(cols: list[str], rows: list[list[str]], keep: int = 1, width: int = TEXT_WIDTH) -> list[str]:
    """A Markdown table, split by columns into several (each repeating the first ``keep`` columns) where one would be
    wider than ``width`` characters: the printed comparison wraps cleanly instead of by the terminal."""
    w = [max(len(c), *(len(r[i]) for r in rows)) + 3 for i, c in enumerate(cols)]
    chunks, current = [], []
    for i in range(keep, len(cols)):
        if current and 1 + sum(w[:keep]) + sum(w[j] for j in current) + w[i] > width:
            chunks.append(current)
            current = []
        current.append(i)
    if current or not chunks:
        chunks.append(current)
    out = []
    for chunk in chunks:
        idx = list(range(keep)) + chunk
        if out:
            out.append("")
        out.append("| " + " | ".join(cols[i] for i in idx) + " |")
        out.append("|" + "---|" * len(idx))
        out += ["| " + " | ".join(r[i] for i in idx) + " |" for r in rows]
    return out


def _tokens(v: dict[str, Any]) -> tuple[int, int]:
    t = v.get("tokens", {})
    return int(t.get("main", 0)) + int(t.get("branches", 0)), int(t.get("branches", 0))


def _family_rows(suite: Suite, scored: dict[str, Any], digits: int = 3) -> tuple[list[str], list[list[str]]]:
    fams = [f.name for f in suite.families]
    cols = ["method", "aggregate"] + fams + ["runs", "train tokens", "counterfactual tokens"]
    rows = []
    for m, v in scored["methods"].items():
        total, branches = _tokens(v)
        rows.append([m, _ci(v["aggregate"]["ci"], digits)] +
                    [_ci(v["families"][f]["ci"], digits) if f in v["families"] else "n/a" for f in fams] +
                    [str(len(v["seeds"]) * len(v["settings"])), str(total), str(branches)])
    return cols, rows


def _setting_rows(suite: Suite, scored: dict[str, Any], digits: int = 3) -> tuple[list[str], list[list[str]]]:
    methods = list(scored["methods"])
    cols = ["setting", "zero", "one"] + methods
    rows = []
    for s in suite.settings:
        if s.name not in scored["anchors"]:
            continue
        a = scored["anchors"][s.name]
        rows.append([s.name, f"{a['zero']:.3f}", f"{a['one']:.3f}"] +
                    [_ci(scored["methods"][m]["settings"][s.name]["ci"], digits)
                     if s.name in scored["methods"][m]["settings"] else "n/a" for m in methods])
    return cols, rows


def _side_rows(scored: dict[str, Any], fig: str, digits: int = 3) -> tuple[list[str], list[list[str]]]:
    methods = list(scored["methods"])
    names = list(dict.fromkeys(n for m in methods for n in scored["methods"][m].get("side", {}).get(fig, {})))
    rows = [[n] + [_ci(scored["methods"][m]["side"][fig][n]["ci"], digits)
                   if n in scored["methods"][m].get("side", {}).get(fig, {}) else "n/a" for m in methods]
            for n in names]
    return ["setting"] + methods, rows


def _skip_notes(skipped: dict[str, dict[str, str]] | None) -> list[str]:
    return [f"{m} is not applicable on {', '.join(why)} ({'; '.join(sorted(set(why.values())))})"
            for m, why in (skipped or {}).items() if why]


def _wrap(text: str, first: str = "", rest: str = "  ") -> list[str]:
    """``text`` in lines of at most 120 characters, never broken inside a bracket (a CI stays on one line)."""
    import re
    import textwrap

    glued = re.sub(r"\[[^\[\]]{0,40}\]", lambda m: m.group(0).replace(" ", "\x00"), text)
    lines = textwrap.wrap(glued, TEXT_WIDTH, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                          break_on_hyphens=False) or [first.rstrip()]
    return [line.replace("\x00", " ") for line in lines]


def table(suite: Suite, scored: dict[str, Any], skipped: dict[str, dict[str, str]] | None = None) -> str:
    """Markdown, at most 120 columns wide (wider tables are split by columns): the aggregate and a column per family
    (mean [95% CI] over seeds) with each method's training tokens, then every setting with its anchors."""
    cols, rows = _family_rows(suite, scored)
    lines = _fit(cols, rows)
    cols, rows = _setting_rows(suite, scored)
    lines += [""] + _wrap("Per setting (normalized: random = 0, optimum/reference = 1; zero and one: the anchors' "
                          "raw values, measured with the setting's kwargs):", rest="") + [""]
    if rows:
        lines += _fit(cols, rows)
    for fig, what in SIDE_FIGURES.items():
        cols, rows = _side_rows(scored, fig)
        if rows:
            lines += [""] + _wrap(f"Per setting, the {what}, mean [95% CI] over seeds:", rest="") + [""]
            lines += _fit(cols, rows)
    notes = _skip_notes(skipped)
    if notes:
        lines.append("")
    for n in notes:
        lines += _wrap(n, "- ")
    return "\n".join(lines) + "\n"


def comparison_text(suite: Suite, scored: dict[str, Any], context, skipped=None) -> str:
    """``comparison.md``, also what ``benchmark-credit`` prints: title, facts, notes, the verdict, what the numbers
    cover, and the tables; no line is wider than 120 characters."""
    out = [f"# {context.title}", ""]
    for k, v in context.facts:
        out += _wrap(f"{k}: {v}", "- ")
    for n in context.notes:
        out += _wrap(n, "- ")
    out += ["", "Verdict:", ""]
    for v in verdicts(suite, scored, context.under_test):
        out += _wrap(v, "- ")
    out.append("")
    for c in coverage(suite, scored):
        out += _wrap(c, rest="")
    out += [""] + table(suite, scored, skipped).rstrip("\n").splitlines()
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------- the leaderboard's suite columns
def board_columns(board) -> list[tuple[str, Callable]]:
    """:data:`leaderboard.render.EXTRA_COLUMNS` hook: on a suite's board, the suite's own aggregate (the mean over
    families of a seed, mean over seeds, 95% t CI, as ``benchmark-credit`` prints it), from the entry's per-seed,
    per-setting scores. The per-family columns are the board's per-task columns (a suite entry's tasks are its
    families)."""
    if board.protocol not in list_suites():
        return []

    def aggregate(row) -> str:
        fams = list(row.scores.values())
        seeds = min(len(f) for f in fams)
        per_seed = [sum(sum(f[i]) / len(f[i]) for f in fams) / len(fams) for i in range(seeds)]
        return _ci(mean_ci(per_seed))

    return [("suite aggregate [95% t CI]", aggregate)]


# ---------------------------------------------------------------------- figures
def _variants(fam: Family) -> dict[str, list[Setting]]:
    groups: dict[str, list[Setting]] = {}
    for s in fam.settings:             # one line per method and variant (e.g. voting's two reward schemes)
        groups.setdefault(s.name.rsplit("/", 1)[0], []).append(s)
    return groups


def _scaling_axes(ax, fam: Family, scored: dict[str, Any], palette) -> dict[str, str]:
    """Score against the family's knob on ``ax``: per method (its palette colour) and variant (a line style), the
    mean over seeds with a 95% t band; returns the colours drawn."""
    from matplotlib.colors import to_hex

    from leaderboard.render import mpl_text

    groups = _variants(fam)
    styles = ["-", "--", ":", "-."]
    colours = {}
    for m, v in scored["methods"].items():
        for k, (variant, ss) in enumerate(groups.items()):
            pts = sorted((s.knob, v["settings"][s.name]["ci"]) for s in ss if s.name in v["settings"]
                         and isinstance(s.knob, (int, float)) and not isinstance(s.knob, bool))
            if not pts:
                continue
            x = [p[0] for p in pts]
            colour = palette.colour(m)
            label = m if len(groups) == 1 else f"{m}, {variant.rsplit('/', 1)[-1]}"
            (line,) = ax.plot(x, [p[1][0] for p in pts], color=colour, ls=styles[k % len(styles)], marker="o",
                              ms=4, lw=2, label=mpl_text(label))
            ax.fill_between(x, [p[1][1] for p in pts], [p[1][2] for p in pts], color=colour, alpha=0.12, lw=0)
            colours[m] = to_hex(line.get_color())
    knobs = [s.knob for s in fam.settings if isinstance(s.knob, (int, float)) and not isinstance(s.knob, bool)]
    if knobs and all(k > 0 for k in knobs) and max(knobs) / min(knobs) >= 8:
        ax.set_xscale("log", base=2)
    if knobs:
        ax.set_xticks(sorted(set(knobs)), [f"{k:g}" for k in sorted(set(knobs))])
        ax.minorticks_off()
    ax.axhline(0, color="grey", lw=0.8, ls=":")
    ax.axhline(1, color="grey", lw=0.8, ls="--")
    return colours


SCORE_AXIS = "normalized score\n(random = 0, optimum = 1)"      # the y label of every scaling panel


def _knob_axis(ax, fam: Family) -> str:
    """The x label of a scaling panel, once :func:`_scaling_axes` has chosen its scale."""
    return f"{fam.knob} (the env's kwarg; log scale)" if ax.get_xscale() == "log" else f"{fam.knob} (the env's kwarg)"


def _radar(fams: list[str], means: dict[str, dict[str, float]], palette, seeds: str):
    """bsuite's radar: per method (its palette colour), the mean family scores, clipped to [0, 1]."""
    import numpy as np
    from matplotlib.colors import to_hex

    from leaderboard.render import Figure, finish_figure, mpl_text, pyplot

    plt = pyplot()
    angles = np.linspace(0, 2 * np.pi, len(fams), endpoint=False).tolist()
    fig = plt.figure(figsize=(4.6, 4.6), layout="constrained")
    ax = fig.add_subplot(111, polar=True)
    colours = {}
    for m, by_family in means.items():
        vals = [min(1.0, max(0.0, by_family[f])) if f in by_family else 0.0 for f in fams]
        colour = palette.colour(m)
        (line,) = ax.plot(angles + angles[:1], vals + vals[:1], color=colour, lw=2, label=mpl_text(m))
        ax.fill(angles + angles[:1], vals + vals[:1], color=colour, alpha=0.08)
        colours[m] = to_hex(line.get_color())
    ax.set_xticks(angles, [f.replace("_", "\n") for f in fams], fontsize=9)
    ax.set_ylim(0, 1)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], ["0.25", "0.5", "0.75", "1"], fontsize=7, color="#555")
    png = finish_figure(plt, fig, ax, "family scores, mean of seeds\n(random = 0, optimum = 1; clipped to [0, 1])",
                        "", grid=None)      # a polar axes keeps its own grid
    return Figure("radar", f"Family scores (bsuite's radar): the mean over {seeds} training seeds per family, "
                           f"normalized so that random play = 0 and the optimum = 1, clipped to [0, 1]; the CIs are in "
                           f"the table.", png, colours)


def board_figures(board, entries: list[dict], palette) -> list:
    """:data:`leaderboard.render.EXTRA_FIGURES` hook: on a suite's leaderboard board, the radar of every entry's
    family means (from its stored results), in the page's colours."""
    if board.protocol not in list_suites():
        return []
    short = {r.label: r.short for r in board.rows}
    means = {short[e["label"]]: {f: float(x["ci"][0]) for f, x in e["results"].get("families", {}).items()}
             for e in entries if e["label"] in short}
    means = {r.short: means[r.short] for r in board.rows if means.get(r.short)}      # the table's order
    fams = [f.name for f in load_suite(board.protocol).families if any(f.name in v for v in means.values())]
    if not fams:
        return []
    runs = sorted({r.runs for r in board.rows})
    return [_radar(fams, means, palette, "/".join(map(str, runs)))]


def suite_figures(suite: Suite, scored: dict[str, Any], palette) -> list:
    """The page's figures (:class:`leaderboard.render.Figure`, one colour per method from ``palette``): the radar of
    the family means (bsuite's summary), one scaling figure per family that sweeps a knob over several settings
    (mean with a 95% t band over seeds), and training tokens against the aggregate."""
    out = []
    fams = [f for f in suite.families if any(f.name in v["families"] for v in scored["methods"].values())]
    seeds = "/".join(map(str, sorted({len(v["seeds"]) for v in scored["methods"].values()})))
    if fams:
        means = {m: {f: x["ci"][0] for f, x in v["families"].items()} for m, v in scored["methods"].items()}
        out.append(_radar([f.name for f in fams], means, palette, seeds))
    out += [_scaling_figure(fam, scored, palette, seeds) for fam in fams if fam.knob and len(fam.settings) >= 2]
    costed = {m: v for m, v in scored["methods"].items() if _tokens(v)[0] > 0}
    if costed:
        out.append(_cost_figure(costed, palette))
    return out


def _scaling_figure(fam: Family, scored: dict[str, Any], palette, seeds: str):
    """One family's score against its knob (:func:`_scaling_axes`) as a figure of its own."""
    from leaderboard.render import Figure, finish_figure, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 3.4), layout="constrained")
    colours = _scaling_axes(ax, fam, scored, palette)
    png = finish_figure(plt, fig, ax, f"{fam.title}: score against {fam.knob}", _knob_axis(ax, fam), SCORE_AXIS,
                        ncol=2 if len(_variants(fam)) > 1 else 3)
    return Figure(f"scaling-{fam.name}", f"{fam.title}: the normalized score against {fam.knob}, the mean over "
                                         f"{seeds} training seeds with a 95% t band.", png, colours)


def _cost_figure(costed: dict[str, Any], palette):
    """Training tokens (main and counterfactual, all runs) against the aggregate score with its CI, per method."""
    from matplotlib.colors import to_hex
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    from leaderboard.render import Figure, finish_figure, mpl_text, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 3.2), layout="constrained")
    colours = {}
    for m, v in costed.items():
        c, colour = v["aggregate"]["ci"], palette.colour(m)
        line = ax.errorbar(_tokens(v)[0], c[0], yerr=[[c[0] - c[1]], [c[2] - c[0]]], fmt="o", ms=7,
                           color=colour, ecolor=colour, elinewidth=2, capsize=0, label=mpl_text(m))
        colours[m] = to_hex(line.lines[0].get_color())
    totals = [_tokens(v)[0] for v in costed.values()]
    log = max(totals) / min(totals) >= 10          # within a decade a log axis would show no tick at all
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.margins(x=0.25)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if x >= 1000 else f"{x:g}"))
    png = finish_figure(plt, fig, ax, "cost against score",
                        f"training tokens, all runs{' (log scale)' if log else ''},\ncounterfactual branches included",
                        "aggregate normalized score\n(95% t CI)")
    return Figure("cost", "Training cost against score: every token generated in training (main rollouts and "
                          "counterfactual branches, all runs of the suite) against the aggregate with its 95% CI.",
                  png, colours)


def figures(suite: Suite, scored: dict[str, Any], out: str | Path | None = None, palette=None,
            figs: list | None = None) -> dict[str, str]:
    """``{key: base64 PNG}`` of :func:`suite_figures` (``radar``, ``scaling-<family>``, ``cost``; ``figs`` when
    already drawn), written as ``<key>.png`` into ``out`` when given, with ``scaling.png``: every family's scaling
    panel side by side."""
    import base64

    from leaderboard.render import Palette, figure_png, label_axes, legend_below, pyplot

    palette = palette or Palette(scored["methods"])
    pngs = {f.key: f.png for f in (figs if figs is not None else suite_figures(suite, scored, palette))}
    knobbed = [f for f in suite.families if f"scaling-{f.name}" in pngs]
    if knobbed:
        plt = pyplot()
        fig, axes = plt.subplots(1, len(knobbed), figsize=(4.6 * len(knobbed), 3.6), squeeze=False,
                                 layout="constrained")
        for ax, fam in zip(axes[0], knobbed):
            _scaling_axes(ax, fam, scored, palette)
            label_axes(ax, fam.title, _knob_axis(ax, fam), SCORE_AXIS)
        legend_below(fig, axes[0][-1], ncol=6)
        pngs["scaling"] = figure_png(fig)
        plt.close(fig)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        for name, data in pngs.items():
            (out / f"{name}.png").write_bytes(base64.b64decode(data))
    return pngs


def page(suite: Suite, scored: dict[str, Any], context, skipped: dict[str, dict[str, str]] | None = None,
         figs: list | None = None) -> str:
    """The suite's HTML page in the leaderboard page's style (:func:`leaderboard.render.page_head`): the title and
    the method under test, the facts (budget, seeds, runs, wall time) and notes (applicability), the verdict, what the
    numbers cover, a table per family (mean [95% CI] per method, the aggregate, training and counterfactual tokens),
    the figures (one colour per method in all of them) and a table per setting. ``context`` is a
    :class:`leaderboard.render.PageContext`; ``figs`` (default: :func:`suite_figures`) must use the same palette."""
    from leaderboard.render import Palette, context_html, figure_html, html_text, page_head

    palette = Palette(scored["methods"])
    figs = suite_figures(suite, scored, palette) if figs is None else figs
    key = html_text(suite.key)
    table = functools.partial(_html_table, key=key, palette=palette, under_test=context.under_test)
    parts = page_head(context.title) + context_html(context) + _page_summary(suite, scored, context, skipped, key)
    cols, rows = _family_rows(suite, scored)
    titles = [None, "mean over families"] + \
             [f"{f.title}: {', '.join(s.name for s in f.settings)}" for f in suite.families] + \
             ["training seeds x settings", "every token generated in training, all runs",
              "tokens spent on counterfactual branches"]
    parts.append("<h2>Per family: mean [95% CI] over training seeds</h2>")
    parts.append(table("families", [c if c in ("method", "runs", "train tokens", "counterfactual tokens")
                                    else f"{c} [95% CI]" for c in cols], rows, 0, titles))
    parts.append("<div class='figs'>" + "".join(figure_html(f) for f in figs) + "</div>")
    cols, rows = _setting_rows(suite, scored)
    if rows:
        parts.append("<h2>Per setting</h2><p class='covers'>zero and one: the raw values of the anchors (random play, "
                     "and the optimum or reference policy), measured with the setting's kwargs; each method's cell is "
                     "its normalized score, mean [95% CI] over training seeds.</p>")
        parts.append(table("settings", cols, rows, None))
    parts.append("<p class='covers'>comparison.md and results.json beside this page hold the same numbers; "
                 "python -m leaderboard submit / render puts the entries on the leaderboard.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _page_summary(suite: Suite, scored: dict[str, Any], context, skipped, key: str) -> list[str]:
    """The page's words above its tables: applicability notes, the verdict, what the numbers cover, the suite."""
    from leaderboard.render import html_text

    parts = []
    notes = _skip_notes(skipped)
    if notes:
        parts.append("<p><strong>Applicability</strong> (a method that cannot train on a setting's env is not run "
                     "there):</p><ul class='notes'>" + "".join(f"<li>{html_text(n, 1000)}</li>" for n in notes) +
                     "</ul>")
    parts.append(f"<div class='verdict' id='verdict-{key}'><strong>Verdict</strong><ul>" +
                 "".join(f"<li>{html_text(v, 600)}</li>" for v in verdicts(suite, scored, context.under_test)) +
                 "</ul></div>")
    parts += [f"<p class='covers'>{html_text(c, 600)}</p>" for c in coverage(suite, scored)]
    parts.append(f"<p class='covers'>The suite: {html_text(suite.description, 2000)}</p>")
    return parts


def _html_table(tid: str, cols: list[str], rows: list[list[str]], method_col: int | None, titles=None, *,
                key: str, palette, under_test: str | None) -> str:
    """A sortable HTML table (``<tid>-<key>``) in a scrollable wrapper; ``titles``: a tooltip per column. Where
    ``method_col`` names a method column, its cells carry the method's colour swatch and the row of ``under_test``
    is highlighted."""
    from leaderboard.render import html_text

    head = ""
    for i, c in enumerate(cols):
        tip = f" title='{html_text(titles[i], 300)}'" if titles and titles[i] else ""
        head += f"<th onclick='sortTable(this)'{tip}>{html_text(c, 200)}</th>"
    body = []
    for r in rows:
        tds = []
        for i, c in enumerate(r):
            if i == method_col:
                colour = palette.colour(c)
                tds.append(f"<td data-colour='{colour}'><span class='swatch' style='background:{colour}'></span>"
                           f"{html_text(c)}</td>")
            else:
                tds.append(f"<td>{html_text(c)}</td>")
        mine = method_col is not None and r[method_col] == under_test
        attr = f" data-method='{html_text(r[method_col])}'" if method_col is not None else ""
        body.append(f"<tr{' class=under-test' if mine else ''}{attr}>" + "".join(tds) + "</tr>")
    return (f"<div class='scroll'><table class='board' id='{tid}-{key}'><thead><tr>{head}</tr></thead><tbody>" +
            "".join(body) + "</tbody></table></div>")


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
    """Add a suite entry to the store (its index and ``<suite>/<method>--<hash>.json``,
    :func:`leaderboard.store.write_entry`); a duplicate is an error."""
    from leaderboard.store import write_entry

    sha = e["manifest"]["results_sha256"]
    write_entry(e, store, episodes_sha256=sha, content_sha256=sha)


# ---------------------------------------------------------------------- the benchmark
def page_context(suite: Suite, scored: dict[str, Any], method: str, runs: int | None = None,
                 wall_s: float | None = None, execution: str = ""):
    """The :class:`leaderboard.render.PageContext` of a suite comparison: its title (the method under test and the
    suite), the budget, the seeds, the runs and the wall time, and what ranks against what."""
    from leaderboard.render import PageContext

    b = suite.train
    facts = [("suite", f"{suite.key} ({suite.tier} tier, {len(suite.families)} families, {len(suite.settings)} "
                       f"settings, {suite.action_mode} mode)"),
             ("budget per run", f"{b['steps']} steps x {b['tasks_per_step']} tasks x {b['group_size']} samples, "
                                f"model {b['model']} ({b['mode']})"),
             ("training seeds", ", ".join(map(str, b["seeds"])))]
    if runs is not None:
        facts.append(("runs", f"{runs} (methods x applicable settings x seeds)"))
    if wall_s is not None:
        facts.append(("wall time", f"{wall_s:.0f} s" + (f" ({execution})" if execution else "")))
    notes = []
    if "quick" in suite.id:
        notes.append(f"{suite.key} is the quick subset: its entries rank only against other {suite.key} entries.")
    return PageContext(title=f"benchmark-credit {method} on {suite.key}: credit-assignment suite", under_test=method,
                       facts=facts, notes=notes)


def benchmark_suite(method: str, suite: Suite | str, baselines: Sequence[str], out: str | Path,
                    jobs: int = 1, ray: str | None = None, progress: bool = True,
                    submit_to: str | Path | None = None) -> dict[str, Any]:
    """Run the suite for ``method`` and ``baselines``; write ``OUT/<suite>/comparison.md``, ``index.html``,
    ``radar.png``, ``scaling.png`` and ``results.json``; returns ``{"scored", "markdown", "out", "skipped",
    "entries", "wall_s"}``."""
    suite = load_suite(suite) if not isinstance(suite, Suite) else suite
    out = Path(out) / suite.key
    methods = list(dict.fromkeys([method, *baselines]))     # each method once, the one under test first
    t0 = time.perf_counter()
    specs, skipped = plan(suite, methods, out)
    results = execute(specs, jobs=jobs, ray=ray, progress=progress)
    wall = time.perf_counter() - t0
    scored = score(suite, results, cache=out / "anchors.json")
    context = page_context(suite, scored, method, runs=len(specs), wall_s=wall,
                           execution=f"ray {ray}" if ray else f"{jobs} process(es)")
    text = comparison_text(suite, scored, context, skipped)
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.md").write_text(text)
    (out / "results.json").write_text(json.dumps({"scored": scored, "runs": results}, indent=1))
    from leaderboard.render import Palette

    palette = Palette(scored["methods"])
    figs = suite_figures(suite, scored, palette)
    figures(suite, scored, out, palette, figs)
    (out / "index.html").write_text(page(suite, scored, context, skipped, figs), encoding="utf-8")
    entries = [entry(suite, scored, m, results, note=f"python -m leaderboard benchmark-credit {method} on "
                                                     f"{suite.key}") for m in scored["methods"]]
    if submit_to is not None:
        for e in entries:
            add_entry(e, submit_to)
    return {"scored": scored, "markdown": text, "out": out, "skipped": skipped, "entries": entries, "wall_s": wall,
            "results": results}
