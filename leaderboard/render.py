"""``python -m leaderboard show`` (a terminal table) and ``python -m leaderboard render`` (``LEADERBOARD.md`` and a
static, offline ``index.html``; no network access, no external script).

Boards come in :func:`order`: the newest version of each protocol first (a tier's full suite before its quick
subset), older versions after, marked "superseded by" their newest. What a board shows, on every surface (terminal,
Markdown, page):

* the verdict in one headline sentence (:func:`board_headline`: how many paired comparisons separated, which, and
  how many did not, Holm-corrected), then a sentence per comparison (:func:`leaderboard.board.verdicts`; on the page
  and in the Markdown behind a fold). The page opens with the headline of its first board;
* what each statistic covers, next to the number: the aggregate's tasks and runs, the Elo's envs and opponents;
* the table: rank, entry, runs, aggregate [95% CI], Elo [95% CI], ``P(entry > leader)`` [95% CI], per-task means, the
  training tokens and, of those, the counterfactual ones (the cost of COMA/LOO-style branches); the partial-coverage
  table; on a suite's board, which families measure credit (:func:`sensitivity_html`, :mod:`leaderboard.sensitivity`:
  a table of the paired checks, credit-blind controls against an informed method, Holm over the table, whose count
  also ends the headline); the opponents' Elo. Every table ``show`` prints is on the page.

The page adds figures in the style of rliable and marl-eval (:mod:`leaderboard.figures`, loaded by :func:`plots`
on the first figure: it imports matplotlib): the aggregate with 95% CIs, performance profiles with bootstrap bands,
learning curves (mean over runs, bootstrap band) for credit entries, and training cost against score. One method has
one style (colour, line, marker) in every figure of the page (:class:`leaderboard.style.Palette`); figures use the
short method name (the hash is in the table and the tooltip). The layout reads on a phone: viewport meta tag, tables
in horizontally scrollable wrappers, figures at most 440 CSS px wide whose text is at least 9 pt.

Every submitted string (labels, method and model names, notes) is cleaned of control characters and escaped for
its surface (:mod:`leaderboard.escape`: :func:`md_cell`, :func:`html_text`, :func:`mpl_text`): a newline, ``|`` or
``<`` in a model id cannot add a row or markup.

Hooks for other modules (e.g. the credit suite, which registers its aggregate column and radar when
:mod:`leaderboard.suite` is imported; the CLI imports it): :func:`register` a function ``board -> [(header,
row -> str), ...]`` for more columns (after the per-task ones, kept in :data:`EXTRA_COLUMNS`), and a function
``(board, entries, palette) -> [Figure, ...]`` for more figures on that board's section (:data:`EXTRA_FIGURES`).
Both are called for every board; return ``[]`` for boards they do not apply to. Draw with :func:`plots` (its
``render_figure`` measures and encodes a figure) and :meth:`Palette.style` so added figures share the page's styles
and format; this module imports no hook's module.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from leaderboard.board import Board, Row, board_sensitivity, build_board, comparisons, verdicts
from leaderboard.escape import clean, html_text, md_cell, mpl_text
from leaderboard.sensitivity import COLUMNS as SENSITIVITY_COLUMNS, FamilySensitivity, sensitivity_headline, \
    sensitivity_rows, sensitivity_rule
from leaderboard.stats import format_ci
from leaderboard.store import load_entries, read_index
from leaderboard.style import Figure, Palette
from leaderboard.verdicts import headline

# Figure, Palette and the escaping functions are defined in leaderboard.style and leaderboard.escape; they are
# importable from here as well, as the pages' callers always have
__all__ = ["EXTRA_COLUMNS", "EXTRA_FIGURES", "Figure", "PageContext", "Palette", "board_headline", "boards", "clean",
           "comparison_markdown", "context_html", "figure_html", "figures", "headline_html", "html_text", "markdown",
           "md_cell", "mpl_text", "order", "page", "page_head", "plots", "register", "render", "sensitivity_html",
           "sensitivity_notes", "show", "show_text", "superseded", "verdict_html"]

SHOW_WIDTH = 120

EXTRA_COLUMNS: list[Callable[[Board], list[tuple[str, Callable[[Row], str]]]]] = []
EXTRA_FIGURES: list[Callable[[Board, list[dict], "Palette"], list["Figure"]]] = []


def register(columns: Callable[[Board], list[tuple[str, Callable[[Row], str]]]] | None = None,
             figures: Callable[[Board, list[dict], "Palette"], list["Figure"]] | None = None) -> None:
    """Add a hook for more board columns and/or figures (see the module docstring); a hook given twice is kept
    once."""
    if columns is not None and columns not in EXTRA_COLUMNS:
        EXTRA_COLUMNS.append(columns)
    if figures is not None and figures not in EXTRA_FIGURES:
        EXTRA_FIGURES.append(figures)


@dataclass
class PageContext:
    """What a ``benchmark-credit`` comparison adds to its board: the title, the method under test (highlighted,
    and the verdict compares it with every other entry), facts (budget, seeds, wall time, ...) and notes
    (applicability, ranking scope)."""
    title: str
    under_test: str | None = None
    facts: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------- tables

def plots():
    """:mod:`leaderboard.figures`, imported on the first figure a page draws: the one place matplotlib is loaded."""
    from leaderboard import figures  # lazy: matplotlib, an optional extra that takes about a second to import

    return figures


def order(keys) -> list[str]:
    """Protocol keys (``name@version``) as the pages show them: the newest version of each protocol first (a
    tier's full suite before its quick subset, then by name), then the older versions, newest first."""
    def split(key: str) -> tuple[str, int]:
        name, _, version = key.rpartition("@")
        return (name, int(version)) if name and version.isdigit() else (key, 0)

    newest: dict[str, int] = {}
    for key in keys:
        name, version = split(key)
        newest[name] = max(newest.get(name, version), version)

    def rank(key: str):
        name, version = split(key)
        return (version != newest[name], name.endswith("-quick"), name.removesuffix("-quick"), -version)

    return sorted(keys, key=rank)


def superseded(protocol: str, keys) -> str | None:
    """The newer version of ``protocol`` among ``keys``, if there is one."""
    name, _, version = protocol.rpartition("@")
    newer = [k for k in keys if k.rpartition("@")[0] == name and k != protocol and k.rpartition("@")[2].isdigit()
             and version.isdigit() and int(k.rpartition("@")[2]) > int(version)]
    return max(newer, key=lambda k: int(k.rpartition("@")[2])) if newer else None


def board_headline(board: Board, under_test: str | None = None) -> str:
    """The board's verdict in one sentence (:func:`leaderboard.verdicts.headline` over the paired comparisons its
    verdict states), and on a suite's board how many families measure credit
    (:func:`leaderboard.sensitivity.sensitivity_headline`)."""
    text = headline(comparisons(board, under_test))
    extra = sensitivity_headline(board_sensitivity(board))
    return f"{text} {extra}" if extra else text


def sensitivity_notes(result: list[FamilySensitivity]) -> list[str]:
    """The lines under a credit-sensitivity table: each family's reasons for what it could not test."""
    return [f"{fs.family}: {note}" for fs in result for note in fs.notes]


def sensitivity_html(key: str, result: list[FamilySensitivity], heading: str = "h3") -> str:
    """The credit-sensitivity table of a page (:mod:`leaderboard.sensitivity`): a heading, the rule in words, the
    table (``sensitivity-<key>``) and the notes; ``""`` where no family was tested."""
    if not any(fs.checks for fs in result):
        return ""
    rows = sensitivity_rows(result)
    notes = sensitivity_notes(result)
    return (f"<{heading}>Which families measure credit</{heading}><p class='covers'>"
            f"{html_text(sensitivity_rule(), 1000)}</p><div class='scroll'><table class='board sensitivity' "
            f"id='sensitivity-{key}'><thead><tr>" +
            "".join(f"<th onclick='sortTable(this)'>{html_text(c)}</th>" for c in SENSITIVITY_COLUMNS) +
            "</tr></thead><tbody>" + "".join("<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in r) + "</tr>"
                                             for r in rows) + "</tbody></table></div>" +
            ("<ul class='notes'>" + "".join(f"<li>{html_text(n, 400)}</li>" for n in notes) + "</ul>"
             if notes else ""))


def boards(store, reps: int = 2000) -> list[tuple[Board, list[dict]]]:
    """The boards of every protocol in ``store``, in :func:`order`."""
    keys = order({row["protocol"] for row in read_index(Path(store))})
    out = []
    for key in keys:
        entries = load_entries(store, key)
        board = build_board(entries, reps=reps)
        if board is not None:
            out.append((board, entries))
    return out


def _format_elo(v) -> str:
    return "-" if v is None else f"{v[0]:.0f} [{v[1]:.0f}, {v[2]:.0f}]"


def _opponents(board: Board) -> str:
    return ", ".join(f"{p} {_format_elo(v)}" for p, v in sorted(board.opponents.items()))


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
             (f"aggregate, {len(board.tasks)} tasks [95% CI]" if wide else "aggregate [95% CI]",
              lambda r: format_ci(r.aggregate))]
    if has_elo:
        cols.append((f"Elo, {_envs(board)} [95% CI]" if wide else "Elo [95% CI]", lambda r: _format_elo(r.elo)))
    cols.append((f"P(entry > {leader}) [95% CI]" if wide else "P(entry > leader)",
                 lambda r: "- (leader)" if r.poi_vs_best is None else format_ci(r.poi_vs_best, 2)))
    if wide:
        cols += [(t, lambda r, t=t: f"{r.tasks[t]:.3f}" if t in r.tasks else "n/a") for t in board.tasks]
        for extra in EXTRA_COLUMNS:
            cols += extra(board)
    cols += [("train tokens" if wide else "tokens",
              lambda r: str(r.tokens.get("train_main", 0) + r.tokens.get("train_branches", 0))),
             ("counterfactual tokens" if wide else "cf. tokens", lambda r: str(r.tokens.get("train_branches", 0)))]
    return [c for c, _ in cols], [[f(r) for _, f in cols] for r in board.rows]


def _partial_table(board: Board, wide: bool = True) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the board's partial-coverage entries (:attr:`Board.partial`: they cover fewer tasks than
    the ranked ones, so they are never ranked on the aggregate): each entry's runs, the tasks it covers, the mean of
    its own task scores with its CI (comparable only with entries on the same tasks) and, ``wide``, each task's
    mean (``n/a`` where it has none)."""
    cols = ["entry (partial coverage, not ranked)", "runs", "covers", "mean of its tasks [95% CI]"]
    if wide:
        cols += list(board.tasks)
    rows = []
    for r in board.partial:
        covers = f"{len(r.covers)} of {len(board.tasks)}: {', '.join(r.covers)}"
        if not wide and len(covers) > 40:                 # the terminal's table fits 120 columns
            covers = f"{len(r.covers)} of {len(board.tasks)} tasks"
        row = [r.label + (" (self-reported)" if r.self_reported else ""), str(r.runs), covers,
               format_ci(r.aggregate)]
        if wide:
            row += [f"{r.tasks[t]:.3f}" if t in r.tasks else "n/a" for t in board.tasks]
        rows.append(row)
    return cols, rows


def _coverage(board: Board) -> list[str]:
    out = [f"aggregate: normalized score (random = 0, reference = 1), {board.iqm_covers()}."]
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
        parts += textwrap.wrap(clean(board_headline(board), 2000), SHOW_WIDTH, initial_indent="  headline: ",
                               subsequent_indent="    ")
        for v in verdicts(board):
            parts += textwrap.wrap(clean(v, 400), SHOW_WIDTH, initial_indent="  verdict: ", subsequent_indent="    ")
        for c in _coverage(board):
            parts += textwrap.wrap(c, SHOW_WIDTH, initial_indent="  ", subsequent_indent="    ")
        parts += _text_table(cols, rows)
        if board.partial:
            parts += [""] + _text_table(*_partial_table(board, wide=wide))
        sensitivity = board_sensitivity(board)
        if any(fs.checks for fs in sensitivity):
            parts += [""] + textwrap.wrap("credit sensitivity: " + sensitivity_rule(), SHOW_WIDTH,
                                          subsequent_indent="  ")
            parts += _text_table(SENSITIVITY_COLUMNS, sensitivity_rows(sensitivity))
            for n in sensitivity_notes(sensitivity):
                parts += textwrap.wrap(n, SHOW_WIDTH, initial_indent="  ", subsequent_indent="    ")
        mine = [r.label for r in board.rows if r.self_reported]
        if mine:
            parts += textwrap.wrap("self-reported (the player was not re-run by the maintainer): "
                                   + ", ".join(clean(m) for m in mine), SHOW_WIDTH, subsequent_indent="  ")
        if board.opponents:
            parts += textwrap.wrap(f"opponents' Elo ({board.elo_anchor} fixed at 1000): " + _opponents(board),
                                   SHOW_WIDTH, subsequent_indent="  ")
        parts.append("")
    if parts and not wide:
        parts += textwrap.wrap("leader: the entry with the top aggregate; tokens: generated in training, all runs; cf. "
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
    out = [f"**Verdict:** {md_cell(board_headline(board, under_test), 2000)}", "",
           "<details><summary>every comparison</summary>", ""]
    out += [f"- {md_cell(v, 400)}" for v in verdicts(board, under_test)] + ["", "</details>", ""]
    out += [md_cell(c, 400) for c in _coverage(board)] + [""]
    out += _md_table(cols, rows, bold)
    if board.partial:
        out += [""] + _md_table(*_partial_table(board))
    sensitivity = board_sensitivity(board)
    if any(fs.checks for fs in sensitivity):
        out += ["", f"**Which families measure credit.** {md_cell(sensitivity_rule(), 1000)}", ""]
        out += _md_table(SENSITIVITY_COLUMNS, sensitivity_rows(sensitivity))
        out += [f"- {md_cell(n, 400)}" for n in sensitivity_notes(sensitivity)]
    if board.opponents:
        out += ["", f"Opponents' Elo ({md_cell(board.elo_anchor)} fixed at 1000): " + md_cell(_opponents(board), 400)]
    return out


def markdown(found: list[tuple[Board, list[dict]]]) -> str:
    out = ["# Leaderboard", "",
           "Generated by `python -m leaderboard render` from the entries in `board/entries/` (every statistic "
           "is recomputed from replay-validated episodes). Scores are normalized per task (random = 0, reference "
           "policy = 1); aggregate: the mean of the task scores (never a trimmed mean across tasks), with a seeded "
           "bootstrap 95% CI over runs stratified by task; rank = 1 + the number of "
           "entries whose CI lies entirely above; P(entry > leader): the probability that a run of the entry beats "
           "one of the leader (top aggregate) on a task, with a seeded bootstrap 95% CI (0.5 = no difference); Elo: "
           "Bradley-Terry over the versus games only (one game = one seed, both seats; random, or else the first "
           "opponent, = 1000), each env weighted equally. Train tokens: every token generated in training, all "
           "runs; counterfactual tokens: those of them spent on counterfactual branches. An entry marked "
           "(self-reported) was not re-run by the maintainer: its own moves are the submitter's word (see the threat "
           "model in leaderboard/README.md).", ""]
    keys = [board.protocol for board, _ in found]
    for board, _ in found:
        newer = superseded(board.protocol, keys)
        out += [f"## {md_cell(board.protocol)} ({md_cell(board.track)} track"
                f"{f'; superseded by {md_cell(newer)}' if newer else ''})", ""]
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
.verdict p.headline { margin: 0.2em 0; } .verdict summary { cursor: pointer; color: #0a4a80; }
.page-headline { font-size: 1.1em; background: #eef5ff; border-left: 4px solid #0072b2; padding: 0.5em 0.8em; }
.covers { color: #444; font-size: 0.95em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
dl.facts dt { font-weight: bold; } dl.facts dd { margin: 0; }
.figs { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; flex: 0 1 440px; min-width: 0; max-width: 440px; }
figure img { width: 100%; height: auto; display: block; }
figcaption { font-size: 0.85em; color: #555; }
@media (max-width: 600px) { body { padding: 0 0.5em; } table { font-size: 13px; } dl.facts { display: block; }
  dl.facts dd { margin-bottom: 0.4em; } }
"""


def _html_board(board: Board, entries: list[dict], palette: Palette, under_test: str | None = None) -> list[str]:
    pid = html_text(board.protocol)
    out = [verdict_html(pid, board_headline(board, under_test), verdicts(board, under_test))]
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
    if board.partial:
        pcols, prows = _partial_table(board)
        out.append(f"<div class='scroll'><table class='board partial' id='partial-{pid}'><thead><tr>" +
                   "".join(f"<th onclick='sortTable(this)'>{html_text(c, 200)}</th>" for c in pcols) +
                   "</tr></thead><tbody>" +
                   "".join(f"<tr data-method='{html_text(r.short)}'>" + "".join(f"<td>{html_text(c)}</td>" for c in row)
                           + "</tr>" for r, row in zip(board.partial, prows)) + "</tbody></table></div>")
    sensitivity = sensitivity_html(pid, board_sensitivity(board))
    if sensitivity:
        out.append(sensitivity)
    if board.opponents:
        out.append(f"<p>Opponents' Elo ({html_text(board.elo_anchor)} fixed at 1000): "
                   f"{html_text(_opponents(board), 400)}</p>")
    out.append("<div class='figs'>")
    out += [figure_html(f) for f in figures(board, entries, palette)]
    out.append("</div>")
    return out


def verdict_html(key: str, sentence: str | None, lines: list[str]) -> str:
    """A verdict box: the headline sentence (none where the page opens with it), then every line behind a fold."""
    head = "" if sentence is None else \
        f"<p class='headline'><strong>Verdict:</strong> {html_text(sentence, 2000)}</p>"
    return (f"<div class='verdict' id='verdict-{key}'>{head}<details><summary>the verdict, line by line "
            f"({len(lines)} lines)</summary><ul>" +
            "".join(f"<li>{html_text(v, 600)}</li>" for v in lines) + "</ul></details></div>")


def headline_html(key: str, sentence: str) -> str:
    """The page's first line: the headline sentence of its first (current) board."""
    return (f"<p class='page-headline' id='headline'><strong>{html_text(key)}:</strong> "
            f"{html_text(sentence, 2000)}</p>")


def figures(board: Board, entries: list[dict], palette: Palette) -> list[Figure]:
    """The figures of a board's section: its own (:func:`leaderboard.figures.board_figures`), then those of every
    registered hook."""
    out = plots().board_figures(board, entries, palette)
    for extra in EXTRA_FIGURES:
        out += extra(board, entries, palette)
    return out


def figure_html(f: Figure) -> str:
    """One figure of a page: the PNG, its caption, the colours each method was drawn in (``data-colours``, which
    the page test reads back from the pixels), and what the drawing measured (``data-min-font-px``, the smallest
    text in the PNG's pixels; ``data-overflow-px``, how far anything was drawn past its edge)."""
    return (f"<figure data-figure='{html_text(f.key)}' data-colours='{html_text(json.dumps(f.colours), 4000)}' "
            f"data-min-font-px='{f.min_font_px:g}' data-overflow-px='{f.overflow_px:g}'>"
            f"<img class='plot' alt='{html_text(f.caption, 300)}' src='data:image/png;base64,{f.png}'>"
            f"<figcaption>{html_text(f.caption, 400)}</figcaption></figure>")


def page(found: list[tuple[Board, list[dict]]], context: PageContext | None = None) -> str:
    """The HTML page of ``found`` boards; ``context`` makes it a ``benchmark-credit`` comparison page (its title,
    facts and notes, the method under test highlighted and compared with every other entry)."""
    title = context.title if context else "marl_llm_envs leaderboard"
    palette = Palette(r.short for board, _ in found for r in board.rows)
    parts = page_head(title)
    if found:
        parts.append(headline_html(found[0][0].protocol, board_headline(found[0][0],
                                                                        context.under_test if context else None)))
    if context is not None:
        parts += context_html(context)
    parts.append("<details class='about'><summary>How the numbers are made</summary><p>Scores are normalized per "
                 "task (random = 0, reference policy = 1) and recomputed from "
                 "replay-validated episodes. Aggregate: the mean of the task scores (never a trimmed mean across "
                 "tasks), with a seeded bootstrap 95% CI over runs stratified by task; "
                 "rank = 1 + the number of entries whose CI lies entirely above. P(entry &gt; leader): the "
                 "probability that a run of the entry beats one of the leader (top aggregate) on a task, with a 95% "
                 "bootstrap CI (0.5 = no difference). Elo covers the versus games only. Click a column to sort; "
                 "hover an entry for its id.</p></details>")
    if not found:
        parts.append("<p>The leaderboard is empty.</p>")
    keys = [board.protocol for board, _ in found]
    for board, entries in found:
        if context is None:
            newer = superseded(board.protocol, keys)
            parts.append(f"<h2 id='{html_text(board.protocol)}'>{html_text(board.protocol)} "
                         f"({html_text(board.track)} track{f'; superseded by {html_text(newer)}' if newer else ''})"
                         f"</h2>")
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


def render(store, out: str | Path) -> tuple[Path, Path]:
    """Write ``LEADERBOARD.md`` and ``index.html`` into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, page_path = out / "LEADERBOARD.md", out / "index.html"
    found = boards(store)
    md.write_text(markdown(found), encoding="utf-8")
    page_path.write_text(page(found), encoding="utf-8")
    return md, page_path
