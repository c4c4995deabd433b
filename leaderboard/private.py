"""Private-seed mode: the maintainer evaluates a submitted player on seeds drawn at validation time.

A protocol's evaluation seeds are public, and the deals follow from them, so a submitter could plan its moves for
every deal in advance (a lookup table "wins" without playing well). In private-seed mode the submitter hands over
the player (a ``checkpoint:`` run folder, an ``hf:`` model, or a built-in player), never episodes. The maintainer
runs::

    python -m leaderboard evaluate-private --protocol policy --player checkpoint:their_run --method their-name \\
        --out private/their-name --submit

which draws a fresh start seed with :mod:`secrets` (at or above ``2**41``, far from the public range
``2**40 + count`` and from every training seed), plays the protocol on those seeds with
:func:`leaderboard.evaluate.evaluate`, validates the result like any submission (every episode replayed, every
opponent move re-derived), and stores it with ``"seeds": "private"`` and ``self_reported: false``: the maintainer
ran the player, so its moves are its own. On the credit track the moves are not enough: the runs' training (the
credit method's work, its step count) is the submitter's word until it is re-trained, so every MLP run is trained
again from its ``train_config`` and must reach the handed-in weights (:mod:`leaderboard.reproduce`); runs that
cannot be re-trained here (an LLM) are stored *self-reported*. The drawn seeds are written into the submission's
manifest, so the numbers can be re-checked later; they were unknown to the submitter when the player was handed
over.
"""

from __future__ import annotations

import dataclasses
import secrets
from pathlib import Path
from typing import Any, Sequence

from leaderboard.evaluate import evaluate
from leaderboard.protocol import EVAL_SEED_START, Protocol
from leaderboard.reproduce import reproduce
from leaderboard.store import add_entry
from leaderboard.validate import Validated, validate

__all__ = ["PRIVATE_SEED_START", "evaluate_private", "private_protocol"]

PRIVATE_SEED_START = 2 * EVAL_SEED_START          # 2**41: the public seeds are 2**40 .. 2**40 + count - 1


def private_protocol(protocol: Protocol, count: int | None = None, draw=secrets.randbelow) -> Protocol:
    """``protocol`` on ``count`` (default: the protocol's count) consecutive seeds from a start drawn by ``draw``."""
    count = protocol.seed_count if count is None else int(count)
    if count < 1:
        raise ValueError(f"count: at least 1 seed, got {count}")
    start = PRIVATE_SEED_START + draw(2**62 - PRIVATE_SEED_START - count)
    return dataclasses.replace(protocol, seed_start=start, seed_count=count)


def evaluate_private(protocol: Protocol, players: dict[str, Sequence[str]], out: str | Path, method: str,
                     count: int | None = None, store: str | Path | None = None, progress: bool = False,
                     note: str = "") -> tuple[Validated, dict[str, Any] | None]:
    """Play ``protocol`` with ``players`` on freshly drawn private seeds, validate, and (with ``store``) add the
    entry; returns the validated submission and the entry (None without ``store``)."""
    private = private_protocol(protocol, count)
    evaluate(private, players, out, method, progress=progress, note=note)
    seeds = {"start": private.seed_start, "count": private.seed_count}
    if protocol.track == "credit":
        v = validate(out, protocol=private)
        runs = [p for env_id in private.env_ids for p in v.manifest["players"][env_id]]
        if all((p.get("train_config") or {}).get("model") == "mlp" for p in runs):
            reproduce(v)                                                        # every run re-trained
            v.reproduced["private_seeds"] = seeds
        # else: the moves were played here, but the training is the submitter's word: self-reported
    else:
        v = validate(out, protocol=private)
        v.reproduced = {"episodes": v.episodes, "retrained": [], "private_seeds": seeds,
                        "players": [f"{env_id}|run{r}" for env_id in sorted(players)
                                    for r in range(len(players[env_id]))]}
    entry = None
    if store is not None:
        entry = add_entry(v, store, seeds="private")
    return v, entry
