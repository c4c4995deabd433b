"""The figures as a reader sees them (leaderboard/figures.py, leaderboard/style.py): the 13 built-in methods in
colour-blind-safe styles that stay apart (colour distance, then line style and marker), every figure measured as it
is saved (no text past the image's edge, no overlapping tick labels, no text under 9 pt, a legend entry for every
method drawn), the radar on a fixed scale that keeps scores below random off the centre, and PNGs that keep each
method's colour exactly."""

from __future__ import annotations

import base64
import io
import itertools

import numpy as np
import pytest
from PIL import Image

from baselines.credit import list_credits
from leaderboard.board import build_board
from leaderboard.render import figures, plots
from leaderboard.store import load_entries
from leaderboard.style import METHOD_STYLES, Palette
from leaderboard.suite import load_suite, suite_figures, write_figures
from tests.leaderboard.fake_pages import METHODS, delta_e, fake_scored, lab, spread_means, store_fake_entries

MIN_PX = 9 * 120 / 72            # 9 pt at the figures' 120 dpi


def test_lab_distance_matches_known_values():
    assert delta_e("#ffffff", "#000000") == pytest.approx(100.0, abs=0.1)
    assert delta_e("#ff0000", "#ff0000") == 0.0
    assert lab("#ff0000") == pytest.approx([53.24, 80.09, 67.20], abs=0.1)


def test_the_13_built_in_methods_have_fixed_styles_that_stay_apart():
    assert METHODS == list_credits()                          # a new method needs a style of its own
    palette = Palette(METHODS)
    styles = {m: palette.style(m) for m in METHODS}
    assert styles == {m: METHOD_STYLES[m] for m in METHODS}
    for a, b in itertools.combinations(METHODS, 2):
        d = delta_e(styles[a].colour, styles[b].colour)
        assert d >= 20, (a, b, d)
        if d < 30:                                            # similar hues: the line and the marker differ
            assert styles[a].linestyle != styles[b].linestyle and styles[a].marker != styles[b].marker, (a, b, d)
    assert len({s.marker for s in styles.values()}) == 13
    assert all(styles[m].linestyle == "-" for m in METHODS[:8])
    assert all(styles[m].linestyle != "-" for m in METHODS[8:])    # past 8 colours, line styles tell them apart


def test_other_names_take_spare_styles_the_same_in_any_order():
    a, b = Palette(["zeta", "broadcast", "alpha"]), Palette(["alpha", "zeta", "broadcast"])
    assert [a.style(n) for n in ("alpha", "zeta", "broadcast")] == [b.style(n) for n in ("alpha", "zeta", "broadcast")]
    assert len({a.colour(n) for n in ("alpha", "zeta", "broadcast")}) == 3
    assert a.colour("broadcast") == METHOD_STYLES["broadcast"].colour


def _check(fig, drawn_in_legend: bool = True) -> None:
    assert fig.overflow_px == 0, (fig.key, "drawn past the image's edge by", fig.overflow_px)
    assert fig.overlaps == [], (fig.key, fig.overlaps)
    assert fig.min_font_px >= MIN_PX - 1e-6, (fig.key, fig.min_font_px)
    if drawn_in_legend:
        missing = set(fig.colours) - set(fig.legend)
        assert not missing, (fig.key, "not in the legend", missing)


@pytest.fixture(scope="module")
def suite():
    return load_suite("credit-micro@3")


@pytest.fixture(scope="module")
def scored(suite):
    return fake_scored(suite, spread_means(suite), exploitability=True)


def test_every_suite_figure_of_13_methods_is_whole_legible_and_has_every_legend_entry(suite, scored):
    palette = Palette(scored["methods"])
    figs = suite_figures(suite, scored, palette)
    assert {f.key for f in figs} >= {"radar", "scaling-team_size", "scaling-temporal", "cost"}
    for f in figs:
        _check(f)
        assert set(f.colours) == set(METHODS), f.key


def test_the_suites_side_by_side_scaling_png_is_whole(suite, scored, tmp_path, monkeypatch):
    seen = []
    render_figure = plots().render_figure

    def spy(fig, key, caption, colours):
        out = render_figure(fig, key, caption, colours)
        seen.append(out)
        return out

    monkeypatch.setattr(plots(), "render_figure", spy)
    pngs = write_figures(suite, scored, tmp_path, Palette(scored["methods"]))
    assert (tmp_path / "scaling.png").is_file() and "scaling" in pngs
    composite = next(f for f in seen if f.key == "scaling")
    _check(composite)                                  # every method in its one legend ("ast", none, ippo were cut)


def test_every_board_figure_of_13_suite_entries_is_whole_and_legible(suite, scored, tmp_path):
    store = tmp_path / "store"
    store_fake_entries(store, suite, scored, METHODS, seeds=3)
    entries = load_entries(store, suite.key)
    board = build_board(entries, reps=200)
    figs = figures(board, entries, Palette(r.short for r in board.rows))
    assert {f.key for f in figs} == {"iqm", "profile", "cost", "radar"}
    for f in figs:
        _check(f, drawn_in_legend=f.key != "iqm")       # the aggregate names each method on its own axis


def test_the_measurements_catch_a_cut_legend_overlapping_ticks_and_small_text():
    figs = plots()
    fig, ax = figs.plt.subplots(figsize=(2, 2))         # no layout: a legend far right of the canvas is cut
    ax.plot([0, 1], [0, 1], label="a long method name that cannot fit")
    ax.legend(loc="upper left", bbox_to_anchor=(1.5, 1))
    ax.set_xticks([0, 0.01], ["first label", "second label"])
    ax.set_title("tiny", fontsize=6)
    out = figs.render_figure(fig, "cut", "", {})
    assert out.overflow_px > 50
    assert out.overlaps == ["x tick labels 'first label' and 'second label'"]
    assert out.min_font_px == pytest.approx(6 * 120 / 72)
    assert out.legend == ["a long method name that cannot fit"]


def test_radar_scale_is_fixed_and_keeps_scores_below_random_off_the_centre():
    radar_scale = plots().radar_scale
    assert radar_scale([0.02, 0.3, -0.07]) == (-0.25, 1.0)    # the quick demo's scores: 0 is a ring, not the centre
    assert radar_scale([0.2, 0.9]) == (-0.25, 1.0)
    assert radar_scale([-0.3, 1.01]) == (-0.5, 1.25)
    assert radar_scale([-3.0]) == (-1.0, 1.0)                # past -1: drawn at the edge


def test_the_png_keeps_every_method_colour_exactly(suite, scored):
    palette = Palette(scored["methods"])
    cost = next(f for f in suite_figures(suite, scored, palette) if f.key == "cost")
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(cost.png))).convert("RGB"))
    assert Image.open(io.BytesIO(base64.b64decode(cost.png))).mode == "P"
    assert (pixels[2, 2] == 255).all()                        # the background stays white
    for m, colour in cost.colours.items():
        rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
        assert (pixels == rgb).all(axis=2).sum() > 20, m


def test_seed_curves_draw_every_run_and_the_mean_per_method_whole_and_legible():
    palette = Palette(["broadcast", "loo", "ccpo_v2"])
    panels = {"broadcast": {1: ([0, 5, 10], [0.2, 0.5, 0.8]), 2: ([0, 5, 10], [0.3, 0.4, 0.7])},
              "loo": {1: ([0, 5, 10], [0.2, 0.2, 0.3])},
              "ccpo_v2": {1: ([0, 5, 10], [0.2, 0.3, 0.3]), 4: ([0, 5], [0.25, 0.35])}}   # seed 4 stopped at 5
    fig = plots().seed_curves(panels, palette, "seeds", "updates", "held-out team reward", "caption",
                              refs={"optimum 0.9": 0.9, "chance 0.25": 0.25})
    _check(fig)
    assert fig.colours == {m: palette.colour(m) for m in panels}
    assert {"optimum 0.9", "chance 0.25", "one seed (thick: the mean)"} <= set(fig.legend)
    img = Image.open(io.BytesIO(base64.b64decode(fig.png)))
    assert img.size == (round(4.6 * 1.5 * 120), round((2.3 * 2 + 0.9) * 120))
    colours = {"#{:02x}{:02x}{:02x}".format(*c[1][:3]) for c in img.convert("RGB").getcolors(1 << 20)}
    assert set(fig.colours.values()) <= colours                 # each method's mean line in its exact colour
