"""Text helpers shared by the envs and the task sources: one place for the observation charset, move parsing and
``\\boxed{...}`` extraction."""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Any

PRINTABLE = string.printable
CHARSET = frozenset(PRINTABLE)
TEXT_MAX_LENGTH = 1 << 16

_NON_PRINTABLE = re.compile(r"[^\x20-\x7e\t\n\r\x0b\x0c]")
_BRACKETED = re.compile(r"\[([^\[\]\n]{1,64})\]")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


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


def short_repr(action: Any, limit: int = 200) -> str:
    """A bounded, printable description of a submitted action, for the ``invalid_action`` record."""
    text = action if isinstance(action, str) else repr(action)
    return printable(text if len(text) <= limit else text[:limit] + "...")


def parse_bracketed(text: str, names: dict[str, int]) -> tuple[int | None, str | None]:
    """Find the move in free text: the last ``[...]`` token that names an action; a bare action name also counts.

    ``names`` maps a lower-case action name (without brackets) to its index. Bracketed words that name no action
    (``[note]``) are ignored, so reasoning around the move is fine. Returns ``(index, None)`` or
    ``(None, reason)``. The index may still be illegal in the current state; the caller checks legality.
    """
    tokens = _BRACKETED.findall(text)
    for token in reversed(tokens):
        key = token.strip().lower()
        if key in names:
            return names[key], None
    bare = text.strip().lower()
    if bare in names:
        return names[bare], None
    example = ", ".join(f"[{n}]" for n in list(names)[:3])
    if tokens:
        return None, f"[{printable(tokens[-1].strip(), 40)}] is not a move of this game; moves look like {example}"
    return None, f"no move found; write your move in square brackets, e.g. {example}"


def find_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, stripped; nested braces and
    escaped braces (``\\{``) are handled. ``None`` when there is no complete one."""
    text = str(text)
    for match in reversed(list(_BOXED.finditer(text))):
        start = i = match.end()
        depth = 1
        while i < len(text):
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[start:i].strip()
            i += 1
    return None
