"""The ranked table of one protocol, computed from the store's entries (never from submitted numbers).

For every entry: the IQM of its normalized scores over runs x tasks with a seeded stratified-bootstrap 95% CI, the
rank (1 + the number of entries whose CI lies entirely above), the probability of improvement over the entry ranked
first (by IQM), each task's mean normalized score, and, where the protocol has versus tasks, a Bradley-Terry rating
on the Elo scale with a bootstrap 95% CI, fitted on every entry's games against the protocol's opponents (which are
players too; ``random`` is fixed at 1000, or, where no task plays random, the first opponent by name). One game is
one seed, both seats (duplicate play). Each env weighs the same in that fit: one entry's games in an env get the
weight ``total games of the entry / (envs x games in that env)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.stats import bradley_terry_bootstrap, probability_of_improvement, ranks, stratified_bootstrap

ANCHOR_ELO = 1000.0

__all__ = ["Board", "Row", "build_board"]


@dataclass
class Row:
    label: str
    method: str
    model: str
    iqm: tuple[float, float, float]
    rank: int = 0
    poi_vs_best: float | None = None
    tasks: dict[str, float] = field(default_factory=dict)
    elo: tuple[float, float, float] | None = None
    runs: int = 1
    tokens: dict[str, int] = field(default_factory=dict)
    submitted: str = ""
    entry_id: str = ""


@dataclass
class Board:
    protocol: str
    track: str
    tasks: list[str]
    rows: list[Row]
    opponents: dict[str, tuple[float, float, float]] = field(default_factory=dict)   # bots' Elo
    elo_anchor: str = ""                                                              # the player fixed at 1000


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
    tasks = list(dict.fromkeys(t for e in entries for t in e["results"]["scores"]))   # suite entries may lack some
    rows = []
    for e in entries:
        scores = e["results"]["scores"]
        rows.append(Row(label=e["label"], method=e["method"], model=_model(e["manifest"]),
                        iqm=stratified_bootstrap(scores, reps=reps, seed=seed),
                        tasks=dict(e["results"]["task_means"]), runs=len(next(iter(scores.values()))),
                        tokens=dict(e["manifest"]["tokens"]), submitted=e["submitted"], entry_id=e["id"]))
    for row, r in zip(rows, ranks([row.iqm[1:] for row in rows])):
        row.rank = r
    best = max(range(len(rows)), key=lambda i: rows[i].iqm[0])
    for i, row in enumerate(rows):
        if i != best:
            row.poi_vs_best = probability_of_improvement(entries[i]["results"]["scores"],
                                                         entries[best]["results"]["scores"])
    board = Board(entries[0]["protocol"], entries[0]["track"], tasks, rows)
    _elo(board, entries, seed)
    board.rows.sort(key=lambda r: (r.rank, -r.iqm[0], r.submitted))
    return board


def _elo(board: Board, entries: list[dict[str, Any]], seed: int) -> None:
    strata: dict[str, list[tuple[str, str, float, int]]] = {}
    weights: dict[str, float] = {}
    for e in entries:
        games = e["results"]["games"]
        if not games:
            continue
        per_env = {env: sum(sum(c.values()) for c in opp.values()) for env, opp in games.items()}
        total = sum(per_env.values())
        for env, by_opp in games.items():
            for opp, c in by_opp.items():
                key = f"{e['label']}|{env}|{opp}"
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
    for row in board.rows:
        row.elo = fit.get(row.label)
    board.opponents = {p: v for p, v in fit.items() if p not in labels}
