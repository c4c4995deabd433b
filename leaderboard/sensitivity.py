"""Credit sensitivity (issue 40, item 5): which of a suite's families measure credit.

Beating ``shuffled`` shows that a family can be learnt at the budget, not that its score depends on credit: on a
family where the raw return (``none``) trains as well as the true advantage, the score says nothing of a method's
credit. So a family *measures credit* only where a credit-blind method and an informed one separate. The rule, fixed
here before any result is read (choosing the comparison after seeing the scores would be a forking path):

* **Credit-blind controls** (:data:`BLIND`): ``none`` (the raw return, no credit at all) and ``shuffled`` (the
  advantages' distribution with their credit information dropped). Every control present is tested.
* **The informed method** of a family (:data:`INFORMED`): the first of ``oracle``, ``loo``, ``coma`` that has scores
  on the family. ``oracle`` is each turn's true advantage ``A*`` (the positive control of the fidelity measurement),
  the most informed credit there is. Where it was not trained, ``loo`` (the difference reward from the env's own
  ``ablate`` clamp) and then ``coma`` (the counterfactual baseline over resampled alternatives): both give each agent
  its own counterfactual credit and both train on every family of the suite. ``broadcast`` is not informed: it gives
  every teammate the same advantage and differs from ``none`` only in its baseline; ``rae``, ``marshal``,
  ``dr_mas`` baseline per role or agent without a counterfactual, and the critics' credit is learnt, so how informed
  it is depends on training.
* **Training** (the criterion that decides): per family, the informed method against each control by paired
  differences over the training seeds (:func:`leaderboard.verdicts.comparison`: Student-t interval, exact sign-flip
  test). A family **passes** when every control present is separated *below* the informed method.
* **Fidelity** (the second criterion, shown beside, where entries carry the ``fidelity`` field of
  ``benchmark-credit``): ``oracle`` against ``shuffled`` in credit fidelity at the initial policy (Pearson r with
  ``A*``, per family). It says whether the family has credit to find at that policy, not whether its training score
  depends on it, so it never overrides the training verdict. The entries keep each method's interval, not the paired
  bootstrap draws, so its test is unpaired: the difference of the two r with a normal interval whose standard error
  is read from each 95% interval (``(high - low) / (2 x 1.96)``), and a two-sided normal p-value.
* **Multiplicity**: Holm's correction over every check the table prints (training and fidelity, all families), so
  "k of n families pass" holds family-wise at ``alpha``. A check is "separated" only where the Holm-adjusted p is
  below ``alpha`` and the interval excludes 0 on the informed side; "reversed" where the control is separated above;
  otherwise "not separated" (the test did not reject, which does not say the two are equal).

:func:`credit_sensitivity` runs the rule on per-seed family scores; :func:`sensitivity_rows` and
:func:`sensitivity_headline` put it in words for the terminal and the pages (the board's adapter is
:func:`leaderboard.board.board_sensitivity`, the suite's :func:`leaderboard.suite.report.suite_sensitivity`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from scipy.stats import norm

from leaderboard.stats import holm
from leaderboard.verdicts import ALPHA, comparison, direction

__all__ = ["BLIND", "COLUMNS", "INFORMED", "Check", "FamilySensitivity", "credit_sensitivity", "sensitivity_headline",
           "sensitivity_rows", "sensitivity_rule"]

BLIND = ("none", "shuffled")
INFORMED = ("oracle", "loo", "coma")
Z95 = float(norm.ppf(0.975))


@dataclass(frozen=True)
class Check:
    """One comparison of the table: ``informed - blind`` on ``family`` under ``criterion`` ("training": paired over
    seeds, exact sign-flip p; "fidelity": the unpaired normal test of the module docstring), its interval and
    p-value, Holm-adjusted over ``m`` checks."""
    family: str
    criterion: str
    informed: str
    blind: str
    diff: float
    low: float
    high: float
    p: float
    p_holm: float | None = None
    m: int = 0

    def word(self, alpha: float = ALPHA) -> str:
        """``"separated"`` (the informed method above the control), ``"reversed"`` (the control above) or ``"not
        separated"``."""
        if self.p_holm is None:
            raise ValueError(f"{self.family}: correct the checks together first (credit_sensitivity does)")
        return {"above": "separated", "below": "reversed"}.get(direction(self.p_holm, self.low, self.high, alpha),
                                                              "not separated")


@dataclass(frozen=True)
class FamilySensitivity:
    """One family's verdict: its checks, whether it passes in training and in fidelity (``None``: not tested, with
    the reason in ``notes``)."""
    family: str
    checks: list[Check] = field(default_factory=list)
    training: bool | None = None
    fidelity: bool | None = None
    notes: list[str] = field(default_factory=list)


def _fidelity_check(family: str, fidelity: Mapping[str, Mapping[str, Any]]) -> Check | None:
    """``oracle - shuffled`` in fidelity on ``family`` from the two stored intervals; ``None`` where either lacks a
    finite ``r``, ``low`` or ``high``."""
    sides = []
    for m in ("oracle", "shuffled"):
        f = (fidelity.get(m) or {}).get(family)
        if not isinstance(f, Mapping):
            return None
        vals = [f.get(k) for k in ("r", "low", "high")]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in vals):
            return None
        sides.append(vals)
    (ro, lo_o, hi_o), (rs, lo_s, hi_s) = sides
    se = math.hypot((hi_o - lo_o) / (2 * Z95), (hi_s - lo_s) / (2 * Z95))
    d = ro - rs
    p = float(2 * norm.sf(abs(d) / se)) if se > 0 else (0.0 if d != 0 else 1.0)
    return Check(family, "fidelity", "oracle", "shuffled", d, d - Z95 * se, d + Z95 * se, p)


def credit_sensitivity(per_seed: Mapping[str, Mapping[str, Sequence[float]]], families: Sequence[str],
                       fidelity: Mapping[str, Mapping[str, Any]] | None = None, alpha: float = ALPHA,
                       seed: int = 0) -> list[FamilySensitivity]:
    """The rule of the module docstring on ``per_seed[method][family]`` (a method's family score per training seed,
    seeds paired by position: methods of one protocol share their seed list) and, optionally, ``fidelity[method]
    [family] = {"r", "low", "high"}``. One :class:`FamilySensitivity` per family in ``families`` (the suite's order),
    every check Holm-corrected together."""
    fidelity = fidelity or {}
    found: list[tuple[str, list[Check], list[str], bool]] = []
    for fam in families:
        checks, notes, whole = [], [], True          # whole: every control present was compared
        informed = next((m for m in INFORMED if fam in per_seed.get(m, {})), None)
        blind = [m for m in BLIND if fam in per_seed.get(m, {})]
        if informed is None or not blind:
            missing = [] if informed is not None else [f"no informed method ({', '.join(INFORMED)})"]
            missing += [] if blind else [f"no credit-blind control ({', '.join(BLIND)})"]
            notes.append(f"training not tested: {' and '.join(missing)} on this family")
        for b in blind if informed is not None else []:
            xa, xb = per_seed[informed][fam], per_seed[b][fam]
            if len(xa) != len(xb):
                notes.append(f"{informed} vs {b} not compared ({len(xa)} and {len(xb)} seeds: a paired comparison "
                             "needs the same seeds), so the family cannot pass in training")
                whole = False
                continue
            c = comparison(informed, b, fam, xa, xb, seed=seed)
            checks.append(Check(fam, "training", informed, b, c.diff, c.low, c.high, c.p))
        fid = _fidelity_check(fam, fidelity)
        if fid is not None:
            checks.append(fid)
        found.append((fam, checks, notes, whole))
    flat = [c for _, checks, _, _ in found for c in checks]
    adjusted = iter(holm([c.p for c in flat]))
    out = []
    for fam, checks, notes, whole in found:
        checks = [replace(c, p_holm=next(adjusted), m=len(flat)) for c in checks]
        training = [c.word(alpha) == "separated" for c in checks if c.criterion == "training"]
        fid = [c.word(alpha) == "separated" for c in checks if c.criterion == "fidelity"]
        out.append(FamilySensitivity(fam, checks, (all(training) and whole) if training else None,
                                     all(fid) if fid else None, notes))
    return out


def sensitivity_rule() -> str:
    """The rule in one sentence, as the pages print it above the table."""
    return (f"A family measures credit where every credit-blind control present ({', '.join(BLIND)}) is separated "
            f"below the informed method (the first of {', '.join(INFORMED)} trained on it) by paired differences "
            f"over the training seeds; the fidelity rows (oracle against shuffled at the initial policy, where entries "
            f"carry it; an unpaired normal test from the two stored 95% intervals) are shown beside and do not decide. "
            f"Holm over every row of the table; \"not separated\" says the test did not reject, not that the two are "
            f"equal.")


def _signed(x: float) -> str:
    return f"{round(x, 3) + 0.0:+.3f}"          # + 0.0: never "-0.000"


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _passes(x: bool | None) -> str:
    return "not tested" if x is None else "passes" if x else "does not pass"


COLUMNS = ["family", "comparison", "difference [95% CI]", "Holm p", "check", "verdict"]


def sensitivity_rows(result: Sequence[FamilySensitivity], alpha: float = ALPHA) -> list[list[str]]:
    """The table's rows (:data:`COLUMNS`, at most 120 characters wide as a text table): per check, its family,
    ``informed - blind (criterion)``, the difference with its interval, the Holm-adjusted p, the check's word and
    the family's verdict under that criterion; a family with no check gets one row saying it was not tested (the
    reason is in its ``notes``)."""
    rows = []
    for fs in result:
        for c in fs.checks:
            verdict = fs.training if c.criterion == "training" else fs.fidelity
            rows.append([fs.family, f"{c.informed} - {c.blind} ({c.criterion})",
                         f"{_signed(c.diff)} [{_signed(c.low)}, {_signed(c.high)}]", _p(c.p_holm),
                         c.word(alpha), _passes(verdict) + (" (fidelity)" if c.criterion == "fidelity" else "")])
        if not fs.checks:
            rows.append([fs.family, "-", "-", "-", "-", "not tested"])
    return rows


def sensitivity_headline(result: Sequence[FamilySensitivity], alpha: float = ALPHA) -> str:
    """The sentence the headlines end with: how many families pass in training (named), which do not, and the
    fidelity count where it was measured; ``""`` where no family could be tested."""
    tested = [fs for fs in result if fs.training is not None]
    if not tested:
        return ""
    yes = [fs.family for fs in tested if fs.training]
    no = [fs.family for fs in tested if not fs.training]
    m = next(c.m for fs in tested for c in fs.checks)
    one = len(tested) == 1
    text = (f"Credit sensitivity: {len(yes)} of {len(tested)} famil{'y' if one else 'ies'} tested "
            f"pass{'es' if one else ''} (every credit-blind control separated below the informed method in training, "
            f"Holm over {m} check{'s' if m != 1 else ''})")
    text += f": {', '.join(yes)}" if yes else ""
    text += f"; not: {', '.join(no)}" if no else ""
    fid = [fs for fs in result if fs.fidelity is not None]
    if fid:
        text += (f"; in fidelity, oracle above shuffled on {sum(fs.fidelity for fs in fid)} of {len(fid)} "
                 f"famil{'y' if len(fid) == 1 else 'ies'}")
    return text + "."
