"""``python -m leaderboard fidelity METHOD``: measure credit methods against the true advantage ``A*`` of every
turn, at fixed, recorded policies, over the credit suite's families and knob sweeps (no training).

    python -m leaderboard fidelity loo --baselines broadcast,shuffled --quick            # the README demo
    python -m leaderboard fidelity mypkg.credit:MyMethod --tier micro --jobs 2

What is measured (definitions in :mod:`baselines.fidelity`). For every setting of the suite (``--tier micro``:
``credit-micro``; ``--quick``: the settings of :data:`QUICK`) and every training seed of its budget, the team is
built as the trainer builds it (:func:`baselines.train.learners.build_team`: the MLP initialised from the seed, the
setting's scripted partners), and measured at the policies ``--policies`` names:

* ``initial``: the untrained MLP;
* ``broadcast``: the weights of a ``broadcast`` training run of the setting and seed after half and all of the
  setting's budget (``broadcast@50``, ``broadcast@100``), trained once into ``OUT/policies/`` (deterministic) and
  reused by every later command with that ``--out``;
* ``reference``: the env's reference bot with a uniformly random legal move 20% of the time
  (:class:`~baselines.policies.scripted.MixedPolicy`, which reports the distribution it draws from).

Each policy is recorded in ``results.json`` (the weights' SHA-256, the training run's folder, or the bot), so another
method is measured at the identical policy, and every method of one command is measured on the same episodes.
``--batches`` training batches are played with the seeds and groups training would use
(:func:`baselines.rollout.training_seeds`, ``tasks_per_step x group_size`` episodes, the engine's run seed of that
step), once with the ground truth's ``force`` branches
(``A*``), and once per method with that method's own branches, exactly as its training would play them; the main
episodes of all those runs are the same (checked), so every method is scored on the same turns. Only the turns of
trained roles are scored.

Statistics. Per setting: fidelity = Pearson r of the method's advantages with ``A*`` over the turns, with a 95%
cluster-bootstrap interval (clusters: the task groups, across seeds and batches), the disattenuated r (divided by
the square root of ``A*``'s split-half reliability, reported per setting), sign agreement, false credit (free riding,
team umbrella), the policy-gradient cosine (mean and standard deviation over batches) and the cost (branches and
branch decisions per episode). A family's fidelity is the mean over its settings. Verdicts compare paired, over the
same turns and the same bootstrap draws of the task groups: the difference of family fidelities with its 95%
interval, and a two-sided p-value from the bootstrap standard error, adjusted by Holm's step-down method over every
comparison the command prints; a comparison is "separated" when its adjusted p is below 0.05 and its interval
excludes 0, "not separated" otherwise. ``--per-setting`` gives a verdict per setting instead of per family. Knobs
swept over three or more settings get a trend line: the slope of fidelity on the knob (on log2 of a size) with its
bootstrap interval.

Output: the table and the verdict lines (stdout), and in ``--out``: ``results.json`` (every figure, the policies'
hashes, the per-turn values), ``fidelity.md`` (the same text) and ``fidelity.png`` (fidelity against team size,
delay, clue accuracy and idle seats, with 95% bands).
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy.stats import norm

from baselines import fidelity as fid
from baselines.credit import list_credits, make_credit
from baselines.outputs import replace_text, writing
from baselines.policies.scripted import MixedPolicy
from baselines.rollout import RolloutEngine, training_seeds
from baselines.train import TrainConfig, checkpoint, train
from baselines.train.learners import build_team
from leaderboard.players import weights_sha256
from leaderboard.stats import holm
from leaderboard.suite import latest_suite, load_suite, safe_name
from leaderboard.workers import Workers
from marl_llm_envs import make
from marl_llm_envs.reference import reference_policies

__all__ = ["QUICK", "BASELINES", "plan", "measure", "summarize", "verdicts", "trends", "table", "figure", "run",
           "family_fidelity", "for_suite", "add_flags", "command"]

QUICK = ("voting/fraction/n8", "think_solve/clue/a0.8", "free_riding/idle3", "kuhn_poker/self-play")
"""The demo's subset of credit-micro: one setting per family where fidelity has something to find."""
BASELINES = ("broadcast", "loo", "coma", "none", "shuffled", "oracle")
TIER_SUITES = {"micro": "credit-micro", "small": "credit-small"}
ALPHA = 0.05


# ---------------------------------------------------------------------- the runs
POLICIES = ("initial", "broadcast", "reference")
EPSILON = 0.2        # the reference bot's policy: its move with probability 0.8, a uniformly random legal one else


def _policy_names(policies: Sequence[str], steps: int) -> list[str]:
    """``initial``, ``broadcast`` (two checkpoints of a broadcast training run at half and all of the setting's
    budget: ``broadcast@50``, ``broadcast@100``) and ``reference`` (``reference+0.2``) as spec names."""
    out = []
    for p in policies:
        if p == "initial":
            out.append(p)
        elif p == "broadcast":
            out += [f"broadcast@{max(1, steps // 2)}", f"broadcast@{steps}"]
        elif p == "reference":
            out.append(f"reference+{EPSILON}")
        else:
            raise ValueError(f"--policies: {p!r} is not one of {list(POLICIES)}")
    return out


def plan(methods: Sequence[str], tier: str = "micro", quick: bool = False, settings: Sequence[str] | None = None,
         seeds: Sequence[int] | None = None, batches: int | None = None, continuations: int = 8,
         suite: str | None = None, policies: Sequence[str] = ("initial",),
         policy_dir: str | Path = "runs/fidelity/policies") -> list[dict[str, Any]]:
    """One JSON-able spec per (setting, training seed, policy): what :func:`measure` plays."""
    if tier not in TIER_SUITES:
        raise ValueError(f"--tier {tier!r} is not one of {sorted(TIER_SUITES)}")
    key = suite or latest_suite(TIER_SUITES[tier])
    if key is None:
        raise ValueError(f"no suite for tier {tier}")
    su = load_suite(key)
    chosen = list(settings) if settings else (list(QUICK) if quick else None)
    known = {s.name for s in su.settings}
    for name in chosen or []:
        if name not in known:
            raise ValueError(f"setting {name!r} is not in {su.key}; its settings: {', '.join(sorted(known))}")
    specs = []
    for fam in su.families:
        for s in fam.settings:
            if chosen is not None and s.name not in chosen:
                continue
            b = su.budget(s)
            for seed, policy in [(sd, p) for sd in (seeds if seeds is not None else
                                                    (b["seeds"][:3] if quick else b["seeds"]))
                                 for p in _policy_names(policies, b["steps"])]:
                specs.append({"suite": su.key, "family": fam.name, "knob_name": fam.knob, "setting": s.name,
                              "knob": s.knob, "env_id": s.env_id, "env_kwargs": dict(s.env_kwargs),
                              "action_mode": su.action_mode, "model": b["model"], "mode": b["mode"],
                              "partners": s.partners, "tasks_per_step": b["tasks_per_step"],
                              "group_size": b["group_size"], "seed": int(seed),
                              "batches": int(batches or (1 if quick else 2)), "continuations": int(continuations),
                              "methods": list(methods), "policy": policy, "train_steps": b["steps"],
                              "policy_dir": str(policy_dir)})
    return specs


def _weights_sha256(team) -> str:
    """The team's weights' SHA-256 (every learner's state, in order), as a player's provenance records it."""
    return weights_sha256(*(learner.module.state_dict() for learner in team.learners))


def _trained_weights(spec: dict[str, Any], team, step: int) -> str:
    """Load into ``team`` the weights of a ``broadcast`` training run of the spec's setting and seed after ``step``
    steps (checkpoints at half and all of ``train_steps``), training it first unless a complete one is in
    ``policy_dir`` (deterministic: the same run every time); returns the run folder."""
    total = int(spec["train_steps"])
    every = max(1, total // 2)
    if step % every or not 0 < step <= total:
        raise ValueError(f"policy broadcast@{step}: the checkpoints are at steps {every} and {total}")
    run = Path(spec["policy_dir"]) / safe_name(spec["setting"]) / f"seed{spec['seed']}" / f"broadcast-{total}"
    want = run / "checkpoints" / f"step-{step:07d}"
    with writing(run, wait=True):       # another process training this run now: wait, then reuse it
        if checkpoint.latest(run / "checkpoints") is None or \
                not (run / "checkpoints" / f"step-{total:07d}").is_dir():
            for old in run.iterdir():
                shutil.rmtree(old) if old.is_dir() else old.unlink()
            train(TrainConfig(env=spec["env_id"], env_kwargs=dict(spec["env_kwargs"]),
                              action_mode=spec["action_mode"], model=spec["model"], mode=spec["mode"],
                              credit="broadcast", steps=total, tasks_per_step=spec["tasks_per_step"],
                              group_size=spec["group_size"], seed=spec["seed"], partners=spec["partners"],
                              out=str(run), save_every=every, keep_checkpoints=2, tensorboard=False))
    _, tensors = checkpoint.load(want)
    for learner, state in zip(team.learners, tensors["learners"]):
        learner.load_state_dict(state["model"])
    return str(run)


def _policies(spec: dict[str, Any], team) -> tuple[dict[str, Any], dict[str, Any]]:
    """The role -> policy map the spec's ``policy`` names, and its record (kind, weights' hash or bot, run)."""
    kind = spec["policy"]
    policies = dict(team.policies)
    if kind == "initial":
        return policies, {"kind": kind, "weights_sha256": _weights_sha256(team)}
    if kind.startswith("broadcast@"):
        run = _trained_weights(spec, team, int(kind.split("@", 1)[1]))
        return policies, {"kind": kind, "weights_sha256": _weights_sha256(team), "run": run}
    if kind.startswith("reference+"):

        bots = reference_policies(spec["env_id"])
        if not bots:
            raise ValueError(f"{spec['env_id']} has no reference bot")
        name, bot = next(iter(bots.items()))
        eps = float(kind.split("+", 1)[1])
        mixed = MixedPolicy(bot, eps, name=f"reference:{name}+{eps}")
        for role in team.trainable:
            policies[role] = mixed
        return policies, {"kind": kind, "bot": name, "epsilon": eps}
    raise ValueError(f"unknown policy {kind!r}")


def _play_key(episodes) -> list:
    return [[(t.agent, t.action) for t in e.turns] for e in episodes]


class _Played:
    """What a method's :meth:`attach` gets: the team, with the policies actually playing (a reference bot may
    stand in for the learners)."""
    def __init__(self, team, policies: dict[str, Any]) -> None:
        self.learners, self.trainable, self.policies = team.learners, team.trainable, policies


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Play one spec (a setting at one training seed's initial policy, ``batches`` training batches): the ground
    truth and every method's advantages on the same turns. A top-level function of JSON-able input and output (a
    process pool calls it)."""
    import torch  # lazy: torch, seconds to import


    torch.set_num_threads(1)
    t0 = time.perf_counter()
    kwargs = {**spec["env_kwargs"], "action_mode": spec["action_mode"]}
    cfg = TrainConfig(env=spec["env_id"], env_kwargs=dict(spec["env_kwargs"]), action_mode=spec["action_mode"],
                      model=spec["model"], mode=spec["mode"], credit="broadcast", steps=spec["batches"],
                      tasks_per_step=spec["tasks_per_step"], group_size=spec["group_size"], seed=spec["seed"],
                      partners=spec["partners"], tensorboard=False)
    env = make(spec["env_id"], **kwargs)
    team = build_team(cfg, env, sorted(set(env.roles.values())))
    policies, record = _policies(spec, team)
    roles = list(team.trainable)
    methods: dict[str, Any] = {}
    out_methods: dict[str, dict[str, Any]] = {}
    for name in spec["methods"]:
        m = make_credit(name)
        try:
            m.branches(spec["env_id"])
        except ValueError as e:
            out_methods[name] = {"skip": str(e)}
            continue
        m.attach(_Played(team, policies))
        methods[name] = m
        out_methods[name] = {"adv": [], "grad_cos": [], "branches": 0.0, "branch_decisions": 0.0, "episodes": 0}
    pool: dict = {}
    m_truth = spec["continuations"]
    truth_rows: dict[str, list] = {k: [] for k in ("a", "h1", "h2", "cluster", "role", "null", "deciding",
                                                   "exact", "abs_all")}
    truth_cost = 0
    for batch in range(spec["batches"]):
        seeds = training_seeds(spec["seed"], batch, spec["tasks_per_step"])
        run = dict(num_tasks=len(seeds), group_size=spec["group_size"], seed=spec["seed"] * 1_000_003 + batch,
                   env_kwargs=kwargs, seeds=seeds, run_id=f"step-{batch}.0")
        engine = RolloutEngine(policies, show_progress=False, env_pool=pool)
        episodes = engine.run(spec["env_id"], branches=fid.truth_branches(roles, m_truth), **run)
        truth = fid.ground_truth(episodes, policies, roles, m_truth)
        truth_cost += truth.branch_decisions
        main = _play_key(episodes)
        for i, (e, row) in enumerate(zip(episodes, truth.turns)):
            null, deciding = fid.null_turns(spec["env_id"], e)
            for k, tt in enumerate(row):
                if tt is None:
                    continue
                h1, h2 = tt.half_advantages()
                truth_rows["a"].append(tt.advantage)
                truth_rows["h1"].append(h1)
                truth_rows["h2"].append(h2)
                truth_rows["cluster"].append(batch * len(seeds) + e.group_id)
                truth_rows["role"].append(tt.role)
                truth_rows["null"].append(null[k])
                truth_rows["deciding"].append(deciding[k])
                truth_rows["exact"].append(tt.exact)
        for name, m in methods.items():
            engine = RolloutEngine(policies, show_progress=False, record_state=m.needs_state, env_pool=pool)
            eps = engine.run(spec["env_id"], branches=m.branches(spec["env_id"]), **run)
            if _play_key(eps) != main:
                raise RuntimeError(f"{spec['setting']}, seed {spec['seed']}: {name}'s run played other main episodes "
                                   "than the ground truth's (the rollout is not deterministic here)")
            adv = m.advantages(eps)
            m.update(eps)
            values = fid.turn_values(adv, truth)
            rec = out_methods[name]
            rec["adv"].extend(values.tolist())
            rec["grad_cos"].append(fid.gradient_cosine(policies, episodes, truth, values))
            cost = fid.branch_cost(eps)
            rec["branches"] += cost["branches"] * len(eps)
            rec["branch_decisions"] += cost["branch_decisions"] * len(eps)
            rec["episodes"] += len(eps)
    n_eps = spec["batches"] * spec["tasks_per_step"] * spec["group_size"]
    return {"spec": {k: v for k, v in spec.items() if k != "methods"}, "truth": truth_rows,
            "truth_branch_decisions": truth_cost / max(1, n_eps), "methods": out_methods,
            "policy": record,
            "wall_s": time.perf_counter() - t0}


# ---------------------------------------------------------------------- statistics
def summarize(results: Sequence[dict[str, Any]], reps: int = 2000) -> dict[str, Any]:
    """Per setting: the pooled turns of its seeds and every method's figures (see the module docstring)."""
    by_setting: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        s, pol = r["spec"]["setting"], r["spec"]["policy"]
        by_setting.setdefault(s if pol == "initial" else f"{s} [{pol}]", []).append(r)
    out: dict[str, Any] = {}
    for name, rs in by_setting.items():
        spec = rs[0]["spec"]
        offset, clusters = 0, []
        for r in rs:
            c = np.asarray(r["truth"]["cluster"], dtype=np.int64)
            clusters.append(c + offset)
            offset += int(c.max()) + 1 if c.size else 0
        cl = np.concatenate(clusters) if clusters else np.zeros(0, np.int64)
        cat = {k: sum((list(r["truth"][k]) for r in rs), []) for k in ("a", "h1", "h2", "role", "null", "deciding",
                                                                         "exact")}
        a, h1, h2 = (np.asarray(cat[k], np.float64) for k in ("a", "h1", "h2"))
        rel, noise = fid.reliability(h1, h2), fid.noise_sd(h1, h2)
        null, deciding = np.asarray(cat["null"], bool), np.asarray(cat["deciding"], bool)
        roles = np.asarray(cat["role"])
        row: dict[str, Any] = {"setting": spec["setting"], "policy": spec["policy"], "family": spec["family"],
                               "knob": spec["knob"], "knob_name": spec["knob_name"],
                               "env_id": spec["env_id"], "turns": int(a.size), "clusters": int(len(np.unique(cl))),
                               "seeds": [r["spec"]["seed"] for r in rs], "reliability": rel, "noise_sd": noise,
                               "exact_fraction": float(np.mean(cat["exact"])) if a.size else 0.0,
                               "truth_false_credit": fid.false_credit(a, null, deciding),
                               "truth_branch_decisions": float(np.mean([r["truth_branch_decisions"] for r in rs])),
                               "policies": [r["policy"] for r in rs], "wall_s": sum(r["wall_s"] for r in rs),
                               "methods": {}, "_a": a, "_cluster": cl}
        for m in rs[0]["methods"]:
            recs = [r["methods"][m] for r in rs]
            if "skip" in recs[0]:
                row["methods"][m] = {"skip": recs[0]["skip"]}
                continue
            x = np.asarray(sum((rec["adv"] for rec in recs), []), np.float64)
            f = fid.fidelity(x, a, cl, rel, reps=reps)
            sign, n_sign = fid.sign_agreement(x, a, max(3 * noise, 1e-9))
            cos = np.asarray([c for rec in recs for c in rec["grad_cos"]], np.float64)
            cos = cos[np.isfinite(cos)]
            n_eps = max(1, sum(rec["episodes"] for rec in recs))
            row["methods"][m] = {
                **f, "sign_agreement": sign, "sign_turns": n_sign,
                "false_credit": fid.false_credit(x, null, deciding),
                "grad_cos": float(cos.mean()) if cos.size else float("nan"),
                "grad_cos_sd": float(cos.std(ddof=1)) if cos.size > 1 else float("nan"),
                "branches": sum(rec["branches"] for rec in recs) / n_eps,
                "branch_decisions": sum(rec["branch_decisions"] for rec in recs) / n_eps,
                "by_role": {str(role): fid.pearson(x[roles == role], a[roles == role]) for role in np.unique(roles)},
                "_x": x}
        out[name] = row
    return out


def _family_boot(summary: dict[str, Any], settings: list[str], m: str, b: str, reps: int, seed: int):
    """Bootstrap replicates of the family mean fidelity of ``m`` and ``b`` over ``settings`` (paired draws)."""
    bm, bb = [], []
    for k, s in enumerate(settings):
        row = summary[s]
        boot = fid.cluster_bootstrap([row["methods"][m]["_x"], row["methods"][b]["_x"]], row["_a"], row["_cluster"],
                                     reps, seed + k)
        bm.append(boot[:, 0])
        bb.append(boot[:, 1])
    return np.mean(bm, axis=0), np.mean(bb, axis=0)


def verdicts(summary: dict[str, Any], method: str, baselines: Sequence[str], reps: int = 2000,
             seed: int = 0, per_setting: bool = False) -> list[str]:
    """Paired verdicts per family (``per_setting``: per setting): ``method`` against every baseline, then the
    control ``shuffled`` against ``broadcast`` where both were measured; Holm's correction over all of them. The
    p-value of a difference is two-sided from its bootstrap standard error (normal approximation), so that Holm's
    correction over many comparisons is not bounded by the number of bootstrap draws."""
    families: dict[str, list[str]] = {}
    for s, row in summary.items():
        at = "" if row["policy"] == "initial" else f" [{row['policy']}]"
        families.setdefault(s if per_setting else row["family"] + at, []).append(s)
    pairs = [(method, b) for b in baselines if b != method]
    if "shuffled" in (method, *baselines) and "broadcast" in (method, *baselines) \
            and ("shuffled", "broadcast") not in pairs and ("broadcast", "shuffled") not in pairs:
        pairs.append(("shuffled", "broadcast"))
    comps = []
    for fam, settings in families.items():
        for m, b in pairs:
            both = [s for s in settings if _measured(summary[s], m) and _measured(summary[s], b)]
            if not both:
                continue
            bm, bb = _family_boot(summary, both, m, b, reps, seed)
            fm = float(np.mean([summary[s]["methods"][m]["r"] for s in both]))
            fb = float(np.mean([summary[s]["methods"][b]["r"] for s in both]))
            d = bm - bb
            lo, hi = np.percentile(d, [2.5, 97.5])
            sd = float(d.std(ddof=1))
            p = float(2 * norm.sf(abs(fm - fb) / sd)) if sd > 0 else (0.0 if fm != fb else 1.0)
            comps.append((fam, both, m, b, fm, fb, float(lo), float(hi), p))
    adjusted = holm([c[-1] for c in comps])
    lines = []
    for (fam, both, m, b, fm, fb, lo, hi, p), q in zip(comps, adjusted):
        where = fam if per_setting else f"{fam} ({', '.join(both)})"
        diff = f"fidelity {fm:.2f} vs {fb:.2f}, difference {fm - fb:+.2f} [{lo:+.2f}, {hi:+.2f}]"
        if q < ALPHA and lo > 0 or q < ALPHA and hi < 0:
            word = f"{m} above {b}" if fm > fb else f"{m} below {b}"
            verdict = f"{word}: separated"
        else:
            verdict = f"{m} vs {b}: not separated"
        lines.append(f"{verdict} on {where}: {diff}; Holm-adjusted p {max(q, 1e-300):.3g} over {len(comps)} "
                     "comparisons")
    return lines


def trends(summary: dict[str, Any], methods: Sequence[str], reps: int = 2000, seed: int = 0) -> list[str]:
    """Per swept knob with three or more settings (a family's variant, e.g. voting's fraction sweep) and per method:
    the least-squares slope of fidelity on the knob (on log2 of the knob where every value is positive and the
    knob is a size: team size, delay, idle seats), with a 95% interval from the settings' cluster bootstraps."""
    variants: dict[str, list[str]] = {}
    for s, row in summary.items():
        if isinstance(row["knob"], (int, float)) and not isinstance(row["knob"], bool):
            at = "" if row["policy"] == "initial" else f" [{row['policy']}]"
            variants.setdefault(row["setting"].rsplit("/", 1)[0] + at, []).append(s)
    lines = []
    for variant, ss in variants.items():
        if len(ss) < 3:
            continue
        ss = sorted(ss, key=lambda s: summary[s]["knob"])
        knob = summary[ss[0]]["knob_name"] or "knob"
        x = np.asarray([float(summary[s]["knob"]) for s in ss])
        logged = knob in ("n_voters", "delay", "idle_seats") and bool((x > 0).all())
        if logged:
            x = np.log2(x)
        xc = x - x.mean()
        for m in methods:
            if not all(_measured(summary[s], m) for s in ss):
                continue
            boot = np.stack([fid.cluster_bootstrap([summary[s]["methods"][m]["_x"]], summary[s]["_a"],
                                                   summary[s]["_cluster"], reps, seed + k)[:, 0]
                             for k, s in enumerate(ss)], axis=1)                   # (reps, settings)
            r = np.asarray([summary[s]["methods"][m]["r"] for s in ss])
            slope = float(xc @ r / (xc @ xc))
            lo, hi = np.percentile(boot @ xc / (xc @ xc), [2.5, 97.5])
            word = "falls" if hi < 0 else "rises" if lo > 0 else "no trend at 95%"
            lines.append(f"{m} on {variant}: fidelity slope {slope:+.4f} per {'log2 ' if logged else ''}{knob} "
                         f"[{lo:+.4f}, {hi:+.4f}] over {knob} = {', '.join(str(summary[s]['knob']) for s in ss)}: "
                         f"{word}")
    return lines


def _measured(row: dict[str, Any], m: str) -> bool:
    return m in row["methods"] and "skip" not in row["methods"][m]


def _fmt(v: float, digits: int = 2) -> str:
    return "-" if v is None or not np.isfinite(v) else f"{v:.{digits}f}"


def table(summary: dict[str, Any]) -> str:
    """The per-setting table (text, at most 120 columns a line)."""
    lines = []
    for s, row in summary.items():
        lines.append(f"{s}: {row['turns']} turns in {row['clusters']} task groups, seeds {row['seeds']}; A* "
                     f"reliability {_fmt(row['reliability'], 3)}, {row['exact_fraction']:.0%} exact")
        lines.append(f"  {'method':<12} {'fidelity [95% CI]':<22} {'disatt.':>7} {'sign':>5} {'false cr.':>9} "
                     f"{'grad cos (sd)':>14} {'branches/ep':>11} {'decisions/ep':>12}")
        for m, v in row["methods"].items():
            if "skip" in v:
                lines.append(f"  {m:<12} not applicable: {v['skip'][:90]}")
                continue
            ci = f"{v['r']:+.2f} [{v['low']:+.2f}, {v['high']:+.2f}]"
            cos = f"{_fmt(v['grad_cos'])} ({_fmt(v['grad_cos_sd'])})"
            lines.append(f"  {m:<12} {ci:<22} {_fmt(v['disattenuated']):>7} {_fmt(v['sign_agreement']):>5} "
                         f"{_fmt(v['false_credit']):>9} {cos:>14} {v['branches']:>11.1f} "
                         f"{v['branch_decisions']:>12.1f}")
    return "\n".join(lines)


def figure(summary: dict[str, Any], path: str | Path) -> Path | None:
    """Fidelity against each swept knob (team size, delay, clue accuracy, idle seats), one panel per family with
    more than one setting, a 95% band per method; ``None`` when no family sweeps a knob here."""
    families: dict[str, list[str]] = {}
    for s, row in summary.items():
        if isinstance(row["knob"], (int, float)) and not isinstance(row["knob"], bool) and row["policy"] == "initial":
            families.setdefault(row["family"], []).append(s)
    families = {f: v for f, v in families.items() if len(v) > 1}
    if not families:
        return None
    import matplotlib  # lazy: matplotlib, slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib, slow to import

    fig, axes = plt.subplots(1, len(families), figsize=(4.5 * len(families), 4.2), squeeze=False)
    for ax, (fam, settings) in zip(axes[0], families.items()):
        variants: dict[str, list[str]] = {}
        for s in settings:      # voting's fraction and plurality sweeps are two lines of one family
            variants.setdefault(summary[s]["setting"].rsplit("/", 1)[0], []).append(s)
        methods = sorted({m for s in settings for m in summary[s]["methods"] if _measured(summary[s], m)})
        for vi, (variant, ss) in enumerate(variants.items()):
            ss = sorted(ss, key=lambda s: summary[s]["knob"])
            for mi, m in enumerate(methods):
                pts = [(summary[s]["knob"], summary[s]["methods"][m]) for s in ss if _measured(summary[s], m)]
                if not pts:
                    continue
                k = [p[0] for p in pts]
                style = "-" if vi == 0 else "--"
                line, = ax.plot(k, [p[1]["r"] for p in pts], style, marker="o", color=f"C{mi}",
                                label=m if vi == 0 else None)
                ax.fill_between(k, [p[1]["low"] for p in pts], [p[1]["high"] for p in pts], color=line.get_color(),
                                alpha=0.15)
        knob = summary[settings[0]]["knob_name"] or "setting"
        if knob in ("n_voters", "idle_seats", "delay"):
            ax.set_xscale("log", base=2)
        ax.set_xlabel(knob)
        ax.set_ylabel("fidelity (corr. with A*)")
        ax.set_title(fam + ("" if len(variants) == 1 else " (" + " / ".join(
            f"{'solid' if i == 0 else 'dashed'}: {v}" for i, v in enumerate(variants)) + ")"), fontsize=8)
        ax.axhline(0, color="grey", lw=0.5)
    handles, labels = axes[0][0].get_legend_handles_labels()
    ncol = min(len(labels), 3 * len(families))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8)
    fig.tight_layout(rect=(0, 0.06 * math.ceil(len(labels) / ncol) + 0.02, 1, 1))
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _public(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without its private arrays, as JSON."""
    out = {}
    for s, row in summary.items():
        r = {k: v for k, v in row.items() if not k.startswith("_")}
        r["methods"] = {m: {k: v for k, v in mv.items() if not k.startswith("_")} for m, mv in row["methods"].items()}
        out[s] = r
    return out


def run(method: str, baselines: Sequence[str], tier: str = "micro", quick: bool = False, out: str | Path = "",
        jobs: int = 1, settings: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
        batches: int | None = None, continuations: int = 8, per_setting: bool = False,
        policies: Sequence[str] = ("initial",), suite: str | None = None) -> dict[str, Any]:
    """Plan, measure (in ``jobs`` processes), summarize, and write ``results.json``, ``fidelity.md`` and
    ``fidelity.png`` into ``out`` (when given). Returns ``{"summary", "verdicts", "text"}``. ``suite``: a suite key
    or file of ``tier`` to measure on (default: the tier's newest)."""
    methods = list(dict.fromkeys([method, *baselines]))
    specs = plan(methods, tier, quick, settings, seeds, batches, continuations, suite=suite, policies=policies,
                 policy_dir=Path(out or "runs/fidelity") / "policies")
    t0 = time.perf_counter()
    with Workers(jobs) as workers:
        results = workers.map(measure, specs, progress=False)
    wall = time.perf_counter() - t0
    summary = summarize(results)
    lines = verdicts(summary, method, [b for b in baselines if b != method], per_setting=per_setting)
    slopes = trends(summary, methods)
    text = "\n".join([f"credit fidelity of {method} on {specs[0]['suite']}" + (" (quick subset)" if quick else "")
                      + f": {len(specs)} runs (setting x seed, initial policies), {wall:.0f} s wall", "",
                      table(summary), "", "Verdicts (paired over the same turns; 95% cluster bootstrap over task "
                      "groups; Holm's correction over the comparisons printed):", *lines]
                     + (["", "Trends (fidelity against the swept knob; 95% cluster bootstrap):", *slopes]
                        if slopes else []))
    if out:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        replace_text(out / "results.json", json.dumps({"method": method, "baselines": list(baselines),
                                                      "summary": _public(summary), "verdicts": lines,
                                                      "trends": slopes,
                                                      "wall_s": wall}, indent=1, default=float))
        replace_text(out / "fidelity.md", text + "\n")
        figure(summary, out / "fidelity.png")
    return {"summary": summary, "verdicts": lines, "trends": slopes, "text": text, "wall_s": wall}


def family_fidelity(summary: dict[str, Any], reps: int = 2000, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per method and family, at the initial policy: the family's fidelity (the mean of its settings' ``r``, as the
    verdicts compare it) with a 95% interval from the settings' cluster bootstraps (the mean of independent
    replicates, one per setting, as :func:`_family_boot` draws them): ``{method: {family: {"r", "low", "high",
    "settings"}}}``. A figure that is not finite (a method whose advantages are constant) is ``None``."""
    families: dict[str, list[str]] = {}
    for s, row in summary.items():
        if row["policy"] == "initial":
            families.setdefault(row["family"], []).append(s)
    out: dict[str, dict[str, Any]] = {}
    methods = list(dict.fromkeys(m for row in summary.values() for m in row["methods"]))
    for fam, settings in families.items():
        for m in methods:
            both = [s for s in settings if _measured(summary[s], m)]
            if not both:
                continue
            boot = np.mean([fid.cluster_bootstrap([summary[s]["methods"][m]["_x"]], summary[s]["_a"],
                                                  summary[s]["_cluster"], reps, seed + k)[:, 0]
                            for k, s in enumerate(both)], axis=0)
            r = float(np.mean([summary[s]["methods"][m]["r"] for s in both]))
            lo, hi = np.percentile(boot, [2.5, 97.5]) if np.isfinite(boot).all() else (math.nan, math.nan)
            out.setdefault(m, {})[fam] = {k: (float(v) if math.isfinite(v) else None)
                                          for k, v in (("r", r), ("low", lo), ("high", hi))} | {"settings": both}
    return out


def for_suite(name: str | Path, method: str, baselines: Sequence[str], out: str | Path, jobs: int = 1
              ) -> dict[str, Any]:
    """``benchmark-credit``'s fidelity report beside a suite's training outcome: ``method`` and ``baselines`` at the
    initial policy on the suite's families (a quick suite: the quick subset, as ``fidelity METHOD --quick``; else
    every setting of that suite, as ``fidelity METHOD --tier TIER``), written into ``out``. Returns :func:`run`'s
    result with ``"families"`` (:func:`family_fidelity`), ``"suite"`` (the suite measured) and ``"quick"``.
    ``name``: the suite's key or file, as ``benchmark-credit`` ran it."""
    suite = load_suite(name)
    if suite.tier not in TIER_SUITES:
        raise ValueError(f"fidelity: the {suite.tier} tier has no fidelity measurement (micro and small do)")
    quick = suite.id.endswith("-quick")
    result = run(method, baselines, tier=suite.tier, quick=quick, out=out, jobs=jobs,
                 suite=None if quick else str(name))
    measured = next(iter(result["summary"].values()))
    return {**result, "families": family_fidelity(result["summary"]), "quick": quick,
            "suite": latest_suite(TIER_SUITES[suite.tier]) if quick else suite.key,
            "settings": sorted({row["setting"] for row in result["summary"].values()}),
            "seeds": measured["seeds"]}


# ---------------------------------------------------------------------- the command
def add_flags(p) -> None:

    p.add_argument("method", help=f"the method under test: a registered name ({', '.join(list_credits())}) or "
                                  "package.module:ClassName")
    p.add_argument("--tier", default="micro", choices=sorted(TIER_SUITES), help="the suite's tier (default: micro)")
    p.add_argument("--baselines", default=",".join(BASELINES), help="comma-separated methods to compare against "
                                                                      "(default: %(default)s)")
    p.add_argument("--quick", action="store_true", help=f"the demo subset ({', '.join(QUICK)}), 3 seeds, 1 batch")
    p.add_argument("--settings", default="", help="comma-separated setting names (default: all, or the quick ones)")
    p.add_argument("--seeds", default="", help="comma-separated training seeds (default: the suite's)")
    p.add_argument("--batches", type=int, default=None, help="training batches per seed (default: 2; quick: 1)")
    p.add_argument("--continuations", type=int, default=8, help="continuations per forced move for A* "
                                                                 "(default: %(default)s)")
    p.add_argument("--policies", default="initial", help="comma-separated policies to measure at: initial (the "
                   "untrained MLP), broadcast (two checkpoints of a broadcast training run of the setting: half and "
                   f"all of its budget), reference (the env's reference bot, epsilon = {EPSILON} random moves) "
                   "(default: %(default)s)")
    p.add_argument("--per-setting", action="store_true", help="verdicts per setting (default: per family, the "
                                                                "mean over its settings)")
    p.add_argument("--jobs", type=int, default=1, help="measure the runs (setting x seed) in N processes")
    p.add_argument("--out", default="runs/fidelity", help="where results.json, fidelity.md and fidelity.png go "
                                                           "(default: %(default)s)")


def command(args) -> None:
    def ints(text: str) -> list[int] | None:
        try:
            return [int(x) for x in text.split(",") if x.strip()] or None
        except ValueError:
            raise ValueError(f"--seeds {text!r}: give comma-separated ints") from None

    if args.continuations < 2:
        raise ValueError(f"--continuations must be >= 2 (A*'s reliability splits them in halves), got "
                         f"{args.continuations}")
    if args.batches is not None and args.batches < 1:
        raise ValueError(f"--batches must be >= 1, got {args.batches}")
    result = run(args.method, [b.strip() for b in args.baselines.split(",") if b.strip()], args.tier, args.quick,
                 args.out, args.jobs, [s.strip() for s in args.settings.split(",") if s.strip()] or None,
                 ints(args.seeds), args.batches, args.continuations, args.per_setting,
                 [p.strip() for p in args.policies.split(",") if p.strip()])
    print(result["text"])
    print(f"wrote {Path(args.out) / 'results.json'}, fidelity.md and fidelity.png", file=sys.stderr)
