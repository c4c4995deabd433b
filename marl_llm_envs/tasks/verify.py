"""Answer helpers shared by every task source's verifier: wrappers stripped, numbers parsed exactly, loose text
keys."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Optional

from marl_llm_envs.text import find_boxed as extract_boxed

_NUMBER_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_THOUSANDS_RE = re.compile(r"^([+-]?)(\d{1,3}(?:,\d{3})+)(\.\d+)?$")
_FRAC_RE = re.compile(r"^([+-]?)\\[dt]?frac\{([+-]?\d+)\}\{([+-]?\d+)\}$")
_SLASH_RE = re.compile(r"^([+-]?\d+)/([+-]?\d+)$")


_TEXT_COMMANDS = ("\\text{", "\\textbf{", "\\mathrm{", "\\mbox{")
_MAX_EXPONENT = 1000  # "1e999999999" would build a billion-digit integer: larger exponents are not read as numbers


def _strip_wrappers(text: str) -> str:
    """Remove the usual decorations around a final answer (``$``, ``\\boxed{}``, trailing period)."""
    s = str(text).strip()
    for _ in range(4):
        prev = s
        s = s.strip()
        if s.startswith("$") and s.endswith("$") and len(s) >= 2:
            s = s.strip("$")
        if s.startswith("\\(") and s.endswith("\\)"):
            s = s[2:-2]
        if s.startswith("\\[") and s.endswith("\\]"):
            s = s[2:-2]
        if s.startswith(("\\boxed", "\\fbox")) and s.endswith("}"):
            boxed = extract_boxed(s)
            s = s if boxed is None else boxed
        if s.startswith(_TEXT_COMMANDS) and s.endswith("}"):
            s = s[s.index("{") + 1:-1]
        s = s.strip().rstrip(".").strip()
        if s == prev:
            break
    return s


def number_matches(response: str, answer: str) -> bool:
    """Whether ``response`` parses as exactly the number ``answer`` (the verifier of the numeric sources; never
    raises on odd model output)."""
    try:
        got = _parse_number(response)
        return got is not None and got == Fraction(answer)
    except Exception:  # a verifier must never crash on model output
        return False


def _parse_number(text: str) -> Optional[Fraction]:
    """Parse a plain number (``"+42"``, ``"42.0"``, ``"1,234"``, ``"-3/4"``, ``"\\frac{1}{2}"``) or ``None``."""
    s = _strip_wrappers(text)
    if len(s) > 200:
        return None
    s = s.replace("\u2212", "-").replace("\\!", "").replace("\\,", "")
    s = re.sub(r"^(?:[a-zA-Z]\s*)?=\s*", "", s)  # "x = 42", "= 42"
    s = re.sub(r"\s+", "", s)
    m = _THOUSANDS_RE.match(s)
    if m:
        s = m.group(1) + m.group(2).replace(",", "") + (m.group(3) or "")
    if _NUMBER_RE.match(s):
        mantissa, e, exponent = s.lower().partition("e")
        if e and abs(int(exponent)) > _MAX_EXPONENT:
            return None
        return Fraction(s.rstrip(".") if s.endswith(".") else s)
    m = _FRAC_RE.match(s) or _SLASH_RE.match(s)
    if m:
        sign, num, den = m.groups() if len(m.groups()) == 3 else ("", *m.groups())
        if int(den) == 0:
            return None
        value = Fraction(int(num), int(den))
        return -value if sign == "-" else value
    return None


def _normalise_text(text: str) -> str:
    """Loose string normal form for answers: no wrappers, no whitespace, lower case."""
    s = _strip_wrappers(text)
    s = s.replace("\\left", "").replace("\\right", "").replace("\\!", "").replace("\\,", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\s+", "", s).lower()
    return s


def answer_key(text: str) -> str:
    """Key that decides whether two answers are "the same": equal numbers ("42", "+42", "42.0", "84/2") share a key,
    other answers compare as loose text (no wrappers, spaces or case). Used to deduplicate distractors and to group
    ballots in voting-v0."""
    num = _parse_number(text)
    if num is not None:
        return f"#num:{num}"
    return _normalise_text(text)


def _finite_unit(x: float) -> float:
    """Clip into [-1, 1]."""
    return float(max(-1.0, min(1.0, x)))
