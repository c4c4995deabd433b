"""The episodes of a submission: read strictly line by line (each within its size limit; what validation keeps of
an episode is a fraction of its line), checked one by one against the protocol (env, place, rewards, turns,
opponent) and for completeness, and replayed step by step from their transcripts (:func:`audit`), re-deriving every
move of the protocol's opponents where it has ``seeded_moves``. The checks are listed in :mod:`leaderboard.validate`'s
docstring (points 3 and 4)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np

from baselines.episode import READABLE_VERSIONS, SCHEMA, Episode, json_safe
from baselines.policies.base import request_for
from baselines.rollout import env_action
from leaderboard.evaluate import EPISODES_FILE, opponent_for, parse_run_label, run_label
from leaderboard.protocol import Protocol, Task, canonical_sha256
from leaderboard.submission_json import MAX_INT, Limits, SubmissionError, loads_strict
from marl_llm_envs import make, spec
from marl_llm_envs.text import short_repr

__all__ = ["TOL", "audit", "check_episodes", "read_episodes"]

TOL = 1e-9


def read_episodes(path: Path, limits: Limits) -> list:
    """``[(line number, Episode)]`` read strictly (see the module docstring)."""
    episodes = []
    with open(path, "rb") as f:
        for lineno, line in enumerate(iter(lambda: f.readline(limits.line_bytes + 1), b""), 1):
            where = f"{EPISODES_FILE}:{lineno}"
            if len(line) > limits.line_bytes:       # read no further than one byte past the limit
                raise SubmissionError(f"{where}: a line of more than {limits.line_bytes} bytes, over the limit")
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise SubmissionError(f"{where}: not UTF-8 text") from None
            if not text.strip():
                continue
            d = loads_strict(text, where)
            if lineno == 1:
                if not isinstance(d, dict) or d.get("schema") != SCHEMA or \
                        d.get("schema_version") not in READABLE_VERSIONS:
                    raise SubmissionError(f"{where}: not an episodes file (header {SCHEMA!r} with schema_version in "
                                          f"{list(READABLE_VERSIONS)})")
                continue
            if not isinstance(d, dict):
                raise SubmissionError(f"{where}: an episode is a JSON object")
            try:
                episode = Episode.from_json(d)
            except (TypeError, ValueError, KeyError, AttributeError) as e:
                raise SubmissionError(f"{where}: not an episode ({short_repr(str(e), 300)})") from None
            del d
            episodes.append((lineno, _kept(episode, where)))
    return episodes


def _kept(e, where: str):
    """What validation keeps of an episode: its own token count checked here (its turns' completion tokens), then
    everything but the moves, rewards, labels and counts dropped (prompts, log-probabilities, texts, branches; the
    final infos reduced to their hash, checked against the replay), so the memory held for a whole submission is a
    fraction of its file, whatever the free-form fields carry."""
    own = sum(len(t.completion_ids) for t in e.turns)
    if isinstance(e.tokens_generated, bool) or not isinstance(e.tokens_generated, int) or \
            not 0 <= e.tokens_generated < MAX_INT:
        raise SubmissionError(f"{where}.tokens_generated: {e.tokens_generated!r} is not a non-negative integer")
    if e.tokens_generated != own:
        raise SubmissionError(f"{where}.tokens_generated: {e.tokens_generated}, but its turns hold {own} completion "
                              f"tokens")
    e.final_infos = {"sha256": canonical_sha256(e.final_infos)}
    e.branches = []
    for t in e.turns:
        t.prompt_ids, t.completion_ids, t.logprobs, t.legal_actions = [], [], [], []
        t.text, t.extra, t.state, t.choice, t.obs_digest = "", {}, None, None, ""
    return e


def _finite(values, where: str) -> None:
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SubmissionError(f"{where}: {k} = {v!r} is not a finite number")


def check_episodes(episodes: list, manifest: dict, proto: Protocol) -> dict:
    """Every per-episode check (in the order of the module docstring), then completeness; returns
    (task, seat, run) -> {seed: (line, episode)}."""
    versions = {e["env_id"]: (e["env_version"], e["env_kwargs"]) for e in manifest["envs"]}
    tasks = {t.name: t for t in proto.tasks}
    seeds = set(proto.seeds)
    cells: dict[tuple[str, str, int], dict[int, Any]] = {}
    for line, e in episodes:
        where = f"{EPISODES_FILE}:{line}"
        task, seat, run = _cell_of(e, where, proto, tasks)
        _check_env(e, where, proto, task, *versions[task.env_id])
        _check_place(e, where, proto, task, seat, run, seeds)
        _check_rewards(e, where, task.env_id)
        _check_turns(e, where)
        if seat != "all":
            _check_opponent(e, where, task, seat)
        cell = cells.setdefault((task.name, seat, run), {})
        if e.seed in cell:
            raise SubmissionError(f"{where}: a second episode for {run_label(task.name, seat, run)} seed {e.seed}")
        cell[e.seed] = (line, e)
    _check_complete(cells, proto, seeds)
    return cells


def _cell_of(e, where: str, proto: Protocol, tasks: dict[str, Task]) -> tuple[Task, str, int]:
    """The (task, seat, run) an episode's ``run_id`` names."""
    label = parse_run_label(e.run_id)
    if label is None or label[0] not in tasks:
        raise SubmissionError(f"{where}.run_id: {e.run_id!r} is not '<task>|<seat>|run<r>' with a task of "
                              f"{proto.key}")
    return tasks[label[0]], label[1], label[2]


def _check_env(e, where: str, proto: Protocol, task: Task, version: int, kwargs: dict) -> None:
    """The episode plays the task's env at its current ``version`` with the protocol's kwargs, and its transcript
    describes it (``kwargs``: the env's full kwargs, as the manifest lists them)."""
    if e.env_id != task.env_id:
        raise SubmissionError(f"{where}.env_id: {e.env_id!r}, task {task.name} plays {task.env_id}")
    if e.env_version != version or e.transcript.get("version") != version:
        raise SubmissionError(f"{where}.env_version: {task.env_id} version {e.env_version} (transcript "
                              f"{e.transcript.get('version')!r}), but the current version is {version}")
    if e.env_kwargs != proto.env_kwargs(task):
        raise SubmissionError(f"{where}.env_kwargs: {e.env_kwargs} are not the protocol's {proto.env_kwargs(task)}")
    tr = e.transcript
    if tr.get("env_id") != e.env_id or tr.get("kwargs") != kwargs or tr.get("seed") != e.seed or \
            not isinstance(tr.get("actions"), list) or tr.get("ablations", []) != []:
        raise SubmissionError(f"{where}.transcript: does not describe this episode (env id, full kwargs, seed, "
                              f"a list of actions, no ablations)")


def _check_place(e, where: str, proto: Protocol, task: Task, seat: str, run: int, seeds: set[int]) -> None:
    """The seat is one the task plays, the run one of the protocol's, the seed an evaluation seed."""
    if seat not in task.seats():
        raise SubmissionError(f"{where}.run_id: seat {seat!r} is not one of {task.seats()}")
    if not 0 <= run < proto.runs:
        raise SubmissionError(f"{where}.run_id: run {run}, the protocol has {proto.runs} run(s)")
    if e.seed not in seeds:
        raise SubmissionError(f"{where}.seed: {e.seed} is not an evaluation seed of {proto.key}")


def _check_rewards(e, where: str, env_id: str) -> None:
    """Finite rewards for exactly the env's agents and team rewards for exactly its teams, within its reward
    range."""
    env_spec = _spec(env_id)
    _finite(e.rewards, f"{where}.rewards")
    _finite(e.team_rewards, f"{where}.team_rewards")
    if sorted(e.rewards) != sorted(env_spec.agents):
        raise SubmissionError(f"{where}.rewards: has rewards for {sorted(e.rewards)}; every agent of {env_id} needs "
                              f"one: {sorted(env_spec.agents)}")
    teams = sorted(set(env_spec.teams.values()))
    if sorted(e.team_rewards) != teams:
        raise SubmissionError(f"{where}.team_rewards: has {sorted(e.team_rewards)}; {env_id}'s teams are {teams}")
    low, high = env_spec.reward_range
    for name, values in (("rewards", e.rewards), ("team_rewards", e.team_rewards)):
        for k, value in values.items():
            if not low - TOL <= value <= high + TOL:
                raise SubmissionError(f"{where}.{name}.{k}: {value!r} is outside {env_id}'s reward range "
                                      f"[{low}, {high}]")


def _check_turns(e, where: str) -> None:
    """Exactly one turn per move of the transcript, with the move's action; the turns' rewards are finite and add
    up to each agent's episode reward."""
    actions = e.transcript["actions"]
    totals: dict[str, float] = {}
    for t in e.turns:
        if isinstance(t.reward, bool) or not isinstance(t.reward, (int, float)) or not math.isfinite(t.reward):
            raise SubmissionError(f"{where}.turns[{t.turn_index}].reward: {t.reward!r} is not a finite number")
        totals[t.agent] = totals.get(t.agent, 0.0) + t.reward
        if not (isinstance(t.step_index, int) and 0 <= t.step_index < len(actions)) or \
                actions[t.step_index] != t.action:
            raise SubmissionError(f"{where}.turns[{t.turn_index}]: its action {t.action!r} is not the "
                                  f"transcript's action at step {t.step_index}")
    steps = sorted(t.step_index for t in e.turns)
    moves = [i for i, a in enumerate(actions) if a is not None]
    if steps != moves:
        raise SubmissionError(f"{where}.turns: the turns are at steps {steps[:8]}..., the transcript has moves at "
                              f"steps {moves[:8]}... (every move of the transcript has exactly one turn)")
    for agent, total in totals.items():
        if abs(total - e.rewards.get(agent, math.nan)) > TOL:
            raise SubmissionError(f"{where}.rewards.{agent}: {e.rewards.get(agent)!r}, but its turns' rewards add "
                                  f"up to {total!r}")


def _check_opponent(e, where: str, task: Task, seat: str) -> None:
    """A versus episode's other seat is played by the protocol's opponent."""
    opp = next(a for a in _spec(task.env_id).agents if a != seat)
    name = (e.policies.get(opp) or {}).get("name")
    want = "random" if task.opponent == "random" else f"reference:{task.opponent}"
    if name != want:
        raise SubmissionError(f"{where}.policies.{opp}: played by {name!r}, the protocol's opponent is {want!r}")


def _check_complete(cells: dict, proto: Protocol, seeds: set[int]) -> None:
    """Exactly one episode for every (task, seat, run, seed) of the protocol (none twice: checked as they are
    read)."""
    for task in proto.tasks:
        for seat in task.seats():
            for run in range(proto.runs):
                got = cells.get((task.name, seat, run), {})
                if len(got) != len(seeds):
                    lacking = sorted(seeds - set(got))
                    raise SubmissionError(f"{EPISODES_FILE}: incomplete: {run_label(task.name, seat, run)} lacks "
                                          f"{len(lacking)} of the protocol's {len(seeds)} seeds (e.g. {lacking[:3]})")


def _spec(env_id: str):
    return spec(env_id)


def audit(episodes: list, proto: Protocol, sample: int | None, audit_seed: int | None) -> tuple[int, int]:
    """Replay every episode (or ``sample`` random ones) step by step from its transcript:

    * a step of a dead agent (terminated or truncated) is ``None``, and only such a step is;
    * a live agent's step is a move of the type the env defines: an ``int`` index that the action mask allows in
      discrete mode, a string in text mode;
    * with ``proto.seeded_moves``, each move of the protocol's opponent is re-derived (the opponent policy is asked
      again with the seed of that step, see :func:`leaderboard.evaluate.opponent_for`) and must be the same move;
    * the replayed rewards and team rewards equal the recorded ones, and the episode is over at the end.

    Returns (episodes replayed, opponent moves re-derived)."""
    if sample is None or sample >= len(episodes):
        chosen = list(range(len(episodes)))
    else:
        rng = random.Random(audit_seed) if audit_seed is not None else random.SystemRandom()
        chosen = sorted(rng.sample(range(len(episodes)), sample))
    tasks = {t.name: t for t in proto.tasks}
    opponents: dict[tuple[str, str, int], Any] = {}
    envs: dict[tuple[str, str], Any] = {}       # one env per (env id, kwargs), reset for each episode
    rederived = 0
    for i in chosen:
        line, e = episodes[i]
        where = f"{EPISODES_FILE}:{line}"
        task_name, seat, run = parse_run_label(e.run_id)
        task = tasks[task_name]
        opponent = None
        if proto.seeded_moves and seat != "all":
            key = (task.name, seat, run)
            if key not in opponents:
                opponents[key] = opponent_for(proto, task, run)
            opponent = opponents[key]
        totals, env, n = _replay(e, where, seat, opponent, envs)
        rederived += n
        if not env.done:
            raise SubmissionError(f"{where}: the transcript does not replay to the end of the episode")
        for a, r in totals.items():
            if abs(r - e.rewards.get(a, math.nan)) > TOL:
                raise SubmissionError(f"{where}: replay gives {a} the reward {r!r}, the episode records "
                                      f"{e.rewards.get(a)!r}")
        replayed = {k: float(v) for k, v in env.team_rewards().items()}
        if set(replayed) != set(e.team_rewards) or any(abs(v - e.team_rewards[k]) > TOL for k, v in replayed.items()):
            raise SubmissionError(f"{where}: replay gives the team rewards {replayed}, the episode records "
                                  f"{e.team_rewards}")
        infos = json_safe({a: env.infos[a] for a in env.agents if a in env.infos})
        if canonical_sha256(infos) != e.final_infos.get("sha256"):     # (_kept reduced them to their hash)
            raise SubmissionError(f"{where}.final_infos: not the infos the replayed episode ends with "
                                  f"({short_repr(infos, 160)})")
    return len(chosen), rederived


def _replay(e, where: str, seat: str, opponent, envs: dict) -> tuple[dict[str, float], Any, int]:
    """Replay ``e``'s transcript (see :func:`_audit`): the rewards it gives each agent, the env at its end, and the
    opponent moves re-derived. ``envs``: made envs by (env id, kwargs), reused (``reset(seed)`` starts afresh)."""
    tr = e.transcript
    try:
        key = (tr["env_id"], json.dumps(tr["kwargs"], sort_keys=True))
        env = envs.get(key)
        if env is None:
            env = envs[key] = make(tr["env_id"], **tr["kwargs"])
        env.reset(seed=tr["seed"])
    except Exception as exc:  # noqa: BLE001 - any failure of a submitted transcript is a rejection
        raise SubmissionError(f"{where}.transcript: the env does not start ({type(exc).__name__}: {exc})") from None
    discrete = env.action_mode == "discrete"
    totals = {a: 0.0 for a in env.possible_agents}
    rederived = 0
    for step, action in enumerate(tr["actions"]):
        w = f"{where}.transcript.actions[{step}]"
        if env.done:
            raise SubmissionError(f"{w}: the transcript goes on after the episode ended")
        agent = env.agent_selection
        dead = bool(env.terminations.get(agent) or env.truncations.get(agent))
        if dead:
            if action is not None:
                raise SubmissionError(f"{w}: {agent} is done, so its step is None; the transcript has {action!r}")
        elif action is None:
            raise SubmissionError(f"{w}: None is a dead agent's step, but {agent} is live and must move")
        elif discrete:
            if isinstance(action, bool) or not isinstance(action, int):
                raise SubmissionError(f"{w}: {agent}'s move must be an action index (int) in discrete mode, got "
                                      f"{short_repr(action, 60)}")
            legal = [int(x) for x in np.flatnonzero(env.action_mask(agent))]
            if action not in legal:
                raise SubmissionError(f"{w}: {agent}'s move {action} is not legal now; legal indices: {legal}")
        elif not isinstance(action, str):
            raise SubmissionError(f"{w}: {agent}'s move must be text (a string) in text mode, got "
                                  f"{short_repr(action, 60)}")
        if opponent is not None and not dead and agent != seat:
            legal_text = tuple(env.legal_actions(agent))
            request = request_for(env, agent, opponent.observes, key=(int(tr["seed"]), 0, step))
            try:
                move = env_action(env, agent, opponent.generate([request])[0].action, legal_text)
            except Exception as exc:  # noqa: BLE001
                raise SubmissionError(f"{w}: the protocol's opponent {opponent.name} fails on this state "
                                      f"({type(exc).__name__}: {exc})") from None
            if json_safe(move) != action:
                raise SubmissionError(f"{w}: {agent} is the protocol's opponent {opponent.name}; re-derived from the "
                                      f"seed it plays {json_safe(move)!r}, the transcript has {action!r} (a move the "
                                      f"submitter does not own was changed, or the task, seat or opponent relabelled)")
            rederived += 1
        try:
            env.step(action)
        except Exception as exc:  # noqa: BLE001
            raise SubmissionError(f"{w}: the transcript does not replay ({type(exc).__name__}: {exc})") from None
        for a, r in env.rewards.items():
            totals[a] = totals.get(a, 0.0) + float(r)
    return totals, env, rederived
