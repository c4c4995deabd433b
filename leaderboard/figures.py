"""The leaderboard's figures, drawn with matplotlib and embedded as base64 PNG, in the style of rliable and
marl-eval: one colour per method on every figure of a page (:class:`Palette`), legends below the axes, 4.6-inch
figures whose text stays legible on a phone. A board's figures (:func:`board_figures`): the aggregate with 95% CIs,
performance profiles with bootstrap bands, learning curves of credit entries, and training cost against score
(:func:`cost_figure`, which the credit suite's page draws too). The numbers come from :mod:`leaderboard.stats`;
nothing here computes a statistic of its own beyond the bands it draws."""

from __future__ import annotations

import base64
import io
import zlib
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from leaderboard.board import Board
from leaderboard.escape import mpl_text
from leaderboard.stats import bootstrap_cells, cell_matrix

__all__ = ["Figure", "Palette", "board_figures", "cost_figure", "figure_png", "finish_figure", "hex_colour",
           "label_axes", "legend_below", "pyplot"]


@dataclass
class Figure:
    """One figure of a board's section: ``png`` is base64 (:func:`figure_png`); ``colours`` maps each short method
    name drawn to the colour it was drawn in (read back from the artists; the page test checks they agree)."""
    key: str
    caption: str
    png: str
    colours: dict[str, str] = field(default_factory=dict)


# Fixed colours for the built-in methods and players (Okabe-Ito and tab10/tab20 hues: distinct, colour-blind aware);
# any other name takes the next free colour in sorted-name order, the same on every figure of a page.
_FIXED = {"broadcast": "#0072b2", "none": "#7f7f7f", "rae": "#009e73", "marshal": "#cc79a7", "coma": "#d55e00",
          "loo": "#e69f00", "ccpo_v1": "#56b4e9", "ccpo_v2": "#8c564b", "dr_mas": "#9467bd", "shuffled": "#000000",
          "reference-bots": "#2ca02c", "random": "#bcbd22"}
_SPARE = ["#1f77b4", "#ff7f0e", "#d62728", "#17becf", "#e377c2", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
          "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#393b79", "#637939", "#8c6d31", "#843c39"]


class Palette:
    """One colour per short method name, fixed across every figure of a page."""

    def __init__(self, names):
        self._map: dict[str, str] = {}
        free = [c for c in _SPARE if c not in _FIXED.values()]
        for name in sorted(set(names)):
            if name in _FIXED:
                self._map[name] = _FIXED[name]
        for name in sorted(set(names)):
            if name not in self._map:
                self._map[name] = free.pop(0) if free else "#%06x" % (zlib.crc32(name.encode("utf-8")) & 0xFFFFFF)
        self._free = free

    def colour(self, name: str) -> str:
        if name not in self._map:
            self._map[name] = self._free.pop(0) if self._free else "#444444"
        return self._map[name]


def figure_png(fig) -> str:
    """A matplotlib figure as base64 PNG (150 dpi, the figure's own size: figures made 4.6 inches wide with
    ``layout="constrained"`` show their text at one size on the page)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend with the page's style (10 pt text, no top or right spine)."""
    import matplotlib  # lazy: an optional extra (marl-llm-envs[leaderboard]), loaded only to draw

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: after use("Agg"), which must come first

    plt.rcParams.update({"font.size": 10, "axes.spines.top": False, "axes.spines.right": False})
    return plt


def hex_colour(colour) -> str:
    """A matplotlib colour (as an artist reports it) as ``#rrggbb``."""
    from matplotlib.colors import to_hex  # lazy: matplotlib, an optional extra, loads only to draw

    return to_hex(colour)


def legend_below(fig, ax, ncol: int = 3) -> None:
    """``ax``'s legend under the figure, in ``ncol`` columns, without a frame (none where nothing is labelled)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False, fontsize=9)


def label_axes(ax, title: str, xlabel: str, ylabel: str = "", grid: str | None = "both") -> None:
    """Title ``ax`` (9 pt), label its axes and grid it (``grid``: "x", "y", "both", or ``None`` for the axes' own)."""
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    if grid is not None:
        ax.grid(axis=grid, alpha=0.3)


def finish_figure(plt, fig, ax, title: str, xlabel: str, ylabel: str = "", grid: str | None = "both",
                  ncol: int = 3) -> str:
    """:func:`label_axes`, the legend below in ``ncol`` columns (:func:`legend_below`), and the figure as base64 PNG
    (:func:`figure_png`); the figure is closed."""
    label_axes(ax, title, xlabel, ylabel, grid)
    legend_below(fig, ax, ncol)
    png = figure_png(fig)
    plt.close(fig)
    return png


def _score_figure(board: Board, palette: Palette) -> Figure:
    plt = pyplot()
    rows = board.rows
    fig, ax = plt.subplots(figsize=(4.6, 0.32 * len(rows) + 1.6), layout="constrained")
    colours = {}
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        c = palette.colour(r.short)
        a = r.aggregate
        line = ax.errorbar(a[0], y, xerr=[[a[0] - a[1]], [a[2] - a[0]]], fmt="o", ms=6,
                           color=c, ecolor=c, elinewidth=3, capsize=0)
        colours[r.short] = hex_colour(line.lines[0].get_color())
    ax.set_yticks(range(len(rows))[::-1], [mpl_text(r.short) for r in rows])
    ax.axvline(0, color="grey", lw=0.8, ls=":")
    ax.axvline(1, color="grey", lw=0.8, ls="--")
    png = finish_figure(plt, fig, ax, f"Aggregate: {board.iqm_covers()}",
                        "aggregate normalized score\n(random = 0, reference = 1; 95% CI)", grid="x")
    return Figure("iqm", f"The aggregate with bootstrap 95% CIs, {board.iqm_covers()}.", png, colours)


def _profile_figure(board: Board, palette: Palette, seed: int = 0) -> Figure:
    plt = pyplot()
    rows = board.rows
    cells = [cell_matrix(r.scores).ravel() for r in rows]
    lo = min(float(c.min()) for c in cells)
    hi = max(float(c.max()) for c in cells)
    taus = np.linspace(min(lo, 0.0) - 0.05, max(hi, 1.0) + 0.05, 120)
    fig, ax = plt.subplots(figsize=(4.6, 3.2), layout="constrained")
    colours = {}
    for r, c in zip(rows, cells):
        boot = bootstrap_cells(r.scores, reps=300, seed=seed).reshape(300, -1)
        curve = (boot[:, :, None] > taus[None, None, :]).mean(axis=1)          # reps x taus
        low, high = np.percentile(curve, [2.5, 97.5], axis=0)
        colour = palette.colour(r.short)
        (line,) = ax.plot(taus, [(c > t).mean() for t in taus], color=colour, lw=2, label=mpl_text(r.short))
        ax.fill_between(taus, low, high, color=colour, alpha=0.08, lw=0)
        colours[r.short] = hex_colour(line.get_color())
    ax.set_ylim(-0.02, 1.02)
    png = finish_figure(plt, fig, ax, "performance profile (95% bootstrap band)",
                        "normalized score \u03c4 (random = 0, reference = 1)",
                        "fraction of runs \u00d7 tasks\nwith score > \u03c4")
    return Figure("profile", "Performance profiles: the fraction of (run, task) scores above each threshold, with "
                             "95% bootstrap bands over runs and evaluation seeds.", png, colours)


def _curve_figures(board: Board, entries: list[dict], palette: Palette, seed: int = 0) -> list[Figure]:
    """Learning curves of credit-track entries (the trainer's logged team reward per step, as submitted, not
    validated): one figure per env, the mean over runs with a 95% bootstrap band over runs."""
    plt = pyplot()
    short = {r.label: r.short for r in board.rows}
    by_env: dict[str, dict[str, list[dict]]] = {}
    for e in entries:
        for env_id, runs in e["manifest"]["players"].items():
            curves = [p["learning_curve"] for p in runs if isinstance(p.get("learning_curve"), dict)]
            if curves and e["label"] in short:
                by_env.setdefault(env_id, {})[short[e["label"]]] = curves
    out = []
    rng = np.random.default_rng(seed)
    for env_id, methods in sorted(by_env.items()):
        fig, ax = plt.subplots(figsize=(4.6, 3.2), layout="constrained")
        colours = {}
        runs_n = set()
        order = {r.short: i for i, r in enumerate(board.rows)}                # the table's order, as every legend
        for name, curves in sorted(methods.items(), key=lambda kv: order[kv[0]]):
            keys = sorted(k for k in curves[0] if k.startswith("reward/team/"))
            if not keys:
                continue
            n = min(len(c["step"]) for c in curves)
            ys = np.array([c[keys[0]][:n] for c in curves], dtype=np.float64)       # runs x steps
            steps = np.asarray(curves[0]["step"][:n])
            colour = palette.colour(name)
            (line,) = ax.plot(steps, ys.mean(axis=0), color=colour, lw=2, label=mpl_text(name))
            if len(ys) > 1:
                pick = rng.integers(len(ys), size=(500, len(ys)))
                boot = ys[pick].mean(axis=1)
                low, high = np.percentile(boot, [2.5, 97.5], axis=0)
                ax.fill_between(steps, low, high, color=colour, alpha=0.15, lw=0)
            colours[name] = hex_colour(line.get_color())
            runs_n.add(len(ys))
        if not colours:
            plt.close(fig)
            continue
        n_runs = "/".join(str(n) for n in sorted(runs_n))
        png = finish_figure(plt, fig, ax, f"{env_id}: learning curves, mean of {n_runs} runs", "training step",
                            "team reward per episode\n(training batch mean)")
        out.append(Figure(f"curves-{env_id}", f"Learning curves on {env_id} as each submission's trainer logged "
                                              f"them (not validated): mean over {n_runs} runs with a 95% bootstrap "
                                              f"band over runs.", png, colours))
    return out


def cost_figure(points: dict[str, tuple[int, Sequence[float]]], palette: Palette, ylabel: str,
                caption: str) -> Figure:
    """Training cost against score: per name, ``(tokens, (point, low, high))`` as a point with its CI, in the
    palette's colours. The token axis is logarithmic where the totals span a decade or more (within one, a log axis
    would show no tick at all)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter  # lazy: matplotlib draws only here

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 3.2), layout="constrained")
    colours = {}
    for name, (total, c) in points.items():
        colour = palette.colour(name)
        line = ax.errorbar(total, c[0], yerr=[[c[0] - c[1]], [c[2] - c[0]]], fmt="o", ms=7, color=colour,
                           ecolor=colour, elinewidth=2, capsize=0, label=mpl_text(name))
        colours[name] = hex_colour(line.lines[0].get_color())
    totals = [t for t, _ in points.values()]
    log = max(totals) / min(totals) >= 10
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.margins(x=0.25)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if x >= 1000 else f"{x:g}"))
    png = finish_figure(plt, fig, ax, "cost against score",
                        f"training tokens, all runs{' (log scale)' if log else ''},\ncounterfactual branches included",
                        ylabel)
    return Figure("cost", caption, png, colours)


def _board_cost_figure(board: Board, palette: Palette) -> Figure | None:
    points = {r.short: (r.tokens.get("train_main", 0) + r.tokens.get("train_branches", 0), r.aggregate)
              for r in board.rows}
    points = {name: p for name, p in points.items() if p[0] > 0}
    if not points:
        return None
    return cost_figure(points, palette, "aggregate normalized score (95% CI)",
                       "Training cost against score: every token generated in training (main rollouts and "
                       "counterfactual branches, all runs) against the aggregate with its 95% CI.")


def board_figures(board: Board, entries: list[dict], palette: Palette) -> list[Figure]:
    """A board's own figures: the aggregate with its CI per entry, the performance profiles, the learning curves of
    credit entries and the cost against score (the page adds the registered hooks' figures after them)."""
    out = [_score_figure(board, palette), _profile_figure(board, palette, board.seed)]
    out += _curve_figures(board, entries, palette, board.seed)
    cost = _board_cost_figure(board, palette)
    if cost is not None:
        out.append(cost)
    return out
