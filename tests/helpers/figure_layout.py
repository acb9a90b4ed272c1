"""Whether a drawn figure lays its texts out without overlap: the check every figure test of the project uses
(tests/reporting/test_figures.py, the benchmarks' figures)."""
from __future__ import annotations

from itertools import combinations
from unittest.mock import patch

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.transforms import Bbox


def overlapping_texts(fig: Figure) -> list[str]:
    """Pairs of drawn texts whose boxes share more than a pixel, texts cut off by the figure's edge, and legends drawn
    over a visible panel. A text counts
    when the figure draws it (tick labels past an axis's limits exist but are not drawn)."""
    drawn: list[tuple[str, Bbox]] = []
    draw_text = Text.draw

    def draw_and_keep(text: Text, renderer) -> None:
        draw_text(text, renderer)
        if text.get_visible() and text.get_text().strip():
            drawn.append((text.get_text(), text.get_window_extent(renderer)))

    with patch.object(Text, "draw", draw_and_keep):
        fig.canvas.draw()
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # the file-only backend (Agg): its canvas has the renderer
    renderer = canvas.get_renderer()
    found = []
    for (a, box_a), (b, box_b) in combinations(drawn, 2):
        width = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        height = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if width > 1 and height > 1:
            found.append(f"{a!r} over {b!r}")
    page = fig.bbox
    for text, box in drawn:
        if box.x0 < page.x0 - 1 or box.y0 < page.y0 - 1 or box.x1 > page.x1 + 1 or box.y1 > page.y1 + 1:
            found.append(f"{text!r} cut off by the figure's edge")
    for legend in fig.findobj(Legend):
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_visible() and legend.axes is not ax and box.overlaps(ax.get_window_extent(renderer)):
                found.append(f"a legend over the panel {ax.get_title()!r}")
    return found
