"""The leaderboard harness: fixed protocols, evaluation with provenance, validation by replay, ranking with
confidence intervals, and a rendered table.

    python -m leaderboard protocols                                    # what can be submitted to
    python -m leaderboard evaluate --protocol policy --player reference --method reference-bots --out sub/
    python -m leaderboard validate sub/                                # schema, completeness, replay audit, scores
    python -m leaderboard submit sub/                                  # one JSON entry in leaderboard/entries/
    python -m leaderboard show                                         # the ranked tables
    python -m leaderboard render                                       # LEADERBOARD.md and index.html
    python -m leaderboard benchmark-credit broadcast --tier micro --quick

Modules: :mod:`~leaderboard.protocol` (the protocol files and their checks), :mod:`~leaderboard.players` (random,
reference bots, trainer checkpoints), :mod:`~leaderboard.evaluate`, :mod:`~leaderboard.validate`,
:mod:`~leaderboard.store` (submit), :mod:`~leaderboard.stats` (IQM, stratified bootstrap, probability of
improvement, Bradley-Terry), :mod:`~leaderboard.board` (the ranked table), :mod:`~leaderboard.render`,
:mod:`~leaderboard.benchmark` (benchmark-credit). See ``leaderboard/README.md``.
"""
