"""Text helpers shared by the envs and the task sources: one place for the observation charset, move parsing and
``\\boxed{...}`` extraction.

LLM output is hostile input. Every parser here reads its input in one left-to-right scan, in time linear in its
length (no backtracking regular expression, no rescans), and reads at most ``TEXT_MAX_LENGTH`` characters: the rest
is ignored. The envs cut a longer text action to that length before any parser sees it and record how much they
ignored (``infos[agent]["ignored_chars"]``; see :mod:`marl_llm_envs.core`). ``benchmarks/hostile_text.py`` times
every env's parser on adversarial inputs at two sizes and checks the growth is linear.
"""

from __future__ import annotations

import re
import reprlib
import string
import unicodedata
from typing import Any

PRINTABLE = string.printable
CHARSET = frozenset(PRINTABLE)
TEXT_MAX_LENGTH = 1 << 16
"""The most characters of one text action an env reads (65,536), and the ``max_length`` of every ``Text`` space."""

BRACKET_TOKEN_MAX = 64
"""The longest ``[...]`` token that can name a move (characters between the brackets)."""

_NON_PRINTABLE = re.compile(r"[^\x20-\x7e\t\n\r\x0b\x0c]")
# the lexemes of a \boxed{...} scan: a \boxed or \fbox command, any other escape (two characters), a brace
_BOXED_LEXEME = re.compile(r"\\(?:boxed|fbox)|\\.|[{}]", re.S)


def printable(text: str, limit: int | None = None) -> str:
    """Return ``text`` as printable ASCII: accents are transliterated (NFKD), anything else becomes ``?``.

    Free text written by one agent (a thought, a message) passes through here before another agent sees it, so
    every observation stays inside the ``Text`` space. ``limit`` truncates to that many characters first.
    """
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[:limit]
    if _NON_PRINTABLE.search(text) is None:
        return text
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return _NON_PRINTABLE.sub("?", text)


class _BoundedRepr(reprlib.Repr):
    """``reprlib`` limits, plus ints too long for ``repr`` (Python refuses more than 4,300 digits)."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 1000:  # about 301 digits: say how big instead of converting it
            return f"<int of about {int(x.bit_length() * 0.30103)} digits>"
        return super().repr_int(x, level)


_REPR = _BoundedRepr()
_REPR.maxstring = _REPR.maxother = 200


def short_repr(value: Any, limit: int = 200) -> str:
    """A bounded, printable ``repr`` of any value (a string is quoted: ``'1'``, ``''``), for error reasons.

    Never raises and never converts more than a bounded part of ``value``: long strings, containers and ints are
    abbreviated, and an object whose ``repr`` fails is named by its type."""
    if isinstance(value, str):
        text = repr(value[:limit]) + ("..." if len(value) > limit else "")
    else:
        try:
            text = _REPR.repr(value)
        except Exception:  # a user object whose __repr__ fails
            text = f"<{type(value).__name__} object>"
    return printable(text if len(text) <= limit + 5 else text[:limit] + "...")


def short_text(action: Any, limit: int = 200) -> str:
    """A bounded, printable copy of a submitted action for the ``invalid_action`` record: a string as it was
    written (cut to ``limit`` characters), anything else as :func:`short_repr`."""
    if isinstance(action, str):
        return printable(action if len(action) <= limit else action[:limit] + "...")
    return short_repr(action, limit)


def bracketed_tokens(text: str) -> list[str]:
    """Every ``[...]`` token of ``text``, left to right: 1 to ``BRACKET_TOKEN_MAX`` characters between the brackets,
    none of them ``[``, ``]`` or a newline. One scan of at most ``TEXT_MAX_LENGTH`` characters."""
    if len(text) > TEXT_MAX_LENGTH:
        text = text[:TEXT_MAX_LENGTH]
    # A token ends at a "]" and starts at the last "[" before it, if that "[" comes after the previous "]", at most
    # BRACKET_TOKEN_MAX + 1 characters back, with no newline in between. One pass over the "]"s; every search is
    # bounded by the previous "]" or by the token length, so each character is looked at a bounded number of times.
    tokens = []
    pos = 0
    while (close := text.find("]", pos)) >= 0:
        start = text.rfind("[", max(pos, close - BRACKET_TOKEN_MAX - 1), close)
        if 0 <= start < close - 1 and text.find("\n", start + 1, close) < 0:
            tokens.append(text[start + 1:close])
        pos = close + 1
    return tokens


def parse_bracketed(text: str, names: dict[str, int]) -> tuple[int | None, str | None]:
    """Find the move in free text: the last ``[...]`` token that names an action; a bare action name also counts.

    ``names`` maps a lower-case action name (without brackets) to its index. Bracketed words that name no action
    (``[note]``) are ignored, so reasoning around the move is fine. Returns ``(index, None)`` or
    ``(None, reason)``. The index may still be illegal in the current state; the caller checks legality. Reads at
    most ``TEXT_MAX_LENGTH`` characters, in one scan.
    """
    tokens = bracketed_tokens(text)
    for token in reversed(tokens):
        key = token.strip().lower()
        if key in names:
            return names[key], None
    bare = text.strip()
    if len(bare) <= BRACKET_TOKEN_MAX and bare.lower() in names:  # a move name fits in a bracket token
        return names[bare.lower()], None
    return None, no_move_reason(tokens, names)


def no_move_reason(tokens: list[str], names: dict[str, int]) -> str:
    """The invalid-move reason when no token of a reply names a move (``tokens`` as :func:`bracketed_tokens`)."""
    example = ", ".join(f"[{n}]" for n in list(names)[:3])
    if tokens:
        return f"[{printable(tokens[-1].strip(), 40)}] is not a move of this game; moves look like {example}"
    return f"no move found; write your move in square brackets, e.g. {example}"


def find_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, stripped; nested braces and
    escaped braces (``\\{``) are handled. ``None`` when there is no complete one.

    "Last" means the one that opens last among the complete ones (in ``\\boxed{a \\boxed{b}}`` it is ``b``). One
    left-to-right scan over the braces and backslashes of at most ``TEXT_MAX_LENGTH`` characters, keeping a stack
    of the open boxes (their brace depth and start) and slicing only the winner; unclosed ``\\boxed{`` cost
    nothing more than any other character.
    """
    text = str(text)
    if len(text) > TEXT_MAX_LENGTH:
        text = text[:TEXT_MAX_LENGTH]
    if "box" not in text:
        return None
    box_depth: list[int] = []
    box_start: list[int] = []
    depth = 0
    pending = -1
    best_start = best_end = -1
    for m in _BOXED_LEXEME.finditer(text):
        lexeme = m.group()
        if lexeme == "{":
            depth += 1
            if pending >= 0:
                at = m.start()
                if at == pending or text[pending:at].isspace():
                    box_depth.append(depth)
                    box_start.append(at + 1)
                pending = -1
        elif lexeme == "}":
            pending = -1
            if depth == 0:
                continue
            if box_depth and box_depth[-1] == depth:
                box_depth.pop()
                start = box_start.pop()
                if start > best_start:
                    best_start, best_end = start, m.start()
            depth -= 1
        elif lexeme == "\\boxed" or lexeme == "\\fbox":
            pending = m.end()
        else:
            pending = -1
    return None if best_start < 0 else text[best_start:best_end].strip()
