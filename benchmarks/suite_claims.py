"""The credit suite's five claims (issue 16, item 5), each with CIs and a verdict, from stored suite results.

    python benchmarks/suite_claims.py OUT/credit-micro@3/results.json [MORE results.json ...] [--out claims.md]

``benchmark-credit`` writes one ``results.json`` per command (the methods of that command); pass several to combine
methods run by different commands on the same suite (a method found twice must carry the same scores). Every number
comes from those files: the per-seed normalized scores (random = 0, optimum/reference = 1), the exact exploitability
of the zero-sum settings and the token counts. Nothing is re-run.

Verdict rules (stated once, used by every claim):

* **Comparison of A against B at a setting** (the board's rule): "holds" when A's 95% Student-t interval over the
  training seeds lies wholly above B's, "does not hold here" when B's lies wholly above A's, "inconclusive" when they
  overlap. Each table also gives the paired difference A - B over the same training seeds (both methods train on the
  same seeded task stream) with its 95% t interval: a more powerful secondary test, reported beside the verdict and
  never used to overturn "inconclusive".
* **A trend in a knob** ("A's gain over B grows with the team"): per training seed, the least-squares slope of the
  paired difference A - B against log2(knob) over the family's settings (``numpy.polyfit``); then the mean of those
  per-seed slopes with its 95% t interval (the seeds are the independent units, as everywhere in the suite). "holds"
  when the interval lies above 0, "does not hold here" when it lies below 0, "inconclusive" otherwise.
* **Stability** (RAE against none in self-play): the exact exploitability of the final policies (chips per hand,
  0 = an equilibrium; lower is better, compared by the interval rule above with the sign flipped), and the spread of
  the exact score across seeds (Brown-Forsythe test, ``scipy.stats.levene(center="median")``; "holds" at p < 0.05
  with the smaller spread on RAE's side).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

import numpy as np
from scipy import stats

from leaderboard.stats import mean_ci as t_ci  # the suite's 95% Student-t interval over seeds

HOLDS, NOT_HERE, INCONCLUSIVE = "holds", "does not hold here", "inconclusive"


def fmt(ci: tuple[float, float, float]) -> str:
    return f"{ci[0]:.3f} [{ci[1]:.3f}, {ci[2]:.3f}]"


def interval_verdict(a: Sequence[float], b: Sequence[float], lower_is_better: bool = False) -> str:
    """The board's rule: A's interval wholly above B's (or below, when lower is better); a single seed has no
    interval, so it compares as inconclusive."""
    if min(len(a), len(b)) < 2:
        return INCONCLUSIVE
    (_, alo, ahi), (_, blo, bhi) = t_ci(a), t_ci(b)
    if lower_is_better:
        alo, ahi, blo, bhi = -ahi, -alo, -bhi, -blo
    if alo > bhi:
        return HOLDS
    if ahi < blo:
        return NOT_HERE
    return INCONCLUSIVE


def sign_verdict(lo: float, hi: float) -> str:
    return HOLDS if lo > 0 else NOT_HERE if hi < 0 else INCONCLUSIVE


def log_axis(knobs: Sequence[float]) -> tuple[np.ndarray, str]:
    """The x axis of a sweep's slope: ``log2(knob)``, or ``log2(1 + knob)`` where a knob is 0 (free riding's idle
    seats 0, 1, 3, 7 become 0, 1, 2, 3: one doubling of the team per step), and how to name it."""
    k = np.asarray(knobs, dtype=float)
    if np.all(k > 0):
        return np.log2(k), "log2({})"
    if np.any(k < 0):
        raise ValueError(f"a slope on a log axis needs knobs >= 0, got {list(knobs)}")
    return np.log2(1.0 + k), "log2(1 + {})"


def slope_ci(knobs: Sequence[float], diffs: Sequence[Sequence[float]]) -> tuple[float, float, float]:
    """``diffs[i][k]``: seed k's difference at ``knobs[i]``. Each seed's least-squares slope on :func:`log_axis`
    (``log2(knobs)``), then the mean slope with its 95% t interval over the seeds."""
    x = log_axis(knobs)[0]
    y = np.asarray(diffs, dtype=float)
    return t_ci([float(np.polyfit(x, y[:, k], 1)[0]) for k in range(y.shape[1])])


def load(paths: Sequence[str]) -> dict[str, Any]:
    """Merge the ``scored.methods`` of several ``results.json`` of one suite; a clear error on a mismatch."""
    suite, methods = None, {}
    for path in paths:
        try:
            with open(path) as f:
                scored = json.load(f)["scored"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}: not a benchmark-credit results.json ({exc})") from None
        if suite is not None and scored.get("suite") != suite:
            raise SystemExit(f"{path}: suite {scored.get('suite')!r}, the others are {suite!r}")
        suite = scored.get("suite")
        for name, m in scored["methods"].items():
            if name in methods and methods[name]["settings"] != m["settings"]:
                raise SystemExit(f"{path}: method {name!r} appears with different scores in two files")
            methods[name] = m
    return {"suite": suite, "methods": methods}


class Claims:
    def __init__(self, data: dict[str, Any]) -> None:
        self.suite, self.methods = data["suite"], data["methods"]
        self.lines: list[str] = [f"# Credit-suite claims on {self.suite}", ""]

    def have(self, *names: str) -> bool:
        missing = [n for n in names if n not in self.methods]
        if missing:
            self.lines += [f"_not measured: no results for {', '.join(missing)} in the files given_", ""]
        return not missing

    def seeds(self, method: str, setting: str) -> list[float]:
        return list(self.methods[method]["settings"][setting]["seeds"])

    def settings(self, method: str, prefix: str) -> list[str]:
        return [s for s in self.methods[method]["settings"] if s.startswith(prefix)]

    def knob(self, method: str, setting: str) -> float:
        return float(self.methods[method]["settings"][setting]["knob"])

    def family(self, method: str, family: str) -> list[float]:
        return list(self.methods[method]["families"][family]["seeds"])

    def family_row(self, a: str, bs: Sequence[str], family: str) -> list[tuple[str, list[float], dict]]:
        """The family's row, or none when the suite has no such family (e.g. a quick suite)."""
        if any(family not in self.methods[m]["families"] for m in (a, *bs)):
            return []
        return [(f"family: {family}", self.family(a, family), {b: self.family(b, family) for b in bs})]

    def compare(self, title: str, a: str, bs: Sequence[str], rows: Sequence[tuple[str, list[float], dict]]) -> None:
        """A table of A against each B: rows are (label, A's seeds, {B: B's seeds})."""
        if not rows:
            self.lines += [f"### {title}", "", "_not measured: the suite has no such setting_", ""]
            return
        head = f"| setting | {a} | " + " | ".join(f"{b} | {a} - {b} (paired) | verdict vs {b}" for b in bs) + " |"
        self.lines += [f"### {title}", "", head, "|" + "---|" * (2 + 3 * len(bs))]
        for label, xa, others in rows:
            cells = [label, fmt(t_ci(xa))]
            for b in bs:
                xb = others[b]
                cells += [fmt(t_ci(xb)), fmt(t_ci(np.subtract(xa, xb))), interval_verdict(xa, xb)]
            self.lines.append("| " + " | ".join(cells) + " |")
        self.lines.append("")

    def trend(self, a: str, b: str, prefix: str, what: str) -> str:
        settings = self.settings(a, prefix)
        if len(settings) < 2:
            self.lines.append(f"- {a} - {b} against log2({what}) on `{prefix}*`: not measured (fewer than two settings)")
            return INCONCLUSIVE
        knobs = [self.knob(a, s) for s in settings]
        diffs = [np.subtract(self.seeds(a, s), self.seeds(b, s)) for s in settings]
        m, lo, hi = slope_ci(knobs, diffs)
        verdict = sign_verdict(lo, hi)
        axis = log_axis(knobs)[1].format(what)      # the axis slope_ci fitted on
        self.lines.append(f"- {a} - {b} against {axis} on `{prefix}*`: slope {m:+.3f} [{lo:+.3f}, {hi:+.3f}] per "
                          f"doubling (mean of {len(diffs[0])} per-seed slopes over {len(knobs)} settings): "
                          f"**{verdict}**")
        return verdict

    # ------------------------------------------------------------------ the five claims
    def team_size(self) -> None:
        self.lines += ["## 1. loo against broadcast as the team grows", ""]
        if not self.have("loo", "broadcast"):
            return
        for scheme in ("fraction", "plurality"):
            prefix = f"voting/{scheme}/"
            rows = [(s, self.seeds("loo", s), {"broadcast": self.seeds("broadcast", s)})
                    for s in sorted(self.settings("loo", prefix), key=lambda s: self.knob("loo", s))]
            self.compare(f"voting-v0, reward_scheme={scheme}", "loo", ["broadcast"], rows)
        self.compare("the team-size family (both schemes)", "loo", ["broadcast"],
                     self.family_row("loo", ["broadcast"], "team_size"))
        self.lines.append("Claim: loo's gain over broadcast grows with the number of voters.")
        for scheme in ("fraction", "plurality"):
            self.trend("loo", "broadcast", f"voting/{scheme}/", "n_voters")
        self.lines.append("")

    def message_credit(self) -> None:
        self.lines += ["## 2. CCPO v1/v2 against broadcast on the thinker's credit (clue task)", ""]
        if not self.have("ccpo_v1", "ccpo_v2", "broadcast"):
            return
        for a in ("ccpo_v1", "ccpo_v2"):
            rows = [(s, self.seeds(a, s), {"broadcast": self.seeds("broadcast", s)})
                    for s in sorted(self.settings(a, "think_solve/"), key=lambda s: self.knob(a, s))]
            rows += self.family_row(a, ["broadcast"], "message_credit")
            self.compare(f"{a}, thinker_clue_accuracy sweep", a, ["broadcast"], rows)

    def temporal(self) -> None:
        self.lines += ["## 3. marshal against rae and broadcast on delay", ""]
        if not self.have("marshal", "rae", "broadcast"):
            return
        settings = sorted(self.settings("marshal", "team_umbrella/"), key=lambda s: self.knob("marshal", s))
        rows = [(s, self.seeds("marshal", s), {b: self.seeds(b, s) for b in ("rae", "broadcast")}) for s in settings]
        rows += self.family_row("marshal", ["rae", "broadcast"], "temporal")
        self.compare("team_umbrella-v0 delay sweep (+ Mini Hanabi in the family)", "marshal", ["rae", "broadcast"],
                     rows)
        self.lines.append("Claim: marshal's gain grows with the delay.")
        for b in ("rae", "broadcast"):
            self.trend("marshal", b, "team_umbrella/", "delay")
        self.lines.append("")

    def self_play(self) -> None:
        self.lines += ["## 4. RAE against none on self-play stability", ""]
        if not self.have("rae", "none"):
            return
        head = ("| setting | exact score rae | exact score none | verdict | exploitability rae | exploitability none | "
                "verdict (lower is better) | score SD rae / none | Brown-Forsythe p |")
        self.lines += [head, "|---|---|---|---|---|---|---|---|---|"]
        for s in self.settings("rae", ""):
            side = self.methods["rae"].get("side", {}).get("exploitability", {})
            if s not in side:
                continue
            xr, xn = self.seeds("rae", s), self.seeds("none", s)
            er = side[s]["seeds"]
            en = self.methods["none"]["side"]["exploitability"][s]["seeds"]
            sd_r, sd_n = float(np.std(xr, ddof=1)), float(np.std(xn, ddof=1))
            p = float(stats.levene(xr, xn, center="median").pvalue)
            self.lines.append(f"| {s} | {fmt(t_ci(xr))} | {fmt(t_ci(xn))} | {interval_verdict(xr, xn)} | "
                              f"{fmt(t_ci(er))} | {fmt(t_ci(en))} | {interval_verdict(er, en, lower_is_better=True)} | "
                              f"{sd_r:.3f} / {sd_n:.3f} | {p:.3f}"
                              f"{' (' + HOLDS + ')' if p < 0.05 and sd_r < sd_n else ''} |")
        self.lines.append("")

    def coma_cost(self) -> None:
        self.lines += ["## 5. coma's counterfactual-token cost against its gain", ""]
        if not self.have("coma", "broadcast"):
            return
        tok = self.methods["coma"]["tokens"]
        base = self.methods["broadcast"]["tokens"]
        ratio = (tok["main"] + tok["branches"]) / max(1, base["main"])
        self.lines.append(f"- tokens: coma {tok['main']:,} main + {tok['branches']:,} counterfactual = {ratio:.2f}x "
                          f"broadcast's {base['main']:,}")
        self.lines.append("")
        rows = [(f"family: {f}", self.family("coma", f), {"broadcast": self.family("broadcast", f)})
                for f in self.methods["coma"]["families"] if f in self.methods["broadcast"]["families"]]
        rows.append(("aggregate", list(self.methods["coma"]["aggregate"]["seeds"]),
                     {"broadcast": list(self.methods["broadcast"]["aggregate"]["seeds"])}))
        self.compare("coma against broadcast per family", "coma", ["broadcast"], rows)

    def render(self) -> str:
        self.team_size()
        self.message_credit()
        self.temporal()
        self.self_play()
        self.coma_cost()
        return "\n".join(self.lines)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="results.json files of benchmark-credit runs on one suite")
    p.add_argument("--out", help="also write the markdown here")
    args = p.parse_args(argv)
    text = Claims(load(args.results)).render()
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
