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


CHOICE_LABELS = string.ascii_uppercase + string.ascii_lowercase
DIGIT_LABELS = "123456789"
_LETTER_MOVE = re.compile(r"[\[(]?[A-Za-z][\])]?")


def choice_labels(legal: Sequence[str]) -> str:
    """The label of each legal move for ``choice_scoring="label"``: ``A``..``Z`` then ``a``..``z`` (at most 52
    moves), or ``1``..``9`` when the moves are themselves letters (``[A]``, ``(b)``: a multiple-choice answer), so
    that label ``B`` never stands for move ``[A]``."""
    if len(legal) > len(CHOICE_LABELS):
        raise ValueError(f"choice_scoring='label' labels at most {len(CHOICE_LABELS)} legal moves, got {len(legal)}; "
                         f"use choice_scoring='mean' for this env")
    if len(legal) <= len(DIGIT_LABELS) and any(_LETTER_MOVE.fullmatch(a.strip()) for a in legal):
        return DIGIT_LABELS[:len(legal)]
    return CHOICE_LABELS[:len(legal)]


def label_menu(text: str, legal: Sequence[str]) -> str:
    """The observation text with the legal moves listed under one-character labels (:func:`choice_labels`), for
    ``choice_scoring="label"``:

        <text>

        Choices: (A) [check] (B) [bet]
        Answer with the letter of your choice.

    The policy then reads the next-token distribution over the labels."""
    labels = choice_labels(legal)
    menu = " ".join(f"({c}) {a}" for c, a in zip(labels, legal))
    kind = "number" if labels[0].isdigit() else "letter"
    return f"{text}\n\nChoices: {menu}\nAnswer with the {kind} of your choice."
