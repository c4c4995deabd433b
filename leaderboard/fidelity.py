"""``python -m leaderboard fidelity METHOD``: measure credit methods against the true advantage ``A*`` of every
turn, at fixed, recorded policies, over the credit suite's families and knob sweeps (no training).

    python -m leaderboard fidelity loo --baselines broadcast,shuffled --quick            # the README demo
    python -m leaderboard fidelity mypkg.credit:MyMethod --tier micro --jobs 2
    python -m leaderboard fidelity ccpo_v2 --tier small --baselines broadcast,loo,coma,shuffled,oracle --jobs 2

What is measured (definitions in :mod:`baselines.fidelity`). For every setting of the suite (``--tier micro``:
``credit-micro``; ``--quick``: the settings of :data:`QUICK`; ``--tier small``: SmolLM2-135M in choice mode, every
role learning, on message credit and free riding, :mod:`leaderboard.fidelity_small`) and every training seed of its
budget, the team is built as the trainer builds it (:func:`baselines.train.learners.build_team`: the MLP initialised
from the seed or the LLM with its adapters, the setting's scripted partners), and measured at the policies
``--policies`` names (:mod:`leaderboard.fidelity_policies`): ``initial`` (untrained), ``broadcast`` (checkpoints of
a ``broadcast`` training run of the setting, trained once into ``OUT/policies/`` and reused by every later command
with that ``--out``) and ``reference`` (the env's reference bot with 20% uniformly random moves).

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
excludes 0, "not separated" otherwise. ``--per-setting`` gives a verdict per setting instead of per family (the
small tier: per setting and per role, its rows ``SETTING role=ROLE`` holding one role's turns). Knobs
swept over three or more settings get a trend line: the slope of fidelity on the knob (on log2 of a size) with its
bootstrap interval.

Output: the table and the verdict lines (stdout), and in ``--out``: ``results.json`` (every figure, the policies'
hashes, the per-turn values), ``fidelity.md`` (the same text) and ``fidelity.png`` (fidelity against team size,
delay, clue accuracy and idle seats, with 95% bands).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from scipy.stats import norm

from baselines import fidelity as fid
from baselines.credit import list_credits, make_credit
from baselines.outputs import replace_text
from baselines.rollout import RolloutEngine, training_seeds
from baselines.train.learners import build_team
from leaderboard import fidelity_small
from leaderboard.fidelity_policies import EPSILON, Played, policies_for, policy_names, train_config
from leaderboard.stats import holm
from leaderboard.suite import latest_suite, load_suite
from leaderboard.workers import Workers
from marl_llm_envs import make

__all__ = ["QUICK", "BASELINES", "TABLE_COLUMNS", "plan", "measure", "summarize", "verdicts", "trends", "table",
           "table_rows", "figure", "run",
           "family_fidelity", "for_suite", "add_flags", "command"]

QUICK = ("voting/fraction/n8", "think_solve/clue/a0.8", "free_riding/idle3", "kuhn_poker/self-play")
"""The demo's subset of credit-micro: one setting per family where fidelity has something to find."""
BASELINES = ("broadcast", "loo", "coma", "none", "shuffled", "oracle")
TIER_SUITES = {"micro": "credit-micro", "small": "credit-small"}
ALPHA = 0.05
LLM_BATCH = 64      # rows an LLM scores at once (completions do not depend on it; 2,300 rows took 15 GB)


# ---------------------------------------------------------------------- the runs
def plan(methods: Sequence[str], tier: str = "micro", quick: bool = False, settings: Sequence[str] | None = None,
         seeds: Sequence[int] | None = None, batches: int | None = None, continuations: int | None = None,
         suite: str | None = None, policies: Sequence[str] | None = None,
         policy_dir: str | Path = "runs/fidelity/policies", model: str | None = None) -> list[dict[str, Any]]:
    """One JSON-able spec per (setting, training seed, policy): what :func:`measure` plays. ``--tier small``: the
    LLM tier's settings (:mod:`leaderboard.fidelity_small`; ``model`` replaces its LLM, e.g. ``tiny`` for a smoke
    test); ``policies`` default: ``initial`` (micro), ``initial,broadcast`` (small)."""
    if tier not in TIER_SUITES:
        raise ValueError(f"--tier {tier!r} is not one of {sorted(TIER_SUITES)}")
    if tier == "small":
        if quick:
            raise ValueError("--quick is the micro tier's demo subset; the small tier is two settings already")
        return fidelity_small.plan_small(methods, settings, seeds, batches, continuations,
                                         policies or ("initial", "broadcast"), policy_dir,
                                         model or fidelity_small.MODEL)
    if model:
        raise ValueError(f"--model {model!r}: the micro tier's policies are the suite's MLPs; --model is for "
                         "--tier small")
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
            marks = list(dict.fromkeys([max(1, b["steps"] // 2), b["steps"]]))
            for seed, policy in [(sd, p) for sd in (seeds if seeds is not None else
                                                    (b["seeds"][:3] if quick else b["seeds"]))
                                 for p in policy_names(policies or ("initial",), marks)]:
                specs.append({"suite": su.key, "family": fam.name, "knob_name": fam.knob, "setting": s.name,
                              "knob": s.knob, "env_id": s.env_id, "env_kwargs": dict(s.env_kwargs),
                              "action_mode": su.action_mode, "model": b["model"], "mode": b["mode"],
                              "partners": s.partners, "tasks_per_step": b["tasks_per_step"],
                              "group_size": b["group_size"], "seed": int(seed),
                              "batches": int(batches or (1 if quick else 2)),
                              "continuations": int(continuations or 8), "methods": list(methods),
                              "policy": policy, "checkpoints": marks, "policy_dir": str(policy_dir)})
    return specs


def _play_key(episodes) -> list:
    return [[(t.agent, t.action) for t in e.turns] for e in episodes]


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Play one spec (a setting at one training seed's initial policy, ``batches`` training batches): the ground
    truth and every method's advantages on the same turns. A top-level function of JSON-able input and output (a
    process pool calls it)."""
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    kwargs = {**spec["env_kwargs"], "action_mode": spec["action_mode"]}
    cfg = train_config(spec, steps=spec["batches"])
    env = make(spec["env_id"], **kwargs)
    team = build_team(cfg, env, sorted(set(env.roles.values())))
    policies, record = policies_for(spec, team)
    for learner in team.learners:       # an LLM scores at most this many rows at once: a bound on its memory
        if getattr(learner, "hf_policy", None) is not None:
            learner.hf_policy.batch_size = LLM_BATCH
    roles = list(team.trainable)
    methods: dict[str, Any] = {}
    out_methods: dict[str, dict[str, Any]] = {}
    for name in spec["methods"]:
        # a label of the spec's "variants" is a method with options ({"broadcast-maxrl": ["broadcast", {...}]});
        # the oracle control's continuations are the ground truth's (its default 8 is the micro tier's)
        credit, options = spec.get("variants", {}).get(name, (name, {}))
        m = make_credit(credit, **({"k": spec["continuations"]} if credit == "oracle" else {}), **options)
        try:
            m.branches(spec["env_id"])
        except ValueError as e:
            out_methods[name] = {"skip": str(e)}
            continue
        m.attach(Played(team, policies))
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
    """Per setting (and policy): the pooled turns of its seeds and every method's figures (see the module
    docstring). Where the specs ask ``by_role`` (the small tier), also one row per role whose ``A*`` varies
    (``"SETTING role=ROLE"``, with ``"role"`` set), when the setting has more than one such role."""
    by_setting: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        s, pol = r["spec"]["setting"], r["spec"]["policy"]
        by_setting.setdefault(s if pol == "initial" else f"{s} [{pol}]", []).append(r)
    out: dict[str, Any] = {}
    for name, rs in by_setting.items():
        offset, clusters = 0, []
        for r in rs:
            c = np.asarray(r["truth"]["cluster"], dtype=np.int64)
            clusters.append(c + offset)
            offset += int(c.max()) + 1 if c.size else 0
        cat: dict[str, Any] = {k: sum((list(r["truth"][k]) for r in rs), []) for k in ("a", "h1", "h2", "role",
                                                                                      "null", "deciding", "exact")}
        cat = {k: np.asarray(v, np.float64 if k in ("a", "h1", "h2") else bool if k in ("null", "deciding", "exact")
                             else None) for k, v in cat.items()}
        cat["cluster"] = np.concatenate(clusters) if clusters else np.zeros(0, np.int64)
        out[name] = _row(rs, cat, np.ones(cat["a"].size, bool), None, reps)
        varying = [role for role in dict.fromkeys(cat["role"].tolist()) if np.ptp(cat["a"][cat["role"] == role]) > 0]
        if rs[0]["spec"].get("by_role") and len(varying) > 1:
            for role in varying:
                out[f"{name} role={role}"] = _row(rs, cat, cat["role"] == role, role, reps)
    return out


def _row(rs: Sequence[dict[str, Any]], cat: dict[str, np.ndarray], keep: np.ndarray, role: str | None,
         reps: int) -> dict[str, Any]:
    """One row of :func:`summarize`: the turns ``keep`` of the pooled arrays ``cat``."""
    spec = rs[0]["spec"]
    a, h1, h2, cl = (cat[k][keep] for k in ("a", "h1", "h2", "cluster"))
    rel, noise = fid.reliability(h1, h2), fid.noise_sd(h1, h2)
    null, deciding, roles = cat["null"][keep], cat["deciding"][keep], cat["role"][keep]
    row: dict[str, Any] = {"setting": spec["setting"], "policy": spec["policy"], "family": spec["family"],
                           "role": role, "knob": spec["knob"], "knob_name": spec["knob_name"],
                           "env_id": spec["env_id"], "turns": int(a.size), "clusters": int(len(np.unique(cl))),
                           "seeds": [r["spec"]["seed"] for r in rs], "reliability": rel, "noise_sd": noise,
                           "exact_fraction": float(np.mean(cat["exact"][keep])) if a.size else 0.0,
                           "truth_false_credit": fid.false_credit(a, null, deciding),
                           "truth_branch_decisions": float(np.mean([r["truth_branch_decisions"] for r in rs])),
                           "policies": [r["policy"] for r in rs], "wall_s": sum(r["wall_s"] for r in rs),
                           "methods": {}, "_a": a, "_cluster": cl}
    for m in rs[0]["methods"]:
        recs = [r["methods"][m] for r in rs]
        if "skip" in recs[0]:
            row["methods"][m] = {"skip": recs[0]["skip"]}
            continue
        x = np.asarray(sum((rec["adv"] for rec in recs), []), np.float64)[keep]
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
            "by_role": {str(r): fid.pearson(x[roles == r], a[roles == r]) for r in np.unique(roles)},
            "_x": x}
    return row


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
        if per_setting or row.get("role") is None:      # a family's mean is over its settings' pooled rows
            families.setdefault(s if per_setting else row["family"] + at, []).append(s)
    pairs = [(method, b) for b in baselines if b != method]
    if "shuffled" in (method, *baselines) and "broadcast" in (method, *baselines) \
            and ("shuffled", "broadcast") not in pairs and ("broadcast", "shuffled") not in pairs:
        pairs.append(("shuffled", "broadcast"))
    comps = []
    for fam, settings in families.items():
        for m, b in pairs:
            both = [s for s in settings if is_measured(summary[s], m) and is_measured(summary[s], b)]
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
        if isinstance(row["knob"], (int, float)) and not isinstance(row["knob"], bool) and row.get("role") is None:
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
            if not all(is_measured(summary[s], m) for s in ss):
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


def is_measured(row: dict[str, Any], m: str) -> bool:
    return m in row["methods"] and "skip" not in row["methods"][m]


def _fmt(v: float, digits: int = 2) -> str:
    return "-" if v is None or not np.isfinite(v) else f"{v:.{digits}f}"


TABLE_COLUMNS = ["method", "fidelity [95% CI]", "disatt.", "sign", "false cr.", "grad cos (sd)", "branches/ep",
                 "decisions/ep"]
_WIDTHS = (-12, -22, 7, 5, 9, 14, 11, 12)          # the text table's column widths (negative: left-aligned)


def table_rows(summary: dict[str, Any]) -> list[tuple[str, list[list[str]]]]:
    """The per-setting table as cells: per setting, its caption (turns, task groups, seeds, ``A*``'s reliability)
    and one row per method in :data:`TABLE_COLUMNS` (a method that cannot run there: its name and ``not applicable:
    why`` alone). :func:`table` prints it; the suite's page shows it."""
    out = []
    for s, row in summary.items():
        caption = (f"{s}: {row['turns']} turns in {row['clusters']} task groups, seeds {row['seeds']}; A* "
                   f"reliability {_fmt(row['reliability'], 3)}, {row['exact_fraction']:.0%} exact")
        rows = []
        for m, v in row["methods"].items():
            if "skip" in v:
                rows.append([m, f"not applicable: {v['skip'][:90]}"])
                continue
            rows.append([m, f"{v['r']:+.2f} [{v['low']:+.2f}, {v['high']:+.2f}]", _fmt(v["disattenuated"]),
                         _fmt(v["sign_agreement"]), _fmt(v["false_credit"]),
                         f"{_fmt(v['grad_cos'])} ({_fmt(v['grad_cos_sd'])})", f"{v['branches']:.1f}",
                         f"{v['branch_decisions']:.1f}"])
        out.append((caption, rows))
    return out


def table(summary: dict[str, Any]) -> str:
    """The per-setting table (text, at most 120 columns a line): :func:`table_rows` in fixed-width columns."""
    def line(cells: list[str]) -> str:
        if len(cells) == 2 and cells[1].startswith("not applicable"):
            return f"  {cells[0]:<12} {cells[1]}"
        return "  " + " ".join(c.ljust(-w) if w < 0 else c.rjust(w) for c, w in zip(cells, _WIDTHS))

    lines = []
    for caption, rows in table_rows(summary):
        lines += [caption, line(TABLE_COLUMNS)] + [line(r) for r in rows]
    return "\n".join(lines)


def figure(summary: dict[str, Any], path: str | Path) -> Path | None:
    """Fidelity against each swept knob (team size, delay, clue accuracy, idle seats), one panel per family with
    more than one setting, a 95% band per method; ``None`` when no family sweeps a knob here."""
    from leaderboard.fidelity_figure import draw  # lazy: matplotlib, slow to import, only to draw

    return draw(summary, path)


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
        batches: int | None = None, continuations: int | None = None, per_setting: bool = False,
        policies: Sequence[str] | None = None, suite: str | None = None, model: str | None = None
        ) -> dict[str, Any]:
    """Plan, measure (in ``jobs`` processes), summarize, and write ``results.json``, ``fidelity.md`` and
    ``fidelity.png`` into ``out`` (when given). Returns ``{"summary", "verdicts", "text"}``. ``suite``: a suite key
    or file of ``tier`` to measure on (default: the tier's newest). The small tier's verdicts are per row (setting
    and role)."""
    methods = list(dict.fromkeys([method, *baselines]))
    specs = plan(methods, tier, quick, settings, seeds, batches, continuations, suite=suite, policies=policies,
                 policy_dir=Path(out or "runs/fidelity") / "policies", model=model)
    per_setting = per_setting or tier == "small"
    t0 = time.perf_counter()
    with Workers(jobs) as workers:
        results = workers.map(measure, specs, progress=False)
    wall = time.perf_counter() - t0
    summary = summarize(results)
    lines = verdicts(summary, method, [b for b in baselines if b != method], per_setting=per_setting)
    slopes = trends(summary, methods)
    text = "\n".join([f"credit fidelity of {method} on {specs[0]['suite']}" + (" (quick subset)" if quick else "")
                      + f": {len(specs)} runs (setting x seed x policy; policies "
                      f"{', '.join(dict.fromkeys(sp['policy'] for sp in specs))}), {wall:.0f} s wall", "",
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
        if row["policy"] == "initial" and row.get("role") is None:
            families.setdefault(row["family"], []).append(s)
    out: dict[str, dict[str, Any]] = {}
    methods = list(dict.fromkeys(m for row in summary.values() for m in row["methods"]))
    for fam, settings in families.items():
        for m in methods:
            both = [s for s in settings if is_measured(summary[s], m)]
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
    every setting of that suite, as ``fidelity METHOD --tier TIER``; a small suite: the small tier's settings, one
    per family it shares with the suite, :mod:`leaderboard.fidelity_small`), written into ``out``. Returns
    :func:`run`'s result with ``"families"`` (:func:`family_fidelity`), ``"suite"`` (the suite measured) and
    ``"quick"``. ``name``: the suite's key or file, as ``benchmark-credit`` ran it."""
    suite = load_suite(name)
    if suite.tier not in TIER_SUITES:
        raise ValueError(f"fidelity: the {suite.tier} tier has no fidelity measurement (micro and small do)")
    quick = suite.id.endswith("-quick") and suite.tier == "micro"
    small = suite.tier == "small"
    result = run(method, baselines, tier=suite.tier, quick=quick, out=out, jobs=jobs,
                 suite=None if quick or small else str(name), policies=("initial",))
    measured = next(iter(result["summary"].values()))
    return {**result, "families": family_fidelity(result["summary"]), "quick": quick,
            "suite": fidelity_small.SUITE if small else latest_suite(TIER_SUITES[suite.tier]) if quick else suite.key,
            "settings": sorted({row["setting"] for row in result["summary"].values()}),
            "seeds": measured["seeds"]}


# ---------------------------------------------------------------------- the command
def add_flags(p) -> None:

    p.add_argument("method", help=f"the method under test: a registered name ({', '.join(list_credits())}) or "
                                  "package.module:ClassName")
    p.add_argument("--tier", default="micro", choices=sorted(TIER_SUITES), help="micro: the MLP suite's settings; "
                   "small: SmolLM2-135M in choice mode on message credit and free riding (default: micro)")
    p.add_argument("--baselines", default=",".join(BASELINES), help="comma-separated methods to compare against "
                                                                      "(default: %(default)s)")
    p.add_argument("--quick", action="store_true", help=f"the demo subset ({', '.join(QUICK)}), 3 seeds, 1 batch")
    p.add_argument("--settings", default="", help="comma-separated setting names (default: all, or the quick ones)")
    p.add_argument("--seeds", default="", help="comma-separated training seeds (default: the suite's)")
    p.add_argument("--batches", type=int, default=None, help="training batches per seed (default: 2; quick: 1)")
    p.add_argument("--continuations", type=int, default=None, help="continuations per forced move for A* "
                   f"(default: 8; small tier: {fidelity_small.CONTINUATIONS}, where A* is exact or exact in value)")
    p.add_argument("--policies", default="", help="comma-separated policies to measure at: initial (the "
                   "untrained team), broadcast (checkpoints of a broadcast training run of the setting: micro, half "
                   f"and all of its budget; small, after {fidelity_small.CHECKPOINT} steps), reference (the env's "
                   f"reference bot, epsilon = {EPSILON} random moves) (default: initial; small tier: "
                   "initial,broadcast)")
    p.add_argument("--model", default=None, help=f"--tier small: the LLM of every role (default: "
                   f"{fidelity_small.MODEL}; tiny: the random-init smoke-test model)")
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

    if args.continuations is not None and args.continuations < 2:
        raise ValueError(f"--continuations must be >= 2 (A*'s reliability splits them in halves), got "
                         f"{args.continuations}")
    if args.batches is not None and args.batches < 1:
        raise ValueError(f"--batches must be >= 1, got {args.batches}")
    result = run(args.method, [b.strip() for b in args.baselines.split(",") if b.strip()], args.tier, args.quick,
                 args.out, args.jobs, [s.strip() for s in args.settings.split(",") if s.strip()] or None,
                 ints(args.seeds), args.batches, args.continuations, args.per_setting,
                 [p.strip() for p in args.policies.split(",") if p.strip()] or None, model=args.model)
    print(result["text"])
    print(f"wrote {Path(args.out) / 'results.json'}, fidelity.md and fidelity.png", file=sys.stderr)
