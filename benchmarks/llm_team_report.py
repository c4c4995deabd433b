"""The reading side of issue 43 item 3's campaign (``benchmarks/llm_team.py``): what the kept runs say. Every
function reads only ``OUT/<method>/seed<k>/metrics.jsonl`` (the held-out ``eval_start/...`` and ``eval/...`` rows the
trainer logs), so a campaign spread over machines reads the same once its runs' metrics are copied back.

* :func:`curves`: method -> seed -> updates done -> the held-out metrics at that checkpoint;
* :func:`report`: the means per checkpoint, each seed's start and end, and the design's family of paired comparisons
  (each method against its start, each against the first method), Holm over the family;
* :func:`recheck`: the pre-registered re-check on fresh seeds of what separated;
* :func:`runs_table`: a row per run; :func:`plot`: every run's curve, a panel per method.

``python benchmarks/llm_team.py --report DIR [--seeds S] [--recheck S2] [--runs] [--plot PNG]`` prints them."""

from __future__ import annotations

from pathlib import Path

__all__ = ["METRICS", "comparisons", "curves", "plot", "read_metrics", "recheck", "report", "runs_table"]

# the held-out metrics the trainer's evaluator logs (``eval/<name>``), each with the words a table or figure uses
METRICS = {"team_reward/team": "team reward", "p_follow": "P(follow)", "p_pass": "P(pass)",
           "mi_clue_message": "I(clue; message), nats"}


def read_metrics(run: Path) -> list[dict]:
    """The rows of ``run/metrics.jsonl`` (none when it is absent), read with the package's bounded readers (the
    file within :data:`baselines.outputs.JSON_CAP` bytes, each line within its nesting bound). A line that is not a
    JSON object (a run killed while writing it, an edited file) is a ``ValueError`` naming the file and line, never a
    half-read campaign; so is a file over the cap."""
    path = run / "metrics.jsonl"
    if not path.is_file():
        return []
    from baselines.outputs import JSON_CAP, loads_bounded, read_capped

    rows = []
    text = read_capped(path, JSON_CAP, "metrics.jsonl").decode("utf-8", errors="replace")
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = loads_bounded(line, f"{path}:{i}")
        except ValueError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("step"), int):
            raise ValueError(  # noqa: TRY004 (bad file content, not a bad argument)
                f"{path}, line {i}: not a step's metrics (a JSON object with an integer 'step'); the file was cut "
                "or edited. Restore it, or train the run again")
        rows.append(row)
    return rows


def curves(out: Path) -> dict[str, dict[int, dict[int, dict[str, float]]]]:
    """method -> seed -> updates done (0: untrained) -> the held-out metrics at that checkpoint."""
    found: dict[str, dict[int, dict[int, dict[str, float]]]] = {}
    for run in sorted(out.glob("*/seed*")):
        if run.parent.name.startswith("_") or not run.is_dir():   # the shared solver phase is not a method, and
            continue                                                # OUT/fidelity/seed<k>.json no run
        rows = read_metrics(run)
        if not rows:
            continue
        points: dict[int, dict[str, float]] = {}
        for row in rows:
            for prefix, updates in (("eval_start/", 0), ("eval/", row["step"] + 1)):
                got = {m: row[prefix + m] for m in METRICS if prefix + m in row}
                if got:
                    points[updates] = got
        found.setdefault(run.parent.name, {})[int(run.name[len("seed"):])] = points
    return found


def runs_table(out: Path, methods: list[str] | None = None, metric: str = "team_reward/team") -> str:
    """One row per run under ``out``: ``metric`` at every held-out checkpoint, P(pass) and I(clue; message) at its
    last, the thinker's batch entropy (``policy_entropy/thinker``: of the batch each step plays) before the first
    update, after it and at the last step, and its wall time (the sum of its steps' times + of its evaluations'
    times, in minutes). Runs stopped part-way are shown where they are."""
    _check(metric)
    data = curves(out)
    methods = [m for m in (methods or sorted(data)) if m in data]
    done = sorted({k for m in methods for pts in data[m].values() for k in pts})
    lines = [f"Every run: held-out {metric} after " + " / ".join(map(str, done)) + " updates, the last checkpoint's "
             "P(pass) and I(clue; message), the thinker's batch entropy at the first step, the second (after one "
             "update) and the last, wall minutes (steps + evaluations):", "",
             "| method | seed | " + " / ".join(map(str, done)) + " | P(pass) | I | entropy | wall |",
             "|---|---:|---|---:|---:|---|---|"]
    for m in methods:
        for s, pts in sorted(data[m].items()):
            rows = read_metrics(out / m / f"seed{s}")
            last = pts[max(pts)]
            ent = [r["policy_entropy/thinker"] for r in rows if "policy_entropy/thinker" in r]
            step = sum(r.get("time/step", 0.0) for r in rows) / 60
            evals = sum(r.get("eval/time", 0.0) + r.get("eval_start/time", 0.0) for r in rows) / 60
            curve = " / ".join(f"{pts[k][metric]:.3f}" if k in pts else "-" for k in done)
            lines.append(f"| {m} | {s} | {curve} | {last['p_pass']:.3f} | {last['mi_clue_message']:.3f} | "
                         + (" / ".join(f"{e:.2f}" for e in ent[:2] + ent[2:][-1:]) or "-")
                         + f" | {step:.0f} + {evals:.0f} min |")
    return "\n".join(lines)


def _check(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r} is not one of {list(METRICS)}")
    return metric


def _curves(out: Path, seeds: list[int] | None) -> dict[str, dict[int, dict[int, dict[str, float]]]]:
    """:func:`curves`, only the runs of ``seeds`` (all when None)."""
    data = {m: {s: pts for s, pts in by_seed.items() if seeds is None or s in seeds}
            for m, by_seed in curves(out).items()}
    return {m: by_seed for m, by_seed in data.items() if by_seed}


def _budgets(data: dict, methods: list[str], at: int | None) -> dict[str, int]:
    """The updates each method is compared after: ``at``, or the last checkpoint any of its seeds reached."""
    return {m: at if at is not None else max(k for pts in data[m].values() for k in pts) for m in methods}


def _pairs(data: dict, methods: list[str], last: dict[str, int], metric: str) -> list[tuple]:
    """The design's family as ``(a, b, xa, xb)``: each method after ``last[m]`` updates against its own untrained
    start, then each against the first method at the same budget, paired by the seeds both sides finished (two at
    least)."""
    final = {m: {s: pts[last[m]][metric] for s, pts in data.get(m, {}).items() if last[m] in pts} for m in methods}
    start = {m: {s: pts[0][metric] for s, pts in data.get(m, {}).items() if 0 in pts} for m in methods}
    out = []
    for m in methods:
        seeds = sorted(set(final[m]) & set(start[m]))
        if len(seeds) >= 2:
            out.append((f"{m} after {last[m]} updates", "its untrained start", [final[m][s] for s in seeds],
                        [start[m][s] for s in seeds]))
    ref = methods[0]
    for m in methods[1:]:
        seeds = sorted(set(final[m]) & set(final[ref]))
        if len(seeds) >= 2 and last[m] == last[ref]:
            out.append((m, ref, [final[m][s] for s in seeds], [final[ref][s] for s in seeds]))
    return out


def comparisons(data: dict, methods: list[str], last: dict[str, int], metric: str) -> list:
    """:func:`_pairs` as uncorrected :class:`leaderboard.verdicts.Comparison` records (two-sided)."""
    from leaderboard.verdicts import comparison

    return [comparison(a, b, f"held-out {metric}", xa, xb) for a, b, xa, xb in _pairs(data, methods, last, metric)]


def recheck(out: Path, methods: list[str], first: list[int], fresh: list[int], at: int | None = None,
            metric: str = "team_reward/team") -> str:
    """The campaign's re-check, as fixed before seeds 6-10 finished (RESULTS.md, "The campaign's re-check on fresh
    seeds"): the comparisons of :func:`report`'s family that separate on ``first`` (Holm over the whole family) are
    tested again on ``fresh`` alone, paired by seed, with the exact sign-flip test one-sided in the direction found
    and Holm over those k; one is "re-checked" where that Holm p is below 0.05 and the one-sided 95% t-bound
    excludes 0 on the same side. The design's number of fresh seeds is the fewest n with k / 2^n < 0.05."""
    from leaderboard.stats import holm, mean_ci, sign_flip_test
    from leaderboard.verdicts import holm_family, verdict

    _check(metric)
    if set(first) & set(fresh):
        raise ValueError(f"the re-check's seeds must be fresh: {sorted(set(first) & set(fresh))} are in both")
    base = _curves(out, first)
    methods = [m for m in methods if m in base]
    if not methods:
        return f"no runs of seeds {first} under {out}"
    last = _budgets(base, methods, at)
    family = holm_family(comparisons(base, methods, last, metric))
    found = [(c, v) for c, v in ((c, verdict(c)) for c in family) if v != "not separated"]
    head = (f"Seeds {first[0]}-{first[-1]}" if first == list(range(first[0], first[-1] + 1)) else f"Seeds {first}")
    if not found:
        return (f"{head}: none of the {len(family)} comparisons separates (Holm over {len(family)}): "
                "nothing to re-check.")
    k = len(found)
    need = next(n for n in range(1, 64) if k / 2 ** n < 0.05)
    again = {(a, b): (xa, xb) for a, b, xa, xb in _pairs(_curves(out, fresh), methods, last, metric)}
    rows, ps = [], []
    for c, v in found:
        xa, xb = again.get((c.a, c.b), ([], []))
        d = [x - y for x, y in zip(xa, xb)]
        if len(d) < 2:
            rows.append((c, v, d, None, None, None))
            ps.append(1.0)
            continue
        side = "greater" if v == "above" else "less"
        p1 = sign_flip_test(d, alternative=side)[0]
        _, low, high = mean_ci(d, 0.90)          # the one-sided 95% t-bound is an end of the two-sided 90% interval
        rows.append((c, v, d, p1, low if side == "greater" else high, sign_flip_test(d)[0]))
        ps.append(p1)
    adjusted = holm(ps)
    lines = [(f"{head}: {k} of the {len(family)} comparisons separate (Holm over {len(family)}); the re-check tests "
              f"them on fresh seeds {fresh} alone, one-sided in the direction found, Holm over {k}; the design needs "
              f"{need} fresh seeds for {k} (1 / 2^n x {k} < 0.05):"), "",
             ("| comparison | found | fresh n | difference [95% t] | bound (one-sided 95%) | p (one-sided) | Holm p | "
              "p (two-sided) | re-check |"), "|---|---|---:|---|---:|---:|---:|---:|---|"]
    for (c, v, d, p1, bound, p2), q in zip(rows, adjusted):
        was = f"{v} ({c.diff:+.3f}, n {c.n}, Holm p {c.p_holm:.4f})"
        if p1 is None:
            lines.append(f"| {c.a} - {c.b} | {was} | {len(d)} | | | | | | waiting |")
            continue
        mean, low, high = mean_ci(d)
        holds = q < 0.05 and (bound > 0 if v == "above" else bound < 0)
        result = ("re-checked" if holds else "not re-checked") + ("" if len(d) >= need else
                                                                     f" (so far: {len(d)} of {need} seeds)")
        lines.append(f"| {c.a} - {c.b} | {was} | {len(d)} | {mean:+.3f} [{low:+.3f}, {high:+.3f}] | {bound:+.3f} | "
                     f"{p1:.4f} | {q:.4f} | {p2:.4f} | {result} |")
    return "\n".join(lines)


def plot(out: Path, path: Path, methods: list[str], metric: str = "team_reward/team",
         seeds: list[int] | None = None) -> Path:
    """``path``: a PNG of every run's held-out ``metric`` against the thinker's updates, a panel per method, each
    seed a thin line and the mean a thick one (:func:`leaderboard.figures.seed_curves`)."""
    import base64

    from leaderboard.render import plots
    from leaderboard.style import Palette

    name = METRICS[_check(metric)]
    data = _curves(out, seeds)
    methods = [m for m in methods if m in data]
    if not methods:
        raise ValueError(f"no runs with held-out evaluations under {out}")
    panels = {m: {s: (sorted(pts), [pts[k][metric] for k in sorted(pts)]) for s, pts in data[m].items()}
              for m in methods}
    refs = {"optimum 0.9": 0.9, "chance 0.25": 0.25} if metric == "team_reward/team" else None
    fig = plots().seed_curves(panels, Palette(methods), "seed-curves", "thinker updates",
                              f"held-out {name} (exact)",
                              f"Held-out {metric} (exact) of every run, by method", refs=refs)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(fig.png))
    return path


def report(out: Path, methods: list[str] | None = None, at: int | None = None,
           metric: str = "team_reward/team", seeds: list[int] | None = None) -> str:
    from leaderboard.verdicts import holm_family, verdict

    _check(metric)
    data = _curves(out, seeds)
    methods = [m for m in (methods or sorted(data)) if m in data]
    if not methods:
        return f"no runs with held-out evaluations under {out}"
    lines = [("Held-out means over the seeds finished at each checkpoint (R: team reward, optimum 0.9 in expectation "
              "and 0.9375 on the campaign's 32 held-out episodes, 30 of whose clues are right; chance 0.25; "
              "I in nats):"),
             "", "| method | updates | n | R | P(follow) | P(pass) | I(clue; message) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for m in methods:
        for k in sorted({k for pts in data[m].values() for k in pts}):
            rows = [pts[k] for pts in data[m].values() if k in pts]
            means = [sum(r[x] for r in rows) / len(rows) for x in METRICS]
            lines.append(f"| {m} | {k} | {len(rows)} | " + " | ".join(f"{v:.3f}" if i < 3 else f"{v:.4f}"
                                                                    for i, v in enumerate(means)) + " |")
    last = _budgets(data, methods, at)
    seeds_seen = sorted({s for m in methods for s in data[m]})
    lines += ["", (f"Per seed, held-out {metric}: untrained start -> after each method's last checkpoint compared "
                   "(its updates; a run not there yet: where it is now, in brackets):"), "",
              "| seed | " + " | ".join(f"{m} ({last[m]})" for m in methods) + " |",
              "|---:|" + "---|" * len(methods)]
    for s in seeds_seen:
        cells = []
        for m in methods:
            pts = data[m].get(s)
            if not pts or 0 not in pts:
                cells.append("")
            elif last[m] in pts:
                cells.append(f"{pts[0][metric]:.3f} -> {pts[last[m]][metric]:.3f}")
            else:
                k = max(pts)
                cells.append(f"{pts[0][metric]:.3f} -> ({pts[k][metric]:.3f} at {k})" if k else
                             f"{pts[0][metric]:.3f} -> (started)")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    where = f"held-out {metric}"
    tests = comparisons(data, methods, last, metric)
    if tests:
        lines += ["", (f"{where}, paired by training seed, 95% t-interval, exact sign-flip p, Holm over the "
                       f"{len(tests)} comparisons:"), "",
                  "| comparison | n | difference [95% t] | p | Holm p | verdict |", "|---|---:|---|---:|---:|---|"]
        for c in holm_family(tests):
            lines.append(f"| {c.a} - {c.b} | {c.n} | {c.diff:+.3f} [{c.low:+.3f}, {c.high:+.3f}] | {c.p:.4f} | "
                         f"{c.p_holm:.4f} | {verdict(c)} |")
    else:
        lines += ["", "No paired comparison yet: each needs two seeds finished on both sides."]
    return "\n".join(lines)
