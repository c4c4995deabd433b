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
from typing import Sequence

from leaderboard.stats import holm, paired, t_interval

__all__ = ["ALPHA", "Comparison", "comparison", "holm_family", "sentence", "verdict"]

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
                      unpaired_a=t_interval(xa, confidence), unpaired_b=t_interval(xb, confidence),
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
    if c.p_holm < alpha and c.low > 0:
        return "above"
    if c.p_holm < alpha and c.high < 0:
        return "below"
    return "not separated"


def _num(x: float) -> str:
    return f"{x:+.3f}"


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _ci(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


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
        body += f"; unpaired: {c.a} {_ci(c.unpaired_a)}, {c.b} {_ci(c.unpaired_b)}"
    return f"{head}: {body}" if word != "not separated" else f"{head} ({body})"
