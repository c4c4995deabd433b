"""The ranked table of one protocol, computed from the store's entries (never from submitted numbers).

For every entry: the IQM of its normalized scores over runs x tasks with a seeded stratified-bootstrap 95% CI, the
rank (1 + the number of entries whose CI lies entirely above), the probability that it improves on the leader (the
entry with the highest IQM), ``P(entry > leader)`` with a seeded bootstrap 95% CI, each task's mean normalized
score, and, where the protocol has versus tasks, a Bradley-Terry rating on the Elo scale with a bootstrap 95% CI,
fitted on every entry's games against the protocol's opponents (which are players too; ``random`` is fixed at 1000,
or, where no task plays random, the first opponent by name). One game is one seed, both seats (duplicate play).
Each env weighs the same in that fit: one entry's games in an env get the weight ``total games of the entry /
(envs x games in that env)``.

Every statistic is seeded (``seed``, default 0) and independent of the order the entries come in: the same entries
give the same numbers in the stored board, a fresh ``benchmark-credit`` and the page.

:func:`verdicts` turns these numbers into sentences ("dr_mas above none: IQM CIs separated", "broadcast vs loo: no
difference at 95% (P(loo > broadcast) = 0.46 [0.31, 0.60])"), each saying what its statistic covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.stats import bradley_terry_bootstrap, format_ci, probability_of_improvement_ci, ranks, separated, \
    stratified_bootstrap

ANCHOR_ELO = 1000.0

__all__ = ["Board", "Row", "build_board", "compare", "verdicts"]


@dataclass
class Row:
    label: str
    method: str
    model: str
    iqm: tuple[float, float, float]
    rank: int = 0
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


@dataclass
class Board:
    protocol: str
    track: str
    tasks: list[str]
    rows: list[Row]
    opponents: dict[str, tuple[float, float, float]] = field(default_factory=dict)   # bots' Elo
    elo_anchor: str = ""                                                              # the player fixed at 1000
    leader: str = ""                                                                  # label of the top IQM
    elo_envs: list[str] = field(default_factory=list)                                 # envs whose games Elo fits
    seed: int = 0
    suite: bool = False              # credit-suite entries: the "tasks" are families, a unit is one training seed

    def row(self, label: str) -> Row:
        for r in self.rows:
            if r.label == label or r.short == label:
                return r
        raise KeyError(f"no entry {label!r} on {self.protocol}; entries: {[r.short for r in self.rows]}")

    def iqm_covers(self) -> str:
        """What the IQM of a row averages over, in words."""
        runs = sorted({r.runs for r in self.rows})
        n = str(runs[0]) if len(runs) == 1 else f"{runs[0]}-{runs[-1]}"
        if self.suite:
            return (f"all {len(self.tasks)} families x {n} training seed{'s' if n != '1' else ''} (a family's score "
                    f"of a seed: the mean over its settings)")
        units = sorted({len(u) for r in self.rows for t in r.scores.values() for u in t})
        seeds = "" if not units else f", {units[0]}" + (f"-{units[-1]}" if len(units) > 1 else "") + " eval seeds each"
        return f"all {len(self.tasks)} tasks x {n} run{'s' if n != '1' else ''}{seeds}"

    def elo_covers(self) -> str:
        """What the Elo of a row is fitted on, in words ('' when the board has no versus games)."""
        if not self.elo_envs:
            return ""
        return (f"{', '.join(self.elo_envs)} games only, against {', '.join(sorted(self.opponents))}; "
                f"{self.elo_anchor} fixed at 1000")


def _model(manifest: dict[str, Any]) -> str:
    ids = sorted({p["model_id"] for runs in manifest["players"].values() for p in runs})
    return ", ".join(ids)


def build_board(entries: list[dict[str, Any]], reps: int = 2000, seed: int = 0) -> Board | None:
    """The table of ``entries`` (all of one protocol); ``None`` when there are none."""
    if not entries:
        return None
    protocols = {e["protocol"] for e in entries}
    if len(protocols) != 1:
        raise ValueError(f"entries of several protocols: {sorted(protocols)}")
    entries = sorted(entries, key=lambda e: (e["submitted"], e["id"]))      # order-free: same input, same board
    tasks = list(dict.fromkeys(t for e in entries for t in e["results"]["scores"]))   # suite entries may lack some
    rows = []
    for e in entries:
        scores = e["results"]["scores"]
        rows.append(Row(label=e["label"], method=e["method"], model=_model(e["manifest"]),
                        iqm=stratified_bootstrap(scores, reps=reps, seed=seed),
                        tasks=dict(e["results"]["task_means"]), runs=len(next(iter(scores.values()))),
                        tokens=dict(e["manifest"]["tokens"]), submitted=e["submitted"], entry_id=e["id"],
                        self_reported=bool(e.get("self_reported", True)), scores=scores))
    methods = [r.method for r in rows]
    for row in rows:
        row.short = row.method if methods.count(row.method) == 1 else row.label
    for row, r in zip(rows, ranks([row.iqm[1:] for row in rows])):
        row.rank = r
    best = max(range(len(rows)), key=lambda i: (rows[i].iqm[0], rows[i].iqm[1]))
    for i, row in enumerate(rows):
        if i != best:
            row.poi_vs_best = probability_of_improvement_ci(row.scores, rows[best].scores, seed=seed)
    board = Board(entries[0]["protocol"], entries[0]["track"], tasks, rows, leader=rows[best].label, seed=seed,
                  suite=all("families" in e["results"] for e in entries))
    _elo(board, entries, seed)
    board.rows.sort(key=lambda r: (r.rank, -r.iqm[0], r.submitted))
    return board


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
    labels = {row.label for row in board.rows}
    anchor = "random" if "random" in players else min(players - labels)
    fit = bradley_terry_bootstrap(strata, weights, anchor=anchor, anchor_elo=ANCHOR_ELO, prior=1.0, reps=200,
                                  seed=seed)
    board.elo_anchor = anchor
    board.elo_envs = sorted(envs)
    for row in board.rows:
        row.elo = fit.get(row.label)
    board.opponents = {p: v for p, v in fit.items() if p not in labels}


def compare(board: Board, a: str, b: str) -> str:
    """One sentence comparing entries ``a`` and ``b`` (labels or short names) on the IQM and, where the board has
    one, the Elo: which is above and by which statistic, or that they do not differ at 95%. ``P(a > b)`` is quoted
    with its 95% CI and its direction spelled out."""
    ra, rb = board.row(a), board.row(b)
    poi = probability_of_improvement_ci(ra.scores, rb.scores, seed=board.seed)
    if separated(ra.iqm, rb.iqm) or separated(rb.iqm, ra.iqm):
        hi, lo = (ra, rb) if separated(ra.iqm, rb.iqm) else (rb, ra)
        p = poi if hi is ra else (1 - poi[0], 1 - poi[2], 1 - poi[1])
        text = f"{hi.short} above {lo.short}: IQM CIs separated (P({hi.short} > {lo.short}) = {format_ci(p, 2)})"
    elif poi[1] > 0.5:
        text = f"{ra.short} above {rb.short}: P({ra.short} > {rb.short}) = {format_ci(poi, 2)}, CI above 0.5 " \
               "(IQM CIs overlap)"
    elif poi[2] < 0.5:
        p = (1 - poi[0], 1 - poi[2], 1 - poi[1])
        text = f"{rb.short} above {ra.short}: P({rb.short} > {ra.short}) = {format_ci(p, 2)}, CI above 0.5 " \
               "(IQM CIs overlap)"
    else:
        text = f"{ra.short} vs {rb.short}: no difference at 95% (P({rb.short} > {ra.short}) = " \
               f"{format_ci((1 - poi[0], 1 - poi[2], 1 - poi[1]), 2)})"
    if ra.elo is not None and rb.elo is not None:
        if separated(ra.elo, rb.elo) or separated(rb.elo, ra.elo):
            hi, lo = (ra, rb) if separated(ra.elo, rb.elo) else (rb, ra)
            text += f"; Elo ({', '.join(board.elo_envs)} only): {hi.short} above {lo.short}, CIs separated"
        else:
            text += f"; Elo ({', '.join(board.elo_envs)} only): CIs overlap"
    return text


def verdicts(board: Board, under_test: str | None = None) -> list[str]:
    """The board's verdict in sentences. With ``under_test`` (a label or short name): that entry against every other
    one (:func:`compare`). Without: which entries the IQM separates (ranks), the leader's closest challenger by
    ``P(entry > leader)``, and which the Elo separates from its top entry, each saying what it covers."""
    if under_test is not None:
        mine = board.row(under_test)
        return [compare(board, mine.label, r.label) for r in board.rows if r is not mine]
    leader = board.row(board.leader)
    out = []
    top = [r for r in board.rows if r.rank == 1]
    below = [r for r in board.rows if r.rank > 1]
    if len(board.rows) == 1:
        out.append(f"IQM ({board.iqm_covers()}): one entry, nothing to compare")
    elif not below:
        out.append(f"IQM ({board.iqm_covers()}): no entry is separated at 95%: every CI overlaps "
                   f"{leader.short}'s, so all share rank 1")
    else:
        names = ", ".join(f"{r.short} (rank {r.rank})" for r in below)
        out.append(f"IQM ({board.iqm_covers()}): {', '.join(r.short for r in top)} above {names}: CIs separated")
    others = [r for r in board.rows if r.poi_vs_best is not None]
    if others:
        near = max(others, key=lambda r: r.poi_vs_best[0])
        lo, hi = near.poi_vs_best[1:]
        verdict = ("CI holds 0.5: not separated" if lo <= 0.5 <= hi else
                   f"CI below 0.5: {leader.short} better" if hi < 0.5 else f"CI above 0.5: {near.short} better")
        out.append(f"closest to the leader {leader.short}: P({near.short} > {leader.short}) = "
                   f"{format_ci(near.poi_vs_best, 2)} ({verdict})")
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
