"""The ranked table of one protocol, computed from the store's entries (never from submitted numbers).

For every entry: its aggregate, the mean of its task scores (a suite's tasks are its families; a task's score is the
mean over runs of its cell means; never a trimmed mean across tasks, which trims whole families differently for each
entry), with a seeded 95% bootstrap CI that redraws the runs (training seeds) stratified by task and never a suite's
fixed settings (:func:`leaderboard.stats.family_mean_bootstrap`; a policy-track entry's units, its evaluation seeds,
are random draws and are redrawn too); the rank (1 + the number of ranked entries whose CI lies entirely above), the
probability that it improves on the leader (the ranked entry with the highest aggregate), ``P(entry > leader)`` with
a seeded bootstrap 95% CI, each task's mean normalized score, and, where the protocol has versus tasks, a
Bradley-Terry rating on the Elo scale with a bootstrap 95% CI, fitted on every entry's games against the protocol's
opponents (which are players too; ``random`` is fixed at 1000, or, where no task plays random, the first opponent by
name). One game is one seed, both seats (duplicate play). Each env weighs the same in that fit: one entry's games in
an env get the weight ``total games of the entry / (envs x games in that env)``.

Coverage. The aggregate ranking holds the entries that cover the board's ranked tasks (the largest set of tasks some
entry covers; ties: the set most entries cover). An entry that covers fewer (a method that applies to one family) is
listed per task in :attr:`Board.partial`, never ranked on the aggregate, and compared only over the tasks both sides
cover.

Every statistic is seeded (``seed``, default 0) and independent of the order the entries come in: the same entries
give the same numbers in the stored board, a fresh ``benchmark-credit`` and the page.

:func:`verdicts` and :func:`compare` state paired comparisons (:mod:`leaderboard.verdicts`): entries share their
seeds, so each sentence is one paired comparison with its difference, interval, sign-flip p and Holm-adjusted p over
the comparisons the call prints, generated from that comparison alone, never from the ranks. :func:`board_sensitivity`
says which families of a suite's board measure credit (:mod:`leaderboard.sensitivity`).

A suite entry may keep, beside its scores, each setting's collapsed runs (``results["collapses"]``: setting -> count)
and the best checkpoint's per-seed scores (``results["best"]``: setting -> list); a row carries them as
:attr:`Row.collapses` and :attr:`Row.best` (in the shape of its scores), empty for entries without them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.stats import aggregate_seed_scores, bradley_terry_bootstrap, family_mean_bootstrap, format_ci, \
    mean_ci, probability_of_improvement_ci, ranks, seed_scores, separated
from leaderboard.sensitivity import FamilySensitivity, credit_sensitivity
from leaderboard.verdicts import Comparison, comparison, holm_family, sentence

ANCHOR_ELO = 1000.0

__all__ = ["Board", "Row", "board_sensitivity", "build_board", "compare", "comparisons", "verdicts"]


@dataclass
class Row:
    label: str
    method: str
    model: str
    aggregate: tuple[float, float, float]   # mean of the covered task scores [seed-bootstrap 95% CI]
    rank: int = 0                           # 0: not ranked (partial coverage)
    poi_vs_best: tuple[float, float, float] | None = None     # P(this entry > the leader) [95% CI]; None: leader
    tasks: dict[str, float] = field(default_factory=dict)
    elo: tuple[float, float, float] | None = None
    runs: int = 1
    tokens: dict[str, int] = field(default_factory=dict)
    submitted: str = ""
    entry_id: str = ""
    self_reported: bool = True       # the entry's player was not re-run by the maintainer (an entry without the
    #                                  field counts as self-reported)
    scores: dict = field(default_factory=dict, repr=False)    # the entry's per-unit scores, for comparisons
    short: str = ""                                           # the method name, or the label where it repeats
    covers: list[str] = field(default_factory=list)           # the tasks the entry has scores for
    fidelity: dict = field(default_factory=dict, repr=False)  # a suite entry's credit fidelity (its "fidelity" field)
    collapses: dict = field(default_factory=dict, repr=False)  # setting -> runs that peaked then fell (optional)
    best: dict = field(default_factory=dict, repr=False)      # the best checkpoint's scores, shaped like ``scores``


@dataclass
class Board:
    protocol: str
    track: str
    tasks: list[str]                 # every task some entry covers
    rows: list[Row]                  # the aggregate ranking: entries that cover every ranked task
    opponents: dict[str, tuple[float, float, float]] = field(default_factory=dict)   # bots' Elo
    elo_anchor: str = ""                                                              # the player fixed at 1000
    leader: str = ""                                                                  # label of the top aggregate
    elo_envs: list[str] = field(default_factory=list)                                 # envs whose games Elo fits
    seed: int = 0
    suite: bool = False              # credit-suite entries: the "tasks" are families, a unit is one setting
    ranked_tasks: list[str] = field(default_factory=list)   # the tasks the aggregate ranking is over
    partial: list[Row] = field(default_factory=list)        # entries covering fewer tasks: per task only, unranked

    def row(self, label: str) -> Row:
        for r in self.rows + self.partial:
            if r.label == label or r.short == label:
                return r
        raise KeyError(f"no entry {label!r} on {self.protocol}; entries: "
                       f"{[r.short for r in self.rows + self.partial]}")

    def iqm_covers(self) -> str:
        """What the aggregate of a ranked row averages over, in words (the name the page still calls)."""
        runs = sorted({r.runs for r in self.rows})
        n = str(runs[0]) if len(runs) == 1 else f"{runs[0]}-{runs[-1]}"
        k = len(self.ranked_tasks)
        if self.suite:
            return (f"the mean of {k} family scores (a family's score: the mean over {n} training seed"
                    f"{'s' if n != '1' else ''} of the mean over its settings; CI: bootstrap over training seeds, "
                    f"stratified by family, settings fixed)")
        units = sorted({len(u) for r in self.rows for t in r.scores.values() for u in t})
        seeds = "" if not units else f", {units[0]}" + (f"-{units[-1]}" if len(units) > 1 else "") + " eval seeds each"
        return (f"the mean of {k} task scores ({n} run{'s' if n != '1' else ''}{seeds}; CI: bootstrap over runs and "
                f"eval seeds, stratified by task)")

    def elo_covers(self) -> str:
        """What the Elo of a row is fitted on, in words ('' when the board has no versus games)."""
        if not self.elo_envs:
            return ""
        return (f"{', '.join(self.elo_envs)} games only, against {', '.join(sorted(self.opponents))}; "
                f"{self.elo_anchor} fixed at 1000")


def _model(manifest: dict[str, Any]) -> str:
    ids = sorted({p["model_id"] for runs in manifest["players"].values() for p in runs})
    return ", ".join(ids)


def _ranked_tasks(coverage: list[frozenset[str]]) -> frozenset[str]:
    """The task set the aggregate ranking is over: the largest set some entry covers; among equally large ones, the
    set most entries cover, then the first in sorted order."""
    candidates = sorted(set(coverage), key=sorted)
    return max(candidates, key=lambda tasks: (len(tasks), sum(tasks <= c for c in coverage)))


def build_board(entries: list[dict[str, Any]], reps: int = 2000, seed: int = 0) -> Board | None:
    """The table of ``entries`` (all of one protocol); ``None`` when there are none."""
    if not entries:
        return None
    protocols = {e["protocol"] for e in entries}
    if len(protocols) != 1:
        raise ValueError(f"entries of several protocols: {sorted(protocols)}")
    entries = sorted(entries, key=lambda e: (e["submitted"], e["id"]))      # order-free: same input, same board
    tasks = list(dict.fromkeys(t for e in entries for t in e["results"]["scores"]))   # suite entries may lack some
    suite = all("families" in e["results"] for e in entries)
    ranked = _ranked_tasks([frozenset(e["results"]["scores"]) for e in entries])
    ranked_tasks = [t for t in tasks if t in ranked]
    rows, partial = [], []
    for e in entries:
        scores = e["results"]["scores"]
        full = ranked <= set(scores)
        covers = [t for t in tasks if t in scores]
        row = Row(label=e["label"], method=e["method"], model=_model(e["manifest"]),
                  aggregate=family_mean_bootstrap(scores, ranked_tasks if full else covers, reps=reps, seed=seed,
                                                  resample_units=not suite),
                  tasks=dict(e["results"]["task_means"]), runs=len(next(iter(scores.values()))),
                  tokens=dict(e["manifest"]["tokens"]), submitted=e["submitted"], entry_id=e["id"],
                  self_reported=bool(e.get("self_reported", True)), scores=scores, covers=covers,
                  fidelity=dict(e.get("fidelity") or {}), collapses=dict(e["results"].get("collapses") or {}),
                  best=_best_scores(e["results"]))
        (rows if full else partial).append(row)
    methods = [r.method for r in rows + partial]
    for row in rows + partial:
        row.short = row.method if methods.count(row.method) == 1 else row.label
    for row, r in zip(rows, ranks([row.aggregate[1:] for row in rows])):
        row.rank = r
    best = max(range(len(rows)), key=lambda i: (rows[i].aggregate[0], rows[i].aggregate[1]))
    for i, row in enumerate(rows):
        if i != best:
            row.poi_vs_best = probability_of_improvement_ci({t: row.scores[t] for t in ranked_tasks},
                                                            {t: rows[best].scores[t] for t in ranked_tasks}, seed=seed)
    board = Board(entries[0]["protocol"], entries[0]["track"], tasks, rows, leader=rows[best].label, seed=seed,
                  suite=suite, ranked_tasks=ranked_tasks, partial=partial)
    _elo(board, entries, seed)
    board.rows.sort(key=lambda r: (r.rank, -r.aggregate[0], r.submitted))
    board.partial.sort(key=lambda r: (r.short, r.submitted))
    return board


def _best_scores(results: dict[str, Any]) -> dict[str, list[list[float]]]:
    """A suite entry's best-checkpoint scores in the shape of its ``scores`` (family -> seed -> one score per setting,
    the settings in ``results["families"][f]["settings"]`` order), from ``results["best"]`` (setting -> per-seed
    list); ``{}`` where the entry has none or lacks a setting of a family it covers."""
    best, families = results.get("best"), results.get("families") or {}
    if not isinstance(best, dict) or not best:
        return {}
    out = {}
    for fam, runs in results["scores"].items():
        settings = (families.get(fam) or {}).get("settings")
        if not settings or any(not isinstance(best.get(s), list) or len(best[s]) != len(runs) for s in settings):
            return {}
        out[fam] = [[float(best[s][i]) for s in settings] for i in range(len(runs))]
    return out


def _elo(board: Board, entries: list[dict[str, Any]], seed: int) -> None:
    strata: dict[str, list[tuple[str, str, float, int]]] = {}
    weights: dict[str, float] = {}
    envs: set[str] = set()
    for e in entries:
        games = e["results"]["games"]
        if not games:
            continue
        per_env = {env: sum(sum(c.values()) for c in opp.values()) for env, opp in games.items()}
        total = sum(per_env.values())
        for env, by_opp in sorted(games.items()):
            for opp, c in by_opp.items():
                # the stratum's name seeds its bootstrap draws: by method, not by label (whose hash changes with
                # the episodes file), so a stored board and a fresh benchmark of the same games agree exactly
                key = f"{e['method']}|{env}|{opp}"
                if key in strata:
                    key += f"|{e['label']}"
                envs.add(env)
                strata[key] = [(e["label"], opp, 1.0, c["win"]), (e["label"], opp, 0.5, c["draw"]),
                               (e["label"], opp, 0.0, c["loss"])]
                weights[key] = total / (len(per_env) * per_env[env])
    if not strata:
        return
    players = {p for rows in strata.values() for r in rows for p in r[:2]}
    labels = {row.label for row in board.rows + board.partial}
    anchor = "random" if "random" in players else min(players - labels)
    fit = bradley_terry_bootstrap(strata, weights, anchor=anchor, anchor_elo=ANCHOR_ELO, prior=1.0, reps=200,
                                  seed=seed)
    board.elo_anchor = anchor
    board.elo_envs = sorted(envs)
    for row in board.rows + board.partial:
        row.elo = fit.get(row.label)
    board.opponents = {p: v for p, v in fit.items() if p not in labels}


def _task_ci(board: Board, row: Row, task: str) -> tuple[float, float, float]:
    """A row's score on one task, the mean over its seeds with a Student-t interval."""
    return mean_ci(seed_scores(row.scores[task], units_are_seeds=not board.suite))


def _shared(a: Row, b: Row, board: Board) -> list[str]:
    """The tasks both rows cover, in the board's order."""
    return [t for t in board.tasks if t in a.scores and t in b.scores]


def _where(board: Board, shared: list[str]) -> str:
    """Where a comparison over ``shared`` is made, in words."""
    if len(shared) == 1:
        return shared[0]
    noun = "families" if board.suite else "tasks"
    if shared == board.ranked_tasks:
        return f"the aggregate of {len(shared)} {noun}"
    return f"the aggregate of the {len(shared)} {noun} both cover ({', '.join(shared)})"


def paired_comparison(board: Board, a: str, b: str) -> Comparison:
    """Entries ``a`` and ``b`` (labels or short names) compared seed by seed on the mean of the tasks both cover
    (uncorrected: :func:`leaderboard.verdicts.holm_family` corrects the comparisons a command prints together)."""
    ra, rb = board.row(a), board.row(b)
    shared = _shared(ra, rb, board)
    if not shared:
        raise ValueError(f"{ra.short} and {rb.short} share no task: there is nothing to compare")
    units_are_seeds = not board.suite           # a policy-track entry's units are evaluation seeds shared by all
    xa = aggregate_seed_scores(ra.scores, shared, units_are_seeds)
    xb = aggregate_seed_scores(rb.scores, shared, units_are_seeds)
    return comparison(ra.short, rb.short, _where(board, shared), xa, xb, seed=board.seed)


def _pairs(board: Board, under_test: str | None) -> list[tuple[Row, Row]]:
    """Who :func:`verdicts` compares: with ``under_test``, that entry against every other one sharing a task;
    without, the leader against every other ranked entry, then each partial-coverage entry against the leader."""
    if under_test is not None:
        mine = board.row(under_test)
        return [(mine, r) for r in board.rows + board.partial if r is not mine and _shared(mine, r, board)]
    leader = board.row(board.leader)
    return [(leader, r) for r in board.rows if r is not leader] + \
        [(r, leader) for r in board.partial if _shared(r, leader, board)]


def _seed_counts(board: Board, a: Row, b: Row) -> tuple[int, int]:
    shared = _shared(a, b, board)
    return tuple(len(seed_scores(r.scores[shared[0]], units_are_seeds=not board.suite)) for r in (a, b))


def comparisons(board: Board, under_test: str | None = None) -> list[Comparison]:
    """The comparisons :func:`verdicts` states (:func:`_pairs` with the same seed count on both sides), Holm-corrected
    together."""
    pairs = [(a, b) for a, b in _pairs(board, under_test) if len(set(_seed_counts(board, a, b))) == 1]
    return holm_family([paired_comparison(board, a.label, b.label) for a, b in pairs])


def board_sensitivity(board: Board) -> list[FamilySensitivity]:
    """Which families of a suite's board measure credit (:func:`leaderboard.sensitivity.credit_sensitivity`), from
    every entry's per-seed family scores (ranked and partial-coverage entries alike: the check is per family) and its
    ``fidelity`` field where it has one. Where a method has several entries, the latest submitted one speaks for it.
    ``[]`` on a board that is not a suite's."""
    if not board.suite:
        return []
    latest: dict[str, Row] = {}
    for r in sorted(board.rows + board.partial, key=lambda r: (r.submitted, r.entry_id)):
        latest[r.method] = r
    per_seed = {m: {f: seed_scores(runs).tolist() for f, runs in r.scores.items()} for m, r in latest.items()}
    fidelity = {m: r.fidelity.get("families") or {} for m, r in latest.items() if r.fidelity}
    return credit_sensitivity(per_seed, board.tasks, fidelity, seed=board.seed)


def compare(board: Board, a: str, b: str) -> str:
    """One sentence: entries ``a`` and ``b`` compared seed by seed (one comparison, so Holm over 1), and, where the
    board has one, whether their Elo CIs are separated."""
    ra, rb = board.row(a), board.row(b)
    text = sentence(holm_family([paired_comparison(board, a, b)])[0])
    if ra.elo is not None and rb.elo is not None:
        if separated(ra.elo, rb.elo) or separated(rb.elo, ra.elo):
            hi, lo = (ra, rb) if separated(ra.elo, rb.elo) else (rb, ra)
            text += f"; Elo ({', '.join(board.elo_envs)} only): {hi.short} above {lo.short}, CIs separated"
        else:
            text += f"; Elo ({', '.join(board.elo_envs)} only): CIs overlap"
    return text


def verdicts(board: Board, under_test: str | None = None) -> list[str]:
    """The board's verdict in sentences, one per paired comparison (:func:`comparisons`, Holm over all of them), then
    the entries outside the aggregate ranking, then which entries the Elo separates from its top entry."""
    out = [sentence(c) for c in comparisons(board, under_test)]
    for a, b in _pairs(board, under_test):
        na, nb = _seed_counts(board, a, b)
        if na != nb:
            out.append(f"{a.short} vs {b.short}: not compared ({na} and {nb} seeds: a paired comparison needs the "
                       "same seeds on both sides)")
    if under_test is None and len(board.rows) == 1:
        out.insert(0, f"{board.rows[0].short} is the only entry ranked on the aggregate: nothing to compare")
    if board.partial:
        out.append("partial coverage, not in the aggregate ranking (mean [95% t CI] over seeds per family): " +
                   "; ".join(f"{r.short} (" + ", ".join(f"{t} {format_ci(_task_ci(board, r, t))}" for t in r.covers)
                             + ")"
                             for r in board.partial))
    rated = [r for r in board.rows if r.elo is not None]
    if len(rated) > 1:
        best = max(rated, key=lambda r: r.elo[0])
        apart = [r for r in rated if separated(best.elo, r.elo)]
        tied = [r for r in rated if r is not best and r not in apart]
        text = f"Elo ({board.elo_covers()}): "
        if apart:
            text += f"{best.short} above {', '.join(r.short for r in apart)}: CIs separated"
            if tied:
                text += f"; not separated from {best.short}: {', '.join(r.short for r in tied)}"
        else:
            text += f"no entry is separated from {best.short} at 95%"
        out.append(text)
    return out
