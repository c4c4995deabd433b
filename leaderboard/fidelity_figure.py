"""The figure of ``python -m leaderboard fidelity``: fidelity against each swept knob, with 95% bands. Imported by
:func:`leaderboard.fidelity.figure` only when it draws (matplotlib is slow to import and an optional extra)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after use("Agg"), which must come first

__all__ = ["draw"]


def _measured(row: dict[str, Any], m: str) -> bool:
    """Whether ``m`` was measured on ``row`` (a figure, not "not applicable")."""
    return m in row["methods"] and "skip" not in row["methods"][m]


def draw(summary: dict[str, Any], path: str | Path) -> Path | None:
    """Fidelity against each swept knob (team size, delay, clue accuracy, idle seats), one panel per family with
    more than one setting, a 95% band per method; ``None`` when no family sweeps a knob here."""
    families: dict[str, list[str]] = {}
    for s, row in summary.items():
        if isinstance(row["knob"], (int, float)) and not isinstance(row["knob"], bool) and row["policy"] == "initial" \
                and row.get("role") is None:
            families.setdefault(row["family"], []).append(s)
    families = {f: v for f, v in families.items() if len(v) > 1}
    if not families:
        return None
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
