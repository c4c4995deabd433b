"""The leaderboard's figures, drawn with matplotlib and embedded as base64 PNG, in the style of rliable and
marl-eval and bsuite: every method in its :class:`leaderboard.style.Style` (colour, line style, marker) on every
figure of a page, legends below the axes with every entry, and text of at least 9 pt on 4.6-inch figures (a page
shows a figure at most 440 CSS px wide and, on a 390 px phone, about 370: 9 pt is then at least 10 CSS px).

A board's figures (:func:`board_figures`): the aggregate with 95% CIs, performance profiles with bootstrap bands,
learning curves of credit entries, and training cost against score (:func:`cost_figure`). The credit suite draws
its radar (:func:`radar`) and scaling curves (:func:`scaling_figure`, :func:`scaling_panels`) here too, from the
numbers it hands in. Each figure is measured as it is saved (:func:`render_figure`): the smallest text, anything
drawn past the image's edge, overlapping tick labels and the legend's labels, so the tests can check what a reader
sees. The numbers come from :mod:`leaderboard.stats`; nothing here computes a statistic beyond the bands it draws.

This module imports matplotlib (an optional extra, about a second to load) at its top; the pages load it through
:func:`leaderboard.render.plots`, the one place that imports it, on the first figure they draw."""

from __future__ import annotations

import base64
import io
import math
import textwrap
from collections.abc import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter
from PIL import Image  # matplotlib's own dependency

from leaderboard.board import Board
from leaderboard.escape import mpl_text
from leaderboard.stats import bootstrap_cells, cell_matrix
from leaderboard.style import Figure, Palette

matplotlib.use("Agg")                       # files only, no display (before the first figure)

__all__ = ["DPI", "FONT_PT", "MIN_FONT_PT", "WIDTH_IN", "Figure", "Palette", "board_figures", "cost_figure",
           "indexed_png", "legend_below", "new_figure", "radar", "radar_scale", "render_figure", "scaling_figure",
           "scaling_panels", "seed_curves"]

WIDTH_IN = 4.6        # every page figure's width: at most 440 CSS px on the page, about 370 on a 390 px phone
DPI = 120
FONT_PT = 11          # body text; tick labels and legends 10 pt, nothing under MIN_FONT_PT
MIN_FONT_PT = 9
plt.rcParams.update({"font.size": FONT_PT, "axes.titlesize": FONT_PT, "axes.labelsize": FONT_PT,
                     "xtick.labelsize": 10, "ytick.labelsize": 10, "legend.fontsize": 10,
                     "axes.spines.top": False, "axes.spines.right": False})


def new_figure(height: float, width: float = WIDTH_IN, **kw):
    """A figure ``width`` x ``height`` inches with constrained layout, and its axes."""
    return plt.subplots(figsize=(width, height), layout="constrained", **kw)


# ---------------------------------------------------------------------------------------------------- measuring

def _drawn_texts(fig) -> list[tuple[Text, str, object]]:
    """Every non-empty text the figure draws, with the axis it labels (``"x"``/``"y"`` for tick labels, else "")
    and its axes (``None`` for the figure's own)."""
    out = []
    for ax in fig.axes:
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                if lo - 1e-9 * (abs(lo) + abs(hi) + 1) <= tick.get_loc() <= hi + 1e-9 * (abs(lo) + abs(hi) + 1):
                    for label in (tick.label1, tick.label2):
                        if label.get_visible() and label.get_text().strip():
                            out.append((label, which, ax))
            if axis.label.get_visible() and axis.label.get_text().strip():
                out.append((axis.label, "", ax))
        for t in (ax.title, ax._left_title, ax._right_title):     # matplotlib keeps the three apart
            if t.get_visible() and t.get_text().strip():
                out.append((t, "", ax))
        out += [(t, "", ax) for t in ax.texts if t.get_visible() and t.get_text().strip()]
    for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]:
        out += [(t, "", None) for t in legend.get_texts() if t.get_text().strip()]
        if legend.get_title().get_text().strip():
            out.append((legend.get_title(), "", None))
    out += [(t, "", None) for t in fig.texts if t.get_visible() and t.get_text().strip()]
    return out


def render_figure(fig, key: str, caption: str, colours: dict[str, str]) -> Figure:
    """Measure ``fig`` as it will be seen, save it as base64 PNG at :data:`DPI` and close it. Measured: the smallest
    text in the PNG's pixels, how far any drawn artist reaches past the image's edge (its tight bounding box against
    the canvas), the tick labels that overlap another on the same axis, and the legends' labels."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.get_size_inches()
    tight = fig.get_tightbbox(renderer)                      # inches, every artist drawn
    overflow = max(0.0, -tight.x0, -tight.y0, tight.x1 - width, tight.y1 - height) * DPI
    texts = _drawn_texts(fig)
    min_font = min((t.get_fontsize() for t, _, _ in texts), default=FONT_PT) * DPI / 72
    overlaps = []
    for ax in fig.axes:
        for which in ("x", "y"):
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t, w, on in texts if w == which and on is ax]
            for i, (a, ba) in enumerate(boxes):
                for b, bb in boxes[i + 1:]:
                    if ba.x0 < bb.x1 - 0.5 and bb.x0 < ba.x1 - 0.5 and ba.y0 < bb.y1 - 0.5 and bb.y0 < ba.y1 - 0.5:
                        overlaps.append(f"{which} tick labels {a!r} and {b!r}")
    legend = [t.get_text() for lg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
              for t in lg.get_texts()]
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return Figure(key, caption, indexed_png(buf, colours.values()), colours,
                  min_font_px=round(min_font, 2), overflow_px=round(overflow, 2), overlaps=overlaps, legend=legend)


def indexed_png(buf: io.BytesIO, exact) -> str:
    """The PNG in ``buf`` as a 256-colour PNG, base64 (a third of the size): every colour of ``exact`` (the
    methods'), white and black kept exactly, then an adaptive palette of the image's colours; each pixel takes its
    nearest palette colour (no dithering, so a method's pixels keep its colour)."""
    image = Image.open(buf).convert("RGB")
    keep = list(dict.fromkeys([*exact, "#ffffff", "#000000"]))
    adaptive = image.quantize(colors=256 - len(keep), method=Image.Quantize.MEDIANCUT,
                              dither=Image.Dither.NONE).getpalette()[:3 * (256 - len(keep))]
    palette = np.array([int(c[i:i + 2], 16) for c in keep for i in (1, 3, 5)] + adaptive).reshape(-1, 3)
    pixels = np.asarray(image, dtype=np.int64)
    packed = (pixels[..., 0] << 16) | (pixels[..., 1] << 8) | pixels[..., 2]
    colours, inverse = np.unique(packed.ravel(), return_inverse=True)
    rgb = np.stack([colours >> 16, (colours >> 8) & 255, colours & 255], axis=1)
    nearest = ((rgb[:, None, :] - palette[None, :, :]) ** 2).sum(axis=2).argmin(axis=1).astype(np.uint8)
    out_image = Image.fromarray(nearest[inverse].reshape(packed.shape), mode="P")
    out_image.putpalette(palette.astype(np.uint8).ravel().tolist())
    out = io.BytesIO()
    out_image.save(out, format="png", optimize=True)
    return base64.b64encode(out.getvalue()).decode("ascii")


def legend_below(fig, axes, ncol: int | None = None, extra: Sequence = ()) -> None:
    """One legend under the figure holding every labelled artist of ``axes`` (an axes or a list; each label once)
    and ``extra`` handles, in ``ncol`` columns (default: as many as fit the figure's width), without a frame."""
    seen: dict[str, object] = {}
    for ax in axes if isinstance(axes, (list, tuple)) else [axes]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, h)
    for h in extra:
        seen.setdefault(h.get_label(), h)
    if not seen:
        return
    if ncol is None:
        longest = max(len(label) for label in seen)
        per_col = (longest * 0.6 * 10 + 40) / 72                      # inches: text at 10 pt, handle and gap
        ncol = max(1, min(len(seen), int(fig.get_size_inches()[0] * 0.95 // per_col)))
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncol=ncol, frameon=False)


def _fill(text: str, width_in: float, pt: float = FONT_PT) -> str:
    """``text`` wrapped to lines that fit ``width_in`` inches at ``pt`` points (existing line breaks kept)."""
    chars = max(12, int(width_in * 72 / (pt * 0.6)))
    return "\n".join(textwrap.fill(line, chars) for line in text.split("\n"))


def _label_axes(ax, title: str, xlabel: str, ylabel: str = "", grid: str | None = "both") -> None:
    """Title and label ``ax``, each wrapped to the axes' share of the figure's width, and grid it."""
    width = ax.get_figure().get_size_inches()[0] * ax.get_position().width * 1.15
    ax.set_xlabel(_fill(xlabel, width))
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.set_title(_fill(title, width))
    if grid is not None:
        ax.grid(axis=grid, alpha=0.3)


def _plot(ax, palette: Palette, name: str, x, y, label: str | None = None, **kw):
    """A line in ``name``'s style (colour, line style, a marker every few points); returns the line."""
    s = palette.style(name)
    kw.setdefault("markevery", max(1, len(x) // 8))
    kw.setdefault("ls", s.linestyle)
    (line,) = ax.plot(x, y, color=s.colour, marker=s.marker, ms=5, lw=2,
                      label=mpl_text(name if label is None else label), **kw)
    return line


def _point(ax, palette: Palette, name: str, x, ci, horizontal: bool = False, label: bool = True):
    """A point estimate with its interval in ``name``'s colour and marker; returns the colour drawn."""
    s = palette.style(name)
    err = [[ci[0] - ci[1]], [ci[2] - ci[0]]]
    args = {"fmt": s.marker, "ms": 7, "color": s.colour, "ecolor": s.colour, "elinewidth": 2.5, "capsize": 0}
    if horizontal:
        cont = ax.errorbar(ci[0], x, xerr=err, **args)
    else:
        cont = ax.errorbar(x, ci[0], yerr=err, label=mpl_text(name) if label else None, **args)
    return to_hex(cont.lines[0].get_color())


# ---------------------------------------------------------------------------------------------------- a board

def _score_figure(board: Board, palette: Palette) -> Figure:
    rows = board.rows
    fig, ax = new_figure(0.34 * len(rows) + 2.0)
    colours = {}
    for i, r in enumerate(rows):
        colours[r.short] = _point(ax, palette, r.short, len(rows) - 1 - i, r.aggregate, horizontal=True)
    ax.set_yticks(range(len(rows))[::-1], [mpl_text(r.short) for r in rows])
    ax.axvline(0, color="grey", lw=0.8, ls=":")
    ax.axvline(1, color="grey", lw=0.8, ls="--")
    ax.xaxis.set_major_locator(MaxNLocator(5))
    _label_axes(ax, f"Aggregate of {len(board.ranked_tasks)} {'families' if board.suite else 'tasks'}",
                "aggregate normalized score, 95% CI\n(random = 0, reference = 1)", grid="x")
    return render_figure(fig, "iqm", f"The aggregate with bootstrap 95% CIs, {board.iqm_covers()}.", colours)


def _profile_figure(board: Board, palette: Palette, seed: int = 0) -> Figure:
    rows = board.rows
    cells = [cell_matrix(r.scores).ravel() for r in rows]
    lo = min(float(c.min()) for c in cells)
    hi = max(float(c.max()) for c in cells)
    taus = np.linspace(min(lo, 0.0) - 0.05, max(hi, 1.0) + 0.05, 120)
    fig, ax = new_figure(3.4 + 0.22 * math.ceil(len(rows) / 3))
    colours = {}
    for r, c in zip(rows, cells):
        boot = bootstrap_cells(r.scores, reps=300, seed=seed).reshape(300, -1)
        curve = (boot[:, :, None] > taus[None, None, :]).mean(axis=1)          # reps x taus
        low, high = np.percentile(curve, [2.5, 97.5], axis=0)
        line = _plot(ax, palette, r.short, taus, [(c > t).mean() for t in taus])
        ax.fill_between(taus, low, high, color=line.get_color(), alpha=0.08, lw=0)
        colours[r.short] = to_hex(line.get_color())
    ax.set_ylim(-0.02, 1.02)
    _label_axes(ax, "Performance profile (95% bootstrap band)", "normalized score \u03c4 (random = 0, reference = 1)",
                "fraction of runs \u00d7 tasks\nwith score > \u03c4")
    legend_below(fig, ax)
    return render_figure(fig, "profile", "Performance profiles: the fraction of (run, task) scores above each "
                                         "threshold, with 95% bootstrap bands over runs and evaluation seeds.",
                         colours)


def _curve_figures(board: Board, entries: list[dict], palette: Palette, seed: int = 0) -> list[Figure]:
    """Learning curves of credit-track entries (the trainer's logged team reward per step, as submitted, not
    validated): one figure per env, the mean over runs with a 95% bootstrap band over runs."""
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
        fig, ax = new_figure(3.4 + 0.22 * math.ceil(len(methods) / 3))
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
            line = _plot(ax, palette, name, steps, ys.mean(axis=0))
            if len(ys) > 1:
                pick = rng.integers(len(ys), size=(500, len(ys)))
                boot = ys[pick].mean(axis=1)
                low, high = np.percentile(boot, [2.5, 97.5], axis=0)
                ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.15, lw=0)
            colours[name] = to_hex(line.get_color())
            runs_n.add(len(ys))
        if not colours:
            plt.close(fig)
            continue
        n_runs = "/".join(str(n) for n in sorted(runs_n))
        _label_axes(ax, f"{env_id}: learning curves,\nmean of {n_runs} runs", "training step",
                    "team reward per episode\n(training batch mean)")
        legend_below(fig, ax)
        out.append(render_figure(fig, f"curves-{env_id}", f"Learning curves on {env_id} as each submission's "
                                                         f"trainer logged them (not validated): mean over {n_runs} "
                                                         f"runs with a 95% bootstrap band over runs.", colours))
    return out


def seed_curves(panels: dict[str, dict[int, tuple[Sequence[float], Sequence[float]]]], palette: Palette, key: str,
                xlabel: str, ylabel: str, caption: str, refs: dict[str, float] | None = None,
                columns: int = 2) -> Figure:
    """Every run's curve and their mean, one panel per method, in the method's style: ``panels`` maps a method to
    ``{seed: (x, y)}``; each seed a thin line, the mean over the seeds that reached each x a thick one (its ``n``
    in the panel's title is the seeds at the last x). ``refs`` (label -> y) are grey dashed lines on every panel (an
    optimum, chance). The panels share their axes, so the methods compare at a glance."""
    names = list(panels)
    rows = math.ceil(len(names) / columns)
    fig, axes = new_figure(2.3 * rows + 0.9, width=WIDTH_IN * 1.5, nrows=rows, ncols=columns, sharex=True,
                           sharey=True, squeeze=False)
    colours = {}
    for i, (ax, name) in enumerate(zip(axes.flat, names)):
        s = palette.style(name)
        by_x: dict[float, list[float]] = {}
        for seed, (x, y) in sorted(panels[name].items()):
            ax.plot(x, y, color=s.colour, lw=0.9, alpha=0.45)
            for xi, yi in zip(x, y):
                by_x.setdefault(float(xi), []).append(float(yi))
        xs = sorted(by_x)
        line = _plot(ax, palette, name, xs, [float(np.mean(by_x[x])) for x in xs])
        colours[name] = to_hex(line.get_color())
        for j, (label, y) in enumerate((refs or {}).items()):
            ax.axhline(y, color="0.45", lw=1, ls=(0, (4, 3)) if j == 0 else (0, (1, 2)), label=label)
        n = len(by_x[xs[-1]]) if xs else 0
        ax.set_title(f"{name}: {n} seed{'s' * (n != 1)}")
        ax.grid(alpha=0.3)
        if i + columns >= len(names):                       # the lowest panel of its column
            ax.set_xlabel(xlabel)
            ax.xaxis.set_tick_params(labelbottom=True)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.supylabel(ylabel, fontsize=FONT_PT)
    seed_handle = Line2D([], [], color="0.3", lw=0.9, alpha=0.6, label="one seed (thick: the mean)")
    legend_below(fig, list(axes.flat), extra=[seed_handle])
    return render_figure(fig, key, caption, colours)


def _tokens_label(x: float, _=None) -> str:
    """A token count in three significant digits: 950, 12.6k, 3.4M."""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{float(f'{x / scale:.3g}'):g}{unit}"
    return f"{float(f'{x:.3g}'):g}"


def cost_figure(points: dict[str, tuple[int, Sequence[float]]], palette: Palette, ylabel: str,
                caption: str) -> Figure:
    """Training cost against score: per name, ``(tokens, (point, low, high))`` as a point with its CI, in the
    palette's styles. The token axis is logarithmic where the totals span a decade or more (within one, a log axis
    would show no tick at all)."""
    fig, ax = new_figure(3.4 + 0.22 * math.ceil(len(points) / 3))
    colours = {name: _point(ax, palette, name, total, c) for name, (total, c) in points.items()}
    totals = [t for t, _ in points.values()]
    log = max(totals) / min(totals) >= 10
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.margins(x=0.25)
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens_label))
    _label_axes(ax, "Cost against score", f"training tokens, all runs{' (log scale)' if log else ''},\n"
                                          "counterfactual branches included", ylabel)
    legend_below(fig, ax)
    return render_figure(fig, "cost", caption, colours)


def _board_cost_figure(board: Board, palette: Palette) -> Figure | None:
    points = {r.short: (r.tokens.get("train_main", 0) + r.tokens.get("train_branches", 0), r.aggregate)
              for r in board.rows}
    points = {name: p for name, p in points.items() if p[0] > 0}
    if not points:
        return None
    return cost_figure(points, palette, "aggregate normalized score\n(95% CI)",
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


# ---------------------------------------------------------------------------------------------------- the suite

def radar_scale(values: Sequence[float]) -> tuple[float, float]:
    """The radar's fixed radial scale for ``values`` (normalized scores): the centre is -0.25, or -0.5 or -1 where a
    value lies below, and the rim 1, or 1.25 where a value lies above; values past -1 or 1.25 are drawn at the edge.
    So random play (0) and the reference (1) are always rings, and a score below random is not hidden at the centre."""
    lo = next((x for x in (-0.25, -0.5, -1.0) if min(values, default=0.0) >= x), -1.0)
    hi = 1.0 if max(values, default=0.0) <= 1.0 else 1.25
    return lo, hi


def radar(axes: Sequence[str], means: dict[str, dict[str, float]], palette: Palette, caption: str) -> Figure:
    """bsuite's radar: per method (its style), the mean score on each of ``axes`` as a closed polygon (a method that
    covers only some axes: its markers there, no line), on the fixed scale of :func:`radar_scale` with the
    random (0) and reference (1) rings marked."""
    lo, hi = radar_scale([v for m in means.values() for v in m.values()])
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False).tolist()
    fig = plt.figure(figsize=(WIDTH_IN, 5.0 + 0.22 * math.ceil(len(means) / 3)), layout="constrained")
    fig.get_layout_engine().set(h_pad=0.1, w_pad=0.1)    # the layout misses a polar axes' outer labels by ~2 px
    ax = fig.add_subplot(111, polar=True)
    colours = {}
    ring = np.linspace(0, 2 * np.pi, 200)
    ax.plot(ring, np.zeros_like(ring), color="#555555", lw=1.2, ls="--", zorder=1)
    ax.plot(ring, np.ones_like(ring), color="#555555", lw=1.2, zorder=1)
    for m, by_axis in means.items():
        s = palette.style(m)
        if all(a in by_axis for a in axes):
            vals = [min(hi, max(lo, by_axis[a])) for a in axes]
            (line,) = ax.plot(angles + angles[:1], vals + vals[:1], color=s.colour, ls=s.linestyle, marker=s.marker,
                              ms=6, lw=2, label=mpl_text(m))
        else:                   # partial coverage: its markers only, no polygon through families it was not run on
            mine = [(t, min(hi, max(lo, by_axis[a]))) for t, a in zip(angles, axes) if a in by_axis]
            (line,) = ax.plot([t for t, _ in mine], [v for _, v in mine], color=s.colour, ls="none",
                              marker=s.marker, ms=9, label=mpl_text(m))
        colours[m] = to_hex(line.get_color())
    ax.set_xticks(angles, [a.replace("_", "\n") for a in axes])
    ax.set_ylim(lo, hi)
    ticks = [t for t in (-1.0, -0.5, 0.0, 0.5, 1.0) if lo <= t <= hi]
    ax.set_yticks(ticks, ["random 0" if t == 0 else "ref. 1" if t == 1 else f"{t:g}" for t in ticks],
                  fontsize=MIN_FONT_PT, color="#333333")
    ax.set_rlabel_position(180 / len(axes))                    # between the first two spokes
    for label in ax.get_yticklabels():
        label.set_bbox({"facecolor": "white", "alpha": 0.85, "lw": 0, "pad": 1})
    ax.set_title(f"Family scores, mean of seeds (centre {lo:g}, rim {hi:g};\n"
                 f"dashed ring: random = 0, solid ring: reference = 1)")
    legend_below(fig, ax)
    return render_figure(fig, "radar", caption, colours)


def _scaling_axes(ax, lines: Sequence[tuple], knobs: Sequence[float], palette: Palette,
                  variants: Sequence[str]) -> dict[str, str]:
    """Score against a knob on ``ax``: ``lines`` are ``(method, variant, xs, means, lows, highs)``; with one
    variant each method is drawn in its own style, with several the line style tells the variants apart and colour
    and marker the methods. Returns the colours drawn."""
    styles = ["-", "--", ":", "-."]
    colours = {}
    for m, variant, x, mean, low, high in lines:
        ls = None if len(variants) == 1 else styles[variants.index(variant) % len(styles)]
        line = _plot(ax, palette, m, x, mean, markevery=1, **({} if ls is None else {"ls": ls}))
        ax.fill_between(x, low, high, color=line.get_color(), alpha=0.10, lw=0)
        colours[m] = to_hex(line.get_color())
    if knobs and all(k > 0 for k in knobs) and max(knobs) / min(knobs) >= 8:
        ax.set_xscale("log", base=2)
    if knobs:
        ax.set_xticks(sorted(set(knobs)), [f"{k:g}" for k in sorted(set(knobs))])
        ax.minorticks_off()
    ax.axhline(0, color="grey", lw=0.8, ls=":")
    ax.axhline(1, color="grey", lw=0.8, ls="--")
    return colours


def _variant_handles(variants: Sequence[str]) -> list:
    styles = ["-", "--", ":", "-."]
    return [Line2D([], [], color="#333333", lw=2, ls=styles[i % len(styles)], label=mpl_text(v))
            for i, v in enumerate(variants)] if len(variants) > 1 else []


def scaling_figure(key: str, title: str, knob: str, lines: Sequence[tuple], knobs: Sequence[float],
                   variants: Sequence[str], palette: Palette, ylabel: str, caption: str) -> Figure:
    """One family's score against its knob (``lines``: see :func:`_scaling_axes`) as a figure."""
    n = len({line[0] for line in lines}) + (len(variants) if len(variants) > 1 else 0)
    fig, ax = new_figure(3.6 + 0.22 * math.ceil(n / 3))
    colours = _scaling_axes(ax, lines, knobs, palette, variants)
    _label_axes(ax, title, f"{knob} (the env's kwarg{'; log scale' if ax.get_xscale() == 'log' else ''})", ylabel)
    legend_below(fig, ax, extra=_variant_handles(variants))
    return render_figure(fig, key, caption, colours)


def scaling_panels(panels: Sequence[tuple], palette: Palette, ylabel: str) -> str:
    """Every family's scaling panel side by side, one legend below (``panels``: ``(title, knob, lines, knobs,
    variants)``), as base64 PNG (the suite's ``scaling.png``)."""
    fig, axes = new_figure(4.4, width=WIDTH_IN * len(panels), ncols=len(panels), squeeze=False)
    extra, colours = [], {}
    for ax, (title, knob, lines, knobs, variants) in zip(axes[0], panels):
        colours |= _scaling_axes(ax, lines, knobs, palette, variants)
        _label_axes(ax, title, f"{knob}{' (log scale)' if ax.get_xscale() == 'log' else ''}", ylabel)
        extra += _variant_handles(variants)
    legend_below(fig, list(axes[0]), extra=extra)
    return render_figure(fig, "scaling", "", colours).png
