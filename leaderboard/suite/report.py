"""What a reader of the suite sees: the verdict in sentences, what the numbers cover, the tables (Markdown, at most
120 columns wide), the figures (radar, scaling curves, cost), the HTML page, and the suite's column and radar on
the leaderboard's board, registered with :func:`leaderboard.render.register` (see :mod:`leaderboard.suite`,
Output)."""

from __future__ import annotations

import base64
import functools
import math
import re
import textwrap
from pathlib import Path
from typing import Any, Callable


from leaderboard.escape import html_text
from leaderboard.render import PageContext, context_html, figure_html, headline_html, page_head, plots, register, \
    sensitivity_html, sensitivity_notes, verdict_html
from leaderboard.sensitivity import COLUMNS as SENSITIVITY_COLUMNS, FamilySensitivity, credit_sensitivity, \
    sensitivity_headline, sensitivity_rows, sensitivity_rule
from leaderboard.stats import aggregate_seed_scores, format_ci, mean_ci
from leaderboard.style import Palette
from leaderboard.suite.score import FAILURE_THRESHOLD, SIDE_FIGURES, failures
from leaderboard.suite.spec import Family, Setting, Suite, list_suites, load_suite
from leaderboard.verdicts import headline, suite_family, suite_verdicts

__all__ = ["TEXT_WIDTH", "board_columns", "board_radar", "comparison_text", "family_verdicts", "page_context",
           "score_tables", "suite_coverage", "suite_figures", "suite_headline", "suite_page", "suite_sensitivity",
           "write_figures"]

# ---------------------------------------------------------------------- what a reader sees: words and tables
TEXT_WIDTH = 120          # the printed comparison (comparison.md is the same text) fits a 120-column terminal


def suite_coverage(suite: Suite, scored: dict[str, Any]) -> list[str]:
    """What each number covers, in words: the units of the CI (training seeds), how a family and the aggregate
    average, and what a setting's raw score is (the training tail, or held-out evaluation against a reference)."""
    seeds = sorted({len(v["seeds"]) for v in scored["methods"].values()}) or [0]
    n = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    played = {s.play for s in suite.settings if s.name in scored["anchors"]}
    out = [f"Every score: the mean over {n} training seeds with a 95% Student-t CI (the seeds are the independent "
           f"units); normalized per setting, uniform-random play = 0 and the optimum or reference policy = 1. A "
           f"family's score of a seed is the mean over its settings; the aggregate is the mean over the families.",
           "The verdict compares two methods by their paired differences over the seeds (seed i of one with seed i "
           "of the other in each setting: the same training seeds and task streams), with a Student-t interval of "
           "the mean difference and an exact sign-flip test, Holm-corrected over every line of the verdict; "
           "\"not separated\" says the test did not reject, not that the methods are equal. The tables' unpaired "
           "intervals are secondary.",
           f"\"k/n failed\" beside a score: k of the n runs it averages (training seed x setting) ended at random's "
           f"score, a normalized score at or below {FAILURE_THRESHOLD:g}; a mean with failed runs averages learnt and "
           f"unlearnt runs."]
    blocks = [x for v in scored["methods"].values() for x in (v["aggregate"], *v["settings"].values())]
    if any(x.get("collapsed") is not None for x in blocks):
        out.append("\"k/n collapsed\": k of those n runs peaked then fell (a kept checkpoint scored well above the "
                   "final policy; the rule and its threshold are leaderboard.suite.score's).")
    if any(isinstance(x.get("best"), dict) for x in blocks):
        out.append(f"\"{BEST}\": each run scored at its best kept checkpoint instead of its final policy, a "
                   "secondary column: the score that ranks is the final policy's.")
    frac = suite.score["last_fraction"]
    if "self" in played and suite.score.get("checkpoints", 1) > 1:
        count = suite.score["eval_count"]
        out.append(f"Cooperative settings (the team plays every seat): the final policy's mean team reward on "
                   f"{count} held-out evaluation seeds (from 2**40, never trained on), not the training tail. Each "
                   f"run keeps {suite.score['checkpoints']} evenly spaced checkpoints; the best of them is chosen on "
                   f"half of those seeds and reported on the other half (the secondary best-checkpoint column).")
    elif "self" in played:
        b = suite.train
        tail = max(1, math.ceil(b["steps"] * frac))
        out.append(f"Cooperative settings (the team plays every seat): the mean team reward over the last "
                   f"{frac:.0%} of training ({tail} of {b['steps']} steps x {b['tasks_per_step'] * b['group_size']} "
                   f"fresh episodes at the suite's budget), not a held-out evaluation.")
    decisive = [s.name for s in suite.settings if s.score == "decisive_reward" and s.name in scored["anchors"]]
    if "self" in played and decisive:
        out.append(f"On {', '.join(decisive)} that reward is the noise-free decisive reward (the team reward less "
                   f"the noise the env added, which the env reports), not the noisy return.")
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


def family_verdicts(suite: Suite, scored: dict[str, Any], under_test: str | None = None) -> list[str]:
    """The comparison in sentences (:func:`leaderboard.verdicts.suite_verdicts`): ``under_test`` (default: the first
    method) against every other method by paired differences over the shared seeds, on the aggregate of the families
    both cover and on each of them ("broadcast above shuffled on team_size: paired difference ...", "broadcast vs loo
    on zero_sum: not separated (...)"), then the control check, ``broadcast`` against ``shuffled`` per family; every
    line in one Holm family, and a direction only where the Holm-adjusted test rejects."""
    return suite_verdicts(scored["methods"], under_test, [f.name for f in suite.families])


def suite_sensitivity(suite: Suite, scored: dict[str, Any], fidelity: dict[str, Any] | None = None
                      ) -> list[FamilySensitivity]:
    """Which of the suite's families measure credit (:func:`leaderboard.sensitivity.credit_sensitivity`) from the
    scored methods' per-seed family scores and, where ``benchmark-credit`` measured it (``fidelity``: its
    measurement, whose ``"families"`` hold each method's per-family fidelity), oracle against shuffled in fidelity."""
    methods = scored["methods"]
    seeds = {tuple(v["seeds"]) for v in methods.values()}
    if len(seeds) > 1:
        raise ValueError(f"the scored methods have different seed lists ({sorted(seeds)}): credit sensitivity pairs "
                         "them seed by seed (score the runs of one plan)")
    per_seed = {m: {f: x["seeds"] for f, x in v["families"].items()} for m, v in methods.items()}
    return credit_sensitivity(per_seed, [f.name for f in suite.families], (fidelity or {}).get("families"))


def suite_headline(suite: Suite, scored: dict[str, Any], under_test: str | None = None,
                   fidelity: dict[str, Any] | None = None) -> str:
    """:func:`family_verdicts` in one sentence (:func:`leaderboard.verdicts.headline` over the same corrected
    comparisons), then how many families measure credit (:func:`suite_sensitivity`), where any could be tested."""
    text = headline(suite_family(scored["methods"], under_test, [f.name for f in suite.families]))
    extra = sensitivity_headline(suite_sensitivity(suite, scored, fidelity))
    return f"{text} {extra}" if extra else text


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


def _with_failed(x: dict[str, Any], runs: int, digits: int) -> str:
    """A score's cell: mean [95% CI], then "k/n failed" (:func:`leaderboard.suite.score.failures`) where the score
    counted its failed runs, and "k/n collapsed" (runs that peaked then fell) where the score counted those (older
    results lack either count: the cell leaves it out)."""
    text = format_ci(x["ci"], digits)
    counts = [f"{x[k]}/{runs} {word}" for k, word in (("failed", "failed"), ("collapsed", "collapsed"))
              if x.get(k) is not None]
    return " ".join([text, ", ".join(counts)]) if counts else text


BEST = "best checkpoint, aggregate [95% CI]"


def _best(x: dict[str, Any], digits: int) -> str:
    """The best checkpoint's score of a block (its ``best`` field: mean [95% CI] over seeds), ``-`` where it has
    none."""
    best = x.get("best")
    return format_ci(best["ci"], digits) if isinstance(best, dict) and best.get("ci") is not None else "-"


def _family_rows(suite: Suite, scored: dict[str, Any], digits: int = 3) -> tuple[list[str], list[list[str]]]:
    """The per-family table: each method's aggregate, with the best checkpoint's aggregate as a secondary column
    where any method was scored at its best checkpoint, a column per family, runs and tokens."""
    fams = [f.name for f in suite.families]
    best = any("best" in v["aggregate"] for v in scored["methods"].values())
    cols = ["method", "aggregate"] + ([BEST] if best else []) + fams + ["runs", "train tokens",
                                                                        "counterfactual tokens"]
    rows = []
    for m, v in scored["methods"].items():
        total, branches = _tokens(v)
        n = len(v["seeds"])
        rows.append([m, _with_failed(v["aggregate"], n * len(v["settings"]), digits)] +
                    ([_best(v["aggregate"], digits)] if best else []) +
                    [_with_failed(v["families"][f], n * len(v["families"][f]["settings"]), digits)
                     if f in v["families"] else "n/a" for f in fams] +
                    [str(n * len(v["settings"])), str(total), str(branches)])
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
                    [_with_failed(scored["methods"][m]["settings"][s.name],
                                  len(scored["methods"][m]["settings"][s.name]["seeds"]), digits)
                     if s.name in scored["methods"][m]["settings"] else "n/a" for m in methods])
    return cols, rows


def _side_rows(scored: dict[str, Any], fig: str, digits: int = 3) -> tuple[list[str], list[list[str]]]:
    methods = list(scored["methods"])
    names = list(dict.fromkeys(n for m in methods for n in scored["methods"][m].get("side", {}).get(fig, {})))
    rows = [[n] + [format_ci(scored["methods"][m]["side"][fig][n]["ci"], digits)
                   if n in scored["methods"][m].get("side", {}).get(fig, {}) else "n/a" for m in methods]
            for n in names]
    return ["setting"] + methods, rows


def _skip_notes(skipped: dict[str, dict[str, str]] | None) -> list[str]:
    return [f"{m} is not applicable on {', '.join(why)} ({'; '.join(sorted(set(why.values())))})"
            for m, why in (skipped or {}).items() if why]


def _wrap(text: str, first: str = "", rest: str = "  ") -> list[str]:
    """``text`` in lines of at most 120 characters, never broken inside a bracket (a CI stays on one line)."""
    glued = re.sub(r"\[[^\[\]]{0,40}\]", lambda m: m.group(0).replace(" ", "\x00"), text)
    lines = textwrap.wrap(glued, TEXT_WIDTH, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                          break_on_hyphens=False) or [first.rstrip()]
    return [line.replace("\x00", " ") for line in lines]


def score_tables(suite: Suite, scored: dict[str, Any], skipped: dict[str, dict[str, str]] | None = None) -> str:
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
    for v in family_verdicts(suite, scored, context.under_test):
        out += _wrap(v, "- ")
    out.append("")
    for c in suite_coverage(suite, scored):
        out += _wrap(c, rest="")
    out += [""] + score_tables(suite, scored, skipped).rstrip("\n").splitlines()
    sensitivity = suite_sensitivity(suite, scored)
    if any(fs.checks for fs in sensitivity):
        out += [""] + _wrap("Which families measure credit: " + sensitivity_rule(), rest="") + [""]
        out += _fit(SENSITIVITY_COLUMNS, sensitivity_rows(sensitivity))
        for n in sensitivity_notes(sensitivity):
            out += _wrap(n, "- ")
    return "\n".join(out) + "\n"


def board_columns(board) -> list[tuple[str, Callable]]:
    """:data:`leaderboard.render.EXTRA_COLUMNS` hook: on a suite's board, the suite's own aggregate (the mean over
    families of a seed, mean over seeds, 95% t CI, as ``benchmark-credit`` prints it), from the entry's per-seed,
    per-setting scores, and its failed runs (:func:`_failed_runs`). The per-family columns are the board's per-task
    columns (a suite entry's tasks are its families)."""
    if board.protocol not in list_suites():
        return []

    def aggregate(row) -> str:
        fams = list(row.scores.values())
        seeds = min(len(f) for f in fams)
        per_seed = [sum(sum(f[i]) / len(f[i]) for f in fams) / len(fams) for i in range(seeds)]
        return format_ci(mean_ci(per_seed))

    cols = [("suite aggregate [95% t CI]", aggregate),
            (f"failed runs (score at most {FAILURE_THRESHOLD:g})", _failed_runs)]
    if any(r.collapses for r in board.rows + board.partial):
        cols.append(("collapsed runs (peaked then fell)", _collapsed_runs))
    if any(r.best for r in board.rows + board.partial):
        cols.append(("best checkpoint, suite aggregate [95% t CI]",
                     lambda row: format_ci(mean_ci(aggregate_seed_scores(row.best, list(row.best))))
                     if row.best else "-"))
    return cols


def _collapsed_runs(row) -> str:
    """A board row's "k/n collapsed" over all its runs (training seed x setting), from its entry's per-setting counts
    (``results["collapses"]``); ``-`` for an entry without them (older ones) or without a count for every setting."""
    settings = sum(len(seeds[0]) for seeds in row.scores.values() if seeds and isinstance(seeds[0], list))
    runs = sum(len(seeds[0]) * len(seeds) for seeds in row.scores.values() if seeds and isinstance(seeds[0], list))
    counts = list(row.collapses.values())
    if len(counts) != settings or not counts or \
            not all(isinstance(k, int) and not isinstance(k, bool) for k in counts):
        return "-"
    return f"{sum(counts)}/{runs} collapsed"


def _failed_runs(row) -> str:
    """A board row's "k/n failed" over all its runs (training seed x setting), counted with
    :func:`leaderboard.suite.score.failures` from the per-seed scores the board ranks on (``results["scores"]``:
    family -> seed -> one normalised score per setting), so it holds for every entry, older ones included, and cannot
    disagree with the scores; ``-`` where those are not numbers."""
    values = [v for seeds in row.scores.values() for per_seed in seeds
              for v in (per_seed if isinstance(per_seed, list) else [per_seed])]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "-"
    return f"{failures(values)}/{len(values)} failed"


# ---------------------------------------------------------------------- figures
def _variants(fam: Family) -> dict[str, list[Setting]]:
    groups: dict[str, list[Setting]] = {}
    for s in fam.settings:             # one line per method and variant (e.g. voting's two reward schemes)
        groups.setdefault(s.name.rsplit("/", 1)[0], []).append(s)
    return groups


def _lines(fam: Family, scored: dict[str, Any]) -> tuple[list[tuple], list[float], list[str]]:
    """A family's scaling lines for :func:`leaderboard.figures.scaling_figure`: per method and variant (e.g.
    voting's two reward schemes) the settings with a numeric knob, mean and 95% t interval over seeds; the knobs;
    the variants."""
    groups = _variants(fam)
    lines = []
    for m, v in scored["methods"].items():
        for variant, ss in groups.items():
            pts = sorted((s.knob, v["settings"][s.name]["ci"]) for s in ss if s.name in v["settings"]
                         and isinstance(s.knob, (int, float)) and not isinstance(s.knob, bool))
            if pts:
                lines.append((m, variant.rsplit("/", 1)[-1], [p[0] for p in pts], [p[1][0] for p in pts],
                              [p[1][1] for p in pts], [p[1][2] for p in pts]))
    knobs = [s.knob for s in fam.settings if isinstance(s.knob, (int, float)) and not isinstance(s.knob, bool)]
    return lines, knobs, [k.rsplit("/", 1)[-1] for k in groups]


SCORE_AXIS = "normalized score\n(random = 0, optimum = 1)"      # the y label of every scaling panel


def _radar(fams: list[str], means: dict[str, dict[str, float]], palette, seeds: str):
    """bsuite's radar (:func:`leaderboard.figures.radar`) of the mean family scores."""
    lo, hi = plots().radar_scale([v for m in means.values() for v in m.values()])
    return plots().radar(fams, means, palette,
                         f"Family scores (bsuite's radar): the mean over {seeds} training seeds per family, "
                         f"normalized so that random play = 0 (dashed ring) and the optimum or reference = 1 (solid "
                         f"ring), on a fixed radial scale from {lo:g} at the centre to {hi:g} at the rim (a score "
                         f"past it is drawn at the edge); a method run on only some families is drawn as its "
                         f"markers alone; the CIs are in the table.")


def board_radar(board, entries: list[dict], palette) -> list:
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
    """The page's figures (:class:`leaderboard.style.Figure`, every method in its palette style): the radar of the
    family means (bsuite's summary), one scaling figure per family that sweeps a knob over several settings (mean
    with a 95% t band over seeds), and training tokens against the aggregate."""
    out = []
    fams = [f for f in suite.families if any(f.name in v["families"] for v in scored["methods"].values())]
    seeds = "/".join(map(str, sorted({len(v["seeds"]) for v in scored["methods"].values()})))
    if fams:
        means = {m: {f: x["ci"][0] for f, x in v["families"].items()} for m, v in scored["methods"].items()}
        out.append(_radar([f.name for f in fams], means, palette, seeds))
    out += [_scaling_figure(fam, scored, palette, seeds) for fam in fams if fam.knob and len(fam.settings) >= 2]
    costed = {m: (_tokens(v)[0], v["aggregate"]["ci"]) for m, v in scored["methods"].items() if _tokens(v)[0] > 0}
    if costed:
        out.append(plots().cost_figure(costed, palette, "aggregate normalized score\n(95% t CI)",
                                       "Training cost against score: every token generated in training (main "
                                       "rollouts and counterfactual branches, all runs of the suite) against the "
                                       "aggregate with its 95% CI."))
    return out


def _scaling_figure(fam: Family, scored: dict[str, Any], palette, seeds: str):
    """One family's score against its knob as a figure of its own."""
    lines, knobs, variants = _lines(fam, scored)
    several = " (line style: the variant; colour and marker: the method)" if len(variants) > 1 else ""
    return plots().scaling_figure(f"scaling-{fam.name}", f"{fam.title}:\nscore against {fam.knob}", fam.knob, lines,
                                  knobs, variants, palette, SCORE_AXIS,
                                  f"{fam.title}: the normalized score against {fam.knob}, the mean over {seeds} "
                                  f"training seeds with a 95% t band{several}.")


def write_figures(suite: Suite, scored: dict[str, Any], out: str | Path | None = None, palette=None,
                  figs: list | None = None) -> dict[str, str]:
    """``{key: base64 PNG}`` of :func:`suite_figures` (``radar``, ``scaling-<family>``, ``cost``; ``figs`` when
    already drawn), written as ``<key>.png`` into ``out`` when given, with ``scaling.png``: every family's scaling
    panel side by side."""
    palette = palette or Palette(scored["methods"])
    pngs = {f.key: f.png for f in (figs if figs is not None else suite_figures(suite, scored, palette))}
    knobbed = [f for f in suite.families if f"scaling-{f.name}" in pngs]
    if knobbed:
        pngs["scaling"] = plots().scaling_panels([(f.title, f.knob, *_lines(f, scored)) for f in knobbed], palette,
                                                 SCORE_AXIS)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        for name, data in pngs.items():
            (out / f"{name}.png").write_bytes(base64.b64decode(data))
    return pngs


def suite_page(suite: Suite, scored: dict[str, Any], context, skipped: dict[str, dict[str, str]] | None = None,
               figs: list | None = None, fidelity: dict[str, Any] | None = None) -> str:
    """The suite's HTML page in the leaderboard page's style (:func:`leaderboard.render.page_head`): the title and
    the method under test, the facts (budget, seeds, runs, wall time) and notes (applicability), the verdict, what the
    numbers cover, a table per family (mean [95% CI] per method, the aggregate, training and counterfactual tokens),
    which families measure credit, the figures (one colour per method in all of them), a table per setting and, with
    ``fidelity`` (``benchmark-credit``'s measurement, :func:`leaderboard.benchmark._suite_fidelity`), the credit
    fidelity tables and verdicts it printed. ``context`` is a :class:`leaderboard.render.PageContext`; ``figs``
    (default: :func:`suite_figures`) must use the same palette."""
    palette = Palette(scored["methods"])
    figs = suite_figures(suite, scored, palette) if figs is None else figs
    key = html_text(suite.key)
    table = functools.partial(_html_table, key=key, palette=palette, under_test=context.under_test)
    parts = page_head(context.title) + [headline_html(suite.key, suite_headline(suite, scored, context.under_test,
                                                                                fidelity))]
    parts += context_html(context) + _page_summary(suite, scored, context, skipped, key)
    cols, rows = _family_rows(suite, scored)
    tips = {"aggregate": "mean over families",
            BEST: "each run's best kept checkpoint (leaderboard.suite.score), mean over families; secondary: the "
                  "primary score is the final policy's",
            "runs": "training seeds x settings", "train tokens": "every token generated in training, all runs",
            "counterfactual tokens": "tokens spent on counterfactual branches"} | \
        {f.name: f"{f.title}: {', '.join(s.name for s in f.settings)}" for f in suite.families}
    titles = [tips.get(c) for c in cols]
    parts.append("<h2>Per family: mean [95% CI] over training seeds</h2>")
    parts.append(table("families", [c if c in ("method", "runs", "train tokens", "counterfactual tokens")
                                    or c.endswith("]") else f"{c} [95% CI]" for c in cols], rows, 0, titles))
    parts.append(sensitivity_html(key, suite_sensitivity(suite, scored, fidelity), "h2"))
    parts.append("<div class='figs'>" + "".join(figure_html(f) for f in figs) + "</div>")
    cols, rows = _setting_rows(suite, scored)
    if rows:
        parts.append("<h2>Per setting</h2><p class='covers'>zero and one: the raw values of the anchors (random play, "
                     "and the optimum or reference policy), measured with the setting's kwargs; each method's cell is "
                     "its normalized score, mean [95% CI] over training seeds.</p>")
        parts.append(table("settings", cols, rows, None))
    for fig, what in SIDE_FIGURES.items():             # the printed comparison's other tables (e.g. exploitability)
        cols, rows = _side_rows(scored, fig)
        if rows:
            parts.append(f"<h2>Per setting: the {html_text(what, 300)}</h2><p class='covers'>mean [95% CI] over "
                         f"training seeds.</p>")
            parts.append(table(f"side-{fig}", cols, rows, None))
    if fidelity is not None:
        parts.append(fidelity_html(fidelity, key))
    parts.append("<p class='covers'>comparison.md and results.json beside this page hold the same numbers; "
                 "python -m leaderboard submit / render puts the entries on the leaderboard.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def fidelity_html(fidelity: dict[str, Any], key: str) -> str:
    """The credit fidelity ``benchmark-credit`` printed after the comparison, as a section of the suite's page: each
    method's fidelity per family (r [95% CI]), the per-setting tables (``"columns"`` and ``"rows"``:
    :func:`leaderboard.fidelity.table_rows`), the verdict lines and the trends (behind a fold); a field the
    measurement lacks is left out."""
    where = f"{fidelity.get('suite', '')}{', quick subset' if fidelity.get('quick') else ''}"
    parts = [f"<h2 id='fidelity'>Credit fidelity (at the initial policy; {html_text(where)})</h2>",
             "<p class='covers'>Pearson r of each method's advantages with the true advantage A* over the turns, "
             "measured at the untrained team on the suite's settings (no training), with a 95% cluster-bootstrap "
             "interval; a family's fidelity is the mean over its settings. fidelity/ beside this page holds "
             "fidelity.md, results.json and fidelity.png.</p>"]
    fams = fidelity.get("families") or {}
    names = list(dict.fromkeys(f for per in fams.values() for f in per))
    if names:
        cells = [[m] + [format_ci((v["r"], v["low"], v["high"]), 2) if (v := per.get(f)) and
                        all(isinstance(v.get(k), (int, float)) for k in ("r", "low", "high")) else "-"
                        for f in names] for m, per in fams.items()]
        parts.append(_plain_table(f"fidelity-{key}", ["method"] + [f"{f} r [95% CI]" for f in names], cells))
    folded = []
    cols = fidelity.get("columns") or []
    for caption, rows in fidelity.get("rows") or []:
        folded.append(f"<p class='covers'>{html_text(caption, 400)}</p>" +
                      _plain_table("", cols, [r + [""] * (len(cols) - len(r)) for r in rows]))
    for title, lines in (("Verdicts (paired over the same turns; Holm's correction over the comparisons printed)",
                          fidelity.get("verdicts") or []),
                         ("Trends (fidelity against the swept knob; 95% cluster bootstrap)",
                          fidelity.get("trends") or [])):
        if lines:
            folded.append(f"<p>{html_text(title)}:</p><ul class='notes'>" +
                          "".join(f"<li>{html_text(v, 600)}</li>" for v in lines) + "</ul>")
    if folded:
        parts.append("<details class='about'><summary>fidelity per setting, its verdicts and trends</summary>" +
                     "".join(folded) + "</details>")
    return "\n".join(parts)


def _plain_table(tid: str, cols: list[str], rows: list[list[str]]) -> str:
    """A sortable table without method colours, in a scrollable wrapper (``id`` only where ``tid`` is given)."""
    ident = f" id='{tid}'" if tid else ""
    return (f"<div class='scroll'><table class='board fidelity'{ident}><thead><tr>" +
            "".join(f"<th onclick='sortTable(this)'>{html_text(c)}</th>" for c in cols) + "</tr></thead><tbody>" +
            "".join("<tr>" + "".join(f"<td>{html_text(c, 400)}</td>" for c in r) + "</tr>" for r in rows) +
            "</tbody></table></div>")


def _page_summary(suite: Suite, scored: dict[str, Any], context, skipped, key: str) -> list[str]:
    """The page's words above its tables: applicability notes, the verdict's lines and what the numbers cover (each
    behind a fold: the headline sentence opens the page), the suite."""
    parts = []
    notes = _skip_notes(skipped)
    if notes:
        parts.append("<p><strong>Applicability</strong> (a method that cannot train on a setting's env is not run "
                     "there):</p><ul class='notes'>" + "".join(f"<li>{html_text(n, 1000)}</li>" for n in notes) +
                     "</ul>")
    parts.append(verdict_html(key, None, family_verdicts(suite, scored, context.under_test)))   # the headline opens
    parts.append("<details class='about'><summary>What the numbers cover</summary>" +
                 "".join(f"<p class='covers'>{html_text(c, 600)}</p>" for c in suite_coverage(suite, scored)) +
                 f"<p class='covers'>The suite: {html_text(suite.description, 2000)}</p></details>")
    return parts


def _html_table(tid: str, cols: list[str], rows: list[list[str]], method_col: int | None, titles=None, *,
                key: str, palette, under_test: str | None) -> str:
    """A sortable HTML table (``<tid>-<key>``) in a scrollable wrapper; ``titles``: a tooltip per column. Where
    ``method_col`` names a method column, its cells carry the method's colour swatch and the row of ``under_test``
    is highlighted."""
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




def page_context(suite: Suite, scored: dict[str, Any], method: str, runs: int | None = None,
                 wall_s: float | None = None, execution: str = ""):
    """The :class:`leaderboard.render.PageContext` of a suite comparison: its title (the method under test and the
    suite), the budget, the seeds, the runs and the wall time, and what ranks against what."""
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


register(columns=board_columns, figures=board_radar)
