"""The Hanabi rule bot: a simple, non-privileged reference partner for every Hanabi preset.

:func:`rule_bot` uses only what the acting player may know: its own hint knowledge
(``env.unwrapped.card_knowledge(agent)``), the partners' cards it sees and their (public) hint knowledge
(``visible_hands`` / ``card_knowledge(partner)``) and the public board (``public_state()``). In order, it:

1. plays a card known to be playable (every card it could still be is playable now; a card identity is ruled out
   when all its copies are visible elsewhere: on the fireworks, in the discard pile or in a partner's hand);
2. else hints a partner's playable card that the partner does not yet know is playable (the first such partner in
   turn order, its oldest such card; a rank hint if the rank is not yet known, else a colour hint);
3. else discards a card known to be dead (every card it could still be can never be played again);
4. else gives a hint (preferring one that tells the partner something new);
5. else discards its oldest card (slot 0); if discarding is illegal, plays slot 0.

It returns an action in the env's action mode: an index in discrete mode, a move such as ``"[play 0]"`` in text mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marl_llm_envs.envs.hanabi import card_count


def _possible(colours, ranks, remaining):
    return [(c, r) for c in colours for r in ranks if remaining[c][r] > 0]


def _dead(c: int, r: int, fireworks, discarded, R: int) -> bool:
    """(c, r) can never be played: already played, or some lower rank of c has every copy discarded."""
    if r < fireworks[c]:
        return True
    for lower in range(fireworks[c], r):
        if discarded.get((c, lower), 0) >= card_count(lower, R):
            return True
    return False


def rule_bot(env, agent: str, rng: np.random.Generator) -> Any:
    """The rule bot's move for ``agent`` (see the module docstring)."""
    base = env.unwrapped
    H = base.hand_size
    board = base.public_state()
    fireworks = board["fireworks"]
    seat = int(agent.rsplit("_", 1)[1])
    visible = base.visible_hands(agent)
    discarded, remaining = _card_counts(base, board, visible)
    legal_ids = [int(i) for i in np.flatnonzero(base.action_mask(agent))]  # ascending, as legal_actions() lists them
    legal = set(legal_ids)
    names = base.action_names(agent)

    def out(index: int) -> Any:
        return index if base.action_mode == "discrete" else f"[{names[index]}]"

    knowledge = base.card_knowledge(agent)
    # 1. a card known to be playable
    for i, (colours, ranks) in enumerate(knowledge):
        cands = _possible(colours, ranks, remaining)
        if cands and all(fireworks[c] == r for c, r in cands):
            return out(H + i)
    # 2. hint a partner's playable card it does not know about
    if board["information_tokens"] > 0:
        index = _hint_for_a_playable_card(base, seat, visible, fireworks, legal)
        if index is not None:
            return out(index)
    # 3. discard a card known to be dead
    if 0 in legal:  # discarding is legal (slot 0 always exists on the player's turn)
        for i, (colours, ranks) in enumerate(knowledge):
            cands = _possible(colours, ranks, remaining) or [(c, r) for c in colours for r in ranks]
            if i in legal and all(_dead(c, r, fireworks, discarded, base.ranks) for c, r in cands):
                return out(i)
    # 4. any hint (one that tells something new first)
    hints = [i for i in legal_ids if i >= 2 * H]
    if hints:
        return out(_first_informative_hint(base, seat, visible, hints))
    # 5. discard the oldest card, else play it
    return out(0 if 0 in legal else H)


def _card_counts(base, board: dict, visible: dict) -> tuple[dict[tuple[int, int], int], list[list[int]]]:
    """The discard pile as (colour, rank) -> copies, and the copies of each card that might still be in the
    agent's own hand (or the deck): all copies less the discarded, the played and the ones in partners' hands."""
    C, R, fireworks = base.colors, base.ranks, board["fireworks"]
    discarded: dict[tuple[int, int], int] = {}
    for card in board["discards"]:
        discarded[card] = discarded.get(card, 0) + 1
    remaining = [[card_count(r, R) - discarded.get((c, r), 0) - (1 if r < fireworks[c] else 0) for r in range(R)]
                 for c in range(C)]
    for hand in visible.values():
        for c, r in hand:
            remaining[c][r] -= 1
    return discarded, remaining


def _hint_for_a_playable_card(base, seat: int, visible: dict, fireworks, legal: set[int]) -> int | None:
    """A legal hint that tells a partner (nearest first) about a playable card it does not know is playable: its rank
    when more than one rank is still possible, else its colour."""
    C, R, H, P = base.colors, base.ranks, base.hand_size, base.players
    for k in range(1, P):
        partner = f"player_{(seat + k) % P}"
        pk = base.card_knowledge(partner)
        for i, (c, r) in enumerate(visible[partner]):
            if fireworks[c] != r:
                continue
            colours, ranks = pk[i]
            if all(fireworks[cc] == rr for cc in colours for rr in ranks):
                continue  # it already knows
            if len(ranks) > 1:
                index = 2 * H + (P - 1) * C + (k - 1) * R + r
            else:
                index = 2 * H + (k - 1) * C + c
            if index in legal:
                return index
    return None


def _first_informative_hint(base, seat: int, visible: dict, hints: list[int]) -> int:
    """The first of the legal ``hints`` that rules out something a partner does not know yet, else the first."""
    C, R, H, P = base.colors, base.ranks, base.hand_size, base.players
    for index in hints:
        j = index - 2 * H
        if j < (P - 1) * C:
            k, value, is_colour = 1 + j // C, j % C, True
        else:
            j -= (P - 1) * C
            k, value, is_colour = 1 + j // R, j % R, False
        partner = f"player_{(seat + k) % P}"
        pk = base.card_knowledge(partner)
        for (c, r), (colours, ranks) in zip(visible[partner], pk):
            if (is_colour and c == value and len(colours) > 1) or (not is_colour and r == value and len(ranks) > 1):
                return index
    return hints[0]
