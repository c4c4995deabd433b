"""Submitted strings made safe for each surface they reach: one line without control characters (:func:`clean`), a
Markdown table cell (:func:`md_cell`), HTML text or a quoted attribute (:func:`html_text`), a matplotlib label
(:func:`mpl_text`). A newline, ``|`` or ``<`` in a model id cannot add a row or markup."""

from __future__ import annotations

import html
import unicodedata

__all__ = ["clean", "html_text", "md_cell", "mpl_text"]

_UNSAFE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def clean(text: object, limit: int = 80) -> str:
    """``text`` as one line: control and format characters (newlines, escapes, bidi overrides) become U+FFFD,
    longer than ``limit`` characters is cut with an ellipsis."""
    s = "".join("\ufffd" if unicodedata.category(c) in _UNSAFE else c for c in str(text))
    return s if len(s) <= limit else s[:limit - 1] + "\u2026"


def md_cell(text: object, limit: int = 80) -> str:
    """``text`` safe in a Markdown table cell: one line, ``|`` escaped, ``<`` as an entity (no tag can open; ``>``
    stays readable, as in ``P(a > b)``), ``](`` and ``://`` escaped (no link or image, no bare URL made live)."""
    return clean(text, limit).replace("<", "&lt;").replace("|", "\\|").replace("](", "]\\(").replace("://", ":\\/\\/")


def html_text(text: object, limit: int = 80) -> str:
    """``text`` safe in HTML text and quoted attributes."""
    return html.escape(clean(text, limit), quote=True)


def mpl_text(text: object, limit: int = 40) -> str:
    """``text`` safe as a matplotlib label (``$`` would start math mode)."""
    return clean(text, limit).replace("$", r"\$")
