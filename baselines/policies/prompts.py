"""Turning an observation text into prompt token ids, one way for every tokenizer-based backend, and the labelled
menu of legal moves that choice mode's ``"label"`` scoring appends to it."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any


def chat_prompt_ids(tokenizer: Any, text: str, system_prompt: str | None = None, use_chat_template: bool = True
               ) -> list[int]:
    """The prompt token ids for an observation text: the tokenizer's chat template (user message = ``text``, an
    optional system message first, the generation prompt appended) when it has one and ``use_chat_template``;
    otherwise the plain text, with the system prompt as a first paragraph."""
    if use_chat_template and getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages.append({"role": "user", "content": text})
        rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return list(tokenizer(rendered, add_special_tokens=False)["input_ids"])
    if system_prompt:
        text = f"{system_prompt}\n\n{text}"
    return list(tokenizer(text)["input_ids"])


LETTER_LABELS = string.ascii_uppercase + string.ascii_lowercase
DIGIT_LABELS = "0123456789"
LABEL_CHARS = LETTER_LABELS + DIGIT_LABELS      # every label character (each must be one token)
CHOICE_LABELS = LABEL_CHARS                     # kept name: the label alphabet, in the order labels are handed out
_SELF_LABELLED = re.compile(r"[\[(]?([A-Za-z0-9])[\])]?")


def choice_labels(legal: Sequence[str]) -> str:
    """The label of each legal move for ``choice_scoring="label"``, one character each, all distinct.

    A move that is one letter or digit, bare or in brackets (``[B]``, ``(b)``, ``3``, ``[0]``: a multiple-choice
    answer, a board cell), is labelled by that character itself, so the label a model answers with is the character
    the prompt and the other agents' messages use for that move ("I think the answer is (B)" -> ``B``; a cell
    ``[4]`` -> ``4``): a one-step copy, not a look-up through the menu. Every other move gets, in order, the first
    character of ``A``..``Z``, ``a``..``z``, ``0``..``9`` that no move uses (``[check] [bet]`` -> ``A B``;
    ``[none] [A] [B]`` -> ``C A B``). At most 62 moves."""
    if len(legal) > len(LABEL_CHARS):
        raise ValueError(f"choice_scoring='label' labels at most {len(LABEL_CHARS)} legal moves, got {len(legal)}; "
                         f"use choice_scoring='mean' for this env")
    own: list[str | None] = []
    used: set[str] = set()
    for a in legal:
        m = _SELF_LABELLED.fullmatch(a.strip())
        c = m.group(1) if m else None
        if c is not None and c in used:     # the same character twice ("[a]" and "(a)"): the second gets a free one
            c = None
        own.append(c)
        if c is not None:
            used.add(c)
    free = (c for c in LABEL_CHARS if c not in used)
    return "".join(c if c is not None else next(free) for c in own)


def label_menu(text: str, legal: Sequence[str]) -> str:
    """The observation text with the legal moves listed under one-character labels (:func:`choice_labels`), for
    ``choice_scoring="label"``:

        <text>

        Choices: (A) [check] (B) [bet]
        Answer with the letter of your choice.

    ("number" when every label is a digit, "label" when letters and digits mix). The policy then reads the
    next-token distribution over the labels."""
    labels = choice_labels(legal)
    menu = " ".join(f"({c}) {a}" for c, a in zip(labels, legal))
    kind = ("number" if all(c.isdigit() for c in labels) else "letter" if all(c.isalpha() for c in labels)
            else "label")
    return f"{text}\n\nChoices: {menu}\nAnswer with the {kind} of your choice."


def label_token_ids(tokenizer: Any) -> dict[str, int]:
    """The token id of each label character (``"label"`` scoring), checked to be one token each: a ``ValueError``
    naming the characters this tokenizer splits otherwise."""
    ids = {c: list(tokenizer(c, add_special_tokens=False)["input_ids"]) for c in LABEL_CHARS}
    bad = [c for c, x in ids.items() if len(x) != 1]
    if bad:
        raise ValueError(f"choice_scoring='label' needs one token per label character; this tokenizer splits "
                         f"{bad[:5]}; use choice_scoring='mean'")
    return {c: x[0] for c, x in ids.items()}


def move_token_ids(tokenizer: Any, legal: Sequence[str], scoring: str, label_ids: dict[str, int] | None = None
                   ) -> list[list[int]]:
    """The scored tokens of each legal move under ``scoring``: its label's token (``"label"``; ``label_ids`` from
    :func:`label_token_ids`, computed when not given), else its text's tokens (``"mean"``, ``"sum"``)."""
    if scoring == "label":
        ids = label_ids if label_ids is not None else label_token_ids(tokenizer)
        return [[ids[c]] for c in choice_labels(legal)]
    out = []
    for a in legal:
        a_ids = list(tokenizer(a, add_special_tokens=False)["input_ids"])
        if not a_ids:
            raise ValueError(f"legal action {a!r} tokenizes to nothing")
        out.append(a_ids)
    return out
