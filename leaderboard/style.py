"""How a method looks on every page and figure, without matplotlib: one :class:`Style` (colour, line style, marker)
per method (:meth:`Palette.style`, the one function every figure and table swatch calls), and the :class:`Figure`
record a page embeds.

The colours are colour-blind safe: the Okabe-Ito palette (Okabe and Ito 2008, "Color Universal Design") for the
first methods, Paul Tol's "muted" scheme (Tol 2021, "Colour Schemes", SRON/EPS/TN/09-002) for the rest. The 13
built-in credit methods (``baselines.credit.list_credits()``, the controls ``none``, ``shuffled`` and ``oracle``
included) have fixed styles: pairwise CIELAB distance at least 20 (and where under 30, a different line style too),
solid lines for the first eight, dashed or dotted lines past them, and a marker of their own each.
Any other name takes the next spare style in sorted-name order, the same on every figure of a page."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

__all__ = ["METHOD_STYLES", "Figure", "Palette", "Style"]


@dataclass(frozen=True)
class Style:
    colour: str              # "#rrggbb"
    linestyle: str = "-"     # a matplotlib line style: "-", "--", ":", "-."
    marker: str = "o"        # a matplotlib marker


# the built-in methods in list_credits() order, then the players of the policy track
METHOD_STYLES: dict[str, Style] = {
    "broadcast": Style("#0072b2", "-", "o"),      # Okabe-Ito blue
    "none": Style("#888888", "-", "s"),           # grey: the raw-return control
    "rae": Style("#009e73", "-", "^"),            # Okabe-Ito bluish green
    "marshal": Style("#cc79a7", "-", "v"),        # Okabe-Ito reddish purple
    "coma": Style("#d55e00", "-", "D"),           # Okabe-Ito vermillion
    "loo": Style("#e69f00", "-", "P"),            # Okabe-Ito orange
    "ccpo_v1": Style("#88ccee", "-", "X"),        # Tol cyan (Okabe-Ito's sky blue is too near broadcast's blue)
    "ccpo_v2": Style("#332288", "-", "*"),        # Tol indigo
    "dr_mas": Style("#882255", "--", "h"),        # Tol wine
    "mappo": Style("#117733", "--", "<"),         # Tol green
    "ippo": Style("#999933", "--", ">"),          # Tol olive
    "shuffled": Style("#000000", ":", "p"),       # black: the no-information control
    "oracle": Style("#aa4499", "-.", "d"),        # Tol purple: the true-advantage control
    "reference-bots": Style("#44aa99", "-", "o"),  # Tol teal
    "random": Style("#ddcc77", ":", "s"),         # Tol sand
}
_SPARE = [Style(c, ls, m) for c, ls, m in (
    ("#cc6677", "-", "o"), ("#88ccee", "--", "s"), ("#6699cc", "-.", "^"), ("#994f00", ":", "v"),
    ("#4b0092", "-", "D"), ("#aa4466", "--", "P"), ("#999999", ":", "X"), ("#117799", "-.", "*"))]


class Palette:
    """One :class:`Style` per short method name, fixed across every figure of a page: a built-in method's own
    (:data:`METHOD_STYLES`), any other name the next spare one (sorted-name order), then a hashed colour."""

    def __init__(self, names=()):
        self._map: dict[str, Style] = {}
        self._free = list(_SPARE)
        for name in sorted(set(names)):
            self.style(name)

    def style(self, name: str) -> Style:
        """The style ``name`` is drawn in on every figure of the page."""
        if name not in self._map:
            if name in METHOD_STYLES:
                self._map[name] = METHOD_STYLES[name]
            elif self._free:
                self._map[name] = self._free.pop(0)
            else:
                k = zlib.crc32(name.encode("utf-8"))
                self._map[name] = Style("#%06x" % (k & 0xFFFFFF), ("-", "--", ":", "-.")[k % 4], "o")
        return self._map[name]

    def colour(self, name: str) -> str:
        return self.style(name).colour


@dataclass
class Figure:
    """One figure of a page: ``png`` is base64; ``colours`` maps each short method name drawn to the colour it was
    drawn in (read back from the artists; the page test checks they agree). What the drawing measured (see
    :func:`leaderboard.figures.render_figure`): ``min_font_px``, the smallest text drawn, in the PNG's pixels;
    ``overflow_px``, how far any drawn artist reaches past the image's edge (0: nothing is cut); ``overlaps``, pairs
    of tick labels that overlap; ``legend``, the labels of the figure's legends."""
    key: str
    caption: str
    png: str
    colours: dict[str, str] = field(default_factory=dict)
    min_font_px: float = 0.0
    overflow_px: float = 0.0
    overlaps: list[str] = field(default_factory=list)
    legend: list[str] = field(default_factory=list)
