"""The building blocks every picture of the course is drawn with: one style (colour maps
for weights and scores, two colours), figures that appear once, PNG bytes for explorers."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle


#: Colour map for attention weights (values in [0, 1]).
WEIGHTS_CMAP = "Blues"
#: Colour map for scores and other signed values (centred on 0 by :func:`heatmap`).
SCORES_CMAP = "RdBu_r"
#: The course's two line/bar colours: the default, and the one that marks "this one".
BASE_COLOR = "#4c72b0"
ACCENT_COLOR = "#dd8452"
#: PNG resolution used for explorers' images and :func:`figure_to_png`.
PNG_DPI = 90


# ---------------------------------------------------------------------------------------
# Building blocks shared by every notebook
# ---------------------------------------------------------------------------------------


def _show_figures_in_ipython() -> None:
    """Let IPython display a returned Figure as a PNG (pyplot would do this, but it also
    shows every figure it creates, which would draw explorers' figures twice)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipykernel
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Figure, figure_to_png)


def new_figure(width: float = 6.4, height: float = 3.6, nrows: int = 1, ncols: int = 1,
               **subplot_kw):
    """A figure with a grid of axes and constrained layout.

    Returns ``(fig, ax)`` for a single panel, else ``(fig, axes)`` with ``axes`` a flat
    array in reading order.
    """
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, subplot_kw=subplot_kw or None)
    return fig, (axes[0, 0] if nrows * ncols == 1 else axes.ravel())


def figure_to_png(fig: Figure, dpi: int = PNG_DPI) -> bytes:
    """The figure rendered as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


_show_figures_in_ipython()


def heatmap(ax, values, row_labels: Sequence[str] | None = None,
            col_labels: Sequence[str] | None = None, *, title: str | None = None,
            cmap: str = WEIGHTS_CMAP, vmin: float | None = None, vmax: float | None = None,
            fmt: str = "{:.2f}", annotate: bool = True, xlabel: str | None = None,
            ylabel: str | None = None, highlight_row: int | None = None,
            colorbar: bool = True):
    """Draw a matrix as coloured cells, optionally with each value written in its cell.

    values: ``[R, C]``. With ``cmap=SCORES_CMAP`` and no ``vmin``/``vmax`` the colours
    are centred on zero. ``highlight_row`` outlines one row (the query being looked at).
    Returns the image (for a shared colour bar).
    """
    values = np.asarray(values, dtype=float)                     # [R, C]
    if cmap == SCORES_CMAP and vmin is None and vmax is None:
        limit = float(np.abs(values).max()) or 1.0
        vmin, vmax = -limit, limit
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    rows, cols = values.shape
    ax.set_xticks(range(cols), col_labels if col_labels is not None else range(cols))
    ax.set_yticks(range(rows), row_labels if row_labels is not None else range(rows))
    if col_labels is not None and max((len(str(s)) for s in col_labels), default=0) > 3:
        ax.tick_params(axis="x", labelrotation=45)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if annotate:
        lo, hi = image.get_clim()
        for i in range(rows):
            for j in range(cols):
                shade = (values[i, j] - lo) / ((hi - lo) or 1.0)
                dark = shade > 0.6 if cmap == WEIGHTS_CMAP else abs(shade - 0.5) > 0.3
                ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center",
                        fontsize=8, color="white" if dark else "black")
    if highlight_row is not None:
        ax.add_patch(Rectangle((-0.5, highlight_row - 0.5), cols, 1, fill=False,
                               edgecolor=ACCENT_COLOR, linewidth=2.5, clip_on=False))
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return image


def bars(ax, values, labels: Sequence[str], *, title: str | None = None,
         highlight: int | None = None, fmt: str = "{:.2f}", ylim=None,
         ylabel: str | None = None, color: str = BASE_COLOR, annotate: bool = True):
    """A bar chart of ``values`` (1-D) with one bar per label; ``highlight`` marks a bar."""
    values = np.asarray(values, dtype=float)                     # [n]
    colors = [ACCENT_COLOR if i == highlight else color for i in range(len(values))]
    rects = ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels)
    if max((len(str(s)) for s in labels), default=0) > 3 and len(labels) > 4:
        ax.tick_params(axis="x", labelrotation=45)
    if annotate:
        ax.bar_label(rects, labels=[fmt.format(v) for v in values], fontsize=8, padding=2)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.spines[["top", "right"]].set_visible(False)
    ax.axhline(0, color="black", linewidth=0.6)
    if title:
        ax.set_title(title)
    if ylabel:
        ax.set_ylabel(ylabel)
    return rects
