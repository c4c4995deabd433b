"""The leaderboard harness: fixed protocols, evaluation with provenance, validation by replay, ranking with
confidence intervals, and a rendered table.

    python -m leaderboard protocols                                    # what can be submitted to
    python -m leaderboard evaluate --protocol policy --player reference --method reference-bots --out sub/
    python -m leaderboard validate sub/ [--reproduce]                  # schema, replay of every episode, scores
    python -m leaderboard submit sub/ [--reproduce]                    # one JSON entry in board/entries/
    python -m leaderboard evaluate-private --protocol policy --player checkpoint:RUN --method NAME --out DIR
    python -m leaderboard show                                         # the ranked tables
    python -m leaderboard render                                       # board/LEADERBOARD.md and index.html
    python -m leaderboard benchmark-credit broadcast --tier micro --quick

Modules: :mod:`~leaderboard.protocol` (the protocol files and their checks), :mod:`~leaderboard.players` (random,
reference bots, trainer checkpoints), :mod:`~leaderboard.evaluate`, :mod:`~leaderboard.validate` (with
:mod:`~leaderboard.submission_json`: the manifest read strictly, and :mod:`~leaderboard.audit`: the episodes checked
and replayed),
:mod:`~leaderboard.reproduce` (re-run the claimed player), :mod:`~leaderboard.private` (private-seed mode),
:mod:`~leaderboard.store` (submit), :mod:`~leaderboard.stats` (IQM, stratified bootstrap, probability of
improvement, Bradley-Terry, Student-t intervals), :mod:`~leaderboard.board` (the ranked table),
:mod:`~leaderboard.render` (with :mod:`~leaderboard.figures` and :mod:`~leaderboard.escape`),
:mod:`~leaderboard.benchmark` (benchmark-credit), :mod:`~leaderboard.suite` (the credit-assignment suite) and
:mod:`~leaderboard.workers` (processes or Ray for independent runs). The data (entries, LEADERBOARD.md, index.html)
lives outside the package, in the repository's ``board/``. See ``leaderboard/README.md``.
"""
