"""``python -m leaderboard show`` (a terminal table) and ``python -m leaderboard render`` (``LEADERBOARD.md`` and a
static, offline ``index.html``; no network access, no external script).

What a board shows, on every surface (terminal, Markdown, page):

* a verdict in sentences (:func:`leaderboard.board.verdicts`): which entries the IQM and the Elo separate at 95%,
  and ``P(entry > leader)`` with its CI and its direction;
* what each statistic covers, next to the number: the IQM's tasks and runs, the Elo's envs and opponents;
* the table: rank, entry, runs, IQM [95% CI], Elo [95% CI], ``P(entry > leader)`` [95% CI], per-task means, the
  training tokens and, of those, the counterfactual ones (the cost of COMA/LOO-style branches).

The page adds figures in the style of rliable and marl-eval, drawn with matplotlib and embedded as PNG: IQM with
95% CIs, performance profiles with bootstrap bands, learning curves (mean over runs, bootstrap band) for credit
entries, and training cost against score. One method has one colour in every figure of the page (:class:`Palette`);
figures use the short method name (the hash is in the table and the tooltip). The layout reads on a phone: viewport
meta tag, tables in horizontally scrollable wrappers, figures sized so their text stays legible at 390 px.

Every submitted string (labels, method and model names, notes) is cleaned of control characters and escaped for
its surface (:func:`md_cell`, :func:`html_text`, :func:`mpl_text`): a newline, ``|`` or ``<`` in a model id cannot
add a row or markup.

Hooks for other modules (e.g. the credit suite): append to :data:`EXTRA_COLUMNS` a function ``board -> [(header,
row -> str), ...]`` for more columns (after the per-task ones), and to :data:`EXTRA_FIGURES` a function ``(board,
entries, palette) -> [Figure, ...]`` for more figures on that board's section. Both are called for every board;
return ``[]`` for boards they do not apply to. Use :meth:`Palette.colour` and :func:`figure_png` so added figures
share the page's colours and format.
"""

from __future__ import annotations

import base64
import html
import io
import json
import textwrap
import unicodedata
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from leaderboard.board import Board, Row, build_board, verdicts
from leaderboard.stats import bootstrap_cells, cell_matrix
from leaderboard.store import load_entries, read_index

__all__ = ["EXTRA_COLUMNS", "EXTRA_FIGURES", "Figure", "PageContext", "Palette", "boards", "clean",
           "comparison_markdown", "context_html", "figure_html", "figure_png", "finish_figure", "html_text",
           "label_axes", "legend_below", "markdown", "md_cell", "mpl_text", "page", "page_head", "pyplot", "render",
           "show", "show_text"]

SHOW_WIDTH = 120

EXTRA_COLUMNS: list[Callable[[Board], list[tuple[str, Callable[[Row], str]]]]] = []
EXTRA_FIGURES: list[Callable[[Board, list[dict], "Palette"], list["Figure"]]] = []


@dataclass
class Figure:
    """One figure of a board's section: ``png`` is base64 (:func:`figure_png`); ``colours`` maps each short method
    name drawn to the colour it was drawn in (read back from the artists; the page test checks they agree)."""
    key: str
    caption: str
    png: str
    colours: dict[str, str] = field(default_factory=dict)


@dataclass
class PageContext:
    """What a ``benchmark-credit`` comparison adds to its board: the title, the method under test (highlighted,
    and the verdict compares it with every other entry), facts (budget, seeds, wall time, ...) and notes
    (applicability, ranking scope)."""
    title: str
    under_test: str | None = None
    facts: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------- escaping

_UNSAFE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def clean(text: object, limit: int = 80) -> str:
    """``text`` as one line: control and format characters (newlines, escapes, bidi overrides) become U+FFFD,
    longer than ``limit`` characters is cut with an ellipsis."""
    s = "".join("\ufffd" if unicodedata.category(c) in _UNSAFE else c for c in str(text))
    return s if len(s) <= limit else s[:limit - 1] + "\u2026"


def md_cell(text: object, limit: int = 80) -> str:
    """``text`` safe in a Markdown table cell: one line, ``|`` escaped, ``<`` as an entity (no tag can open; ``>``
    stays readable, as in ``P(a > b)``), ``](`` and ``://`` escaped (no link or image, no bare URL made live)."""
    return clean(text, limit).replace("<", "&lt;").replace("|", "\\|").replace("](", "]\\(").replace("://", ":\\/\\/")


def html_text(text: object, limit: int = 80) -> str:
    """``text`` safe in HTML text and quoted attributes."""
    return html.escape(clean(text, limit), quote=True)


def mpl_text(text: object, limit: int = 40) -> str:
    """``text`` safe as a matplotlib label (``$`` would start math mode)."""
    return clean(text, limit).replace("$", r"\$")


# ---------------------------------------------------------------------------------------------------- colours

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


# ---------------------------------------------------------------------------------------------------- tables

def boards(store, reps: int = 2000) -> list[tuple[Board, list[dict]]]:
    keys = sorted({row["protocol"] for row in read_index(Path(store))})
    out = []
    for key in keys:
        entries = load_entries(store, key)
        board = build_board(entries, reps=reps)
        if board is not None:
            out.append((board, entries))
    return out


def _ci(v: tuple[float, float, float] | None, digits: int = 3) -> str:
    if v is None:
        return "-"
    return f"{v[0]:.{digits}f} [{v[1]:.{digits}f}, {v[2]:.{digits}f}]"


def _elo(v) -> str:
    return "-" if v is None else f"{v[0]:.0f} [{v[1]:.0f}, {v[2]:.0f}]"


def _opponents(board: Board) -> str:
    return ", ".join(f"{p} {_elo(v)}" for p, v in sorted(board.opponents.items()))


def _envs(board: Board) -> str:
    return ", ".join(e.rsplit("-v", 1)[0] for e in board.elo_envs)


def _table(board: Board, wide: bool = True) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of ``board`` (raw text: the caller escapes). ``wide=False`` keeps the columns that fit a
    120-column terminal (no model, no per-task means)."""
    leader = board.row(board.leader).short
    has_elo = any(r.elo for r in board.rows)
    cols: list[tuple[str, Callable[[Row], str]]] = [
        ("rank", lambda r: str(r.rank)), ("entry", lambda r: r.label + (" (self-reported)" if r.self_reported else ""))]
    if wide:
        cols.append(("model", lambda r: r.model))
    cols += [("runs", lambda r: str(r.runs)),
             (f"IQM, {len(board.tasks)} tasks [95% CI]" if wide else "IQM [95% CI]", lambda r: _ci(r.iqm))]
    if has_elo:
        cols.append((f"Elo, {_envs(board)} [95% CI]" if wide else "Elo [95% CI]", lambda r: _elo(r.elo)))
    cols.append((f"P(entry > {leader}) [95% CI]" if wide else "P(entry > leader)",
                 lambda r: "- (leader)" if r.poi_vs_best is None else _ci(r.poi_vs_best, 2)))
    if wide:
        cols += [(t, lambda r, t=t: f"{r.tasks[t]:.3f}" if t in r.tasks else "n/a") for t in board.tasks]
        for extra in EXTRA_COLUMNS:
            cols += extra(board)
    cols += [("train tokens" if wide else "tokens",
              lambda r: str(r.tokens.get("train_main", 0) + r.tokens.get("train_branches", 0))),
             ("counterfactual tokens" if wide else "cf. tokens", lambda r: str(r.tokens.get("train_branches", 0)))]
    return [c for c, _ in cols], [[f(r) for _, f in cols] for r in board.rows]


def _coverage(board: Board) -> list[str]:
    out = [f"IQM: normalized score (random = 0, reference = 1) over {board.iqm_covers()}."]
    if board.elo_envs:
        out.append(f"Elo: Bradley-Terry over {board.elo_covers()}; the other tasks are not in it.")
    return out


def _text_table(cols: list[str], rows: list[list[str]]) -> list[str]:
    cols, rows = [clean(c, 200) for c in cols], [[clean(c) for c in r] for r in rows]    # headers name entries too
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [line(cols), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def show(store, wide: bool = False) -> str:
    """The ranked tables of every protocol in ``store``, as plain text: the verdict, what each statistic covers and
    a table that fits 120 columns (``wide=True`` adds the model and per-task columns)."""
    return show_text(boards(store), wide)


def show_text(found: list[tuple[Board, list[dict]]], wide: bool = False) -> str:
    """:func:`show` of boards already built."""
    parts = []
    for board, _ in found:
        cols, rows = _table(board, wide=wide)
        if not wide:                                      # a long label must not push the table past 120 columns
            rows = [[clean(c) for c in r] for r in rows]
            width = sum(max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)) + 2 * (len(cols) - 1)
            keep = max(12, max(len(r[1]) for r in rows) - max(0, width - SHOW_WIDTH))
            rows = [[clean(c, keep) if i == 1 else c for i, c in enumerate(r)] for r in rows]
        parts.append(f"{clean(board.protocol)} ({clean(board.track)} track)")
        for v in verdicts(board):
            parts += textwrap.wrap(clean(v, 400), SHOW_WIDTH, initial_indent="  verdict: ", subsequent_indent="    ")
        for c in _coverage(board):
            parts += textwrap.wrap(c, SHOW_WIDTH, initial_indent="  ", subsequent_indent="    ")
        parts += _text_table(cols, rows)
        mine = [r.label for r in board.rows if r.self_reported]
        if mine:
            parts += textwrap.wrap("self-reported (the player was not re-run by the maintainer): "
                                   + ", ".join(clean(m) for m in mine), SHOW_WIDTH, subsequent_indent="  ")
        if board.opponents:
            parts += textwrap.wrap(f"opponents' Elo ({board.elo_anchor} fixed at 1000): " + _opponents(board),
                                   SHOW_WIDTH, subsequent_indent="  ")
        parts.append("")
    if parts and not wide:
        parts += textwrap.wrap("leader: the entry with the top IQM; tokens: generated in training, all runs; cf. "
                               "tokens: the counterfactual ones among them; --wide adds the model and the per-task "
                               "columns.", SHOW_WIDTH)
    parts = [clean(p, len(p)) for p in parts]       # verdicts, opponents: entries' text, one line each
    return "\n".join(parts) if parts else "the leaderboard is empty (python -m leaderboard submit DIR)"


def _md_table(cols: list[str], rows: list[list[str]], bold: int | None = None) -> list[str]:
    out = ["| " + " | ".join(md_cell(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for i, r in enumerate(rows):
        cells = [md_cell(c) for c in r]
        if i == bold:
            cells = [f"**{c}**" for c in cells]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _md_board(board: Board, under_test: str | None = None) -> list[str]:
    cols, rows = _table(board)
    bold = next((i for i, r in enumerate(board.rows) if under_test in (r.short, r.label)), None)
    out = ["**Verdict:**", ""] + [f"- {md_cell(v, 400)}" for v in verdicts(board, under_test)] + [""]
    out += [md_cell(c, 400) for c in _coverage(board)] + [""]
    out += _md_table(cols, rows, bold)
    if board.opponents:
        out += ["", f"Opponents' Elo ({md_cell(board.elo_anchor)} fixed at 1000): " + md_cell(_opponents(board), 400)]
    return out


def markdown(found: list[tuple[Board, list[dict]]]) -> str:
    out = ["# Leaderboard", "",
           "Generated by `python -m leaderboard render` from the entries in `leaderboard/entries/` (every statistic "
           "is recomputed from replay-validated episodes). Scores are normalized per task (random = 0, reference "
           "policy = 1); IQM over runs x tasks with a seeded stratified-bootstrap 95% CI; rank = 1 + the number of "
           "entries whose CI lies entirely above; P(entry > leader): the probability that a run of the entry beats "
           "one of the leader (top IQM) on a task, with a seeded bootstrap 95% CI (0.5 = no difference); Elo: "
           "Bradley-Terry over the versus games only (one game = one seed, both seats; random, or else the first "
           "opponent, = 1000), each env weighted equally. Train tokens: every token generated in training, all "
           "runs; counterfactual tokens: those of them spent on counterfactual branches. An entry marked "
           "(self-reported) was not re-run by the maintainer: its own moves are the submitter's word (see the threat "
           "model in leaderboard/README.md).", ""]
    for board, _ in found:
        out += [f"## {md_cell(board.protocol)} ({md_cell(board.track)} track)", ""]
        out += _md_board(board)
        out.append("")
    return "\n".join(out)


def comparison_markdown(board: Board, context: PageContext) -> str:
    """``comparison.md`` of ``benchmark-credit``: title, facts, notes, the verdict of the method under test against
    every other entry, and the table."""
    out = [f"# {md_cell(context.title, 200)}", ""]
    out += [f"- {md_cell(k)}: {md_cell(v, 400)}" for k, v in context.facts]
    out += [f"- {md_cell(n, 400)}" for n in context.notes] + [""]
    out += _md_board(board, context.under_test)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------- figures

def figure_png(fig) -> str:
    """A matplotlib figure as base64 PNG (150 dpi, the figure's own size: figures made 4.6 inches wide with
    ``layout="constrained"`` show their text at one size on the page)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend with the page's style (10 pt text, no top or right spine)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _hex(colour) -> str:
    from matplotlib.colors import to_hex

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
        line = ax.errorbar(r.iqm[0], y, xerr=[[r.iqm[0] - r.iqm[1]], [r.iqm[2] - r.iqm[0]]], fmt="o", ms=6,
                           color=c, ecolor=c, elinewidth=3, capsize=0)
        colours[r.short] = _hex(line.lines[0].get_color())
    ax.set_yticks(range(len(rows))[::-1], [mpl_text(r.short) for r in rows])
    ax.axvline(0, color="grey", lw=0.8, ls=":")
    ax.axvline(1, color="grey", lw=0.8, ls="--")
    png = finish_figure(plt, fig, ax, f"IQM over {board.iqm_covers()}",
                        "IQM of normalized score\n(random = 0, reference = 1; 95% CI)", grid="x")
    return Figure("iqm", f"IQM with stratified-bootstrap 95% CIs, {board.iqm_covers()}.", png, colours)


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
        colours[r.short] = _hex(line.get_color())
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
            colours[name] = _hex(line.get_color())
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


def _cost_figure(board: Board, palette: Palette) -> Figure | None:
    rows = [r for r in board.rows if r.tokens.get("train_main", 0) + r.tokens.get("train_branches", 0) > 0]
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 3.2), layout="constrained")
    colours = {}
    for r in rows:
        total = r.tokens.get("train_main", 0) + r.tokens.get("train_branches", 0)
        c = palette.colour(r.short)
        line = ax.errorbar(total, r.iqm[0], yerr=[[r.iqm[0] - r.iqm[1]], [r.iqm[2] - r.iqm[0]]], fmt="o", ms=7,
                           color=c, ecolor=c, elinewidth=2, capsize=0, label=mpl_text(r.short))
        colours[r.short] = _hex(line.lines[0].get_color())
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    png = finish_figure(plt, fig, ax, "cost against score",
                        "training tokens, all runs (log scale),\ncounterfactual branches included",
                        "IQM normalized score (95% CI)")
    return Figure("cost", "Training cost against score: every token generated in training (main rollouts and "
                          "counterfactual branches, all runs) against the IQM with its 95% CI.", png, colours)


def figures(board: Board, entries: list[dict], palette: Palette) -> list[Figure]:
    out = [_score_figure(board, palette), _profile_figure(board, palette, board.seed)]
    out += _curve_figures(board, entries, palette, board.seed)
    cost = _cost_figure(board, palette)
    if cost is not None:
        out.append(cost)
    for extra in EXTRA_FIGURES:
        out += extra(board, entries, palette)
    return out


# ---------------------------------------------------------------------------------------------------- page

_SORT_JS = """
function sortTable(th) {
  const table = th.closest('table'), body = table.tBodies[0];
  const i = Array.from(th.parentNode.children).indexOf(th);
  const asc = th.dataset.dir !== 'asc';
  th.parentNode.querySelectorAll('th').forEach(h => delete h.dataset.dir);
  th.dataset.dir = asc ? 'asc' : 'desc';
  const key = td => { const t = td.textContent.trim(); const n = parseFloat(t); return isNaN(n) ? t : n; };
  Array.from(body.rows).sort((a, b) => {
    const x = key(a.cells[i]), y = key(b.cells[i]);
    return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
  }).forEach(r => body.appendChild(r));
}
// On load: mark how many plots decoded (body data-plots-rendered), and apply a sort given in the address,
// #sort=N (column N ascending) or #sort=N-desc, to every table.
window.addEventListener('load', () => {
  const imgs = Array.from(document.querySelectorAll('img.plot'));
  document.body.dataset.plotsRendered = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  const m = location.hash.match(/^#sort=(\\d+)(-desc)?$/);
  if (!m) return;
  document.querySelectorAll('table.board').forEach(t => {
    const th = t.tHead.rows[0].cells[parseInt(m[1])];
    if (!th) return;
    sortTable(th);
    if (m[2]) sortTable(th);
  });
});
"""

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1em auto; padding: 0 1em; max-width: 1400px; color: #222;
       line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
.scroll { overflow-x: auto; max-width: 100%; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; white-space: nowrap; }
th { background: #f0f0f0; cursor: pointer; user-select: none; }
th[data-dir=asc]::after { content: " \\25B2"; } th[data-dir=desc]::after { content: " \\25BC"; }
tr.under-test td { background: #fff6d6; font-weight: bold; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px; margin-right: 0.35em;
          vertical-align: baseline; }
.hash { color: #888; font-size: 0.85em; }
.self-reported { color: #8a5a00; font-size: 0.8em; }
.verdict { background: #eef5ff; border-left: 4px solid #0072b2; padding: 0.5em 0.8em; margin: 0.8em 0; }
.verdict ul { margin: 0.2em 0; padding-left: 1.2em; }
.covers { color: #444; font-size: 0.95em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
dl.facts dt { font-weight: bold; } dl.facts dd { margin: 0; }
.figs { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; flex: 0 1 440px; min-width: 0; }
figure img { width: 100%; height: auto; display: block; }
figcaption { font-size: 0.85em; color: #555; }
@media (max-width: 600px) { body { padding: 0 0.5em; } table { font-size: 13px; } dl.facts { display: block; }
  dl.facts dd { margin-bottom: 0.4em; } }
"""


def _html_board(board: Board, entries: list[dict], palette: Palette, under_test: str | None = None) -> list[str]:
    pid = html_text(board.protocol)
    out = [f"<div class='verdict' id='verdict-{pid}'><strong>Verdict</strong><ul>" +
           "".join(f"<li>{html_text(v, 400)}</li>" for v in verdicts(board, under_test)) + "</ul></div>"]
    out += [f"<p class='covers'>{html_text(c, 400)}</p>" for c in _coverage(board)]
    cols, rows = _table(board)
    out.append(f"<div class='scroll'><table class='board' id='board-{pid}'><thead><tr>" +
               "".join(f"<th onclick='sortTable(this)'>{html_text(c, 200)}</th>" for c in cols) +
               "</tr></thead><tbody>")
    entry_col = cols.index("entry")
    for r, cells in zip(board.rows, rows):
        mine = under_test in (r.short, r.label)
        colour = palette.colour(r.short)
        name, _, tag = r.label.rpartition("#")
        entry = f"{html_text(name)}<span class='hash'>#{html_text(tag)}</span>" if name else html_text(r.label)
        if r.self_reported:
            entry += (" <span class='self-reported' title='not re-run by the maintainer: the moves are the "
                      "submitter&#39;s word'>self-reported</span>")
        tds = [f"<td title='{html_text(r.entry_id, 200)}' data-colour='{colour}'><span class='swatch' "
               f"style='background:{colour}'></span>{entry}</td>" if i == entry_col else f"<td>{html_text(c)}</td>"
               for i, c in enumerate(cells)]
        out.append(f"<tr{' class=under-test' if mine else ''} data-method='{html_text(r.short)}'>" + "".join(tds) +
                   "</tr>")
    out.append("</tbody></table></div>")
    if board.opponents:
        out.append(f"<p>Opponents' Elo ({html_text(board.elo_anchor)} fixed at 1000): "
                   f"{html_text(_opponents(board), 400)}</p>")
    out.append("<div class='figs'>")
    out += [figure_html(f) for f in figures(board, entries, palette)]
    out.append("</div>")
    return out


def figure_html(f: Figure) -> str:
    """One figure of a page: the PNG, its caption, and the colours each method was drawn in (``data-colours``, which
    the page test reads back from the pixels)."""
    return (f"<figure data-figure='{html_text(f.key)}' data-colours='{html_text(json.dumps(f.colours), 4000)}'>"
            f"<img class='plot' alt='{html_text(f.caption, 300)}' src='data:image/png;base64,{f.png}'>"
            f"<figcaption>{html_text(f.caption, 400)}</figcaption></figure>")


def page(found: list[tuple[Board, list[dict]]], context: PageContext | None = None) -> str:
    """The HTML page of ``found`` boards; ``context`` makes it a ``benchmark-credit`` comparison page (its title,
    facts and notes, the method under test highlighted and compared with every other entry)."""
    title = context.title if context else "marl_llm_envs leaderboard"
    palette = Palette(r.short for board, _ in found for r in board.rows)
    parts = page_head(title)
    if context is not None:
        parts += context_html(context)
    parts.append("<p>Scores are normalized per task (random = 0, reference policy = 1) and recomputed from "
                 "replay-validated episodes. IQM over runs &times; tasks with a seeded stratified-bootstrap 95% CI; "
                 "rank = 1 + the number of entries whose CI lies entirely above. P(entry &gt; leader): the "
                 "probability that a run of the entry beats one of the leader (top IQM) on a task, with a 95% "
                 "bootstrap CI (0.5 = no difference). Elo covers the versus games only. Click a column to sort; "
                 "hover an entry for its id.</p>")
    if not found:
        parts.append("<p>The leaderboard is empty.</p>")
    for board, entries in found:
        if context is None:
            parts.append(f"<h2>{html_text(board.protocol)} ({html_text(board.track)} track)</h2>")
        parts += _html_board(board, entries, palette, context.under_test if context else None)
    parts.append("</body></html>")
    return "\n".join(parts)


def page_head(title: str) -> list[str]:
    """The start of a page in this module's style (viewport meta, the style sheet, the sort script) up to its
    ``<h1>``; other pages (the credit suite's) start with it so every page looks alike. End with ``</body></html>``."""
    return ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{html_text(title, 200)}</title>",
            f"<style>{_CSS}</style><script>{_SORT_JS}</script></head><body>", f"<h1>{html_text(title, 200)}</h1>"]


def context_html(context: PageContext) -> list[str]:
    """The method under test, the facts and the notes of a comparison page."""
    parts = []
    if context.under_test:
        parts.append(f"<p>Method under test: <strong>{html_text(context.under_test)}</strong> (highlighted); "
                     f"the verdict compares it with every other entry.</p>")
    if context.facts:
        parts.append("<dl class='facts'>" + "".join(f"<dt>{html_text(k)}</dt><dd>{html_text(v, 600)}</dd>"
                                                    for k, v in context.facts) + "</dl>")
    if context.notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{html_text(n, 600)}</li>" for n in context.notes) +
                     "</ul>")
    return parts


def _suite_columns(board: Board) -> list[tuple[str, Callable[[Row], str]]]:
    from leaderboard.suite import board_columns       # the credit suite's aggregate; lazy: no cycle

    return board_columns(board)


def _suite_figures(board: Board, entries: list[dict], palette: Palette) -> list[Figure]:
    from leaderboard.suite import board_figures       # the suite's radar on its board

    return board_figures(board, entries, palette)


EXTRA_COLUMNS.append(_suite_columns)
EXTRA_FIGURES.append(_suite_figures)


def render(store, out: str | Path) -> tuple[Path, Path]:
    """Write ``LEADERBOARD.md`` and ``index.html`` into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, page_path = out / "LEADERBOARD.md", out / "index.html"
    found = boards(store)
    md.write_text(markdown(found), encoding="utf-8")
    page_path.write_text(page(found), encoding="utf-8")
    return md, page_path
