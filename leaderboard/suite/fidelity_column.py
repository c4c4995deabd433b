"""The leaderboard's credit-fidelity columns: on a board whose entries carry a ``fidelity`` field (``benchmark-credit``
on a suite measures it after the runs: :func:`leaderboard.benchmark._suite_fidelity`), one column per family
measured, ``r [95% CI]`` of the entry's advantages against the true advantage at the initial policy; ``-`` where an
entry has none (``--no-fidelity``, an older entry, a family its method cannot run on). Registered with
:func:`leaderboard.render.register` when :mod:`leaderboard.suite` is imported."""

from __future__ import annotations

from typing import Callable

from leaderboard.render import register
from leaderboard.stats import format_ci

__all__ = ["fidelity_columns", "fidelity_text"]


def fidelity_text(fidelity: dict, family: str) -> str:
    """``"r [low, high]"`` (2 decimals) of ``family`` in an entry's ``fidelity`` field; ``"-"`` where there is none
    or a figure is missing."""
    f = (fidelity.get("families") or {}).get(family)
    if not isinstance(f, dict) or any(not isinstance(f.get(k), (int, float)) for k in ("r", "low", "high")):
        return "-"
    return format_ci((f["r"], f["low"], f["high"]), 2)


def fidelity_columns(board) -> list[tuple[str, Callable]]:
    """:data:`leaderboard.render.EXTRA_COLUMNS` hook: ``fidelity FAMILY [95% CI]`` for every family some entry of
    ``board`` measured (in the order first met); none on a board without fidelity."""
    families = list(dict.fromkeys(fam for r in board.rows + board.partial
                                  for fam in (r.fidelity.get("families") or {})))
    return [(f"fidelity {fam} [95% CI]", lambda r, fam=fam: fidelity_text(r.fidelity, fam)) for fam in families]


register(columns=fidelity_columns)
