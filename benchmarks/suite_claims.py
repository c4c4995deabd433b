"""The credit suite's claims, each one paired comparison with a verdict, Holm-corrected over every claim printed, and
re-checked on a second, fresh seed set (issue 40).

    python benchmarks/suite_claims.py OUT/credit-micro@4/results.json [MORE ...] [--recheck R/results.json ...]
    python benchmarks/suite_claims.py board/entries/credit-micro@4/*.json [--recheck ...]
    python benchmarks/suite_claims.py --recheck-protocol benchmarks/claims/credit-micro@4-recheck.json [--families F,..]

``benchmark-credit`` writes one ``results.json`` per command (the methods of that command); pass several to combine
methods run by different commands on the same suite, or the parts of a re-check run family by family (a method
found twice is merged setting by setting, and a setting found twice must carry the same scores). Every number
comes from those files (per-seed normalised scores: random = 0, optimum/reference = 1; the exact exploitability of
the zero-sum settings; token counts) or from the board's stored entries of the suite (the same per-seed scores and
tokens; an entry keeps no exploitability, so those two claims need a ``results.json``). Nothing is re-run.

The claims are fixed here, before the certified run is looked at (the list below is the pre-registration; it is the
list the README and RESULTS.md state, from credit-micro@3's findings): a claim is a direction ("A above B on F"),
and the table prints every one of them whatever its outcome.

Verdict rules (one family of comparisons, corrected together):

* **A against B on a family or setting**: the paired difference ``A - B`` over the training seeds both share (seed
  i of A with seed i of B: the same task stream and, in credit-micro@4, the same seed list per setting), its 95%
  Student-t interval and the exact two-sided sign-flip p-value (:func:`leaderboard.stats.paired`).
* **A trend in a knob** ("A's gain over B grows with the team"): per training seed, the least-squares slope of
  ``A - B`` against ``log2(knob)`` over the family's settings; those per-seed slopes are tested against 0 the same
  way (t interval, sign-flip p).
* **Lower is better** (exploitability): the difference is taken ``B - A`` so that "above" still means A is better.
* **Holm** over every comparison the command prints (:func:`leaderboard.verdicts.holm_family`). A direction is
  stated only when the Holm-adjusted p is below 5% and the interval excludes 0 on that side; otherwise "not
  separated" (never "no difference").
* **Re-check** (``--recheck``, results of the same methods on a protocol with fresh seeds, written by
  ``--recheck-protocol``: each certified seed + 39000): every claim separated on the first set (in
  either direction) is tested again on the second, Holm over those re-tested. A claim **holds** only when it is
  separated in its stated direction on both; one separated against its direction on both is stated as such ("against
  the claim ... on both seed sets"); **did not replicate** when the second set does not separate it; **reversed**
  when the second set separates it the other way. Without ``--recheck`` a separated claim is "separated (not yet
  re-checked)", never "holds", and one against its direction says "not yet re-checked" too.

``benchmarks/claims/`` keeps each re-check that was run: its protocol file and its ``scored`` results (the
``results.json`` of ``benchmark-credit`` without the per-run curves), so a re-check's verdicts re-derive without the
runs: ``python benchmarks/suite_claims.py board/entries/credit-micro@4/*.json --recheck
benchmarks/claims/*.results.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.verdicts import Comparison, comparison, holm_family, sentence, verdict

RECHECK_OFFSET = 39_000           # the re-check protocol trains seed s + 39000 where the certified run trains s


def log_axis(knobs: Sequence[float]) -> tuple[np.ndarray, str]:
    """The x axis of a sweep's slope: ``log2(knob)``, or ``log2(1 + knob)`` where a knob is 0 (free riding's idle
    seats 0, 1, 3, 7 become 0, 1, 2, 3: one doubling of the team per step), and how to name it."""
    k = np.asarray(knobs, dtype=float)
    if np.all(k > 0):
        return np.log2(k), "log2({})"
    if np.any(k < 0):
        raise ValueError(f"a slope on a log axis needs knobs >= 0, got {list(knobs)}")
    return np.log2(1.0 + k), "log2(1 + {})"


def seed_slopes(knobs: Sequence[float], diffs: Sequence[Sequence[float]]) -> list[float]:
    """``diffs[i][k]``: seed k's difference at ``knobs[i]``; each seed's least-squares slope on :func:`log_axis`."""
    x = log_axis(knobs)[0]
    y = np.asarray(diffs, dtype=float)
    return [float(np.polyfit(x, y[:, k], 1)[0]) for k in range(y.shape[1])]


def entry_method(entry: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """A board entry (schema ``marl_llm_entry``, ``board/entries/<suite>/<method>--<hash>.json``) as ``(suite,
    method, scores)`` in the shape of ``results.json``'s ``scored.methods[method]``: per setting its knob and
    per-seed scores, per family the per-seed mean over its settings (as the suite scores a family), and the tokens.
    An entry keeps no side figures (exploitability), so claims on them need the ``results.json``."""
    r, tokens = entry["results"], entry["manifest"]["tokens"]
    settings = {s: {"knob": x["knob"], "seeds": list(x["seeds"])} for s, x in r["settings"].items()}
    families = {}
    for f, x in r["families"].items():
        rows = r["scores"][f]
        if any(len(row) != len(x["settings"]) for row in rows):
            raise ValueError(f"family {f}: a seed's row does not hold one score per setting {x['settings']}")
        families[f] = {"seeds": [sum(row) / len(row) for row in rows], "settings": list(x["settings"])}
    return entry["protocol"], entry["method"], {
        "settings": settings, "families": families, "side": {},
        "tokens": {"main": int(tokens["train_main"]), "branches": int(tokens["train_branches"])}}


def _seeds(m: dict[str, Any]) -> dict[str, list[float]]:
    return {s: list(x["seeds"]) for s, x in m["settings"].items()}


def suite_of(key: str) -> str:
    """The suite a results file belongs to, for merging: ``<id>-recheck-<anything>@<v>`` (a re-check kept to some
    families under an id of its own, the form written by hand before ``--families`` kept the id) is the re-check
    ``<id>-recheck@<v>``. Every setting of a re-check has its own seeds (certified + RECHECK_OFFSET), so a setting
    scores the same in any subset, and the subsets are parts of one re-check."""
    name, at, version = key.rpartition("@")
    if not at or "-recheck-" not in name:
        return key
    return f"{name[:name.index('-recheck-')]}-recheck@{version}"


def _merge(path: str, name: str, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """One method found in two files. Its settings and families are merged; one found in both must carry the same
    per-seed scores (else a clear error naming the file). With the same coverage the file with side figures is kept;
    across different coverage (re-checks run family by family) the method is the union of its parts and keeps no
    aggregate or token count (each file's counts a part)."""
    for part in ("settings", "families"):
        a, b = old.get(part, {}), new.get(part, {})
        if any(list(a[k]["seeds"]) != list(b[k]["seeds"]) for k in a.keys() & b.keys()):
            raise SystemExit(f"{path}: method {name!r} appears with different scores in two files")
    if old["settings"].keys() == new["settings"].keys():
        return old if old.get("side") else new
    side = {k: {**old.get("side", {}).get(k, {}), **new.get("side", {}).get(k, {})}
            for k in old.get("side", {}).keys() | new.get("side", {}).keys()}
    return {"settings": {**old["settings"], **new["settings"]},
            "families": {**old.get("families", {}), **new.get("families", {})}, "side": side}


def load(paths: Sequence[str]) -> dict[str, Any]:
    """Merge the methods of several files of one suite: ``benchmark-credit``'s ``results.json`` (``scored.methods``)
    or board entries (:func:`entry_method`); parts of one re-check merge (:func:`suite_of`). A method found in two
    files is merged by :func:`_merge`: a setting or family in both must carry the same per-seed scores, and any
    mismatch is a clear error naming the file."""
    suite, methods = None, {}
    for path in paths:
        try:
            with open(path) as f:
                raw = json.load(f)
            if isinstance(raw, dict) and raw.get("schema") == "marl_llm_entry":
                key, name, m = entry_method(raw)
                scored, found = {"suite": key}, [(name, m)]
            else:
                scored = raw["scored"]
                found = list(scored["methods"].items())
                for _, m in found:
                    _seeds(m)
            key = suite_of(str(scored.get("suite")))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SystemExit(f"{path}: not a benchmark-credit results.json or a board entry ({exc})") from None
        if suite is not None and key != suite:
            raise SystemExit(f"{path}: suite {scored.get('suite')!r}, the others are {suite!r}")
        suite = key
        for name, m in found:
            methods[name] = _merge(path, name, methods[name], m) if name in methods else m
    return {"suite": suite, "methods": methods}


@dataclass(frozen=True)
class Claim:
    """One stated direction: ``a`` above ``b`` on ``where``; ``measure(methods)`` gives the two per-seed lists
    (or ``None`` when the results lack a method or a family)."""

    a: str
    b: str
    where: str
    measure: Callable[[dict[str, Any]], tuple[list[float], list[float]] | None]


def _family(family: str) -> Callable[[str], Callable]:
    def of(method: str) -> Callable[[dict[str, Any]], list[float] | None]:
        def get(methods: dict[str, Any]) -> list[float] | None:
            fam = methods.get(method, {}).get("families", {}).get(family)
            return None if fam is None else list(fam["seeds"])
        return get
    return of


def _pair(a: Callable, b: Callable) -> Callable[[dict[str, Any]], tuple[list[float], list[float]] | None]:
    def get(methods: dict[str, Any]) -> tuple[list[float], list[float]] | None:
        xa, xb = a(methods), b(methods)
        return None if xa is None or xb is None else (xa, xb)
    return get


def family_claim(a: str, b: str, family: str) -> Claim:
    of = _family(family)
    return Claim(a, b, family, _pair(of(a), of(b)))


def trend_claim(a: str, b: str, prefix: str, knob: str) -> Claim:
    """``a``'s gain over ``b`` grows along the knob of the settings named ``prefix*``: the per-seed slopes against 0."""
    def get(methods: dict[str, Any]) -> tuple[list[float], list[float]] | None:
        if a not in methods or b not in methods:
            return None
        names = sorted((s for s in methods[a]["settings"] if s.startswith(prefix) and s in methods[b]["settings"]),
                       key=lambda s: float(methods[a]["settings"][s]["knob"]))
        if len(names) < 2:
            return None
        knobs = [float(methods[a]["settings"][s]["knob"]) for s in names]
        diffs = [np.subtract(methods[a]["settings"][s]["seeds"], methods[b]["settings"][s]["seeds"]) for s in names]
        slopes = seed_slopes(knobs, diffs)
        return slopes, [0.0] * len(slopes)
    return Claim(f"{a} - {b} slope", "0", f"{prefix}* per doubling of {knob}", get)


def exploitability_claim(a: str, b: str, setting: str) -> Claim:
    """``a`` less exploitable than ``b`` (lower is better: compared as ``b``'s exploitability against ``a``'s)."""
    def get(methods: dict[str, Any]) -> tuple[list[float], list[float]] | None:
        side = [methods.get(m, {}).get("side", {}).get("exploitability", {}).get(setting) for m in (a, b)]
        if None in side:
            return None
        return [-x for x in side[0]["seeds"]], [-x for x in side[1]["seeds"]]
    return Claim(f"{a} (exploitability, negated)", f"{b} (exploitability, negated)", setting, get)


FAMILIES = ("team_size", "message_credit", "temporal", "free_riding", "dynamic_teams", "zero_sum")

# The pre-registered claims (see the module docstring). Each line is one direction; Holm runs over all of them.
CLAIMS: tuple[Claim, ...] = (
    # 1. The control: every family can be learned at this budget (broadcast above shuffled).
    *(family_claim("broadcast", "shuffled", f) for f in FAMILIES),
    # 2. Group baselining matters most: broadcast above the raw return (none) on team size and zero-sum.
    family_claim("broadcast", "none", "team_size"),
    family_claim("broadcast", "none", "zero_sum"),
    # 3. Counterfactual credit on team size: loo and coma above broadcast, and their gain grows with the team.
    family_claim("loo", "broadcast", "team_size"),
    family_claim("coma", "broadcast", "team_size"),
    trend_claim("loo", "broadcast", "voting/fraction/", "n_voters"),
    trend_claim("coma", "broadcast", "voting/fraction/", "n_voters"),
    # 4. coma costs in self-play: coma below broadcast on zero-sum (stated as broadcast above coma).
    family_claim("broadcast", "coma", "zero_sum"),
    # 5. The thinker's credit (CCPO's claim): ccpo_v1 / ccpo_v2 above broadcast on message credit.
    family_claim("ccpo_v1", "broadcast", "message_credit"),
    family_claim("ccpo_v2", "broadcast", "message_credit"),
    # 6. Temporal credit (MARSHAL's claim): marshal above rae and broadcast, and its gain grows with the delay.
    family_claim("marshal", "rae", "temporal"),
    family_claim("marshal", "broadcast", "temporal"),
    trend_claim("marshal", "broadcast", "team_umbrella/", "delay"),
    # 7. Self-play stability (SPIRAL's RAE): rae less exploitable than none.
    exploitability_claim("rae", "none", "kuhn_poker/self-play"),
    exploitability_claim("rae", "none", "leduc_holdem/self-play"),
)


def measured(claims: Sequence[Claim], methods: dict[str, Any]) -> tuple[list[Comparison], list[Claim]]:
    """The claims' uncorrected comparisons on ``methods``, and the claims the results cannot measure."""
    out, missing = [], []
    for c in claims:
        got = c.measure(methods)
        if got is None:
            missing.append(c)
        else:
            out.append(comparison(c.a, c.b, c.where, *got))
    return out, missing


def outcome(first: Comparison, second: Comparison | None) -> str:
    """A claim's status from its corrected first-set record and (when re-checked) its corrected second-set one. A
    claim separated against its direction is a finding too ("A below B"), so it is re-checked like one for it."""
    word = verdict(first)
    if word == "not separated":
        return "not separated"
    against = word == "below"
    if second is None:
        return ("against the claim (separated the other way; not yet re-checked)" if against
                else "separated (not yet re-checked)")
    again = verdict(second)
    if again == word:
        return "against the claim (separated the other way on both seed sets)" if against else "holds"
    if again == "not separated":
        return "did not replicate (not separated on the re-check)"
    return "reversed on the re-check"


def report(data: dict[str, Any], recheck: dict[str, Any] | None = None, cost: bool = True) -> str:
    """The claims table (markdown) of ``data`` (and its re-check) with every sentence behind it."""
    first, missing = measured(CLAIMS, data["methods"])
    first = holm_family(first)
    by_claim = dict(zip([c for c in CLAIMS if c not in missing], first))
    retested: dict[Claim, Comparison] = {}
    lines = [f"# Credit-suite claims on {data['suite']}", ""]
    if recheck is not None:
        lines[0] += f", re-checked on {recheck['suite']}"
        todo = [c for c, r in by_claim.items() if verdict(r) != "not separated"]
        got, gone = measured(todo, recheck["methods"])           # gone: not in the re-check's results (yet)
        retested = dict(zip([c for c in todo if c not in gone], holm_family(got)))
    lines += [f"Holm over the {len(first)} claims measured (family-wise 5%)"
              + (f"; the re-check: Holm over the {len(retested)} claims it re-tested." if recheck else "."), "",
              "| claim | paired difference [95% t] | Holm p | re-check difference | re-check Holm p | status |",
              "|---|---|---|---|---|---|"]
    for c, r in by_claim.items():
        s = retested.get(c)
        again = f"{s.diff:+.3f} [{s.low:+.3f}, {s.high:+.3f}] (n={s.n})" if s else "-"
        lines.append(f"| {c.a} above {c.b} on {c.where} | {r.diff:+.3f} [{r.low:+.3f}, {r.high:+.3f}] (n={r.n}) | "
                     f"{r.p_holm:.4f} | {again} | {f'{s.p_holm:.4f}' if s else '-'} | {outcome(r, s)} |")
    for c in missing:
        lines.append(f"| {c.a} above {c.b} on {c.where} | not measured (a method or family missing) | | | | |")
    lines += ["", "Every comparison, as the verdict sentence of its numbers:", ""]
    lines += [f"- {sentence(r)}" for r in first]
    if retested:
        lines += ["", "The re-check:", ""] + [f"- {sentence(r)}" for r in retested.values()]
    m = data["methods"]
    if cost and "tokens" in m.get("coma", {}) and "tokens" in m.get("broadcast", {}):
        tok, base = m["coma"]["tokens"], m["broadcast"]["tokens"]
        ratio = (tok["main"] + tok["branches"]) / max(1, base["main"])
        lines += ["", (f"Cost (descriptive, no test): coma plays {tok['main']:,} main + {tok['branches']:,} "
                       f"counterfactual decisions = {ratio:.2f}x broadcast's {base['main']:,}.")]
    return "\n".join(lines)


def recheck_protocol(suite_file: Path, out: Path, families: Sequence[str] | None = None) -> None:
    """Write the re-check protocol: ``suite_file`` (credit-micro@4) with id ``<id>-recheck`` and fresh seeds, each
    certified seed ``s`` replaced by ``s + RECHECK_OFFSET``: the same settings, budgets and scoring, no seed shared
    with the certified run, and a setting appended to the suite later keeps the others' re-check seeds.

    ``families``: keep only these families (a claim re-checked on its own family costs that family's runs). The id
    stays ``<id>-recheck``: every setting keeps its own seeds, so a setting scores the same in any subset, and the
    results of several subsets merge (``--recheck a.json b.json``) as one re-check."""
    raw = json.loads(suite_file.read_text())
    raw["id"] = f"{raw['id']}-recheck"
    raw["description"] = (f"The re-check of {suite_file.stem}'s claims on fresh seeds (benchmarks/suite_claims.py "
                          f"--recheck-protocol): the same settings, budgets and scoring, each certified training seed "
                          f"s replaced by s + {RECHECK_OFFSET}, none shared with the certified run.")
    settings = [s for f in raw["families"] for s in f["settings"]]
    certified = [list(s.get("train", {}).get("seeds", raw["train"]["seeds"])) for s in settings]
    fresh = [[x + RECHECK_OFFSET for x in seeds] for seeds in certified]
    every = [x for seeds in certified for x in seeds]
    if max(x for seeds in fresh for x in seeds) >= 2 ** 16 or set(every) & {x for seeds in fresh for x in seeds}:
        raise SystemExit(f"the certified seeds + {RECHECK_OFFSET} pass the trainer's 2**16 seed bound or meet "
                         "certified seeds")
    for s, seeds in zip(settings, fresh):
        s.setdefault("train", {})["seeds"] = seeds
    raw["train"]["seeds"] = [x + RECHECK_OFFSET for x in raw["train"]["seeds"]]
    if families:
        known = [f["name"] for f in raw["families"]]
        if not set(families) <= set(known):
            raise SystemExit(f"--families: unknown {sorted(set(families) - set(known))}; the suite has {known}")
        raw["families"] = [f for f in raw["families"] if f["name"] in families]
        raw["description"] += f" Only the families {', '.join(f['name'] for f in raw['families'])}."
    out.write_text(json.dumps(raw, indent=1) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="*", help="results.json files of benchmark-credit runs on one suite")
    p.add_argument("--recheck", nargs="+", default=None, help="results.json files of the same methods on the "
                   "re-check protocol (fresh seeds)")
    p.add_argument("--recheck-protocol", type=Path, help="write the re-check protocol (fresh seeds) here and exit")
    p.add_argument("--suite", type=Path, default=Path("leaderboard/protocols/suite/credit-micro@4.json"),
                   help="with --recheck-protocol: the certified suite file")
    p.add_argument("--families", help="with --recheck-protocol: only these comma-separated families")
    p.add_argument("--out", help="also write the markdown here")
    args = p.parse_args(argv)
    if args.recheck_protocol:
        recheck_protocol(args.suite, args.recheck_protocol,
                         args.families.split(",") if args.families else None)
        print(f"wrote {args.recheck_protocol}")
        return
    if not args.results:
        p.error("give the results.json files (or --recheck-protocol)")
    text = report(load(args.results), load(args.recheck) if args.recheck else None)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
