"""Verdict sentences that are true by construction: every line states one paired comparison and is written from that
comparison's numbers alone, never from ranks (issue 40).

A :class:`Comparison` is one such record: entries ``a`` and ``b``, ``where`` they are compared (a setting, a family,
or the aggregate over the families both cover), the paired mean difference ``a - b`` over the ``n`` seeds they share
with its Student-t interval, the two-sided sign-flip p-value (:func:`leaderboard.stats.paired`), the Holm-adjusted
p-value and the number ``m`` of comparisons it was corrected over, and, as a secondary field, each side's unpaired
interval (the mean over its seeds with a Student-t CI).

* :func:`comparison` builds one from the two sides' per-seed scores (paired by position: seed i of ``a`` with seed
  i of ``b``, as entries of one protocol share their seed list).
* :func:`holm_family` corrects a list of comparisons together: the family of what one command prints.
* :func:`suite_verdicts`: the credit suite's verdict from its scored methods (``score(...)["methods"]``): the method
  under test against every other one on the aggregate and on each family both cover (optionally each setting), and
  the control check (``broadcast`` against ``shuffled`` per family), all corrected together.
* :func:`suite_family`: those comparisons as corrected records; :func:`headline`: one sentence over a corrected
  family (how many separated, which, and how many did not), the first line of every page.
* :func:`verdict` and :func:`sentence` turn a corrected record into words. ``a above b`` (or ``below``) only when the
  Holm-adjusted p is below ``alpha`` AND the interval of the difference excludes 0 on that side; otherwise
  ``a vs b ...: not separated``, never "no difference" (a test that does not reject says nothing of equality).

Every sentence carries its numbers, so a reader (and a test) can check it::

    coma above none on team_size: paired difference +0.120 [+0.050, +0.190] (95% t) over 10 seeds, exact sign-flip
    p = 0.0020, Holm-adjusted p = 0.0117 (Holm over 6 comparisons, family-wise 5%); unpaired: coma 0.800
    [0.700, 0.900], none 0.680 [0.600, 0.760]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from leaderboard.stats import format_ci, holm, mean_ci, paired

__all__ = ["ALPHA", "Comparison", "comparison", "direction", "headline", "holm_family", "sentence", "suite_comparisons",
           "suite_family", "suite_verdicts", "verdict"]

ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    where: str                                   # "team_size", "voting/fraction/n2", "the aggregate of 6 families"
    n: int                                       # paired seeds
    diff: float                                  # mean of a - b over the seeds
    low: float                                   # Student-t interval of the mean difference
    high: float
    p: float                                     # two-sided sign-flip p-value
    exact: bool = True                           # the p-value enumerated every sign pattern
    p_holm: float | None = None                  # Holm-adjusted p; None until :func:`holm_family`
    m: int = 0                                   # comparisons in the Holm family
    unpaired_a: tuple[float, float, float] | None = None   # a's mean [CI] over its seeds (secondary)
    unpaired_b: tuple[float, float, float] | None = None
    confidence: float = 0.95


def comparison(a: str, b: str, where: str, xa: Sequence[float], xb: Sequence[float], *, confidence: float = 0.95,
               seed: int = 0) -> Comparison:
    """The paired comparison of ``a`` (per-seed scores ``xa``) and ``b`` (``xb``) on ``where``; not yet corrected."""
    r = paired(xa, xb, confidence=confidence, seed=seed)
    return Comparison(a, b, where, r.n, r.mean, r.low, r.high, r.p, r.exact,
                      unpaired_a=mean_ci(xa, confidence), unpaired_b=mean_ci(xb, confidence),
                      confidence=confidence)


def holm_family(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """The comparisons with their Holm-adjusted p-values over all of them (``m = len(comparisons)``)."""
    adjusted = holm([c.p for c in comparisons])
    return [replace(c, p_holm=q, m=len(comparisons)) for c, q in zip(comparisons, adjusted)]


def verdict(c: Comparison, alpha: float = ALPHA) -> str:
    """``"above"`` (``a`` over ``b``), ``"below"`` or ``"not separated"``: a direction only when the Holm-adjusted test
    rejects at ``alpha`` and the interval of the difference excludes 0 on that side."""
    if c.p_holm is None:
        raise ValueError(f"{c.a} vs {c.b} on {c.where}: correct the comparisons together first (holm_family)")
    return direction(c.p_holm, c.low, c.high, alpha)


def direction(p_holm: float, low: float, high: float, alpha: float = ALPHA) -> str:
    """The one rule every verdict states: ``"above"`` when the Holm-adjusted ``p_holm`` is below ``alpha`` and the
    interval ``[low, high]`` of the difference lies above 0, ``"below"`` when it lies below 0, else ``"not
    separated"``."""
    if p_holm < alpha and low > 0:
        return "above"
    if p_holm < alpha and high < 0:
        return "below"
    return "not separated"


def _num(x: float) -> str:
    return f"{x:+.3f}"


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def sentence(c: Comparison, alpha: float = ALPHA) -> str:
    """The line that states ``c`` (see the module docstring for its form)."""
    word = verdict(c, alpha)
    head = f"{c.a} {word} {c.b} on {c.where}" if word != "not separated" else \
        f"{c.a} vs {c.b} on {c.where}: not separated"
    test = "exact sign-flip" if c.exact else "sign-flip (Monte Carlo)"
    body = (f"paired difference {_num(c.diff)} [{_num(c.low)}, {_num(c.high)}] ({c.confidence:.0%} t) over {c.n} "
            f"seed{'s' if c.n != 1 else ''}, {test} p = {_p(c.p)}, Holm-adjusted p = {_p(c.p_holm)} "
            f"(Holm over {c.m} comparison{'s' if c.m != 1 else ''}, family-wise {alpha:.0%})")
    if c.unpaired_a is not None and c.unpaired_b is not None:
        body += f"; unpaired: {c.a} {format_ci(c.unpaired_a)}, {c.b} {format_ci(c.unpaired_b)}"
    return f"{head}: {body}" if word != "not separated" else f"{head} ({body})"


def _shared_families(a: Mapping[str, Any], b: Mapping[str, Any], families: Sequence[str]) -> list[str]:
    return [f for f in families if f in a["families"] and f in b["families"]]


def _check_paired(methods: Mapping[str, Mapping[str, Any]], a: str, b: str) -> None:
    if list(methods[a]["seeds"]) != list(methods[b]["seeds"]):
        raise ValueError(f"{a} and {b} were scored on different seeds ({methods[a]['seeds']} and "
                         f"{methods[b]['seeds']}): a paired comparison needs the same seeds (train both on the "
                         "suite's)")


def suite_comparisons(methods: Mapping[str, Mapping[str, Any]], a: str, b: str, families: Sequence[str],
                      settings: bool = False, seed: int = 0) -> list[Comparison]:
    """Method ``a`` against ``b`` (uncorrected), from the suite's scored methods (per method: ``"seeds"``,
    ``"families": {family: {"seeds": [per-seed score], "settings": [names]}}``, ``"settings": {name: {"seeds":
    [...]}}``): on the mean of the families both cover (per seed), on each of them, and with ``settings`` on each
    setting both have. ``families``: the suite's families in order. Seeds pair by position (the same seed list)."""
    _check_paired(methods, a, b)
    ma, mb = methods[a], methods[b]
    shared = _shared_families(ma, mb, families)
    if not shared:
        return []
    out = []
    if len(shared) > 1:
        xa = np.mean([ma["families"][f]["seeds"] for f in shared], axis=0)
        xb = np.mean([mb["families"][f]["seeds"] for f in shared], axis=0)
        both = set(ma["families"]) == set(mb["families"]) == set(shared)
        where = f"the aggregate of {len(shared)} families" + ("" if both else f" both cover ({', '.join(shared)})")
        out.append(comparison(a, b, where, xa, xb, seed=seed))
    for f in shared:
        out.append(comparison(a, b, f, ma["families"][f]["seeds"], mb["families"][f]["seeds"], seed=seed))
        if settings:
            for name in ma["families"][f]["settings"]:
                if name in mb["settings"]:
                    out.append(comparison(a, b, name, ma["settings"][name]["seeds"], mb["settings"][name]["seeds"],
                                          seed=seed))
    return out


def suite_family(methods: Mapping[str, Mapping[str, Any]], under_test: str | None, families: Sequence[str],
                 settings: bool = False, seed: int = 0) -> list[Comparison]:
    """The comparisons :func:`suite_verdicts` states, Holm-corrected together: ``under_test`` (default: the first
    method) against every other method, then ``broadcast`` against ``shuffled`` per family (once)."""
    if not methods:
        return []
    mine = under_test if under_test in methods else next(iter(methods))
    main = [c for other in methods if other != mine
            for c in suite_comparisons(methods, mine, other, families, settings, seed)]
    has_control = "broadcast" in methods and "shuffled" in methods
    control = [] if not has_control or mine in ("broadcast", "shuffled") else \
        [c for c in suite_comparisons(methods, "broadcast", "shuffled", families, seed=seed) if c.where in families]
    return holm_family(main + control)


def headline(corrected: Sequence[Comparison], alpha: float = ALPHA, limit: int = 6) -> str:
    """One sentence from corrected records (:func:`holm_family`): how many comparisons separated and how many did
    not, with the Holm family's size, naming the separated ones (the first ``limit``, aggregates first) and the
    aggregate comparisons that did not separate. Never from ranks: each count is of :func:`verdict`'s words."""
    if not corrected:
        return "No paired comparison: fewer than two entries share seeds here."
    words = [verdict(c, alpha) for c in corrected]
    first = sorted(range(len(corrected)), key=lambda i: not corrected[i].where.startswith("the aggregate"))
    sep = [f"{corrected[i].a} {words[i]} {corrected[i].b} on {corrected[i].where}" for i in first
           if words[i] != "not separated"]
    level: dict[str, list[str]] = {}
    for i in first:
        if words[i] == "not separated" and corrected[i].where.startswith("the aggregate"):
            level.setdefault(corrected[i].a, []).append(corrected[i].b)
    n, m = len(corrected), corrected[0].m
    holm_words = f"Holm-corrected over {m}, family-wise {alpha:.0%}"
    if sep:
        text = (f"{len(sep)} of {n} paired comparison{'s' if n != 1 else ''} separated ({holm_words}): " +
                "; ".join(sep[:limit]) + (f"; and {len(sep) - limit} more" if len(sep) > limit else "") +
                f"; the other {n - len(sep)} did not")
    else:
        text = f"None of {n} paired comparison{'s' if n != 1 else ''} separated ({holm_words})"
    if level:
        named = [f"{a} vs {', '.join(bs[:limit])}" + (f" and {len(bs) - limit} more" if len(bs) > limit else "")
                 for a, bs in level.items()]
        text += ", and on the aggregate not separated: " + "; ".join(named)
    seeds = {c.n for c in corrected}
    if not sep and all(c.exact for c in corrected) and len(seeds) == 1 and 2 / 2 ** min(seeds) >= alpha:
        n_seeds = min(seeds)
        text += (f" (over {n_seeds} seeds the exact sign-flip test cannot reach p < {alpha:.0%}: its smallest p is "
                 f"2/2^{n_seeds} = {2 / 2 ** n_seeds:.4f})")
    return text + "."


def suite_verdicts(methods: Mapping[str, Mapping[str, Any]], under_test: str | None, families: Sequence[str],
                   settings: bool = False, alpha: float = ALPHA, seed: int = 0) -> list[str]:
    """The suite's verdict in sentences: ``under_test`` (default: the first method) against every other method
    (:func:`suite_comparisons`), then the control check, ``broadcast`` against ``shuffled`` on each family (a family
    where they are not separated measured no credit at this budget). Every comparison printed is in one Holm family,
    the control's included (counted once where the method under test is one of the two)."""
    if not methods:
        return ["no method was scored"]
    mine = under_test if under_test in methods else next(iter(methods))
    corrected = suite_family(methods, mine, families, settings, seed)
    has_control = "broadcast" in methods and "shuffled" in methods
    out = [sentence(c, alpha) for c in corrected]
    if len(methods) == 1:
        out.insert(0, f"{mine} only: no other method to compare with (add --baselines)")
    if not has_control:
        out.append("control: not run (the suite's check needs both broadcast and shuffled among the methods)")
        return out
    flip = {"above": "below", "below": "above", "not separated": "not separated"}
    words: dict[str, list[str]] = {"above": [], "below": [], "not separated": []}
    for c in corrected:
        if c.where in families and {c.a, c.b} == {"broadcast", "shuffled"}:
            word = verdict(c, alpha)
            words[word if c.a == "broadcast" else flip[word]].append(c.where)
    n = sum(map(len, words.values()))
    text = f"control: broadcast above shuffled on {len(words['above'])}/{n} families"
    text += f" ({', '.join(words['above'])})" if words["above"] else ""
    text += f"; shuffled above broadcast on {', '.join(words['below'])}" if words["below"] else ""
    text += f"; not separated on {', '.join(words['not separated'])}" if words["not separated"] else ""
    return out + [text + f" (the family lines above, Holm over their {len(corrected)} comparisons; shuffled keeps "
                         "the advantages' distribution and drops their credit: a family where it is not separated "
                         "from broadcast measures no credit at this budget)"]
